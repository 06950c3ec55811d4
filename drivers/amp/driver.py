"""The pluggable EDFA driver: the amplifier's meaning on top of the CMIS module API.

A status poll is three bus transactions (module state; temperature and Vcc;
the vendor page's monitors and controls, which sit side by side from byte 128
so that one read also verifies the page select). Every write is read back.
Gain changes larger than ``max_step_db`` are ramped so downstream receivers
see no transient.

The vendor page B0h is the project's own, and CMIS does not advertise custom
pages: it is read only on a module that identifies as one that carries it
(:data:`drivers.amp.vendor_page.CARRIERS`). On any other CMIS module the driver
reads the standard part alone (identity, state, the monitors page 01h
advertises, lanes), its amplifier values are ``None``, and every change that
needs the page is refused (ValidationError) before anything is written.
"""

from __future__ import annotations

import math
from typing import Any

from drivers.amp import vendor_page as vp
from drivers.amp.types import (
    NO_CAPABILITIES,
    NO_MONITORS,
    NO_SETTINGS,
    AmpCapabilities,
    AmpMonitors,
    AmpPath,
    AmpSettings,
    AmpStatus,
)
from drivers.cmis.fields import Field
from drivers.cmis.module import CmisModule, LaneStatus, ModuleIdentity
from drivers.errors import Unsupported, ValidationError, VerificationFailed

DEFAULT_SLEW_DB_PER_SECOND = 10.0
DEFAULT_MAX_STEP_DB = 0.5
OPTICAL_PATH_LANE = 1
"""The CMIS lane that stands for the amplifier's one optical path (pages 10h and 11h)."""


def _bits(raw: Any, names: dict[int, str]) -> tuple[str, ...]:
    if not isinstance(raw, int):
        return ()
    return tuple(name for bit, name in names.items() if raw >> bit & 1)


def carries_vendor_page(identity: ModuleIdentity) -> bool:
    """Whether a module of this identity carries the vendor page (vendor_page.CARRIERS)."""
    return vp.carried_by(identity.vendor, identity.part_number)


AMPLIFIER_PAGE = "amplifier_page"
"""The name of the vendor page in :meth:`AmpDriver.supported`."""


class AmpDriver:
    def __init__(self, module: CmisModule):
        self.module = module
        self.name = module.name
        self._capabilities: AmpCapabilities | None = None
        module.extra_pages_if = carries_vendor_page

    def has_amplifier_page(self) -> bool:
        """Whether the module carries the vendor page B0h: paged memory, and page 00h names
        a module that has it. Reads page 00h once (the identity is kept)."""
        return vp.PAGE in self.module.extra_pages and self.module.has_extra_pages()

    def require_amplifier_page(self, what: str) -> None:
        """Refuse (:class:`Unsupported`, before anything is written) ``what`` on a module
        that does not carry the vendor page."""
        if self.has_amplifier_page():
            return
        identity = self.module.identity()
        raise Unsupported(
            f"{what} needs the amplifier page (B0h), which this module does not carry: it "
            f"identifies as {identity.vendor or '?'} {identity.part_number or '?'}, and CMIS "
            "does not advertise custom pages", device=self.name)

    def supported(self) -> tuple[str, ...]:
        """The features found: ``tx_disable`` and the monitors page 01h advertises
        (``temperature_monitor``, ``vcc_monitor``, ``rx_power_monitor``, ...), and
        ``amplifier_page`` where the module carries the vendor page."""
        features = self.module.features()
        found = ["tx_disable"] if features.tx_disable else []
        found += [f"{name}_monitor" for name in (*features.module_monitors,
                                                  *features.lane_monitors)]
        if self.has_amplifier_page():
            found.append(AMPLIFIER_PAGE)
        return tuple(found)

    def close(self) -> None:
        self.module.close()

    def __enter__(self) -> AmpDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading -------------------------------------------------------------------

    def capabilities(self) -> AmpCapabilities:
        """The vendor page's ranges, read once; all ``None`` without the page."""
        if self._capabilities is None and not self.has_amplifier_page():
            self._capabilities = NO_CAPABILITIES
        if self._capabilities is None:
            v = self.module.read_fields(vp.CAPABILITIES)
            pumps = v["pump_count"]
            self._capabilities = AmpCapabilities(
                gain_min_db=v["gain_min"], gain_max_db=v["gain_max"],
                output_power_max_dbm=v["output_power_max"],
                tilt_min_db=v["tilt_min"], tilt_max_db=v["tilt_max"],
                pump_count=pumps if isinstance(pumps, int) and 1 <= pumps <= 8 else None,
                pump_current_max_ma=v["pump_current_max"],
            )
        return self._capabilities

    SETTINGS_FIELDS = (vp.OUTPUT_ENABLE, vp.MODE, vp.TARGET_GAIN, vp.TARGET_OUTPUT_POWER,
                       vp.TARGET_TILT, vp.ALS_MODE, vp.ALS_LOS_SOAK, vp.ALS_RESTART_INTERVAL,
                       vp.ALS_RESTART_PULSE, vp.LOS_THRESHOLD)

    def status(self) -> AmpStatus:
        """One poll: module state, the temperature and Vcc the module implements, amplifier
        monitors and settings (``None`` without the vendor page, which is then not read)."""
        if not self.has_amplifier_page():
            values = self.module.read_fields(self.module.status_fields())
            return AmpStatus(module=self.module.status_from(values),
                             identity=self.module.identity(), settings=NO_SETTINGS,
                             monitors=NO_MONITORS, amplifier_page=False)
        values = self.module.read_fields(
            [*self.module.status_fields(), *vp.MONITORS, *self.SETTINGS_FIELDS])
        return AmpStatus(
            module=self.module.status_from(values),
            identity=self.module.identity(),
            settings=self._settings(values),
            monitors=self._monitors(values),
        )

    def settings(self) -> AmpSettings:
        """The vendor page's controls; all ``None`` (nothing read) without the page."""
        if not self.has_amplifier_page():
            return NO_SETTINGS
        return self._settings(self.module.read_fields(self.SETTINGS_FIELDS))

    def _settings(self, v: dict[str, Any]) -> AmpSettings:
        enabled = v["output_enable"]
        return AmpSettings(
            mode=vp.MODES.get(v["mode"]) if isinstance(v["mode"], int) else None,
            output_enabled=None if enabled is None else bool(enabled),
            target_gain_db=v["target_gain"],
            target_output_power_dbm=v["target_output_power"],
            target_tilt_db=v["target_tilt"],
            als_mode=vp.ALS_MODES.get(v["als_mode"]) if isinstance(v["als_mode"], int) else None,
            als_los_soak_seconds=v["als_los_soak"],
            als_restart_interval_seconds=v["als_restart_interval"],
            als_restart_pulse_seconds=v["als_restart_pulse"],
            los_threshold_dbm=v["los_threshold"],
        )

    def _monitors(self, v: dict[str, Any]) -> AmpMonitors:
        pumps = self.capabilities().pump_count or 2
        currents = (v["pump1_current"], v["pump2_current"])[:pumps]
        state = v["als_state"]
        return AmpMonitors(
            input_power_dbm=v["input_power"],
            output_power_dbm=v["output_power"],
            gain_db=v["actual_gain"],
            tilt_db=v["actual_tilt"],
            pump_currents_ma=tuple(currents),
            pump_temperature_celsius=v["pump_temperature"],
            back_reflection_db=v["back_reflection"],
            als_state=vp.ALS_STATES.get(state) if isinstance(state, int) else None,
            conditions=_bits(v["amp_status"], vp.FLAG_BITS),
        )

    def optical_path(self) -> AmpPath:
        """Tx disable and data path state of the amplifier's lane (pages 10h and 11h: one
        read each, apart from the status poll, which stays on the vendor page)."""
        return self._path(self.module.lanes())

    @staticmethod
    def _path(lanes: LaneStatus) -> AmpPath:
        index = OPTICAL_PATH_LANE - 1
        return AmpPath(lane=OPTICAL_PATH_LANE, tx_disabled=lanes.tx_disabled[index],
                       data_path_state=lanes.data_path_states[index])

    def set_tx_disabled(self, disabled: bool) -> AmpPath:
        """Tx output disable of the amplifier's lane (page 10h byte 130), read back.
        Disabling darkens the output; the data path state stays as it is (CMIS 5.2).
        Raises ValidationError when the module does not advertise Tx disable,
        VerificationFailed when the bit does not read back."""
        return self._path(self.module.set_tx_disabled([OPTICAL_PATH_LANE], disabled))

    def read_and_clear_flags(self) -> dict[str, bool]:
        """Every latched flag of the module and the amplifier (the latter only where the
        module carries the vendor page); reading clears them."""
        if not self.has_amplifier_page():
            return self.module.read_and_clear_flags()
        return self.module.read_and_clear_flags([(vp.AMP_FLAGS, vp.FLAG_BITS)])

    # ---- writing -----------------------------------------------------------------------

    def _write(self, changes: list[tuple[Field, float | int]]) -> None:
        """Write numeric fields and read them back: each must read back exactly what was
        written (a raw step off is a different setting: ALS mode 1 is not 2).

        Raises ValidationError, before writing anything, for a value the field cannot hold.
        """
        try:
            encoded = [(item, value, item.encode(value)) for item, value in changes]
        except (ValueError, OverflowError) as error:
            raise ValidationError(str(error), device=self.name) from error
        for item, _value, data in encoded:
            self.module.write_raw(item.page, item.offset, data)
        back = self.module.read_fields([f for f, _ in changes])
        for item, value, data in encoded:
            got = back[item.name]
            if got is None or got != item.decode(data, item.offset):
                raise VerificationFailed(f"{item.name} reads back {got}, wrote {value}",
                                         device=self.name)

    def _control_byte(self) -> int:
        self.require_amplifier_page("the amplifier control byte")
        raw = self.module.read_fields([vp.AMP_CONTROL])["amp_control"]
        if not isinstance(raw, int):
            raise VerificationFailed("amplifier control byte unreadable", device=self.name)
        return raw

    def check_targets(self, *, gain_db: float | None = None,
                      output_power_dbm: float | None = None,
                      tilt_db: float | None = None) -> None:
        """Refuse (ValidationError) targets outside what the module advertises or what
        their register can hold, and any target on a module without the vendor page."""
        for what, value in (("setting the gain", gain_db),
                            ("setting the output power", output_power_dbm),
                            ("setting the tilt", tilt_db)):
            if value is not None:
                self.require_amplifier_page(what)
        caps = self.capabilities()
        for what, value, low, high, unit, register in (
            ("gain", gain_db, caps.gain_min_db, caps.gain_max_db, "dB", vp.TARGET_GAIN),
            ("output power", output_power_dbm, None, caps.output_power_max_dbm, "dBm",
             vp.TARGET_OUTPUT_POWER),
            ("tilt", tilt_db, caps.tilt_min_db, caps.tilt_max_db, "dB", vp.TARGET_TILT),
        ):
            if value is None:
                continue
            if not math.isfinite(value):
                raise ValidationError(f"{what} {value} is not a number", device=self.name)
            if (low is not None and value < low) or (high is not None and value > high):
                span = f"{low if low is not None else '-inf'}..{high} {unit}"
                raise ValidationError(f"{what} {value:g} {unit} is outside the module's "
                                      f"range {span}", device=self.name)
            try:  # no advertised bound (output power has no minimum): the register's own
                register.encode(value)
            except (ValueError, OverflowError):
                raise ValidationError(f"{what} {value:g} {unit} cannot be written: the "
                                      f"{register.name} register holds {register.kind} in "
                                      f"steps of {register.scale:g} {unit}",
                                      device=self.name) from None

    def set_mode(self, mode: str) -> None:
        code = next((c for c, name in vp.MODES.items() if name == mode), None)
        if code is None:
            raise ValidationError(f"mode must be one of {', '.join(vp.MODES.values())}")
        self.require_amplifier_page("setting the mode")
        control = self._control_byte()
        wanted = control & ~vp.MODE.mask | code << vp.MODE.shift
        self.module.write_raw(vp.PAGE, vp.AMP_CONTROL.offset, bytes((wanted & 0xFF,)))
        if self._control_byte() != wanted:
            raise VerificationFailed(f"mode did not change to {mode}", device=self.name)

    def set_output_enabled(self, enabled: bool) -> None:
        self.require_amplifier_page("the amplifier's output enable")
        control = self._control_byte()
        wanted = control | vp.OUTPUT_ENABLE.mask if enabled else control & ~vp.OUTPUT_ENABLE.mask
        self.module.write_raw(vp.PAGE, vp.AMP_CONTROL.offset, bytes((wanted & 0xFF,)))
        if self._control_byte() != wanted:
            raise VerificationFailed("output enable did not change", device=self.name)

    def ramp_steps(self, start_db: float, target_db: float, max_step_db: float) -> list[float]:
        """The gain set points from ``start_db`` to ``target_db``, none further apart than
        ``max_step_db``. Computed on the register's 0.01 dB grid, so that rounding a set
        point never makes a step larger than ``max_step_db`` (at least 0.01 dB)."""
        if not (math.isfinite(max_step_db) and max_step_db >= 0.01):
            raise ValidationError("the gain step must be at least 0.01 dB")
        start, target = round(start_db * 100), round(target_db * 100)
        step = math.floor(max_step_db * 100 + 1e-9)
        count = max(1, math.ceil(abs(target - start) / step))
        # floor division: consecutive points differ by floor or ceil of (target-start)/count
        return [(start + (target - start) * (i + 1) // count) / 100 for i in range(count)]

    def set_gain(self, gain_db: float, *, slew_db_per_second: float = DEFAULT_SLEW_DB_PER_SECOND,
                 max_step_db: float = DEFAULT_MAX_STEP_DB) -> list[float]:
        """Move the target gain to ``gain_db`` in steps; return the set points written."""
        self.check_targets(gain_db=gain_db)
        if not slew_db_per_second > 0:  # NaN too
            raise ValidationError("the slew must be positive")
        start = self.settings().target_gain_db
        steps = [gain_db] if start is None else self.ramp_steps(start, gain_db, max_step_db)
        for index, point in enumerate(steps):
            if index:
                self.module.sleep(abs(point - steps[index - 1]) / slew_db_per_second)
            self._write([(vp.TARGET_GAIN, point)])
        return steps

    def set_output_power(self, output_power_dbm: float) -> None:
        self.check_targets(output_power_dbm=output_power_dbm)
        self._write([(vp.TARGET_OUTPUT_POWER, output_power_dbm)])

    def set_tilt(self, tilt_db: float) -> None:
        self.check_targets(tilt_db=tilt_db)
        self._write([(vp.TARGET_TILT, tilt_db)])

    def set_als_mode(self, mode: str) -> None:
        """Write the ALS mode. Refusing "disabled" without an override is msoctl's rule."""
        code = next((c for c, name in vp.ALS_MODES.items() if name == mode), None)
        if code is None:
            raise ValidationError(f"ALS mode must be one of {', '.join(vp.ALS_MODES.values())}")
        self.require_amplifier_page("setting the ALS mode")
        self._write([(vp.ALS_MODE, code)])

    def set_als_timings(self, *, los_soak_seconds: float | None = None,
                        restart_interval_seconds: float | None = None,
                        restart_pulse_seconds: float | None = None) -> None:
        """LOS soak before shutdown, time between automatic restart pulses, pulse length."""
        changes = self.check_als_timings(los_soak_seconds=los_soak_seconds,
                                         restart_interval_seconds=restart_interval_seconds,
                                         restart_pulse_seconds=restart_pulse_seconds)
        if changes:
            self._write(changes)

    def check_als_timings(self, *, los_soak_seconds: float | None = None,
                          restart_interval_seconds: float | None = None,
                          restart_pulse_seconds: float | None = None,
                          ) -> list[tuple[Field, float | int]]:
        """The writes the given timings make; ValidationError for one out of range, or for
        any on a module without the vendor page."""
        if any(v is not None for v in (los_soak_seconds, restart_interval_seconds,
                                       restart_pulse_seconds)):
            self.require_amplifier_page("setting the ALS timings")
        changes: list[tuple[Field, float | int]] = []
        for item, value, low, high in (
            (vp.ALS_LOS_SOAK, los_soak_seconds, 0.001, 60.0),
            (vp.ALS_RESTART_INTERVAL, restart_interval_seconds, 1, 65535),
            (vp.ALS_RESTART_PULSE, restart_pulse_seconds, 0.001, 60.0),
        ):
            if value is None:
                continue
            if not low <= value <= high:
                raise ValidationError(f"{item.name} must be {low:g}..{high:g} s, got {value:g}",
                                      device=self.name)
            changes.append((item, value))
        return changes

    def restart(self) -> None:
        """Ask for one ALS restart pulse (the manual restart)."""
        self.require_amplifier_page("an ALS restart")
        self.module.write_raw(vp.PAGE, vp.ALS_COMMAND.offset, bytes((vp.ALS_RESTART_NOW,)))

    def reset(self) -> str:
        """CMIS software reset; waits (as long as the module advertises) for a steady
        state and returns it (ModuleReady, ModuleLowPwr, or ModuleFault when its cause
        is still there). What was read of the module before is read again."""
        self._capabilities = None
        return self.module.reset()

    def dump(self, page: int) -> bytes:
        return self.module.dump(page)
