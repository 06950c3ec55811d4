"""Co-packaged optics of one switch: optical engines and their external laser sources.

What is modelled (the figures are this emulator's choices, picked to sit where
published CPO designs sit; none is a vendor's datasheet value):

- **Engines.** Temperature follows the switch's load with a thermal lag and
  wanders: ``T = lagged(55 °C + 20 °C × load) + wander``, the lag first order with
  a 60 s time constant, the wander an Ornstein-Uhlenbeck process (a random walk
  pulled back to zero: standard deviation 0.5 °C, correlation time 600 s), so
  it drifts slowly and never runs away. High threshold 85 °C; status
  overTemperature at or above it until it falls 2 °C below (MSO-CPO-MIB).
  Supply 1.800 V, drooping 15 mV at full load, 1 mV reading noise.
- **External lasers (ELS).** Each laser emits 18.0 dBm (63 mW) at its set
  point: bias = 20 mA threshold + power / 0.30 W/A slope efficiency (±3 % per
  laser), about 230 mA; forward voltage 1.10 V + 4 Ω × bias, about 2.02 V;
  TEC-held at 50.00 °C. Switched on, a laser ramps its power linearly in mW
  over 2 s (state ramping), then is on. Control mode constantPower by default.
- **Port lanes.** A laser's light is split to ``lanes_per_laser`` modulators
  (10·log10(8) = 9.03 dB), and the modulator and couplers lose 7.5 dB more, so a
  lane transmits about +1.5 dBm, with a fixed ±0.3 dB offset per lane. A lane
  whose laser is off, or whose engine has failed, is dark. Modulator bias
  10 mA ± 0.8 mA per lane. Receive power comes from a source the caller gives
  (the lab's optical model); without one, -2.0 dBm ± 0.5 dB per lane.
- Every reading carries small noise: 0.02 dB on powers, 0.05 °C on engine
  temperatures, 0.02 °C on laser temperatures, 0.02 mA on bias.

Lanes map onto engines and lasers in order: optical lane g (counted from 0 over
the ports in ifIndex order) is lane ``g % lanes_per_engine + 1`` of engine
``g // lanes_per_engine + 1`` and is fed by laser ``g // lanes_per_laser``,
which is lane ``l % lasers_per_module + 1`` of ELS module ``l // lasers_per_module + 1``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

NO_LIGHT_DBM = float("-inf")

RxPowerSource = Callable[[int, int], float]
"""Receive power of (ifIndex, lane) in dBm, ``-inf`` when dark."""

# Engines
ENGINE_IDLE_CELSIUS = 55.0
ENGINE_LOAD_CELSIUS = 20.0  # added at full load
ENGINE_THERMAL_SECONDS = 60.0
ENGINE_WANDER_CELSIUS = 0.5
ENGINE_WANDER_SECONDS = 600.0
ENGINE_HIGH_CELSIUS = 85.0
ENGINE_HYSTERESIS_CELSIUS = 2.0  # MSO-CPO-MIB, msoCpoEngineStatus
ENGINE_OVERHEAT_CELSIUS = 35.0  # added while the engine's cooling has failed (a fault)
ENGINE_SUPPLY_VOLTS = 1.800
ENGINE_SUPPLY_DROOP_VOLTS = 0.015
ENGINE_SUPPLY_NOISE_VOLTS = 0.001
ENGINE_TEMPERATURE_NOISE_CELSIUS = 0.05

# External lasers
LASER_SET_POINT_DBM = 18.0
LASER_THRESHOLD_MA = 20.0
LASER_SLOPE_W_PER_A = 0.30
LASER_SLOPE_SPREAD = 0.03
LASER_VOLTAGE_OFFSET_V = 1.10
LASER_SERIES_OHMS = 4.0
LASER_TEC_CELSIUS = 50.0
LASER_HOT_CELSIUS = 75.0  # where a laser whose cooler failed ends up
LASER_END_OF_LIFE_MA = 350.0
LASER_RAMP_SECONDS = 2.0
LASER_DEGRADED_DB = 6.0  # output lost by a laser with a low-power or end-of-life fault
LASER_TEMPERATURE_NOISE_CELSIUS = 0.02

# Port lanes
LANE_EXCESS_LOSS_DB = 7.5  # modulator and couplers, on top of the split
LANE_OFFSET_DB = 0.3
LANE_BIAS_MA = 10.0
LANE_BIAS_SPREAD_MA = 0.8
DEFAULT_RX_POWER_DBM = -2.0
DEFAULT_RX_SPREAD_DB = 0.5
POWER_NOISE_DB = 0.02
BIAS_NOISE_MA = 0.02

LASER_FAULTS = ("overTemperature", "coolerFault", "overCurrent", "highOutputPower",
                "lowOutputPower", "supplyVoltage", "safetyInterlock", "endOfLife")
"""The fault names of MSO-CPO-MIB's msoCpoElsFaults."""
DEGRADING_FAULTS = frozenset({"lowOutputPower", "endOfLife"})
"""Faults that leave the laser on at reduced power; every other one shuts it off."""
DEFAULT_LASER_FAULTS = frozenset({"coolerFault", "overTemperature"})


def mw_to_dbm(mw: float) -> float:
    return NO_LIGHT_DBM if mw <= 0.0 else 10.0 * math.log10(mw)


def dbm_to_mw(dbm: float) -> float:
    return 0.0 if dbm == NO_LIGHT_DBM else float(10.0 ** (dbm / 10.0))


@dataclass(frozen=True)
class EngineReading:
    index: int
    name: str
    lane_count: int
    temperature_celsius: float
    temperature_high_celsius: float
    supply_voltage_volts: float
    status: str  # normal, overTemperature, failed


@dataclass(frozen=True)
class LaserReading:
    module: int
    lane: int
    output_power_dbm: float  # -inf while off
    bias_current_ma: float
    voltage_volts: float
    temperature_celsius: float
    state: str  # off, ramping, on
    control_mode: str  # constantCurrent, constantPower
    faults: frozenset[str]


@dataclass(frozen=True)
class OpticalLaneReading:
    port: int  # ifIndex
    lane: int
    engine: int
    engine_lane: int
    tx_power_dbm: float  # -inf when dark
    rx_power_dbm: float  # -inf when dark
    tx_bias_ma: float
    els_module: int
    els_lane: int


class Engine:
    """One optical engine's thermal state, stepped by :meth:`advance`."""

    def __init__(self, index: int, lane_count: int, load: float):
        self.index = index
        self.lane_count = lane_count
        self.lagged_celsius = ENGINE_IDLE_CELSIUS + ENGINE_LOAD_CELSIUS * load
        self.wander_celsius = 0.0
        self.failed = False
        self.overheating = False
        self.over_temperature = False

    def target_celsius(self, load: float) -> float:
        extra = ENGINE_OVERHEAT_CELSIUS if self.overheating else 0.0
        return ENGINE_IDLE_CELSIUS + ENGINE_LOAD_CELSIUS * load + extra

    def advance(self, seconds: float, load: float, rng: random.Random) -> None:
        target = self.target_celsius(load)
        self.lagged_celsius = target + (self.lagged_celsius - target) * math.exp(
            -seconds / ENGINE_THERMAL_SECONDS)
        self.wander_celsius = ornstein_uhlenbeck(
            rng, self.wander_celsius, seconds, ENGINE_WANDER_CELSIUS, ENGINE_WANDER_SECONDS)
        temperature = self.lagged_celsius + self.wander_celsius
        if temperature >= ENGINE_HIGH_CELSIUS:
            self.over_temperature = True
        elif temperature < ENGINE_HIGH_CELSIUS - ENGINE_HYSTERESIS_CELSIUS:
            self.over_temperature = False

    def read(self, load: float, rng: random.Random) -> EngineReading:
        status = ("failed" if self.failed
                  else "overTemperature" if self.over_temperature else "normal")
        supply = (ENGINE_SUPPLY_VOLTS - ENGINE_SUPPLY_DROOP_VOLTS * load
                  + rng.gauss(0.0, ENGINE_SUPPLY_NOISE_VOLTS))
        return EngineReading(
            index=self.index, name=f"OE{self.index}", lane_count=self.lane_count,
            temperature_celsius=self.lagged_celsius + self.wander_celsius
            + rng.gauss(0.0, ENGINE_TEMPERATURE_NOISE_CELSIUS),
            temperature_high_celsius=ENGINE_HIGH_CELSIUS,
            supply_voltage_volts=supply, status=status)


class Laser:
    """One laser of an ELS module. Its state is a function of time since it last started."""

    def __init__(self, module: int, lane: int, slope_w_per_a: float, *,
                 control_mode: str = "constantPower", started_at: float):
        self.module = module
        self.lane = lane
        self.slope_w_per_a = slope_w_per_a
        self.control_mode = control_mode
        self.set_point_dbm = LASER_SET_POINT_DBM
        self.enabled = True
        self.faults: frozenset[str] = frozenset()
        self.started_at = started_at

    @property
    def shut_down(self) -> bool:
        return not self.enabled or bool(self.faults - DEGRADING_FAULTS)

    def state(self, now: float) -> str:
        if self.shut_down:
            return "off"
        return "ramping" if now - self.started_at < LASER_RAMP_SECONDS else "on"

    def ramp_fraction(self, now: float) -> float:
        """How far up its ramp the laser is: 0 off, 1 on."""
        if self.shut_down:
            return 0.0
        return min(1.0, max(0.0, (now - self.started_at) / LASER_RAMP_SECONDS))

    def output_power_dbm(self, now: float) -> float:
        degraded = LASER_DEGRADED_DB if self.faults & DEGRADING_FAULTS else 0.0
        return mw_to_dbm(dbm_to_mw(self.set_point_dbm - degraded) * self.ramp_fraction(now))

    def bias_current_ma(self, now: float) -> float:
        fraction = self.ramp_fraction(now)
        if fraction == 0.0:
            return 0.0
        if self.faults & DEGRADING_FAULTS and self.control_mode == "constantPower":
            return LASER_END_OF_LIFE_MA  # the loop drives to its limit and still falls short
        set_point_mw = dbm_to_mw(self.set_point_dbm)
        return (LASER_THRESHOLD_MA + set_point_mw / self.slope_w_per_a) * fraction

    def restart(self, now: float) -> None:
        """Start the ramp again, if the laser was off."""
        self.started_at = now

    def read(self, now: float, rng: random.Random) -> LaserReading:
        bias = self.bias_current_ma(now)
        hot = self.faults & {"coolerFault", "overTemperature"}
        temperature = LASER_HOT_CELSIUS if hot else LASER_TEC_CELSIUS
        return LaserReading(
            module=self.module, lane=self.lane,
            output_power_dbm=noisy_dbm(rng, self.output_power_dbm(now)),
            bias_current_ma=max(0.0, bias + rng.gauss(0.0, BIAS_NOISE_MA)) if bias else 0.0,
            voltage_volts=LASER_VOLTAGE_OFFSET_V + LASER_SERIES_OHMS * bias / 1000 if bias else 0.0,
            temperature_celsius=temperature + rng.gauss(0.0, LASER_TEMPERATURE_NOISE_CELSIUS),
            state=self.state(now), control_mode=self.control_mode, faults=self.faults)


@dataclass
class OpticalLane:
    port: int
    lane: int
    engine: Engine
    engine_lane: int
    laser: Laser
    offset_db: float
    bias_ma: float
    rx_offset_db: float


class OpticalPlant:
    """Every engine, laser and port lane of a switch's co-packaged optics."""

    def __init__(self, ports: Iterable[int], *, lanes_per_port: int, lanes_per_engine: int,
                 lanes_per_laser: int, lasers_per_module: int, load: float,
                 rng: random.Random, now: float):
        ports = list(ports)
        total = len(ports) * lanes_per_port
        self.lanes_per_laser = lanes_per_laser
        self.engines = [Engine(number, lanes_per_engine, load)
                        for number in range(1, -(-total // lanes_per_engine) + 1)]
        laser_count = -(-total // lanes_per_laser)
        self.lasers = [
            Laser(index // lasers_per_module + 1, index % lasers_per_module + 1,
                  LASER_SLOPE_W_PER_A * (1 + rng.uniform(-LASER_SLOPE_SPREAD, LASER_SLOPE_SPREAD)),
                  started_at=now - LASER_RAMP_SECONDS)
            for index in range(laser_count)]
        self.lanes: list[OpticalLane] = []
        for position, port in enumerate(ports):
            for lane in range(1, lanes_per_port + 1):
                number = position * lanes_per_port + lane - 1
                self.lanes.append(OpticalLane(
                    port=port, lane=lane, engine=self.engines[number // lanes_per_engine],
                    engine_lane=number % lanes_per_engine + 1,
                    laser=self.lasers[number // lanes_per_laser],
                    offset_db=rng.uniform(-LANE_OFFSET_DB, LANE_OFFSET_DB),
                    bias_ma=LANE_BIAS_MA + rng.uniform(-LANE_BIAS_SPREAD_MA, LANE_BIAS_SPREAD_MA),
                    rx_offset_db=rng.uniform(-DEFAULT_RX_SPREAD_DB, DEFAULT_RX_SPREAD_DB)))
        self._by_index = {(lane.port, lane.lane): lane for lane in self.lanes}

    def laser(self, module: int, lane: int) -> Laser:
        for laser in self.lasers:
            if (laser.module, laser.lane) == (module, lane):
                return laser
        raise KeyError(f"no laser {module}/{lane}")

    def lane(self, port: int, lane: int) -> OpticalLane:
        return self._by_index[(port, lane)]

    def tx_power_dbm(self, lane: OpticalLane, now: float) -> float:
        """The lane's transmit power without reading noise: what enters the fiber."""
        if lane.engine.failed:
            return NO_LIGHT_DBM
        return self._from_laser(lane, lane.laser.output_power_dbm(now))

    def tx_powers_dbm(self, now: float) -> dict[int, list[float]]:
        """:meth:`tx_power_dbm` of every lane at ``now``, by port in lane order; each
        laser's output reckoned once for the lanes it feeds (the lab asks every tick)."""
        outputs = {id(laser): laser.output_power_dbm(now) for laser in self.lasers}
        powers: dict[int, list[float]] = {}
        for lane in self.lanes:
            power = NO_LIGHT_DBM if lane.engine.failed else \
                self._from_laser(lane, outputs[id(lane.laser)])
            powers.setdefault(lane.port, []).append(power)
        return powers

    def _from_laser(self, lane: OpticalLane, laser_dbm: float) -> float:
        """What the lane sends of its laser's ``laser_dbm``: its share of the split, less
        the modulator's loss, with the lane's own offset."""
        split_db = 10.0 * math.log10(self.lanes_per_laser)
        return laser_dbm - split_db - LANE_EXCESS_LOSS_DB + lane.offset_db

    def advance(self, seconds: float, load: float, rng: random.Random) -> None:
        for engine in self.engines:
            engine.advance(seconds, load, rng)

    def read(self, now: float, load: float, rx_source: RxPowerSource | None,
             rng: random.Random) -> tuple[list[EngineReading], list[LaserReading],
                                          list[OpticalLaneReading]]:
        engines = [engine.read(load, rng) for engine in self.engines]
        lasers = [laser.read(now, rng) for laser in self.lasers]
        lanes = []
        for lane in self.lanes:
            if rx_source is not None:
                rx = rx_source(lane.port, lane.lane)
            else:
                rx = DEFAULT_RX_POWER_DBM + lane.rx_offset_db
            lanes.append(OpticalLaneReading(
                port=lane.port, lane=lane.lane, engine=lane.engine.index,
                engine_lane=lane.engine_lane,
                tx_power_dbm=noisy_dbm(rng, self.tx_power_dbm(lane, now)),
                rx_power_dbm=noisy_dbm(rng, rx),
                tx_bias_ma=0.0 if lane.engine.failed
                else lane.bias_ma + rng.gauss(0.0, BIAS_NOISE_MA),
                els_module=lane.laser.module, els_lane=lane.laser.lane))
        return engines, lasers, lanes


def noisy_dbm(rng: random.Random, power_dbm: float) -> float:
    """A power reading: the power plus reading noise; darkness stays dark."""
    return power_dbm if power_dbm == NO_LIGHT_DBM else power_dbm + rng.gauss(0.0, POWER_NOISE_DB)


def ornstein_uhlenbeck(rng: random.Random, value: float, seconds: float, sigma: float,
                       correlation_seconds: float) -> float:
    """Step a zero-mean OU process exactly by ``seconds``: stationary deviation ``sigma``."""
    if seconds <= 0.0:
        return value
    decay = math.exp(-seconds / correlation_seconds)
    return value * decay + sigma * math.sqrt(1.0 - decay * decay) * rng.gauss(0.0, 1.0)
