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
from typing import NamedTuple

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
    "demo": Command("msoctl.cli.lab", "demo", "A guided walkthrough of msoctl against the "
                    "emulated lab (what `make demo` runs)."),
    "design": Command("msoctl.cli.design", "design", "Plan fabrics before they are built: "
                      "size, cost and power per architecture."),
    "exporter": Command("msoctl.cli.exporter", "exporter", "Prometheus exporter: "
                        "/probe?target=NAME for a device, /metrics for itself."),
    "fabric": Command("msoctl.cli.fabric", "fabric", "The whole fabric from one intent "
                      "file: links and spans, OCS maps, amplifiers, switch congestion control."),
    "history": Command("msoctl.cli.history", "history", "Changes from the journal: who did "
                       "what to which device, and how it ended."),
    "inventory": Command("msoctl.cli.inventory", "inventory", "Show and check the inventory."),
    "journal": Command("msoctl.cli.journal", "journal", "The change journal: import, "
                       "export, prune, info."),
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
    "telemetry": Command("msoctl.cli.telemetry", "telemetry", "Switch telemetry over SNMP: "
                         "co-packaged optics (cpo) and copper (cpc)."),
}


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
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own layout, from the registry's help instead of the imported commands
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, click.Command(name, help=COMMANDS[name].help).get_short_help_str(limit))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-i", "--inventory", "inventory", metavar="FILE",
              help="Inventory file (default: $MSOCTL_INVENTORY, then ./inventory.yaml).")
@click.option("--journal", metavar="FILE|URL", envvar="MSOCTL_JOURNAL",
              help="Journal: an SQLite file or a postgresql:// URL (default: the "
                   "inventory's, else ~/.local/state/msoctl/journal.sqlite).")
@click.option("-v", "--verbose", is_flag=True, help="More detail on errors.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.version_option(__version__, prog_name="msoctl")
@click.pass_context
def cli(ctx: click.Context, inventory: str | None, journal: str | None, verbose: bool,
        debug: bool) -> None:
    """Control plane for MegaScaleOut fabric hardware: OCS, amplifiers, switches, telemetry."""
    from msoctl.cli.context import Context  # the inventory's and journal's code, on use

    if journal is None and os.environ.get("MSOCTL_JOURNAL") == "":
        journal = ""  # click takes an empty variable for an unset one; refused when used
    ctx.obj = Context(inventory, journal, verbose or debug, debug)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI (``argv``, or the process's arguments) and return the exit code
    (:mod:`msoctl.cli.exits`); never raises, except with ``--debug``."""
    return invoke(cli, list(sys.argv[1:] if argv is None else argv))
