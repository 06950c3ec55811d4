"""The format of the golden CMIS vector files (tests/vectors/cmis_*.txt), read into module
images and the values each is expected to decode to. The format is described at the top
of tests/vectors/cmis_module.txt."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.cmis.fields import LOWER


class VectorFormatError(ValueError):
    pass


@dataclass(frozen=True)
class Expect:
    line: int
    path: str
    value: Any


@dataclass
class Vector:
    source: str
    line: int
    name: str
    pages: dict[int, bytearray] = field(default_factory=dict)
    expects: list[Expect] = field(default_factory=list)
    written: set[tuple[int, int]] = field(default_factory=set)


def page_number(text: str) -> int:
    if text == "lower":
        return LOWER
    match = re.fullmatch(r"([0-9A-Fa-f]{2})h", text)
    if match is None:
        raise VectorFormatError(f"page {text!r}: write `lower` or two hex digits and h (`B0h`)")
    return int(match.group(1), 16)


def strip_comment(text: str) -> str:
    """``text`` up to a ``#`` that is not inside double quotes."""
    quoted = False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return text[:index]
    return text


_BYTE_TOKEN = re.compile(r'\s*(?:"([^"]*)"|([0-9A-Fa-f]{2})(?=\s|$))')


def parse_bytes(text: str) -> bytes:
    data = bytearray()
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _BYTE_TOKEN.match(text, position)
        if match is None:
            raise VectorFormatError(f"cannot read bytes from {text[position:]!r}")
        quoted, hex_byte = match.groups()
        if quoted is not None:
            if not quoted.isascii():
                raise VectorFormatError(f"text {quoted!r} is not ASCII")
            data += quoted.encode("ascii")
        else:
            data.append(int(hex_byte, 16))
        position = match.end()
    if not data:
        raise VectorFormatError("no bytes after the offset")
    return bytes(data)


def load_vectors(path: Path) -> list[Vector]:
    vectors: list[Vector] = []
    by_name: dict[str, Vector] = {}
    current: Vector | None = None
    page: int | None = None
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = strip_comment(raw).strip()
        if not line:
            continue
        where = f"{path.name}:{number}"
        try:
            keyword, _, rest = line.partition(" ")
            if keyword == "vector":
                if not rest or rest in by_name:
                    raise VectorFormatError(f"vector name {rest!r} missing or used twice")
                current = Vector(path.name, number, rest)
                vectors.append(current)
                by_name[rest] = current
                page = None
                continue
            if current is None:
                raise VectorFormatError("a line before the first `vector`")
            if keyword == "base":
                if current.pages or current.expects or rest not in by_name:
                    raise VectorFormatError("`base NAME` comes right after `vector` and names "
                                            "an earlier vector")
                current.pages = {p: bytearray(d) for p, d in by_name[rest].pages.items()}
            elif keyword == "page":
                page = page_number(rest)
                current.pages.setdefault(page, bytearray(128))
            elif keyword == "expect":
                path_text, equals, value_text = rest.partition("=")
                if not equals:
                    raise VectorFormatError("expect PATH = VALUE")
                current.expects.append(Expect(number, path_text.strip(),
                                              ast.literal_eval(value_text.strip())))
            elif re.fullmatch(r"\d+:", keyword):
                if page is None:
                    raise VectorFormatError("bytes before any `page`")
                offset = int(keyword[:-1])
                data = parse_bytes(rest)
                base = 0 if page == LOWER else 128
                if not (base <= offset and offset + len(data) <= base + 128):
                    raise VectorFormatError(f"bytes {offset}..{offset + len(data) - 1} are "
                                            f"outside the page ({base}..{base + 127})")
                for address in range(offset, offset + len(data)):
                    if (page, address) in current.written:
                        raise VectorFormatError(f"byte {address} written twice")
                    current.written.add((page, address))
                current.pages[page][offset - base:offset - base + len(data)] = data
            else:
                raise VectorFormatError(f"unknown line {line!r}")
        except (VectorFormatError, ValueError, SyntaxError) as error:
            raise VectorFormatError(f"{where}: {error}") from error
    return vectors


