"""The ``msoctl`` command line: global options, error handling, exit codes.

Exit codes (DESIGN.md): 0 success; 2 bad usage or input refused before
anything was sent; 1 the device or the operation failed; 3 refused by a
safety interlock. Errors are one line on stderr beginning ``error:``; ``-v``
adds detail; only ``--debug`` shows a traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

from drivers.amp import vendor_page
from drivers.amp.driver import AmpDriver
from drivers.cmis.io import latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_FIELDS
from drivers.errors import DeviceError, SafetyInterlock, ValidationError
from drivers.ocs import OcsDriver
from drivers.ocs.connect import open_ocs
from drivers.switch.netconf import NetconfTarget
from drivers.transports.i2c import open_cmis_io
from drivers.yamlfile import YamlFileError
from msoctl import __version__, interrupts
from msoctl.inventory import Device, Inventory, find_inventory, inventory_named, load_inventory
from msoctl.journal import (
    DeviceBusy,
    Journal,
    JournalError,
    JournalLocation,
    LegacyJournal,
    default_journal_path,
    parse_location,
)
from msoctl.linkstate import LinkStates

if TYPE_CHECKING:  # pysnmp is imported by the commands that speak SNMP, not by every one
    from drivers.snmp.session import SnmpTarget

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SAFETY = 0, 1, 2, 3
AMP_FIELDS = (*STANDARD_FIELDS, *vendor_page.FIELDS)
_NO_ARGS_IS_HELP: type[Exception] | tuple[()] = getattr(
    click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


@dataclass
class Context:
    inventory_option: str | None = None
    journal_option: str | None = None
    verbose: bool = False
    debug: bool = False
    _inventory: Inventory | None = field(default=None, repr=False)
    _journal: Journal | None = field(default=None, repr=False)
    _maps: dict[str, dict[int, int] | None] = field(default_factory=dict, repr=False)

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            self._inventory = load_inventory(find_inventory(self.inventory_option))
        return self._inventory

    @property
    def journal(self) -> Journal:
        """The journal: ``--journal`` (or MSOCTL_JOURNAL), else the inventory's, else the
        default file; opened on first use, one per command."""
        if self._journal is None:
            self._journal = Journal(self._journal_location())
        return self._journal

    def _journal_location(self) -> JournalLocation:
        if self.journal_option is not None:
            try:
                return parse_location(self.journal_option)
            except ValueError as error:
                raise ValidationError(f"--journal (or MSOCTL_JOURNAL) {error}") from None
        if inventory_named(self.inventory_option) is None:  # history works without one
            return JournalLocation(path=default_journal_path(), is_default=True)
        return self.inventory.journal or JournalLocation(path=default_journal_path(),
                                                         is_default=True)

    @property
    def link_states(self) -> LinkStates:
        return LinkStates(self.journal)

    def drained(self) -> set[str]:
        """The inventory's links that are drained (out of service) now."""
        return set(self.link_states.drained())

    def read_map(self, name: str) -> dict[int, int] | None:
        """An OCS's current map, or None when it cannot be read (for impact checks); each
        OCS is read once per command."""
        if name not in self._maps:
            self._maps[name] = self._read_map(name)
        return self._maps[name]

    def _read_map(self, name: str) -> dict[int, int] | None:
        try:
            _, driver = self.ocs(name)
            try:
                return dict(driver.port_map())
            finally:
                driver.close()
        except DeviceError:
            return None

    def device(self, name: str, kind: str | None = None) -> Device:
        return self.inventory.device(name, kind)

    def ocs(self, name: str, *, console: bool = False) -> tuple[Device, OcsDriver]:
        device = self.device(name, "ocs")
        endpoint = device.endpoint
        if console:
            if device.console is None:
                raise ValidationError(f"{name} has no console in the inventory")
            endpoint = device.console
        driver = open_ocs(name, endpoint.transport, endpoint.address,
                          timeout_seconds=device.timeout_seconds)
        return device, driver

    def amp(self, name: str) -> tuple[Device, AmpDriver]:
        device = self.device(name, "amp")
        try:
            io = open_cmis_io(device.endpoint.transport, device.endpoint.address,
                              device_address=device.i2c_address,
                              timeout_seconds=device.timeout_seconds,
                              latched=latched_bytes(AMP_FIELDS))
        except DeviceError as error:
            error.device = error.device or name
            raise
        module = CmisModule(io, name=name, extra_fields=vendor_page.FIELDS)
        return device, AmpDriver(module)

    def switch_target(self, name: str) -> NetconfTarget:
        """How to reach switch ``name`` over NETCONF (its password read now)."""
        device = self.device(name, "switch")
        access = device.netconf
        assert access is not None  # the inventory gives every switch one
        password = device.secrets.get("password")
        return NetconfTarget(
            name=name, host=access.host, port=access.port, username=access.username,
            password=None if password is None else password.resolve(),
            key_file=access.key_file, known_hosts=access.known_hosts,
            accept_unknown_host_keys=access.accept_unknown_host_keys,
            timeout_seconds=device.timeout_seconds,
        )

    def snmp_target(self, name: str) -> SnmpTarget:
        """How to reach the SNMP agent of device ``name`` (its keys read now).

        Raises :class:`ValidationError` when the inventory gives the device no ``snmp:``.
        """
        from drivers.snmp.session import SnmpTarget

        device = self.device(name)
        access = device.snmp
        if access is None:
            raise ValidationError(
                f"{name} has no snmp section in the inventory ({self.inventory.path}); "
                "its CPO/CPC telemetry is read over SNMP")
        return SnmpTarget(
            name=name, host=access.host, port=access.port, version=access.version,
            user=access.user,
            auth_key=None if access.auth_key is None else access.auth_key.resolve(),
            priv_key=None if access.priv_key is None else access.priv_key.resolve(),
            auth_protocol=access.auth_protocol, priv_protocol=access.priv_protocol,
            community=None if access.community is None else access.community.resolve(),
            timeout_seconds=access.timeout_seconds, retries=access.retries)

    def devices_labelled(self, kind: str, labels: tuple[str, ...]) -> list[str]:
        """Devices of ``kind`` carrying every ``key=value`` label, in inventory order."""
        wanted: dict[str, str] = {}
        for label in labels:
            key, sep, value = label.partition("=")
            if not sep or not key:
                raise ValidationError(f"--label {label!r}: write key=value")
            wanted[key] = value
        return [name for name, device in self.inventory.devices.items()
                if device.kind == kind
                and all(device.labels.get(k) == v for k, v in wanted.items())]


pass_context = click.make_pass_decorator(Context)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    if journal is None and os.environ.get("MSOCTL_JOURNAL") == "":
        journal = ""  # click takes an empty variable for an unset one; refused when used
    ctx.obj = Context(inventory, journal, verbose or debug, debug)


def _register() -> None:
    from msoctl.cmd_amp import amp
    from msoctl.cmd_exporter import exporter
    from msoctl.cmd_fabric import fabric
    from msoctl.cmd_history import history
    from msoctl.cmd_inventory import inventory
    from msoctl.cmd_journal import journal
    from msoctl.cmd_lab import demo, lab
    from msoctl.cmd_link import link
    from msoctl.cmd_ocs import ocs
    from msoctl.cmd_path import path
    from msoctl.cmd_protect import protect
    from msoctl.cmd_switch import switch
    from msoctl.cmd_telemetry import telemetry

    for command in (ocs, amp, switch, telemetry, path, link, fabric, protect, exporter, lab,
                    demo, history, inventory, journal):
        cli.add_command(command)


_register()


def _fail(message: str, code: int, detail: str | None = None, *, verbose: bool) -> int:
    click.echo(f"error: {message}", err=True)
    if verbose and detail:
        click.echo(f"  detail: {detail}", err=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return the exit code (never raises, except with --debug)."""
    args = list(sys.argv[1:] if argv is None else argv)
    verbose = "-v" in args or "--verbose" in args or "--debug" in args
    debug = "--debug" in args
    restore_sigterm = interrupts.raise_on_sigterm()
    try:
        code = cli.main(args=args, prog_name="msoctl", standalone_mode=False)
        return code if isinstance(code, int) else EXIT_OK
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.Abort:
        return _fail("interrupted", 130, verbose=verbose)
    except click.UsageError as error:
        hint = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
        message = error.format_message()
        if isinstance(error, _NO_ARGS_IS_HELP) and isinstance(error.ctx, click.Context):
            # click >= 8.2 puts the whole help text in this error; the contract is one line
            group = error.ctx.command
            names = group.list_commands(error.ctx) if isinstance(group, click.Group) else []
            message = "missing command" + (f"; one of: {', '.join(names)}" if names else "")
        return _fail(f"{message}{hint}", EXIT_USAGE, verbose=verbose)
    except click.ClickException as error:
        return _fail(error.format_message(), error.exit_code, verbose=verbose)
    except SafetyInterlock as error:
        return _fail(str(error), EXIT_SAFETY, error.detail, verbose=verbose)
    except ValidationError as error:
        return _fail(str(error), EXIT_USAGE, error.detail, verbose=verbose)
    except DeviceError as error:
        if debug:
            traceback.print_exc()
        return _fail(str(error), EXIT_FAILED, error.detail, verbose=verbose)
    except YamlFileError as error:
        return _fail(str(error), EXIT_USAGE, verbose=verbose)
    except LegacyJournal as error:  # refused before anything was sent: point it elsewhere
        return _fail(str(error), EXIT_USAGE, verbose=verbose)
    except (JournalError, DeviceBusy) as error:
        return _fail(str(error), EXIT_FAILED, verbose=verbose)
    except KeyboardInterrupt:
        return _fail("interrupted", 130, verbose=verbose)
    except interrupts.Terminated:
        return _fail("terminated", 143, verbose=verbose)
    except BrokenPipeError:
        return EXIT_OK
    except OSError as error:  # a file msoctl had to read or write, named by the error
        if debug:
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        return _fail(f"{where}{error.strerror or error}", EXIT_FAILED, verbose=verbose)
    except Exception as error:
        if debug:
            traceback.print_exc()
        return _fail(f"internal error: {type(error).__name__}: {error} "
                     "(run with --debug for a traceback, and please report it)",
                     EXIT_FAILED, verbose=verbose)
    finally:
        restore_sigterm()


def main() -> None:
    from msoctl.__main__ import main as entry

    entry()
