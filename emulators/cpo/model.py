"""The CPO and CPC telemetry of one switch: what its SNMP agent reports, over time.

:class:`SwitchTelemetry` holds the co-packaged optics (:mod:`.optical`: engines,
external lasers, port lanes), the co-packaged copper (:mod:`.copper`: SNR,
BER, FEC counters) and the traffic of one switch's ports (:mod:`.traffic`: IF-MIB's
counters, at the switch's load while a port's light carries a link, with the frames
its uncorrectable codewords hit in error). Time comes from the injected clock only:
:meth:`SwitchTelemetry.update` integrates from the last update to ``now`` (the
FEC and traffic counters grow, temperatures and SNRs drift) and :meth:`SwitchTelemetry.read`
returns a consistent snapshot at that moment. Every random draw comes from
generators seeded by ``seed``, so the same calls at the same clock times give
the same numbers.

Faults (``telemetry.faults``, one :class:`~emulators.faults.FaultInjector`;
the SNMP agent adds its own transport faults and ``reboot`` to it):

| kind        | target                  | effect                                               |
|-------------|-------------------------|------------------------------------------------------|
| els         | ``M/L`` or ``M/L:f1,f2``| laser L of ELS module M gets faults f (MSO-CPO-MIB   |
|             |                         | names; default coolerFault,overTemperature). Any     |
|             |                         | but lowOutputPower/endOfLife shut it off and the     |
|             |                         | lanes it feeds go dark; those two leave it on,       |
|             |                         | 6 dB down. Cleared: faults go, the laser ramps back. |
| rising_ber  | None, ``P`` or ``P/L``  | the SNR of every lane, of port (ifIndex) P, or of    |
|             |                         | lane L of it, falls linearly by 8 dB over            |
|             |                         | ``seconds`` (default 60 s) and stays down until      |
|             |                         | cleared.                                             |
| engine      | ``E``                   | engine E fails: status failed, its lanes dark.       |
| overheat    | ``E``                   | engine E's cooling fails: it heads 35 °C hotter.     |
| lane_reset  | ``P/L`` or ``P``        | the lane's (or port's) receiver resets: its FEC      |
|             |                         | counters restart from 0 and its discontinuity time   |
|             |                         | is now (an event, cleared at once).                  |
| clear_counters | None or ``P``        | the traffic counters of every port, or of port P,    |
|             |                         | restart from 0 and their discontinuity time is now   |
|             |                         | (an operator's counter clear; an event, as above).   |
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from emulators.clock import Clock
from emulators.cpo import physics
from emulators.cpo.copper import (
    RISING_BER_DEPTH_DB,
    RISING_BER_SECONDS,
    ElectricalLane,
    ElectricalLaneReading,
    SnrRamp,
)
from emulators.cpo.interfaces import ELECTRICAL_LANE_BPS, lit
from emulators.cpo.optical import (
    DEFAULT_LASER_FAULTS,
    DEFAULT_RX_POWER_DBM,
    LASER_FAULTS,
    EngineReading,
    Laser,
    LaserReading,
    OpticalLaneReading,
    OpticalPlant,
    RxPowerSource,
)
from emulators.cpo.traffic import PortTraffic, PortTrafficReading
from emulators.faults import Fault, FaultError, FaultInjector
from emulators.optics.model import OpticalModel


@dataclass(frozen=True)
class TelemetrySpec:
    """The shape of one switch's co-packaged optics and copper."""

    ports: tuple[int, ...] = tuple(range(1, 65))
    """ifIndex of each port, in order."""
    optical_lanes_per_port: int = 8
    electrical_lanes_per_port: int = 8
    lanes_per_engine: int = 64
    lanes_per_laser: int = 8
    lasers_per_els_module: int = 8
    fec_degrade_threshold_ber: float = 1e-4
    """msoCpcFecDegradeThreshold (MSO-CPC-MIB's example: 1E-4)."""

    def __post_init__(self) -> None:
        if not self.ports or len(set(self.ports)) != len(self.ports):
            raise ValueError("ports must be distinct ifIndex values, at least one")
        if min(self.ports) < 1 or max(self.ports) > 2147483647:
            raise ValueError("an ifIndex is 1..2147483647")
        counts = (self.optical_lanes_per_port, self.electrical_lanes_per_port,
                  self.lanes_per_engine, self.lanes_per_laser, self.lasers_per_els_module)
        if min(counts) < 1 or max(counts) > 256:
            raise ValueError("lane counts are 1..256 (MsoLaneNumber)")


@dataclass(frozen=True)
class TelemetryReading:
    """Everything the agent serves, as of ``at`` (device time)."""

    at: float
    engines: tuple[EngineReading, ...]
    lasers: tuple[LaserReading, ...]
    optical_lanes: tuple[OpticalLaneReading, ...]
    electrical_lanes: tuple[ElectricalLaneReading, ...]
    fec_degrade_threshold_ber: float
    ports: tuple[PortTrafficReading, ...] = ()
    """Each port's traffic counters, in the spec's port order."""


class SwitchTelemetry:
    """The co-packaged optics and copper of switch ``name``. Thread-safe."""

    def __init__(self, name: str, clock: Clock, spec: TelemetrySpec | None = None, *,
                 seed: int = 1, load: float = 0.6, rx_power_dbm: RxPowerSource | None = None,
                 port_speeds_bps: Mapping[int, float] | None = None):
        """``port_speeds_bps``: each port's nominal speed by ifIndex, which its traffic
        is a fraction of (by default 200 Gb/s per electrical lane; see also
        :meth:`set_port_speeds`)."""
        self.name = name
        self.clock = clock
        self.spec = spec or TelemetrySpec()
        self.rx_power_dbm = rx_power_dbm
        self._load = load
        self._lock = threading.RLock()
        # One generator per concern, so that reading more often does not change what
        # the counters draw.
        layout = random.Random(f"{seed}:layout")
        self._optics_rng = random.Random(f"{seed}:optics")
        self._readings_rng = random.Random(f"{seed}:readings")
        self._fec_rng = random.Random(f"{seed}:fec")
        self._traffic_rng = random.Random(f"{seed}:traffic")
        now = clock.now()
        self._updated_at = now
        self.optics = OpticalPlant(
            self.spec.ports, lanes_per_port=self.spec.optical_lanes_per_port,
            lanes_per_engine=self.spec.lanes_per_engine,
            lanes_per_laser=self.spec.lanes_per_laser,
            lasers_per_module=self.spec.lasers_per_els_module, load=load, rng=layout, now=now)
        self.copper = [ElectricalLane(port, lane, layout) for port in self.spec.ports
                       for lane in range(1, self.spec.electrical_lanes_per_port + 1)]
        self._copper_by_index = {(lane.port, lane.lane): lane for lane in self.copper}
        default_bps = ELECTRICAL_LANE_BPS * self.spec.electrical_lanes_per_port
        self.traffic = {port: PortTraffic(port, default_bps) for port in self.spec.ports}
        if port_speeds_bps is not None:
            self.set_port_speeds(port_speeds_bps)
        self._reading: TelemetryReading | None = None
        self._lit: dict[int, bool] | None = None  # each port's link at the last update
        self.faults = FaultInjector(name)
        self.faults.handle("els", self._fault_els, self._clear_els)
        self.faults.handle("rising_ber", self._fault_rising_ber, self._clear_rising_ber)
        self.faults.handle("engine", self._fault_engine, self._clear_engine)
        self.faults.handle("overheat", self._fault_overheat, self._clear_overheat)
        self.faults.handle("lane_reset", self._fault_lane_reset)
        self.faults.handle("clear_counters", self._fault_clear_counters)

    # ---- time ---------------------------------------------------------------------

    @property
    def load(self) -> float:
        return self._load

    def set_load(self, load: float) -> None:
        """The switch's traffic load, 0..1: it heats the engines (with their lag)."""
        if not 0.0 <= load <= 1.0:
            raise ValueError("load is a fraction 0..1")
        with self._lock:
            self.update()
            self._load = load

    def set_port_speeds(self, speeds_bps: Mapping[int, float]) -> None:
        """The nominal speed of ports by ifIndex (the agent's IF-MIB ifSpeed): from now
        on, their traffic is the load times that. KeyError for a port the spec lacks."""
        with self._lock:
            unknown = set(speeds_bps) - set(self.traffic)
            if unknown:
                raise KeyError(f"no port {', '.join(map(str, sorted(unknown)))}")
            if any(speed < 0 for speed in speeds_bps.values()):
                raise ValueError("a port's speed is 0 or more bits per second")
            self.update()
            for port, speed in speeds_bps.items():
                self.traffic[port].speed_bps = float(speed)

    def update(self, now: float | None = None) -> None:
        """Integrate from the last update to ``now`` (default: the clock)."""
        with self._lock:
            now = self.clock.now() if now is None else now
            for event in ("lane_reset", "clear_counters"):
                if self.faults.is_active(event):
                    self.faults.clear(event)  # an event, not a state
            start = self._updated_at
            if now <= start:
                return
            rx_powers = self._rx_powers_dbm()
            # as the last update left them, unless a fault changed the optics since
            lit_before = self._lit if self._lit is not None else self._lit_ports(start,
                                                                                 rx_powers)
            self.optics.advance(now - start, self._load, self._optics_rng)
            uncorrectable = dict.fromkeys(self.traffic, 0)
            for lane in self.copper:
                before = lane.histogram[physics.UNCORRECTABLE_BIN]
                lane.advance(start, now, self._fec_rng)
                uncorrectable[lane.port] += lane.histogram[physics.UNCORRECTABLE_BIN] - before
            lit_after = self._lit = self._lit_ports(now, rx_powers)
            codewords = (physics.CODEWORDS_PER_SECOND * (now - start)
                         * self.spec.electrical_lanes_per_port)
            for port, traffic in self.traffic.items():
                # a port that came up or went down in between: up for half of it
                up = (lit_before[port] + lit_after[port]) / 2.0
                traffic.advance(now - start, self._load * up, uncorrectable[port] / codewords,
                                self._traffic_rng)
            self._updated_at = now
            self._reading = None

    def _rx_powers_dbm(self) -> dict[int, list[float]]:
        """What each optical lane receives now, without reading noise, by port."""
        powers: dict[int, list[float]] = {}
        source = self.rx_power_dbm
        for lane in self.optics.lanes:
            power = (source(lane.port, lane.lane) if source is not None
                     else DEFAULT_RX_POWER_DBM + lane.rx_offset_db)
            powers.setdefault(lane.port, []).append(power)
        return powers

    def _lit_ports(self, at: float, rx_powers: Mapping[int, list[float]]) -> dict[int, bool]:
        """Whether each port carries a link at ``at`` (as :mod:`.interfaces` has it: every
        lane transmits and receives), its receivers' power being ``rx_powers``."""
        return {port: bool(tx) and all(lit(sent, received) for sent, received
                                       in zip(tx, rx_powers.get(port, ()), strict=True))
                for port, tx in self.optics.tx_powers_dbm(at).items()}

    def read(self) -> TelemetryReading:
        """The state at the last update (call :meth:`update` first to bring it to now)."""
        with self._lock:
            if self._reading is None:
                at = self._updated_at
                engines, lasers, lanes = self.optics.read(at, self._load, self.rx_power_dbm,
                                                          self._readings_rng)
                self._reading = TelemetryReading(
                    at=at, engines=tuple(engines), lasers=tuple(lasers),
                    optical_lanes=tuple(lanes),
                    electrical_lanes=tuple(lane.read(at, self._readings_rng)
                                           for lane in self.copper),
                    fec_degrade_threshold_ber=self.spec.fec_degrade_threshold_ber,
                    ports=tuple(traffic.read() for traffic in self.traffic.values()))
            return self._reading

    def reset_counters(self, at: float | None = None) -> None:
        """A restarted agent: every FEC and traffic counter from 0 at ``at`` (default:
        now), and no discontinuity recorded since."""
        with self._lock:
            self.update(at)
            for lane in self.copper:
                lane.reset_counters(None)
            for traffic in self.traffic.values():
                traffic.reset_counters(None)
            self._reading = None

    # ---- direct access (tests, the lab) ---------------------------------------------

    def electrical_lane(self, port: int, lane: int) -> ElectricalLane:
        return self._copper_by_index[(port, lane)]

    def laser(self, module: int, lane: int) -> Laser:
        return self.optics.laser(module, lane)

    def tx_power_dbm(self, port: int, lane: int) -> float:
        """What optical lane (port, lane) sends into its fiber now, without reading noise."""
        with self._lock:
            return self.optics.tx_power_dbm(self.optics.lane(port, lane), self.clock.now())

    def tx_powers_dbm(self) -> dict[int, list[float]]:
        """:meth:`tx_power_dbm` of every optical lane now, by port in lane order."""
        with self._lock:
            return self.optics.tx_powers_dbm(self.clock.now())

    # ---- faults --------------------------------------------------------------------

    def _changed(self) -> None:
        self.update()
        self._reading = None
        self._lit = None  # the optics change now: their links are looked at again

    def _laser_of(self, fault: Fault) -> tuple[Laser, frozenset[str]]:
        text = fault.target or ""
        where, _, names = text.partition(":")
        module, slash, lane = where.partition("/")
        try:
            laser = self.optics.laser(int(module), int(lane)) if slash else None
        except (ValueError, KeyError):
            laser = None
        if laser is None:
            raise FaultError(f"{self.name}: an els fault needs a target MODULE/LANE of an "
                             f"existing laser (optionally :FAULT,FAULT), got {text!r}")
        faults = frozenset(name.strip() for name in names.split(",") if name.strip())
        unknown = faults - set(LASER_FAULTS)
        if unknown:
            raise FaultError(f"{self.name}: unknown laser fault {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(LASER_FAULTS)}")
        return laser, faults or DEFAULT_LASER_FAULTS

    def _fault_els(self, fault: Fault) -> None:
        with self._lock:
            laser, faults = self._laser_of(fault)
            self._changed()
            laser.faults = laser.faults | faults

    def _clear_els(self, fault: Fault) -> None:
        with self._lock:
            laser, faults = self._laser_of(fault)
            self._changed()
            was_off = laser.shut_down
            laser.faults = laser.faults - faults
            if was_off and not laser.shut_down:
                laser.restart(self.clock.now())

    def _lanes_of(self, fault: Fault, kind: str) -> list[ElectricalLane]:
        if fault.target is None:
            return list(self.copper)
        port, slash, lane = fault.target.partition("/")
        try:
            if slash:
                return [self._copper_by_index[(int(port), int(lane))]]
            lanes = [item for item in self.copper if item.port == int(port)]
        except (ValueError, KeyError):
            lanes = []
        if not lanes:
            raise FaultError(f"{self.name}: a {kind} fault takes no target, a port (ifIndex) "
                             f"or PORT/LANE, got {fault.target!r}")
        return lanes

    def _fault_rising_ber(self, fault: Fault) -> None:
        seconds = RISING_BER_SECONDS if fault.seconds is None else fault.seconds
        if seconds < 0:
            raise FaultError(f"{self.name}: a rising_ber fault takes seconds >= 0")
        with self._lock:
            lanes = self._lanes_of(fault, "rising_ber")
            self._changed()
            for lane in lanes:
                lane.ramp = SnrRamp(self.clock.now(), seconds, RISING_BER_DEPTH_DB)

    def _clear_rising_ber(self, fault: Fault) -> None:
        with self._lock:
            lanes = self._lanes_of(fault, "rising_ber")
            self._changed()
            for lane in lanes:
                lane.ramp = None

    def _fault_lane_reset(self, fault: Fault) -> None:
        with self._lock:
            lanes = self._lanes_of(fault, "lane_reset")
            self._changed()
            for lane in lanes:
                lane.reset_counters(self.clock.now())

    def _fault_clear_counters(self, fault: Fault) -> None:
        with self._lock:
            if fault.target is None:
                ports = list(self.traffic.values())
            else:
                try:
                    ports = [self.traffic[int(fault.target)]]
                except (ValueError, KeyError):
                    raise FaultError(f"{self.name}: a clear_counters fault takes no target "
                                     f"or a port (ifIndex), got {fault.target!r}") from None
            self._changed()
            for traffic in ports:
                traffic.reset_counters(self.clock.now())

    def _engines_of(self, fault: Fault, kind: str) -> Iterable[int]:
        try:
            number = int(fault.target or "")
        except ValueError:
            number = 0
        if not 1 <= number <= len(self.optics.engines):
            raise FaultError(f"{self.name}: an {kind} fault needs a target engine "
                             f"1..{len(self.optics.engines)}, got {fault.target!r}")
        return (number,)

    def _fault_engine(self, fault: Fault) -> None:
        with self._lock:
            for number in self._engines_of(fault, "engine"):
                self._changed()
                self.optics.engines[number - 1].failed = True

    def _clear_engine(self, fault: Fault) -> None:
        with self._lock:
            for number in self._engines_of(fault, "engine"):
                self._changed()
                self.optics.engines[number - 1].failed = False

    def _fault_overheat(self, fault: Fault) -> None:
        with self._lock:
            for number in self._engines_of(fault, "overheat"):
                self._changed()
                self.optics.engines[number - 1].overheating = True

    def _clear_overheat(self, fault: Fault) -> None:
        with self._lock:
            for number in self._engines_of(fault, "overheat"):
                self._changed()
                self.optics.engines[number - 1].overheating = False


def receiver_source(optics: OpticalModel, bank: str, *,
                    port_numbers: Mapping[int, int] | None = None) -> RxPowerSource:
    """Receive power from the lab's optical model: what reaches ``bank:rxN`` now.

    ``N`` is ``port_numbers[ifIndex]`` (default: the ifIndex itself), the way the
    lab names a switch's optics (:class:`~emulators.optics.model.Transceivers`, one
    receiver per port). Every lane of a port reads its port's power: the lanes' fibers
    run side by side through the same path, so a cut or a switched OCS port darkens
    them all at once.
    """
    numbers = dict(port_numbers or {})

    def source(port: int, lane: int) -> float:
        return optics.power_dbm(f"{bank}:rx{numbers.get(port, port)}")

    return source
