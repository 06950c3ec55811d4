"""The ``msoctl`` command line: the root group, its global options, error handling and
exit codes.

Each command group is a module of this package (``msoctl.cli.ocs`` for ``msoctl
ocs``), imported only when the command line names it: :data:`COMMANDS` says where
each lives and carries its one-line help, so ``msoctl --help`` imports no command
module, no driver and no YAML, SNMP or NETCONF library. What the commands share —
the inventory, the journal, the devices — is :class:`msoctl.cli.context.Context`.

Exit codes (:mod:`msoctl.cli.exits`): 0 success; 2 bad usage or input refused before
anything was sent; 1 the device or the operation failed; 3 refused by a safety
interlock; 130 and 143 when SIGINT or SIGTERM ended the command. Errors are one line
on stderr beginning ``error:``; ``-v`` adds detail; only ``--debug`` shows a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple, TextIO

import click

from msoctl import __version__
from msoctl.cli.exits import invoke


class Command(NamedTuple):
    """Where a top-level command lives, and its help in ``msoctl --help``: the first
    paragraph of its docstring (a test holds the two equal)."""

    module: str
    attribute: str
    help: str


COMMANDS: dict[str, Command] = {
    "amp": Command("msoctl.cli.amp", "amp", "Optical amplifiers: gain, power, Tx disable, "
                   "ALS, flags, thresholds, raw pages."),
    "completion": Command("msoctl.cli.completion", "completion", "Shell completion: the "
                          "script for bash, zsh or fish, names from the inventory."),
    "demo": Command("msoctl.cli.lab", "demo", "A guided walkthrough of msoctl against the "
                    "emulated lab (what `make demo` runs)."),
    "design": Command("msoctl.cli.design", "design", "Plan fabrics before they are built: "
                      "cost and power per architecture, long-haul congestion control."),
    "exporter": Command("msoctl.cli.exporter", "exporter", "Prometheus exporter: "
                        "/probe?target=NAME for a device, /jobs for the kept jobs, "
                        "/metrics for itself."),
    "fabric": Command("msoctl.cli.fabric", "fabric", "The whole fabric from one intent "
                      "file: links and spans, OCS maps, amplifiers, switch congestion control."),
    "host": Command("msoctl.cli.host", "host", "GPU servers on the fabric: their GPUs' and "
                    "NICs' state."),
    "history": Command("msoctl.cli.history", "history", "Changes from the journal: who did "
                       "what to which device, and how it ended."),
    "inventory": Command("msoctl.cli.inventory", "inventory", "Show and check the inventory."),
    "journal": Command("msoctl.cli.journal", "journal", "The change journal: import, "
                       "export, prune, info."),
    "job": Command("msoctl.cli.job", "job", "Jobs of GPUs on the fabric: place them, write "
                   "their collective libraries' files."),
    "lab": Command("msoctl.cli.lab", "lab", "The emulated lab: every device as a software "
                   "emulator on loopback."),
    "link": Command("msoctl.cli.link", "link", "Fabric links: list them, drain them before "
                    "work, undrain them after."),
    "ocs": Command("msoctl.cli.ocs", "ocs", "Optical circuit switches: map, ports, power "
                   "monitors."),
    "path": Command("msoctl.cli.path", "path", "End-to-end light on the fabric links: budget "
                    "against measurement, hop by hop."),
    "protect": Command("msoctl.cli.protect", "protect", "Optical protection: move links to "
                       "their protection span on loss of light."),
    "switch": Command("msoctl.cli.switch", "switch", "Deep-buffer switches: PFC headroom, "
                      "ECN, switch-generated congestion feedback."),
    "telemetry": Command("msoctl.cli.telemetry", "telemetry", "Switch telemetry: port "
                         "optics from any surface (optics), co-packaged optics (cpo) and "
                         "copper (cpc) over SNMP."),
}


COLOUR_MODES = ("auto", "always", "never")


def colour_wanted(mode: str, *, environ: Mapping[str, str] | None = None,
                  stdout: TextIO | None = None) -> bool:
    """Whether to colour: ``always``, ``never``, or ``auto``: only when stdout is a
    terminal, ``NO_COLOR`` is unset or empty (https://no-color.org) and ``TERM`` is not
    ``dumb``. An explicit ``always`` beats ``NO_COLOR``, as that convention allows."""
    if mode != "auto":
        return mode == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stdout is None else stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _set_colour(ctx: click.Context, mode: str) -> None:
    # click.echo reads Context.color: True keeps colour even in a capture, False strips
    # it; a context takes its parent's when created, so set every one made so far.
    wanted = colour_wanted(mode)
    current: click.Context | None = ctx
    while current is not None:
        current.color = wanted
        current = current.parent


_CONTEXT_FIELDS = {"inventory": "inventory_option", "journal": "journal_option",
                   "verbose": "verbose", "debug": "debug"}


def _global_option(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A global option given after the subcommand (or before it): the last one counts.
    Kept in the contexts' shared ``meta`` (shell completion reads ``-i`` there) and set
    on the command's :class:`~msoctl.cli.context.Context` once the root has made it."""
    if value is None or value is False or param.name is None:
        return value  # not given here: what the root (or an earlier command) said holds
    ctx.meta[f"msoctl.{param.name}"] = value
    if param.name == "color":
        _set_colour(ctx, value)
        return value
    state = ctx.find_root().obj
    if state is not None:
        setattr(state, _CONTEXT_FIELDS[param.name], value)
        if param.name == "debug":
            state.verbose = True
    return value


def _global_options(*, for_root: bool) -> list[click.Option]:
    """-i, --journal, -v, --debug, --color: shown on the root; on every other command
    hidden (the root's help tells they may follow the subcommand) and without defaults
    of their own, so that only what is given there changes anything."""
    hidden = not for_root
    exposed = {"hidden": hidden, "expose_value": for_root}
    return [
        click.Option(["-i", "--inventory", "inventory"], metavar="FILE", **exposed,
                     callback=_global_option,
                     help="Inventory file (default: $MSOCTL_INVENTORY, then "
                          "./inventory.yaml)."),
        click.Option(["--journal"], metavar="FILE|URL", **exposed,
                     envvar="MSOCTL_JOURNAL" if for_root else None, callback=_global_option,
                     help="Journal: an SQLite file or a postgresql:// URL (default: the "
                          "inventory's, else ~/.local/state/msoctl/journal.sqlite)."),
        click.Option(["-v", "--verbose"], is_flag=True, **exposed,
                     callback=_global_option, help="More detail on errors."),
        click.Option(["--debug"], is_flag=True, **exposed, callback=_global_option,
                     help="Show tracebacks."),
        click.Option(["--color", "color"], type=click.Choice(COLOUR_MODES), **exposed,
                     default="auto" if for_root else None, show_default=for_root,
                     callback=None if for_root else _global_option,
                     help="Colour the states in tables: auto (on a terminal, unless "
                          "NO_COLOR is set), always or never."),
    ]


def _adopt(command: click.Command) -> None:
    """Give ``command`` and everything under it the global options (once)."""
    if getattr(command, "_msoctl_globals", False):
        return
    command.params.extend(_global_options(for_root=False))
    command._msoctl_globals = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _adopt(sub)


class _Root(click.Group):
    """The root group: its commands come from :data:`COMMANDS`, imported on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command = getattr(importlib.import_module(entry.module), entry.attribute)
        assert isinstance(command, click.Command), entry
        _adopt(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own layout, from the registry's help instead of the imported commands
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, click.Command(name, help=COMMANDS[name].help).get_short_help_str(limit))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _with_global_options(group: click.Group) -> click.Group:
    group.params[:0] = _global_options(for_root=True)
    return group


@_with_global_options
@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="msoctl")
@click.pass_context
def cli(ctx: click.Context, inventory: str | None, journal: str | None, verbose: bool,
        debug: bool, color: str) -> None:
    """Control plane for MegaScaleOut fabric hardware: OCS, amplifiers, switches, telemetry.

    The options below may also follow the subcommand, as in
    msoctl ocs status ocs-a -i lab-state/inventory.yaml -v
    """
    from msoctl.cli.context import Context  # the inventory's and journal's code, on use

    if journal is None and os.environ.get("MSOCTL_JOURNAL") == "":
        journal = ""  # click takes an empty variable for an unset one; refused when used
    ctx.obj = Context(inventory, journal, verbose or debug, debug)
    _set_colour(ctx, color)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI (``argv``, or the process's arguments) and return the exit code
    (:mod:`msoctl.cli.exits`); never raises, except with ``--debug``."""
    return invoke(cli, list(sys.argv[1:] if argv is None else argv))
