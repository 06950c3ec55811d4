"""The switch over SONiC's CONFIG_DB, as sonic-gnmi serves it, with a read-only COUNTERS_DB.

The tree is ``{"CONFIG_DB": {"localhost": {TABLE: {KEY: {FIELD: "value"}}}}}``, keys
joined with ``|`` (``QUEUE`` ``Ethernet0|3``); :mod:`.sonic_schema` says which tables
and fields there are. :class:`SonicFace` translates them into the chip's configuration
the way SONiC's orchagent reads them:

- ``PORT|name``: a port of the chip (FAILED_PRECONDITION for another name); ``speed``
  in Mb/s, ``400000`` the chip's ``400G`` (100, 200, 400 and 800 Gb/s only). The other
  fields are kept and change nothing on the chip.
- ``CABLE_LENGTH|AZURE`` (any name): ``{port: "30000m"}`` is the port's cable length.
- ``PORT_QOS_MAP|port``: ``pfc_enable`` ``"3,4"`` is the port's lossless priorities
  (the ``global`` row's PFC fields, as orchagent's, change nothing).
- ``BUFFER_PG|port|3-4`` (one priority group or a range): the ``xoff`` and ``xon`` of
  the profile of a lossless priority's group are the port's headroom; the chip has one
  headroom for all lossless priorities of a port, so their groups' profiles must agree
  (FAILED_PRECONDITION otherwise), and a ``dynamic`` headroom, which SONiC's buffer
  manager computes, is FAILED_PRECONDITION: give ``xoff``. Every lossless priority needs
  one: a group with a profile whose ``xoff`` is above 0 (FAILED_PRECONDITION otherwise,
  the chip's lossless-without-headroom). Groups may not overlap on a port.
  ``BUFFER_POOL`` and the rest of ``BUFFER_PROFILE`` are checked, referenced and shown,
  and change nothing: the chip's pools are fixed when it is built.
- ``QUEUE|port|3`` (or ``3-4``): its ``WRED_PROFILE`` is the queue's WRED, read for
  green, the colour every RoCEv2 packet has here: with ``wred_green_enable`` the chip's
  queue has WRED between ``green_min_threshold`` and ``green_max_threshold`` at
  ``green_drop_probability``, marking when ``ecn`` includes green, else dropping;
  without it, none (as in SAI, where a colour's enable switches its curve on). The
  ``CPU`` port's queues and ``scheduler`` change nothing on the chip (a CPU queue is
  FAILED_PRECONDITION: the chip models none).
- ``PFC_WD|port``: orchagent starts the watchdog on a port with a ``PFC_WD`` row,
  watching the priorities of its ``PORT_QOS_MAP`` ``pfcwd_sw_enable``; so the chip's
  watchdog runs where both are there, ``detection_time`` and ``restoration_time`` in
  ms (restoration, when left out, twice the detection, as ``pfcwd start`` writes it),
  ``action`` ``drop`` or ``forward`` (``alert`` is FAILED_PRECONDITION: the chip's
  watchdog acts). The chip watches every lossless priority of a port or none, so a
  non-empty ``pfcwd_sw_enable`` other than ``pfc_enable`` is FAILED_PRECONDITION; a row
  without ``detection_time`` too (orchagent refuses it). ``GLOBAL`` ``POLL_INTERVAL``
  changes nothing (the chip's watchdog watches continuously).
- SONiC has no table for switch-generated CNPs: the chip's fast CNP stays off.

Refusals name ``/sonic-db:CONFIG_DB/localhost/TABLE/KEY[/field]``: INVALID_ARGUMENT for
what the YANG refuses (an unknown table or field, a value not of its type, a key of the
wrong shape, a missing mandatory field, a ``must``), FAILED_PRECONDITION for a reference
to a row that is not there (a port, profile, pool, scheduler) and what the chip cannot
run.

``operational`` adds ``COUNTERS_DB``: ``COUNTERS_PORT_NAME_MAP``,
``COUNTERS_QUEUE_NAME_MAP`` (``Ethernet0:3`` -> queue oid), the queue's port, index and
type maps, ``COUNTERS`` per port and queue oid (:data:`.sonic_schema.QUEUE_COUNTERS`,
:data:`.sonic_schema.PFC_COUNTERS`) and ``PERSISTENT_WATERMARKS`` per queue. The object
ids are made up in sairedis's shape and stay the same for a port for the device's life.

With the switch's CPO model (``telemetry``), ``operational_for`` adds its optics
(:mod:`.optics_sonic`) where a request reads them: ``STATE_DB``'s transceiver and
external laser tables when it reads STATE_DB, each port's FEC counters and ``RATES``
when it reads COUNTERS_DB; a request for anything else reads no optics.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from emulators.gnmi.face import Model, Tree
from emulators.switch.config import QUEUES_PER_PORT
from emulators.switch.faces import (
    ChipTree,
    ModelSource,
    failed,
    invalid,
    model_getter,
    optics_sonic,
)
from emulators.switch.faces import sonic_schema as schema
from emulators.switch.faces.optics import OpticsView, TelemetrySource
from emulators.switch.faces.sonic_schema import TABLES, Db, Row, Table, Value
from emulators.switch.model import PhysicalPort

ROOT = "/sonic-db:CONFIG_DB/localhost"
LANES_PER_PORT = 8
GREEN_MARKING = frozenset({"ecn_green", "ecn_green_yellow", "ecn_green_red", "ecn_all"})
WATCHDOG_ACTIONS = {"drop": "drop", "forward": "forward"}

_DIGITS = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def _at(table: str, key: str | None = None, field: str | None = None) -> str:
    return "/".join(part for part in (ROOT, table, key, field) if part is not None)


def _range(text: str) -> range | None:
    """``3`` or ``3-4`` as the indices it names; None for anything else."""
    match = _RANGE.fullmatch(text)
    if match is None:
        return None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    return range(first, last + 1) if first <= last else None


def _priorities(text: str) -> list[int]:
    return sorted({int(p) for p in text.split(",") if p})


class SonicFace:
    """The switch's SONiC face (see the module docstring)."""

    name: str = "sonic"
    encodings: tuple[str, ...] = ("JSON", "JSON_IETF")
    models: tuple[Model, ...] = (
        Model(schema.MODEL_NAME, schema.MODEL_ORGANIZATION, schema.MODEL_VERSION),)

    def __init__(self, model: ModelSource, ports: Mapping[str, PhysicalPort], *,
                 telemetry: TelemetrySource | None = None):
        self._model = model_getter(model)
        self._ports = dict(ports)
        self._index = {name: index for index, name in enumerate(self._ports)}
        self._optics = OpticsView(telemetry or (lambda: None), list(self._ports),
                                  {name: schema.SPEEDS_MBPS[port.speed]
                                   for name, port in self._ports.items()})

    # ---- the Face protocol ------------------------------------------------------------

    def factory(self) -> Tree:
        """Every port in PORT with its lanes and speed, and the chip's buffer pools as
        SONiC's buffer templates name them (the lossless ingress pool the chip's, the
        lossy egress pool the rest); nothing else."""
        chip = self._model()
        return {"CONFIG_DB": {"localhost": {
            "PORT": {
                name: {"lanes": ",".join(str(index * LANES_PER_PORT + lane)
                                         for lane in range(LANES_PER_PORT)),
                       "speed": str(schema.SPEEDS_MBPS[port.speed])}
                for index, (name, port) in enumerate(self._ports.items())},
            "BUFFER_POOL": {
                "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic",
                                          "size": str(chip.lossless_pool_bytes)},
                "egress_lossy_pool": {"type": "egress", "mode": "dynamic",
                                      "size": str(chip.total_bytes - chip.lossless_pool_bytes)},
            }}}}

    def writable(self, top: str) -> bool:
        return top == "CONFIG_DB"

    def scalar(self, path: str, value: Any) -> Any:
        """A field sent as a scalar TypedValue, as the database holds it: a string."""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value) if isinstance(value, int | float) else value

    def commit(self, config: Tree) -> None:
        db = self._check(config)
        self._translate(db).apply(self._model())

    def operational(self, config: Tree) -> Tree:
        return {**config, "COUNTERS_DB": {"localhost": self._counters()}}

    def operational_for(self, config: Tree, tops: frozenset[str]) -> Tree:
        """:meth:`operational`, with the optics of the databases ``tops`` names (module
        docstring)."""
        tree = self.operational(config)
        wanted = {top.rpartition(":")[2] for top in tops}
        if not wanted & {"*", "STATE_DB", "COUNTERS_DB"}:
            return tree
        read = self._optics.read()
        if read is None:
            return tree
        reading, views = read
        if wanted & {"*", "STATE_DB"}:
            tables = optics_sonic.state_db(views)
            optics_sonic.add_els(tables, views, reading.lasers)
            tree["STATE_DB"] = {"localhost": tables}
        if wanted & {"*", "COUNTERS_DB"}:
            optics_sonic.add_fec(tree["COUNTERS_DB"]["localhost"], views,
                                 {name: self._oid(name) for name in self._ports})
        return tree

    # ---- the schema ---------------------------------------------------------------------

    def _check(self, config: Tree) -> Db:
        """The CONFIG_DB tables of ``config``, checked against :data:`TABLES`, the
        ``must`` statements, then the references."""
        if not isinstance(config, dict):
            raise invalid("/", "the configuration is a JSON object")
        for top in config:
            if top != "CONFIG_DB":
                raise invalid(f"/sonic-db:{top}", "only CONFIG_DB is configuration")
        databases = config.get("CONFIG_DB", {})
        if not isinstance(databases, dict) or set(databases) - {"localhost"}:
            raise invalid("/sonic-db:CONFIG_DB", "CONFIG_DB holds one namespace, localhost")
        db = databases.get("localhost", {})
        if not isinstance(db, dict):
            raise invalid(ROOT, "expected a JSON object of tables")
        for name, rows in db.items():
            table = TABLES.get(name)
            if table is None:
                raise invalid(_at(name), "unknown table (not one this device serves)")
            if not isinstance(rows, dict):
                raise invalid(_at(name), "a table is a JSON object of rows by key")
            for key, row in rows.items():
                self._row(name, table, key, row)
        for must in schema.MUSTS:
            for key, row in db.get(must.table, {}).items():
                if must.field in row and not must.holds(key, row, db):
                    raise invalid(_at(must.table, key, must.field), f"must {must.xpath}")
        for name, rows in db.items():
            for key, row in rows.items():
                self._references(db, name, TABLES[name], key, row)
        return db

    @staticmethod
    def _row(name: str, table: Table, key: str, row: Any) -> None:
        at = _at(name, key)
        parts = key.split("|")
        if len(parts) != len(table.keys):
            raise invalid(at, f"a key of {name} is {'|'.join(k for k, _ in table.keys)}")
        for part, (key_name, value) in zip(parts, table.keys, strict=True):
            _check_value(value, part, at, f"key {key_name}")
        if not isinstance(row, dict):
            raise invalid(at, "a row is a JSON object of fields")
        for field, text in row.items():
            if table.port_fields is not None:
                _check_value(table.port_fields, text, f"{at}/{field}", "value")
                continue
            if field not in table.fields:
                raise invalid(f"{at}/{field}", f"unknown field of {name} ({table.module})")
            _check_value(table.fields[field].value, text, f"{at}/{field}", "value")
        for field, spec in table.fields.items():
            if spec.mandatory and field not in row:
                raise invalid(f"{at}/{field}", "mandatory field missing")

    @staticmethod
    def _references(db: Db, name: str, table: Table, key: str, row: Row) -> None:
        at = _at(name, key)
        named = [(value, part, at) for part, (_, value) in zip(key.split("|"), table.keys,
                                                               strict=True)]
        if table.port_fields is not None:
            named += [(schema.ref("PORT"), field, f"{at}/{field}") for field in row]
        else:
            named += [(table.fields[field].value, text, f"{at}/{field}")
                      for field, text in row.items()]
        for value, text, path in named:
            if value.ref is not None and text not in value.also and \
                    text not in db.get(value.ref, {}):
                raise failed(path, f"{text!r} names no {value.ref} row")

    # ---- CONFIG_DB -> the chip --------------------------------------------------------

    def _translate(self, db: Db) -> ChipTree:
        chip = ChipTree(self._ports)
        for port, row in db.get("PORT", {}).items():
            chip.port(port, _at("PORT", port))
            speed = int(row["speed"])
            chip_speed = next((s for s, mbps in schema.SPEEDS_MBPS.items() if mbps == speed),
                              None)
            if chip_speed is None:
                raise failed(_at("PORT", port, "speed"), "the chip's ports run at "
                             + ", ".join(str(v) for v in schema.SPEEDS_MBPS.values()) + " Mb/s")
            chip.port_leaf(port, "speed", chip_speed, _at("PORT", port, "speed"))
        for key, row in db.get("CABLE_LENGTH", {}).items():
            for port, length in row.items():
                chip.port_leaf(port, "cable-length-meters", int(length[:-1]),
                               _at("CABLE_LENGTH", key, port))
        for port, row in db.get("PORT_QOS_MAP", {}).items():
            if port != "global" and "pfc_enable" in row:
                chip.port_leaf(port, "lossless-priorities", _priorities(row["pfc_enable"]),
                               _at("PORT_QOS_MAP", port, "pfc_enable"))
        self._headroom(chip, db)
        self._queues(chip, db)
        for port in db.get("PORT", {}):
            self._watchdog(chip, db, port)
        return chip

    @staticmethod
    def _headroom(chip: ChipTree, db: Db) -> None:
        groups: dict[str, dict[int, str]] = {}
        for key in db.get("BUFFER_PG", {}):
            port, pg_num = key.split("|")
            pgs = _range(pg_num)
            if pgs is None:
                raise invalid(_at("BUFFER_PG", key), f"{pg_num!r}: a range runs upwards")
            taken = groups.setdefault(port, {})
            for pg in pgs:
                if pg in taken:
                    raise failed(_at("BUFFER_PG", key), f"priority group {pg} of {port} is "
                                                        f"in {taken[pg]} as well")
                taken[pg] = key
        for port, row in db.get("PORT_QOS_MAP", {}).items():
            if port == "global":
                continue
            for priority in _priorities(row.get("pfc_enable", "")):
                group = groups.get(port, {}).get(priority)
                profile = None if group is None else db["BUFFER_PG"][group].get("profile", "0")
                values = db.get("BUFFER_PROFILE", {}).get(profile or "NULL")
                if profile is None or values is None or int(values.get("xoff", "0")) == 0:
                    raise failed(_at("PORT_QOS_MAP", port, "pfc_enable"),
                                 f"lossless priority {priority} of {port} needs a headroom: a "
                                 "BUFFER_PG whose profile has an xoff "
                                 "(lossless-without-headroom)")
                at = _at("BUFFER_PROFILE", profile)
                if values.get("headroom_type") == "dynamic":
                    raise failed(f"{at}/headroom_type", "the chip takes a static headroom "
                                                        "(xoff) for a lossless priority")
                chip.port_leaf(port, "pfc/xoff-bytes", int(values["xoff"]), f"{at}/xoff")
                chip.port_leaf(port, "pfc/xon-bytes", int(values.get("xon", "0")), f"{at}/xon")

    @staticmethod
    def _queues(chip: ChipTree, db: Db) -> None:
        for key, row in db.get("QUEUE", {}).items():
            port, qindex = key.split("|")
            at = _at("QUEUE", key)
            if port == "CPU":
                raise failed(at, "the chip models no CPU queues")
            queues = _range(qindex)
            if queues is None or queues.stop > QUEUES_PER_PORT:
                raise failed(at, f"{qindex!r}: the chip's ports have queues "
                                 f"0..{QUEUES_PER_PORT - 1} (a queue, or a range 3-4)")
            if "wred_profile" not in row:
                continue
            profile = db["WRED_PROFILE"][row["wred_profile"]]
            wred_at = _at("WRED_PROFILE", row["wred_profile"])
            if profile.get("wred_green_enable") != "true":
                continue
            marks = profile.get("ecn", "ecn_none") in GREEN_MARKING
            for queue_id in queues:
                for field, leaf in (("green_min_threshold", "min-threshold"),
                                    ("green_max_threshold", "max-threshold")):
                    if field in profile:
                        chip.queue_leaf(port, queue_id, f"wred/{leaf}", int(profile[field]),
                                        f"{wred_at}/{field}")
                chip.queue_leaf(port, queue_id, "wred/max-drop-probability-percent",
                                int(profile.get("green_drop_probability", "100")),
                                f"{wred_at}/green_drop_probability")
                chip.queue_leaf(port, queue_id, "wred/enable-ecn", marks,
                                f"{wred_at}/ecn" if "ecn" in profile
                                else f"{wred_at}/wred_green_enable")

    @staticmethod
    def _watchdog(chip: ChipTree, db: Db, port: str) -> None:
        row = db.get("PFC_WD", {}).get(port)
        qos = db.get("PORT_QOS_MAP", {}).get(port, {})
        watched = _priorities(qos.get("pfcwd_sw_enable", ""))
        at = _at("PFC_WD", port)
        if row is None or not watched:
            chip.port_leaf(port, "pfc/watchdog/enabled", False, at)
            return
        if watched != _priorities(qos.get("pfc_enable", "")):
            raise failed(_at("PORT_QOS_MAP", port, "pfcwd_sw_enable"),
                         "the chip's watchdog watches every lossless priority of a port "
                         "(pfc_enable) or none")
        if "detection_time" not in row:
            raise failed(at, "a PFC_WD row needs detection_time (orchagent refuses it)")
        action = row.get("action", "drop")
        if action not in WATCHDOG_ACTIONS:
            raise failed(f"{at}/action", "the chip's watchdog drops or forwards")
        detection = int(row["detection_time"])
        chip.port_leaf(port, "pfc/watchdog/enabled", True, at)
        chip.port_leaf(port, "pfc/watchdog/detection-time-ms", detection,
                       f"{at}/detection_time")
        chip.port_leaf(port, "pfc/watchdog/restoration-time-ms",
                       int(row.get("restoration_time", 2 * detection)),
                       f"{at}/restoration_time")
        chip.port_leaf(port, "pfc/watchdog/action", WATCHDOG_ACTIONS[action], f"{at}/action")

    # ---- the chip -> COUNTERS_DB ------------------------------------------------------

    def _oid(self, port: str, queue_id: int | None = None) -> str:
        index = self._index[port] + 1
        if queue_id is None:
            return f"oid:0x{schema.SAI_OBJECT_TYPE_PORT << 48 | index:x}"
        return f"oid:0x{schema.SAI_OBJECT_TYPE_QUEUE << 48 | index << 8 | queue_id:x}"

    def _counters(self) -> dict[str, Any]:
        state = self._model().state_tree()["switch"]["ports"]["port"]
        db: dict[str, Any] = {name: {} for name in (
            "COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP", "COUNTERS_QUEUE_PORT_MAP",
            "COUNTERS_QUEUE_INDEX_MAP", "COUNTERS_QUEUE_TYPE_MAP", "COUNTERS",
            "PERSISTENT_WATERMARKS")}
        for port in state:
            name = port["name"]
            port_oid = self._oid(name)
            db["COUNTERS_PORT_NAME_MAP"][name] = port_oid
            pfc: dict[str, str] = {}
            for queue in port["queues"]["queue"]:
                queue_id, counters = queue["queue-id"], queue["counters"]
                oid = self._oid(name, queue_id)
                db["COUNTERS_QUEUE_NAME_MAP"][f"{name}:{queue_id}"] = oid
                db["COUNTERS_QUEUE_PORT_MAP"][oid] = port_oid
                db["COUNTERS_QUEUE_INDEX_MAP"][oid] = str(queue_id)
                db["COUNTERS_QUEUE_TYPE_MAP"][oid] = "SAI_QUEUE_TYPE_UNICAST"
                db["COUNTERS"][oid] = {stat: str(counters[chip])
                                       for stat, chip in schema.QUEUE_COUNTERS}
                db["PERSISTENT_WATERMARKS"][oid] = {
                    "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES":
                        str(counters["buffer-watermark-bytes"])}
                for stat, chip in schema.PFC_COUNTERS:
                    pfc[stat.format(priority=queue_id)] = str(counters[chip])
            db["COUNTERS"][port_oid] = pfc
        return db


def _check_value(value: Value, text: Any, path: str, what: str) -> None:
    """Refuse ``text`` unless it spells ``value`` (CONFIG_DB holds strings)."""
    if not isinstance(text, str):
        raise invalid(path, f"CONFIG_DB values are strings, not {text!r}")
    if text in value.also:
        return
    if value.digits:
        if not (_SIGNED if value.signed else _DIGITS).fullmatch(text):
            raise invalid(path, f"{what} {text!r} is not a {value.yang}")
        number = int(text)
        if (value.low is not None and number < value.low) or \
                (value.high is not None and number > value.high):
            raise invalid(path, f"{what} {number} out of range ({value.yang})")
    if value.enums and text not in value.enums:
        raise invalid(path, f"{what} {text!r} is not one of {', '.join(value.enums)}")
    if value.pattern is not None and not re.fullmatch(value.pattern, text):
        raise invalid(path, f"{what} {text!r} does not match {value.pattern!r}")
    if value.length is not None and not value.length[0] <= len(text) <= value.length[1]:
        raise invalid(path, f"{what} {text!r}: length {value.length[0]}..{value.length[1]}")
