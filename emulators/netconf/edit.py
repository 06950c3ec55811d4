"""edit-config (RFC 6241 7.2) on a datastore tree, and subtree filtering (6).

A datastore is a ``<config>`` element (base namespace) holding the module's
``<switch>``. :func:`apply_edit` changes a copy and returns it with the errors
it met; the caller keeps or drops the copy according to the error-option.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from lxml import etree
from lxml.etree import _Element

from drivers.switch.schema import SCHEMA, Node
from emulators.netconf.messages import RpcError
from emulators.netconf.validation import OPERATION
from emulators.netconf.yangdata import (
    PATH_NAMESPACES,
    instance_path,
    key_values,
    schema_path,
)

OPERATIONS = ("merge", "replace", "create", "delete", "remove")
DEFAULT_OPERATIONS = ("merge", "replace", "none")
ERROR_OPTIONS = ("stop-on-error", "rollback-on-error", "continue-on-error")


class StopEdit(Exception):
    """The first error under stop-on-error or rollback-on-error: stop there."""


@dataclass
class Edit:
    continue_on_error: bool
    errors: list[RpcError] = field(default_factory=list)

    def fail(self, error: RpcError) -> None:
        self.errors.append(error)
        if not self.continue_on_error:
            raise StopEdit


def apply_edit(datastore: _Element, config: _Element, *, default_operation: str,
               error_option: str) -> tuple[_Element, list[RpcError]]:
    """``datastore`` (left untouched) with the ``<config>`` edit applied, and the errors.

    Under stop-on-error the copy holds what was done before the first error;
    under continue-on-error everything that could be done.
    """
    result = copy.deepcopy(datastore)
    edit = Edit(continue_on_error=error_option == "continue-on-error")
    try:
        _children(result, config, default_operation, edit)
    except StopEdit:
        pass
    return result, edit.errors


def _children(target: _Element, edit_parent: _Element, inherited: str, edit: Edit) -> None:
    for element in edit_parent:
        if isinstance(element.tag, str):
            _node(target, element, inherited, edit)


def _match(target: _Element, element: _Element, node: Node | None) -> _Element | None:
    for candidate in target.iterfind(element.tag):
        if node is None or node.kind in ("container", "leaf"):
            return candidate
        if node.kind == "list" and key_values(candidate, node) == key_values(element, node):
            return candidate
        if node.kind == "leaf-list" and \
                (candidate.text or "").strip() == (element.text or "").strip():
            return candidate
    return None


def _clean(element: _Element) -> _Element:
    """A copy of an edit subtree without its operation attributes."""
    fresh = copy.deepcopy(element)
    for node in fresh.iter():
        if isinstance(node.tag, str) and OPERATION in node.attrib:
            del node.attrib[OPERATION]
    etree.cleanup_namespaces(fresh)
    return fresh


def _node(target: _Element, element: _Element, inherited: str, edit: Edit) -> None:
    operation = element.get(OPERATION, inherited)
    if operation not in OPERATIONS and not (operation == "none" and OPERATION not in
                                            element.attrib):
        edit.fail(RpcError("bad-attribute", f"operation {operation!r} is not one of "
                           f"{', '.join(OPERATIONS)}", error_type="protocol",
                           info={"bad-attribute": "operation",
                                 "bad-element": str(etree.QName(element).localname)}))
        return
    node = SCHEMA.get(schema_path(element))
    existing = _match(target, element, node)
    leafy = node is not None and node.kind in ("leaf", "leaf-list")
    if operation in ("delete", "remove"):
        if existing is not None:
            target.remove(existing)
        elif operation == "delete":
            edit.fail(_path_error("data-missing", "delete of a node that does not exist",
                                  target, element))
        return
    if operation == "create" and existing is not None:
        edit.fail(_path_error("data-exists", "create of a node that already exists",
                              target, element))
        return
    if operation in ("create", "replace") or (existing is None and operation == "merge"):
        _insert(target, _clean(element), existing)
        if operation == "merge" and not leafy:
            # a merge may carry deeper operations (a delete below a new node, say)
            inserted = _match(target, element, node)
            if inserted is not None:
                for child in list(inserted):
                    inserted.remove(child)
                _keys_into(inserted, element, node)
                _children(inserted, element, operation, edit)
        return
    if existing is None:  # operation none
        if leafy:  # a leaf under none only says where the edit goes: left alone
            return
        # RFC 6241 7.2: under "none", data with no corresponding level in the target
        # is data-missing (reported at the first missing level, as netconfd does);
        # "none" never creates the hierarchy a deeper operation would need.
        edit.fail(_path_error("data-missing", "default-operation none: this node is not "
                              "in the datastore", target, element))
        return
    if leafy:
        if operation == "merge":
            existing.text = element.text
        return
    _children(existing, element, operation, edit)


def _keys_into(holder: _Element, element: _Element, node: Node | None) -> None:
    if node is None or node.kind != "list":
        return
    for key in node.keys:
        source = element.find(f"{{{etree.QName(element).namespace}}}{key}")
        if source is not None and holder.find(source.tag) is None:
            holder.append(_clean(source))


def _insert(target: _Element, fresh: _Element, existing: _Element | None) -> None:
    if existing is not None:
        existing.addprevious(fresh)
        target.remove(existing)
    else:
        target.append(fresh)


def _path_error(tag: str, message: str, target: _Element, element: _Element) -> RpcError:
    probe = copy.deepcopy(element)
    target.append(probe)  # borrowed for a moment, so the path has its ancestors
    try:
        path = instance_path(probe)
    finally:
        target.remove(probe)
    return RpcError(tag, message, path=path, path_namespaces=PATH_NAMESPACES)


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
    others = [c for c in criteria if c not in matches]
    if not others:
        for child in data:
            if isinstance(child.tag, str):
                out.append(copy.deepcopy(child))
        return out
    for child in data:
        if not isinstance(child.tag, str):
            continue
        if any(child.tag == m.tag for m in matches):
            out.append(copy.deepcopy(child))
            continue
        for criterion in others:
            if child.tag != criterion.tag:
                continue
            if len(criterion) == 0:
                out.append(copy.deepcopy(child))
            else:
                kept = _filtered(child, criterion)
                if kept is not None and len(kept):
                    out.append(kept)
            break
    return out
