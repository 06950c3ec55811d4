"""Configuration as JSON trees (RFC 7951), addressed by gNMI-style paths.

A device model writes its edits as paths and values (:class:`Edit`); the same edit is
sent to the switch (a gNMI SetRequest, or NETCONF) and carried out here on a copy of
what was read, to show the plan as the device will have it and to know what a
rollback has to put back. Paths are tuples of :data:`Elem` (a name and its list keys)
and are written in gNMI's path notation by :func:`path_text`.

A tree is the JSON value at a path; :class:`Trees` holds several (one per path read,
``/openconfig-qos:qos``, ``/sonic-db:CONFIG_DB/localhost/QUEUE``...). A list is an
array of entries that carry their key members; which members are a list's keys is
the model's data (``list_keys``: the list's name to its key names).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from drivers.errors import ValidationError

Keys = tuple[tuple[str, str], ...]
Elem = tuple[str, Keys]
DevicePath = tuple[Elem, ...]


def elem(node: str, /, **keys: str | int) -> Elem:
    """One path element; ``elem("queue", name="UC3")``. Key names with ``-`` are given
    through :func:`keyed`."""
    return (node, tuple((key.replace("_", "-"), str(value)) for key, value in keys.items()))


def keyed(name: str, keys: Mapping[str, str | int]) -> Elem:
    return (name, tuple((key, str(value)) for key, value in keys.items()))


def path(*parts: str | Elem) -> DevicePath:
    """A path from plain names and :func:`elem` elements."""
    return tuple(part if isinstance(part, tuple) else (part, ()) for part in parts)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]").replace("/", "\\/")


def path_text(where: DevicePath) -> str:
    """gNMI path notation: ``/qos/queues/queue[name=UC3]/config``."""
    return "/" + "/".join(
        name.replace("/", "\\/") + "".join(f"[{key}={_escape(value)}]" for key, value in keys)
        for name, keys in where)


@dataclass
class Edit:
    """What a model wants done, in the order gNMI's Set does it: deletes, replaces,
    updates. Values are JSON (RFC 7951)."""

    delete: list[DevicePath] = field(default_factory=list)
    replace: list[tuple[DevicePath, Any]] = field(default_factory=list)
    update: list[tuple[DevicePath, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.delete or self.replace or self.update)


def _local(name: str) -> str:
    return name.rpartition(":")[2]


def member_of(node: Mapping[str, Any], name: str) -> str | None:
    """The member of ``node`` that path element ``name`` names: exactly, or by local name
    when one of the two carries a module prefix (RFC 7951 qualifies a member only where
    its module changes; a path may or may not)."""
    if name in node:
        return name
    local = _local(name)
    found = [key for key in node if _local(key) == local]
    return found[0] if len(found) == 1 else None


def _matches(entry: Any, keys: Keys) -> bool:
    return isinstance(entry, Mapping) and all(
        str(_scalar(entry.get(member_of(entry, key) or key))) == value for key, value in keys)


def _scalar(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class Trees:
    """JSON trees by the path they were read at; edits apply to copies."""

    def __init__(self, trees: Mapping[DevicePath, Any], *,
                 list_keys: Mapping[str, tuple[str, ...]]):
        self.trees = {where: copy.deepcopy(value) for where, value in trees.items()}
        self.list_keys = list_keys

    def copy(self) -> Trees:
        return Trees(self.trees, list_keys=self.list_keys)

    def by_text(self) -> dict[str, Any]:
        """The trees by their paths written out (:func:`path_text`)."""
        return {path_text(where): value for where, value in self.trees.items()}

    def _root(self, where: DevicePath) -> tuple[DevicePath, DevicePath]:
        for root in sorted(self.trees, key=len, reverse=True):
            if where[:len(root)] == root:
                return root, where[len(root):]
        raise ValidationError(f"{path_text(where)} is outside what was read")

    def get(self, where: DevicePath) -> Any:
        """The value at ``where``, ``None`` when there is none."""
        root, rest = self._root(where)
        node: Any = self.trees[root]
        for name, keys in rest:
            if not isinstance(node, Mapping):
                return None
            member = member_of(node, name)
            node = None if member is None else node[member]
            if keys:
                if not isinstance(node, list):
                    return None
                node = next((entry for entry in node if _matches(entry, keys)), None)
            if node is None:
                return None
        return node

    def _parent(self, where: DevicePath, *, create: bool) -> tuple[Any, Elem] | None:
        root, rest = self._root(where)
        if not rest:
            raise ValidationError(f"{path_text(where)}: a whole tree is not edited here")
        if self.trees[root] is None:
            if not create:
                return None
            self.trees[root] = {}
        node: Any = self.trees[root]
        for name, keys in rest[:-1]:
            member = member_of(node, name)
            if member is None:
                if not create:
                    return None
                member = name
                node[member] = [] if keys else {}
            child = node[member]
            if keys:
                entry = next((e for e in child if _matches(e, keys)), None)
                if entry is None:
                    if not create:
                        return None
                    entry = dict(keys)
                    child.append(entry)
                child = entry
            node = child
        return node, rest[-1]

    def delete(self, where: DevicePath) -> None:
        found = self._parent(where, create=False)
        if found is None:
            return
        node, (name, keys) = found
        member = member_of(node, name)
        if member is None:
            return
        if keys:
            node[member] = [entry for entry in node[member] if not _matches(entry, keys)]
        else:
            del node[member]

    def replace(self, where: DevicePath, value: Any) -> None:
        found = self._parent(where, create=True)
        assert found is not None
        node, (name, keys) = found
        member = member_of(node, name) or name
        if keys:
            entries = [e for e in node.get(member) or [] if not _matches(e, keys)]
            entries.append({**dict(keys), **copy.deepcopy(value)})
            node[member] = entries
        else:
            node[member] = copy.deepcopy(value)

    def update(self, where: DevicePath, value: Any) -> None:
        current = self.get(where)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged = _merged(dict(current), value, self.list_keys)
            self.replace(where, merged)
        else:
            self.replace(where, value)

    def apply(self, edit: Edit) -> Trees:
        """A copy with ``edit`` carried out, as Set does: deletes, replaces, updates."""
        result = self.copy()
        for where in edit.delete:
            result.delete(where)
        for where, value in edit.replace:
            result.replace(where, value)
        for where, value in edit.update:
            result.update(where, value)
        return result

    def leaves(self) -> dict[str, Any]:
        """Every leaf, by its path text: a leaf-list is one leaf whose value is a list."""
        found: dict[str, Any] = {}
        for root, value in self.trees.items():
            for steps, leaf in _walk(value, list(root), self.list_keys):
                found[path_text(tuple(steps))] = leaf
        return found


def _merged(base: dict[str, Any], value: Mapping[str, Any],
            list_keys: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    for name, item in value.items():
        member = member_of(base, name) or name
        old = base.get(member)
        if isinstance(old, Mapping) and isinstance(item, Mapping):
            base[member] = _merged(dict(old), item, list_keys)
        elif isinstance(old, list) and isinstance(item, list) and item \
                and isinstance(item[0], Mapping):
            entries = list(old)
            for entry in item:
                keys = _entry_keys(entry, _local(name), list_keys)
                index = next((i for i, e in enumerate(entries) if _matches(e, keys)), None)
                if index is None:
                    entries.append(copy.deepcopy(entry))
                else:
                    entries[index] = _merged(dict(entries[index]), entry, list_keys)
            base[member] = entries
        else:
            base[member] = copy.deepcopy(item)
    return base


def _entry_keys(entry: Mapping[str, Any], name: str,
                list_keys: Mapping[str, tuple[str, ...]]) -> Keys:
    candidates = list_keys.get(name, ("name",))
    for key in candidates:
        member = member_of(entry, key)
        if member is not None:
            return ((key, str(_scalar(entry[member]))),)
    raise ValidationError(f"an entry of list {name} has none of its keys "
                          f"({', '.join(candidates)})")


def _walk(value: Any, steps: list[Elem], list_keys: Mapping[str, tuple[str, ...]]
          ) -> Iterator[tuple[list[Elem], Any]]:
    if isinstance(value, Mapping):
        for name, item in value.items():
            if isinstance(item, list) and item and isinstance(item[0], Mapping):
                for entry in item:
                    keys = _entry_keys(entry, _local(name), list_keys)
                    key_names = {key for key, _ in keys}
                    inner = {k: v for k, v in entry.items() if _local(k) not in key_names}
                    yield from _walk(inner, [*steps, (name, keys)], list_keys)
            else:
                yield from _walk(item, [*steps, (name, ())], list_keys)
    elif isinstance(value, list):
        yield steps, sorted(value, key=str)
    elif value is not None:
        yield steps, value


def changes(before: Trees, after: Trees) -> list[tuple[str, Any, Any]]:
    """``(path, before, after)`` of every leaf that differs, in ``after``'s order."""
    old, new = before.leaves(), after.leaves()
    found = [(where, old.get(where), value) for where, value in new.items()
             if old.get(where) != value]
    found += [(where, value, None) for where, value in old.items() if where not in new]
    return found


def within(where: DevicePath, roots: Sequence[DevicePath]) -> bool:
    return any(where[:len(root)] == root for root in roots)
