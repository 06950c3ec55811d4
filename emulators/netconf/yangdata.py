"""The schema of yang/msoctl-congestion.yang as a table, and the data tree helpers on it.

A reviewer checks :data:`SCHEMA` against the module line by line: every data
node by its path of local names (list keys not included), with its kind, its
type and whether it is configuration. The datastores use it to match list
entries by key during edit-config, to refuse unknown elements and bad values
when an edit arrives, to write error paths, and to turn a datastore into the
plain-dict tree that emulators/switch/config.py reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lxml import etree
from lxml.etree import _Element

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


def clark(local: str) -> str:
    return f"{{{NAMESPACE}}}{local}"


def local_name(element: _Element) -> str:
    return str(etree.QName(element).localname)


def schema_path(element: _Element) -> tuple[str, ...]:
    """The schema path of a data element: local names from the top container down."""
    names: list[str] = []
    node: _Element | None = element
    while node is not None and etree.QName(node).namespace == NAMESPACE:
        names.append(local_name(node))
        node = node.getparent()
    return tuple(reversed(names))


def value_error(node: Node, text: str) -> str | None:
    """Why ``text`` is not a value of the leaf ``node``; ``None`` when it is one."""
    if node.type == "boolean":
        return None if text in ("true", "false") else f"{text!r} is not a boolean"
    if node.type == "enumeration":
        return None if text in node.enum else f"{text!r} is not one of {', '.join(node.enum)}"
    if node.type == "string":
        ok = node.low <= len(text) <= node.high
        return None if ok else f"length {len(text)} is not in {node.low}..{node.high}"
    if not text.isdigit():
        return f"{text!r} is not an unsigned integer"
    if not node.low <= int(text) <= node.high:
        return f"{text} is out of range {node.low}..{node.high}"
    return None


def key_values(element: _Element, node: Node) -> tuple[str, ...]:
    """A list entry's key values, in key order (empty text for a missing key)."""
    found = []
    for key in node.keys:
        child = element.find(clark(key))
        found.append("" if child is None else (child.text or "").strip())
    return tuple(found)


def instance_path(element: _Element) -> str:
    """The absolute XPath of a data element in the module's prefix
    (``/msocc:switch/msocc:ports/msocc:port[msocc:name='Ethernet1']/...``)."""
    steps: list[str] = []
    node: _Element | None = element
    while node is not None and etree.QName(node).namespace == NAMESPACE:
        step = f"{PREFIX}:{local_name(node)}"
        schema = SCHEMA.get(schema_path(node))
        if schema is not None and schema.kind == "list":
            for key, value in zip(schema.keys, key_values(node, schema), strict=True):
                step += f"[{PREFIX}:{key}='{value}']"
        elif schema is not None and schema.kind == "leaf-list":
            step += f"[.='{(node.text or '').strip()}']"
        steps.append(step)
        node = node.getparent()
    return "/" + "/".join(reversed(steps))


PATH_NAMESPACES = {PREFIX: NAMESPACE}


def to_tree(root: _Element) -> dict[str, Any]:
    """The plain-dict tree of a datastore (lists as lists, leaf values as their XML text),
    the shape emulators/switch/config.py's ``parse`` reads."""
    tree: dict[str, Any] = {}
    for child in root:
        if isinstance(child.tag, str) and etree.QName(child).namespace == NAMESPACE:
            _add(tree, child)
    return tree


def _add(parent: dict[str, Any], element: _Element) -> None:
    name = local_name(element)
    node = SCHEMA.get(schema_path(element))
    kind = node.kind if node is not None else "container"
    if kind in ("leaf", "leaf-list"):
        value: Any = (element.text or "").strip()
    else:
        value = {}
        for child in element:
            if isinstance(child.tag, str):
                _add(value, child)
    if kind in ("list", "leaf-list"):
        parent.setdefault(name, []).append(value)
    else:
        parent[name] = value
