"""A device model's JSON trees (RFC 7951) as NETCONF's XML (RFC 7950 section 7) and back.

A model written once for JSON (:mod:`drivers.switch.models`) is spoken over NETCONF
with what XML needs that JSON does not say, which is the model's data
(:class:`XmlShape`): each module's namespace, which names are lists (their key
leaves come first, RFC 7950 7.8.5) and leaf-lists, and how a leaf's text is typed
back (numbers and booleans; 64-bit integers and decimals stay strings, as RFC 7951
writes them; an identity ``module:NAME`` travels as ``prefix:NAME`` with the prefix
declared).

- :func:`edit_config` writes the ``<config>`` of an :class:`~drivers.switch.jsontree.Edit`:
  every path's ancestors once, ``nc:operation="replace"`` on what it replaces,
  ``"remove"`` on what it deletes, plain merge for updates.
- :func:`read_trees` reads a ``<data>`` reply into the model's trees, by read path.
- :func:`subtree_filter` is the ``<filter>`` that asks for those trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from lxml.etree import _Element

from drivers.switch.jsontree import DevicePath, Edit

NETCONF_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"


@dataclass(frozen=True)
class XmlShape:
    """What XML needs of a model beyond its JSON (see the module docstring)."""

    namespaces: Mapping[str, str]
    """Module name -> its XML namespace."""
    list_keys: Mapping[str, tuple[str, ...]]
    leaf_lists: frozenset[str] = frozenset()
    numbers: frozenset[str] = frozenset()
    """Leaves whose JSON is a number (integers up to 32 bits)."""
    booleans: frozenset[str] = frozenset()
    identities: frozenset[str] = frozenset()
    """Leaves whose value is an identity, ``module:NAME`` in JSON."""
    modules: Mapping[str, str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "modules", {ns: m for m, ns in self.namespaces.items()})


def _local(name: str) -> tuple[str | None, str]:
    module, _, local = name.rpartition(":")
    return module or None, local


class _Writer:
    def __init__(self, shape: XmlShape):
        self.shape = shape
        self.config = etree.Element(f"{{{NETCONF_NS}}}config", nsmap={"nc": NETCONF_NS})

    def _child(self, parent: _Element, name: str, namespace: str,
               keys: tuple[tuple[str, str], ...] = ()) -> _Element:
        """The child ``name`` with these key values, made when it is not there yet."""
        tag = f"{{{namespace}}}{name}"
        for found in parent.findall(tag):
            if all(found.findtext(f"{{{namespace}}}{k}") == v for k, v in keys):
                return found
        element = etree.SubElement(parent, tag, nsmap=None if parent.nsmap.get(None) ==
                                   namespace else {None: namespace})
        for key, value in keys:
            etree.SubElement(element, f"{{{namespace}}}{key}").text = value
        return element

    def at(self, where: DevicePath, operation: str | None) -> tuple[_Element, str]:
        parent, namespace = self.config, ""
        for index, (name, keys) in enumerate(where):
            module, local = _local(name)
            if module is not None:
                namespace = self.shape.namespaces[module]
            parent = self._child(parent, local, namespace, keys)
            if index == len(where) - 1 and operation is not None:
                parent.set(f"{{{NETCONF_NS}}}operation", operation)
        return parent, namespace

    def value(self, element: _Element, namespace: str, name: str, value: Any) -> None:
        """``value`` (the JSON of node ``name``) into ``element``."""
        if not isinstance(value, Mapping):
            element.text = _text(value)
            return
        keys = self.shape.list_keys.get(_local(name)[1], ())
        written = {etree.QName(f).localname for f in element}
        for member, item in sorted(value.items(),
                                   key=lambda m: 0 if _local(m[0])[1] in keys else 1):
            module, local = _local(member)
            child_ns = self.shape.namespaces[module] if module else namespace
            if local in keys and local in written:
                continue  # the key leaf the path wrote already
            for entry in item if isinstance(item, list) else [item]:
                nsmap: dict[str | None, str] = {} if child_ns == namespace \
                    else {None: child_ns}
                identity = self._identity(local, entry)
                # An identity of the leaf's own namespace is written without a prefix: the
                # default namespace then names it (RFC 7950 9.10.3). A prefix declared for
                # it on the leaf would be dropped as redundant when the document is put
                # into the RPC, leaving the value's prefix undeclared.
                foreign = identity is not None and identity[0] != child_ns
                if identity is not None and foreign:
                    nsmap["id"] = identity[0]
                child = etree.SubElement(element, f"{{{child_ns}}}{local}",
                                         nsmap=nsmap or None)
                if identity is not None:
                    child.text = f"id:{identity[1]}" if foreign else identity[1]
                else:
                    self.value(child, child_ns, local, entry)

    def _identity(self, local: str, value: Any) -> tuple[str, str] | None:
        """An identity leaf's value as (its module's namespace, its name)."""
        if local not in self.shape.identities or not isinstance(value, str):
            return None
        module, _, name = value.partition(":")
        namespace = self.shape.namespaces.get(module)
        return None if namespace is None or not name else (namespace, name)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def edit_config(edit: Edit, shape: XmlShape) -> _Element:
    """The ``<config>`` element that carries ``edit`` out (see the module docstring)."""
    writer = _Writer(shape)
    for where in edit.delete:
        writer.at(where, "remove")
    for where, value in edit.replace:
        element, namespace = writer.at(where, "replace")
        writer.value(element, namespace, where[-1][0], value)
    for where, value in edit.update:
        element, namespace = writer.at(where, None)
        writer.value(element, namespace, where[-1][0], value)
    return writer.config


def subtree_filter(roots: Iterable[DevicePath], shape: XmlShape) -> list[_Element]:
    """One empty element per tree's top (``<qos xmlns=...>``): a subtree filter for each."""
    found = []
    for root in roots:
        module, local = _local(root[0][0])
        assert module is not None, "a read path starts with its module"
        namespace = shape.namespaces[module]
        element = etree.Element(f"{{{namespace}}}{local}", nsmap={None: namespace})
        for name, keys in root[1:]:
            element = etree.SubElement(element, f"{{{namespace}}}{_local(name)[1]}")
            for key, value in keys:
                etree.SubElement(element, f"{{{namespace}}}{key}").text = value
        found.append(element.getroottree().getroot())
    return found


def _typed(element: _Element, local: str, shape: XmlShape) -> Any:
    text = (element.text or "").strip()
    if local in shape.booleans:
        return text == "true"
    if local in shape.numbers and text.lstrip("-").isdigit():
        return int(text)
    if local in shape.identities:
        prefix, _, name = text.rpartition(":")
        namespace = element.nsmap.get(prefix or None)  # no prefix: the default namespace
        module = shape.modules.get(namespace or "")
        return f"{module}:{name}" if module else text
    return text


def to_json(element: _Element, shape: XmlShape, parent_namespace: str | None = None) -> Any:
    """The RFC 7951 value of ``element``'s content."""
    children = [c for c in element if isinstance(c.tag, str)]
    if not children:
        return _typed(element, etree.QName(element).localname, shape)
    result: dict[str, Any] = {}
    namespace = etree.QName(element).namespace
    for child in children:
        qname = etree.QName(child)
        module = shape.modules.get(qname.namespace or "")
        if module is None:
            continue  # a module this model does not speak
        name = qname.localname if qname.namespace == namespace else f"{module}:{qname.localname}"
        value = to_json(child, shape, namespace)
        entry = qname.localname in shape.list_keys and any(
            isinstance(c.tag, str) for c in child)  # a leaf may share a list's name
        if qname.localname in shape.leaf_lists or entry:
            result.setdefault(name, []).append(value)
        else:
            result[name] = value
    return result


def read_trees(data: _Element | None, roots: Iterable[DevicePath],
               shape: XmlShape) -> dict[DevicePath, Any]:
    """The trees at ``roots`` in a ``<data>`` reply (``None`` for one it lacks)."""
    trees: dict[DevicePath, Any] = {}
    for root in roots:
        module, local = _local(root[0][0])
        namespace = shape.namespaces[str(module)]
        top = None if data is None else data.find(f"{{{namespace}}}{local}")
        for name, keys in root[1:]:
            if top is None:
                break
            candidates = top.findall(f"{{{namespace}}}{_local(name)[1]}")
            top = next((c for c in candidates if all(
                c.findtext(f"{{{namespace}}}{k}") == v for k, v in keys)), None)
        trees[root] = None if top is None else to_json(top, shape)
    return trees
