"""Port optics from ENTITY-SENSOR-MIB (RFC 3433), joined to ports through ENTITY-MIB.

What the standard says, applied as it says it:

- A sensor is an entPhysicalTable row of class ``sensor`` with an entPhySensorTable row
  at the same entPhysicalIndex. Its value is ``entPhySensorValue × 10^-precision`` in
  the unit of ``entPhySensorType``, times the ``entPhySensorScale`` multiplier
  (milli: 10^-3 ...). Watts become dBm (0 W: no light, which reads
  :data:`~drivers.optics.readings.NO_LIGHT_DBM`); amperes become mA. Cisco's agents
  type a power in dBm with the value 14, which the RFC does not define; an agent that
  types it ``other`` says dBm in entPhySensorUnitsDisplay. ``unavailable`` and
  ``nonoperational`` give no value.
- A sensor belongs to the port whose entity contains it: entPhysicalContainedIn is
  followed upwards to the first entity that entAliasMappingTable maps to an
  ``ifIndex`` instance (RFC 4133 3.1.2), or, where an agent has no alias mappings, whose
  entPhysicalName is the name of an interface (ifName, as SONiC names its transceivers),
  or whose entPhysicalDescr ends ``for <ifName>`` (as EOS, which leaves names empty,
  describes them). Nothing is inferred from how an agent numbers its entities.
- What a sensor measures: temperature (celsius), supply voltage (voltsDC), bias
  (amperes) from the type; a power's direction, and the lane, from the sensor's
  entPhysicalName or entPhysicalDescr (``Rx``/``receive``, ``Tx``/``transmit``;
  ``lane 2``, ``channel 2``, ``Ethernet1/2``), as every agent names them.

Bad rows never fail the reading: each is dropped and counted by reason
(:data:`DROP_REASONS`) in :attr:`OpticsReading.dropped`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from drivers.errors import ProtocolError
from drivers.optics.readings import (
    LaneOptics,
    OpticsReading,
    PortOptics,
    Thresholds,
    milliwatts_to_dbm,
)
from drivers.snmp import mibs
from drivers.snmp.collector import decode
from drivers.snmp.mibs import MibTable, Oid
from drivers.snmp.session import Segment, SnmpSession, VarBind

ENTITY = "ENTITY-MIB"
SENSOR = "ENTITY-SENSOR-MIB"
PHYSICAL_COLUMNS = ("entPhysicalDescr", "entPhysicalContainedIn", "entPhysicalClass",
                    "entPhysicalName")
SENSOR_COLUMNS = ("entPhySensorType", "entPhySensorScale", "entPhySensorPrecision",
                  "entPhySensorValue", "entPhySensorOperStatus", "entPhySensorUnitsDisplay")
IF_INDEX = ("IF-MIB", "ifIndex")
IF_NAME = ("IF-MIB", "ifXTable", "ifName")

CELSIUS, VOLTS_DC, AMPERES, WATTS, OTHER, CISCO_DBM = 8, 4, 5, 6, 1, 14
SCALE_EXPONENTS = {name: 3 * (number - 9) for name, number in (
    ("yocto", 1), ("zepto", 2), ("atto", 3), ("femto", 4), ("pico", 5), ("nano", 6),
    ("micro", 7), ("milli", 8), ("units", 9), ("kilo", 10), ("mega", 11), ("giga", 12),
    ("tera", 13), ("exa", 14), ("peta", 15), ("zetta", 16), ("yotta", 17))}
"""EntitySensorDataScale: the power of ten each name multiplies by (RFC 3433)."""
RFC_SENSOR_TYPES = range(1, 13)
MAX_CONTAINMENT_DEPTH = 16
DROP_REASONS = ("sensor_type", "precision", "value", "not_a_number", "status",
                "partial_entity_table", "no_port", "not_optics", "threshold")
"""Why a sensor row (or a threshold) was dropped:

- ``sensor_type``: a type the RFC does not define (and not Cisco's dBm);
- ``precision``: entPhySensorPrecision outside -8..9, or a scale the RFC does not name;
- ``value``: a value outside EntitySensorValue's range or the wrong SMI type;
- ``not_a_number``: a measurement that does not come out a finite number;
- ``status``: unavailable or nonoperational (no value, which is not an error, counted
  so that a dashboard sees sensors that are out);
- ``partial_entity_table``: a sensor with no entPhysicalTable row, or a containment
  chain that breaks (an entity that names a container the table does not have);
- ``no_port``: a chain that reaches the top without an interface;
- ``not_optics``: a sensor of the port that is none of the five quantities (a fan's,
  say);
- ``threshold``: a vendor threshold row that does not fit its sensor.
"""

_RX = re.compile(r"\b(rx|receive[rd]?|input)\b", re.IGNORECASE)
_TX = re.compile(r"\b(tx|transmit(ter|ted)?|output)\b", re.IGNORECASE)
_LANE = re.compile(r"\b(?:lane|channel|ch)\s*(\d+)\b|/(\d+)(?:\s|$)", re.IGNORECASE)
_DBM = re.compile(r"\bdbm\b", re.IGNORECASE)
_FOR_PORT = re.compile(r"\bfor (\S+)$")


@dataclass
class EntityWalk:
    """What one walk of the entity surface read, by entPhysicalIndex."""

    physical: dict[int, dict[str, Any]] = field(default_factory=dict)
    sensors: dict[int, dict[str, Any]] = field(default_factory=dict)
    aliases: dict[int, int] = field(default_factory=dict)
    """entPhysicalIndex -> ifIndex, from entAliasMappingTable rows naming ifIndex.N."""
    if_names: dict[int, str] = field(default_factory=dict)
    thresholds: dict[int, dict[str, float]] = field(default_factory=dict)
    """Per sensor, vendor thresholds by level, in the sensor's raw encoding (entPhySensorValue)."""
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    @cached_property
    def _interfaces_by_name(self) -> dict[str, int]:
        """ifName -> ifIndex (once the walk is read: the join's lookups)."""
        return {name: number for number, name in self.if_names.items()}

    def interface_of(self, index: int, *, by_name: bool = True) -> int | None:
        """The ifIndex of the interface entity ``index`` itself stands for: the one
        entAliasMappingTable maps it to, or (``by_name``) the one its entPhysicalName
        is, or its entPhysicalDescr ends ``for`` (``Xcvr for Ethernet1``); ``None``."""
        if index in self.aliases:
            return self.aliases[index]
        entity = self.physical.get(index)
        if entity is None or not by_name:
            return None
        names = self._interfaces_by_name
        name = str(entity.get("entPhysicalName") or "")
        if name in names:
            return names[name]
        match = _FOR_PORT.search(str(entity.get("entPhysicalDescr") or ""))
        return names.get(match.group(1)) if match else None


@dataclass(frozen=True)
class _Measured:
    port: int
    quantity: str
    lane: int | None
    value: float | None
    raw_thresholds: Mapping[str, float]
    scale_of: tuple[int, str, int, str]  # (type, scale, precision, units display)


async def walk(session: SnmpSession, device: str, *, extra: Sequence[Oid] = ()
               ) -> tuple[EntityWalk, list[tuple[Oid, list[VarBind]]]]:
    """Read the columns the join needs (and each root of ``extra``: vendor threshold
    columns), one GETBULK walk per column, side by side."""
    physical = mibs.table(ENTITY, "entPhysicalTable")
    aliases = mibs.table(ENTITY, "entAliasMappingTable")
    sensors = mibs.table(SENSOR, "entPhySensorTable")
    names = mibs.table(*IF_NAME[:2])
    roots = [physical.column(name).oid for name in PHYSICAL_COLUMNS]
    roots += [aliases.column("entAliasMappingIdentifier").oid]
    roots += [sensors.column(name).oid for name in SENSOR_COLUMNS]
    roots += [names.column(IF_NAME[2]).oid, *extra]
    results, _ = await session.walk_segments([Segment(root) for root in roots],
                                              concurrency=2)
    found = EntityWalk()
    by_root = {result.segment.root: result.values for result in results}
    _rows(physical, [by_root[root] for root in roots[:4]], found.physical, found, device)
    _rows(sensors, [by_root[root] for root in roots[5:11]], found.sensors, found, device)
    if_index = mibs.oid(*IF_INDEX)
    for index, _, value in _cells(aliases, by_root[roots[4]], found, device):
        if (isinstance(value, tuple) and len(value) == len(if_index) + 1
                and value[:len(if_index)] == if_index):
            found.aliases.setdefault(index[0], value[-1])
    read_if_names(by_root[roots[11]], found, device)
    return found, [(root, by_root[root]) for root in extra]


def read_if_names(var_binds: Sequence[VarBind], found: EntityWalk, device: str) -> None:
    """ifName's walked instances into ``found.if_names``, decoded and checked as every
    column is."""
    for index, _, value in _cells(mibs.table(*IF_NAME[:2]), var_binds, found, device):
        if isinstance(value, str):
            found.if_names[index[0]] = value


def _cells(table: MibTable, var_binds: Sequence[VarBind], found: EntityWalk, device: str
           ) -> list[tuple[tuple[int, ...], str, Any]]:
    cells: list[tuple[tuple[int, ...], str, Any]] = []
    for oid, value in var_binds:
        parsed = table.parse_instance(oid)
        if parsed is None:
            found.drop("partial_entity_table")
            continue
        column, index = parsed
        try:
            cells.append((index, column.name, decode(column, value, device=device)))
        except ProtocolError:
            found.drop("precision" if column.name == "entPhySensorPrecision" else "value")
            if column.name in SENSOR_COLUMNS:
                cells.append((index, column.name, _BAD))
    return cells


_BAD = object()
"""A sensor cell that did not decode: its row is dropped whole, once."""


def _rows(table: MibTable, columns: Sequence[Sequence[VarBind]],
          into: dict[int, dict[str, Any]], found: EntityWalk, device: str) -> None:
    for var_binds in columns:
        for index, column, value in _cells(table, var_binds, found, device):
            into.setdefault(index[0], {})[column] = value


def reading(found: EntityWalk, device: str) -> OpticsReading:
    """The walk joined into port optics (see the module)."""
    ports: dict[int, dict[str, Any]] = {}
    for index, row in sorted(found.sensors.items()):
        if any(value is _BAD for value in row.values()):
            continue  # counted when it failed to decode
        measured = _measure(index, row, found)
        if measured is None:
            continue
        port = ports.setdefault(measured.port, {"lanes": {}, "thresholds": {}})
        if measured.lane is None:
            port[measured.quantity] = measured.value
        else:
            port["lanes"].setdefault(measured.lane, {})[measured.quantity] = measured.value
        if measured.raw_thresholds and measured.quantity not in port["thresholds"]:
            port["thresholds"][measured.quantity] = _thresholds(measured)
    result = []
    for number in sorted(ports):
        seen = ports[number]
        lanes = tuple(LaneOptics(lane, tx_power_dbm=values.get("tx_power_dbm"),
                                 rx_power_dbm=values.get("rx_power_dbm"),
                                 tx_bias_ma=values.get("tx_bias_ma"))
                      for lane, values in sorted(seen["lanes"].items()))
        result.append(PortOptics(number, found.if_names.get(number),
                                 temperature_celsius=seen.get("temperature_celsius"),
                                 supply_voltage_volts=seen.get("supply_voltage_volts"),
                                 lanes=lanes, thresholds=seen["thresholds"]))
    return OpticsReading(device, "entity-sensor", ports=tuple(result), dropped=found.dropped)


def _measure(index: int, row: Mapping[str, Any], found: EntityWalk) -> _Measured | None:
    entity = found.physical.get(index)
    status = row.get("entPhySensorOperStatus", "ok")
    if entity is None or "entPhySensorType" not in row or (
            status == "ok" and "entPhySensorValue" not in row):
        found.drop("partial_entity_table")
        return None
    port = _port_of(index, found)
    if port is None:
        return None
    sensor_type = _type_number(row["entPhySensorType"])
    if sensor_type is None or (sensor_type not in RFC_SENSOR_TYPES and sensor_type != CISCO_DBM):
        found.drop("sensor_type")
        return None
    label = " ".join(str(entity.get(name) or "") for name in ("entPhysicalName",
                                                               "entPhysicalDescr"))
    units = str(row.get("entPhySensorUnitsDisplay") or "")
    quantity = _quantity(sensor_type, label, units)
    if quantity is None:
        found.drop("not_optics")
        return None
    lane = _lane(label) if quantity in ("tx_power_dbm", "rx_power_dbm", "tx_bias_ma") else None
    if lane is None and quantity in ("tx_power_dbm", "rx_power_dbm", "tx_bias_ma"):
        lane = 1  # a single-lane module names no lane
    scale = str(row.get("entPhySensorScale", "units"))
    precision = row.get("entPhySensorPrecision", 0)
    if scale not in SCALE_EXPONENTS or not isinstance(precision, int) or not -8 <= precision <= 9:
        found.drop("precision")
        return None
    value: float | None = None
    if status == "ok":
        value = _convert(row["entPhySensorValue"], sensor_type, scale, precision, quantity)
        if value is None:
            found.drop("not_a_number")
            return None
    else:
        found.drop("status")
    return _Measured(port, quantity, lane, value, found.thresholds.get(index, {}),
                     (sensor_type, scale, precision, units))


def _type_number(value: Any) -> int | None:
    """entPhySensorType as a number: the decoded enumeration name back to its number, or
    the number of one the RFC does not name (``unknown(14)``)."""
    if isinstance(value, int):
        return value
    numbers = mibs.mib_object(SENSOR, "entPhySensorType").enumeration
    if value in numbers:
        return numbers[value]
    match = re.fullmatch(r"unknown\((\d+)\)", str(value))
    return int(match.group(1)) if match else None


def _quantity(sensor_type: int, label: str, units: str) -> str | None:
    if sensor_type == CELSIUS:
        return "temperature_celsius"
    if sensor_type == VOLTS_DC:
        return "supply_voltage_volts"
    if sensor_type == AMPERES:
        return "tx_bias_ma"
    power = sensor_type in (WATTS, CISCO_DBM) or (
        sensor_type == OTHER and (_DBM.search(units) is not None or "power" in label.lower()))
    if not power:
        return None
    if _RX.search(label):
        return "rx_power_dbm"
    if _TX.search(label):
        return "tx_power_dbm"
    return None


def _lane(label: str) -> int | None:
    match = _LANE.search(label)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


def _port_of(index: int, found: EntityWalk) -> int | None:
    """The ifIndex of the interface the entity ``index`` is part of (see the module)."""
    current = index
    for _ in range(MAX_CONTAINMENT_DEPTH):
        # a sensor's own name says what it measures, not which port it is
        named = found.interface_of(current, by_name=current != index)
        if named is not None:
            return named
        entity = found.physical.get(current)
        if entity is None:
            found.drop("partial_entity_table")
            return None
        parent = entity.get("entPhysicalContainedIn")
        if not isinstance(parent, int) or parent == 0:
            found.drop("no_port")
            return None
        current = parent
    found.drop("partial_entity_table")  # a loop in the containment
    return None


def sensor_units(raw: float, sensor_type: int, scale: str, precision: int) -> float:
    """entPhySensorValue ``raw`` in the unit of its type (watts, amperes, ...)."""
    return raw * math.pow(10.0, SCALE_EXPONENTS[scale] - precision)


def _convert(raw: Any, sensor_type: int, scale: str, precision: int,
             quantity: str) -> float | None:
    if not isinstance(raw, int):
        return None
    value = sensor_units(raw, sensor_type, scale, precision)
    if sensor_type == WATTS:
        value = milliwatts_to_dbm(value * 1000.0)
    elif sensor_type in (OTHER, CISCO_DBM) and quantity.endswith("_dbm"):
        value = raw * math.pow(10.0, -precision)  # dBm carry no scale
    elif sensor_type == AMPERES:
        value *= 1000.0
    return value if math.isfinite(value) else None


def _thresholds(measured: _Measured) -> Thresholds:
    sensor_type, scale, precision, _ = measured.scale_of
    levels = {level: _convert(int(raw), sensor_type, scale, precision, measured.quantity)
              for level, raw in measured.raw_thresholds.items()}
    return Thresholds(**levels)
