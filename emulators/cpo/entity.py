"""The switch's port optics as ENTITY-MIB (RFC 4133) and ENTITY-SENSOR-MIB (RFC 3433) rows.

Each port's optics is one physical entity (class ``module``: the pluggable a front
panel port holds, or on co-packaged optics the engine lanes that port uses) inside a
``port`` entity inside the chassis; its sensors (class ``sensor``) are inside it: the
temperature and supply voltage of the engine that carries the port's lanes, and per
optical lane the transmit power, the receive power and the modulator's bias current.
entAliasMappingTable ties each port entity to its interface (``ifIndex.N``), as RFC
4133 section 3.1.2 means it; nothing else ties a sensor to a port, so a manager joins
them through entPhysicalContainedIn and the alias, never by computing an index.

Real agents number these entities in their own ways; :data:`LAYOUTS` holds the
layouts of the agents this one can pass for, and ``shuffled`` numbers them in a
seeded random order that no manager has seen:

- ``sonic``: SONiC's snmp agent: a transceiver is 1,000,000,000 + ifIndex × 100 and
  its sensors add 10 (temperature), 20 + L (Tx power of lane L), 30 + L (Rx power),
  40 + L (bias), 50 (voltage); power in watts scaled milli with 4 decimals (a power
  below 0.0001 mW reads 0: no light); no thresholds;
- ``arista``: EOS: transceiver 100,300,100 + port × 1,000 (``1003SS100``); its
  temperature and voltage sensors ``...201``, ``...202``; lane L's bias, Tx and Rx
  power ``...2L1``, ``...2L2``, ``...2L3``; power in dBm (entPhySensorType ``other``,
  the RFC having no dBm) with 2 decimals; thresholds in
  ``aristaEntSensorThresholdTable`` (:mod:`.vendor`);
- ``cisco``: NX-OS-like: entities numbered from 300,000,000 by port × 10,000, power in
  dBm with Cisco's entPhySensorType value 14, thresholds in
  ``ceSensorExtThresholdTable`` (:mod:`.vendor`);
- ``shuffled``: SONiC's forms, every index drawn at random (seeded) from 1..2^31-1.

Values (RFC 3433 entPhySensorValue): the measurement in the unit of
entPhySensorType times 10^-scale exponent, with entPhySensorPrecision decimals:
``round(value / 10^(3 × (scale - 9)) × 10^precision)``, held to ±1,000,000,000. A
dark receiver (no light: ``-inf`` dBm in the model) reads 0 W where the unit is
watts, and :data:`DBM_FLOOR` where it is dBm (an agent cannot send ``-inf``). A
sensor whose engine has failed is ``nonoperational`` with no value (RFC 3433: the
agent believes the sensor is broken); one whose value the model has not got is
``unavailable``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from emulators.cpo.interfaces import Interface
from emulators.cpo.model import TelemetryReading

QUANTITIES = ("temperature", "voltage", "tx_power", "rx_power", "bias")
PER_LANE = frozenset({"tx_power", "rx_power", "bias"})
SENSOR_VALUE_LIMIT = 1_000_000_000  # EntitySensorValue: -1000000000..1000000000
DBM_FLOOR = -40.0
"""What a dBm sensor reads without light: the bottom of a receive power monitor's range
(SFF-8472 and CMIS monitors stop near -40 dBm)."""
CISCO_DBM = 14
"""Cisco's entPhySensorType for dBm, beyond the RFC's enumeration (1..12)."""
UPDATE_RATE_MS = 1000
"""entPhySensorValueUpdateRate: the agent refreshes its readings once a second."""

# EntitySensorDataType and EntitySensorDataScale numbers (RFC 3433).
OTHER, VOLTS_DC, AMPERES, WATTS, CELSIUS = 1, 4, 5, 6, 8
SCALES = {"micro": 7, "milli": 8, "units": 9}

# The emulated optics' alarm and warning thresholds, as the engine's datasheet gives them
# (low alarm, low warning, high warning, high alarm), in each quantity's own unit.
THRESHOLDS: Mapping[str, tuple[float, float, float, float]] = {
    "temperature": (-5.0, 0.0, 80.0, 85.0),  # °C; the engine calls 85 °C overTemperature
    "voltage": (1.62, 1.71, 1.89, 1.98),  # V: the 1.8 V supply ±5 % and ±10 %
    "tx_power": (-4.0, -2.0, 7.0, 9.0),  # dBm per lane (about 4.5 dBm in service)
    "rx_power": (-14.0, -12.0, 4.0, 6.0),  # dBm per lane
    "bias": (4.0, 5.0, 15.0, 16.0),  # mA, the modulator's
}


@dataclass(frozen=True)
class SensorForm:
    """How a layout serves a quantity: entPhySensorType (a number), scale, precision,
    and entPhySensorUnitsDisplay."""

    sensor_type: int
    scale: str
    precision: int
    units: str


@dataclass(frozen=True)
class Layout:
    """One agent's way of numbering and naming its entities (see the module)."""

    name: str
    chassis: int
    port: Callable[[int, int], int]
    """(position from 1, ifIndex) -> the port entity's index."""
    module: Callable[[int, int], int]
    """(position, ifIndex) -> the optics module's index."""
    sensor: Callable[[int, str, int | None], int]
    """(module index, quantity, lane or None) -> the sensor's index."""
    forms: Mapping[str, SensorForm]
    thresholds: str | None = None
    """Which vendor threshold table the agent serves: ``arista``, ``cisco`` or none."""
    sensor_names: Callable[[str, str, int | None], str] | None = None


def _sonic_sensor(module: int, quantity: str, lane: int | None) -> int:
    offset = {"temperature": 10, "tx_power": 20, "rx_power": 30, "bias": 40, "voltage": 50}
    return module + offset[quantity] + (lane or 0)


def _arista_sensor(module: int, quantity: str, lane: int | None) -> int:
    base = module - 100 + 200  # 1003SS100 -> 1003SS200
    if quantity == "temperature":
        return base + 1
    if quantity == "voltage":
        return base + 2
    last = {"bias": 1, "tx_power": 2, "rx_power": 3}[quantity]
    return base + 10 * (lane or 0) + last


def _cisco_sensor(module: int, quantity: str, lane: int | None) -> int:
    offset = {"temperature": 1, "voltage": 2, "bias": 3, "tx_power": 4, "rx_power": 5}
    return module + 10 * (lane or 0) + offset[quantity]


def _sonic_name(port_name: str, quantity: str, lane: int | None) -> str:
    words = {"temperature": "Temperature", "voltage": "Voltage", "tx_power": "TX Power",
             "rx_power": "RX Power", "bias": "TX Bias"}[quantity]
    where = port_name if lane is None else f"{port_name}/{lane}"
    return f"DOM {words} Sensor for {where}"


def _arista_name(port_name: str, quantity: str, lane: int | None) -> str:
    words = {"temperature": "Temperature", "voltage": "Voltage", "tx_power": "Tx power",
             "rx_power": "Rx power", "bias": "Tx bias current"}[quantity]
    lane_words = "" if lane is None else f" lane {lane}"
    return f"DOM {words}{lane_words} sensor for {port_name}"


def _cisco_name(port_name: str, quantity: str, lane: int | None) -> str:
    words = {"temperature": "Temperature Sensor", "voltage": "Supply Voltage Sensor",
             "tx_power": "Transmit Power Sensor", "rx_power": "Receive Power Sensor",
             "bias": "Bias Current Sensor"}[quantity]
    lane_words = "" if lane is None else f" Lane {lane}"
    return f"{port_name}{lane_words} {words}"


_WATTS_FORMS = {
    "temperature": SensorForm(CELSIUS, "units", 6, "C"),
    "voltage": SensorForm(VOLTS_DC, "units", 4, "V"),
    "tx_power": SensorForm(WATTS, "milli", 4, "mW"),
    "rx_power": SensorForm(WATTS, "milli", 4, "mW"),
    "bias": SensorForm(AMPERES, "milli", 4, "mA"),
}

LAYOUTS: Mapping[str, Layout] = {
    "sonic": Layout(
        "sonic", chassis=1,
        port=lambda position, ifindex: 1_000_000_000 + ifindex * 100 - 99,
        module=lambda position, ifindex: 1_000_000_000 + ifindex * 100,
        sensor=_sonic_sensor, forms=_WATTS_FORMS, sensor_names=_sonic_name),
    "arista": Layout(
        "arista", chassis=1,
        port=lambda position, ifindex: 100_300_000 + position * 1_000,
        module=lambda position, ifindex: 100_300_100 + position * 1_000,
        sensor=_arista_sensor, thresholds="arista", sensor_names=_arista_name, forms={
            "temperature": SensorForm(CELSIUS, "units", 1, "C"),
            "voltage": SensorForm(VOLTS_DC, "units", 2, "V"),
            "tx_power": SensorForm(OTHER, "units", 2, "dBm"),
            "rx_power": SensorForm(OTHER, "units", 2, "dBm"),
            "bias": SensorForm(AMPERES, "milli", 1, "mA"),
        }),
    "cisco": Layout(
        "cisco", chassis=10,
        port=lambda position, ifindex: 300_000_000 + position * 10_000 - 1_000,
        module=lambda position, ifindex: 300_000_000 + position * 10_000,
        sensor=_cisco_sensor, thresholds="cisco", sensor_names=_cisco_name, forms={
            "temperature": SensorForm(CELSIUS, "units", 1, "C"),
            "voltage": SensorForm(VOLTS_DC, "units", 2, "V"),
            "tx_power": SensorForm(CISCO_DBM, "units", 2, "dBm"),
            "rx_power": SensorForm(CISCO_DBM, "units", 2, "dBm"),
            "bias": SensorForm(AMPERES, "milli", 2, "mA"),
        }),
}
SHUFFLED = "shuffled"
LAYOUT_NAMES = (*LAYOUTS, SHUFFLED)


@dataclass(frozen=True)
class PhysicalEntity:
    """One entPhysicalTable row (the attributes :mod:`.columns` serves)."""

    index: int
    descr: str
    contained_in: int
    physical_class: str
    parent_rel_pos: int
    name: str
    is_fru: str
    vendor_type: tuple[int, ...] = (0, 0)  # zeroDotZero: "the vendor type is unknown"
    hardware_rev: str = ""
    firmware_rev: str = ""
    software_rev: str = ""
    serial_num: str = ""
    mfg_name: str = ""
    model_name: str = ""
    alias: str = ""
    asset_id: str = ""


@dataclass(frozen=True)
class AliasMapping:
    """One entAliasMappingTable row: physical entity ``index``, logical entity 0 (every
    logical entity), and the ifIndex instance it is."""

    index: int
    logical: int
    identifier: tuple[int, ...]


@dataclass(frozen=True)
class Sensor:
    """A sensor entity: what it measures, where, and how its layout serves it."""

    index: int
    port: int
    quantity: str
    lane: int | None
    form: SensorForm


@dataclass(frozen=True)
class SensorRow:
    """One entPhySensorTable row at a reading."""

    index: int
    sensor_type: int
    scale: str
    precision: int
    value: int | None
    oper_status: str
    units_display: str
    value_timestamp: float | None
    update_rate_ms: int


IF_INDEX_OID = (1, 3, 6, 1, 2, 1, 2, 2, 1, 1)  # IF-MIB ifIndex: an alias names ifIndex.N


class EntityTables:
    """The entity rows of one agent: fixed structure, sensor values at each reading."""

    def __init__(self, layout: str, interfaces: Sequence[Interface], switch: str,
                 *, lanes_per_port: int, seed: int = 0):
        if layout not in LAYOUT_NAMES:
            raise ValueError(f"unknown entity layout {layout!r} (one of "
                             f"{', '.join(LAYOUT_NAMES)})")
        self.layout_name = layout
        shape = LAYOUTS["sonic" if layout == SHUFFLED else layout]
        self.thresholds = shape.thresholds
        indexes = _Indexes(shape, random.Random(f"{seed}:entity") if layout == SHUFFLED
                           else None)
        chassis = indexes.chassis()
        entities = [PhysicalEntity(chassis, f"msoctl emulated switch {switch}", 0, "chassis",
                                   -1, "Chassis", "false", serial_num=f"EMU{seed % 10**8:08d}",
                                   mfg_name="msoctl", model_name="emulated CPO switch")]
        aliases: list[AliasMapping] = []
        sensors: list[Sensor] = []
        for position, interface in enumerate(interfaces, start=1):
            port = indexes.port(position, interface.index)
            module = indexes.module(position, interface.index)
            entities.append(PhysicalEntity(port, f"{interface.name} front-panel port", chassis,
                                           "port", position, interface.name, "false"))
            aliases.append(AliasMapping(port, 0, (*IF_INDEX_OID, interface.index)))
            entities.append(PhysicalEntity(
                module, f"{interface.name} co-packaged optics", port, "module", 1,
                f"{interface.name} transceiver", "false", mfg_name="msoctl",
                model_name="emulated 8x200G optical engine lanes",
                serial_num=f"OE{seed % 10**4:04d}{interface.index:05d}"))
            relative = 0
            for quantity in QUANTITIES:
                for lane in (range(1, lanes_per_port + 1) if quantity in PER_LANE
                             else (None,)):
                    relative += 1
                    index = indexes.sensor(module, quantity, lane)
                    name = (shape.sensor_names or _sonic_name)(interface.name, quantity, lane)
                    entities.append(PhysicalEntity(index, name, module, "sensor", relative,
                                                   name, "false"))
                    sensors.append(Sensor(index, interface.index, quantity, lane,
                                          shape.forms[quantity]))
        taken = [entity.index for entity in entities]
        if len(set(taken)) != len(taken):
            raise ValueError(f"entity layout {layout!r} gives two entities one index")
        self.physical_entities = tuple(entities)
        self.alias_mappings = tuple(aliases)
        self.sensors = tuple(sensors)

    def sensor_rows(self, reading: TelemetryReading, at: float) -> list[SensorRow]:
        """Every sensor's row at ``reading`` (``at``: its device time)."""
        lanes = {(lane.port, lane.lane): lane for lane in reading.optical_lanes}
        engines = {engine.index: engine for engine in reading.engines}
        first_lane = {}
        for lane in reading.optical_lanes:
            first_lane.setdefault(lane.port, lane)
        rows = []
        for sensor in self.sensors:
            lane = lanes.get((sensor.port, sensor.lane or 1))
            engine = engines.get(lane.engine) if lane is not None else None
            measured: float | None = None
            status = "ok"
            if lane is None or engine is None:
                status = "unavailable"
            elif engine.status == "failed" and sensor.quantity != "rx_power":
                status = "nonoperational"
            else:
                measured = {"temperature": engine.temperature_celsius,
                            "voltage": engine.supply_voltage_volts,
                            "tx_power": lane.tx_power_dbm, "rx_power": lane.rx_power_dbm,
                            "bias": lane.tx_bias_ma}[sensor.quantity]
            rows.append(SensorRow(
                sensor.index, sensor.form.sensor_type, sensor.form.scale,
                sensor.form.precision,
                None if measured is None else sensor_value(sensor.form, sensor.quantity,
                                                           measured),
                status, sensor.form.units, at, UPDATE_RATE_MS))
        return rows

    def threshold_values(self, sensor: Sensor) -> tuple[int, int, int, int]:
        """The sensor's (low alarm, low warning, high warning, high alarm) in its own
        encoding (entPhySensorValue's scale and precision)."""
        low_alarm, low_warning, high_warning, high_alarm = THRESHOLDS[sensor.quantity]
        return tuple(sensor_value(sensor.form, sensor.quantity, value)  # type: ignore[return-value]
                     for value in (low_alarm, low_warning, high_warning, high_alarm))


def sensor_value(form: SensorForm, quantity: str, measured: float) -> int:
    """entPhySensorValue of ``measured`` (°C, V, dBm or mA, as the quantity is) in
    ``form`` (see the module)."""
    if quantity in ("tx_power", "rx_power"):
        if form.sensor_type == WATTS:
            measured = 0.0 if measured == -math.inf else 10.0 ** (measured / 10.0) / 1000.0
        else:
            measured = max(DBM_FLOOR, measured)
    elif quantity == "bias":
        measured /= 1000.0  # amperes
    exponent = 3 * (SCALES[form.scale] - 9)
    raw = round(measured / 10.0 ** exponent * 10.0 ** form.precision)
    return max(-SENSOR_VALUE_LIMIT, min(SENSOR_VALUE_LIMIT, raw))


class _Indexes:
    """A layout's index functions, or (``rng`` given) seeded random distinct indexes."""

    def __init__(self, layout: Layout, rng: random.Random | None):
        self.layout = layout
        self.rng = rng
        self.taken: set[int] = set()

    def _draw(self, fallback: int) -> int:
        if self.rng is None:
            return fallback
        while True:
            index = self.rng.randint(1, 2**31 - 1)
            if index not in self.taken:
                self.taken.add(index)
                return index

    def chassis(self) -> int:
        return self._draw(self.layout.chassis)

    def port(self, position: int, ifindex: int) -> int:
        return self._draw(self.layout.port(position, ifindex))

    def module(self, position: int, ifindex: int) -> int:
        return self._draw(self.layout.module(position, ifindex))

    def sensor(self, module: int, quantity: str, lane: int | None) -> int:
        return self._draw(self.layout.sensor(module, quantity, lane))
