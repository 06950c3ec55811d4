"""Amplifier changes as operations: settings (gain ramped), Tx disable, the ALS restart.

Used by ``msoctl amp set|restart`` and by ``msoctl fabric apply``, so both obey the
same rules: targets outside the module's advertised ranges are refused (and the
refusal journaled) before anything is written; a gain step is ramped at the
device's slew rate in steps no larger than its ``max_gain_step_db``, each read
back; the change is journaled under the device's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from drivers.amp.driver import AmpDriver
from drivers.amp.types import AmpPath, AmpSettings
from drivers.errors import SafetyInterlock, ValidationError
from msoctl import safety
from msoctl.inventory import Device
from msoctl.journal import Journal, locked_change

SET = "amp.set"
RESTART = "amp.restart"
TX = "amp.tx"


@dataclass
class SetResult:
    before: AmpSettings
    after: AmpSettings
    gain_steps_db: list[float] = field(default_factory=list)
    slew_db_per_second: float = 0.0


def set_amplifier(journal: Journal, device: Device, driver: AmpDriver, *,
                  mode: str | None = None, gain_db: float | None = None,
                  output_power_dbm: float | None = None, tilt_db: float | None = None,
                  slew_db_per_second: float | None = None, **context: Any) -> SetResult:
    """Write the given settings (output power, tilt, gain ramped, then mode), journaled.

    ``context`` goes into the journal's intent record (a fabric operation's id, say).
    Raises :class:`ValidationError` (journaled as a refusal) for a target outside the
    module's ranges, before anything is written.
    """
    if mode is None and gain_db is None and output_power_dbm is None and tilt_db is None:
        raise ValidationError("nothing to set: give --mode, --gain, --output-power or --tilt")
    try:
        driver.require_amplifier_page(setting_what(mode=mode, gain_db=gain_db,
                                                   output_power_dbm=output_power_dbm,
                                                   tilt_db=tilt_db))
        driver.check_targets(gain_db=gain_db, output_power_dbm=output_power_dbm,
                             tilt_db=tilt_db)
    except ValidationError as error:
        journal.refuse(device=device.name, action=SET, reason=error.message, exit_code=2)
        raise
    before = driver.settings()
    slew = slew_db_per_second or device.gain_slew_db_per_second
    intent = {k: v for k, v in (("mode", mode), ("gain_db", gain_db),
                                ("output_power_dbm", output_power_dbm),
                                ("tilt_db", tilt_db)) if v is not None}
    result = SetResult(before, before, slew_db_per_second=slew)
    with locked_change(journal, device=device.name, action=SET,
                       read_back=lambda: settings_found(driver, before, mode=mode,
                                                        gain_db=gain_db,
                                                        output_power_dbm=output_power_dbm,
                                                        tilt_db=tilt_db),
                       before={"mode": before.mode, "gain_db": before.target_gain_db,
                               "output_power_dbm": before.target_output_power_dbm,
                               "tilt_db": before.target_tilt_db},
                       **intent, **context) as change:
        if output_power_dbm is not None:
            driver.set_output_power(output_power_dbm)
        if tilt_db is not None:
            driver.set_tilt(tilt_db)
        if gain_db is not None:
            result.gain_steps_db = driver.set_gain(gain_db, slew_db_per_second=slew,
                                                   max_step_db=device.max_gain_step_db)
            change.outcome["gain_steps_db"] = result.gain_steps_db
        if mode is not None:
            driver.set_mode(mode)
    result.after = driver.settings()
    return result


def setting_what(*, mode: str | None, gain_db: float | None, output_power_dbm: float | None,
                 tilt_db: float | None) -> str:
    """What a set changes, for a refusal: the first of gain, output power, tilt, mode."""
    for what, value in (("setting the gain", gain_db),
                        ("setting the output power", output_power_dbm),
                        ("setting the tilt", tilt_db), ("setting the mode", mode)):
        if value is not None:
            return what
    return "setting the amplifier"


SETTLE_EPSILON = 0.005
"""Two settings closer than this (dB, dBm) are the same: the registers' own resolution."""


def settings_found(driver: AmpDriver, before: AmpSettings, *, mode: str | None,
                   gain_db: float | None, output_power_dbm: float | None,
                   tilt_db: float | None) -> dict[str, Any]:
    """What an interrupted or failed :func:`set_amplifier` left in the module, read back:
    every asked-for setting in place (``applied``), none moved (``not applied``), or some."""
    now = driver.settings()
    pairs = [(mode, now.mode, before.mode),
             (gain_db, now.target_gain_db, before.target_gain_db),
             (output_power_dbm, now.target_output_power_dbm, before.target_output_power_dbm),
             (tilt_db, now.target_tilt_db, before.target_tilt_db)]

    def same(a: object, b: object) -> bool:
        if isinstance(a, float | int) and isinstance(b, float | int):
            return abs(float(a) - float(b)) < SETTLE_EPSILON
        return a == b

    asked = [(want, got, was) for want, got, was in pairs if want is not None]
    if all(same(want, got) for want, got, _ in asked):
        state = "applied"
    elif all(same(got, was) for _, got, was in asked):
        state = "not applied"
    else:
        state = "partly applied"
    return {"state": state, "mode": now.mode, "gain_db": now.target_gain_db,
            "output_power_dbm": now.target_output_power_dbm, "tilt_db": now.target_tilt_db}


def restart_amplifier(journal: Journal, device: str, driver: AmpDriver,
                      **context: Any) -> str | None:
    """Send one ALS restart pulse, journaled; the ALS state read just after. Refused
    (ValidationError, journaled) before anything is written on a module without the
    vendor page."""
    try:
        driver.require_amplifier_page("an ALS restart")
    except ValidationError as error:
        journal.refuse(device=device, action=RESTART, reason=error.message, exit_code=2)
        raise
    with locked_change(journal, device=device, action=RESTART, **context) as change:
        driver.restart()
        state = driver.status().monitors.als_state
        change.outcome["als_state"] = state
    return state


@dataclass
class TxResult:
    before: AmpPath
    after: AmpPath
    output_power_dbm: float | None  # the output monitor read just after
    overrides: list[safety.Violation] = field(default_factory=list)


def set_tx(journal: Journal, device: str, driver: AmpDriver, *, disabled: bool,
           override_laser_safety: bool = False,
           overrides: Sequence[safety.Violation] = (), **context: Any) -> TxResult:
    """Disable (``disabled``) or enable the amplifier's Tx output, journaled: the intent
    before the write, the state read back after it.

    Off is always allowed. On is refused (SafetyInterlock, journaled with exit code 3)
    while ALS as the module holds it would not shut the output on a cut fiber, unless
    ``override_laser_safety``, which is journaled with the change. ``overrides`` are other
    rules the caller was told to override (a link taken down), noted the same way. Raises
    ValidationError (journaled as a refusal, before the intent) when the module does not
    advertise Tx disable (page 01h byte 155 bit 1).
    """
    if not driver.module.features().tx_disable:
        error = ValidationError("the module does not advertise Tx disable (page 01h byte 155 "
                                "bit 1)", device=device)
        journal.refuse(device=device, action=TX, reason=error.message, exit_code=2)
        raise error
    before = driver.optical_path()
    violations: list[safety.Violation] = []
    if not disabled:
        als = driver.settings()
        violations = safety.amp_output_on(
            als_mode=als.als_mode, los_soak_seconds=als.als_los_soak_seconds,
            restart_interval_seconds=als.als_restart_interval_seconds,
            restart_pulse_seconds=als.als_restart_pulse_seconds)
        if violations and not override_laser_safety:
            journal.refuse(device=device, action=TX, reason=violations[0].message,
                           exit_code=3, rule=violations[0].rule, tx="on", **context)
            raise SafetyInterlock(f"{violations[0].message}; use --override-laser-safety to "
                                  "do it anyway (journaled)", device=device)
    def found() -> dict[str, Any]:
        now = driver.optical_path()
        return {"state": "applied" if now.tx_disabled == disabled else "not applied",
                "tx_disabled": now.tx_disabled, "data_path_state": now.data_path_state}

    with locked_change(journal, device=device, action=TX, tx="off" if disabled else "on",
                       before={"tx_disabled": before.tx_disabled,
                               "data_path_state": before.data_path_state},
                       read_back=found, **context) as change:
        for violation in [*overrides, *violations]:
            change.note("override", rule=violation.rule, reason=violation.message)
        after = driver.set_tx_disabled(disabled)
        output = driver.status().monitors.output_power_dbm
        change.outcome.update(tx_disabled=after.tx_disabled,
                              data_path_state=after.data_path_state,
                              output_power_dbm=output)
    return TxResult(before, after, output, violations)
