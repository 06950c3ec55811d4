"""The CPO/CPC telemetry collector: one switch's MSO-CPO-MIB and MSO-CPC-MIB, typed.

Which column fills which field is the tables below, reviewed against the MIBs;
every OID, scale, enumeration and BITS name comes from :mod:`drivers.snmp.mibs`.

A collection (:meth:`TelemetryCollector.collect`) is GETBULK walks
(:meth:`~drivers.snmp.session.SnmpSession.walk_segments`), two requests in flight,
planned as they go so that few variables are asked for past the end of what is
wanted (with pysnmp, decoding a variable costs far more than a round trip on a LAN):

- each table asked for (engines, optical lanes, lasers; electrical lanes) is first
  read from its root in OID order, one response; beside them ifName for the ports'
  names, and with the electrical lanes ifHighSpeed for their speeds (the FEC
  interleave) and the FEC degrade threshold. A table that fits in one response is done;
- the rest of a longer table is one walk per column, side by side; when the first
  response covered the first column, each other column expects as many rows (the
  last request asks for just those, and one more to see the end), else the lengths
  are unknown and each walk may overshoot its column's end by up to one response's
  repetitions;
- once msoCpcLaneTable's first column is complete, the FEC histogram: one walk per
  port, expecting its lanes times the MIB's 17 bins.

Every request also asks for sysUpTime and snmpEngineBoots (non-repeaters), so that
an agent restart in the middle of a collection shows (:attr:`CollectionInfo.restarted`):
snmpEngineBoots counts the agent's engine's re-initialisations (SNMP-FRAMEWORK-MIB,
RFC 3414 2.2.2), so a change of it means the counters started again, even when
sysUpTime did not go backwards (the agent had been up for less time before the
restart than since); sysUpTime going backwards is a restart too, for an agent that
does not serve snmpEngineBoots.

The whole collection runs under one time budget (``budget_seconds``): past it,
:class:`DeviceTimeout`, whatever the per-request timeouts would still allow.
Values are checked against the MIB: a variable of the wrong type, outside its
syntax's range, or not an instance of the table walked is a :class:`ProtocolError`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysnmp.proto import rfc1902

from drivers.errors import DeviceTimeout, ProtocolError
from drivers.snmp import mibs
from drivers.snmp.mibs import MibObject, MibTable, Oid
from drivers.snmp.session import (
    DEFAULT_MAX_REPETITIONS,
    DEFAULT_MAX_VARBINDS,
    Segment,
    SegmentResult,
    SnmpSession,
    SnmpTarget,
    VarBind,
)
from drivers.snmp.telemetry import (
    CollectionInfo,
    CpcTelemetry,
    CpoTelemetry,
    ElectricalLane,
    Engine,
    Laser,
    OpticalLane,
)

DEFAULT_BUDGET_SECONDS = 10.0
"""A whole collection's time budget (Prometheus's default scrape timeout)."""
DEFAULT_CONCURRENCY = 2
"""GETBULK requests in flight at once per collection."""
RESTART_TOLERANCE_SECONDS = 1.0
"""sysUpTime may read lower by this much between two responses that crossed on the
way (UDP reorders); more is a restart."""
LOG10_BER_SYNTAX = "MsoLog10Ber"  # MSO-TC: log10 of the ratio, in thousandths

CPO = "MSO-CPO-MIB"
CPC = "MSO-CPC-MIB"

# Column -> dataclass field, per table; the index fields are named in the builders.
ENGINE_COLUMNS: Mapping[str, str] = {
    "msoCpoEngineName": "name",
    "msoCpoEngineLaneCount": "lane_count",
    "msoCpoEngineTemperature": "temperature_celsius",
    "msoCpoEngineTempHighThreshold": "temperature_high_celsius",
    "msoCpoEngineSupplyVoltage": "supply_voltage_volts",
    "msoCpoEngineStatus": "status",
}
OPTICAL_LANE_COLUMNS: Mapping[str, str] = {
    "msoCpoLaneEngineIndex": "engine",
    "msoCpoLaneEngineLane": "engine_lane",
    "msoCpoLaneTxPower": "tx_power_dbm",
    "msoCpoLaneRxPower": "rx_power_dbm",
    "msoCpoLaneTxBias": "tx_bias_ma",
    "msoCpoLaneElsModule": "els_module",
    "msoCpoLaneElsLane": "els_lane",
}
LASER_COLUMNS: Mapping[str, str] = {
    "msoCpoElsOutputPower": "output_power_dbm",
    "msoCpoElsBiasCurrent": "bias_current_ma",
    "msoCpoElsVoltage": "voltage_volts",
    "msoCpoElsTemperature": "temperature_celsius",
    "msoCpoElsState": "state",
    "msoCpoElsControlMode": "control_mode",
    "msoCpoElsFaults": "faults",
}
ELECTRICAL_LANE_COLUMNS: Mapping[str, str] = {
    "msoCpcLaneSnr": "snr_db",
    "msoCpcLanePreFecBer": "pre_fec_ber",
    "msoCpcLaneFecCorrected": "fec_corrected_total",
    "msoCpcLaneFecUncorrectable": "fec_uncorrectable_total",
    "msoCpcLaneInsertionLoss": "insertion_loss_db",
    "msoCpcLaneEyeHeight": "eye_height_mv",
    "msoCpcLaneEyeWidth": "eye_width_ui",
    "msoCpcLaneDiscontinuityTime": "discontinuity_uptime_seconds",
}
TABLES: Mapping[str, tuple[str, str, Mapping[str, str]]] = {
    "engines": (CPO, "msoCpoEngineTable", ENGINE_COLUMNS),
    "optical_lanes": (CPO, "msoCpoLaneTable", OPTICAL_LANE_COLUMNS),
    "lasers": (CPO, "msoCpoElsTable", LASER_COLUMNS),
    "electrical_lanes": (CPC, "msoCpcLaneTable", ELECTRICAL_LANE_COLUMNS),
}
HISTOGRAM = (CPC, "msoCpcHistogramTable", "msoCpcHistogramCodewords", "msoCpcHistogramBin")
THRESHOLD = (CPC, "msoCpcFecDegradeThreshold")
IF_NAME = ("IF-MIB", "ifXTable", "ifName")
IF_HIGH_SPEED = ("IF-MIB", "ifXTable", "ifHighSpeed")
"""The ports' speed in Mb/s, read with the electrical lanes: the FEC's interleave, and so
the frame loss ratio per codeword error, follows it (:mod:`drivers.snmp.rates`)."""
SYS_UP_TIME = ("SNMPv2-MIB", "sysUpTime")
ENGINE_BOOTS = ("SNMP-FRAMEWORK-MIB", "snmpEngineBoots")
TICKS_PER_SECOND = 100  # TimeTicks and TimeStamp count hundredths of a second

_WIRE_TAGS = {
    "Integer32": rfc1902.Integer32.tagSet,
    "Unsigned32": rfc1902.Unsigned32.tagSet,
    "Gauge32": rfc1902.Gauge32.tagSet,
    "Counter32": rfc1902.Counter32.tagSet,
    "Counter64": rfc1902.Counter64.tagSet,
    "TimeTicks": rfc1902.TimeTicks.tagSet,
    "OCTET STRING": rfc1902.OctetString.tagSet,
    "BITS": rfc1902.OctetString.tagSet,
    "OBJECT IDENTIFIER": rfc1902.ObjectIdentifier.tagSet,
    "IpAddress": rfc1902.IpAddress.tagSet,
}

Decoded = int | float | str | tuple[str, ...] | Oid
Row = dict[str, Decoded]


def decode(column: MibObject, value: Any, *, device: str | None = None) -> Decoded:
    """A variable's value as the MIB defines it: scaled number in the column's units,
    enumeration name, BITS names (sorted), text, TimeTicks in seconds, BER ratio.

    Raises :class:`ProtocolError` for a value of the wrong type or outside the syntax's
    range. An enumeration number the MIB does not name decodes as ``unknown(N)``.
    """
    base = column.base_type or ""
    expected = _WIRE_TAGS.get(base)
    if expected is None or getattr(value, "tagSet", None) != expected:
        raise ProtocolError(f"{column.qualified_name} should be {base}, the agent sent "
                            f"{type(value).__name__}", device=device)
    if base == "BITS":
        return tuple(sorted(column.decode_bits(bytes(value.asOctets()))))
    if base == "OCTET STRING":
        return bytes(value.asOctets()).decode("utf-8", errors="replace")
    if base == "OBJECT IDENTIFIER":
        return tuple(int(arc) for arc in value)
    number = int(value)
    if column.value_range is not None and not (
            column.value_range[0] <= number <= column.value_range[1]):
        raise ProtocolError(f"{column.qualified_name} = {number} is outside its range "
                            f"{column.value_range[0]}..{column.value_range[1]}", device=device)
    if column.enumeration:
        return column.enum_name(number) or f"unknown({number})"
    if base == "TimeTicks":
        return number / TICKS_PER_SECOND
    if column.syntax == LOG10_BER_SYNTAX:
        return float(10.0 ** (number / 1000.0))
    if column.decimals:
        return column.scaled(number)
    return number


@dataclass(frozen=True)
class _Walked:
    """What one collection's walks found, decoded into rows by table."""

    rows: dict[str, dict[tuple[int, ...], Row]]
    histograms: dict[tuple[int, int], list[int | None]]
    port_names: dict[int, str]
    port_speeds_mbps: dict[int, int]
    threshold_ber: float | None
    info: CollectionInfo


class TelemetryCollector:
    """Collects one switch's CPO/CPC telemetry over SNMP (use on one event loop).

    ``budget_seconds`` bounds each call as a whole. :attr:`requests` counts the PDUs
    of every call so far.
    """

    def __init__(self, target: SnmpTarget, *, budget_seconds: float = DEFAULT_BUDGET_SECONDS,
                 max_repetitions: int = DEFAULT_MAX_REPETITIONS,
                 max_varbinds: int = DEFAULT_MAX_VARBINDS,
                 concurrency: int = DEFAULT_CONCURRENCY):
        if budget_seconds <= 0:
            raise ValueError("budget_seconds must be positive")
        self.target = target
        self.budget_seconds = budget_seconds
        self.concurrency = concurrency
        self.session = SnmpSession(target, max_repetitions=max_repetitions,
                                   max_varbinds=max_varbinds)

    @property
    def requests(self) -> int:
        return self.session.requests

    async def cpo(self) -> CpoTelemetry:
        """Engines, optical lanes and lasers."""
        walked = await self._collect(("engines", "optical_lanes", "lasers"), histogram=False)
        return _cpo(walked)

    async def cpc(self, *, histogram: bool = True) -> CpcTelemetry:
        """Electrical lanes, with the FEC histogram unless ``histogram`` is false."""
        walked = await self._collect(("electrical_lanes",), histogram=histogram)
        return _cpc(walked, histogram)

    async def collect(self) -> tuple[CpoTelemetry, CpcTelemetry]:
        """Both, in one collection (one pair of walks)."""
        walked = await self._collect(tuple(TABLES), histogram=True)
        return _cpo(walked), _cpc(walked, True)

    # ---- walking -------------------------------------------------------------------------

    async def _collect(self, tables: Sequence[str], *, histogram: bool) -> _Walked:
        started, requests_before = time.monotonic(), self.session.requests
        variables_before = self.session.variables
        self.session.mark()
        try:
            async with asyncio.timeout(self.budget_seconds):
                return await self._walk(tables, histogram, started, requests_before,
                                        variables_before)
        except TimeoutError:
            sent = self.session.requests - requests_before
            raise DeviceTimeout(
                f"no complete answer from {self.target.address} within the "
                f"{self.budget_seconds:g} s budget ({sent} requests sent)",
                device=self.target.name) from None

    async def _walk(self, tables: Sequence[str], histogram: bool, started: float,
                    requests_before: int, variables_before: int) -> _Walked:
        device = self.target.name
        layouts = {key: mibs.table(*TABLES[key][:2]) for key in tables}
        names = mibs.table(*IF_NAME[:2])
        threshold = mibs.mib_object(*THRESHOLD)
        up_time = mibs.oid(*SYS_UP_TIME)
        engine_boots = mibs.oid(*ENGINE_BOOTS)
        plan = _Plan(layouts, histogram)
        first = [Segment(layout.oid, first_response_only=True) for layout in layouts.values()]
        first.append(Segment(names.column(IF_NAME[2]).oid))
        speeds = names.column(IF_HIGH_SPEED[2])
        if "electrical_lanes" in tables:
            # a scalar: its one instance and one more to see the end, not a response's worth
            first.append(Segment(threshold.oid, expected=1))
            first.append(Segment(speeds.oid))
        results, extras = await self.session.walk_segments(
            first, with_each=[up_time, engine_boots], concurrency=self.concurrency,
            then=plan.next)
        threshold_ber: float | None = None
        port_names: dict[int, str] = {}
        port_speeds: dict[int, int] = {}
        for result in results:
            if result.segment.root == threshold.oid:
                threshold_ber = _scalar(threshold, result.values, device)
            elif result.segment.root == names.column(IF_NAME[2]).oid:
                port_names = {index[0]: str(value)
                              for index, _, value in _cells(names, result.values, device)}
            elif result.segment.root == speeds.oid:
                port_speeds = {index[0]: value
                               for index, _, value in _cells(names, result.values, device)
                               if isinstance(value, int)}
        rows: dict[str, dict[tuple[int, ...], Row]] = {key: {} for key in tables}
        for key in tables:
            fields = TABLES[key][2]
            for index, column, value in _cells(layouts[key], plan.values[key], device):
                if column in fields:
                    rows[key].setdefault(index, {})[fields[column]] = value
        histograms = (_histograms(plan.values["histogram"], plan.lanes or [], device)
                      if histogram else {})
        uptimes = _scalars(extras, SYS_UP_TIME, device)
        boots = [int(value) for value in _scalars(extras, ENGINE_BOOTS, device)]
        info = CollectionInfo(
            device=device,
            uptime_seconds=uptimes[0] if uptimes else None,
            uptime_end_seconds=uptimes[-1] if uptimes else None,
            restarted=len(set(boots)) > 1 or any(
                later < earlier - RESTART_TOLERANCE_SECONDS
                for earlier, later in itertools.pairwise(uptimes)),
            requests=self.session.requests - requests_before,
            variables=self.session.variables - variables_before,
            duration_seconds=time.monotonic() - started,
            started_monotonic=self.session.first_request_monotonic or started,
            engine_boots=boots[0] if boots else None,
            engine_boots_end=boots[-1] if boots else None)
        return _Walked(rows, histograms, port_names, port_speeds, threshold_ber, info)


class _Plan:
    """What to walk next, from what the walks have seen so far (``walk_segments`` then).

    A table's first response either finishes it, or is followed by one walk per column
    it did not finish (:func:`_rest_of_table`). Once the first column of
    msoCpcLaneTable is complete, its lanes give the FEC histogram's walks, one per
    port, each expecting its lanes times the MIB's bins.
    """

    def __init__(self, layouts: Mapping[str, MibTable], histogram: bool):
        self.layouts = layouts
        self.histogram = histogram and "electrical_lanes" in layouts
        self.values: dict[str, list[VarBind]] = {key: [] for key in (*layouts, "histogram")}
        self.lanes: list[tuple[int, ...]] | None = None
        lanes = layouts.get("electrical_lanes")
        self._lane_column = lanes.columns[0].oid if lanes is not None else None

    def _owner(self, root: Oid) -> str | None:
        for key, layout in self.layouts.items():
            if root[:len(layout.oid)] == layout.oid:
                return key
        codewords = mibs.table(*HISTOGRAM[:2]).oid
        return "histogram" if root[:len(codewords)] == codewords else None

    def next(self, result: SegmentResult) -> list[Segment]:
        root = result.segment.root
        key = self._owner(root)
        if key is None:
            return []
        self.values[key].extend(result.values)
        more: list[Segment] = []
        first_response = key in self.layouts and root == self.layouts[key].oid
        if first_response and result.ended_by == "first response":  # the table goes on
            more = _rest_of_table(self.layouts[key], result.values)
        if key == "electrical_lanes" and self.histogram and self.lanes is None:
            lane_column = self._lane_column or ()
            finished_here = root == lane_column or (
                root == self.layouts[key].oid and not any(
                    segment.root == lane_column for segment in more))
            if finished_here:
                self.lanes = sorted({oid[len(lane_column):] for oid, _ in self.values[key]
                                     if oid[:len(lane_column)] == lane_column})
                more.extend(_histogram_segments(self.lanes))
        return more


def _rest_of_table(layout: MibTable, found: Sequence[VarBind]) -> list[Segment]:
    """Segments for the columns a table's first response did not finish, side by side.

    In OID order only the last column reached can be unfinished; those before it are
    complete. Once the first column is complete its length is the table's rows, and
    each other column expects as many; before that, lengths are unknown.
    """
    first = layout.columns[0]
    last = found[-1][0] if found else layout.oid
    rows = (sum(1 for oid, _ in found if oid[:len(first.oid)] == first.oid)
            if last[:len(first.oid)] > first.oid else None)
    segments = []
    for column in layout.columns:
        if last[:len(column.oid)] > column.oid:
            continue  # walked past: complete
        mine = [oid for oid, _ in found if oid[:len(column.oid)] == column.oid]
        segments.append(Segment(column.oid, start=mine[-1] if mine else None,
                                expected=None if rows is None else max(0, rows - len(mine))))
    return segments


def _histogram_segments(lanes: Sequence[tuple[int, ...]]) -> list[Segment]:
    """One segment per port of the FEC histogram: its lanes times the MIB's bins."""
    codewords = mibs.table(*HISTOGRAM[:2]).column(HISTOGRAM[2])
    low, high = _bin_range()
    per_port: dict[int, int] = {}
    for index in lanes:
        per_port[index[0]] = per_port.get(index[0], 0) + 1
    return [Segment((*codewords.oid, port), expected=count * (high - low + 1))
            for port, count in sorted(per_port.items())]


def _bin_range() -> tuple[int, int]:
    bins = mibs.mib_object(CPC, HISTOGRAM[3])
    return bins.value_range or (0, 16)


def _histograms(found: Sequence[VarBind], lanes: Sequence[tuple[int, ...]], device: str
                ) -> dict[tuple[int, int], list[int | None]]:
    """Every lane's histogram bins (``None`` for a bin the agent left out)."""
    table = mibs.table(*HISTOGRAM[:2])
    low, high = _bin_range()
    histograms: dict[tuple[int, int], list[int | None]] = {
        (index[0], index[1]): [None] * (high - low + 1) for index in lanes}
    for index, _, value in _cells(table, found, device):
        port, lane, bin_number = index
        if not low <= bin_number <= high:
            raise ProtocolError(f"histogram bin {bin_number} of port {port} lane {lane} is "
                                f"outside {low}..{high}", device=device)
        counts = histograms.setdefault((port, lane), [None] * (high - low + 1))
        counts[bin_number - low] = value if isinstance(value, int) else None
    return histograms


def _cells(table: MibTable, var_binds: Sequence[VarBind], device: str
           ) -> list[tuple[tuple[int, ...], str, Decoded]]:
    """(row index, column name, decoded value) of each variable of a walked column."""
    cells = []
    for oid, value in var_binds:
        parsed = table.parse_instance(oid)
        if parsed is None:
            raise ProtocolError(f"{'.'.join(map(str, oid))} is not an instance of "
                                f"{table.table.qualified_name}", device=device)
        column, index = parsed
        cells.append((index, column.name, decode(column, value, device=device)))
    return cells


def _scalar(node: MibObject, var_binds: Sequence[VarBind], device: str) -> float | None:
    for oid, value in var_binds:
        if oid == (*node.oid, 0):
            decoded = decode(node, value, device=device)
            return float(decoded) if isinstance(decoded, (int, float)) else None
    return None


def _scalars(extras: Sequence[Sequence[VarBind]], scalar: tuple[str, str],
             device: str) -> list[float]:
    """The decoded values of scalar ``scalar`` (module, name) in each response, in order.

    A response without it (an agent that does not serve it: GETNEXT gave another
    object) adds nothing.
    """
    node = mibs.mib_object(*scalar)
    instance = (*node.oid, 0)
    found = []
    for answers in extras:
        for oid, value in answers:
            if oid == instance:
                decoded = decode(node, value, device=device)
                if isinstance(decoded, (int, float)):
                    found.append(float(decoded))
    return found


def _get(row: Row, field: str, kind: type[Any]) -> Any:
    value = row.get(field)
    if value is None:
        return None
    if kind is float and isinstance(value, int):
        return float(value)
    return value if isinstance(value, kind) else None


def _cpo(walked: _Walked) -> CpoTelemetry:
    engines = tuple(
        Engine(index=index[0], name=_get(row, "name", str),
               lane_count=_get(row, "lane_count", int),
               temperature_celsius=_get(row, "temperature_celsius", float),
               temperature_high_celsius=_get(row, "temperature_high_celsius", float),
               supply_voltage_volts=_get(row, "supply_voltage_volts", float),
               status=_get(row, "status", str))
        for index, row in sorted(walked.rows["engines"].items()))
    lanes = tuple(
        OpticalLane(port=index[0], lane=index[1], port_name=walked.port_names.get(index[0]),
                    engine=_get(row, "engine", int), engine_lane=_get(row, "engine_lane", int),
                    tx_power_dbm=_get(row, "tx_power_dbm", float),
                    rx_power_dbm=_get(row, "rx_power_dbm", float),
                    tx_bias_ma=_get(row, "tx_bias_ma", float),
                    els_module=_get(row, "els_module", int),
                    els_lane=_get(row, "els_lane", int))
        for index, row in sorted(walked.rows["optical_lanes"].items()))
    lasers = tuple(
        Laser(module=index[0], lane=index[1],
              output_power_dbm=_get(row, "output_power_dbm", float),
              bias_current_ma=_get(row, "bias_current_ma", float),
              voltage_volts=_get(row, "voltage_volts", float),
              temperature_celsius=_get(row, "temperature_celsius", float),
              state=_get(row, "state", str), control_mode=_get(row, "control_mode", str),
              faults=_get(row, "faults", tuple))
        for index, row in sorted(walked.rows["lasers"].items()))
    return CpoTelemetry(walked.info, engines, lanes, lasers)


def _cpc(walked: _Walked, histogram: bool) -> CpcTelemetry:
    rows = walked.rows["electrical_lanes"]
    indexes = sorted(set(rows) | set(walked.histograms))
    lanes = []
    for index in indexes:
        port, lane = index[0], index[1]
        row = rows.get(index, {})
        counts = walked.histograms.get((port, lane))
        lanes.append(ElectricalLane(
            port=port, lane=lane, port_name=walked.port_names.get(port),
            port_speed_mbps=walked.port_speeds_mbps.get(port) or None,
            snr_db=_get(row, "snr_db", float), pre_fec_ber=_get(row, "pre_fec_ber", float),
            fec_corrected_total=_get(row, "fec_corrected_total", int),
            fec_uncorrectable_total=_get(row, "fec_uncorrectable_total", int),
            insertion_loss_db=_get(row, "insertion_loss_db", float),
            eye_height_mv=_get(row, "eye_height_mv", float),
            eye_width_ui=_get(row, "eye_width_ui", float),
            discontinuity_uptime_seconds=_get(row, "discontinuity_uptime_seconds", float),
            fec_histogram_total=tuple(counts) if histogram and counts is not None else None))
    return CpcTelemetry(walked.info, walked.threshold_ber, tuple(lanes))
