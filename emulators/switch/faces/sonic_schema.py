"""The SONiC CONFIG_DB tables the switch's SONiC face serves, restated from sonic-yang-models.

One row per table: its key (the parts of ``TABLE|a|b``), its fields with their YANG
types, and the tables a field refers to. Restated from sonic-net/sonic-buildimage
src/sonic-yang-models/yang-models (commit 086b03bd, 2026-08-23): sonic-port
(2019-07-01), sonic-wred-profile (2021-04-01), sonic-queue (2021-04-01),
sonic-scheduler, sonic-buffer-pool, sonic-buffer-profile, sonic-buffer-pg (2021-07-01),
sonic-port-qos-map (2019-05-15), sonic-pfcwd (2021-07-01), sonic-cable-length
(2021-11-11). CONFIG_DB holds every value as a string; a field's type is what that
string must spell.

Left out (a field of them is refused as unknown): PORT's breakout, VOQ, macsec,
transceiver and advertisement fields; QUEUE's VOQ list; BUFFER_POOL's ``percentage``
(the dynamic buffer model only, which needs DEVICE_METADATA, not served here);
PORT_QOS_MAP's map references (DSCP/dot1p/TC maps are not served: queue n carries
priority n, and PFC priority n uses priority group n). :data:`MUSTS` restates the
tables' ``must`` statements.

:data:`QUEUE_COUNTERS` and :data:`PFC_COUNTERS` are COUNTERS_DB's SAI statistics
(opencomputeproject/SAI inc/saiqueue.h, inc/saiport.h) with the chip's counter each is
read from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Value:
    """What a key part's or field's string must spell."""

    yang: str
    """The type as the module writes it, for messages."""
    digits: bool = False
    low: int | None = None
    high: int | None = None
    signed: bool = False
    enums: tuple[str, ...] = ()
    pattern: str | None = None
    length: tuple[int, int] | None = None
    ref: str | None = None
    """A leafref: the table whose key it names."""
    also: tuple[str, ...] = ()
    """Literal strings a union takes besides the reference (``GLOBAL``, ``NULL``)."""


@dataclass(frozen=True)
class Field:
    value: Value
    mandatory: bool = False


@dataclass(frozen=True)
class Table:
    module: str
    keys: tuple[tuple[str, Value], ...]
    fields: Mapping[str, Field] = field(default_factory=dict)
    port_fields: Value | None = None
    """For CABLE_LENGTH: the fields are port names (a nested list keyed by port), each
    with this value."""


def uint(bits: int, low: int = 0, high: int | None = None) -> Value:
    top = (1 << bits) - 1 if high is None else high
    shown = f" {low}..{top}" if (low, high) != (0, None) else ""
    return Value(f"uint{bits}{shown}", digits=True, low=low, high=top)


def enum(*names: str) -> Value:
    return Value(f"enumeration {'|'.join(names)}", enums=names)


def pattern(regex: str, *, length: tuple[int, int] | None = None) -> Value:
    return Value(f"string pattern {regex!r}", pattern=regex, length=length)


def ref(table: str, *also: str) -> Value:
    return Value(f"leafref {table}" + "".join(f" | {a!r}" for a in also), ref=table, also=also)


STRING = Value("string")
BOOLEAN = enum("true", "false")
NAME_32 = pattern("[a-zA-Z0-9]{1}([-a-zA-Z0-9_]{0,31})", length=(1, 32))
PRIORITIES = pattern("([0-7](,[0-7])*)?")
PERCENT = uint(64, 0, 100)
UINT64 = uint(64)

TABLES: dict[str, Table] = {
    "PORT": Table("sonic-port", (("name", Value("string 1..128", length=(1, 128))),), {
        "lanes": Field(Value("string 1..128", length=(1, 128)), mandatory=True),
        "speed": Field(uint(32, 1, 1_600_000), mandatory=True),
        "alias": Field(Value("string 1..128", length=(1, 128))),
        "description": Field(Value("string 0..255", length=(0, 255))),
        "mtu": Field(uint(16, 68, 9216)),
        "index": Field(uint(16)),
        "admin_status": Field(enum("up", "down")),
        "fec": Field(pattern("rs|fc|none|auto")),
        "autoneg": Field(pattern("on|off")),
        "pfc_asym": Field(pattern("on|off")),
    }),
    "WRED_PROFILE": Table("sonic-wred-profile", (("name", NAME_32),), {
        **{f"{color}_{edge}_threshold": Field(UINT64)
           for color in ("green", "yellow", "red") for edge in ("min", "max")},
        "ecn": Field(enum("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow",
                          "ecn_green_red", "ecn_yellow_red", "ecn_all")),
        **{f"wred_{color}_enable": Field(BOOLEAN) for color in ("green", "yellow", "red")},
        **{f"{color}_drop_probability": Field(PERCENT) for color in ("green", "yellow", "red")},
    }),
    "SCHEDULER": Table("sonic-scheduler", (("name", STRING),), {
        "type": Field(enum("DWRR", "WRR", "STRICT")),
        "weight": Field(uint(8, 1, 100)),
        "priority": Field(uint(8, 0, 9)),
        "meter_type": Field(enum("packets", "bytes")),
        "cir": Field(UINT64),
        "pir": Field(UINT64),
        "cbs": Field(uint(32)),
        "pbs": Field(uint(32)),
    }),
    "QUEUE": Table("sonic-queue", (("ifname", ref("PORT", "CPU")), ("qindex", STRING)), {
        "scheduler": Field(ref("SCHEDULER")),
        "wred_profile": Field(ref("WRED_PROFILE")),
    }),
    "BUFFER_POOL": Table("sonic-buffer-pool", (("name", STRING),), {
        "type": Field(enum("ingress", "egress", "both"), mandatory=True),
        "mode": Field(enum("static", "dynamic"), mandatory=True),
        "size": Field(UINT64),
        "xoff": Field(UINT64),
    }),
    "BUFFER_PROFILE": Table("sonic-buffer-profile", (("name", STRING),), {
        "static_th": Field(UINT64),
        "dynamic_th": Field(Value("int32 -8..7", digits=True, signed=True, low=-8, high=7)),
        "size": Field(UINT64, mandatory=True),
        "pool": Field(ref("BUFFER_POOL"), mandatory=True),
        "xon_offset": Field(UINT64),
        "xon": Field(UINT64),
        "xoff": Field(UINT64),
        "headroom_type": Field(enum("static", "dynamic")),
        "packet_discard_action": Field(enum("drop", "trim")),
    }),
    "BUFFER_PG": Table("sonic-buffer-pg", (("port", ref("PORT")),
                                          ("pg_num", pattern("[0-7]((-)[0-7])?"))), {
        "profile": Field(ref("BUFFER_PROFILE", "NULL")),
    }),
    "PORT_QOS_MAP": Table("sonic-port-qos-map", (("ifname", ref("PORT", "global")),), {
        "pfc_enable": Field(PRIORITIES),
        "pfcwd_sw_enable": Field(PRIORITIES),
    }),
    "PFC_WD": Table("sonic-pfcwd", (("ifname", ref("PORT", "GLOBAL")),), {
        "action": Field(enum("drop", "forward", "alert")),
        "detection_time": Field(uint(32, 100, 5000)),
        "restoration_time": Field(uint(32, 100, 60_000)),
        "pfc_stat_history": Field(pattern("enable|disable")),
        "POLL_INTERVAL": Field(uint(32, 100, 1000)),
    }),
    "CABLE_LENGTH": Table("sonic-cable-length", (("name", NAME_32),),
                          port_fields=pattern("[0-9]+m")),
}

Row = Mapping[str, str]
Db = Mapping[str, Mapping[str, Row]]


@dataclass(frozen=True)
class Must:
    """A table's ``must`` statement: ``holds(key, row, db)`` for the row's ``field``."""

    table: str
    field: str
    xpath: str
    holds: Callable[[str, Row, Db], bool]


def _number(row: Row | None, name: str) -> int | None:
    return None if row is None or name not in row else int(row[name])


def _at_least(row: Row, name: str, other: str) -> bool:
    # An absent other makes the XPath comparison false (an empty node-set).
    low = _number(row, other)
    return low is not None and int(row[name]) >= low


def _positive(row: Row, name: str) -> bool:
    value = _number(row, name)
    return value is not None and value > 0


def _field_at_least(name: str, other: str) -> Callable[[str, Row, Db], bool]:
    return lambda key, row, db: _at_least(row, name, other)


def _at_least_global_poll(name: str) -> Callable[[str, Row, Db], bool]:
    def holds(key: str, row: Row, db: Db) -> bool:
        glob = db.get("PFC_WD", {}).get("GLOBAL")
        if glob is None:
            return True
        poll = _number(glob, "POLL_INTERVAL")
        return poll is not None and int(row[name]) >= poll
    return holds


MUSTS: tuple[Must, ...] = (
    *(Must("WRED_PROFILE", f"{c}_max_threshold", f"current() >= ../{c}_min_threshold",
           _field_at_least(f"{c}_max_threshold", f"{c}_min_threshold"))
      for c in ("green", "yellow", "red")),
    Must("SCHEDULER", "pir", "../cir and ../cir > 0", lambda k, r, d: _positive(r, "cir")),
    Must("SCHEDULER", "pir", "current() >= ../cir", _field_at_least("pir", "cir")),
    Must("SCHEDULER", "cbs", "../cir and ../cir > 0", lambda k, r, d: _positive(r, "cir")),
    Must("SCHEDULER", "pbs", "../pir and ../pir > 0", lambda k, r, d: _positive(r, "pir")),
    Must("SCHEDULER", "pbs", "not(../cbs) or current() >= ../cbs",
         lambda k, r, d: "cbs" not in r or _at_least(r, "pbs", "cbs")),
    *(Must("PFC_WD", name, "../ifname != 'GLOBAL'", lambda k, r, d: k != "GLOBAL")
      for name in ("action", "detection_time", "restoration_time", "pfc_stat_history")),
    Must("PFC_WD", "POLL_INTERVAL", "../ifname = 'GLOBAL'", lambda k, r, d: k == "GLOBAL"),
    *(Must("PFC_WD", name, "not(GLOBAL) or current() >= GLOBAL/POLL_INTERVAL",
           _at_least_global_poll(name))
      for name in ("detection_time", "restoration_time")),
)

SPEEDS_MBPS = {"100G": 100_000, "200G": 200_000, "400G": 400_000, "800G": 800_000}
"""PORT ``speed`` (Mb/s) of each of the chip's speeds."""

QUEUE_COUNTERS: tuple[tuple[str, str], ...] = (
    ("SAI_QUEUE_STAT_DROPPED_PACKETS", "dropped-packets"),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "ecn-marked-packets"),
    ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "buffer-watermark-bytes"),
)
"""A queue's ``COUNTERS:<queue oid>`` fields and the chip's counters they show. The chip
counts no transmitted packets, so ``SAI_QUEUE_STAT_PACKETS`` is not shown."""

PFC_COUNTERS: tuple[tuple[str, str], ...] = (
    ("SAI_PORT_STAT_PFC_{priority}_TX_PKTS", "pfc-pause-frames-sent"),
    ("SAI_PORT_STAT_PFC_{priority}_RX_PKTS", "pfc-pause-frames-received"),
)
"""A port's ``COUNTERS:<port oid>`` PFC fields, per priority n from the chip's queue n."""

SAI_OBJECT_TYPE_PORT = 1
SAI_OBJECT_TYPE_QUEUE = 21
"""saitypes.h; sairedis puts an object's type in bits 48-55 of its id."""

MODEL_NAME, MODEL_ORGANIZATION, MODEL_VERSION = "sonic-db", "SONiC", "0.1.0"
"""What sonic-gnmi announces for its DB paths (sonic_data_client/mixed_db_client.go)."""

