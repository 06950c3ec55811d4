"""Data tree helpers of the switch emulator on the module's schema table.

The table itself (drivers/switch/schema.py) is a spec table. The datastores
use it to match list entries by key during edit-config, to refuse unknown
elements and bad values when an edit arrives, to write error paths, and to
turn a datastore into the plain-dict tree that emulators/switch/config.py reads.
"""

from __future__ import annotations

from typing import Any

from lxml.etree import _Element

from drivers.switch.schema import NAMESPACE, PREFIX, SCHEMA, Node
from emulators.text import digits as _digits


def clark(local: str) -> str:
    return f"{{{NAMESPACE}}}{local}"


_IN_MODULE = f"{{{NAMESPACE}}}"


def local_name(element: _Element) -> str:
    # The tag's text, not etree.QName: this runs for every element of every datastore.
    return str(element.tag).rpartition("}")[2]


def in_module(element: _Element) -> bool:
    """Whether ``element`` is a data element of the module (not a comment, not NETCONF's)."""
    tag = element.tag
    return isinstance(tag, str) and tag.startswith(_IN_MODULE)


def schema_path(element: _Element) -> tuple[str, ...]:
    """The schema path of a data element: local names from the top container down."""
    names: list[str] = []
    node: _Element | None = element
    while node is not None and in_module(node):
        names.append(str(node.tag)[len(_IN_MODULE):])
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
    if not _digits(text):
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
    (``/msocc:switch/msocc:ports/msocc:port[msocc:name='Ethernet1']/...``); a list
    entry without all its keys (only in a request) by its position among its
    siblings (``msocc:port[2]``), as netconfd writes it."""
    steps: list[str] = []
    node: _Element | None = element
    while node is not None and in_module(node):
        step = f"{PREFIX}:{local_name(node)}"
        schema = SCHEMA.get(schema_path(node))
        if schema is not None and schema.kind == "list" and \
                any(node.find(clark(key)) is None for key in schema.keys):
            parent = node.getparent()
            siblings = [node] if parent is None else list(parent.iterfind(node.tag))
            step += f"[{siblings.index(node) + 1}]"
        elif schema is not None and schema.kind == "list":
            for key, value in zip(schema.keys, key_values(node, schema), strict=True):
                step += f"[{PREFIX}:{key}='{value}']"
        elif schema is not None and schema.kind == "leaf-list":
            step += f"[.='{(node.text or '').strip()}']"
        steps.append(step)
        node = node.getparent()
    return "/" + "/".join(reversed(steps))


PATH_NAMESPACES = {PREFIX: NAMESPACE}


def _children_table() -> dict[tuple[str, ...], dict[str, tuple[tuple[str, ...], Node]]]:
    table: dict[tuple[str, ...], dict[str, tuple[tuple[str, ...], Node]]] = {(): {}}
    for path, node in SCHEMA.items():
        table.setdefault(path, {})
        table.setdefault(path[:-1], {})[clark(path[-1])] = (path, node)
    return table


CHILDREN = _children_table()
"""For each schema path (``()`` for the top), its child nodes by Clark tag, with their
paths: one dict lookup per element where the datastores walk a whole tree."""


def to_tree(root: _Element) -> dict[str, Any]:
    """The plain-dict tree of a datastore (lists as lists, leaf values as their XML text),
    the shape emulators/switch/config.py's ``parse`` reads; elements that are not nodes
    of the module are left out."""
    tree: dict[str, Any] = {}
    _fill(tree, root, ())
    return tree


def _fill(parent: dict[str, Any], element: _Element, path: tuple[str, ...]) -> None:
    children = CHILDREN[path]
    for child in element:
        found = children.get(child.tag)
        if found is None:
            continue
        child_path, node = found
        name = child_path[-1]
        if node.kind in ("leaf", "leaf-list"):
            value: Any = (child.text or "").strip()
        else:
            value = {}
            _fill(value, child, child_path)
        if node.kind in ("list", "leaf-list"):
            parent.setdefault(name, []).append(value)
        else:
            parent[name] = value
