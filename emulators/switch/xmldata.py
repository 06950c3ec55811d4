"""Plain-dict trees of yang/msoctl-congestion.yang written as XML, for the switch emulator.

The model speaks plain dicts in the module's names (``SwitchModel.state_tree()``,
the factory configuration); the NETCONF datastores hold XML. :func:`to_xml`
turns one into the other: lists are Python lists of entries (each written as
one element, its keys first as RFC 7950 7.8.5 asks), leaf-lists are lists of
values, booleans are ``true``/``false``. The schema table
(:mod:`drivers.switch.schema`, a spec table) says which nodes are lists and
what their keys are; a name it does not know is refused with ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import NAMESPACE, SCHEMA


def to_xml(tree: Mapping[str, Any]) -> _Element:
    """The element of a tree with one top node (``{"switch": {...}}``), in the module's
    namespace."""
    if len(tree) != 1:
        raise ValueError(f"a tree has one top node, got {', '.join(tree) or 'none'}")
    [(name, value)] = tree.items()
    root = etree.Element(f"{{{NAMESPACE}}}{name}", nsmap={None: NAMESPACE})
    _fill(root, (name,), value)
    return root


def _fill(element: _Element, path: tuple[str, ...], value: Any) -> None:
    node = SCHEMA.get(path)
    if node is None:
        raise ValueError(f"/{'/'.join(path)} is not in the module")
    if node.kind in ("leaf", "leaf-list"):
        element.text = _text(value)
        return
    if not isinstance(value, Mapping):
        raise ValueError(f"/{'/'.join(path)}: expected a container or list entry")
    keys = [key for key in node.keys if key in value] if node.kind == "list" else []
    for key in [*keys, *(k for k in value if k not in keys)]:
        child_path = (*path, key)
        child = SCHEMA.get(child_path)
        entries = value[key] if child is not None and child.kind in ("list", "leaf-list") \
            else [value[key]]
        if not isinstance(entries, list):
            raise ValueError(f"/{'/'.join(child_path)}: expected a list")
        for entry in entries:
            _fill(etree.SubElement(element, f"{{{NAMESPACE}}}{key}"), child_path, entry)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
