"""``msoctl ocs``: the optical circuit switches."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from drivers.errors import DeviceError, SafetyInterlock, ValidationError
from drivers.ocs import BootMode, OcsDriver, PortMap, PortState
from msoctl import impact, safety
from msoctl.acceptance.characterize import Limits, parse_port_list, parse_wavelengths
from msoctl.acceptance.report import summary_rows
from msoctl.acceptance.run import (
    CharacterizeRequest,
    limits_from_options,
    load_report,
    run_characterization,
)
from msoctl.access import open_ocs
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import (
    DOCUMENTS,
    describe_impacts,
    emit,
    fields,
    jobs_touched,
    output_option,
    say,
    table,
    watch_option,
)
from msoctl.cli.types import OCS, Count, Number, OutputDir, input_path
from msoctl.impact import Impact
from msoctl.inventory import Device
from msoctl.journal import locked_change
from msoctl.ops.ocs import (
    ApplyResult,
    OcsPlan,
    apply_plan,
    check_light,
    load_map_file,
    parse_pair,
    parse_port,
    plan_map,
    plan_violations,
)
from msoctl.words import counted, plural

console_option = click.option(
    "--console", is_flag=True, help="Use the device's serial console instead of its network port."
)
force_option = click.option(
    "--force", is_flag=True,
    help="Override the safety interlock on switching lit ports (journaled).",
)


class LightLost(DeviceError):
    """Light entering a connected path does not leave at its egress; the table says where."""


@click.group()
def ocs() -> None:
    """Optical circuit switches: map, ports, power monitors."""


@contextmanager
def _driver(ctx: Context, name: str, console: bool) -> Iterator[tuple[Device, OcsDriver]]:
    device = ctx.device(name, "ocs")
    driver = open_ocs(device, console=console)
    try:
        yield device, driver
    finally:
        driver.close()


def _direction(driver: OcsDriver, port: int) -> str:
    return "ingress" if port <= driver.size else "egress"


@ocs.command()
@watch_option
@click.argument("device", type=OCS)
@console_option
@output_option
@pass_context
def status(ctx: Context, device: str, console: bool, output: str) -> None:
    """Identity, optional features, LC engine figures and the connection map of DEVICE.

    A feature the unit lacks (boot mode, LC figures, alarms, power monitors: asked
    once, see the README) is shown as not supported; JSON gives ``null`` for it and
    lists the features found in ``supported``.
    """
    with _driver(ctx, device, console) as (_, driver):
        features = driver.features()
        identity = driver.identity()
        size = driver.size
        connections = driver.connections()
        lc = driver.lc_status()
        boot = driver.boot_mode() if features.has("boot_mode") else None
        alarm_port = driver.alarm_port() if features.has("alarms") else None
    document = {
        "device": device,
        "identity": {"manufacturer": identity.manufacturer, "model": identity.model,
                     "serial": identity.serial, "firmware": identity.firmware},
        "size": [size, size],
        "supported": features.supported,
        "boot_mode": None if boot is None else boot.value,
        "lc_cell_temperature_celsius": lc.cell_temperature_celsius,
        "last_switching_seconds": lc.last_switching_seconds,
        "alarm_port": alarm_port,
        "connections": [{"ingress": c.ingress, "egress": c.egress,
                         "insertion_loss_db": c.insertion_loss_db} for c in connections],
    }
    if output in DOCUMENTS:
        emit(document, output)
        return

    def shown(key: str, value: str) -> str:
        return value if features.has(key) else "not supported by this unit"

    click.echo(fields([
        ("device", device),
        ("model", f"{identity.manufacturer} {identity.model}"),
        ("serial", identity.serial),
        ("firmware", identity.firmware),
        ("size", f"{size}x{size} (ingress 1..{size}, egress {size + 1}..{2 * size})"),
        ("power monitors", shown("power_monitors", "yes")),
        ("boot mode", shown("boot_mode", "-" if boot is None else boot.value)),
        ("LC cell", shown("lc_figures", "-" if lc.cell_temperature_celsius is None
                          else f"{lc.cell_temperature_celsius:.1f} °C")),
        ("last switching", shown("lc_figures", "-" if lc.last_switching_seconds is None
                                 else f"{lc.last_switching_seconds * 1000:.1f} ms")),
        ("alarms", shown("alarms", "not served now" if alarm_port is None
                         else f"on TCP port {alarm_port}")),
        ("connections", len(connections)),
    ]))
    if connections:
        click.echo()
        click.echo(table(["ingress", "egress", "insertion loss dB"],
                         [[c.ingress, c.egress, c.insertion_loss_db] for c in connections]))


def _refused(ctx: Context, device: str, action: str, error: ValidationError) -> ValidationError:
    ctx.journal.refuse(device=device, action=action, reason=error.message, exit_code=2)
    return error


def print_impacts(impacts: list[Impact]) -> None:
    click.echo(describe_impacts(impacts))


def _print_result(result: ApplyResult, output: str, *, dry_run: bool = False) -> None:
    plan = result.plan
    impacts = impact.worst_first(result.impacts)
    if output in DOCUMENTS:
        document: dict[str, Any] = {**plan.as_dict(), "dry_run": dry_run,
                                    "impact": [i.as_dict() for i in impacts],
                                    "jobs": jobs_touched(impacts)}
        if not dry_run:
            document.update({
                "seconds": round(result.seconds, 4),
                "connections": [{"ingress": i, "egress": e} for i, e in result.final.items()],
                "light": [p.as_dict() for p in result.light] if result.light_checked
                else None,
                "recovered_operations": result.recovered,
                "overrides": result.overrides,
                "power_unchecked_ports": result.unchecked_ports,
            })
        emit(document, output)
        return
    _print_plan(plan)
    print_impacts(impacts)
    if dry_run:
        say("dry run: nothing was sent")
        return
    for op in result.recovered:
        say(f"note: an earlier change ({op}) was interrupted; "
            "converged from the map the device reported")
    for message in result.overrides:
        say(f"warning: safety override: {message}")
    if result.unchecked_ports:
        shown = ", ".join(map(str, result.unchecked_ports[:8]))
        more = f" and {len(result.unchecked_ports) - 8} more" if len(result.unchecked_ports) > 8 \
            else ""
        ports = plural(len(result.unchecked_ports), "port")
        say(f"warning: no power reading on {ports} {shown}{more}: the lit-port "
            "interlock could not check them (journaled)")
    if plan.method != "none":
        say(f"applied with 1 command ({plan.method}) in {result.seconds * 1000:.0f} ms; "
            f"map verified ({counted(len(result.final), 'connection')})")
    if not result.light_checked:
        say(f"light not checked: {plan.device} has no power monitors")
    if result.light:
        lit = [p for p in result.light if p.status != "dark input"]
        say(f"light verified on {counted(len(lit), 'lit path')}; "
            f"{counted(len(result.light) - len(lit), 'path')} without light at the ingress")
        click.echo(table(["ingress", "egress", "in dBm", "out dBm", "loss dB", "light"],
                         [[p.ingress, p.egress, p.ingress_dbm, p.egress_dbm,
                           p.insertion_loss_db, p.status] for p in result.light]))


def _print_plan(plan: OcsPlan) -> None:
    if plan.method == "none":
        say(f"{plan.device}: map already as wanted ({counted(len(plan.wanted), 'connection')})")
        return
    say(f"{plan.device}: {len(plan.diff.remove)} to remove, {len(plan.diff.add)} to add, "
        f"{len(plan.diff.keep)} unchanged; method: {plan.method}")
    for row in plan.rows():
        sign = "-" if row["action"] == "remove" else "+"
        say(f"  {sign} {row['ingress']}:{row['egress']}")


def _run_plan(ctx: Context, device: Device, driver: OcsDriver, plan: OcsPlan, action: str,
              force: bool, output: str, *, dry_run: bool = False) -> None:
    impacts = impact.ocs_map(ctx.inventory, device.name, plan.current, plan.wanted,
                             ctx.drained(), read_map=ctx.read_map)
    if dry_run:
        # the same rules as the run itself: a dry run refuses what the run would refuse
        violations, unchecked = plan_violations(driver, plan, device, impacts)
        if violations and not force:
            _print_result(ApplyResult(plan, plan.current, 0.0, impacts=impacts,
                                      unchecked_ports=unchecked), output, dry_run=True)
            raise SafetyInterlock(f"the change would be refused: {safety.refusal(violations)}",
                                  device=device.name)
        _print_result(ApplyResult(plan, plan.current, 0.0, impacts=impacts,
                                  unchecked_ports=unchecked), output, dry_run=True)
        return
    result = apply_plan(driver, plan, journal=ctx.journal, device=device, action=action,
                        force=force, impacts=impacts)
    _print_result(result, output)


dry_run_option = click.option("--dry-run", is_flag=True,
                              help="Show the diff and its impact on links; send nothing.")


@ocs.command()
@click.argument("device", type=OCS)
@click.argument("pairs", nargs=-1, required=True, metavar="IN:OUT...")
@dry_run_option
@force_option
@console_option
@output_option
@pass_context
def connect(ctx: Context, device: str, pairs: tuple[str, ...], dry_run: bool, force: bool,
            console: bool, output: str) -> None:
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
                  output, dry_run=dry_run)


@ocs.command()
@click.argument("device", type=OCS)
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@dry_run_option
@force_option
@console_option
@output_option
@pass_context
def disconnect(ctx: Context, device: str, ports: tuple[str, ...], dry_run: bool, force: bool,
               console: bool, output: str) -> None:
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
                  force, output, dry_run=dry_run)


@ocs.command()
@click.argument("device", type=OCS)
@click.argument("mapfile", type=input_path(dir_okay=False))
@dry_run_option
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
        _run_plan(ctx, entry, driver, plan, "ocs.apply", force, output, dry_run=dry_run)


@ocs.command("map")
@watch_option
@click.argument("device", type=OCS)
@console_option
@output_option
@pass_context
def map_command(ctx: Context, device: str, console: bool, output: str) -> None:
    """The connection map of DEVICE, written as a map file: saved, ``msoctl ocs apply
    DEVICE FILE`` puts this map back. ``-o json`` gives the connections as objects."""
    with _driver(ctx, device, console) as (_, driver):
        current = driver.port_map()
    if output in DOCUMENTS:
        emit({"device": device, "connections": [{"ingress": i, "egress": e}
                                                for i, e in current.items()]}, output)
        return
    click.echo(f"# {device}: {counted(len(current), 'connection')}; "
               f"'msoctl ocs apply {device} FILE' puts this map back")
    click.echo("connections:" + ("" if current else " []"))
    for ingress, egress in current.items():
        click.echo(f'  - "{ingress}:{egress}"')


@ocs.command()
@watch_option
@click.argument("device", type=OCS)
@click.argument("ports", nargs=-1, metavar="[PORT...]")
@console_option
@output_option
@pass_context
def power(ctx: Context, device: str, ports: tuple[str, ...], console: bool, output: str) -> None:
    """Power monitor readings in dBm (every port when none is named)."""
    with _driver(ctx, device, console) as (_, driver):
        driver.require("power_monitors")
        chosen = [parse_port(p) for p in ports] if ports else None
        readings = driver.power(chosen)
        rows = [{"port": port, "direction": _direction(driver, port), "power_dbm": value}
                for port, value in readings.items()]
    if output in DOCUMENTS:
        emit({"device": device, "ports": rows}, output)
        return
    click.echo(table(["port", "direction", "power dBm"],
                     [[r["port"], r["direction"], r["power_dbm"]] for r in rows],
                     wide_only=("direction",)))


@ocs.command()
@watch_option
@click.argument("device", type=OCS)
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
    if output in DOCUMENTS:
        emit({"device": device, "ports": rows}, output)
        return
    click.echo(table(["port", "direction", "state", "connected to", "power dBm"],
                     [[r["port"], r["direction"], r["state"], r["connected_to"], r["power_dbm"]]
                      for r in rows], wide_only=("direction",)))


@ocs.group()
def port() -> None:
    """Enable or disable ports (a disabled port passes no light)."""


def _set_ports(ctx: Context, device: str, ports: tuple[str, ...], enabled: bool,
               console: bool, *, force: bool = False, dry_run: bool = False) -> None:
    action = "ocs.port.enable" if enabled else "ocs.port.disable"
    with _driver(ctx, device, console) as (entry, driver):
        try:
            chosen = driver.check_ports(parse_port(p) for p in ports)
        except ValidationError as error:
            raise _refused(ctx, device, action, error) from None
        impacts = [] if enabled else impact.worst_first(impact.ocs_ports_disabled(
            ctx.inventory, entry.name, chosen, driver.port_map(), ctx.drained(),
            read_map=ctx.read_map))
        if not enabled:
            print_impacts(impacts)
        if dry_run:
            violations = safety.links_taken_down(impacts)  # as the run itself would judge
            if violations and not force:
                raise SafetyInterlock("the change would be refused: "
                                      f"{safety.refusal(violations)}", device=entry.name)
            say("dry run: nothing was sent")
            return
        overrides = impact.enforce(impacts, journal=ctx.journal, device=entry.name,
                                   action=action, force=force)
        want = PortState.ENABLED if enabled else PortState.DISABLED
        before = driver.port_states(chosen)

        def found() -> dict[str, Any]:
            now = driver.port_states(chosen)
            done = [p for p, s in now.items() if s == want]
            state = ("applied" if len(done) == len(now) else
                     "not applied" if now == before else "partly applied")
            return {"state": state, "ports": {str(p): s.value for p, s in now.items()}}

        with locked_change(ctx.journal, device=entry.name, action=action, ports=chosen,
                           impact=[i.as_dict() for i in impacts], read_back=found) as change:
            impact.note_overrides(change, overrides)
            states = driver.set_ports_enabled(chosen, enabled)
    say(f"{device}: ports {', '.join(map(str, states))} "
        f"{'enabled' if enabled else 'disabled'} (verified)")


@port.command()
@click.argument("device", type=OCS)
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@console_option
@pass_context
def enable(ctx: Context, device: str, ports: tuple[str, ...], console: bool) -> None:
    """Enable ports."""
    _set_ports(ctx, device, ports, True, console)


@port.command()
@click.argument("device", type=OCS)
@click.argument("ports", nargs=-1, required=True, metavar="PORT...")
@dry_run_option
@click.option("--force", is_flag=True,
              help="Disable ports that carry an in-service link (journaled).")
@console_option
@pass_context
def disable(ctx: Context, device: str, ports: tuple[str, ...], dry_run: bool, force: bool,
            console: bool) -> None:
    """Disable ports: their light stops."""
    _set_ports(ctx, device, ports, False, console, force=force, dry_run=dry_run)


@ocs.command("boot-mode")
@click.argument("device", type=OCS)
@click.argument("mode", required=False, type=click.Choice([m.value for m in BootMode]))
@console_option
@pass_context
def boot_mode(ctx: Context, device: str, mode: str | None, console: bool) -> None:
    """Show or set what the map is after a power loss: dark, or restore."""
    with _driver(ctx, device, console) as (entry, driver):
        try:
            driver.require("boot_mode")
        except ValidationError as error:
            if mode is None:
                raise
            raise _refused(ctx, device, "ocs.boot-mode", error) from None
        if mode is not None:
            impacts = impact.ocs_boot_mode(ctx.inventory, entry.name, mode, driver.port_map(),
                                           ctx.drained())
            print_impacts(impacts)

            def found() -> dict[str, Any]:
                now = driver.boot_mode().value
                return {"state": "applied" if now == mode else "not applied", "boot_mode": now}

            with locked_change(ctx.journal, device=entry.name, action="ocs.boot-mode",
                               boot_mode=mode, impact=[i.as_dict() for i in impacts],
                               read_back=found):
                driver.set_boot_mode(BootMode(mode))
        say(f"{device}: boot mode {driver.boot_mode().value}")


@ocs.command()
@click.argument("device", type=OCS)
@console_option
@output_option
@pass_context
def light(ctx: Context, device: str, console: bool, output: str) -> None:
    """Check that light entering each connected path leaves at its egress.

    Exits 1 (after the table or the JSON document) when any path has lost its light.
    """
    with _driver(ctx, device, console) as (_, driver):
        driver.require("power_monitors")
        paths = check_light(driver, driver.port_map())
    if output in DOCUMENTS:
        emit({"device": device, "paths": [p.as_dict() for p in paths]}, output)
    else:
        click.echo(table(["ingress", "egress", "in dBm", "out dBm", "loss dB", "light"],
                         [[p.ingress, p.egress, p.ingress_dbm, p.egress_dbm,
                           p.insertion_loss_db, p.status] for p in paths]))
    lost = [f"{p.ingress}:{p.egress}" for p in paths if p.status == "lost"]
    if lost:
        raise LightLost(f"light lost on {len(lost)} of {counted(len(paths), 'path')}: "
                        f"{', '.join(lost)}", device=device)


@ocs.command()
@watch_option
@click.argument("device", type=OCS)
@click.argument("ports", nargs=-1, metavar="[PORT...]")
@console_option
@output_option
@pass_context
def alarms(ctx: Context, device: str, ports: tuple[str, ...], console: bool,
           output: str) -> None:
    """Loss-of-light alarms of DEVICE: armed ports (every port when none is named), their
    thresholds and whether each has lost its light now.

    The alarms are this project's dialect extension; on a unit without them the command
    says so in one line (exit 2). The protection controller arms them (`protect run`).
    """
    from drivers.ocs.alarms import alarm_settings

    with _driver(ctx, device, console) as (_, driver):
        chosen = [parse_port(p) for p in ports] if ports else None
        driver.require("alarms")
        settings = alarm_settings(driver)
        thresholds = driver.los_thresholds(chosen)
        armed = [port for port, value in thresholds.items() if value is not None]
        states = driver.los_states(armed) if armed else {}
    rows = [{"port": port, "threshold_dbm": thresholds[port], "light_lost": states[port]}
            for port in armed]
    if output in DOCUMENTS:
        emit({"device": device, "enabled": settings.enabled,
              "hysteresis_db": settings.hysteresis_db, "alarm_port": settings.port,
              "ports": rows}, output)
        return
    click.echo(fields([
        ("device", device),
        ("alarms", "enabled" if settings.enabled else "disabled"),
        ("hysteresis", f"{settings.hysteresis_db:.2f} dB"),
        ("alarm port", "not served now" if settings.port is None
         else f"TCP {settings.port}"),
        ("armed ports", len(rows)),
    ]))
    if rows:
        click.echo()
        click.echo(table(["port", "threshold dBm", "light"],
                         [[r["port"], r["threshold_dbm"], "lost" if r["light_lost"] else "ok"]
                          for r in rows]))


# ---- acceptance testing with lab instruments (msoctl/acceptance/) ---------------------------


@ocs.command()
@click.argument("device", type=OCS)
@click.option("--laser", "laser_name", required=True, metavar="NAME",
              help="Tunable laser (inventory kind laser) feeding the ingress ports.")
@click.option("--meter", "meter_name", required=True, metavar="NAME",
              help="Power meter (inventory kind meter) on the egress ports.")
@click.option("--ports", metavar="LIST",
              help="Ports to characterize, e.g. 1-8,65-72: every named ingress port to every "
                   "named egress port (all of the test set's when none of a side is named).")
@click.option("--wavelengths", default="1550", show_default=True, metavar="NM[,NM...]",
              help="Wavelengths, nm.")
@click.option("--repeat", type=Count(1, 100), default=3, show_default=True,
              help="Rounds: each path is reconnected and measured this many times.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              type=OutputDir(),
              help="Directory for report.json, measurements.csv, figures and the state "
                   "that lets a rerun continue.")
@click.option("--reference", metavar="FILE", type=input_path(dir_okay=False),
              help="Test-set reference (default: the laser's 'reference' in the inventory).")
@click.option("--laser-power", type=Number(), default=10.0, show_default=True, metavar="DBM",
              help="Laser output power, dBm.")
@click.option("--averaging-time", type=Number(), default=0.01, show_default=True, metavar="S",
              help="Meter averaging time of the single readings, seconds.")
@click.option("--log-interval", type=Number(), default=1e-4, show_default=True, metavar="S",
              help="Meter logging interval for switching time, seconds.")
@click.option("--log-window", type=Number(), default=0.1, show_default=True, metavar="S",
              help="Longest logging window per switch step, seconds.")
@click.option("--max-il", type=Number(), default=Limits.max_insertion_loss_db, show_default=True,
              metavar="DB", help="Insertion-loss limit, dB.")
@click.option("--max-repeatability", type=Number(), default=Limits.max_repeatability_db,
              show_default=True, metavar="DB", help="Repeatability limit, +-dB.")
@click.option("--max-switching-ms", type=Number(), default=Limits.max_switching_seconds * 1000,
              show_default=True, metavar="MS", help="Switching-time limit, ms.")
@click.option("--max-crosstalk", type=Number(), default=Limits.max_crosstalk_db, show_default=True,
              metavar="DB", help="Crosstalk limit, dB (relative to the launched power).")
@click.option("--restart", is_flag=True,
              help="Discard a previous, different characterization in DIR and start again.")
@force_option
@output_option
@pass_context
def characterize(ctx: Context, device: str, laser_name: str, meter_name: str, ports: str | None,
                 wavelengths: str, repeat: int, out_dir: Path, reference: Path | None,
                 laser_power: float, averaging_time: float, log_interval: float,
                 log_window: float, max_il: float, max_repeatability: float,
                 max_switching_ms: float, max_crosstalk: float, restart: bool, force: bool,
                 output: str) -> None:
    """Acceptance test of DEVICE: insertion loss, repeatability, switching time, crosstalk.

    Each switch step sets a whole permutation and measures every path of it at
    once (the laser reaches every ingress port through a fan-out; every egress
    port has its own meter port). Interrupted, a rerun with the same options
    continues where it stopped. Writes DIR/report.json, DIR/measurements.csv and
    PNG figures; exits 1 when a limit is not met.
    """
    request = CharacterizeRequest(
        device=device, laser=laser_name, meter=meter_name,
        ports=parse_port_list(ports) if ports else None,
        wavelengths_nm=parse_wavelengths(wavelengths), repeat=repeat, out_dir=out_dir,
        reference=reference, laser_power_dbm=laser_power, averaging_seconds=averaging_time,
        log_interval_seconds=log_interval, log_window_seconds=log_window,
        limits=limits_from_options(max_il, max_repeatability, max_switching_ms, max_crosstalk),
        restart=restart, force=force,
        show_progress=output not in DOCUMENTS and sys.stderr.isatty(),
        impacts_of=lambda before, after: impact.worst_first(impact.ocs_map(
            ctx.inventory, device, before, after, ctx.drained(), read_map=ctx.read_map)))
    document = run_characterization(ctx.devices, ctx.journal, request)
    if output in DOCUMENTS:
        emit(document, output)
    else:
        _print_characterization(document, out_dir)
    if not document["pass"]:
        raise click.ClickException(f"{device} did not pass: " + "; ".join(document["failures"]))


@ocs.command()
@click.argument("directory", metavar="DIR", type=input_path(file_okay=False))
@output_option
def report(directory: Path, output: str) -> None:
    """Print the summary of a characterization written to DIR."""
    document = load_report(directory)
    if output in DOCUMENTS:
        emit(document, output)
        return
    _print_characterization(document, directory)


def _print_characterization(document: dict[str, Any], directory: Path) -> None:
    settings = document["settings"]
    verdict = "PASS" if document["pass"] else "FAIL"
    ocs_id = document.get("identities", {}).get("ocs", {})
    say(f"{document['device']}: {verdict}  "
        f"({len(settings['ingress'])}x{len(settings['egress'])} paths, "
        f"{counted(len(settings['wavelengths_nm']), 'wavelength')}, "
        f"{counted(settings['repeat'], 'round')}, "
        f"{document['steps']} switch steps"
        + (f"; serial {ocs_id['serial']}" if ocs_id.get("serial") else "") + ")")
    click.echo(table(["measure", "wavelength", "measured", "limit", "result"],
                     summary_rows(document)))
    for failure in document["failures"]:
        say(f"  - {failure}")
    files = document.get("files", {})
    names = [files.get("report"), files.get("measurements"),
             *files.get("insertion_loss_heatmaps", []), files.get("switching_histogram")]
    say(f"files in {directory}: " + ", ".join(n for n in names if n))
