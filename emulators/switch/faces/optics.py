"""A gNMI switch's co-packaged optics as a real CPO switch reports them per port.

Both telemetry faces (:mod:`.optics_openconfig`, :mod:`.optics_sonic`) read the switch's
CPO model (:class:`~emulators.cpo.model.SwitchTelemetry`) through :class:`OpticsView`,
which maps it the way a CPO switch's platform layer does:

- each port's optics is one transceiver: its optical lanes are its channels (lane 1 is
  channel 1), its temperature and supply voltage those of the optical engine that
  carries its first lane (``EngineReading``);
- its FEC is the sum over its electrical lanes: corrected and uncorrectable codewords,
  and the S0..S16 histogram bin by bin;
- its pre-FEC BER is reckoned from those counters as SONiC's port_rates.lua reckons it
  from the symbol errors: bit errors (one per errored 10-bit symbol: symbols with k
  errors counted k times, the uncorrectable bin as 16) over the bits received, between
  two readings at least :data:`BER_INTERVAL_SECONDS` apart (the first one since the
  counters started); post-FEC BER the uncorrectable codewords over all of them, in the
  same interval; the frame loss ratio from the codeword error ratio as IEEE 802.3's FLR
  estimate does, FLR = CER (1 + 8X) / 8 with X the codewords per frame of the port's
  speed (2 at 400G, 4 at 800G and above, else 1);
- its external lasers are the ELS lasers that feed its lanes.

Thresholds are the emulated optics' datasheet (:mod:`emulators.cpo.datasheet`), the
same the switch's SNMP agent serves.

Readings are taken only when a face asks (no tick): :meth:`OpticsView.read` brings the
model up to the clock's now and snapshots it. avg/min/max statistics are over the
readings the view took in the last :data:`STATS_SECONDS`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from emulators.cpo import physics
from emulators.cpo.copper import ElectricalLaneReading
from emulators.cpo.model import SwitchTelemetry, TelemetryReading
from emulators.cpo.optical import EngineReading, LaserReading, OpticalLaneReading

TelemetrySource = Callable[[], SwitchTelemetry | None]
"""A face's CPO model: the switch's telemetry, or None (a switch without one)."""

BER_INTERVAL_SECONDS = 1.0
STATS_SECONDS = 30.0
STATS_MAX_SAMPLES = 256
CODEWORD_BITS = physics.CODEWORD_BITS
UNCORRECTABLE_SYMBOLS = physics.UNCORRECTABLE_BIN  # the last bin: at least this many





def interleave(speed_mbps: int | None) -> int:
    """Codewords per frame at a port speed (SONiC's FEC FLR design)."""
    if speed_mbps is not None and speed_mbps >= 800_000:
        return 4
    if speed_mbps is not None and speed_mbps >= 400_000:
        return 2
    return 1


@dataclass(frozen=True)
class PortFecView:
    corrected: int
    uncorrectable: int
    histogram: tuple[int, ...]
    pre_fec_ber: float
    post_fec_ber: float
    frame_loss_ratio: float


@dataclass(frozen=True)
class PortView:
    """One port's optics and FEC at one reading."""

    if_index: int
    name: str
    engine: EngineReading
    lanes: tuple[OpticalLaneReading, ...]
    lasers: tuple[LaserReading, ...]
    fec: PortFecView
    stats: Mapping[str, tuple[float, float, float]]
    """(avg, min, max) by ``quantity`` or ``quantity/lane``, over :data:`STATS_SECONDS`."""


@dataclass
class _Baseline:
    at: float
    symbols: int
    codewords: int
    uncorrectable: int
    ber: tuple[float, float, float] = (0.0, 0.0, 0.0)


class OpticsView:
    """Per-port views of a switch's CPO model (module docstring). Not thread-safe: a
    face calls it with the device's lock held."""

    def __init__(self, telemetry: TelemetrySource, port_names: Sequence[str],
                 speeds_mbps: Mapping[str, int]):
        self._telemetry = telemetry
        self._names = list(port_names)
        self._speeds = dict(speeds_mbps)
        self._baselines: dict[int, _Baseline] = {}
        self._samples: dict[tuple[int, str], deque[tuple[float, float]]] = {}

    @property
    def available(self) -> bool:
        return self._telemetry() is not None

    def read(self) -> tuple[TelemetryReading, list[PortView]] | None:
        """The model brought up to now, and every port's view; None without a model."""
        telemetry = self._telemetry()
        if telemetry is None:
            return None
        telemetry.update()
        reading = telemetry.read()
        engines = {engine.index: engine for engine in reading.engines}
        lasers = {(laser.module, laser.lane): laser for laser in reading.lasers}
        optical: dict[int, list[OpticalLaneReading]] = {}
        for lane in reading.optical_lanes:
            optical.setdefault(lane.port, []).append(lane)
        electrical: dict[int, list[ElectricalLaneReading]] = {}
        for copper in reading.electrical_lanes:
            electrical.setdefault(copper.port, []).append(copper)
        views = []
        for position, if_index in enumerate(telemetry.spec.ports):
            if position >= len(self._names) or if_index not in optical:
                continue
            name = self._names[position]
            lanes = tuple(sorted(optical[if_index], key=lambda lane: lane.lane))
            feeding = tuple(dict.fromkeys(lasers[(lane.els_module, lane.els_lane)]
                                          for lane in lanes))
            engine = engines[lanes[0].engine]
            fec = self._fec(if_index, name, electrical.get(if_index, []), reading.at)
            views.append(PortView(if_index, name, engine, lanes, feeding, fec,
                                  self._stats(if_index, engine, lanes, reading.at)))
        return reading, views

    def _fec(self, if_index: int, name: str, lanes: Sequence[ElectricalLaneReading],
             now: float) -> PortFecView:
        histogram = [0] * physics.HISTOGRAM_BINS
        for lane in lanes:
            for index, count in enumerate(lane.histogram):
                histogram[index] += count
        corrected = sum(histogram[1:physics.UNCORRECTABLE_BIN])
        uncorrectable = histogram[physics.UNCORRECTABLE_BIN]
        symbols = sum(errors * count for errors, count in enumerate(histogram))
        codewords = sum(histogram)
        baseline = self._baselines.get(if_index)
        if baseline is None or codewords < baseline.codewords:  # first, or counters reset
            baseline = self._baselines[if_index] = _Baseline(now, 0, 0, 0)
        if codewords > baseline.codewords and (
                baseline.codewords == 0 or now - baseline.at >= BER_INTERVAL_SECONDS):
            new = codewords - baseline.codewords
            cer = (uncorrectable - baseline.uncorrectable) / new
            baseline.ber = ((symbols - baseline.symbols) / (new * CODEWORD_BITS), cer,
                            cer * (1 + 8 * interleave(self._speeds.get(name))) / 8)
            baseline.at, baseline.symbols = now, symbols
            baseline.codewords, baseline.uncorrectable = codewords, uncorrectable
        pre, post, flr = baseline.ber
        return PortFecView(corrected, uncorrectable, tuple(histogram), pre, post, flr)

    def _stats(self, if_index: int, engine: EngineReading,
               lanes: Sequence[OpticalLaneReading],
               now: float) -> dict[str, tuple[float, float, float]]:
        values = {"temperature_celsius": engine.temperature_celsius,
                  "supply_voltage_volts": engine.supply_voltage_volts}
        for lane in lanes:
            values[f"tx_power_dbm/{lane.lane}"] = lane.tx_power_dbm
            values[f"rx_power_dbm/{lane.lane}"] = lane.rx_power_dbm
            values[f"tx_bias_ma/{lane.lane}"] = lane.tx_bias_ma
        stats = {}
        for quantity, value in values.items():
            samples = self._samples.setdefault((if_index, quantity),
                                               deque(maxlen=STATS_MAX_SAMPLES))
            if not samples or samples[-1][0] != now:
                samples.append((now, value))
            while samples and samples[0][0] < now - STATS_SECONDS:
                samples.popleft()
            finite = [v for _, v in samples if math.isfinite(v)]
            if finite:
                stats[quantity] = (sum(finite) / len(finite), min(finite), max(finite))
        return stats
