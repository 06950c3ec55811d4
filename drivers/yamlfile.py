"""YAML files that remember where each value came from, for error messages that name the line.

Used by the inventory (msoctl) and the lab topology (emulators): both tell an
operator ``file:line: device 'x': field 'y': ...`` instead of a traceback.

Every file is read within limits, so a wrong path or a hostile file is one
error line, never a hang, a traceback or gigabytes of memory:

- at most :data:`MAX_FILE_BYTES` (8 MiB), checked before parsing, and only
  regular files (a FIFO or a device such as ``/dev/zero`` is refused unread);
- nesting at most :data:`MAX_DEPTH` (64) levels, enforced while the document
  is composed, also where aliases stack nodes inside each other;
- aliases may add at most :data:`MAX_ALIAS_NODES` (100,000) nodes to what is
  written (a "billion laughs" document is refused), and may not refer to a node
  that contains them;
- integers fit in 64 bits; a value YAML cannot construct (a timestamp such as
  2020-13-45) is refused with its line;
- mapping keys (field names, device names) hold no control or formatting
  character.

:class:`Section` reads typed fields: numbers are finite (``.nan``, ``.inf`` and
``1e999`` are refused), text holds no control or invisible formatting
character (NUL, escape, newline, bidirectional overrides...).
"""

from __future__ import annotations

import io
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

try:  # libyaml's scanner and parser are about four times faster than the pure-Python ones
    from yaml._yaml import CParser as _CParser

    _LIBYAML_EVENTS: Any = _CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _LIBYAML_EVENTS = None

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIAS_NODES = 100_000
MAX_INTEGER = 2**64
_INTEGER_DIGITS = 80  # longer than any 64-bit integer in any YAML base, separators included
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})  # control, format (bidi...), surrogates


class YamlFileError(ValueError):
    """The file could not be read or is not valid YAML; the message names file and line."""


def one_line(text: str) -> str:
    """``text`` with its line breaks and runs of blanks folded into single spaces."""
    return " ".join(text.split())


def unsafe_character(text: str) -> str | None:
    """The first control, formatting or surrogate character of ``text``, named by its code
    point (``U+0007``; None when there is none): such characters have no place in a name,
    an address or a path, and would garble the terminal or the journal that shows them."""
    for character in text:
        if unicodedata.category(character) in _UNSAFE_CATEGORIES:
            return f"U+{ord(character):04X}"
    return None


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


class LinedDict(dict[str, Any]):
    """A mapping that knows the line of each key (1-based) and of itself."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class LinedList(list[Any]):
    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


class _Limits(Composer, SafeConstructor, Resolver):
    """PyYAML's safe loader with our resolvers, constructors and limits, on top of an
    event parser (libyaml's or PyYAML's own, see :class:`_Loader`).

    The Python composer comes before libyaml's in the method order: it is the one
    that calls :meth:`compose_node` for every node, where the depth is counted.
    """

    # provided by the event parser the concrete loader adds (libyaml's or PyYAML's)
    check_event: Callable[..., bool]
    peek_event: Callable[[], Any]
    dispose: Callable[[], None]

    def __init__(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._depth = 0
        self._aliases: list[tuple[Any, Node]] = []  # (mark of the alias, node it names)

    def _next_mark(self) -> Any:
        event = self.peek_event()
        return None if event is None else event.start_mark

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self._next_mark()
            node = super().compose_node(parent, index)
            if node is not None:
                self._aliases.append((mark, node))
            return node
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self._next_mark())
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Node | None:
        node = super().compose_document()
        if node is not None and self._aliases:
            self._check_expansion(node)
        return node

    def _check_expansion(self, root: Node) -> None:
        """Refuse aliases that make the document much bigger or deeper than its text, or
        that refer to a node containing them (one walk over the written nodes)."""
        alias_mark = {id(node): mark for mark, node in reversed(self._aliases)}
        size: dict[int, int] = {}
        depth: dict[int, int] = {}
        open_nodes: set[int] = set()
        stack: list[tuple[Node, bool]] = [(root, False)]
        while stack:
            node, finished = stack.pop()
            key = id(node)
            if finished:
                open_nodes.discard(key)
                children = _children(node)
                size[key] = 1 + sum(size[id(child)] for child in children)
                depth[key] = 1 + max((depth[id(child)] for child in children), default=0)
                if depth[key] > MAX_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"aliases nest this value deeper than {MAX_DEPTH} levels",
                        node.start_mark)
                continue
            if key in size:
                continue
            if key in open_nodes:
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to a node that contains it",
                    alias_mark.get(key, node.start_mark))
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if id(child) not in size)
        added = size[id(root)] - len(size)
        if added > MAX_ALIAS_NODES:
            mark, _ = max(self._aliases, key=lambda alias: size[id(alias[1])])
            raise yaml.composer.ComposerError(
                None, None, f"aliases expand this document by {added:,} nodes; at most "
                f"{MAX_ALIAS_NODES:,} are allowed", mark)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as error:
            # A timestamp like 2020-13-45, or a !!int tag on text: PyYAML's constructors
            # let Python's own errors through, without the line.
            raise ConstructorError(None, None, f"cannot read this value: {error}",
                                   node.start_mark) from None


def _construct_int(loader: _Limits, node: yaml.ScalarNode) -> int:
    if len(str(node.value)) > _INTEGER_DIGITS:
        raise ConstructorError(None, None, "integer too large (at most 64 bits)",
                               node.start_mark)
    value: int = loader.construct_yaml_int(node)
    if abs(value) >= MAX_INTEGER:
        raise ConstructorError(None, None, "integer too large (at most 64 bits)",
                               node.start_mark)
    return value


def _construct_mapping(loader: _Limits, node: yaml.MappingNode) -> LinedDict:
    loader.flatten_mapping(node)
    result = LinedDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        bad = unsafe_character(key)
        if bad is not None:  # keys are field names and names, shown in every message
            raise ConstructorError(None, None, f"the key {shown(key)} contains the control "
                                   f"or formatting character {bad}", key_node.start_mark)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {shown(key)}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _Limits, node: yaml.SequenceNode) -> LinedList:
    result = LinedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


class _PythonLoader(_Limits, Reader, Scanner, Parser):
    """The limited loader on PyYAML's pure-Python reader, scanner and parser."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        _Limits.__init__(self)


_LOADERS: list[type[_Limits]] = [_PythonLoader]
if _LIBYAML_EVENTS is not None:
    class _LibyamlLoader(_Limits, _LIBYAML_EVENTS):  # type: ignore[misc]
        """The limited loader on libyaml's scanner and parser (the same events)."""

        def __init__(self, stream: str) -> None:
            _LIBYAML_EVENTS.__init__(self, stream)
            _Limits.__init__(self)

    _LOADERS.insert(0, _LibyamlLoader)
_Loader = _LOADERS[0]
"""The loader :func:`load_text` uses: libyaml's parser when PyYAML has it."""


# YAML 1.1 reads 1:21 as the sexagesimal integer 81 (and 1:30.5 as the float 90.5); for
# port pairs written IN:OUT that is a silent corruption, so integers here are plain decimal
# (or 0x/0o) only, and floats have no sexagesimal form.
_Limits.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                           "tag:yaml.org,2002:bool")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Limits.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Limits.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)
# Only true/false are booleans: YAML 1.1's yes/no/on/off turn a label "no" into False.
_Limits.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
# (the stubs type add_constructor for PyYAML's own loader classes only)
_Limits.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,  # type: ignore[type-var]
                        _construct_mapping)
_Limits.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,  # type: ignore[type-var]
                        _construct_sequence)
_Limits.add_constructor("tag:yaml.org,2002:int", _construct_int)  # type: ignore[type-var]


def load_text(text: str, source: str, *, pure_python: bool = False) -> Any:
    """The YAML document in ``text``, within the limits of this module.

    ``pure_python`` parses with PyYAML's own parser rather than libyaml's (slower; the
    two read the same files, and tests check that both keep the limits). Raises
    :class:`YamlFileError` naming ``source`` and, where known, the line.
    """
    try:
        loader = (_PythonLoader if pure_python else _Loader)(text)  # type: ignore[call-arg]
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = error.problem or error.context or str(error)
        if error.problem and error.context and not error.context.startswith("while"):
            problem = f"{error.context}, {error.problem}"  # "expected a single document..."
        raise YamlFileError(f"{where}: not valid YAML: {one_line(problem)}") from None
    except yaml.reader.ReaderError as error:
        line = text.count("\n", 0, max(0, error.position)) + 1
        reason = (f"unacceptable character U+{error.character:04X} ({error.reason})"
                  if isinstance(error.character, int) else error.reason)
        raise YamlFileError(f"{source}:{line}: not valid YAML: {one_line(reason)}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as error:
        raise YamlFileError(f"{source}: not valid YAML: {one_line(str(error))}") from None


def open_regular(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> io.BufferedReader:
    """``path`` opened for reading, when it is a regular file of at most ``max_bytes``.

    Nothing is read from a directory, a FIFO or a device (``/dev/zero`` would never
    end, a FIFO without a writer would block: the open does not wait for one); the size
    is checked before anything is read. Raises :class:`YamlFileError`.
    """
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise YamlFileError(f"{path}: no such file") from None
    except OSError as error:
        raise YamlFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except ValueError as error:  # a NUL in the path
        raise YamlFileError(f"{shown(str(path))}: cannot read: {error}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise YamlFileError(f"{path}: cannot read: is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise YamlFileError(f"{path}: cannot read: not a regular file (a device, FIFO "
                                "or socket)")
        if info.st_size > max_bytes:
            raise YamlFileError(f"{path}: {info.st_size:,} bytes; a file is read only up "
                                f"to {_size_text(max_bytes)}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long
    (:func:`open_regular`); the read is bounded too, for a file that grows meanwhile.
    Raises :class:`YamlFileError`.
    """
    try:
        with open_regular(path, max_bytes=max_bytes) as file:
            data = file.read(max_bytes + 1)
    except OSError as error:
        raise YamlFileError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > max_bytes:
        raise YamlFileError(f"{path}: more than {_size_text(max_bytes)}; a file is read "
                            f"only up to {_size_text(max_bytes)}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise YamlFileError(f"{path}:{line}: not UTF-8 text (byte {error.start})") from None


def _size_text(count: int) -> str:
    return f"{count / 1024 / 1024:g} MiB" if count >= 1024 * 1024 else f"{count:,} bytes"


def load_file(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The YAML (or JSON) document in ``path``; see :func:`read_text` and :func:`load_text`."""
    return load_text(read_text(path, max_bytes=max_bytes), str(path))


_MISSING: Any = object()


def yaml_type(value: Any) -> str:
    """What a YAML value is, in the words of the file (not of Python)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true or false"
    for kind, name in ((dict, "a mapping"), (list, "a list"), (str, "text"),
                       (int, "an integer"), (float, "a number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def describe_type(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: "text", int: "an integer", float: "a number", bool: "true or false",
             dict: "a mapping", list: "a list"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def value_problem(value: Any) -> str | None:
    """Why a scalar read from a file cannot be used whatever its field (None if it can):
    a number that is not finite, text with a control or formatting character."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if isinstance(value, str):
        bad = unsafe_character(value)
        if bad is not None:
            return f"must not contain control or formatting characters ({bad} found)"
    return None


class Section:
    """Typed access to one mapping of a file, with errors that name file, line, owner and field."""

    def __init__(self, data: Any, source: str, owner: str, *, line: int = 0):
        self.source = source
        self.owner = owner
        if not isinstance(data, dict):
            where = f"{source}:{getattr(data, 'line', line)}" if line or hasattr(data, "line") \
                else source
            raise YamlFileError(f"{where}: {owner}: expected a mapping, got {yaml_type(data)}")
        self.data = data

    def error(self, key: str | None, message: str) -> YamlFileError:
        line = self.data.line_of(key) if isinstance(self.data, LinedDict) and key else \
            getattr(self.data, "line", 0)
        where = f"{self.source}:{line}" if line else self.source
        field = f": field {shown(key)}" if key else ""
        return YamlFileError(f"{where}: {self.owner}{field}: {message}")

    def get(
        self,
        key: str,
        kind: type | tuple[type, ...],
        *,
        default: Any = _MISSING,
        choices: tuple[Any, ...] | None = None,
    ) -> Any:
        """The value of ``key``, of type ``kind`` (an integer is taken for a float).

        Numbers are finite and text has no control character, whatever ``kind``;
        ``default`` when the key is absent or empty (else it is required). Raises
        :class:`YamlFileError` naming the line.
        """
        if key not in self.data or self.data[key] is None:
            if default is _MISSING:
                raise self.error(None, f"field '{key}' is required")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # exact enough: integers are at most 64 bits here
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise self.error(key, f"must be {describe_type(kind)}, got {shown(value)}")
        problem = value_problem(value)
        if problem is not None:
            raise self.error(key, problem)
        if choices is not None and value not in choices:
            raise self.error(
                key, f"must be one of {', '.join(map(str, choices))}; got {shown(value)}"
            )
        return value

    def reject_unknown(self, allowed: set[str] | frozenset[str]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.error(key, f"unknown field; known fields: {', '.join(sorted(allowed))}")
