"""``msoctl amp``: the pluggable optical amplifiers on the inter-campus spans."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from drivers.amp.driver import AmpDriver
from drivers.amp.types import AmpPath, AmpStatus
from drivers.cmis.fields import LOWER
from drivers.errors import SafetyInterlock, ValidationError, VerificationFailed
from msoctl import impact, safety
from msoctl.access import open_amp
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import (
    DOCUMENTS,
    cell,
    describe_impacts,
    emit,
    fields,
    output_option,
    say,
    table,
    watch_option,
    wrap,
)
from msoctl.cli.types import AMP, Number
from msoctl.impact import Impact
from msoctl.inventory import Device
from msoctl.journal import locked_change
from msoctl.ops.amp import RESTART, SET, restart_amplifier, set_amplifier, set_tx, setting_what
from msoctl.words import counted


@click.group()
def amp() -> None:
    """Optical amplifiers: gain, power, Tx disable, ALS, flags, thresholds, raw pages."""


@contextmanager
def _driver(ctx: Context, name: str) -> Iterator[tuple[Device, AmpDriver]]:
    device = ctx.device(name, "amp")
    driver = open_amp(device)
    try:
        yield device, driver
    finally:
        driver.close()


NOT_ADVERTISED = "not advertised by this module"


def _dbm(milliwatts: float | None) -> float | None:
    """A power in mW as dBm; ``None`` for no reading or no light (minus infinity)."""
    if milliwatts is None or milliwatts <= 0:
        return None
    return round(10 * math.log10(milliwatts), 2)


def status_document(name: str, status: AmpStatus, driver: AmpDriver,
                    path: AmpPath | None = None) -> dict[str, Any]:
    """The ``amp status`` document; ``path`` (Tx disable, data path) is read if not given.
    A value the module does not have (a monitor it does not advertise, the amplifier page
    it does not carry) is ``null``; ``supported`` lists the features found."""
    caps = driver.capabilities()
    path = path or driver.optical_path()
    lane = driver.module.lane_monitors()
    s, m, i = status.settings, status.monitors, status.identity
    return {
        "device": name,
        "module_state": status.module.state,
        "vendor": i.vendor,
        "part_number": i.part_number,
        "serial": i.serial,
        "firmware": i.firmware,
        "cmis_revision": i.cmis_revision,
        "connector": i.connector,
        "media_interface_technology": i.media_interface_technology,
        "supported": list(driver.supported()),
        "temperature_celsius": status.module.temperature_celsius,
        "vcc_volts": status.module.vcc_volts,
        "lane1_rx_power_dbm": _dbm(lane.rx_power_milliwatts),
        "fault_cause": status.module.fault_cause,
        "input_power_dbm": m.input_power_dbm,
        "output_power_dbm": m.output_power_dbm,
        "gain_db": m.gain_db,
        "tilt_db": m.tilt_db,
        "target_gain_db": s.target_gain_db,
        "target_output_power_dbm": s.target_output_power_dbm,
        "target_tilt_db": s.target_tilt_db,
        "mode": s.mode,
        "output_enabled": s.output_enabled,
        "tx_disabled": path.tx_disabled,
        "data_path_state": path.data_path_state,
        "gain_min_db": caps.gain_min_db,
        "gain_max_db": caps.gain_max_db,
        "output_power_max_dbm": caps.output_power_max_dbm,
        "pump_currents_ma": list(m.pump_currents_ma),
        "pump_temperature_celsius": m.pump_temperature_celsius,
        "back_reflection_db": m.back_reflection_db,
        "als_mode": s.als_mode,
        "als_state": m.als_state,
        "als_los_soak_seconds": s.als_los_soak_seconds,
        "als_restart_interval_seconds": s.als_restart_interval_seconds,
        "als_restart_pulse_seconds": s.als_restart_pulse_seconds,
        "conditions": list(m.conditions),
    }


@amp.command()
@watch_option
@click.argument("device", type=AMP)
@output_option
@pass_context
def status(ctx: Context, device: str, output: str) -> None:
    """Module state, power in and out, gain, pumps, ALS (reads no latched flag).

    On a module without the amplifier page (B0h) only the standard CMIS part is shown,
    and the amplifier's values are null in JSON."""
    with _driver(ctx, device) as (_, driver):
        status = driver.status()
        document = status_document(device, status, driver)
    if output in DOCUMENTS:
        emit(document, output)
        return
    d = document
    supported = set(d["supported"])
    temperature = (f"{cell(d['temperature_celsius'], 1)} °C"
                   if "temperature_monitor" in supported else NOT_ADVERTISED)
    vcc = f"{cell(d['vcc_volts'])} V" if "vcc_monitor" in supported else NOT_ADVERTISED
    rx = (f"{cell(d['lane1_rx_power_dbm'])} dBm" if "rx_power_monitor" in supported
          else NOT_ADVERTISED)
    standard = [
        ("device", device),
        ("module state", d["module_state"]),
        ("module", f"{d['vendor']} {d['part_number']} serial {d['serial']}, "
                   f"firmware {d['firmware']}, CMIS {d['cmis_revision']}"),
        ("media", f"connector {d['connector'] or '-'}, technology "
                  f"{d['media_interface_technology'] or '-'}"),
        ("temperature", temperature),
        ("Vcc", vcc),
        ("Tx", f"{_tx_word(d['tx_disabled'])} (page 10h), data path "
               f"{d['data_path_state'] or '-'}"),
        ("lane 1 Rx power", rx),
        ("supported", ", ".join(d["supported"]) or "none"),
    ]
    if not status.amplifier_page:
        click.echo(fields([*standard, ("amplifier page", NOT_ADVERTISED)]))
        return
    mode = {"gain": "constant gain", "power": "constant output power"}.get(d["mode"], d["mode"])
    pumps = ", ".join(f"{cell(c, 1)} mA" for c in d["pump_currents_ma"]) or "-"
    click.echo(fields([
        *standard,
        ("mode", f"{mode}, output {'enabled' if d['output_enabled'] else 'disabled'}"),
        ("target gain", f"{cell(d['target_gain_db'])} dB (range {cell(d['gain_min_db'])}.."
                        f"{cell(d['gain_max_db'])} dB)"),
        ("target output", f"{cell(d['target_output_power_dbm'])} dBm "
                          f"(max {cell(d['output_power_max_dbm'])} dBm)"),
        ("input power", f"{cell(d['input_power_dbm'])} dBm"),
        ("output power", f"{cell(d['output_power_dbm'])} dBm"),
        ("gain", f"{cell(d['gain_db'])} dB, tilt {cell(d['tilt_db'])} dB"),
        ("pumps", f"{pumps}, {cell(d['pump_temperature_celsius'], 1)} °C"),
        ("back reflection", f"{cell(d['back_reflection_db'], 1)} dB"),
        ("ALS", f"{d['als_mode']}, state {d['als_state']} (soak "
                f"{cell(d['als_los_soak_seconds'], 3)} s, restart every "
                f"{cell(d['als_restart_interval_seconds'], 0)} s, pulse "
                f"{cell(d['als_restart_pulse_seconds'], 3)} s)"),
        ("conditions", ", ".join(d["conditions"]) or "none"),
    ]))


def amp_impacts(ctx: Context, name: str, effect: str, reason: str) -> list[Impact]:
    """What a change of amplifier ``name`` does to the links on its span (read from the maps
    of the OCS at their ends)."""
    return impact.worst_first(impact.amplifier(ctx.inventory, name, effect, reason,
                                               ctx.read_map, ctx.drained()))


def _tx_word(disabled: bool | None) -> str:
    return {True: "disabled", False: "enabled", None: "-"}[disabled]


@amp.command()
@click.argument("device", type=AMP)
@click.argument("state", type=click.Choice(["off", "on"]))
@click.option("--override-laser-safety", is_flag=True,
              help="Turn the output on even though ALS would not shut it on a cut fiber "
                   "(journaled).")
@click.option("--dry-run", is_flag=True, help="Show the links it darkens; write nothing.")
@click.option("--force", is_flag=True,
              help="Turn the output off although it darkens an in-service link (journaled).")
@pass_context
def tx(ctx: Context, device: str, state: str, override_laser_safety: bool, dry_run: bool,
       force: bool) -> None:
    """Tx output disable (CMIS page 10h): off darkens the output, on lights it again.

    Turning it off is refused (exit 3) while it would take an in-service link down
    (drain the link first, or --force). Turning it on is refused (exit 3) while ALS is
    disabled or set so that it would keep the output lit into a cut fiber, unless
    --override-laser-safety.
    """
    impacts = (amp_impacts(ctx, device, "down", "Tx disabled: no output") if state == "off"
               else amp_impacts(ctx, device, "restored", "Tx enabled: its output comes back"))
    click.echo(describe_impacts(impacts))
    if dry_run:
        say("dry run: nothing was written")
        return
    overrides = impact.enforce(impacts, journal=ctx.journal, device=device, action="amp.tx",
                               force=force)
    with _driver(ctx, device) as (_, driver):
        result = set_tx(ctx.journal, device, driver, disabled=state == "off",
                        override_laser_safety=override_laser_safety, overrides=overrides,
                        impact=[i.as_dict() for i in impacts])
    for violation in result.overrides:
        say(f"warning: safety override: {violation.message}")
    say(f"{device}: Tx {_tx_word(result.after.tx_disabled)}, data path "
        f"{result.after.data_path_state or '-'}, output "
        f"{cell(result.output_power_dbm)} dBm (read back)")


def _pick(wanted: float | None, current: float | None) -> float | None:
    return current if wanted is None else wanted


def _refuse(ctx: Context, device: str, action: str, error: ValidationError) -> ValidationError:
    ctx.journal.refuse(device=device, action=action, reason=error.message, exit_code=2)
    return error


def _need_amplifier_page(ctx: Context, device: str, driver: AmpDriver, action: str,
                         what: str) -> None:
    """Refuse ``what`` (exit 2, journaled) on a module without the amplifier page, before
    anything is shown or written."""
    try:
        driver.require_amplifier_page(what)
    except ValidationError as error:
        raise _refuse(ctx, device, action, error) from None


@amp.command("set")
@click.argument("device", type=AMP)
@click.option("--mode", type=click.Choice(["gain", "power"]),
              help="Constant gain, or constant output power.")
@click.option("--gain", "gain_db", type=Number(), metavar="DB", help="Target gain, dB.")
@click.option("--output-power", "output_power_dbm", type=Number(), metavar="DBM",
              help="Target output power, dBm (constant output power mode).")
@click.option("--tilt", "tilt_db", type=Number(), metavar="DB", help="Target gain tilt, dB.")
@click.option("--slew", "slew_db_per_second", type=Number(0.1, 1000), metavar="DB/S",
              help="Gain ramp rate (default: the inventory's, else 10 dB/s).")
@click.option("--dry-run", is_flag=True, help="Show the links it disturbs; write nothing.")
@pass_context
def set_command(ctx: Context, device: str, mode: str | None, gain_db: float | None,
                output_power_dbm: float | None, tilt_db: float | None,
                slew_db_per_second: float | None, dry_run: bool) -> None:
    """Set mode, target gain, output power or tilt. Gain steps are ramped."""
    if mode is None and gain_db is None and output_power_dbm is None and tilt_db is None:
        raise ValidationError("nothing to set: give --mode, --gain, --output-power or --tilt")
    with _driver(ctx, device) as (entry, driver):
        _need_amplifier_page(ctx, device, driver, SET, setting_what(
            mode=mode, gain_db=gain_db, output_power_dbm=output_power_dbm, tilt_db=tilt_db))
        if dry_run:  # what the change would refuse, the dry run refuses (not journaled)
            driver.check_targets(gain_db=gain_db, output_power_dbm=output_power_dbm,
                                 tilt_db=tilt_db)
        impacts = amp_impacts(ctx, device, "disturbed", "the light level on its span changes")
        click.echo(describe_impacts(impacts))
        if dry_run:
            say("dry run: nothing was written")
            return
        result = set_amplifier(ctx.journal, entry, driver, mode=mode, gain_db=gain_db,
                               output_power_dbm=output_power_dbm, tilt_db=tilt_db,
                               slew_db_per_second=slew_db_per_second,
                               impact=[i.as_dict() for i in impacts])
    steps, before, after = result.gain_steps_db, result.before, result.after
    if len(steps) > 1:
        say(f"{device}: gain ramped {cell(before.target_gain_db)} -> "
            f"{steps[-1]:.2f} dB in {counted(len(steps), 'step')} at "
            f"{result.slew_db_per_second:g} dB/s")
    say(f"{device}: mode {after.mode}, target gain {cell(after.target_gain_db)} dB, "
        f"target output {cell(after.target_output_power_dbm)} dBm, "
        f"tilt {cell(after.target_tilt_db)} dB (read back)")


@amp.command()
@click.argument("device", type=AMP)
@click.option("--mode", type=click.Choice(["auto", "manual", "disabled"]),
              help="Automatic restart, manual restart, or disabled.")
@click.option("--los-soak", "los_soak", type=Number(), metavar="SECONDS",
              help="Lost input this long shuts the output.")
@click.option("--restart-interval", "restart_interval", type=Number(), metavar="SECONDS",
              help="Time between automatic restart pulses.")
@click.option("--pulse", "pulse", type=Number(), metavar="SECONDS",
              help="Length of a restart pulse.")
@click.option("--override-laser-safety", is_flag=True,
              help="Allow disabling ALS (journaled). The output then stays lit into a cut fiber.")
@pass_context
def als(ctx: Context, device: str, mode: str | None, los_soak: float | None,
        restart_interval: float | None, pulse: float | None,
        override_laser_safety: bool) -> None:
    """Set the automatic laser shutdown mode and timings."""
    if mode is None and los_soak is None and restart_interval is None and pulse is None:
        raise ValidationError("nothing to set: give --mode, --los-soak, --restart-interval "
                              "or --pulse")
    timings = {"los_soak_seconds": los_soak, "restart_interval_seconds": restart_interval,
               "restart_pulse_seconds": pulse}
    with _driver(ctx, device) as (_, driver):
        _need_amplifier_page(ctx, device, driver, "amp.als",
                             "setting the ALS mode" if mode is not None
                             else "setting the ALS timings")
        try:
            driver.check_als_timings(**timings)
        except ValidationError as error:
            raise _refuse(ctx, device, "amp.als", error) from None
        risk = {"manual": "after a cut its output stays shut until a manual restart",
                "disabled": "after a cut its output stays lit into the broken fiber"}
        impacts = (amp_impacts(ctx, device, "at risk", risk[mode]) if mode in risk else [])
        click.echo(describe_impacts(impacts))
        now = driver.settings()
        violations = [*safety.amp_als_mode(mode or ""), *safety.amp_als_timings(
            los_soak_seconds=_pick(los_soak, now.als_los_soak_seconds),
            restart_interval_seconds=_pick(restart_interval, now.als_restart_interval_seconds),
            restart_pulse_seconds=_pick(pulse, now.als_restart_pulse_seconds),
        )]
        if violations and not override_laser_safety:
            ctx.journal.refuse(device=device, action="amp.als", reason=violations[0].message,
                               exit_code=3, rule=violations[0].rule, als_mode=mode,
                               **{k: v for k, v in timings.items() if v is not None})
            raise SafetyInterlock(f"{violations[0].message}; use --override-laser-safety "
                                  "to do it anyway (journaled)", device=device)
        def found() -> dict[str, Any]:
            after = driver.settings()
            return {"state": "applied" if mode in (None, after.als_mode) else "not applied",
                    "als_mode": after.als_mode,
                    "los_soak_seconds": after.als_los_soak_seconds,
                    "restart_interval_seconds": after.als_restart_interval_seconds,
                    "restart_pulse_seconds": after.als_restart_pulse_seconds}

        with locked_change(
            ctx.journal, device=device, action="amp.als", als_mode=mode, read_back=found,
            impact=[i.as_dict() for i in impacts],
            **{k: v for k, v in timings.items() if v is not None}
        ) as change:
            for violation in violations:
                change.note("override", rule=violation.rule, reason=violation.message)
                say(f"warning: safety override: {violation.message}")
            driver.set_als_timings(**timings)
            if mode is not None:
                driver.set_als_mode(mode)
            after = driver.settings()
    say(f"{device}: ALS {after.als_mode}, soak {cell(after.als_los_soak_seconds, 3)} s, "
        f"restart every {cell(after.als_restart_interval_seconds, 0)} s, pulse "
        f"{cell(after.als_restart_pulse_seconds, 3)} s (read back)")


@amp.command()
@click.argument("device", type=AMP)
@pass_context
def restart(ctx: Context, device: str) -> None:
    """Send one ALS restart pulse (after a manual-restart shutdown)."""
    with _driver(ctx, device) as (_, driver):
        _need_amplifier_page(ctx, device, driver, RESTART, "an ALS restart")
        impacts = amp_impacts(ctx, device, "disturbed",
                              "a restart pulse lights its span's output for about 2 s")
        click.echo(describe_impacts(impacts))
        state = restart_amplifier(ctx.journal, device, driver,
                                  impact=[i.as_dict() for i in impacts])
    say(f"{device}: restart pulse requested; ALS state now {state}")


@amp.command()
@click.argument("device", type=AMP)
@output_option
@pass_context
def flags(ctx: Context, device: str, output: str) -> None:
    """Read the latched flags. Reading clears them in the module: this says which were set."""
    with _driver(ctx, device) as (_, driver):
        latched = driver.read_and_clear_flags()
    raised = sorted(name for name, value in latched.items() if value)
    if output in DOCUMENTS:
        emit({"device": device, "cleared": True, "flags": latched, "set": raised}, output)
        return
    click.echo(wrap(f"{device}: latched flags read and cleared (they show what happened "
                    "since the last read)"))
    click.echo(table(["flag", "latched"], [[name, value] for name, value in latched.items()]))


@amp.command()
@click.argument("device", type=AMP)
@output_option
@pass_context
def thresholds(ctx: Context, device: str, output: str) -> None:
    """Alarm and warning thresholds (page 02h) of the monitors the module advertises, and
    where the monitors stand against them."""
    with _driver(ctx, device) as (_, driver):
        limits = driver.module.thresholds()
        module = driver.module.status()
        lane = driver.module.lane_monitors()
    values = {"temperature": module.temperature_celsius, "vcc": module.vcc_volts,
              "tx_bias": lane.tx_bias_milliamperes, "tx_power": lane.tx_power_milliwatts,
              "rx_power": lane.rx_power_milliwatts}
    rows = [{"monitor": group, "unit": MONITOR_UNITS.get(group), "value": values.get(group),
             "high_alarm": t.high_alarm,
             "low_alarm": t.low_alarm, "high_warning": t.high_warning,
             "low_warning": t.low_warning, "state": t.evaluate(values.get(group)) or
             ("ok" if values.get(group) is not None else None)}
            for group, t in limits.items()
            if any(v for v in (t.high_alarm, t.low_alarm, t.high_warning, t.low_warning))]
    if output in DOCUMENTS:
        emit({"device": device, "thresholds": rows}, output)
        return
    if not limits:
        say(f"{device}: the module advertises no monitor (page 01h bytes 159-160), so it "
            "has no threshold")
        return
    click.echo(table(["monitor", "unit", "value", "high alarm", "low alarm", "high warn",
                      "low warn", "state"],
                     [[r["monitor"], r["unit"], r["value"], r["high_alarm"], r["low_alarm"],
                       r["high_warning"], r["low_warning"], r["state"]] for r in rows]))


MONITOR_UNITS = {"temperature": "°C", "vcc": "V", "tx_bias": "mA", "tx_power": "mW",
                 "rx_power": "mW"}
"""The unit of each page 02h threshold group, as the thresholds are decoded."""


@amp.command("power-mode")
@click.argument("device", type=AMP)
@click.argument("mode", type=click.Choice(["low", "high"]))
@click.option("--dry-run", is_flag=True, help="Show the links it darkens; write nothing.")
@click.option("--force", is_flag=True,
              help="Go to low power although it darkens an in-service link (journaled).")
@pass_context
def power_mode(ctx: Context, device: str, mode: str, dry_run: bool, force: bool) -> None:
    """Put the module in low power (pump off) or back to high power (ModuleReady)."""
    impacts = (amp_impacts(ctx, device, "down", "low power: the pump is off, no output")
               if mode == "low" else
               amp_impacts(ctx, device, "restored", "high power: its output comes back"))
    click.echo(describe_impacts(impacts))
    if dry_run:
        say("dry run: nothing was written")
        return
    overrides = impact.enforce(impacts, journal=ctx.journal, device=device,
                               action="amp.power-mode", force=force)
    wanted_state = "ModuleLowPwr" if mode == "low" else "ModuleReady"

    def found(driver: AmpDriver) -> dict[str, Any]:
        now = driver.module.state()
        return {"state": "applied" if now == wanted_state else "not applied",
                "module_state": now}

    with _driver(ctx, device) as (_, driver), locked_change(
        ctx.journal, device=device, action="amp.power-mode", power_mode=mode,
        impact=[i.as_dict() for i in impacts], read_back=lambda: found(driver)
    ) as change:
        impact.note_overrides(change, overrides)
        durations = driver.module.durations()
        state = driver.module.set_low_power(mode == "low")
        change.outcome["module_state"] = state
    advertised = durations.power_down_seconds if mode == "low" else durations.power_up_seconds
    say(f"{device}: {state} (the module advertises up to {advertised:g} s for this)")


@amp.command()
@click.argument("device", type=AMP)
@click.option("--dry-run", is_flag=True, help="Show the links it darkens; write nothing.")
@click.option("--force", is_flag=True,
              help="Reset although it darkens an in-service link meanwhile (journaled).")
@pass_context
def reset(ctx: Context, device: str, dry_run: bool, force: bool) -> None:
    """CMIS software reset of the module (lower page byte 26 bit 3), waiting as long as
    the module advertises for it to come back.

    The way out of ModuleFault once its cause is gone (a module leaves it only by a
    reset). The output is dark while the module restarts, and its settings are the
    module's defaults afterwards: an in-service link on its span is refused unless
    drained or --force, as every change that darkens one is.
    """
    impacts = amp_impacts(ctx, device, "down",
                          "software reset: no output until the module is back, then "
                          "its default settings")
    click.echo(describe_impacts(impacts))
    if dry_run:
        violations = safety.links_taken_down(impacts)  # as the reset itself would judge
        if violations and not force:
            raise SafetyInterlock("the reset would be refused: "
                                  f"{safety.refusal(violations)}", device=device)
        say("dry run: nothing was written")
        return
    overrides = impact.enforce(impacts, journal=ctx.journal, device=device,
                               action="amp.reset", force=force)
    steady = ("ModuleReady", "ModuleLowPwr")

    def found(driver: AmpDriver) -> dict[str, Any]:
        now = driver.module.state()
        return {"state": "applied" if now in steady else "not applied", "module_state": now}

    with _driver(ctx, device) as (_, driver), locked_change(
        ctx.journal, device=device, action="amp.reset",
        impact=[i.as_dict() for i in impacts], read_back=lambda: found(driver)
    ) as change:
        impact.note_overrides(change, overrides)
        before = driver.module.state()
        state = driver.reset()
        change.outcome.update(module_state_before=before, module_state=state)
    if state not in steady:
        raise VerificationFailed(f"still {state} after a software reset (its fault is "
                                 "still there: see msoctl amp status)", device=device)
    say(f"{device}: {state} after a software reset (was {before}); its settings are the "
        "module's defaults")


def parse_page(text: str) -> int:
    word = text.strip().lower()
    if word == "lower":
        return LOWER
    try:
        page = int(word[:-1], 16) if word.endswith("h") else int(word, 0)
    except ValueError:
        raise ValidationError(f"page {text!r}: use lower, or a number like 0x11, 11h or 17")\
            from None
    if not 0 <= page <= 0xFF:
        raise ValidationError(f"page {text!r} is not 00h..FFh")
    return page


def hex_dump(data: list[int | None], base: int) -> str:
    """The layout of ``ethtool -m DEV hex on``; bytes not read show as ``--``."""
    lines = ["Offset\t\tValues", "------\t\t------"]
    for row in range(0, len(data), 16):
        values = " ".join("--" if b is None else f"{b:02x}" for b in data[row:row + 16])
        lines.append(f"0x{base + row:04x}:\t\t{values}")
    return "\n".join(lines)


@amp.command()
@click.argument("device", type=AMP)
@click.option("--page", "page_text", required=True, metavar="P",
              help="lower, or an upper page: 0x00, 01h, 0xB0, ...")
@click.option("--include-latched", is_flag=True,
              help="Also read latched flag bytes, which clears them.")
@output_option
@pass_context
def dump(ctx: Context, device: str, page_text: str, include_latched: bool, output: str) -> None:
    """Raw bytes of one page, as `ethtool -m ... hex on` prints them.

    Latched clear-on-read bytes are skipped (shown as --, null in JSON) unless
    --include-latched says to read, and so clear, them.
    """
    page = parse_page(page_text)
    base = 0 if page == LOWER else 128
    with _driver(ctx, device) as (_, driver):
        latched = {byte for (p, byte) in driver.module.latched if p == page}
        if include_latched or not latched:
            data: list[int | None] = list(driver.dump(page))
        else:
            data = [None] * 128
            wanted = [b for b in range(base, base + 128) if b not in latched]
            for start, length in _runs(wanted):
                chunk = driver.module.read_raw(page, start, length)
                data[start - base:start - base + length] = list(chunk)
    if output in DOCUMENTS:
        emit({"device": device, "page": "lower" if page == LOWER else page,
              "offset": base, "bytes": data,
              "latched_skipped": sorted(b for b in latched if not include_latched)}, output)
        return
    title = "lower memory" if page == LOWER else f"page {page:02X}h"
    say(f"{device}: {title}")
    click.echo(hex_dump(data, base))
    if latched and not include_latched:
        say(f"latched flag bytes {', '.join(map(str, sorted(latched)))} not read "
            "(reading clears them; --include-latched reads them)")


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and runs[-1][0] + runs[-1][1] == offset:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((offset, 1))
    return runs
