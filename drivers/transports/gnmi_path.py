"""gNMI path strings: ``/openconfig-qos:qos/queues/queue[name=Q3]/config`` to a
``gnmi.Path`` and back.

The notation is the one of the gNMI path-strings convention (openconfig/reference):

- elements are separated by ``/``; the leading ``/`` is optional, and ``/`` (or ``""``)
  alone is the root, a path of no elements;
- an element may carry keys, ``name[key=value]``, several as ``[a=1][b=2]``;
- inside a key value ``]`` and ``\\`` are written ``\\]`` and ``\\\\``; ``/``, ``[`` and
  ``=`` may stand as they are (``[name=Ethernet1/1]``, ``[expr=a=b]``) or be escaped;
  in an element or key name ``/``, ``[``, ``]``, ``=`` and ``\\`` are escaped. A
  backslash makes any character that follows it literal;
- a module prefix on an element (``openconfig-qos:qos``) is part of its name, kept
  verbatim, as JSON_IETF writes the top of each module; origin and target are not
  written in the string (the client puts them in a request's prefix).

Only ``elem`` is written; ``element`` (deprecated since gNMI 0.4) is read back by
:func:`format_path` only when a path has no ``elem``, as an old target may send it.
:func:`format_path` writes keys sorted by name (a protobuf map has no order), so
``format_path(parse_path(text)) == text`` for text written that way, and
``parse_path(format_path(path)) == path`` for every path of names and keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gnmi_pb import gnmi_pb2

from drivers.errors import ValidationError

_NAME_SPECIALS = frozenset("/[]=\\")
_VALUE_SPECIALS = frozenset("]\\")


def parse_path(text: str) -> Any:
    """The ``gnmi_pb2.Path`` that ``text`` writes (no origin, no target).

    Raises :class:`ValidationError` for an empty element (``/a//b``, ``/a/``), an
    unbalanced bracket, a key without ``=``, an empty or repeated key name, text between
    a key's ``]`` and the next ``/``, or a trailing lone backslash."""
    if text in ("", "/"):
        return gnmi_pb2.Path()
    reader = _Reader(text)
    if text.startswith("/"):
        reader.position = 1
    elems = []
    while True:
        name = reader.until("/[", refused={"]": "unbalanced ']' in an element name"})
        if not name:
            raise reader.bad("empty element")
        keys: dict[str, str] = {}
        while reader.peek() == "[":
            reader.position += 1
            key = reader.until("=", refused={"]": "key without '='", "[": "unbalanced '['"},
                               end_is="key without '='")
            if not key:
                raise reader.bad("empty key name")
            reader.position += 1  # the '='
            value = reader.until("]", refused={}, end_is="unbalanced '[' (no ']')")
            reader.position += 1  # the ']'
            if key in keys:
                raise reader.bad(f"key {key!r} given twice")
            keys[key] = value
        elems.append((name, keys))
        if reader.peek() is None:
            break
        if reader.peek() != "/":
            raise reader.bad("text after a key's ']' (a '/' should follow)")
        reader.position += 1
        if reader.peek() is None:
            raise reader.bad("empty element (a trailing '/')")
    try:
        return gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=name, key=keys) for name, keys in elems])
    except ValueError as error:  # a lone surrogate: protobuf strings are UTF-8
        raise ValidationError(f"bad gNMI path {text!r}: {error}") from None


def format_path(path: Any) -> str:
    """``path`` (a ``gnmi_pb2.Path``) as a path string; ``/`` for the root. Origin and
    target are not written."""
    return format_elems(path.elem) if path.elem or not path.element else \
        "/" + "/".join(path.element)


def format_elems(elems: Iterable[Any]) -> str:
    """Path elements (``gnmi_pb2.PathElem``) as a path string; ``/`` for none."""
    parts = []
    for elem in elems:
        keys = "".join(f"[{_escape(key, _NAME_SPECIALS)}={_escape(value, _VALUE_SPECIALS)}]"
                       for key, value in sorted(elem.key.items()))
        parts.append(_escape(elem.name, _NAME_SPECIALS) + keys)
    return "/" + "/".join(parts)


def _escape(text: str, specials: frozenset[str]) -> str:
    return "".join("\\" + char if char in specials else char for char in text)


class _Reader:
    """A position in a path string, reading runs of characters with escapes."""

    def __init__(self, text: str):
        self.text = text
        self.position = 0

    def peek(self) -> str | None:
        return self.text[self.position] if self.position < len(self.text) else None

    def until(self, stops: str, *, refused: dict[str, str], end_is: str | None = None) -> str:
        """The unescaped text up to the next unescaped character of ``stops`` (left
        unread), or to the end when ``end_is`` is None (else the end is that error). An
        unescaped character of ``refused`` is the error given beside it."""
        found: list[str] = []
        text = self.text
        while self.position < len(text):
            char = text[self.position]
            if char == "\\":
                if self.position + 1 == len(text):
                    raise self.bad("a lone backslash at the end")
                found.append(text[self.position + 1])
                self.position += 2
                continue
            if char in stops:
                return "".join(found)
            if char in refused:
                raise self.bad(refused[char])
            found.append(char)
            self.position += 1
        if end_is is not None:
            raise self.bad(end_is)
        return "".join(found)

    def bad(self, reason: str) -> ValidationError:
        where = "at the end" if self.position >= len(self.text) else \
            f"at character {self.position + 1}"
        return ValidationError(f"bad gNMI path {self.text!r}: {reason} ({where})")
