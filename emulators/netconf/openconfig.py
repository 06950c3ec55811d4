"""OpenConfig in NETCONF datastores: the switch's OpenConfig face served over NETCONF.

The face (:class:`~emulators.switch.faces.openconfig.OpenConfigFace`) speaks RFC 7951
JSON; the datastores (emulators/netconf/datastore.py) hold XML and edit it through a
:class:`~emulators.netconf.yangdata.DataSchema`. This module gives them one, derived
from the face's own table (:mod:`emulators.switch.faces.openconfig_schema`), never
written a second time:

- each row of the table is a node at the same path (the table's RFC 7951 member names:
  ``openconfig-qos:qos``, ``arista-qos-augments:pfc`` where an augment changes the
  module), its XML element in that module's namespace (:data:`NAMESPACES`);
- a list's key leaf (``interface/name``, which the table gives only as the list's key)
  has the type of its ``config/<key>``;
- every ``config`` container has a ``state`` sibling (``config false``) mirroring it,
  and the state leaves the device fills from the chip's counters
  (:data:`~emulators.switch.faces.openconfig_schema.COUNTERS`) are in those: an edit
  that writes state is refused as the msoctl module's are.

Leaf values in XML are read as RFC 7951 writes them in JSON (RFC 7950 9 and RFC 7951
6): integers up to 32 bits as numbers, uint64 and decimal64 as strings, booleans, and an
identityref ``prefix:NAME`` (the prefix declared in scope, or the default namespace
without one: RFC 7950 9.10.3; a prefix declared nowhere is refused) as ``module:NAME``;
each is then checked by the face's own
:func:`~emulators.switch.faces.openconfig.check_value`.

Identities and lxml: a prefix used only in a leaf's text is invisible to lxml, which
drops a declaration whose namespace an ancestor declares already (under any prefix)
when a subtree moves into another tree, and the edit code copies and moves subtrees.
So a datastore keeps an identity as its RFC 7951 text (``openconfig-if-ethernet:
SPEED_400GB``), whatever declarations its copies lose, and ``<get-config>`` and
``<get>`` write their trees afresh (:meth:`OpenConfigSchema.to_xml`), declaring each
prefix where the moves of a reply keep it.

:class:`OpenConfigNetconf` joins the face to the datastores: every change of running
(a commit, a confirmed commit's rollback) is running converted to JSON and handed to
the face's ``commit``, whose :class:`~emulators.gnmi.face.FaceError` is the reply
(``invalid-value`` for a document that does not fit the model, ``operation-failed`` for
one the chip cannot run, each with the face's path as an XML error-path); ``<validate>``
asks the face's ``check``; ``<get>`` shows the face's operational tree (configuration,
``state`` containers, counters) converted back to XML.

The YANG library (:func:`modules`) lists each module the face serves with its revision,
and ``/netconf-state/schemas`` only those whose text the server carries in yang/
(msoctl-qos-augments): the OpenConfig modules' texts are not in this repository. The
modules those import (openconfig-types, openconfig-extensions, ietf-interfaces,
iana-if-type ...) are not listed: the face restates none of them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import Node
from emulators.gnmi.face import FaceError, Tree
from emulators.netconf.datastore import empty
from emulators.netconf.library import Module
from emulators.netconf.messages import RpcError
from emulators.netconf.validation import YANG_DIRECTORY
from emulators.netconf.yangdata import DataSchema, Path, local_name, namespace_of
from emulators.switch.faces import openconfig_schema as table
from emulators.switch.faces.openconfig import Augments, OpenConfigFace, check_value
from emulators.switch.faces.openconfig_schema import NAMESPACES, UINT64, LeafType

_INTEGER = re.compile(r"-?[0-9]+")


def _path(text: str) -> Path:
    return tuple(text[1:].split("/"))


def derived_nodes(augments: Augments) -> tuple[dict[Path, Node], dict[Path, LeafType]]:
    """The face's table (the parts ``augments`` serves) as the datastores' nodes, with
    each leaf's type: see the module docstring."""
    rows = table.nodes(table.PARTS[augments])
    nodes: dict[Path, Node] = {}
    types: dict[Path, LeafType] = {}
    for text, row in rows.items():
        path = _path(text)
        nodes[path] = Node(row.kind, keys=(row.key,) if row.key else (),
                           type=row.type.name if row.type else None)
        if row.type is not None:
            types[path] = row.type
    for path, node in list(nodes.items()):
        if node.kind == "list":
            key = (*path, node.keys[0])
            types[key] = types[(*path, "config", node.keys[0])]
            nodes[key] = Node("leaf", type=types[key].name)
    for path, node in list(nodes.items()):
        if "config" in path:  # config containers hold leaves only: one per path
            where = path.index("config")
            state = (*path[:where], "state", *path[where + 1:])
            nodes[state] = Node(node.kind, config=False, type=node.type)
            if path in types:
                types[state] = types[path]
    for counter in table.COUNTERS:
        if counter.part in table.PARTS[augments]:
            path = (*_path(counter.state), counter.leaf)
            nodes[path] = Node("leaf", config=False, type=UINT64.name)
            types[path] = UINT64
    return nodes, types


def modules(augments: Augments) -> tuple[Module, ...]:
    """The data modules of a switch serving the face with ``augments``: the YANG library's
    entries and the hello's capabilities (``NS?module=NAME&revision=...``)."""
    found = []
    for model in table.MODELS:
        if model.part in table.PARTS[augments]:
            text = YANG_DIRECTORY / f"{model.name}.yang"
            found.append(Module(model.name, model.revision, NAMESPACES[model.name],
                                source=text if text.is_file() else None, in_hello=True))
    return tuple(found)


class OpenConfigSchema(DataSchema):
    """The OpenConfig face's nodes as the datastores read them (see the module
    docstring); :meth:`to_tree` gives RFC 7951 JSON, :meth:`to_xml` the way back."""

    described_as = "the models this switch serves"

    def __init__(self, augments: Augments):
        nodes, self.types = derived_nodes(augments)
        super().__init__(nodes, namespaces=NAMESPACES)
        self.modules_by_namespace = {namespace: module for module, namespace
                                     in NAMESPACES.items()}
        self.identities = frozenset(path for path, leaf_type in self.types.items()
                                    if leaf_type.identities or leaf_type.identity_module)
        self.identity_namespaces = frozenset(
            NAMESPACES[module] for path in self.identities
            for module in {self.types[path].identity_module or "",
                           *(name.partition(":")[0] for name in self.types[path].identities)}
            if module)

    # ---- leaves -----------------------------------------------------------------------

    def value_error(self, path: Path, node: Node, element: _Element) -> str | None:
        leaf_type = self.types[path]
        text = (element.text or "").strip()
        value: Any = text
        if path in self.identities:
            value = self._identity(element)
            if value is None:
                return _undeclared(text)
        elif leaf_type.json == "number":
            if not _INTEGER.fullmatch(text):
                return f"{text!r} is not a {leaf_type.name}"
            value = int(text)
        elif leaf_type.json == "boolean":
            if text not in ("true", "false"):
                return f"{text!r} is not a boolean"
            value = text == "true"
        try:
            check_value(leaf_type, "", "", value)
        except FaceError as error:
            return error.message
        return None

    def value(self, path: Path, node: Node, element: _Element) -> Any:
        """The leaf's RFC 7951 value."""
        text = (element.text or "").strip()
        if path in self.identities:
            return self._identity(element) or text
        kind = self.types[path].json
        if kind == "number" and _INTEGER.fullmatch(text):
            return int(text)
        if kind == "boolean" and text in ("true", "false"):
            return text == "true"
        return text

    def _identity(self, element: _Element) -> str | None:
        """An identityref's ``module:NAME``: its prefix (the default namespace without one)
        as declared where it stands, or else a module's name, as the datastores keep it
        (:meth:`prepare` refuses a request that leaves it undeclared); None when it is
        neither."""
        prefix, _, name = (element.text or "").strip().rpartition(":")
        declared = element.nsmap.get(prefix or None)
        module = self.modules_by_namespace.get(declared or "") if declared else \
            (prefix if prefix in NAMESPACES else None)
        return None if module is None or not name else f"{module}:{name}"

    def prepare(self, config: _Element) -> list[RpcError]:
        """Every identity in ``config`` written as ``module:NAME``, which it stays in the
        datastores whatever declarations its copies lose (lxml drops a declaration used
        only in text when a subtree moves); one whose prefix is not declared is refused
        (RFC 7950 9.10.3), the module's name no less than another."""
        errors: list[RpcError] = []
        self._canonical(config, (), errors)
        return errors

    def _canonical(self, parent: _Element, path: Path, errors: list[RpcError]) -> None:
        children = self.children.get(path, {})
        for element in parent:
            found = children.get(element.tag) if isinstance(element.tag, str) else None
            if found is None:
                continue
            child_path, node = found
            if child_path in self.identities:
                text = (element.text or "").strip()
                if element.nsmap.get(text.rpartition(":")[0] or None) is None:
                    where = self.instance_path(element)
                    errors.append(RpcError(
                        "invalid-value", f"{local_name(element)}: {_undeclared(text)}",
                        path=where, path_namespaces=self.namespaces_in(where),
                        info={"bad-element": local_name(element)}))
                    continue
                element.text = self._identity(element) or element.text
            elif node.kind in ("container", "list"):
                self._canonical(element, child_path, errors)

    def shown(self, datastore: _Element) -> _Element:
        """The datastore written again from its tree, each identity's prefix declared
        (:meth:`to_xml`)."""
        holder = empty()
        holder.extend(self.to_xml(self.to_tree(datastore)))
        return holder

    # ---- JSON -> XML ------------------------------------------------------------------

    def to_xml(self, tree: Mapping[str, Any]) -> list[_Element]:
        """The top-level elements of an RFC 7951 tree (the face's configuration or
        operational tree), list keys first (RFC 7950 7.8.5), an identity as
        ``module:NAME`` with the module's name declared as a prefix (RFC 7950 9.10.3).

        That declaration goes on the element where the identity's namespace first comes
        in scope (its default namespace there), or on the leaf where it does not: lxml
        drops a declaration of a namespace an ancestor declares already, whatever its
        prefix, when a subtree moves into another tree (a reply, say)."""
        tops = []
        for member, value in tree.items():
            module, _, local = member.partition(":")
            namespace = NAMESPACES[module]
            top = etree.Element(f"{{{namespace}}}{local}", nsmap=self._nsmap(namespace))
            self._write(top, (member,), value)
            tops.append(top)
        return tops

    def _nsmap(self, namespace: str) -> dict[str | None, str]:
        """The declarations of an element whose namespace differs from its parent's."""
        if namespace in self.identity_namespaces:
            return {None: namespace, self.modules_by_namespace[namespace]: namespace}
        return {None: namespace}

    def _write(self, element: _Element, path: Path, value: Mapping[str, Any]) -> None:
        node = self.nodes.get(path)
        keys = node.keys if node is not None and node.kind == "list" else ()
        namespace = namespace_of(element)
        for member in [*(k for k in keys if k in value), *(m for m in value if m not in keys)]:
            child_path = (*path, member)
            module, _, local = member.rpartition(":")
            child_namespace = NAMESPACES[module] if module else namespace
            tag = f"{{{child_namespace}}}{local}"
            nsmap = None if child_namespace == namespace else self._nsmap(child_namespace)
            items = value[member] if isinstance(value[member], list) else [value[member]]
            for item in items:
                if child_path in self.identities and isinstance(item, str) and ":" in item:
                    prefix = item.partition(":")[0]
                    if prefix in NAMESPACES and element.nsmap.get(prefix) != NAMESPACES[prefix]:
                        nsmap = {**(nsmap or {}), prefix: NAMESPACES[prefix]}
                child = etree.SubElement(element, tag, nsmap=nsmap)
                if isinstance(item, Mapping):
                    self._write(child, child_path, item)
                else:
                    child.text = ("true" if item else "false") if isinstance(item, bool) \
                        else str(item)

    # ---- the face's errors ------------------------------------------------------------

    def error(self, error: FaceError) -> RpcError:
        """The rpc-error of a face's refusal: ``operation-failed`` for what the chip cannot
        run, ``invalid-value`` for what does not fit the model; the face's path as an
        XML error-path (in the modules' names as prefixes)."""
        tag = "operation-failed" if error.code == "FAILED_PRECONDITION" else "invalid-value"
        path = self.xpath(error.path)
        if path is None:
            return RpcError(tag, str(error))
        bad = path.rpartition("/")[2].partition("[")[0].rpartition(":")[2]
        return RpcError(tag, error.message, path=path, path_namespaces=self.namespaces_in(path),
                        info={"bad-element": bad})

    def xpath(self, gnmi_path: str | None) -> str | None:
        """A gNMI path (``/openconfig-qos:qos/queues/queue[name=q]/config``) as an XPath
        (``/openconfig-qos:qos/openconfig-qos:queues/openconfig-qos:queue[openconfig-qos:
        name='q']/...``); None for the root or what is not a path of these modules."""
        elements = _gnmi_elements(gnmi_path or "")
        if not elements:
            return None
        steps = []
        module = None
        for name, keys in elements:
            if ":" in name:
                module, _, name = name.partition(":")
            if module not in NAMESPACES or not name:
                return None
            prefix = self.prefixes[NAMESPACES[module]]
            steps.append(f"{prefix}:{name}" + "".join(
                f"[{prefix}:{key}={_literal(value)}]" for key, value in keys))
        return "/" + "/".join(steps)


def _undeclared(text: str) -> str:
    prefix = text.rpartition(":")[0]
    return f"{text!r}: the prefix {prefix!r} is not declared (RFC 7950 9.10.3)" if prefix \
        else f"{text!r} is not an identity"


def _literal(value: str) -> str:
    return f'"{value}"' if "'" in value else f"'{value}'"


def _gnmi_elements(path: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """A gNMI path's elements with their keys (``]`` and ``\\`` escaped in a value);
    empty for the root or a malformed path."""
    elements: list[tuple[str, list[tuple[str, str]]]] = []
    text = path.strip("/")
    position = 0
    name, keys = "", list[tuple[str, str]]()
    try:
        while position < len(text):
            char = text[position]
            if char == "/":
                elements.append((name, keys))
                name, keys = "", []
            elif char == "[":
                equals = text.index("=", position)
                key, value = text[position + 1:equals], ""
                position = equals + 1
                while text[position] != "]":
                    position += text[position] == "\\"
                    value += text[position]
                    position += 1
                keys.append((key, value))
            else:
                name += char
            position += 1
    except (ValueError, IndexError):
        return []
    if name:
        elements.append((name, keys))
    return elements


class OpenConfigNetconf:
    """The OpenConfig face behind NETCONF datastores (see the module docstring): the
    hooks :class:`~emulators.netconf.datastore.Datastores` calls. Every call to the face
    holds ``lock`` (the device's: the chip is read and changed from other threads)."""

    name = "openconfig"  # a validator's name

    def __init__(self, face: OpenConfigFace, *, lock: threading.RLock):
        self.face = face
        self.lock = lock
        self.schema = OpenConfigSchema(face.augments)
        self.modules = modules(face.augments)

    def factory(self) -> _Element:
        """The face's factory configuration as a datastore (a ``<config>`` holder)."""
        holder = empty()
        holder.extend(self.schema.to_xml(self.face.factory()))
        return holder

    def commit(self, config: Tree) -> None:
        """Running's new configuration (RFC 7951 JSON) to the face, or its refusal as an
        rpc-error."""
        with self.lock:
            try:
                self.face.commit(config)
            except FaceError as error:
                raise self.schema.error(error) from None

    def must_errors(self, root: _Element) -> list[RpcError]:
        """What the face refuses of the configuration ``root`` (the datastores' validator:
        ``<validate>``, ``<commit>`` and ``test-only`` ask it)."""
        try:
            self.face.check(self.schema.to_tree(root))
        except FaceError as error:
            return [self.schema.error(error)]
        return []

    def operational(self, running: _Element) -> _Element:
        """What ``<get>`` shows of ``running``: the face's operational tree as XML."""
        config = self.schema.to_tree(running)
        with self.lock:
            tree = self.face.operational(config)
        holder = empty()
        holder.extend(self.schema.to_xml(tree))
        return holder
