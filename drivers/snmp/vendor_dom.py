"""Port optics from vendors' MIBs: sensor thresholds beside ENTITY-SENSOR-MIB, and whole
transceiver DOM tables.

Each vendor table is declared here column by column from the vendor's published MIB
(the text is the vendor's and this repository does not carry it); the decoding rules
(units, the value that means "not available", lane numbering) are written once per
table below.

Threshold tables (read with :mod:`drivers.snmp.entity`, by entPhysicalIndex):

- ARISTA-ENTITY-SENSOR-MIB ``aristaEntSensorThresholdTable`` (1.3.6.1.4.1.30065.3.12.1.1):
  columns 1-4 low warning, low critical, high warning, high critical, in the sensor's
  own encoding; -1,000,000,000 and +1,000,000,000 mean none is set;
- CISCO-ENTITY-SENSOR-EXT-MIB ``ceSensorExtThresholdTable`` (1.3.6.1.4.1.9.9.745.1.1),
  a row per threshold (INDEX entPhysicalIndex, a number): severity (minor 10: a warning;
  major 20, critical 30: an alarm), relation (lessThan 1, lessOrEqual 2: a low
  threshold; greaterThan 3, greaterOrEqual 4: a high one; the rest no level), value.

DOM tables (each read whole, one reading per surface):

- ``hh3c``: HH3C-TRANSCEIVER-INFO-MIB, ``hh3cTransceiverInfoTable`` (...25506.2.70.1.1,
  INDEX ifIndex) and ``hh3cTransceiverChannelTable`` (...70.1.2, INDEX ifIndex, channel
  from 1). Powers in 0.01 dBm, temperature in °C, voltage in 0.01 V, bias in 0.01 mA;
  thresholds in 0.001 °C, 0.0001 V, µA, and power in 0.01 dBm (the newer columns 52-59)
  or, without those, in 0.1 µW (30-37). 2,147,483,647 is "not available". The channel
  rows give the lanes; a module without them is one lane of its own values.
- ``juniper``: JUNIPER-DOM-MIB, ``jnxDomCurrentTable`` (...2636.3.60.1.1.1, INDEX
  ifIndex) and ``jnxDomModuleLaneTable`` (...60.1.2.1, INDEX ifIndex, lane from **0**).
  Powers 0.01 dBm, bias 0.001 mA, voltage 0.001 V, temperature °C; thresholds in the
  same units, the lanes sharing the module's.
- ``huawei``: HUAWEI-ENTITY-EXTENT-MIB ``hwOpticalModuleInfoTable``
  (...2011.5.25.31.1.1.3, INDEX entPhysicalIndex, joined to the port through ENTITY-MIB
  as :mod:`drivers.snmp.entity` joins sensors). Temperature °C, voltage mV, bias µA,
  powers 0.01 dBm; per lane, comma-separated strings of Rx and Tx power and of bias
  (mA); 2,147,483,647 (and -1 for a power) "not available".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drivers.optics.readings import (
    NO_LIGHT_DBM,
    LaneOptics,
    OpticsReading,
    PortOptics,
    Thresholds,
    dbm,
)
from drivers.snmp import mibs
from drivers.snmp.entity import EntityWalk
from drivers.snmp.mibs import Column, MibTable, Oid, declared_table, index_object
from drivers.snmp.session import Segment, SnmpSession, VarBind

NOT_AVAILABLE = 2147483647
NO_THRESHOLD = 1_000_000_000  # Arista: ±this where no threshold is set
_INT = "Integer32"
_ENTITY_INDEX = ("ENTITY-MIB", "entPhysicalIndex")
_IF_INDEX = ("IF-MIB", "ifIndex")


def _table(module: str, name: str, oid: Oid, index: Sequence[Any],
           columns: Mapping[int, str], *, text: Sequence[int] = ()) -> MibTable:
    return declared_table(module, name, oid, index, [
        Column(number, column, "OCTET STRING" if number in text else _INT)
        for number, column in columns.items()])


# ---- threshold tables ---------------------------------------------------------------------

ARISTA_THRESHOLDS = _table(
    "ARISTA-ENTITY-SENSOR-MIB", "aristaEntSensorThresholdTable",
    (1, 3, 6, 1, 4, 1, 30065, 3, 12, 1, 1), [mibs.mib_object(*_ENTITY_INDEX)],
    {1: "low_warning", 2: "low_alarm", 3: "high_warning", 4: "high_alarm"})
"""Columns named by the level they hold (aristaEntSensorThreshold{LowWarning,
LowCritical, HighWarning, HighCritical})."""

_CISCO_ENTRY = (1, 3, 6, 1, 4, 1, 9, 9, 745, 1, 1, 1)
CISCO_THRESHOLDS = _table(
    "CISCO-ENTITY-SENSOR-EXT-MIB", "ceSensorExtThresholdTable", _CISCO_ENTRY[:-1],
    [mibs.mib_object(*_ENTITY_INDEX),
     index_object("CISCO-ENTITY-SENSOR-EXT-MIB", "ceSensorExtThresholdIndex",
                  (*_CISCO_ENTRY, 1))],
    {2: "severity", 3: "relation", 4: "value"})
CISCO_WARNING = frozenset({10})  # minor
CISCO_ALARM = frozenset({20, 30})  # major, critical
CISCO_LOW = frozenset({1, 2})  # lessThan, lessOrEqual
CISCO_HIGH = frozenset({3, 4})  # greaterThan, greaterOrEqual

THRESHOLD_TABLES = {"arista": ARISTA_THRESHOLDS, "cisco": CISCO_THRESHOLDS}


def threshold_roots() -> list[Oid]:
    """Every threshold table's columns: walked beside the entity tables (an agent without
    one ends its walk at once)."""
    return [column.oid for table in THRESHOLD_TABLES.values() for column in table.columns]


def apply_thresholds(found: EntityWalk, walked: Sequence[tuple[Oid, Sequence[VarBind]]]
                     ) -> None:
    """Put the threshold tables' rows in ``found.thresholds``, per sensor and level (raw)."""
    cisco: dict[tuple[int, int], dict[str, int]] = {}
    for root, var_binds in walked:
        for name, table in THRESHOLD_TABLES.items():
            if root[:len(table.oid)] != table.oid:
                continue
            for oid, value in var_binds:
                parsed = table.parse_instance(oid)
                number = _integer(value)
                if parsed is None or number is None:
                    found.drop("threshold")
                    continue
                column, index = parsed
                if name == "arista":
                    if abs(number) < NO_THRESHOLD:
                        found.thresholds.setdefault(index[0], {})[column.name] = number
                else:
                    cisco.setdefault((index[0], index[1]), {})[column.name] = number
    for (sensor, _), row in sorted(cisco.items()):
        level = _cisco_level(row)
        if level is None:
            found.drop("threshold")
            continue
        found.thresholds.setdefault(sensor, {}).setdefault(level, row["value"])


def _cisco_level(row: Mapping[str, int]) -> str | None:
    if "value" not in row:
        return None
    side = ("low" if row.get("relation") in CISCO_LOW else
            "high" if row.get("relation") in CISCO_HIGH else None)
    kind = ("warning" if row.get("severity") in CISCO_WARNING else
            "alarm" if row.get("severity") in CISCO_ALARM else None)
    return None if side is None or kind is None else f"{side}_{kind}"


def _integer(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# ---- DOM tables ---------------------------------------------------------------------------

H3C = "HH3C-TRANSCEIVER-INFO-MIB"
H3C_INFO = _table(H3C, "hh3cTransceiverInfoTable", (1, 3, 6, 1, 4, 1, 25506, 2, 70, 1, 1),
                  [mibs.mib_object(*_IF_INDEX)], {
    9: "tx_power", 12: "rx_power", 15: "temperature", 16: "voltage", 17: "bias",
    18: "temp_high_alarm", 19: "temp_low_alarm", 20: "temp_high_warning",
    21: "temp_low_warning", 22: "vcc_high_alarm", 23: "vcc_low_alarm",
    24: "vcc_high_warning", 25: "vcc_low_warning", 26: "bias_high_alarm",
    27: "bias_low_alarm", 28: "bias_high_warning", 29: "bias_low_warning",
    30: "tx_uw_high_alarm", 31: "tx_uw_low_alarm", 32: "tx_uw_high_warning",
    33: "tx_uw_low_warning", 34: "rx_uw_high_alarm", 35: "rx_uw_low_alarm",
    36: "rx_uw_high_warning", 37: "rx_uw_low_warning",
    52: "tx_high_alarm", 53: "tx_low_alarm", 54: "tx_high_warning", 55: "tx_low_warning",
    56: "rx_high_alarm", 57: "rx_low_alarm", 58: "rx_high_warning", 59: "rx_low_warning"})
_H3C_CHANNEL_OID = (1, 3, 6, 1, 4, 1, 25506, 2, 70, 1, 2)
H3C_CHANNELS = _table(H3C, "hh3cTransceiverChannelTable", _H3C_CHANNEL_OID,
                      [mibs.mib_object(*_IF_INDEX),
                       index_object(H3C, "hh3cTransceiverChannelIndex",
                                    (*_H3C_CHANNEL_OID, 1, 1))],
                      {2: "tx_power", 3: "rx_power", 5: "bias"})

JUNIPER = "JUNIPER-DOM-MIB"
JUNIPER_CURRENT = _table(JUNIPER, "jnxDomCurrentTable", (1, 3, 6, 1, 4, 1, 2636, 3, 60, 1, 1, 1),
                         [mibs.mib_object(*_IF_INDEX)], {
    5: "rx_power", 6: "bias", 7: "tx_power", 8: "temperature",
    9: "rx_high_alarm", 10: "rx_low_alarm", 11: "rx_high_warning", 12: "rx_low_warning",
    13: "bias_high_alarm", 14: "bias_low_alarm", 15: "bias_high_warning",
    16: "bias_low_warning", 17: "tx_high_alarm", 18: "tx_low_alarm",
    19: "tx_high_warning", 20: "tx_low_warning", 21: "temp_high_alarm",
    22: "temp_low_alarm", 23: "temp_high_warning", 24: "temp_low_warning",
    25: "voltage", 26: "vcc_high_alarm", 27: "vcc_low_alarm", 28: "vcc_high_warning",
    29: "vcc_low_warning", 30: "lane_count"})
_JUNIPER_LANE_OID = (1, 3, 6, 1, 4, 1, 2636, 3, 60, 1, 2, 1)
JUNIPER_LANES = _table(JUNIPER, "jnxDomModuleLaneTable", _JUNIPER_LANE_OID,
                       [mibs.mib_object(*_IF_INDEX),
                        index_object(JUNIPER, "jnxDomLaneIndex", (*_JUNIPER_LANE_OID, 1, 1))],
                       {6: "rx_power", 7: "bias", 8: "tx_power"})

HUAWEI = "HUAWEI-ENTITY-EXTENT-MIB"
HUAWEI_OPTICS = _table(HUAWEI, "hwOpticalModuleInfoTable",
                       (1, 3, 6, 1, 4, 1, 2011, 5, 25, 31, 1, 1, 3),
                       [mibs.mib_object(*_ENTITY_INDEX)], {
    5: "temperature", 6: "voltage", 7: "bias", 8: "rx_power", 9: "tx_power",
    13: "rx_low_alarm", 14: "rx_high_alarm", 15: "tx_low_alarm", 16: "tx_high_alarm",
    20: "rx_low_warning", 21: "rx_high_warning", 22: "tx_low_warning",
    23: "tx_high_warning", 31: "lane_bias", 32: "lane_rx_power", 33: "lane_tx_power",
    50: "temp_low_alarm", 51: "temp_high_alarm", 52: "vcc_low_alarm", 53: "vcc_high_alarm",
    54: "bias_low_alarm", 55: "bias_high_alarm"}, text=(31, 32, 33))

DOM_TABLES: Mapping[str, tuple[MibTable, ...]] = {
    "hh3c": (H3C_INFO, H3C_CHANNELS), "juniper": (JUNIPER_CURRENT, JUNIPER_LANES),
    "huawei": (HUAWEI_OPTICS,)}
"""The tables each DOM surface reads, the first its module table."""


@dataclass(frozen=True)
class _Units:
    """How a DOM table writes each quantity: a raw integer times ``factor`` is the
    quantity in msoctl's unit (dBm, mA, °C, V)."""

    power: float
    bias: float
    temperature: float
    voltage: float
    threshold_temperature: float
    threshold_voltage: float
    threshold_bias: float


H3C_UNITS = _Units(power=0.01, bias=0.01, temperature=1.0, voltage=0.01,
                   threshold_temperature=0.001, threshold_voltage=0.0001, threshold_bias=0.001)
JUNIPER_UNITS = _Units(power=0.01, bias=0.001, temperature=1.0, voltage=0.001,
                       threshold_temperature=1.0, threshold_voltage=0.001, threshold_bias=0.001)
HUAWEI_UNITS = _Units(power=0.01, bias=0.001, temperature=1.0, voltage=0.001,
                      threshold_temperature=1.0, threshold_voltage=0.001, threshold_bias=0.001)


async def walk_dom(session: SnmpSession, surface: str, *, extra: Sequence[Oid] = ()
                   ) -> dict[Oid, list[VarBind]]:
    """Every column of ``surface``'s tables (and the roots ``extra``), one walk each."""
    roots = [column.oid for table in DOM_TABLES[surface] for column in table.columns]
    results, _ = await session.walk_segments([Segment(root) for root in (*roots, *extra)],
                                              concurrency=2)
    return {result.segment.root: result.values for result in results}


def dom_rows(table: MibTable, walked: Mapping[Oid, Sequence[VarBind]],
             dropped: dict[str, int]) -> dict[tuple[int, ...], dict[str, Any]]:
    """``table``'s rows by index, each column by its name here (raw values)."""
    rows: dict[tuple[int, ...], dict[str, Any]] = {}
    for column in table.columns:
        for oid, value in walked.get(column.oid, ()):
            parsed = table.parse_instance(oid)
            if parsed is None:
                _count(dropped, "value")
                continue
            if column.base_type == "OCTET STRING":
                raw: Any = bytes(value.asOctets()).decode("ascii", errors="replace") \
                    if hasattr(value, "asOctets") else None
            else:
                raw = _integer(value)
            if raw is None:
                _count(dropped, "not_a_number")
                continue
            rows.setdefault(parsed[1], {})[column.name] = raw
    return rows


def _count(dropped: dict[str, int], reason: str) -> None:
    dropped[reason] = dropped.get(reason, 0) + 1


def _value(row: Mapping[str, Any], key: str, factor: float, *, power: bool = False
           ) -> float | None:
    raw = row.get(key)
    if not isinstance(raw, int) or raw == NOT_AVAILABLE or (power and raw == -1):
        return None
    value = raw * factor
    return dbm(value) if power else value


def _levels(row: Mapping[str, Any], prefix: str, factor: float, *, power: bool = False,
            zero_is_none: bool = False) -> Thresholds | None:
    """A quantity's four thresholds; with ``zero_is_none``, four zeros are none set (how
    H3C's and Juniper's agents say a module has no thresholds), while one zero among
    others is a threshold at 0."""
    raws = {level: row.get(f"{prefix}_{level}")
            for level in ("low_alarm", "low_warning", "high_warning", "high_alarm")}
    if zero_is_none and all(raw == 0 for raw in raws.values()):
        return None
    levels = {level: dbm(raw * factor) if power else raw * factor
              for level, raw in raws.items() if isinstance(raw, int) and raw != NOT_AVAILABLE}
    return Thresholds(**levels) if levels else None


def _thresholds(row: Mapping[str, Any], units: _Units, *, zero_is_none: bool
                ) -> dict[str, Thresholds]:
    found = {
        "temperature_celsius": _levels(row, "temp", units.threshold_temperature,
                                       zero_is_none=zero_is_none),
        "supply_voltage_volts": _levels(row, "vcc", units.threshold_voltage,
                                        zero_is_none=zero_is_none),
        "tx_bias_ma": _levels(row, "bias", units.threshold_bias, zero_is_none=zero_is_none),
        "tx_power_dbm": _levels(row, "tx", units.power, power=True, zero_is_none=zero_is_none),
        "rx_power_dbm": _levels(row, "rx", units.power, power=True, zero_is_none=zero_is_none),
    }
    return {quantity: levels for quantity, levels in found.items() if levels is not None}


def _microwatt_levels(row: Mapping[str, Any], prefix: str) -> Thresholds | None:
    """H3C's older power thresholds, in 0.1 µW, as dBm."""
    levels = {}
    for level in ("low_alarm", "low_warning", "high_warning", "high_alarm"):
        raw = row.get(f"{prefix}_uw_{level}")
        if isinstance(raw, int) and raw not in (0, NOT_AVAILABLE):
            levels[level] = dbm(10.0 * math.log10(raw / 10_000)) if raw > 0 else NO_LIGHT_DBM
    return Thresholds(**levels) if levels else None


def h3c_reading(walked: Mapping[Oid, Sequence[VarBind]], device: str,
                if_names: Mapping[int, str]) -> OpticsReading:
    dropped: dict[str, int] = {}
    modules = dom_rows(H3C_INFO, walked, dropped)
    channels = dom_rows(H3C_CHANNELS, walked, dropped)
    ports = []
    for (if_index,), row in sorted(modules.items()):
        thresholds = _thresholds(row, H3C_UNITS, zero_is_none=True)
        for quantity, prefix in (("tx_power_dbm", "tx"), ("rx_power_dbm", "rx")):
            if quantity not in thresholds:
                older = _microwatt_levels(row, prefix)
                if older is not None:
                    thresholds[quantity] = older
        ports.append(PortOptics(if_index, if_names.get(if_index),
                                temperature_celsius=_value(row, "temperature", 1.0),
                                supply_voltage_volts=_value(row, "voltage", 0.01),
                                lanes=_lanes(row, channels, if_index, H3C_UNITS, first=1),
                                thresholds=thresholds))
    return OpticsReading(device, "hh3c", ports=tuple(ports), dropped=dropped)


def _lanes(module: Mapping[str, Any], lane_rows: Mapping[tuple[int, ...], Mapping[str, Any]],
           if_index: int, units: _Units, *, first: int) -> tuple[LaneOptics, ...]:
    """A module's lanes from its table's rows (lanes numbered from ``first`` there, from 1
    here), or, without any, one lane of the module's own values."""
    def lane(number: int, values: Mapping[str, Any]) -> LaneOptics:
        return LaneOptics(number,
                          tx_power_dbm=_value(values, "tx_power", units.power, power=True),
                          rx_power_dbm=_value(values, "rx_power", units.power, power=True),
                          tx_bias_ma=_value(values, "bias", units.bias))
    found = tuple(lane(number - first + 1, values)
                  for (port, number), values in sorted(lane_rows.items()) if port == if_index)
    return found or (lane(1, module),)


def juniper_reading(walked: Mapping[Oid, Sequence[VarBind]], device: str,
                    if_names: Mapping[int, str]) -> OpticsReading:
    dropped: dict[str, int] = {}
    modules = dom_rows(JUNIPER_CURRENT, walked, dropped)
    lane_rows = dom_rows(JUNIPER_LANES, walked, dropped)
    ports = []
    for (if_index,), row in sorted(modules.items()):
        ports.append(PortOptics(if_index, if_names.get(if_index),
                                temperature_celsius=_value(row, "temperature", 1.0),
                                supply_voltage_volts=_value(row, "voltage", 0.001),
                                # JUNIPER-DOM-MIB counts lanes from 0
                                lanes=_lanes(row, lane_rows, if_index, JUNIPER_UNITS, first=0),
                                thresholds=_thresholds(row, JUNIPER_UNITS, zero_is_none=True)))
    return OpticsReading(device, "juniper", ports=tuple(ports), dropped=dropped)


def huawei_reading(walked: Mapping[Oid, Sequence[VarBind]], device: str,
                   found: EntityWalk) -> OpticsReading:
    """Huawei's rows joined to ports through ``found`` (ENTITY-MIB's tables, walked)."""
    dropped: dict[str, int] = dict(found.dropped)
    modules = dom_rows(HUAWEI_OPTICS, walked, dropped)
    ports = []
    for (entity,), row in sorted(modules.items()):
        if_index = found.interface_of(entity)
        if if_index is None:
            _count(dropped, "no_port")
            continue
        rx = _split(row.get("lane_rx_power"), dropped)
        tx = _split(row.get("lane_tx_power"), dropped)
        bias = _split(row.get("lane_bias"), dropped)
        count = max(len(rx), len(tx), len(bias))
        if count:
            lanes = [LaneOptics(lane + 1,
                                tx_power_dbm=_lane_dbm(tx, lane, row.get("lane_tx_power")),
                                rx_power_dbm=_lane_dbm(rx, lane, row.get("lane_rx_power")),
                                tx_bias_ma=bias[lane] if lane < len(bias) else None)
                     for lane in range(count)]
        else:
            lanes = [LaneOptics(1, tx_power_dbm=_value(row, "tx_power", 0.01, power=True),
                                rx_power_dbm=_value(row, "rx_power", 0.01, power=True),
                                tx_bias_ma=_value(row, "bias", 0.001))]
        ports.append(PortOptics(if_index, found.if_names.get(if_index),
                                temperature_celsius=_value(row, "temperature", 1.0),
                                supply_voltage_volts=_value(row, "voltage", 0.001),
                                lanes=tuple(lanes),
                                thresholds=_thresholds(row, HUAWEI_UNITS, zero_is_none=False)))
    return OpticsReading(device, "huawei", ports=tuple(sorted(ports, key=lambda p: p.port)),
                         dropped=dropped)


def _split(text: Any, dropped: dict[str, int]) -> list[float | None]:
    """A comma-separated list of decimals; an item that is no number is ``None``."""
    if not isinstance(text, str) or not text.strip():
        return []
    values: list[float | None] = []
    for item in text.split(","):
        try:
            number = float(item)
        except ValueError:
            _count(dropped, "not_a_number")
            values.append(None)
            continue
        values.append(number if math.isfinite(number) else None)
    return values


def _lane_dbm(values: Sequence[float | None], lane: int, text: Any) -> float | None:
    """A lane's power from Huawei's list, which agents write in dBm (the MIB's newer
    texts: ``-1.21,-1.51``) or in hundredths of a dBm (its older texts: ``-121,-151``):
    hundredths where some lane reads beyond any optical power in dBm, or where no item
    has a decimal point."""
    if lane >= len(values) or values[lane] is None:
        return None
    known = [value for value in values if value is not None]
    hundredths = any(abs(value) > 60.0 for value in known) or "." not in str(text)
    value = values[lane]
    assert value is not None
    return dbm(value / 100.0 if hundredths else value)
