"""What the CPO/CPC agent serves: every instance OID in order, and its value in a snapshot.

Which object carries which value, and how it is encoded, is :mod:`.columns` (the
agent's own table, restated from the MIB text); every OID, range, enumeration and
BITS name comes from the compiled MIBs (:mod:`drivers.snmp.mibs`). Served here:

- MSO-CPO-MIB's three tables and MSO-CPC-MIB's lane and histogram tables and
  threshold, from :class:`~.model.TelemetryReading`;
- IF-MIB's ifNumber, ifTableLastChange, ifTable and ifXTable for the ports those
  tables index (:mod:`.interfaces`), their counters from the model's traffic
  (:mod:`.traffic`), ifAlias from the view itself (:class:`InterfaceSettings`);
- SNMPv2-MIB's system group and SNMP-FRAMEWORK-MIB's snmpEngine group, from the
  agent (sysUpTime, snmpEngineBoots and snmpEngineTime at every request).

Values are raw Python values (``int``, ``bytes``, an OID tuple) tagged with the
object they belong to; the agent turns them into pysnmp types. Rows are taken from
the first reading; the model's rows do not come and go.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from drivers.snmp import mibs
from drivers.snmp.mibs import MibObject, MibTable, Oid
from emulators.cpo import columns, vendor
from emulators.cpo.columns import Encoding, Served, ServedTable
from emulators.cpo.entity import EntityTables, SensorRow
from emulators.cpo.interfaces import Interface, InterfaceRow, mac_address
from emulators.cpo.interfaces import rows as interface_rows
from emulators.cpo.model import TelemetryReading

Value = int | bytes | Oid
TICKS_PER_SECOND = 100  # TimeTicks and TimeStamp count hundredths of a second (RFC 2578)
TIMETICKS_MODULUS = 2**32
COUNTER64_MODULUS = 2**64
COUNTER32_MODULUS = 2**32
HISTOGRAM_BIN = "bin"
"""An index attribute no row has: the column's attribute is a sequence, and the
row's instance for bin n holds its n-th item (msoCpcHistogramTable)."""
WRITABLE_SYSTEM = ("contact", "name", "location")
"""The system group's read-write objects the agent lets a manager set (sysContact,
sysName, sysLocation: RFC 3418); snmpEnableAuthenTraps stays read-only, since the
agent has nowhere to send an authenticationFailure trap."""
WRITABLE_COLUMNS = frozenset({("ifXTable", "alias")})
"""(table, attribute) of the columns a manager may set: ifAlias (RFC 2863), held per
port in the view's :class:`InterfaceSettings`, not in the snapshot's rows. The other
read-write IF-MIB columns (ifAdminStatus, ifLinkUpDownTrapEnable, ifPromiscuousMode)
stay read-only, as ifCompliance3's MIN-ACCESS allows."""
PER_REQUEST = frozenset({"uptime_ticks", "engine_boots", "engine_seconds", "in_pkts",
                         "in_bad_versions", "in_bad_community_names",
                         "in_bad_community_uses", "in_asn_parse_errs", "silent_drops",
                         "proxy_drops", "usm_unsupported_sec_levels",
                         "usm_not_in_time_windows", "usm_unknown_user_names",
                         "usm_unknown_engine_ids", "usm_wrong_digests",
                         "usm_decryption_errors", *WRITABLE_SYSTEM})
"""Attributes that change between two requests on one snapshot: never cached."""

# The range of a base type, where the object's syntax gives none (RFC 2578, 7.1).
_BASE_RANGES = {
    "Integer32": (-(2**31), 2**31 - 1),
    "Unsigned32": (0, 2**32 - 1),
    "Gauge32": (0, 2**32 - 1),
    "Counter32": (0, 2**32 - 1),
    "TimeTicks": (0, 2**32 - 1),
}
_REFUSAL_NOT_WRITABLE = "notWritable"
_REFUSAL_NO_ACCESS = "noAccess"
_REFUSAL_NO_CREATION = "noCreation"
_NVT_CONTROLS = frozenset({0, 7, 8, 9, 10, 11, 12, 13})
"""The control codes NVT ASCII has (RFC 854 pages 10-11), which a DisplayString may
hold beside the printable 32..126 (RFC 2579)."""


@dataclass
class SystemInfo:
    """The SNMPv2-MIB system group's values (and the snmp group's one setting): fixed,
    but for :data:`WRITABLE_SYSTEM`, which a SET changes (:meth:`MibView.write`)."""

    descr: str
    object_id: Oid
    name: str
    contact: str = ""
    location: str = ""
    services: int = 2  # datalink/subnetwork (RFC 3418: a switch, layer 2)
    enable_authen_traps: str = "disabled"  # the agent sends no authenticationFailure trap
    or_last_change: float | None = None  # sysORTable has not changed since the start


@dataclass
class InterfaceSettings:
    """What a manager set on one interface (:data:`WRITABLE_COLUMNS`), kept for the
    agent's life: its reboots leave it as it was, as RFC 2863 asks of ifAlias."""

    alias: str = ""


@dataclass(frozen=True)
class Capability:
    """One sysORTable row: a MIB module the agent implements (RFC 3418)."""

    index: int
    object_id: Oid
    descr: str
    listed_at: float | None = None  # device time it was listed; None: since the start


@dataclass
class EngineState:
    """The SNMP engine's snmpEngine group as USM uses it now (RFC 3411, RFC 3414)."""

    engine_id: bytes
    engine_boots: int
    engine_seconds: int
    max_message_size: int


@dataclass(frozen=True)
class Statistics:
    """The SNMPv2-MIB snmp group's (RFC 3418) and USM's usmStats (RFC 3414) counters of
    the agent's engine now."""

    in_pkts: int = 0
    in_bad_versions: int = 0
    in_bad_community_names: int = 0
    in_bad_community_uses: int = 0
    in_asn_parse_errs: int = 0
    silent_drops: int = 0
    proxy_drops: int = 0
    usm_unsupported_sec_levels: int = 0
    usm_not_in_time_windows: int = 0
    usm_unknown_user_names: int = 0
    usm_unknown_engine_ids: int = 0
    usm_wrong_digests: int = 0
    usm_decryption_errors: int = 0


class Snapshot:
    """One reading with its rows indexed, and the agent's values at this request.

    ``uptime_ticks`` (sysUpTime) and ``engine`` are set by the agent for every
    request; the rows are built on first use.
    """

    def __init__(self, view: MibView, reading: TelemetryReading, boot_time: float,
                 engine: EngineState):
        self.view = view
        self.reading = reading
        self.boot_time = boot_time
        self.uptime_ticks = 0
        self.engine = engine
        self.statistics = Statistics()
        self._rows: dict[str, dict[tuple[int, ...], Any]] = {}
        self._sensor_rows: list[SensorRow] | None = None
        self._h3c: tuple[list[vendor.H3cTransceiver], list[vendor.H3cChannel]] | None = None

    @property
    def interface_count(self) -> int:
        return len(self.view.interfaces)

    @property
    def if_table_last_change(self) -> float | None:
        """ifTableLastChange: no row of ifTable comes or goes while the agent runs."""
        return None

    def rows(self, table: ServedTable) -> dict[tuple[int, ...], Any]:
        """The rows of ``table`` by their index values."""
        found = self._rows.get(table.rows)
        if found is None:
            found = self._rows[table.rows] = {
                _row_index(table, row): row for row in self._source_rows(table.rows)}
        return found

    def _source_rows(self, name: str) -> Sequence[Any]:
        if name == "interfaces":
            return self.interface_rows()
        if name == "capabilities":
            return self.view.capabilities
        entity = self.view.entity
        if entity is not None and name == "physical_entities":
            return entity.served_entities()
        if entity is not None and name == "alias_mappings":
            return entity.alias_mappings
        if entity is not None and name == "sensors":
            return self.sensor_rows()
        if entity is not None and name == "arista_thresholds":
            return vendor.arista_rows(entity, self.sensor_rows())
        if entity is not None and name == "cisco_thresholds":
            return vendor.cisco_rows(entity, self.sensor_rows())
        if name in ("hh3c_transceivers", "hh3c_channels"):
            if self._h3c is None:
                self._h3c = vendor.h3c_rows(self.reading, self.view.interfaces)
            return self._h3c[0] if name == "hh3c_transceivers" else self._h3c[1]
        rows: Sequence[Any] = getattr(self.reading, name)
        return rows

    def sensor_rows(self) -> list[SensorRow]:
        """The entity sensors' rows at this reading (the view has entity tables)."""
        if self._sensor_rows is None:
            assert self.view.entity is not None
            self._sensor_rows = self.view.entity.sensor_rows(self.reading, self.reading.at)
        return self._sensor_rows

    def interface_rows(self) -> list[InterfaceRow]:
        rows = interface_rows(self.view.interfaces, self.reading.optical_lanes,
                              self.view.system.name,
                              {traffic.port: traffic for traffic in self.reading.ports},
                              self.view.phys_addresses)
        return [replace(row, last_change=self.view.status_since(row.index, row.oper_status,
                                                                self.reading.at))
                for row in rows]

    def ticks_since_boot(self, at: float | None) -> int:
        """TimeStamp of device time ``at``: 0 before the boot or when there is none."""
        if at is None or at < self.boot_time:
            return 0
        return int((at - self.boot_time) * TICKS_PER_SECOND) % TIMETICKS_MODULUS


Getter = Callable[[Snapshot], Value | None]


def _row_index(table: ServedTable, row: Any) -> tuple[int, ...]:
    return tuple(int(getattr(row, name)) for name in table.index if name != HISTOGRAM_BIN)


def encode(node: MibObject, encoding: Encoding, value: object,
           snapshot: Snapshot | None = None) -> Value | None:
    """``value`` (in the units :mod:`.columns` names) as the raw value of ``node``.

    ``None`` (and NaN) stay ``None``: the instance is absent, never a made-up 0;
    but a TimeStamp of no event is 0, as TimeStamp objects say. Raises TypeError for
    a value the encoding cannot take.
    """
    kind = encoding.kind
    if kind == "timestamp" and snapshot is not None and (
            value is None or isinstance(value, (int, float))):
        return snapshot.ticks_since_boot(None if value is None else float(value))
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if kind == "text":
        data = str(value).encode("utf-8")
        return data[:node.value_range[1]] if node.value_range else data
    if kind == "octets" and isinstance(value, bytes):
        return value
    if kind == "oid" and isinstance(value, tuple):
        return tuple(int(arc) for arc in value)
    if kind == "enum" and isinstance(value, str):
        return node.enumeration[value]
    if kind == "bits" and isinstance(value, (set, frozenset)):
        return node.encode_bits(str(name) for name in value)
    if not isinstance(value, (int, float)):
        raise TypeError(f"{node.qualified_name}: cannot encode {value!r} as {kind}")
    if kind == "counter":
        return int(value) % (COUNTER32_MODULUS if node.base_type == "Counter32"
                             else COUNTER64_MODULUS)
    if kind == "timeticks":
        return int(value) % TIMETICKS_MODULUS
    number = float(value)
    if kind == "log10_ber":
        number = 1000.0 * math.log10(number) if number > 0.0 else -math.inf
    elif kind == "fixed":
        number *= math.pow(10.0, encoding.decimals)
    elif kind != "number":
        raise TypeError(f"{node.qualified_name}: unknown encoding {kind!r}")
    low, high = node.value_range or _BASE_RANGES.get(node.base_type or "", (-(2**31), 2**32 - 1))
    if number == math.inf:
        return high
    if number == -math.inf:
        return low
    return min(high, max(low, round(number)))


class MibView:
    """The sorted instance OIDs of everything the agent serves, and their getters."""

    def __init__(self, reading: TelemetryReading, system: SystemInfo,
                 interfaces: Sequence[Interface], *, entity: EntityTables | None = None,
                 dom_mib: str | None = None):
        """``entity``: the ENTITY-MIB and ENTITY-SENSOR-MIB rows to serve, if any, with
        their layout's vendor threshold table; ``dom_mib``: a vendor DOM MIB to serve
        too (one of :data:`~.vendor.DOM_MIBS`)."""
        if dom_mib is not None and dom_mib not in vendor.DOM_MIBS:
            raise ValueError(f"unknown DOM MIB {dom_mib!r} (one of "
                             f"{', '.join(vendor.DOM_MIBS)})")
        self.system = system
        self.interfaces = tuple(interfaces)
        self.entity = entity
        self.interface_settings = {interface.index: InterfaceSettings()
                                   for interface in self.interfaces}
        # ifPhysAddress from the name the switch started with: a SET of sysName does
        # not change its ports' MAC addresses
        self.phys_addresses = {interface.index: mac_address(system.name, interface.index)
                               for interface in self.interfaces}
        self._oper_status: dict[int, tuple[str, float | None]] = {}
        listed = [(mibs.oid(module, identity), descr) for module, identity, descr in (
            *columns.CAPABILITIES,
            *(columns.ENTITY_CAPABILITIES if entity is not None else ()))]
        threshold_table = entity.threshold_table if entity is not None else None
        listed += [(oid, descr) for key, (_, _, oid, descr) in vendor.CAPABILITIES.items()
                   if key in (threshold_table, dom_mib)]
        self.capabilities = tuple(Capability(number, object_id, descr)
                                  for number, (object_id, descr) in enumerate(listed, 1))
        entries: list[tuple[Oid, MibObject, Getter, bool]] = []
        probe = Snapshot(self, reading, 0.0, EngineState(b"", 0, 0, 0))
        not_accessible: set[Oid] = set()
        tables: tuple[ServedTable, ...] = (*columns.TABLES, *columns.IF_TABLES,
                                           columns.SYS_OR_TABLE)
        if entity is not None:
            sensors = columns.SENSOR_TABLE
            tables += (columns.PHYSICAL_TABLE, replace(
                sensors, columns=sensors.columns[:entity.sensor_columns]))
            if entity.alias_mappings:
                tables += (columns.ALIAS_MAPPING_TABLE,)
            tables += {"arista": (vendor.ARISTA_TABLE,),
                       "cisco": (vendor.CISCO_TABLE,)}.get(threshold_table or "", ())
        if dom_mib == "hh3c":
            tables += (vendor.H3C_INFO_TABLE, vendor.H3C_CHANNEL_TABLE)
        for table in tables:
            layout = vendor.LAYOUTS.get((table.module, table.table)) or mibs.table(
                table.module, table.table)
            not_accessible.update(part.oid for part in layout.index
                                  if part.max_access == "not-accessible")
            entries.extend(_table_entries(layout, table, probe))
        module, served = columns.THRESHOLD
        entries.append(_scalar(module, served, lambda snapshot: snapshot.reading))
        module, group = columns.IF_SCALARS
        for served in group:
            entries.append(_scalar(module, served, lambda snapshot: snapshot))
        module, group = columns.SYSTEM
        self._writable: dict[Oid, tuple[object, str, MibObject]] = {}
        for served in group:
            if served.attribute in WRITABLE_SYSTEM:
                node = mibs.mib_object(module, served.name)
                assert node.max_access == "read-write", node.qualified_name
                self._writable[(*node.oid, 0)] = (system, served.attribute, node)
            # sysUpTime is the agent's at each request; the rest is the system's (read at
            # each request where a SET may change it)
            entries.append(_scalar(module, served, (lambda snapshot: snapshot)
                                   if served.attribute == "uptime_ticks"
                                   else (lambda snapshot: system)))
        for table in columns.IF_TABLES:
            layout = mibs.table(table.module, table.table)
            for served in table.columns:
                if (table.table, served.attribute) not in WRITABLE_COLUMNS:
                    continue
                node = layout.column(served.name)
                assert node.max_access == "read-write", node.qualified_name
                for index, settings in self.interface_settings.items():
                    self._writable[layout.instance(served.name, (index,))] = (
                        settings, served.attribute, node)
        module, group = columns.ENGINE
        for served in group:
            entries.append(_scalar(module, served, lambda snapshot: snapshot.engine))
        module, group = columns.USM_STATISTICS
        for served in group:
            entries.append(_scalar(module, served, lambda snapshot: snapshot.statistics))
        module, group = columns.STATISTICS
        for served in group:
            # the counters are the engine's at each request; the setting is fixed
            entries.append(_scalar(module, served, (lambda snapshot: snapshot.statistics)
                                   if served.attribute in PER_REQUEST
                                   else (lambda snapshot: system)))
        entries.sort(key=lambda entry: entry[0])
        self.oids: list[Oid] = [entry[0] for entry in entries]
        self.nodes: list[MibObject] = [entry[1] for entry in entries]
        self.getters: list[Getter] = [entry[2] for entry in entries]
        self.per_request: frozenset[int] = frozenset(
            position for position, entry in enumerate(entries) if entry[3])
        self._position = {oid: position for position, oid in enumerate(self.oids)}
        self._objects = {node.oid for node in self.nodes}
        self._not_accessible = frozenset(not_accessible)

    def __len__(self) -> int:
        return len(self.oids)

    def status_since(self, index: int, status: str, at: float) -> float | None:
        """When interface ``index`` entered ``status``, as the readings saw it: ``at`` if
        the last reading had it in another state, ``None`` if it has been in this one
        since the agent's first reading (readings come in time order)."""
        seen = self._oper_status.get(index)
        if seen is None:
            self._oper_status[index] = (status, None)
            return None
        if seen[0] != status:
            self._oper_status[index] = (status, at)
            return at
        return seen[1]

    def write(self, changes: Sequence[tuple[Sequence[int], bytes]]) -> None:
        """Make SETs that :meth:`write_refusal` let through, all of them: each
        DisplayString's octets become the system group's text or the interface's
        ifAlias."""
        for oid, value in changes:
            holder, attribute, _ = self._writable[tuple(oid)]
            setattr(holder, attribute, bytes(value).decode("ascii"))

    def position(self, oid: Sequence[int]) -> int | None:
        """Where instance ``oid`` is, ``None`` if it is not one."""
        return self._position.get(tuple(oid))

    def position_after(self, oid: Sequence[int]) -> int:
        """The first instance after ``oid`` in OID order; ``len(self)`` past the end."""
        return bisect.bisect_right(self.oids, tuple(oid))

    def is_object(self, oid: Sequence[int]) -> bool:
        """Whether ``oid`` lies under a column or scalar served here (noSuchInstance, then)."""
        return _under(tuple(oid), self._objects)

    def write_refusal(self, oid: Sequence[int], value: object = None) -> str | None:
        """Why a SET of ``oid`` to ``value`` fails here, by RFC 3416 section 4.2.5's
        checks in order; ``None`` when it can be made.

        For sysContact.0, sysName.0 and sysLocation.0 (DisplayString (SIZE (0..255)))
        and each served port's ifAlias (DisplayString (SIZE(0..64))): ``wrongType`` for a
        value that is no OCTET STRING (step 3), ``wrongLength`` past the SIZE (4),
        ``wrongValue`` for octets that are not NVT ASCII, a CR not followed by LF or NUL
        included (6, RFC 2579's DisplayString). Else
        ``notWritable`` under any other object the agent serves (step 2: read-only, so
        no variable with that prefix can be modified, whatever its instance);
        ``noAccess`` under a not-accessible index object (step 1: RFC 2578 puts it in
        no MIB view); ``noCreation`` anywhere else (step 7: nothing of that name exists
        or could ever be created).
        """
        oid = tuple(oid)
        writable = self._writable.get(oid)
        if writable is not None:
            node = writable[2]
            if not isinstance(value, bytes | bytearray):
                return "wrongType"
            if node.value_range and len(value) > node.value_range[1]:
                return "wrongLength"
            if not _nvt_ascii(bytes(value)):
                return "wrongValue"
            return None
        if _under(oid, self._objects):
            return _REFUSAL_NOT_WRITABLE
        if _under(oid, self._not_accessible):
            return _REFUSAL_NO_ACCESS
        return _REFUSAL_NO_CREATION


def _nvt_ascii(data: bytes) -> bool:
    """Whether ``data`` is NVT ASCII as a DisplayString must be (RFC 2579)."""
    for position, octet in enumerate(data):
        if octet > 126 or (octet < 32 and octet not in _NVT_CONTROLS):
            return False
        if octet == 13 and data[position + 1:position + 2] not in (b"\n", b"\x00"):
            return False
    return True


def _under(oid: Oid, objects: frozenset[Oid] | set[Oid]) -> bool:
    return any(oid[:length] in objects for length in range(1, len(oid)))


def _table_entries(layout: MibTable, table: ServedTable,
                   probe: Snapshot) -> list[tuple[Oid, MibObject, Getter, bool]]:
    entries = []
    bins = HISTOGRAM_BIN in table.index
    for index, row in probe.rows(table).items():
        for served in table.columns:
            node = layout.column(served.name)
            if bins:
                for bin_number in range(len(getattr(row, served.attribute))):
                    instance = layout.instance(served.name, (*index, bin_number))
                    entries.append((instance, node,
                                    _bin_getter(table, index, served, bin_number, node), False))
            elif (table.table, served.attribute) in WRITABLE_COLUMNS:
                # what a SET wrote, read at every request
                entries.append((layout.instance(served.name, index), node,
                                _setting_getter(index, served, node), True))
            else:
                entries.append((layout.instance(served.name, index), node,
                                _cell_getter(table, index, served, node), False))
    return entries


def _setting_getter(index: tuple[int, ...], served: Served, node: MibObject) -> Getter:
    def getter(snapshot: Snapshot) -> Value | None:
        settings = snapshot.view.interface_settings.get(index[0])
        if settings is None:
            return None
        return encode(node, served.encoding, getattr(settings, served.attribute), snapshot)
    return getter


def _cell_getter(table: ServedTable, index: tuple[int, ...], served: Served,
                 node: MibObject) -> Getter:
    def getter(snapshot: Snapshot) -> Value | None:
        row = snapshot.rows(table).get(index)
        if row is None:
            return None
        return encode(node, served.encoding, getattr(row, served.attribute), snapshot)
    return getter


def _bin_getter(table: ServedTable, index: tuple[int, ...], served: Served, bin_number: int,
                node: MibObject) -> Getter:
    def getter(snapshot: Snapshot) -> Value | None:
        row = snapshot.rows(table).get(index)
        if row is None:
            return None
        values = getattr(row, served.attribute)
        if bin_number >= len(values):
            return None
        return encode(node, served.encoding, values[bin_number], snapshot)
    return getter


def _scalar(module: str, served: Served, source: Callable[[Snapshot], Any]
            ) -> tuple[Oid, MibObject, Getter, bool]:
    node = mibs.mib_object(module, served.name)
    if node.kind != "scalar":
        raise ValueError(f"{node.qualified_name} is a {node.kind}, not a scalar")

    def getter(snapshot: Snapshot) -> Value | None:
        return encode(node, served.encoding, getattr(source(snapshot), served.attribute),
                      snapshot)

    return (*node.oid, 0), node, getter, served.attribute in PER_REQUEST
