"""The schema of yang/msoctl-congestion.yang as a table: a spec table both sides read.

A reviewer checks :data:`SCHEMA` against the module line by line: every data
node by its path of local names (list keys not included), with its kind, its
type and whether it is configuration. tests/interop/test_yang.py checks it against
the module as pyang sees it. The driver uses it to write and read XML (list
keys first, lists and leaf-lists as lists, typed values); the emulator to
match list entries, refuse unknown elements and bad values, and write error
paths.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "urn:megascaleout:yang:msoctl-congestion"
PREFIX = "msocc"
MODULE = "msoctl-congestion"
REVISION = "2026-11-30"
CAPABILITY = f"{NAMESPACE}?module={MODULE}&revision={REVISION}"
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Node:
    """One schema node: ``kind`` is container, list, leaf or leaf-list.

    Leaves have ``type`` (uint, boolean, string or enumeration) with ``low``..``high``
    (a range, or a string's length) or ``enum``; lists have ``keys``.
    """

    kind: str
    config: bool = True
    type: str | None = None
    low: int = 0
    high: int = UINT64_MAX
    enum: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


def _uint(low: int, high: int, *, config: bool = True) -> Node:
    return Node("leaf", config, "uint", low, high)


CONTAINER = Node("container")
BOOLEAN = Node("leaf", type="boolean")
_COUNTERS = {name: _uint(0, UINT64_MAX, config=False) for name in (
    "ecn-marked-packets", "switch-generated-cnps", "pfc-pause-frames-sent",
    "pfc-pause-frames-received", "dropped-packets", "buffer-watermark-bytes")}


def _table() -> dict[tuple[str, ...], Node]:
    table: dict[tuple[str, ...], Node] = {
        ("switch",): CONTAINER,
        ("switch", "fast-cnp"): CONTAINER,
        ("switch", "fast-cnp", "enabled"): BOOLEAN,
        ("switch", "fast-cnp", "cnp-dscp"): _uint(0, 63),
        ("switch", "fast-cnp", "cnp-priority"): _uint(0, 7),
        ("switch", "fast-cnp", "min-interval-microseconds"): _uint(0, 1_000_000),
        ("switch", "fast-cnp", "flow-table-size"): _uint(1, UINT32_MAX),
        ("switch", "fast-cnp", "flow-aging-seconds"): _uint(1, 3600),
        ("switch", "buffer"): Node("container", config=False),
        ("switch", "buffer", "total-bytes"): _uint(0, UINT64_MAX, config=False),
        ("switch", "buffer", "lossless-pool-bytes"): _uint(0, UINT64_MAX, config=False),
        ("switch", "ports"): CONTAINER,
    }
    port = ("switch", "ports", "port")
    queue = (*port, "queues", "queue")
    table.update({
        port: Node("list", keys=("name",)),
        (*port, "name"): Node("leaf", type="string", low=1, high=64),
        (*port, "speed"): Node("leaf", type="enumeration",
                               enum=("100G", "200G", "400G", "800G")),
        (*port, "cable-length-meters"): _uint(0, UINT32_MAX),
        (*port, "lossless-priorities"): Node("leaf-list", type="uint", low=0, high=7),
        (*port, "pfc"): CONTAINER,
        (*port, "pfc", "xoff-bytes"): _uint(0, UINT64_MAX),
        (*port, "pfc", "xon-bytes"): _uint(0, UINT64_MAX),
        (*port, "pfc", "watchdog"): CONTAINER,
        (*port, "pfc", "watchdog", "enabled"): BOOLEAN,
        (*port, "pfc", "watchdog", "detection-time-ms"): _uint(1, 60_000),
        (*port, "pfc", "watchdog", "restoration-time-ms"): _uint(1, 600_000),
        (*port, "pfc", "watchdog", "action"): Node("leaf", type="enumeration",
                                                   enum=("drop", "forward")),
        (*port, "queues"): CONTAINER,
        queue: Node("list", keys=("queue-id",)),
        (*queue, "queue-id"): _uint(0, 7),
        (*queue, "wred"): CONTAINER,
        (*queue, "wred", "min-threshold"): _uint(0, UINT64_MAX),
        (*queue, "wred", "max-threshold"): _uint(0, UINT64_MAX),
        (*queue, "wred", "max-drop-probability-percent"): _uint(0, 100),
        (*queue, "wred", "enable-ecn"): BOOLEAN,
        (*queue, "fast-cnp"): CONTAINER,
        (*queue, "fast-cnp", "enabled"): BOOLEAN,
        (*port, "counters"): Node("container", config=False),
        (*queue, "counters"): Node("container", config=False),
    })
    for owner in (port, queue):
        table.update({(*owner, "counters", name): node for name, node in _COUNTERS.items()})
    return table


SCHEMA = _table()
