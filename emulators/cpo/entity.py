"""The switch's port optics as ENTITY-MIB (RFC 4133) and ENTITY-SENSOR-MIB (RFC 3433) rows.

Each port's optics (on co-packaged optics: the engine lanes the port uses) is one
physical entity; its sensors are entities of class ``sensor`` inside it: the
temperature and supply voltage of the engine that carries the port's lanes, and per
optical lane the transmit power, the receive power and the modulator's bias current.

Real agents build this tree, number it and tie it to the interfaces each in its own
way; :data:`LAYOUTS` restates those this agent can pass for, from what their public
sources show:

- ``sonic``: SONiC's snmp agent. The transceiver is an entity of class ``port``,
  1,000,000,000 + ifIndex × 100, in the chassis (1), named as the interface (ifName),
  described ``<type> for <port>``; its sensors add 10 (temperature), 20 + L (Tx power
  of lane L), 30 + L (Rx power), 40 + L (bias), 50 (voltage), each named and described
  ``DOM <what> Sensor for <port>[/<lane>]``. Power in watts, scale milli, 4 decimals
  (below 0.0001 mW a receiver reads 0: no light); temperature 6 decimals; voltage 4;
  bias in amperes, scale milli, 3 decimals. No entAliasMappingTable, no thresholds, and
  of entPhySensorTable only its first five columns.
- ``arista``: EOS. ``1003PP000`` the transceiver slot (a container, PP the port),
  ``1003PP100`` the transceiver in it, ``1003PP201`` and ``...202`` its temperature and
  voltage sensors, ``1003PP2L0`` a container per lane L, holding ``...2L1``, ``...2L2``,
  ``...2L3``: bias, Tx and Rx power. entPhysicalName is empty; the descriptions say
  ``Xcvr for <port>`` and ``DOM <what> Sensor for <port>[/<lane>]``. Power in watts,
  milli, 4 decimals; temperature 1 decimal; voltage 2; bias milliamperes, 2 decimals.
  Thresholds in ``aristaEntSensorThresholdTable`` (:mod:`.vendor`). At most 99 ports and
  9 lanes, as the numbering allows.
- ``cisco``: the port an entity of class ``port`` named as the interface, the
  transceiver a module in it, its sensors named ``<port> Lane L Transceiver Receive
  Power Sensor`` and so on; the port tied to its ifIndex by entAliasMappingTable;
  power in dBm with Cisco's type 14, 2 decimals; thresholds in
  ``ceSensorExtThresholdTable`` (:mod:`.vendor`).
- ``shuffled``: the ``cisco`` tree with watts for power, every index drawn at random
  (seeded) from 1..2^31-1: a numbering no manager has seen.

Values (RFC 3433 entPhySensorValue): the measurement in the unit of
entPhySensorType, divided by the scale's multiplier, with entPhySensorPrecision
decimals: ``round(value / 10^(3 × (scale - 9)) × 10^precision)``, held to
±1,000,000,000. A dark receiver (``-inf`` dBm in the model) reads 0 W where the unit
is watts, and :data:`DBM_FLOOR` where it is dBm (an agent cannot send ``-inf``). A
sensor of a failed engine is ``nonoperational`` with no value (RFC 3433: the agent
believes the sensor is broken).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from emulators.cpo.datasheet import THRESHOLDS
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

DATASHEET_KEYS = {"temperature": "temperature_celsius", "voltage": "supply_voltage_volts",
                  "tx_power": "tx_power_dbm", "rx_power": "rx_power_dbm", "bias": "tx_bias_ma"}
"""Each sensor quantity's thresholds in the datasheet (:mod:`.datasheet`)."""


@dataclass(frozen=True)
class SensorForm:
    """How a layout serves a quantity: entPhySensorType (a number), scale, precision,
    and entPhySensorUnitsDisplay (``None``: the agent leaves that column out)."""

    sensor_type: int
    scale: str
    precision: int
    units: str | None = None


def _forms(*, temperature: int, voltage: int, bias: int, power: SensorForm,
           units: bool) -> Mapping[str, SensorForm]:
    return {
        "temperature": SensorForm(CELSIUS, "units", temperature, "C" if units else None),
        "voltage": SensorForm(VOLTS_DC, "units", voltage, "V" if units else None),
        "tx_power": power, "rx_power": power,
        "bias": SensorForm(AMPERES, "milli", bias, "mA" if units else None),
    }


WATTS_MILLI = SensorForm(WATTS, "milli", 4, "mW")
FORMS: Mapping[str, Mapping[str, SensorForm]] = {
    "sonic": _forms(temperature=6, voltage=4, bias=3, power=SensorForm(WATTS, "milli", 4),
                    units=False),
    "arista": _forms(temperature=1, voltage=2, bias=2, power=WATTS_MILLI, units=True),
    "cisco": _forms(temperature=1, voltage=2, bias=2,
                    power=SensorForm(CISCO_DBM, "units", 2, "dBm"), units=True),
    "shuffled": _forms(temperature=2, voltage=3, bias=3, power=WATTS_MILLI, units=True),
}
THRESHOLD_TABLES = {"arista": "arista", "cisco": "cisco"}
"""Which vendor threshold table each layout's agent serves (:mod:`.vendor`)."""
LAYOUT_NAMES = tuple(FORMS)
MALFORMATIONS = ("type", "orphan")
"""What the ``malformed_sensors`` fault can spoil (:class:`EntityTables.malformed`)."""
UNDEFINED_SENSOR_TYPE = 99
WORDS = {"temperature": "Temperature", "voltage": "Voltage", "tx_power": "TX Power",
         "rx_power": "RX Power", "bias": "TX Bias"}
CISCO_WORDS = {"temperature": "Temperature Sensor", "voltage": "Supply Voltage Sensor",
               "tx_power": "Transmit Power Sensor", "rx_power": "Receive Power Sensor",
               "bias": "Bias Current Sensor"}


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
    units_display: str | None
    value_timestamp: float | None
    update_rate_ms: int


IF_INDEX_OID = (1, 3, 6, 1, 2, 1, 2, 2, 1, 1)  # IF-MIB ifIndex: an alias names ifIndex.N


class EntityTables:
    """The entity rows of one agent: the tree fixed at its start, sensor values at each
    reading. ``seed`` draws the ``shuffled`` layout's indexes."""

    def __init__(self, layout: str, interfaces: Sequence[Interface], switch: str,
                 *, lanes_per_port: int, seed: int = 0):
        if layout not in LAYOUT_NAMES:
            raise ValueError(f"unknown entity layout {layout!r} (one of "
                             f"{', '.join(LAYOUT_NAMES)})")
        if layout == "arista" and (len(interfaces) > 99 or lanes_per_port > 9):
            raise ValueError("the arista layout numbers at most 99 ports of 9 lanes")
        if layout == "sonic" and lanes_per_port > 9:
            raise ValueError("the sonic layout numbers at most 9 lanes")
        if lanes_per_port > 89:
            raise ValueError("an entity layout numbers at most 89 lanes per port")
        self.layout = layout
        self.forms = FORMS[layout]
        self.threshold_table = THRESHOLD_TABLES.get(layout)
        self.lanes_per_port = lanes_per_port
        self._rng = random.Random(f"{seed}:entity") if layout == "shuffled" else None
        self._taken: set[int] = set()
        self._indexes: set[int] = set()
        self.sensor_columns = 5 if layout == "sonic" else 8
        """How many of entPhySensorTable's columns the agent serves (SONiC's: the first
        five, no units, time stamp nor update rate)."""
        self.physical_entities: list[PhysicalEntity] = []
        self.alias_mappings: list[AliasMapping] = []
        self.sensors: list[Sensor] = []
        build = {"sonic": self._sonic, "arista": self._arista}.get(layout, self._cisco)
        chassis = self._index(10 if layout == "cisco" else 1)
        self._entity(PhysicalEntity(chassis, f"msoctl emulated switch {switch}", 0, "chassis",
                                    -1, "" if layout == "arista" else "Chassis", "false",
                                    serial_num=f"EMU{seed % 10**8:08d}", mfg_name="msoctl",
                                    model_name="emulated CPO switch"))
        for position, interface in enumerate(interfaces, start=1):
            build(chassis, position, interface)
        self.by_index = {entity.index: entity for entity in self.physical_entities}
        self.malformed: frozenset[str] = frozenset()
        """Faults on the served rows: ``type`` serves the first temperature sensor with
        type :data:`UNDEFINED_SENSOR_TYPE`; ``orphan`` leaves the first Rx power sensor's
        entPhysicalTable row out (its sensor row stays)."""
        self._first = {quantity: next(sensor.index for sensor in self.sensors
                                      if sensor.quantity == quantity)
                       for quantity in ("temperature", "rx_power")} if self.sensors else {}

    def served_entities(self) -> list[PhysicalEntity]:
        """entPhysicalTable's rows as served now (less an orphaned sensor's)."""
        if "orphan" not in self.malformed:
            return self.physical_entities
        gone = self._first.get("rx_power")
        return [entity for entity in self.physical_entities if entity.index != gone]

    # ---- the layouts' trees -----------------------------------------------------------

    def _sonic(self, chassis: int, position: int, interface: Interface) -> None:
        transceiver = 1_000_000_000 + interface.index * 100
        self._entity(PhysicalEntity(
            transceiver, f"CPO 8X optical engine port for {interface.name}", chassis, "port",
            -1, interface.name, "false", mfg_name="msoctl", model_name="emulated CPO port",
            serial_num=f"OE{interface.index:08d}"))
        offsets = {"temperature": 10, "tx_power": 20, "rx_power": 30, "bias": 40,
                   "voltage": 50}
        relative = 0
        for quantity in ("temperature", "tx_power", "rx_power", "bias", "voltage"):
            for lane in self._lanes(quantity):
                relative += 1
                name = f"DOM {WORDS[quantity]} Sensor for {interface.name}" + (
                    "" if lane is None else f"/{lane}")
                self._sensor(transceiver + offsets[quantity] + (lane or 0), name, name,
                             transceiver, relative, interface, quantity, lane)

    def _arista(self, chassis: int, position: int, interface: Interface) -> None:
        base = 100_300_000 + position * 1_000
        self._entity(PhysicalEntity(base, f"Xcvr Slot {position}", chassis, "container",
                                    position, "", "false"))
        transceiver = base + 100
        self._entity(PhysicalEntity(transceiver, f"Xcvr for {interface.name}", base, "module",
                                    1, "", "true", mfg_name="msoctl",
                                    model_name="emulated CPO port",
                                    serial_num=f"OE{interface.index:08d}"))
        for relative, (quantity, last) in enumerate((("temperature", 1), ("voltage", 2)), 1):
            descr = f"DOM {WORDS[quantity]} Sensor for {interface.name}"
            self._sensor(base + 200 + last, "", descr, transceiver, relative, interface,
                         quantity, None)
        for lane in range(1, self.lanes_per_port + 1):
            container = base + 200 + 10 * lane
            self._entity(PhysicalEntity(container, f"Lane {lane - 1} for Xcvr for "
                                        f"{interface.name}", transceiver, "container",
                                        lane + 2, "", "false"))
            for relative, (quantity, last) in enumerate(
                    (("bias", 1), ("tx_power", 2), ("rx_power", 3)), 1):
                descr = f"DOM {WORDS[quantity]} Sensor for {interface.name}/{lane}"
                self._sensor(container + last, "", descr, container, relative, interface,
                             quantity, lane)

    def _cisco(self, chassis: int, position: int, interface: Interface) -> None:
        port = self._index(300_000_000 + position * 10_000)
        self._entity(PhysicalEntity(port, f"{interface.name} port", chassis, "port",
                                    position, interface.name, "false"))
        self.alias_mappings.append(AliasMapping(port, 0, (*IF_INDEX_OID, interface.index)))
        transceiver = self._index(port + 1_000)
        self._entity(PhysicalEntity(
            transceiver, f"{interface.name} Transceiver", port, "module", 1,
            f"{interface.name} Transceiver", "true", mfg_name="msoctl",
            model_name="emulated CPO port", serial_num=f"OE{interface.index:08d}"))
        relative = 0
        for quantity in QUANTITIES:
            for lane in self._lanes(quantity):
                relative += 1
                where = interface.name if lane is None else f"{interface.name} Lane {lane}"
                name = f"{where} Transceiver {CISCO_WORDS[quantity]}"
                offset = QUANTITIES.index(quantity) + 1
                index = self._index(transceiver + 100 * (lane or 0) + offset)
                self._sensor(index, name, name, transceiver, relative, interface, quantity,
                             lane)

    # ---- helpers ----------------------------------------------------------------------

    def _lanes(self, quantity: str) -> Sequence[int | None]:
        return range(1, self.lanes_per_port + 1) if quantity in PER_LANE else (None,)

    def _index(self, fallback: int) -> int:
        """``fallback``, or in the shuffled layout a fresh random index."""
        if self._rng is None:
            return fallback
        while True:
            index = self._rng.randint(1, 2**31 - 1)
            if index not in self._taken:
                self._taken.add(index)
                return index

    def _entity(self, entity: PhysicalEntity) -> None:
        if entity.index in self._indexes:
            raise ValueError(f"entity layout {self.layout!r} gives two entities index "
                             f"{entity.index}")
        self._indexes.add(entity.index)
        self.physical_entities.append(entity)

    def _sensor(self, index: int, name: str, descr: str, container: int, relative: int,
                interface: Interface, quantity: str, lane: int | None) -> None:
        self._entity(PhysicalEntity(index, descr, container, "sensor", relative, name,
                                    "false"))
        self.sensors.append(Sensor(index, interface.index, quantity, lane,
                                   self.forms[quantity]))

    def sensor_rows(self, reading: TelemetryReading, at: float) -> list[SensorRow]:
        """Every sensor's row at ``reading`` (``at``: its device time)."""
        lanes = {(lane.port, lane.lane): lane for lane in reading.optical_lanes}
        engines = {engine.index: engine for engine in reading.engines}
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
            sensor_type = sensor.form.sensor_type
            if "type" in self.malformed and sensor.index == self._first.get("temperature"):
                sensor_type = UNDEFINED_SENSOR_TYPE
            rows.append(SensorRow(
                sensor.index, sensor_type, sensor.form.scale,
                sensor.form.precision,
                None if measured is None else sensor_value(sensor.form, sensor.quantity,
                                                           measured),
                status, sensor.form.units, at, UPDATE_RATE_MS))
        return rows



@functools.cache
def threshold_values(sensor: Sensor) -> tuple[int, int, int, int]:
    """The sensor's (low alarm, low warning, high warning, high alarm) in its own
    encoding (entPhySensorValue's scale and precision). Fixed for the sensor's life, so
    worked out once, not at every snapshot the vendor tables serve."""
    low_alarm, low_warning, high_warning, high_alarm = \
        THRESHOLDS[DATASHEET_KEYS[sensor.quantity]].levels()
    return (sensor_value(sensor.form, sensor.quantity, low_alarm),
            sensor_value(sensor.form, sensor.quantity, low_warning),
            sensor_value(sensor.form, sensor.quantity, high_warning),
            sensor_value(sensor.form, sensor.quantity, high_alarm))


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
