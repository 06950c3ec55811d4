"""gNMI paths as the server handles them: a list of :class:`Elem`, with the origin folded in.

A request's path is its ``prefix`` joined with the path (gNMI 2.4.1); ``origin`` may sit
in either, not both (2.7). The origins served are the default (none), the face's own
name (``openconfig``, ``sonic``) and ``rfc7951``; an origin naming a YANG module of the
tree (``openconfig-qos``, as pygnmi writes ``openconfig-qos:qos/...``) qualifies the
first element with it. Anything else is UNIMPLEMENTED (gNMI 3.3.4: a path the target
does not implement).

Wildcards (gNMI path conventions): ``*`` as an element name or a key value; ``...`` is
not implemented. The deprecated string ``element`` field is read with the string form of
the path-strings document (``name[key=value]``, ``]`` and ``\\`` escaped by ``\\``),
which :func:`parse_path` and :func:`format_path` also read and write.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from gnmi_pb import gnmi_pb2

from emulators.gnmi.errors import GnmiError

WILDCARD = "*"
MULTI_LEVEL = "..."
DEFAULT_ORIGINS = frozenset({"", "rfc7951"})


@dataclass(frozen=True)
class Elem:
    """One path element: a member name (maybe ``module:name``) and list keys.

    ``keys`` are (key leaf, value as a string) pairs sorted by key name."""

    name: str
    keys: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, keys: Mapping[str, str] | None = None) -> Elem:
        return cls(name, tuple(sorted((keys or {}).items())))

    @property
    def key_map(self) -> dict[str, str]:
        return dict(self.keys)

    @property
    def wild(self) -> bool:
        return self.name == WILDCARD or any(value == WILDCARD for _, value in self.keys)

    def __str__(self) -> str:
        return self.name + "".join(f"[{key}={_escape(value)}]" for key, value in self.keys)


def from_proto(path: gnmi_pb2.Path) -> list[Elem]:
    """The elements of one ``Path`` message (its ``elem``, else its deprecated ``element``)."""
    if path.elem:
        elems = [Elem.of(elem.name, dict(elem.key)) for elem in path.elem]
    else:
        elems = [_parse_elem(text) for text in path.element]
    for elem in elems:
        if not elem.name:
            raise GnmiError("INVALID_ARGUMENT", f"a path element without a name in {path}")
        if elem.name == MULTI_LEVEL:
            raise GnmiError("UNIMPLEMENTED", "the multi-level wildcard '...' is not implemented")
    return elems


def to_proto(elems: Iterable[Elem], *, origin: str = "") -> gnmi_pb2.Path:
    return gnmi_pb2.Path(origin=origin, elem=[gnmi_pb2.PathElem(name=elem.name, key=elem.key_map)
                                              for elem in elems])


def concrete(shown: list[Elem], found: list[Elem], *, skip: int, origin: str) -> gnmi_pb2.Path:
    """The path of a node a read selected, as the client named it (names from ``shown``
    where it named one, keys as the node has them), without the first ``skip`` elements
    (the prefix)."""
    named = [Elem(name.name if name.name != WILDCARD else node.name, node.keys)
             for name, node in zip(shown, found, strict=True)]
    return to_proto(named[skip:], origin=origin)


def joined(prefix: gnmi_pb2.Path, path: gnmi_pb2.Path) -> tuple[str, list[Elem]]:
    """The origin and elements of ``prefix`` + ``path``."""
    if prefix.origin and path.origin:
        raise GnmiError("INVALID_ARGUMENT",
                        "origin is set in both the prefix and the path (gNMI 2.7)")
    return prefix.origin or path.origin, from_proto(prefix) + from_proto(path)


def rooted(origin: str, elems: list[Elem], *, served: Collection[str],
           modules: Collection[str]) -> list[Elem]:
    """``elems`` with ``origin`` folded in: unchanged for a served origin, the first element
    qualified by a module origin; UNIMPLEMENTED for any other origin."""
    if origin in served or origin in DEFAULT_ORIGINS:
        return elems
    if origin in modules:
        if elems and ":" not in elems[0].name:
            return [Elem(f"{origin}:{elems[0].name}", elems[0].keys), *elems[1:]]
        return elems
    raise GnmiError("UNIMPLEMENTED", f"origin {origin!r} is not served by this target "
                                     f"(served: {', '.join(sorted(set(served) - {''}))})")


def format_path(elems: Iterable[Elem]) -> str:
    """The path-strings form: ``/a/b[k=v]``; the root is ``/``."""
    return "/" + "/".join(str(elem) for elem in elems)


def parse_path(text: str) -> list[Elem]:
    """Read the path-strings form (absolute or not); ``/`` and ``""`` are the root."""
    parts: list[str] = []
    current: list[str] = []
    in_key = escaped = False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\" and in_key:
            escaped = True
        elif char == "[" and not in_key:
            in_key = True
            current.append(char)
        elif char == "]" and in_key:
            in_key = False
            current.append(char)
        elif char == "/" and not in_key:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if in_key or escaped:
        raise GnmiError("INVALID_ARGUMENT", f"unterminated key in path {text!r}")
    parts.append("".join(current))
    return [_parse_elem(part) for part in parts if part]


def _parse_elem(text: str) -> Elem:
    """``name[k=v][k2=v2]`` (key values escaped as :func:`_escape` writes them)."""
    bracket = text.find("[")
    if bracket < 0:
        return Elem(text)
    name, rest = text[:bracket], text[bracket:]
    keys: dict[str, str] = {}
    index = 0
    while index < len(rest):
        if rest[index] != "[":
            raise GnmiError("INVALID_ARGUMENT", f"malformed path element {text!r}")
        equals = rest.find("=", index)
        if equals < 0:
            raise GnmiError("INVALID_ARGUMENT", f"a key without '=' in {text!r}")
        key = rest[index + 1:equals]
        value: list[str] = []
        index = equals + 1
        while index < len(rest) and rest[index] != "]":
            if rest[index] == "\\" and index + 1 < len(rest):
                index += 1
                value.append({"n": "\n", "r": "\r"}.get(rest[index], rest[index]))
            else:
                value.append(rest[index])
            index += 1
        if index >= len(rest):
            raise GnmiError("INVALID_ARGUMENT", f"unterminated key in {text!r}")
        keys[key] = "".join(value)
        index += 1
    return Elem.of(name, keys)


def _escape(value: str) -> str:
    return (value.replace("\\", "\\\\").replace("]", "\\]")
            .replace("\n", "\\n").replace("\r", "\\r"))
