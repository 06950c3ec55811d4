"""Grouping field reads into as few bus transactions as the memory map allows.

A read may bridge a small gap between two wanted fields (reading a few bytes
too many costs less than a transaction's start, address and stop) but never
a latched clear-on-read byte: reading one would consume a flag that only an
explicit "read and clear" may consume.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from drivers.cmis.fields import Field
from drivers.cmis.io import MAX_TRANSFER

BRIDGE_GAP = 3
"""Read through gaps up to this many bytes: about one transaction's overhead at 9 bits a byte."""


@dataclass
class Block:
    page: int
    start: int
    length: int
    fields: list[Field] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + self.length


def plan_reads(fields: Iterable[Field], latched: frozenset[tuple[int, int]]) -> list[Block]:
    """Blocks that cover ``fields``: same page, gaps of at most BRIDGE_GAP, no latched byte
    read unless the field asking for it is itself latched."""
    blocks: list[Block] = []
    for item in sorted(set(fields), key=lambda f: (f.page, f.offset, f.end)):
        last = blocks[-1] if blocks else None
        if last is not None and last.page == item.page and _can_extend(last, item, latched):
            last.length = max(last.end, item.end) - last.start
            last.fields.append(item)
            continue
        blocks.append(Block(item.page, item.offset, item.size, [item]))
    return blocks


def _can_extend(block: Block, item: Field, latched: frozenset[tuple[int, int]]) -> bool:
    if item.offset - block.end > BRIDGE_GAP:
        return False
    if max(block.end, item.end) - block.start > MAX_TRANSFER:
        return False
    gap = range(block.end, item.offset)
    return not any((block.page, byte) in latched for byte in gap)
