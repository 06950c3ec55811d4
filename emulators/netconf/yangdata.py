"""Data tree helpers of the switch emulator on a schema table.

A datastore holds the data of some YANG modules; :class:`DataSchema` is what the
datastores know of them, in the form the edit code reads: every data node by its
schema path with its kind, keys and whether it is configuration. The datastores use it
to match list entries by key during edit-config, to refuse unknown elements and bad
values when an edit arrives, to write error paths, and to turn a datastore into the
plain-dict tree the device reads.

:data:`MSOCTL` is the one of yang/msoctl-congestion.yang, whose table
(drivers/switch/schema.py) is a spec table: paths of local names, one namespace, the
prefix ``msocc`` in error paths, leaf values as their XML text in the tree.
emulators/netconf/openconfig.py derives another from the OpenConfig face's table.
The module-level names below (:data:`CHILDREN`, :func:`instance_path`, :func:`to_tree`
...) are :data:`MSOCTL`'s, as the msoctl module's own validation reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lxml.etree import _Element

from drivers.switch.schema import MODULE, NAMESPACE, PREFIX, SCHEMA, Node
from emulators.netconf.messages import RpcError
from emulators.text import digits as _digits

Path = tuple[str, ...]
Children = dict[Path, dict[str, tuple[Path, Node]]]
_NO_CHILDREN: dict[str, tuple[Path, Node]] = {}


def clark(local: str) -> str:
    return f"{{{NAMESPACE}}}{local}"


def local_name(element: _Element) -> str:
    # The tag's text, not etree.QName: this runs for every element of every datastore.
    return str(element.tag).rpartition("}")[2]


def namespace_of(element: _Element) -> str:
    return str(element.tag).partition("}")[0][1:]


def value_error(node: Node, text: str) -> str | None:
    """Why ``text`` is not a value of the msoctl module's leaf ``node``; ``None`` when
    it is one."""
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


class DataSchema:
    """The data nodes of the modules a datastore holds (see the module docstring).

    ``nodes`` maps each node's schema path to it. A path's names are the members RFC
    7951 writes: qualified ``module:name`` at the top and wherever the module changes
    (an augment), plain elsewhere; a name without a module at the top is in
    ``default_module``. ``namespaces`` gives each module's XML namespace, ``prefixes``
    the prefix error paths write for each namespace (every module's name unless given).
    The tree of :meth:`to_tree` is named by the same members.
    """

    described_as = "the module"
    """What an unknown element is said not to be a node of."""

    def __init__(self, nodes: Mapping[Path, Node], *, namespaces: Mapping[str, str],
                 default_module: str | None = None,
                 prefixes: Mapping[str, str] | None = None):
        self.nodes = dict(nodes)
        self.module_namespaces = dict(namespaces)
        self.namespaces = frozenset(self.module_namespaces[module] for module in (
            *(_module(name) for path in self.nodes for name in path if ":" in name),
            *((default_module,) if default_module else ())))
        self.prefixes = dict(prefixes) if prefixes is not None else {
            namespace: module for module, namespace in self.module_namespaces.items()}
        self.path_namespaces = {prefix: namespace for namespace, prefix
                                in self.prefixes.items() if namespace in self.namespaces}
        self.children: Children = {(): {}}
        """For each schema path (``()`` for the top), its child nodes by Clark tag, with
        their paths: one dict lookup per element where the datastores walk a whole tree."""
        self.tags: dict[Path, str] = {}
        for path in sorted(self.nodes, key=len):  # parents first
            parent = path[:-1]
            module = _module(path[-1]) if ":" in path[-1] else None
            if module is not None:
                namespace = self.module_namespaces[module]
            elif parent:
                namespace = namespace_of_tag(self.tags[parent])
            else:
                if default_module is None:
                    raise ValueError(f"/{'/'.join(path)}: a top-level node names its module")
                namespace = self.module_namespaces[default_module]
            tag = f"{{{namespace}}}{path[-1].rpartition(':')[2]}"
            self.tags[path] = tag
            self.children.setdefault(path, {})
            self.children.setdefault(parent, {})[tag] = (path, self.nodes[path])

    # ---- what each model says of its leaves (overridden by a model's schema) ----------

    def value_error(self, path: Path, node: Node, element: _Element) -> str | None:
        """Why the leaf ``element`` (of ``node`` at ``path``) has no value of its type;
        ``None`` when it has one."""
        return value_error(node, (element.text or "").strip())

    def value(self, path: Path, node: Node, element: _Element) -> Any:
        """The leaf's value in the tree of :meth:`to_tree`: its XML text here."""
        return (element.text or "").strip()

    def prepare(self, config: _Element) -> list[RpcError]:
        """Make a request's leaf values (checked by ``check_structure``) stand alone before
        its subtrees are copied into a datastore, where they lose the declarations of
        their ancestors, and refuse those that cannot: nothing to do where no leaf's
        text names a namespace prefix."""
        return []

    def shown(self, datastore: _Element) -> _Element:
        """What ``<get-config>`` shows of a datastore (before its filter): the datastore
        itself, where its XML stands alone."""
        return datastore

    # ---- elements ---------------------------------------------------------------------

    def in_schema(self, element: _Element) -> bool:
        """Whether ``element`` is a data element of the modules (not a comment, not
        NETCONF's)."""
        return isinstance(element.tag, str) and namespace_of(element) in self.namespaces

    def unknown(self, element: _Element) -> str:
        """The message for an element that is no node of the modules."""
        if self.in_schema(element):
            return f"{local_name(element)} is not a node of {self.described_as}"
        return f"{element.tag} is not in {' or '.join(sorted(self.namespaces))}"

    def key_values(self, element: _Element, node: Node) -> tuple[str, ...]:
        """A list entry's key values, in key order (empty text for a missing key)."""
        namespace = str(element.tag).partition("}")[0]
        found = []
        for key in node.keys:
            child = element.find(f"{namespace}}}{key}")
            found.append("" if child is None else (child.text or "").strip())
        return tuple(found)

    def missing_keys(self, element: _Element, node: Node) -> list[str]:
        namespace = str(element.tag).partition("}")[0]
        return [key for key in node.keys if element.find(f"{namespace}}}{key}") is None]

    def instance_path(self, element: _Element) -> str:
        """The absolute XPath of a data element, each step in its module's prefix
        (``/msocc:switch/msocc:ports/msocc:port[msocc:name='Ethernet1']/...``); a list
        entry without all its keys (only in a request) by its position among its
        siblings (``msocc:port[2]``), as netconfd writes it."""
        lineage: list[_Element] = []
        walked: _Element | None = element
        while walked is not None and self.in_schema(walked):
            lineage.append(walked)
            walked = walked.getparent()
        steps: list[str] = []
        path: Path | None = ()
        for node in reversed(lineage):
            prefix = self.prefixes.get(namespace_of(node), "")
            step = f"{prefix}:{local_name(node)}"
            found = None if path is None else \
                self.children.get(path, _NO_CHILDREN).get(str(node.tag))
            path, schema = (None, None) if found is None else found
            if schema is not None and schema.kind == "list" and \
                    self.missing_keys(node, schema):
                parent = node.getparent()
                siblings = [node] if parent is None else list(parent.iterfind(node.tag))
                step += f"[{siblings.index(node) + 1}]"
            elif schema is not None and schema.kind == "list":
                for key, value in zip(schema.keys, self.key_values(node, schema),
                                      strict=True):
                    step += f"[{prefix}:{key}='{value}']"
            elif schema is not None and schema.kind == "leaf-list":
                step += f"[.='{(node.text or '').strip()}']"
            steps.append(step)
        return "/" + "/".join(steps)

    def namespaces_in(self, path: str) -> dict[str, str]:
        """The prefixes ``path`` (an XPath of :meth:`instance_path`) uses, to declare
        with it; all of them for a path that uses none (``/``)."""
        used = {prefix: namespace for prefix, namespace in self.path_namespaces.items()
                if f"{prefix}:" in path}
        return used or dict(self.path_namespaces)

    # ---- the whole tree ---------------------------------------------------------------

    def to_tree(self, root: _Element) -> dict[str, Any]:
        """The plain-dict tree of a datastore (lists and leaf-lists as lists, leaves as
        :meth:`value` gives them); elements that are no nodes of the modules are left
        out."""
        tree: dict[str, Any] = {}
        self._fill(tree, root, ())
        return tree

    def _fill(self, parent: dict[str, Any], element: _Element, path: Path) -> None:
        children = self.children[path]
        for child in element:
            found = children.get(child.tag)
            if found is None:
                continue
            child_path, node = found
            name = child_path[-1]
            if node.kind in ("leaf", "leaf-list"):
                value: Any = self.value(child_path, node, child)
            else:
                value = {}
                self._fill(value, child, child_path)
            if node.kind in ("list", "leaf-list"):
                parent.setdefault(name, []).append(value)
            else:
                parent[name] = value


def _module(name: str) -> str:
    return name.partition(":")[0]


def namespace_of_tag(tag: str) -> str:
    return tag.partition("}")[0][1:]


MSOCTL = DataSchema(SCHEMA, namespaces={MODULE: NAMESPACE}, default_module=MODULE,
                    prefixes={NAMESPACE: PREFIX})
"""The schema of yang/msoctl-congestion.yang."""

CHILDREN = MSOCTL.children
PATH_NAMESPACES = {PREFIX: NAMESPACE}


def in_module(element: _Element) -> bool:
    """Whether ``element`` is a data element of the msoctl module."""
    return MSOCTL.in_schema(element)


def key_values(element: _Element, node: Node) -> tuple[str, ...]:
    return MSOCTL.key_values(element, node)


def instance_path(element: _Element) -> str:
    return MSOCTL.instance_path(element)


def to_tree(root: _Element) -> dict[str, Any]:
    """The plain-dict tree of a datastore of the msoctl module, the shape
    emulators/switch/config.py's ``parse`` reads."""
    return MSOCTL.to_tree(root)
