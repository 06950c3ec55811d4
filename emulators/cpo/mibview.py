"""What the CPO/CPC agent serves: every instance OID in order, and its value in a snapshot.

Every OID comes from the compiled MIBs (:mod:`drivers.snmp.mibs`) and which column
carries what from the collector's tables; this module says which reading attribute
holds it and encodes values as the MIB's syntax says:

- a fixed-point Integer32 (``d-N`` DISPLAY-HINT) is ``round(value × 10^N)``, held to
  the syntax's range, so a dark receiver (``-inf`` dBm) is the range's floor,
  -10000, as MsoPowerDbm says;
- MsoLog10Ber is ``round(1000 × log10(ratio))``, -18000 for a ratio below 1E-18
  or no errors at all;
- enumerations by name, BITS by the names set (MSB first, RFC 2578);
- Counter64 modulo 2^64; TimeStamp as sysUpTime at the event (0 before the
  agent started or when there was none);
- strings as UTF-8, cut to the syntax's size.

Values are raw Python values (``int``, ``bytes``, an OID tuple) tagged with the
object they belong to; the agent turns them into pysnmp types. Rows are taken from
the first reading; the model's rows do not come and go.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drivers.snmp import mibs
from drivers.snmp.collector import (
    HISTOGRAM,
    IF_NAME,
    LOG10_BER_SYNTAX,
    SYS_UP_TIME,
    THRESHOLD,
    TICKS_PER_SECOND,
)
from drivers.snmp.collector import TABLES as COLLECTED_TABLES
from drivers.snmp.mibs import MibObject, MibTable, Oid
from emulators.cpo.model import TelemetryReading

Value = int | bytes | Oid
COUNTER64_MODULUS = 2**64


@dataclass(frozen=True)
class TableBinding:
    """Which rows of a reading fill a table, how a row is indexed, and its columns."""

    module: str
    table: str
    rows: str  # the TelemetryReading attribute listing the rows
    index: Callable[[Any], tuple[int, ...]]
    columns: Mapping[str, str]  # column name -> reading attribute


# The collector's column tables (drivers/snmp/collector.py) name each column's field;
# the model's reading holds the same value under that name, except for these.
READING_ATTRIBUTES = {
    "fec_corrected_total": "fec_corrected",
    "fec_uncorrectable_total": "fec_uncorrectable",
    "discontinuity_uptime_seconds": "discontinuity_at",  # device time, served as a TimeStamp
}
ROW_INDEX: Mapping[str, Callable[[Any], tuple[int, ...]]] = {
    "engines": lambda row: (row.index,),
    "optical_lanes": lambda row: (row.port, row.lane),
    "lasers": lambda row: (row.module, row.lane),
    "electrical_lanes": lambda row: (row.port, row.lane),
}
TABLES = tuple(
    TableBinding(module, table, rows, ROW_INDEX[rows],
                 {column: READING_ATTRIBUTES.get(field, field)
                  for column, field in columns.items()})
    for rows, (module, table, columns) in COLLECTED_TABLES.items())
SYSTEM = ("SNMPv2-MIB", ("sysDescr", "sysObjectID", "sysUpTime", "sysContact", "sysName",
                         "sysLocation", "sysServices"))


@dataclass(frozen=True)
class SystemInfo:
    """The SNMPv2-MIB system group's fixed values."""

    descr: str
    object_id: Oid
    name: str
    contact: str = ""
    location: str = ""
    services: int = 2  # datalink/subnetwork (RFC 3418: a switch, layer 2)


class Snapshot:
    """One reading, indexed by row, with the agent's boot time for TimeStamps."""

    def __init__(self, reading: TelemetryReading, boot_time: float, uptime_ticks: int):
        self.reading = reading
        self.boot_time = boot_time
        self.uptime_ticks = uptime_ticks
        self.rows = {binding.rows: {binding.index(row): row
                                    for row in getattr(reading, binding.rows)}
                     for binding in TABLES}
        self.histograms = {(row.port, row.lane): row.histogram
                           for row in reading.electrical_lanes}

    def ticks_since_boot(self, at: float | None) -> int:
        if at is None or at < self.boot_time:
            return 0
        return int((at - self.boot_time) * TICKS_PER_SECOND) % 2**32


Getter = Callable[[Snapshot], Value | None]


def encode(node: MibObject, value: object) -> Value | None:
    """``value`` (in the object's units, or a name, names, string) as the MIB's raw value.

    ``None`` (and NaN) stay ``None``: the instance is absent, never a made-up 0.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    base = node.base_type
    if base == "BITS" and isinstance(value, (set, frozenset)):
        return node.encode_bits(str(name) for name in value)
    if base == "OCTET STRING":
        data = str(value).encode("utf-8")
        return data[:node.value_range[1]] if node.value_range else data
    if base == "OBJECT IDENTIFIER" and isinstance(value, tuple):
        return tuple(int(arc) for arc in value)
    if isinstance(value, str):
        return node.enumeration[value]
    if not isinstance(value, (int, float)):
        raise TypeError(f"{node.qualified_name}: cannot encode {value!r}")
    if base == "Counter64":
        return int(value) % COUNTER64_MODULUS
    number = float(value)
    if node.syntax == LOG10_BER_SYNTAX:
        number = math.log10(number) if number > 0.0 else -math.inf
    scaled = number * math.pow(10.0, node.decimals)
    low, high = node.value_range or (-(2**31), 2**32 - 1)
    if scaled == math.inf:
        return high
    if scaled == -math.inf:
        return low
    return min(high, max(low, round(scaled)))


class MibView:
    """The sorted instance OIDs of the system group, ifName and both MIBs' objects."""

    def __init__(self, reading: TelemetryReading, system: SystemInfo,
                 port_names: Mapping[int, str]):
        entries: list[tuple[Oid, MibObject, Getter]] = []
        for binding in TABLES:
            table = mibs.table(binding.module, binding.table)
            for row in getattr(reading, binding.rows):
                index = binding.index(row)
                for column, attribute in binding.columns.items():
                    entries.append(self._column(table, binding, column, attribute, index))
        histogram = mibs.table(HISTOGRAM[0], HISTOGRAM[1])
        codewords = histogram.column(HISTOGRAM[2])
        for row in reading.electrical_lanes:
            for bin_number in range(len(row.histogram)):
                entries.append((histogram.instance(codewords.name, (row.port, row.lane,
                                                                    bin_number)),
                                codewords, _histogram_getter((row.port, row.lane), bin_number)))
        threshold = mibs.mib_object(*THRESHOLD)

        def threshold_value(snapshot: Snapshot) -> Value | None:
            return encode(threshold, snapshot.reading.fec_degrade_threshold_ber)

        entries.append(((*threshold.oid, 0), threshold, threshold_value))
        entries.extend(self._system(system))
        names = mibs.table(IF_NAME[0], IF_NAME[1])
        if_name = names.column(IF_NAME[2])
        for port, name in port_names.items():
            entries.append((names.instance(if_name.name, (port,)), if_name,
                            _fixed(encode(if_name, name))))
        entries.sort(key=lambda entry: entry[0])
        self.oids: list[Oid] = [entry[0] for entry in entries]
        self.nodes: list[MibObject] = [entry[1] for entry in entries]
        self.getters: list[Getter] = [entry[2] for entry in entries]
        self._position = {oid: position for position, oid in enumerate(self.oids)}
        self._objects = {node.oid for node in self.nodes}

    @staticmethod
    def _column(table: MibTable, binding: TableBinding, column: str, attribute: str,
                index: tuple[int, ...]) -> tuple[Oid, MibObject, Getter]:
        node = table.column(column)
        rows = binding.rows

        def getter(snapshot: Snapshot) -> Value | None:
            row = snapshot.rows[rows].get(index)
            if row is None:
                return None
            value = getattr(row, attribute)
            if node.base_type == "TimeTicks":
                return snapshot.ticks_since_boot(value)
            return encode(node, value)

        return table.instance(column, index), node, getter

    @staticmethod
    def _system(system: SystemInfo) -> list[tuple[Oid, MibObject, Getter]]:
        module, names = SYSTEM
        fixed = {"sysDescr": system.descr, "sysObjectID": system.object_id,
                 "sysContact": system.contact, "sysName": system.name,
                 "sysLocation": system.location, "sysServices": system.services}
        entries: list[tuple[Oid, MibObject, Getter]] = []
        for name in names:
            node = mibs.mib_object(module, name)
            if name == SYS_UP_TIME[1]:
                entries.append(((*node.oid, 0), node, _uptime))
            else:
                entries.append(((*node.oid, 0), node, _fixed(encode(node, fixed[name]))))
        return entries

    def __len__(self) -> int:
        return len(self.oids)

    def position(self, oid: Sequence[int]) -> int | None:
        """Where instance ``oid`` is, ``None`` if it is not one."""
        return self._position.get(tuple(oid))

    def position_after(self, oid: Sequence[int]) -> int:
        """The first instance after ``oid`` in OID order; ``len(self)`` past the end."""
        return bisect.bisect_right(self.oids, tuple(oid))

    def is_object(self, oid: Sequence[int]) -> bool:
        """Whether ``oid`` lies under a column or scalar served here (noSuchInstance, then)."""
        oid = tuple(oid)
        return any(oid[:length] in self._objects for length in range(1, len(oid)))


def _histogram_getter(lane: tuple[int, int], bin_number: int) -> Getter:
    def getter(snapshot: Snapshot) -> Value | None:
        histogram = snapshot.histograms.get(lane)
        return None if histogram is None else histogram[bin_number] % COUNTER64_MODULUS
    return getter


def _fixed(value: Value | None) -> Getter:
    def getter(snapshot: Snapshot) -> Value | None:
        return value
    return getter


def _uptime(snapshot: Snapshot) -> Value | None:
    return snapshot.uptime_ticks
