"""``msoctl ocs``: the optical circuit switches."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from drivers.errors import ValidationError
from drivers.ocs import BootMode, OcsDriver, PortMap
from msoctl.cli import Context, pass_context
from msoctl.inventory import Device
from msoctl.journal import locked_change
from msoctl.ocs_ops import (
    ApplyResult,
    OcsPlan,
    apply_plan,
    check_light,
    load_map_file,
    parse_pair,
    parse_port,
    plan_map,
)
from msoctl.output import emit_json, fields, output_option, table

F = TypeVar("F", bound=Callable[..., Any])

console_option = click.option(
    "--console", is_flag=True, help="Use the device's serial console instead of its network port."
)
force_option = click.option(
    "--force", is_flag=True,
    help="Override the safety interlock on switching lit ports (journaled).",
)


@click.group()
def ocs() -> None:
    """Optical circuit switches: map, ports, power monitors."""


@contextmanager
def _driver(ctx: Context, name: str, console: bool) -> Iterator[tuple[Device, OcsDriver]]:
    device, driver = ctx.ocs(name, console=console)
    try:
        yield device, driver
    finally:
        driver.close()


def _direction(driver: OcsDriver, port: int) -> str:
    return "ingress" if port <= driver.size else "egress"


@ocs.command()
@click.argument("device")
@console_option
@output_option
@pass_context
def status(ctx: Context, device: str, console: bool, output: str) -> None:
    """Identity, LC engine figures and the connection map of DEVICE."""
    with _driver(ctx, device, console) as (_, driver):
        identity = driver.identity()
        size = driver.size
        connections = driver.connections()
        lc = driver.lc_status()
        boot = driver.boot_mode()
    document = {
        "device": device,
        "identity": {"manufacturer": identity.manufacturer, "model": identity.model,
                     "serial": identity.serial, "firmware": identity.firmware},
        "size": [size, size],
        "boot_mode": boot.value,
        "lc_cell_temperature_celsius": lc.cell_temperature_celsius,
        "last_switching_seconds": lc.last_switching_seconds,
        "connections": [{"ingress": c.ingress, "egress": c.egress,
                         "insertion_loss_db": c.insertion_loss_db} for c in connections],
    }
    if output == "json":
        emit_json(document)
        return
    click.echo(fields([
        ("device", device),
        ("model", f"{identity.manufacturer} {identity.model}"),
        ("serial", identity.serial),
        ("firmware", identity.firmware),
        ("size", f"{size}x{size} (ingress 1..{size}, egress {size + 1}..{2 * size})"),
        ("boot mode", boot.value),
        ("LC cell", "-" if lc.cell_temperature_celsius is None
         else f"{lc.cell_temperature_celsius:.1f} °C"),
        ("last switching", "-" if lc.last_switching_seconds is None
         else f"{lc.last_switching_seconds * 1000:.1f} ms"),
        ("connections", len(connections)),
    ]))
    if connections:
        click.echo()
        click.echo(table(["ingress", "egress", "insertion loss dB"],
                         [[c.ingress, c.egress, c.insertion_loss_db] for c in connections]))


def _refused(ctx: Context, device: str, action: str, error: ValidationError) -> ValidationError:
    ctx.journal.refuse(device=device, action=action, reason=error.message, exit_code=2)
    return error


def _print_result(result: ApplyResult, output: str, *, dry_run: bool = False) -> None:
    plan = result.plan
    if output == "json":
        document: dict[str, Any] = {**plan.as_dict(), "dry_run": dry_run}
        if not dry_run:
            document.update({
                "seconds": round(result.seconds, 4),
                "connections": [{"ingress": i, "egress": e} for i, e in result.final.items()],
                "light": [p.as_dict() for p in result.light],
                "recovered_operations": result.recovered,
                "overrides": result.overrides,
            })
        emit_json(document)
        return
    _print_plan(plan)
    if dry_run:
        click.echo("dry run: nothing was sent")
        return
    for op in result.recovered:
        click.echo(f"note: an earlier change ({op}) was interrupted; "
                   "converged from the map the device reported")
    for message in result.overrides:
        click.echo(f"warning: safety override: {message}")
    if plan.method != "none":
        click.echo(f"applied with 1 command ({plan.method}) in {result.seconds * 1000:.0f} ms; "
                   f"map verified ({len(result.final)} connections)")
    if result.light:
        lit = [p for p in result.light if p.status != "dark input"]
        click.echo(f"light verified on {len(lit)} lit path(s); "
                   f"{len(result.light) - len(lit)} path(s) have no light at their ingress")
        click.echo(table(["ingress", "egress", "in dBm", "out dBm", "loss dB", "light"],
                         [[p.ingress, p.egress, p.ingress_dbm, p.egress_dbm,
                           p.insertion_loss_db, p.status] for p in result.light]))


def _print_plan(plan: OcsPlan) -> None:
    if plan.method == "none":
        click.echo(f"{plan.device}: map already as wanted ({len(plan.wanted)} connections)")
        return
    click.echo(f"{plan.device}: {len(plan.diff.remove)} to remove, {len(plan.diff.add)} to add, "
               f"{len(plan.diff.keep)} unchanged; method: {plan.method}")
    for row in plan.rows():
        sign = "-" if row["action"] == "remove" else "+"
        click.echo(f"  {sign} {row['ingress']}:{row['egress']}")


def _run_plan(ctx: Context, device: Device, driver: OcsDriver, plan: OcsPlan, action: str,
              force: bool, output: str) -> None:
    result = apply_plan(driver, plan, journal=ctx.journal, device=device, action=action,
                        force=force)
    _print_result(result, output)


@ocs.command()
@click.argument("device")
@click.argument("pairs", nargs=-1, required=True, metavar="IN:OUT...")
@force_option
@console_option
@output_option
@pass_context
def connect(ctx: Context, device: str, pairs: tuple[str, ...], force: bool, console: bool,
            output: str) -> None:
    """Connect ingress ports to egress ports, all in one bulk command."""
    with _driver(ctx, device, console) as (entry, driver):
        current = driver.port_map()
        try:
            wanted_pairs = PortMap([parse_pair(p) for p in pairs], driver.size)
            for ingress, egress in wanted_pairs.items():
                owner = next((i for i, e in current.items() if e == egress), ingress)
                if current.get(ingress, egress) != egress:
                    raise ValidationError(f"ingress {ingress} is connected to {current[ingress]}; "
                                          "disconnect it first, or use 'msoctl ocs apply'")
                if owner != ingress:
                    raise ValidationError(f"egress {egress} is fed by ingress {owner}; "
                                          "disconnect it first, or use 'msoctl ocs apply'")
            wanted = PortMap({**current, **wanted_pairs}, driver.size)
        except ValidationError as error:
            raise _refused(ctx, device, "ocs.connect", error) from None
        _run_plan(ctx, entry, driver, plan_map(device, current, wanted), "ocs.connect", force,
                  output)


@ocs.command()
@click.argument("device")
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@force_option
@console_option
@output_option
@pass_context
def disconnect(ctx: Context, device: str, ports: tuple[str, ...], force: bool, console: bool,
               output: str) -> None:
    """Remove every connection of the given ports (ingress or egress)."""
    with _driver(ctx, device, console) as (entry, driver):
        try:
            named = set(driver.check_ports(parse_port(p) for p in ports))
        except ValidationError as error:
            raise _refused(ctx, device, "ocs.disconnect", error) from None
        current = driver.port_map()
        wanted = PortMap({i: e for i, e in current.items() if i not in named and e not in named},
                         driver.size)
        _run_plan(ctx, entry, driver, plan_map(device, current, wanted), "ocs.disconnect",
                  force, output)


@ocs.command()
@click.argument("device")
@click.argument("mapfile", type=click.Path(path_type=Path))
@click.option("--dry-run", is_flag=True, help="Show the diff and send nothing.")
@force_option
@console_option
@output_option
@pass_context
def apply(ctx: Context, device: str, mapfile: Path, dry_run: bool, force: bool, console: bool,
          output: str) -> None:
    """Make DEVICE's map exactly MAPFILE: diff, fewest commands, verify map and light.

    MAPFILE is YAML: ``connections: ["1:65", "2:66"]`` (or {ingress, egress}
    objects). Connections not in it are removed. A rerun after an interruption
    converges from whatever the device reports.
    """
    try:
        pairs = load_map_file(mapfile)
    except ValidationError as error:
        raise _refused(ctx, device, "ocs.apply", error) from None
    with _driver(ctx, device, console) as (entry, driver):
        try:
            wanted = PortMap(pairs, driver.size)
        except ValidationError as error:
            raise _refused(ctx, device, "ocs.apply", error) from None
        plan = plan_map(device, driver.port_map(), wanted)
        if dry_run:
            _print_result(ApplyResult(plan, plan.current, 0.0), output, dry_run=True)
            return
        _run_plan(ctx, entry, driver, plan, "ocs.apply", force, output)


@ocs.command()
@click.argument("device")
@click.argument("ports", nargs=-1, metavar="[PORT...]")
@console_option
@output_option
@pass_context
def power(ctx: Context, device: str, ports: tuple[str, ...], console: bool, output: str) -> None:
    """Power monitor readings in dBm (every port when none is named)."""
    with _driver(ctx, device, console) as (_, driver):
        chosen = [parse_port(p) for p in ports] if ports else None
        readings = driver.power(chosen)
        rows = [{"port": port, "direction": _direction(driver, port), "power_dbm": value}
                for port, value in readings.items()]
    if output == "json":
        emit_json({"device": device, "ports": rows})
        return
    click.echo(table(["port", "direction", "power dBm"],
                     [[r["port"], r["direction"], r["power_dbm"]] for r in rows]))


@ocs.command()
@click.argument("device")
@console_option
@output_option
@pass_context
def ports(ctx: Context, device: str, console: bool, output: str) -> None:
    """Every port: direction, state, what it is connected to, power."""
    with _driver(ctx, device, console) as (_, driver):
        states = driver.port_states()
        readings = driver.power()
        current = driver.port_map()
    peer = {**current, **{e: i for i, e in current.items()}}
    rows = [{"port": port, "direction": _direction(driver, port),
             "state": state.value, "connected_to": peer.get(port),
             "power_dbm": readings.get(port)} for port, state in states.items()]
    if output == "json":
        emit_json({"device": device, "ports": rows})
        return
    click.echo(table(["port", "direction", "state", "connected to", "power dBm"],
                     [[r["port"], r["direction"], r["state"], r["connected_to"], r["power_dbm"]]
                      for r in rows]))


@ocs.group()
def port() -> None:
    """Enable or disable ports (a disabled port passes no light)."""


def _set_ports(ctx: Context, device: str, ports: tuple[str, ...], enabled: bool,
               console: bool) -> None:
    action = "ocs.port.enable" if enabled else "ocs.port.disable"
    with _driver(ctx, device, console) as (entry, driver):
        try:
            chosen = driver.check_ports(parse_port(p) for p in ports)
        except ValidationError as error:
            raise _refused(ctx, device, action, error) from None
        with locked_change(ctx.journal, device=entry.name, action=action, ports=chosen):
            states = driver.set_ports_enabled(chosen, enabled)
    click.echo(f"{device}: ports {', '.join(map(str, states))} "
               f"{'enabled' if enabled else 'disabled'} (verified)")


@port.command()
@click.argument("device")
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@console_option
@pass_context
def enable(ctx: Context, device: str, ports: tuple[str, ...], console: bool) -> None:
    """Enable ports."""
    _set_ports(ctx, device, ports, True, console)


@port.command()
@click.argument("device")
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@console_option
@pass_context
def disable(ctx: Context, device: str, ports: tuple[str, ...], console: bool) -> None:
    """Disable ports: their light stops."""
    _set_ports(ctx, device, ports, False, console)


@ocs.command("boot-mode")
@click.argument("device")
@click.argument("mode", required=False, type=click.Choice([m.value for m in BootMode]))
@console_option
@pass_context
def boot_mode(ctx: Context, device: str, mode: str | None, console: bool) -> None:
    """Show or set what the map is after a power loss: dark, or restore."""
    with _driver(ctx, device, console) as (entry, driver):
        if mode is not None:
            with locked_change(ctx.journal, device=entry.name, action="ocs.boot-mode",
                               boot_mode=mode):
                driver.set_boot_mode(BootMode(mode))
        click.echo(f"{device}: boot mode {driver.boot_mode().value}")


@ocs.command()
@click.argument("device")
@console_option
@output_option
@pass_context
def light(ctx: Context, device: str, console: bool, output: str) -> None:
    """Check that light entering each connected path leaves at its egress."""
    with _driver(ctx, device, console) as (_, driver):
        paths = check_light(driver, driver.port_map())
    if output == "json":
        emit_json({"device": device, "paths": [p.as_dict() for p in paths]})
        return
    click.echo(table(["ingress", "egress", "in dBm", "out dBm", "loss dB", "light"],
                     [[p.ingress, p.egress, p.ingress_dbm, p.egress_dbm, p.insertion_loss_db,
                       p.status] for p in paths]))
