"""YAML files that remember where each value came from, for error messages that name the line.

Used by the inventory (msoctl) and the lab topology (emulators): both tell an
operator ``file:line: device 'x': field 'y': ...`` instead of a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml


class YamlFileError(ValueError):
    """The file could not be read or is not valid YAML; the message names file and line."""


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


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LinedDict:
    loader.flatten_mapping(node)
    result = LinedDict()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_sequence(loader: _Loader, node: yaml.SequenceNode) -> LinedList:
    result = LinedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


# YAML 1.1 reads 1:21 as the sexagesimal integer 81 (and 1:30.5 as the float 90.5); for
# port pairs written IN:OUT that is a silent corruption, so integers here are plain decimal
# (or 0x/0o) only, and floats have no sexagesimal form.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                           "tag:yaml.org,2002:bool")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)
# Only true/false are booleans: YAML 1.1's yes/no/on/off turn a label "no" into False.
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_text(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{source}:{mark.line + 1}" if mark else source
        raise YamlFileError(f"{where}: not valid YAML: {error.problem or error}") from None
    except yaml.YAMLError as error:
        raise YamlFileError(f"{source}: not valid YAML: {error}") from None


def load_file(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise YamlFileError(f"{path}: cannot read: {error}") from None
    return load_text(text, str(path))


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
        field = f": field '{key}'" if key else ""
        return YamlFileError(f"{where}: {self.owner}{field}: {message}")

    def get(
        self,
        key: str,
        kind: type | tuple[type, ...],
        *,
        default: Any = _MISSING,
        choices: tuple[Any, ...] | None = None,
    ) -> Any:
        if key not in self.data or self.data[key] is None:
            if default is _MISSING:
                raise self.error(None, f"field '{key}' is required")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise self.error(key, f"must be {describe_type(kind)}, got {value!r}")
        if choices is not None and value not in choices:
            raise self.error(
                key, f"must be one of {', '.join(map(str, choices))}; got {value!r}"
            )
        return value

    def reject_unknown(self, allowed: set[str] | frozenset[str]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.error(key, f"unknown field; known fields: {', '.join(sorted(allowed))}")
