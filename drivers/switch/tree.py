"""Configuration trees of yang/msoctl-congestion.yang: checked, written as XML, read back, compared.

A tree is the plain-dict shape ``msoctl switch plan`` prints and a WANT file
holds: ``{"switch": {"fast-cnp": {...}, "ports": {"port": [{"name": ...}]}}}``,
lists as lists of entries, leaf-lists as lists of values. Everything here is
driven by the module's schema table (:mod:`drivers.switch.schema`):

- :func:`check` refuses, before anything is sent, what the device would refuse
  by type: an unknown name, a state node, a value out of range, a list entry
  without its key, the same key twice. Each error names the node's path.
- :func:`to_xml` writes ``<config>`` for edit-config: the base namespace on
  ``<config>``, the module's on ``<switch>``, list keys first (RFC 7950 7.8.5),
  and ``nc:operation="replace"`` on the nodes the caller asks for.
- :func:`from_xml` reads a datastore or ``<get>`` reply back into a typed
  tree (ints, bools, strings).
- :func:`diff` compares two trees leaf by leaf, list entries by key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree
from lxml.etree import _Element

from drivers.errors import ValidationError
from drivers.switch.schema import NAMESPACE, SCHEMA, Node
from drivers.yamlfile import shown, unsafe_character

NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
TOP = "switch"
Path = tuple[str, ...]
Value = int | bool | str


def _q(name: str, namespace: str = NAMESPACE) -> str:
    return f"{{{namespace}}}{name}"


def _step(name: str, node: Node, entry: Mapping[str, Any] | None = None) -> str:
    if node.kind == "list" and entry is not None:
        return name + "".join(f"[{key}='{entry.get(key)}']" for key in node.keys)
    return name


def _display(steps: Iterable[str]) -> str:
    return "/" + "/".join(steps)


# ---- checking ------------------------------------------------------------------------


def check(tree: Any, *, source: str = "configuration") -> dict[str, Any]:
    """``tree`` as a typed configuration tree, or :class:`ValidationError` naming the path.

    Leaf values may be given as YAML gives them (ints, bools) or as strings in
    YANG's XML encoding ("400G", "true", "24000000").
    """
    if not isinstance(tree, Mapping) or set(tree) != {TOP}:
        raise ValidationError(f"{source}: the top level must be one key, {TOP!r}")
    return {TOP: _check_container(tree[TOP], (TOP,), [TOP], source)}


def _check_container(value: Any, path: Path, steps: list[str], source: str) -> dict[str, Any]:
    where = _display(steps)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(f"{source}: {where}: must be a mapping, got {value!r}")
    result: dict[str, Any] = {}
    for name, child in value.items():
        child_path = (*path, str(name))
        node = SCHEMA.get(child_path)
        at = _at(value, str(name), source)
        if node is None:
            known = sorted(p[-1] for p in SCHEMA if p[:-1] == path and SCHEMA[p].config)
            raise ValidationError(f"{at}: {where}/{shown(name)}: unknown; known here: "
                                  f"{', '.join(known)}")
        if not node.config:
            raise ValidationError(f"{at}: {where}/{name}: is state data, not configuration")
        result[str(name)] = _check_node(child, node, child_path, [*steps, str(name)], at)
    return result


def _at(mapping: Mapping[str, Any], key: str, source: str) -> str:
    """``source`` with the line of ``key`` when the tree came from a file that knows it
    (:class:`drivers.yamlfile.LinedDict`): ``want.yaml:12``."""
    line_of = getattr(mapping, "line_of", None)
    if line_of is None:
        return source
    base = source.rsplit(":", 1)[0] if source.rsplit(":", 1)[-1].isdigit() else source
    return f"{base}:{line_of(key)}"


def _check_node(value: Any, node: Node, path: Path, steps: list[str], source: str) -> Any:
    if node.kind == "container":
        return _check_container(value, path, steps, source)
    if node.kind == "leaf":
        return _leaf_value(value, node, _display(steps), source)
    where = _display(steps)
    if not isinstance(value, list):
        raise ValidationError(f"{source}: {where}: must be a list, got {value!r}")
    if node.kind == "leaf-list":
        values = [_leaf_value(item, node, where, source) for item in value]
        if len(set(values)) != len(values):
            raise ValidationError(f"{source}: {where}: a value is given twice")
        return values
    entries: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise ValidationError(f"{source}: {where}[{index + 1}]: must be a mapping")
        missing = [key for key in node.keys if item.get(key) is None]
        if missing:
            raise ValidationError(f"{source}: {where}[{index + 1}]: needs its key "
                                  f"{', '.join(missing)}")
        entry = _check_container(item, path, [*steps[:-1], _step(steps[-1], node, item)],
                                 source)
        key = tuple(entry[k] for k in node.keys)
        if key in seen:
            where_entry = _display([*steps[:-1], _step(steps[-1], node, item)])
            raise ValidationError(f"{source}: {where_entry}: given twice")
        seen.add(key)
        entries.append(entry)
    return entries


def _leaf_value(value: Any, node: Node, where: str, source: str) -> Value:
    if isinstance(value, Mapping | list) or value is None:
        raise ValidationError(f"{source}: {where}: must be a single value, got {value!r}")
    if node.type == "boolean":
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return bool(value == "true")
        raise ValidationError(f"{source}: {where}: {value!r} is not true or false")
    if node.type in ("enumeration", "string"):
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValidationError(f"{source}: {where}: {value!r} is not text")
        text = str(value)
        if unsafe_character(text) is not None:
            # XML cannot carry most control characters; none belongs in configuration
            raise ValidationError(f"{source}: {where}: {shown(text)} contains a control or "
                                  "formatting character")
        if node.type == "enumeration" and text not in node.enum:
            raise ValidationError(f"{source}: {where}: {text!r} is not one of "
                                  f"{', '.join(node.enum)}")
        if node.type == "string" and not node.low <= len(text) <= node.high:
            raise ValidationError(f"{source}: {where}: length {len(text)} is not in "
                                  f"{node.low}..{node.high}")
        return text
    if isinstance(value, bool):
        raise ValidationError(f"{source}: {where}: {value!r} is not a number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    else:
        raise ValidationError(f"{source}: {where}: {value!r} is not an unsigned integer")
    if not node.low <= number <= node.high:
        raise ValidationError(f"{source}: {where}: {number} is out of range "
                              f"{node.low}..{node.high}")
    return number


# ---- XML -------------------------------------------------------------------------------


def to_xml(tree: Mapping[str, Any], *, replace: Iterable[Path] = ()) -> _Element:
    """``<config>`` holding ``tree`` (checked first); nodes at the schema paths in
    ``replace`` (``("switch", "ports", "port")``: every port given) carry
    ``operation="replace"``."""
    checked = check(tree)
    replaced = set(replace)
    config = etree.Element(_q("config", NETCONF_NS), nsmap={"nc": NETCONF_NS})
    top = etree.SubElement(config, _q(TOP), nsmap={None: NAMESPACE})
    _write_children(top, checked[TOP], (TOP,), replaced)
    if (TOP,) in replaced:
        top.set(_q("operation", NETCONF_NS), "replace")
    return config


def _write_children(parent: _Element, value: Mapping[str, Any], path: Path,
                    replaced: set[Path]) -> None:
    node = SCHEMA[path]
    names = list(node.keys) + [name for name in value if name not in node.keys]
    for name in names:
        if name not in value:
            continue
        child_path = (*path, name)
        child = SCHEMA[child_path]
        items = value[name] if child.kind in ("list", "leaf-list") else [value[name]]
        for item in items:
            element = etree.SubElement(parent, _q(name))
            if child_path in replaced:
                element.set(_q("operation", NETCONF_NS), "replace")
            if child.kind in ("leaf", "leaf-list"):
                element.text = _text(item)
            else:
                _write_children(element, item, child_path, replaced)


def _text(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def from_xml(root: _Element | None) -> dict[str, Any]:
    """The typed tree of a reply's ``<data>`` (or any element holding ``<switch>``);
    ``{"switch": {}}`` when it holds none. Elements of other modules are ignored."""
    top = None if root is None else root.find(_q(TOP))
    if top is None:
        return {TOP: {}}
    return {TOP: _read_children(top, (TOP,))}


def _read_children(element: _Element, path: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for child in element:
        if not isinstance(child.tag, str) or etree.QName(child).namespace != NAMESPACE:
            continue
        name = str(etree.QName(child).localname)
        child_path = (*path, name)
        node = SCHEMA.get(child_path)
        if node is None:
            continue  # a newer revision's node: not ours to interpret
        if node.kind in ("leaf", "leaf-list"):
            value: Any = _parse_leaf((child.text or "").strip(), node)
        else:
            value = _read_children(child, child_path)
        if node.kind in ("list", "leaf-list"):
            result.setdefault(name, []).append(value)
        else:
            result[name] = value
    return result


def _parse_leaf(text: str, node: Node) -> Value:
    if node.type == "boolean":
        return text == "true"
    if node.type == "uint" and text.isascii() and text.isdigit():
        return int(text)
    return text


# ---- comparing ------------------------------------------------------------------------


_PORT_PATH = re.compile(r"^/switch/ports/port\[name='(?P<port>[^']*)'\](?:/(?P<rest>.*))?$")
"""A path of this module under a port: the port's name, and the rest of the path."""


@dataclass(frozen=True)
class Change:
    """One leaf that differs: ``before`` None is an addition, ``after`` None a removal.

    ``port`` and ``aspect`` say what the leaf configures: its port (``None`` for the
    switch as a whole) and what of it. A device model gives them with its own paths
    (:func:`drivers.switch.models.base.model_changes`: the intent's field); for a path of
    this module, given without them, they are read from the path (the leaf's path under
    its port, or, switch-wide, the leaf's name)."""

    path: str
    before: Value | list[Value] | None
    after: Value | list[Value] | None
    port: str | None = None
    aspect: str | None = None

    def __post_init__(self) -> None:
        if self.aspect is not None:
            return
        match = _PORT_PATH.match(self.path)
        if match is None:
            object.__setattr__(self, "aspect", self.path.rsplit("/", 1)[-1])
        else:
            object.__setattr__(self, "port", match["port"])
            object.__setattr__(self, "aspect", match["rest"] or "")

    @property
    def kind(self) -> str:
        if self.before is None:
            return "add"
        return "remove" if self.after is None else "change"

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "before": self.before,
                "after": self.after}


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Change]:
    """Every leaf that differs between two typed trees, in schema order of ``after``."""
    return list(_diff_container(before.get(TOP) or {}, after.get(TOP) or {}, (TOP,), [TOP]))


def _diff_container(before: Mapping[str, Any], after: Mapping[str, Any], path: Path,
                    steps: list[str]) -> Iterator[Change]:
    names = list(after) + [name for name in before if name not in after]
    for name in names:
        child_path = (*path, name)
        node = SCHEMA.get(child_path)
        if node is None:
            continue
        old, new = before.get(name), after.get(name)
        child_steps = [*steps, name]
        if node.kind == "leaf":
            if old != new:
                yield Change(_display(child_steps), old, new)
        elif node.kind == "leaf-list":
            if sorted(old or []) != sorted(new or []):
                yield Change(_display(child_steps), sorted(old) if old else None,
                             sorted(new) if new else None)
        elif node.kind == "container":
            yield from _diff_container(old or {}, new or {}, child_path, child_steps)
        else:
            yield from _diff_list(old or [], new or [], node, child_path, steps, name)


def _diff_list(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]], node: Node,
               path: Path, steps: list[str], name: str) -> Iterator[Change]:
    def keyed(entries: list[Mapping[str, Any]]) -> dict[tuple[Any, ...], Mapping[str, Any]]:
        return {tuple(entry.get(k) for k in node.keys): entry for entry in entries}

    old, new = keyed(before), keyed(after)
    for key in list(new) + [k for k in old if k not in new]:
        entry = new.get(key) or old[key]
        entry_steps = [*steps, _step(name, node, entry)]
        old_entry = {k: v for k, v in (old.get(key) or {}).items() if k not in node.keys}
        new_entry = {k: v for k, v in (new.get(key) or {}).items() if k not in node.keys}
        yield from _diff_container(old_entry, new_entry, path, entry_steps)


def merge(base: Mapping[str, Any], want: Mapping[str, Any], *,
          replace: Iterable[Path] = ()) -> dict[str, Any]:
    """What edit-config with default-operation merge makes of ``base`` given ``want``
    (nodes at the paths in ``replace`` replaced whole): the expected result, used to
    verify a commit and to plan on a server without :candidate."""
    return {TOP: _merge_container(base.get(TOP) or {}, want.get(TOP) or {}, (TOP,),
                                  set(replace))}


def _merge_container(base: Mapping[str, Any], want: Mapping[str, Any], path: Path,
                     replaced: set[Path]) -> dict[str, Any]:
    result = dict(base)
    for name, value in want.items():
        child_path = (*path, name)
        node = SCHEMA[child_path]
        if node.kind in ("leaf", "leaf-list") or (node.kind == "container"
                                                   and child_path in replaced):
            result[name] = value
        elif node.kind == "container":
            result[name] = _merge_container(base.get(name) or {}, value, child_path, replaced)
        else:
            entries = {tuple(e.get(k) for k in node.keys): e for e in base.get(name) or []}
            for entry in value:
                key = tuple(entry.get(k) for k in node.keys)
                entries[key] = entry if child_path in replaced else _merge_container(
                    entries.get(key) or {}, entry, child_path, replaced)
            result[name] = list(entries.values())
    return result


def unmet(want: Mapping[str, Any], have: Mapping[str, Any]) -> list[Change]:
    """The leaves of ``want`` that ``have`` does not hold with the same value (what a
    server adds, defaults say, is not a difference)."""
    return [change for change in diff(have, want) if change.after is not None]
