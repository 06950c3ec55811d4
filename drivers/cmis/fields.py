"""The field-table format every CMIS page module uses, and decoding of raw bytes.

A field names where a value lives (page, byte offset, size, bit mask), how
its bytes become a number (kind and scale) and what reading or writing it
does (access). Decoding never raises on bad bytes: a value that cannot be
decoded is ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

LOWER = -1
"""``page`` of a field in lower memory (bytes 0-127), which no page select moves."""

KINDS = frozenset({"u8", "u16", "s16", "u32", "str", "bytes", "bits"})
ACCESS = frozenset({"ro", "rw", "cor", "wo"})
"""ro read-only; rw read-write; cor latched, cleared when read; wo self-clearing command."""


@dataclass(frozen=True)
class Field:
    name: str
    page: int  # LOWER, or the page number of an upper page
    offset: int  # byte address, 0-127 in lower memory, 128-255 in an upper page
    size: int = 1
    kind: str = "u8"
    scale: float = 1.0
    unit: str = ""
    access: str = "ro"
    mask: int = 0xFF  # for "bits": which bits of the (single) byte
    none_raw: int | None = None  # a raw value that means "no reading"
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS or self.access not in ACCESS:
            raise ValueError(f"{self.name}: bad kind {self.kind!r} or access {self.access!r}")
        low, high = (0, 127) if self.page == LOWER else (128, 255)
        if not (low <= self.offset and self.offset + self.size - 1 <= high):
            raise ValueError(f"{self.name}: bytes {self.offset}..{self.end - 1} "
                             f"outside {low}..{high}")
        if self.kind == "bits" and self.size != 1:
            raise ValueError(f"{self.name}: bit fields are one byte")
        expected = {"u16": 2, "s16": 2, "u32": 4}.get(self.kind)
        if expected is not None and self.size != expected:
            raise ValueError(f"{self.name}: size {self.size} does not fit kind {self.kind}")

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def shift(self) -> int:
        return (self.mask & -self.mask).bit_length() - 1

    def raw(self, block: bytes, base: int) -> int | bytes | None:
        """This field's raw value from ``block``, which starts at byte address ``base``."""
        start = self.offset - base
        if start < 0 or start + self.size > len(block):
            return None
        data = block[start:start + self.size]
        if self.kind in ("str", "bytes"):
            return data
        if self.kind == "bits":
            return (data[0] & self.mask) >> self.shift
        value = int.from_bytes(data, "big", signed=self.kind == "s16")
        return value

    def decode(self, block: bytes, base: int) -> float | int | str | None:
        """The value in engineering units: scaled number, text, or ``None``."""
        raw = self.raw(block, base)
        if raw is None:
            return None
        if isinstance(raw, bytes):
            if self.kind == "bytes":
                return raw.hex()
            text = raw.decode("ascii", "replace").replace("\ufffd", "?").strip(" \x00")
            return text if text.isprintable() else None
        if raw == self.none_raw:
            return None
        if self.scale == 1.0:
            return raw
        value = raw * self.scale
        return None if math.isnan(value) else round(value, 6)

    def encode(self, value: float | int) -> bytes:
        """Bytes for writing ``value`` (engineering units) into this field."""
        if self.kind in ("str", "bytes", "bits"):
            raise ValueError(f"{self.name}: encode numbers only; bits go through a mask")
        raw = round(value / self.scale)
        signed = self.kind == "s16"
        limit = 1 << (8 * self.size)
        low, high = (-(limit >> 1), (limit >> 1) - 1) if signed else (0, limit - 1)
        if not low <= raw <= high:
            raise ValueError(f"{self.name}: {value} does not fit in {self.kind}")
        return raw.to_bytes(self.size, "big", signed=signed)


def span(fields: Iterable[Field]) -> tuple[int, int, int]:
    """(page, first byte, length) covering ``fields``, which must share a page."""
    chosen = list(fields)
    pages = {f.page for f in chosen}
    if len(pages) != 1:
        raise ValueError(f"fields span pages {sorted(pages)}")
    start = min(f.offset for f in chosen)
    return pages.pop(), start, max(f.end for f in chosen) - start


def by_name(fields: Iterable[Field]) -> dict[str, Field]:
    table: dict[str, Field] = {}
    for field in fields:
        if field.name in table:
            raise ValueError(f"field {field.name} defined twice")
        table[field.name] = field
    return table
