"""Model of a multiport optical power meter.

What is modelled, and why:

- Ports ``1..channels`` are photodiodes at the end of fibers: inputs of a
  :class:`~emulators.optics.model.Receiver` named after the meter, so what a
  port reads is what the optical model delivers to it.
- Accuracy: each port reads with a fixed calibration error of up to
  +-``ACCURACY_DB`` (0.02 dB), drawn from the serial number, so the same
  instrument is wrong the same way every time, as a real one is between
  calibrations.
- Noise: 0.01 dB (one sigma, Gaussian) on the signal, whatever the averaging
  time (at these powers it is the light that fluctuates, not the detector);
  plus a dark floor of a few pW (3 pW at 10 ms averaging, spread 1 dB) that
  grows as the square root of how much shorter the averaging is (30 pW at
  100 µs), so a dark port reads about -85 dBm (-75 dBm when logging fast),
  never nothing.
- A reading averages the power over its averaging time, which it waits (on
  the injected clock) before answering. Logging takes ``samples`` samples,
  each the average over one interval, starting at the command; the samples
  are computed when asked for, from the optical model's memory of the recent
  past (an OCS's reconfigurations, a laser's settings): between two moments
  at which something changed every power is constant, so only those moments
  are evaluated, whatever the sample count.
- The wavelength setting is kept and reported but the optical model carries
  power only, so a wrong setting costs no accuracy here (it would on a real
  meter: the responsivity differs by tenths of a dB across a band).
- Status: OPERation MEASuring while a port logs.
- A plainer unit: ``all_ports=False`` has no all-ports queries (``:READ:POW:ALL:CSV?``
  and ``:FETC:POW:ALL:CSV?`` are undefined headers, -113); ``logging=False`` has no
  logging (every ``:SENS<n>:CHAN1:FUNC...`` header undefined); ``error_extras=False``
  has only ``:SYST:ERR[:NEXT]?``. Each can be switched while it runs.
- What its clients sent is in ``requests``
  (:class:`~emulators.scpi.requests.RequestLog`).
"""

from __future__ import annotations

import itertools
import math
import random
import struct
from dataclasses import dataclass

from drivers.instruments.commands import (
    LOGGING_COMPLETE,
    LOGGING_IN_PROGRESS,
    MAX_LOGGING_SAMPLES,
    NO_FUNCTION,
)
from drivers.scpi.common import OPERATION_BITS
from emulators.clock import command_time
from emulators.optics.model import OpticalModel, Receiver, dbm_to_mw
from emulators.scpi.device import ScpiDevice
from emulators.scpi.parser import ScpiError
from emulators.scpi.status import ConditionSource

ACCURACY_DB = 0.02
NOISE_DB = 0.01
FLOOR_REFERENCE_SECONDS = 0.01
FLOOR_W = 3e-12
FLOOR_SPREAD_DB = 1.0
DEFAULT_AVERAGING_SECONDS = 0.01
DEFAULT_WAVELENGTH_M = 1550e-9
_NOISE_TABLE = 1 << 16


def floor_w(averaging_seconds: float) -> float:
    """The dark floor, watts, at the given averaging time."""
    return FLOOR_W * math.sqrt(FLOOR_REFERENCE_SECONDS / averaging_seconds)


@dataclass
class _Port:
    wavelength_m: float = DEFAULT_WAVELENGTH_M
    averaging_seconds: float = DEFAULT_AVERAGING_SECONDS
    unit: int = 0  # 0 dBm, 1 W
    last_w: float | None = None
    log_samples: int = 100
    log_interval: float = 1e-4
    log_start: float | None = None
    log_data: bytes | None = None

    @property
    def log_end(self) -> float | None:
        if self.log_start is None:
            return None
        return self.log_start + self.log_samples * self.log_interval


@dataclass(frozen=True)
class _Plan:
    key: tuple[float, int, float]  # start, samples, interval
    bounds: list[float]  # start, every change time inside, end
    runs: list[tuple[int, list[tuple[int, float]]]]  # (repeat, [(stretch, weight)])


def _ending_by(start: float, interval: float, k: int, count: int, limit: float) -> int:
    """The last sample index from ``k`` (which ends by ``limit``) to ``count - 1`` whose
    end, ``start + (j + 1) * interval`` as the samples compute it, is still <= ``limit``."""
    if interval <= 0.0:
        return k
    j = min(count - 1, max(k, int((limit - start) / interval) - 1))
    while j + 1 < count and start + (j + 2) * interval <= limit:
        j += 1
    while j > k and start + (j + 1) * interval > limit:
        j -= 1
    return j


class PowerMeter(ScpiDevice):
    """One meter: port settings, readings, logging, and its receiver in the optical model."""

    SERIAL_PREFIX = "PM"

    def __init__(self, name: str, optics: OpticalModel, *, channels: int = 4,
                 serial: str | None = None, firmware: str = "2.1.0",
                 shared_status: bool = False, all_ports: bool = True, logging: bool = True,
                 error_extras: bool = True):
        if not 1 <= channels <= 1024:
            raise ValueError("a power meter has 1..1024 ports")
        super().__init__(name, optics, serial=serial, firmware=firmware,
                         shared_status=shared_status)
        self.all_ports = all_ports
        """Whether it reads every port at once (``:READ``/``:FETC:POW:ALL:CSV?``)."""
        self.logging_supported = logging
        """Whether it logs (the ``:SENS<n>:CHAN1:FUNC`` subtree)."""
        self.error_extras = error_extras
        self.channels = channels
        calibration = random.Random(f"{self.serial}/calibration")
        self.offset_db = [calibration.uniform(-ACCURACY_DB, ACCURACY_DB)
                          for _ in range(channels)]
        self._noise = random.Random(f"{self.serial}/noise")
        self._normals: list[float] | None = None
        self._factors: list[float] | None = None
        self._floors: list[float] | None = None
        self._last_plan: _Plan | None = None
        self.ports = [_Port() for _ in range(channels)]
        optics.add(Receiver(name, [str(n) for n in range(1, channels + 1)]))

    # ---- ports and settings ------------------------------------------------------------

    def port(self, number: int) -> _Port:
        if not 1 <= number <= self.channels:
            raise ScpiError(-222, f"port {number} not in 1..{self.channels}")
        return self.ports[number - 1]

    def _settable(self, number: int) -> _Port:
        port = self.port(number)
        if self._logging(port):
            raise ScpiError(-221, f"port {number} is logging")
        return port

    def set_wavelength_m(self, number: int, metres: float) -> None:
        if not 400e-9 <= metres <= 1800e-9:
            raise ScpiError(-222, f"wavelength {metres:g} m not in 400..1800 nm")
        self._settable(number).wavelength_m = metres

    def set_averaging_seconds(self, number: int, seconds: float) -> None:
        if not 1e-6 <= seconds <= 10.0:
            raise ScpiError(-222, f"averaging time {seconds:g} s not in 1 µs..10 s")
        self._settable(number).averaging_seconds = seconds

    def set_unit(self, number: int, unit: int) -> None:
        self._settable(number).unit = unit

    def reset(self) -> None:
        with self.lock:
            self.ports = [_Port() for _ in range(self.channels)]

    # ---- physics ------------------------------------------------------------------------

    def _true_w(self, number: int, at: float) -> float:
        return dbm_to_mw(self.optics.power_dbm_at(f"{self.name}:{number}", at)) / 1000.0

    def _average_w(self, number: int, bounds: list[float]) -> float:
        """True power at the port averaged between the first and last of ``bounds`` (the
        change times in between included), watts."""
        start, end = bounds[0], bounds[-1]
        if end <= start:
            return self._true_w(number, start)
        total = sum(self._true_w(number, a) * (b - a) for a, b in itertools.pairwise(bounds))
        return total / (end - start)

    def _bounds(self, start: float, end: float) -> list[float]:
        return [start, *(t for t in self.optics.change_times(start, end) if t < end), end]

    def _reading_w(self, number: int, true_w: float, averaging_seconds: float) -> float:
        gain = 10.0 ** ((self.offset_db[number - 1] + self._noise.gauss(0.0, NOISE_DB)) / 10.0)
        floor = floor_w(averaging_seconds) * 10.0 ** (self._noise.gauss(0.0, FLOOR_SPREAD_DB)
                                                       / 10.0)
        return float(true_w * gain + floor)

    async def read(self, numbers: list[int]) -> list[float]:
        """New readings of the ports (watts), after waiting the longest averaging time."""
        ports = [self.port(n) for n in numbers]
        start = self.clock.now()
        await self.clock.sleep(max((p.averaging_seconds for p in ports), default=0.0))
        with self.lock:
            readings = []
            spans: dict[float, list[float]] = {}  # one look at the change times per span
            for number, port in zip(numbers, ports, strict=True):
                averaging = port.averaging_seconds
                if averaging not in spans:
                    spans[averaging] = self._bounds(start, start + averaging)
                true_w = self._average_w(number, spans[averaging])
                port.last_w = self._reading_w(number, true_w, port.averaging_seconds)
                readings.append(port.last_w)
            return readings

    # ---- logging --------------------------------------------------------------------------

    def _logging(self, port: _Port) -> bool:
        end = port.log_end
        return end is not None and self.clock.now() < end

    def set_logging(self, number: int, samples: int, interval: float) -> None:
        if not 1 <= samples <= MAX_LOGGING_SAMPLES:
            raise ScpiError(-222, f"logging takes 1..{MAX_LOGGING_SAMPLES} samples")
        if not 1e-6 <= interval <= 10.0:
            raise ScpiError(-222, f"logging averaging time {interval:g} s not in 1 µs..10 s")
        port = self._settable(number)
        port.log_samples, port.log_interval = samples, interval

    def start_logging(self, number: int) -> None:
        port = self.port(number)
        # from when the program message reached the meter: every port it starts begins
        # at that moment, however late the emulator got round to the later ones
        port.log_start, port.log_data = command_time(self.clock), None

    def stop_logging(self, number: int) -> None:
        port = self.port(number)
        port.log_start, port.log_data = None, None

    def logging_state(self, number: int) -> str:
        port = self.port(number)
        if port.log_start is None:
            return NO_FUNCTION
        return LOGGING_IN_PROGRESS if self._logging(port) else LOGGING_COMPLETE

    def busy_until(self) -> float:
        """When every logging started so far has completed (``*OPC?`` waits for it)."""
        ends = [end for port in self.ports if (end := port.log_end) is not None]
        return max(ends, default=self.clock.now())

    # ---- what the common commands and status registers report ---------------------------

    def model(self) -> str:
        return f"OPM-{self.channels}"

    def pending_until(self) -> float:
        return self.busy_until()

    def operation_conditions(self) -> ConditionSource:
        return _Measuring(self)

    def measuring_at(self, when: float) -> bool:
        """Whether a port is logging at device time ``when`` (a stopped logging is gone)."""
        return any(port.log_start is not None and end is not None and port.log_start <= when < end
                   for port in self.ports for end in (port.log_end,))

    def logging_edges(self, start: float, end: float) -> list[float]:
        edges = {t for port in self.ports if port.log_start is not None
                 for t in (port.log_start, port.log_end) if t is not None}
        return sorted(t for t in edges if start < t <= end)

    async def logging_result(self, number: int) -> bytes:
        """The logged samples as float32 little-endian watts; waits for the logging to end."""
        port = self.port(number)
        end = port.log_end
        if port.log_start is None or end is None:
            raise ScpiError(-221, f"port {number} has no logging data")
        await self.clock.sleep(end - self.clock.now())
        with self.lock:
            if port.log_data is None:
                samples = self._logged_w(number, port.log_start, port.log_samples,
                                         port.log_interval)
                port.log_data = struct.pack(f"<{len(samples)}f", *samples)
            return port.log_data

    def _plan(self, start: float, count: int, interval: float) -> _Plan:
        """How the samples of a logging map onto the stretches between change times.

        Shared by every port logging over the same span (one program message
        starts them together), so it is worked out once per logging run.
        """
        key = (start, count, interval)
        if self._last_plan is not None and self._last_plan.key == key:
            return self._last_plan
        bounds = self._bounds(start, start + count * interval)
        runs: list[tuple[int, list[tuple[int, float]]]] = []
        stretch = 0
        last_stretch = len(bounds) - 2
        k = 0
        while k < count:
            first, last = start + k * interval, start + (k + 1) * interval
            while stretch < last_stretch and bounds[stretch + 1] <= first:
                stretch += 1
            if stretch == last_stretch or bounds[stretch + 1] >= last:
                # this sample and those after it that end by the stretch's end, at once
                whole = count - k if stretch == last_stretch else \
                    _ending_by(start, interval, k, count, bounds[stretch + 1]) - k + 1
                if runs and runs[-1][1] == [(stretch, 1.0)]:
                    runs[-1] = (runs[-1][0] + whole, runs[-1][1])
                else:
                    runs.append((whole, [(stretch, 1.0)]))
                k += whole
                continue
            k += 1
            weights = []  # a sample that straddles a change: weighted by overlap
            for j in range(stretch, last_stretch + 1):
                if bounds[j] >= last:
                    break
                overlap = min(last, bounds[j + 1]) - max(first, bounds[j])
                if overlap > 0:
                    weights.append((j, overlap / interval))
            runs.append((1, weights))
        self._last_plan = _Plan(key, bounds, runs)
        return self._last_plan

    def _logged_w(self, number: int, start: float, count: int, interval: float) -> list[float]:
        plan = self._plan(start, count, interval)
        gain = 10.0 ** (self.offset_db[number - 1] / 10.0)
        level = [self._true_w(number, at) * gain for at in plan.bounds[:-1]]
        true: list[float] = []
        for repeat, weights in plan.runs:
            true.extend([sum(level[j] * w for j, w in weights)] * repeat)
        factors = self._slice(self._factor_table(), count)
        floors = self._slice(self._floor_table(), count)
        dark = floor_w(interval)
        return [w * f + dark * fl for w, f, fl in zip(true, factors, floors, strict=True)]

    def _slice(self, table: list[float], count: int) -> list[float]:
        """``count`` consecutive values of ``table`` from a random place, wrapping around."""
        offset = self._noise.randrange(len(table))
        out = table[offset:offset + count]
        while len(out) < count:
            out.extend(table[:count - len(out)])
        return out

    def _standard_normals(self) -> list[float]:
        if self._normals is None:
            draw = random.Random(f"{self.serial}/logging-noise")
            self._normals = [draw.gauss(0.0, 1.0) for _ in range(_NOISE_TABLE)]
        return self._normals

    def _factor_table(self) -> list[float]:
        """Signal noise factors, ``10 ** (NOISE_DB * z / 10)``."""
        if self._factors is None:
            scale = NOISE_DB * math.log(10.0) / 10.0
            self._factors = [math.exp(scale * z) for z in self._standard_normals()]
        return self._factors

    def _floor_table(self) -> list[float]:
        """Dark floor factors (times the floor at the averaging time), spread FLOOR_SPREAD_DB."""
        if self._floors is None:
            normals = self._standard_normals()
            scale = FLOOR_SPREAD_DB * math.log(10.0) / 10.0
            # Offset by half the table so floor and signal noise are not the same draw.
            half = len(normals) // 2
            self._floors = [math.exp(scale * z) for z in normals[half:] + normals[:half]]
        return self._floors


class _Measuring:
    """The OPERation condition of the meter: MEASuring while a port logs."""

    BIT = 1 << OPERATION_BITS["MEASuring"]

    def __init__(self, meter: PowerMeter):
        self.meter = meter

    def condition_at(self, when: float) -> int:
        return self.BIT if self.meter.measuring_at(when) else 0

    def condition_changes(self, start: float, end: float) -> list[float]:
        return self.meter.logging_edges(start, end)
