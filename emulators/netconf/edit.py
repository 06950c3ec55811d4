"""edit-config (RFC 6241 7.2) on a datastore tree, and subtree filtering (6).

A datastore is a ``<config>`` element (base namespace) holding the module's
``<switch>`` (or the trees of another model: the schema is
:class:`~emulators.netconf.yangdata.DataSchema`, the msoctl module's by default).
:func:`apply_edit` changes a copy and returns it with the errors it met; the
caller keeps the copy only when there is no error (a failed edit leaves its target
as it was, whatever the error-option: see emulators/netconf/datastore.py).

Both run in time linear in the sizes of the datastore and of the request, so
an edit of tens of thousands of list entries is answered in seconds:

- a list entry (or a leaf-list value, or a container) of the request is found
  among its siblings in the datastore through an index built once per parent,
  by key values, and kept up to date as entries are added and removed,
  never by scanning the siblings again;
- schema nodes are found by one lookup of the element's tag among its parent's
  (:attr:`~emulators.netconf.yangdata.DataSchema.children`), never walked up from each
  node;
- a subtree new to the datastore is copied in one piece unless an operation
  attribute sits somewhere inside it (one pass over the request finds those),
  in which case it is built up node by node so that inner operations apply.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass, field

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import Node
from emulators.netconf.messages import RpcError
from emulators.netconf.validation import OPERATION
from emulators.netconf.yangdata import MSOCTL, DataSchema

OPERATIONS = ("merge", "replace", "create", "delete", "remove")
DEFAULT_OPERATIONS = ("merge", "replace", "none")
ERROR_OPTIONS = ("stop-on-error", "rollback-on-error", "continue-on-error")

Path = tuple[str, ...]


class StopEdit(Exception):
    """The first error under stop-on-error or rollback-on-error: stop there."""


@dataclass
class Edit:
    """One edit in progress: its errors, the request's nodes that carry (or hold below
    them) an operation attribute, and the sibling indexes of the datastore copy."""

    continue_on_error: bool
    schema: DataSchema = MSOCTL
    errors: list[RpcError] = field(default_factory=list)
    with_operations: set[_Element] = field(default_factory=set)
    indexes: dict[_Element, dict[Hashable, _Element]] = field(default_factory=dict)

    def fail(self, error: RpcError) -> None:
        self.errors.append(error)
        if not self.continue_on_error:
            raise StopEdit

    def existing(self, target: _Element, path: Path, element: _Element,
                 node: Node | None) -> tuple[_Element | None, Hashable]:
        """The child of ``target`` that ``element`` of the request names, and its key.

        A container or leaf is its parent's one child of that name (found in C); list
        and leaf-list entries go through an index of ``target``'s entries by key,
        built on first use and kept up to date by :func:`_put` and :func:`_drop`.
        """
        key = match_key(element, node, self.schema)
        if node is None or node.kind not in ("list", "leaf-list"):
            return target.find(element.tag), key
        found = self.indexes.get(target)
        if found is None:
            found = {}
            children = self.schema.children.get(path, _NO_CHILDREN)
            for child in target:
                entry = children.get(child.tag)
                if entry is not None and entry[1].kind in ("list", "leaf-list"):
                    found.setdefault(match_key(child, entry[1], self.schema), child)
            self.indexes[target] = found
        return found.get(key), key


def apply_edit(datastore: _Element, config: _Element, *, default_operation: str,
               error_option: str, schema: DataSchema = MSOCTL
               ) -> tuple[_Element, list[RpcError]]:
    """``datastore`` (left untouched) with the ``<config>`` edit applied, and the errors;
    ``schema`` is what the datastore holds.

    Under stop-on-error and rollback-on-error the edit stops at the first error;
    under continue-on-error it goes on and reports every error it meets. With
    errors, the copy holds a partial result that the caller must not keep.
    """
    result = copy.deepcopy(datastore)
    edit = Edit(continue_on_error=error_option == "continue-on-error", schema=schema,
                with_operations=_marked(config))
    try:
        _children(result, (), config, default_operation, edit)
    except StopEdit:
        pass
    return result, edit.errors


_WITH_OPERATION = etree.XPath("descendant-or-self::*[@nc:operation]",
                               namespaces={"nc": OPERATION[1:].partition("}")[0]})


def _marked(config: _Element) -> set[_Element]:
    """Every element of the request that carries an operation attribute or has one
    below it: one pass, each ancestor added once."""
    marked: set[_Element] = set()
    for element in _WITH_OPERATION(config):  # in C: a Python loop over every node is not
        node: _Element | None = element
        while node is not None and node not in marked:
            marked.add(node)
            node = node.getparent()
    return marked


_NO_CHILDREN: dict[str, tuple[Path, Node]] = {}
_NOWHERE: Path = ("",)  # the path below anything that is not a node of the module


def _lookup(schema: DataSchema, path: Path, element: _Element) -> tuple[Path, Node | None]:
    """``element``'s schema path and node, as a child of the node at ``path``."""
    found = schema.children.get(path, _NO_CHILDREN).get(element.tag)
    return (_NOWHERE, None) if found is None else found


def match_key(element: _Element, node: Node | None, schema: DataSchema = MSOCTL) -> Hashable:
    """What identifies ``element`` among its siblings (RFC 6241 7.2 with RFC 7950 7.8):
    a list entry by its keys, a leaf-list entry by its value, anything else by name."""
    tag = str(element.tag)
    if node is not None and node.kind == "list":
        return tag, schema.key_values(element, node)
    if node is not None and node.kind == "leaf-list":
        return tag, (element.text or "").strip()
    return tag


def _children(target: _Element, path: Path, edit_parent: _Element, inherited: str,
              edit: Edit) -> None:
    children = edit.schema.children.get(path, _NO_CHILDREN)
    for element in edit_parent:
        tag = element.tag
        if not isinstance(tag, str):
            continue
        if inherited == "merge" and OPERATION not in element.attrib:
            # the bulk of every edit, taken short (what _node does for these): a leaf
            # merged in, a container that is there already merged into
            found = children.get(tag)
            kind = None if found is None else found[1].kind
            if kind == "leaf":
                existing = target.find(tag)
                if existing is None:
                    target.append(copy.deepcopy(element))
                else:
                    existing.text = element.text
                continue
            if kind == "container" and found is not None:
                existing = target.find(tag)
                if existing is not None:
                    _children(existing, found[0], element, inherited, edit)
                    continue
        _node(target, path, element, inherited, edit)


def _node(target: _Element, path: Path, element: _Element, inherited: str,
          edit: Edit) -> None:
    operation = element.get(OPERATION, inherited)
    if operation not in OPERATIONS and not (operation == "none" and OPERATION not in
                                            element.attrib):
        edit.fail(RpcError("bad-attribute", f"operation {operation!r} is not one of "
                           f"{', '.join(OPERATIONS)}", error_type="protocol",
                           info={"bad-attribute": "operation",
                                 "bad-element": str(etree.QName(element).localname)}))
        return
    here, node = _lookup(edit.schema, path, element)
    existing, key = edit.existing(target, path, element, node)
    leafy = node is not None and node.kind in ("leaf", "leaf-list")
    if operation in ("delete", "remove"):
        if existing is not None:
            _drop(target, existing, key, edit)
        elif operation == "delete":
            edit.fail(_path_error("data-missing", "delete of a node that does not exist",
                                  target, element, edit.schema))
        return
    if operation == "create" and existing is not None:
        edit.fail(_path_error("data-exists", "create of a node that already exists",
                              target, element, edit.schema))
        return
    if operation in ("create", "replace") or (existing is None and operation == "merge"):
        if operation == "merge" and not leafy and element in edit.with_operations:
            # a merge may carry deeper operations (a delete below a new node, say):
            # the node starts with its keys and the rest is merged into it
            shell = etree.Element(element.tag)
            _keys_into(shell, element, node)
            _put(target, shell, existing, key, edit)
            _children(shell, here, element, operation, edit)
        else:
            _put(target, _clean(element, edit), existing, key, edit)
        return
    if existing is None:  # operation none
        if leafy:  # a leaf under none only says where the edit goes: left alone
            return
        # RFC 6241 7.2: under "none", data with no corresponding level in the target
        # is data-missing (reported at the first missing level, as netconfd does);
        # "none" never creates the hierarchy a deeper operation would need.
        edit.fail(_path_error("data-missing", "default-operation none: this node is not "
                              "in the datastore", target, element, edit.schema))
        return
    if leafy:
        if operation == "merge":
            existing.text = element.text
        return
    _children(existing, here, element, operation, edit)


def _keys_into(holder: _Element, element: _Element, node: Node | None) -> None:
    if node is None or node.kind != "list":
        return
    for key in node.keys:
        source = element.find(f"{{{etree.QName(element).namespace}}}{key}")
        if source is not None:
            fresh = copy.deepcopy(source)
            fresh.attrib.pop(OPERATION, None)
            holder.append(fresh)


def _clean(element: _Element, edit: Edit) -> _Element:
    """A copy of an edit subtree without its operation attributes."""
    fresh = copy.deepcopy(element)
    if element not in edit.with_operations:
        return fresh  # nothing to strip: the copy declares only the namespaces it uses
    for node in fresh.iter():
        if isinstance(node.tag, str) and OPERATION in node.attrib:
            del node.attrib[OPERATION]
    etree.cleanup_namespaces(fresh)
    return fresh


def _put(target: _Element, fresh: _Element, existing: _Element | None, key: Hashable,
         edit: Edit) -> None:
    """``fresh`` in place of ``existing`` (at its position), or appended to ``target``."""
    if existing is not None:
        existing.addprevious(fresh)
        target.remove(existing)
        edit.indexes.pop(existing, None)
    else:
        target.append(fresh)
    index = edit.indexes.get(target)
    if index is not None:  # only the parents of list entries have one
        index[key] = fresh


def _drop(target: _Element, existing: _Element, key: Hashable, edit: Edit) -> None:
    target.remove(existing)
    index = edit.indexes.get(target)
    if index is not None:
        del index[key]
    edit.indexes.pop(existing, None)


def _path_error(tag: str, message: str, target: _Element, element: _Element,
                schema: DataSchema) -> RpcError:
    probe = copy.deepcopy(element)
    target.append(probe)  # borrowed for a moment, so the path has its ancestors
    try:
        path = schema.instance_path(probe)
    finally:
        target.remove(probe)
    return RpcError(tag, message, path=path, path_namespaces=schema.namespaces_in(path))


# ---- subtree filtering ---------------------------------------------------------------


def subtree_filter(data: _Element, filter_element: _Element | None) -> list[_Element]:
    """Copies of the children of ``data`` that ``filter_element`` selects (RFC 6241 6);
    every child when there is no filter."""
    if filter_element is None:
        return [copy.deepcopy(child) for child in data if isinstance(child.tag, str)]
    selected = _filtered(data, filter_element)
    return [] if selected is None else list(selected)


def _filtered(data: _Element, spec: _Element) -> _Element | None:
    """A copy of ``data`` cut down by the filter node ``spec``'s children; ``None``
    when one of its content-match nodes does not match."""
    criteria = [child for child in spec if isinstance(child.tag, str)]
    out = etree.Element(data.tag, nsmap=data.nsmap)
    matches = [c for c in criteria if len(c) == 0 and (c.text or "").strip()]
    for match in matches:
        if not any((d.text or "").strip() == (match.text or "").strip()
                   for d in data.iterfind(match.tag)):
            return None
    matched_tags = {match.tag for match in matches}
    others: dict[str, list[_Element]] = {}  # by tag: each child meets only its own
    for criterion in criteria:
        if criterion.tag not in matched_tags:
            others.setdefault(str(criterion.tag), []).append(criterion)
    if not others:
        for child in data:
            if isinstance(child.tag, str):
                out.append(copy.deepcopy(child))
        return out
    for child in data:
        if not isinstance(child.tag, str):
            continue
        if child.tag in matched_tags:
            out.append(copy.deepcopy(child))
            continue
        for criterion in others.get(str(child.tag), ()):
            # sibling selection nodes of one name are alternatives (RFC 6241 6.2.5):
            # the first that selects something from this child takes it
            if len(criterion) == 0:
                out.append(copy.deepcopy(child))
                break
            kept = _filtered(child, criterion)
            if kept is not None and len(kept):
                out.append(kept)
                break
    return out
