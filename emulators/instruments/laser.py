"""Model of a tunable laser source (TLS).

- Tuning range 1260-1640 nm, output power -10..+13 dBm, set in 0.001 dB.
- The output leaves at the set power plus a fixed error of up to +-0.05 dB
  (per serial number); a reference taken with the same laser at the same
  setting cancels it.
- After a wavelength change the laser retunes for ``TUNE_SECONDS``, its
  output blanked; after the output is turned on it is lit once
  ``TURN_ON_SECONDS`` have passed. ``*OPC?`` waits for both.
- The laser remembers what it emitted over the last minute, so the optical
  model can answer for a moment in the past (a power meter's logging).
- The power unit (dBm or W) of the SCPI interface is a setting of the laser,
  the same for every client; ``*RST`` sets dBm again.
- Status: OPERation SETTling while it retunes or turns on.
- A plainer unit (``range_queries=False``) answers its range queries' headers
  without a parameter only: ``:SOUR1:WAV? MIN`` is refused -108 (parameter not
  allowed), no reply. ``error_extras=False``: SCPI-99's optional error queries are
  undefined headers. Both can be switched while it runs.
- What its clients sent is in ``requests``
  (:class:`~emulators.scpi.requests.RequestLog`).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable

from drivers.instruments.commands import POWER_UNITS
from drivers.scpi.common import OPERATION_BITS
from emulators.optics.model import NO_LIGHT_DBM, Element, InputPower, OpticalModel
from emulators.scpi.device import ScpiDevice
from emulators.scpi.parser import ScpiError
from emulators.scpi.status import ConditionSource

WAVELENGTH_MIN_NM = 1260.0
WAVELENGTH_MAX_NM = 1640.0
POWER_MIN_DBM = -10.0
POWER_MAX_DBM = 13.0
POWER_ACCURACY_DB = 0.05
TUNE_SECONDS = 0.1
TURN_ON_SECONDS = 0.05
HISTORY_SECONDS = 60.0


class TunableLaser(ScpiDevice):
    """One laser: its settings, what it emits over time, and its optical element."""

    SERIAL_PREFIX = "TL"

    def __init__(self, name: str, optics: OpticalModel, *, serial: str | None = None,
                 firmware: str = "1.2.0", shared_status: bool = False,
                 range_queries: bool = True, error_extras: bool = True):
        super().__init__(name, optics, serial=serial, firmware=firmware,
                         shared_status=shared_status)
        self.range_queries = range_queries
        """Whether it answers ``MIN``/``MAX`` of its wavelength and power queries."""
        self.error_extras = error_extras
        self.offset_db = random.Random(f"{self.serial}/power").uniform(
            -POWER_ACCURACY_DB, POWER_ACCURACY_DB)
        self.wavelength_nm = 1550.0
        self.power_dbm = 0.0
        self.output_on = False
        self.power_unit = POWER_UNITS["DBM"]
        self._ready_at = self.clock.now()
        self._settling_from = self._ready_at
        self._times: list[float] = [float("-inf")]  # when the emitted power changed
        self._levels: list[float] = [NO_LIGHT_DBM]  # and to what
        optics.add(_LaserOutput(self))

    # ---- settings ----------------------------------------------------------------------

    def set_wavelength_nm(self, wavelength_nm: float) -> None:
        if not WAVELENGTH_MIN_NM <= wavelength_nm <= WAVELENGTH_MAX_NM:
            raise ScpiError(-222, f"wavelength {wavelength_nm:g} nm not in "
                                  f"{WAVELENGTH_MIN_NM:g}..{WAVELENGTH_MAX_NM:g} nm")
        with self.lock:
            if wavelength_nm != self.wavelength_nm:
                self.wavelength_nm = wavelength_nm
                self._settle(TUNE_SECONDS)
                self._emit()

    def set_power_dbm(self, power_dbm: float) -> None:
        if not POWER_MIN_DBM <= power_dbm <= POWER_MAX_DBM:
            raise ScpiError(-222, f"power {power_dbm:g} dBm not in "
                                  f"{POWER_MIN_DBM:g}..{POWER_MAX_DBM:g} dBm")
        with self.lock:
            self.power_dbm = round(power_dbm, 3)
            self._emit()

    def set_output(self, on: bool) -> None:
        with self.lock:
            if on and not self.output_on:
                self._settle(TURN_ON_SECONDS)
            self.output_on = on
            self._emit()

    def reset(self) -> None:
        with self.lock:
            self.output_on = False
            self.wavelength_nm = 1550.0
            self.power_dbm = 0.0
            self.power_unit = POWER_UNITS["DBM"]
            self._emit()

    def _settle(self, seconds: float) -> None:
        now = self.clock.now()
        if now >= self._ready_at:
            self._settling_from = now
        self._ready_at = max(self._ready_at, now + seconds)

    def settled_at(self) -> float:
        """Device time at which the last change has settled."""
        with self.lock:
            return self._ready_at

    # ---- what the common commands and status registers report ---------------------------

    def model(self) -> str:
        return "TLS-1640"

    def pending_until(self) -> float:
        return self.settled_at()

    def operation_conditions(self) -> ConditionSource:
        return _Settling(self)

    def settling_at(self, when: float) -> bool:
        with self.lock:
            return self._settling_from <= when < self._ready_at

    def settling_edges(self, start: float, end: float) -> list[float]:
        with self.lock:
            return [t for t in (self._settling_from, self._ready_at) if start < t <= end]

    # ---- emission over time ----------------------------------------------------------

    def _emit(self) -> None:
        """Rewrite what the laser emits from now on, after a change of its settings."""
        now = self.clock.now()
        cut = bisect.bisect_right(self._times, now)
        del self._times[cut:], self._levels[cut:]
        level = self.power_dbm + self.offset_db if self.output_on else NO_LIGHT_DBM
        if self.output_on and self._ready_at > now:
            self._append(now, NO_LIGHT_DBM)
            self._append(self._ready_at, level)
        else:
            self._append(now, level)
        horizon = bisect.bisect_left(self._times, now - HISTORY_SECONDS)
        if horizon > 1:  # keep the level in force at the horizon
            del self._times[:horizon - 1], self._levels[:horizon - 1]

    def _append(self, at: float, level: float) -> None:
        if self._levels[-1] != level:
            self._times.append(at)
            self._levels.append(level)

    def emitted_dbm(self, at: float) -> float:
        """Power leaving the laser at device time ``at`` (the recent past or now)."""
        with self.lock:
            return self._levels[bisect.bisect_right(self._times, at) - 1]

    def change_times(self, start: float, end: float) -> list[float]:
        with self.lock:
            return [t for t in self._times if start < t <= end]


class _Settling:
    """The OPERation condition of the laser: SETTling while it retunes or turns on."""

    BIT = 1 << OPERATION_BITS["SETTling"]

    def __init__(self, laser: TunableLaser):
        self.laser = laser

    def condition_at(self, when: float) -> int:
        return self.BIT if self.laser.settling_at(when) else 0

    def condition_changes(self, start: float, end: float) -> list[float]:
        return self.laser.settling_edges(start, end)


class _LaserOutput(Element):
    """The laser as the optical model sees it: one output port, ``out``."""

    def __init__(self, laser: TunableLaser):
        super().__init__(laser.name)
        self.laser = laser

    def output_ports(self) -> Iterable[str]:
        return ("out",)

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        if port != "out":
            raise KeyError(port)
        return self.laser.emitted_dbm(now)

    def change_times(self, start: float, end: float) -> Iterable[float]:
        return self.laser.change_times(start, end)
