"""Paths applied to a JSON tree (RFC 7951) without a schema: read, delete, replace, update.

The server knows no data model, so every rule here reads the tree itself:

- **Member names.** A path element or a value's member ``name`` matches the tree's
  member of that name. Written with the module of its parent (``openconfig-qos:queue``
  under ``openconfig-qos:qos``) it is that parent's unqualified member (RFC 7951 4:
  only a change of module is qualified), and such names are stored unqualified. A bare
  name also matches a member qualified by another module (an augment,
  ``arista-qos-augments:pfc``) when exactly one does; at the top, where every member is
  qualified, a bare name creating a member takes the qualified name of the factory
  tree's member of that local name (``qos`` -> ``openconfig-qos:qos``).
- **Lists.** An array of objects is a list. An element with keys selects the entries
  whose key leaves equal the key values, compared as strings (``true``/``false`` for
  booleans); ``*`` as a value matches any. An element naming a list without keys stands
  for the whole array when it ends the path and for every entry when it does not (in a
  read). A list entry created from a path's keys gets its key leaves, typed as the value
  written or the list's other entries hold them (else strings).
- **An entry's identity**, where no path gives keys (an array inside an update's value,
  the concrete path of an entry reached through a list without keys): its ``name`` leaf
  when it has one, else all its direct scalar members. OpenConfig holds only the key
  leaves directly in a list entry (everything else sits in its ``config`` and ``state``
  containers), and most of its lists are keyed by ``name``.
- **Update** merges: objects member by member, recursively; arrays of objects entry by
  entry by identity (a new identity is appended); anything else (scalars, arrays of
  scalars: leaf-lists) is replaced. **Replace** sets the subtree exactly. Both create
  the containers and list entries along the path. **Delete** of a node that is not there
  is no error (gNMI 3.4.6); deleting a list's last entry removes the list.

Errors are :class:`GnmiError`: INVALID_ARGUMENT for a path that cannot address the tree
(keys on a container, a list without keys inside a write, keys contradicting the value).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from emulators.gnmi.errors import GnmiError
from emulators.gnmi.paths import WILDCARD, Elem, format_path

Tree = dict[str, Any]
Match = tuple[list[Elem], Any]
"""One node a read path selected: its concrete path (no wildcards) and its value."""


# ---- names ----------------------------------------------------------------------------

def module_of(name: str) -> str | None:
    return name.split(":", 1)[0] if ":" in name else None


def local_name(name: str) -> str:
    return name.split(":", 1)[-1]


def canonical(name: str, parent_module: str | None) -> str:
    """``name`` as RFC 7951 writes it below a node of ``parent_module``."""
    return local_name(name) if parent_module and module_of(name) == parent_module else name


def find_member(node: Tree, name: str, parent_module: str | None) -> str | None:
    """The member of ``node`` that ``name`` means, or ``None``."""
    wanted = canonical(name, parent_module)
    if wanted in node:
        return wanted
    if ":" not in wanted:
        found = [member for member in node if local_name(member) == wanted]
        if len(found) > 1:
            raise GnmiError("INVALID_ARGUMENT", f"{wanted!r} is ambiguous here: "
                                                f"{', '.join(sorted(found))}; qualify it")
        return found[0] if found else None
    if parent_module is None:  # a qualified top-level name for a bare member (SONiC)
        bare = local_name(wanted)
        return bare if bare in node else None
    return None


def _name_for_write(node: Tree, name: str, parent_module: str | None,
                    top_names: Collection[str]) -> str:
    """The member ``name`` means in ``node``, or the name to create it under."""
    found = find_member(node, name, parent_module)
    if found is not None:
        return found
    if parent_module is None and top_names:
        known = find_member(dict.fromkeys(top_names), name, None)
        if known is not None:
            return known
    return canonical(name, parent_module)


def normalized(value: Any, module: str | None, top_names: Collection[str] = ()) -> Any:
    """``value`` with member names as the tree stores them below a node of ``module``."""
    if isinstance(value, dict):
        result: Tree = {}
        for name, child in value.items():
            stored = _name_for_write(result, name, module, top_names)
            result[stored] = normalized(child, module_of(stored) or module)
        return result
    if isinstance(value, list):
        return [normalized(entry, module) for entry in value]
    return value


# ---- list entries ---------------------------------------------------------------------

def key_text(value: Any) -> str | None:
    """A key leaf's value as a path writes it; ``None`` for a non-scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def _key_member(entry: Tree, key: str) -> str | None:
    return key if key in entry else find_member(entry, key, None)


def entry_matches(entry: Any, keys: tuple[tuple[str, str], ...]) -> bool:
    if not isinstance(entry, dict):
        return False
    for key, wanted in keys:
        member = _key_member(entry, key)
        if member is None or (wanted != WILDCARD and key_text(entry[member]) != wanted):
            return False
    return True


def identity(entry: Tree) -> tuple[tuple[str, str], ...]:
    """The key leaves that identify ``entry`` where no path names them (module docstring)."""
    name = key_text(entry.get("name"))
    if name is not None:
        return (("name", name),)
    return tuple(sorted((member, text) for member, value in entry.items()
                        if (text := key_text(value)) is not None))


def _typed_key(key: str, text: str, array: list[Any], value: Any) -> Any:
    """The key leaf ``key`` of a new entry, typed as ``value`` or the other entries hold it."""
    samples: list[Any] = []
    if isinstance(value, dict):
        samples.append(value.get(key))
        config = value.get("config")
        if isinstance(config, dict):
            samples.append(config.get(key))
    samples.extend(entry.get(key) for entry in array if isinstance(entry, dict))
    for sample in samples:
        if isinstance(sample, bool):
            return text == "true"
        if isinstance(sample, int):
            try:
                return int(text)
            except ValueError:
                return text
        if isinstance(sample, float):
            try:
                return float(text)
            except ValueError:
                return text
        if isinstance(sample, str):
            return text
    return text


def _check_keys(elem: Elem, value: Any, where: list[Elem]) -> None:
    """gNMI 3.4.5: key leaves in the value must not contradict the path's keys."""
    if not isinstance(value, dict):
        return
    for key, wanted in elem.keys:
        member = _key_member(value, key)
        if member is not None and key_text(value[member]) != wanted:
            raise GnmiError("INVALID_ARGUMENT",
                            f"{format_path(where)}: the value sets key {key} to "
                            f"{value[member]!r}, the path to {wanted!r}")


def _entry(array: list[Any], elem: Elem, value: Any, where: list[Elem], *,
           create: bool) -> Tree | None:
    """The entry of ``array`` that ``elem``'s keys select (created when missing)."""
    found = [entry for entry in array if entry_matches(entry, elem.keys)]
    if len(found) > 1:
        raise GnmiError("INVALID_ARGUMENT", f"{format_path(where)}: the keys select "
                                            f"{len(found)} entries; give every key")
    if found:
        return found[0]  # type: ignore[no-any-return]
    if not create:
        return None
    entry = {key: _typed_key(key, text, array, value) for key, text in elem.keys}
    array.append(entry)
    return entry


# ---- reading --------------------------------------------------------------------------

def select(tree: Tree, elems: list[Elem]) -> list[Match]:
    """Every node ``elems`` selects in ``tree``, with its concrete path (module docstring)."""
    found: list[Match] = []
    _select(tree, elems, 0, None, [], found)
    return found


def _select(node: Any, elems: list[Elem], depth: int, module: str | None,
            trail: list[Elem], found: list[Match]) -> None:
    if depth == len(elems):
        found.append((trail, node))
        return
    if not isinstance(node, dict):
        return
    elem = elems[depth]
    if elem.name == WILDCARD:
        names = list(node)
    else:
        member = find_member(node, elem.name, module)
        names = [] if member is None else [member]
    last = depth == len(elems) - 1
    for name in names:
        shown = name if elem.name == WILDCARD else elem.name
        child = node[name]
        child_module = module_of(name) or module
        if isinstance(child, list) and elem.keys:
            for entry in child:
                if entry_matches(entry, elem.keys):
                    concrete = Elem(shown, tuple(
                        (key, key_text(entry[_key_member(entry, key) or key]) or "")
                        for key, _ in elem.keys))
                    _select(entry, elems, depth + 1, child_module, [*trail, concrete], found)
        elif isinstance(child, list) and last:
            found.append(([*trail, Elem(shown)], child))
        elif isinstance(child, list):
            for entry in child:
                if isinstance(entry, dict):
                    _select(entry, elems, depth + 1, child_module,
                            [*trail, Elem(shown, identity(entry))], found)
        elif not elem.keys:
            _select(child, elems, depth + 1, child_module, [*trail, Elem(shown)], found)


def pruned(tree: Any, name: str) -> Any:
    """``tree`` without its containers named ``name`` (any module) at every depth."""
    if isinstance(tree, dict):
        return {member: pruned(value, name) for member, value in tree.items()
                if not (local_name(member) == name and isinstance(value, dict))}
    if isinstance(tree, list):
        return [pruned(entry, name) for entry in tree]
    return tree


# ---- writing --------------------------------------------------------------------------

def delete(tree: Tree, elems: list[Elem]) -> None:
    """Remove what ``elems`` selects (wildcards expanded; nothing there is no error)."""
    if not elems:
        tree.clear()
        return
    _delete(tree, elems, None)


def _delete(node: Tree, elems: list[Elem], module: str | None) -> None:
    elem, rest = elems[0], elems[1:]
    if elem.name == WILDCARD:
        names = list(node)
    else:
        member = find_member(node, elem.name, module)
        names = [] if member is None else [member]
    for name in names:
        child = node[name]
        child_module = module_of(name) or module
        if isinstance(child, list):
            chosen = [entry for entry in child
                      if isinstance(entry, dict) and entry_matches(entry, elem.keys)]
            if rest:
                for entry in chosen:
                    _delete(entry, rest, child_module)
                continue
            doomed = {id(entry) for entry in chosen}
            remaining = [entry for entry in child if id(entry) not in doomed]
            if remaining:
                node[name] = remaining
            else:
                del node[name]
        elif elem.keys:
            continue  # keys select nothing in a container or a leaf
        elif not rest:
            del node[name]
        elif isinstance(child, dict):
            _delete(child, rest, child_module)


def replace(tree: Tree, elems: list[Elem], value: Any, *,
            top_names: Collection[str] = ()) -> None:
    """Set the node at ``elems`` to exactly ``value``, creating the path to it."""
    if value is None:
        raise GnmiError("INVALID_ARGUMENT",
                        f"{format_path(elems)}: replace with null deletes nothing (gNMI 3.4.4)")
    if not elems:
        if not isinstance(value, dict):
            raise GnmiError("INVALID_ARGUMENT", "the root must be replaced by an object")
        tree.clear()
        tree.update(normalized(value, None, top_names))
        return
    parent, name, module = _parent(tree, elems, top_names)
    last = elems[-1]
    child_module = module_of(name) or module
    if not last.keys:
        parent[name] = normalized(value, child_module)
        return
    if not isinstance(value, dict) or not value:
        raise GnmiError("INVALID_ARGUMENT", f"{format_path(elems)}: a list entry is replaced "
                                            "by an object with its members (gNMI 3.4.4)")
    _check_keys(last, value, elems)
    array = _array(parent, name, elems)
    entry = {key: _typed_key(key, text, array, value) for key, text in last.keys}
    entry.update(normalized(value, child_module))
    for index, existing in enumerate(array):
        if entry_matches(existing, last.keys):
            array[index] = entry
            return
    array.append(entry)


def update(tree: Tree, elems: list[Elem], value: Any, *,
           top_names: Collection[str] = ()) -> None:
    """Merge ``value`` into the node at ``elems``, creating the path to it."""
    if value is None:
        raise GnmiError("INVALID_ARGUMENT", f"{format_path(elems)}: update with null")
    if not elems:
        if not isinstance(value, dict):
            raise GnmiError("INVALID_ARGUMENT", "the root must be updated with an object")
        _merge_object(tree, value, None, top_names, elems)
        return
    parent, name, module = _parent(tree, elems, top_names)
    last = elems[-1]
    child_module = module_of(name) or module
    if last.keys:
        if not isinstance(value, dict):
            raise GnmiError("INVALID_ARGUMENT",
                            f"{format_path(elems)}: a list entry is updated with an object")
        _check_keys(last, value, elems)
        entry = _entry(_array(parent, name, elems), last, value, elems, create=True)
        assert entry is not None
        _merge_object(entry, value, child_module, (), elems)
    elif name in parent:
        parent[name] = _merged(parent[name], value, child_module, elems)
    else:
        parent[name] = normalized(value, child_module)


def _array(parent: Tree, name: str, where: list[Elem]) -> list[Any]:
    array = parent.setdefault(name, [])
    if not isinstance(array, list):
        raise GnmiError("INVALID_ARGUMENT", f"{format_path(where)}: {name} is not a list")
    return array


def _parent(tree: Tree, elems: list[Elem],
            top_names: Collection[str]) -> tuple[Tree, str, str | None]:
    """Walk to the last element's parent, creating what is missing: (parent, the last
    element's member name there, the parent's module)."""
    node: Tree = tree
    module: str | None = None
    for depth, elem in enumerate(elems[:-1]):
        where = elems[:depth + 1]
        if elem.wild:
            raise GnmiError("INVALID_ARGUMENT",
                            f"{format_path(where)}: a write path has no wildcards")
        name = _name_for_write(node, elem.name, module, top_names if depth == 0 else ())
        child_module = module_of(name) or module
        child = node.get(name)
        if elem.keys:
            entry = _entry(_array(node, name, where), elem, None, where, create=True)
            assert entry is not None
            node = entry
        elif child is None:
            node = node.setdefault(name, {})
        elif isinstance(child, dict):
            node = child
        elif isinstance(child, list):
            raise GnmiError("INVALID_ARGUMENT",
                            f"{format_path(where)}: names a list; give the entry's keys")
        else:
            raise GnmiError("INVALID_ARGUMENT", f"{format_path(where)} is a leaf")
        module = child_module
    last = elems[-1]
    if last.wild:
        raise GnmiError("INVALID_ARGUMENT", f"{format_path(elems)}: a write path has no wildcards")
    name = _name_for_write(node, last.name, module, top_names if len(elems) == 1 else ())
    return node, name, module


def _merge_object(target: Tree, value: Tree, module: str | None, top_names: Collection[str],
                  where: list[Elem]) -> None:
    for name, child in value.items():
        stored = _name_for_write(target, name, module, top_names)
        child_module = module_of(stored) or module
        if stored in target:
            target[stored] = _merged(target[stored], child, child_module, where)
        else:
            target[stored] = normalized(child, child_module)


def _merged(existing: Any, value: Any, module: str | None, where: list[Elem]) -> Any:
    if isinstance(existing, dict) and isinstance(value, dict):
        _merge_object(existing, value, module, (), where)
        return existing
    if (isinstance(existing, list) and isinstance(value, list)
            and all(isinstance(entry, dict) for entry in existing + value)):
        for entry in value:
            keys = identity(entry)
            if not keys:
                raise GnmiError("INVALID_ARGUMENT", f"{format_path(where)}: a list entry "
                                                    "in the value has no key leaves")
            match = next((old for old in existing if entry_matches(old, keys)), None)
            if match is None:
                existing.append(normalized(entry, module))
            else:
                _merge_object(match, entry, module, (), where)
        return existing
    return normalized(value, module)
