"""Test doubles below the CMIS I/O seam, shared by the CMIS test files.

:class:`ModuleBus` is an :class:`~drivers.cmis.io.I2cBus` that behaves like a
module's two-wire memory: bytes 0-127 always mapped, bytes 128-255 from the
page that bytes 126 (bank) and 127 (page) select, latched bytes cleared when
read, and :meth:`ModuleBus.reset` putting the select back to page 00h, as a
module does when it resets. It records every transaction so tests can check
what :class:`~drivers.cmis.io.PagedIo` sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from drivers.cmis.fields import LOWER
from drivers.cmis.image import ImageIo
from drivers.cmis.io import IoStats
from drivers.errors import DeviceRejected, ValidationError


@dataclass(frozen=True)
class Op:
    kind: str  # "read" or "write"
    offset: int
    length: int
    selected: tuple[int, int]  # (bank, page) the module had selected when it ran
    data: bytes = b""  # written bytes


class ModuleBus:
    def __init__(self, pages: Mapping[int, bytes | bytearray], *,
                 latched: frozenset[tuple[int, int]] = frozenset(),
                 clear_on_read: bool = True, address: str = "bus-double"):
        self.lower = bytearray(pages[LOWER])
        self.lower[126:128] = b"\x00\x00"
        self.pages = {page: bytearray(data) for page, data in pages.items() if page != LOWER}
        self.latched = latched
        self.clear_on_read = clear_on_read
        self.ignore_select = False  # a module that never leaves page 00h
        self.other_host: list[tuple[int, int]] = []
        """(bank, page) selects another host on the bus writes, one just before each of
        this host's next reads: a shared bus with no arbitration above the transaction."""
        self.timeout_seconds = 1.0
        self.stats = IoStats()
        self.ops: list[Op] = []
        self.latched_reads: set[tuple[int, int]] = set()
        self._address = address

    @property
    def address(self) -> str:
        return self._address

    @property
    def selected(self) -> tuple[int, int]:
        return self.lower[126], self.lower[127]

    def reset(self) -> None:
        """What a module reset does to the select bytes: back to bank 0, page 00h."""
        self.lower[126:128] = b"\x00\x00"

    def _upper(self) -> bytearray:
        bank, page = self.selected
        if bank != 0 or page not in self.pages:
            raise DeviceRejected(f"page {page:02X}h bank {bank} is not implemented")
        return self.pages[page]

    @staticmethod
    def _check(offset: int, length: int) -> None:
        if length < 1 or offset < 0 or offset + length > 256:
            raise ValidationError(f"transfer of {length} bytes at {offset}")

    def read(self, offset: int, length: int) -> bytes:
        self._check(offset, length)
        if self.other_host:
            self.lower[126:128] = bytes(self.other_host.pop(0))
        self.stats.transactions += 1
        self.stats.bytes_read += length
        page = self.selected[1]
        self.ops.append(Op("read", offset, length, self.selected))
        out = bytearray()
        to_clear: list[tuple[bytearray, int]] = []
        for address in range(offset, offset + length):
            memory, index, key = ((self.lower, address, (LOWER, address)) if address < 128
                                  else (self._upper(), address - 128, (page, address)))
            out.append(memory[index])
            if key in self.latched:
                self.latched_reads.add(key)
                to_clear.append((memory, index))
        if self.clear_on_read:
            for memory, index in to_clear:
                memory[index] = 0
        return bytes(out)

    def write(self, offset: int, data: bytes) -> None:
        self._check(offset, len(data))
        self.stats.transactions += 1
        self.stats.bytes_written += len(data)
        self.ops.append(Op("write", offset, len(data), self.selected, bytes(data)))
        for address, value in zip(range(offset, offset + len(data)), data, strict=True):
            if address in (126, 127):
                if not self.ignore_select:
                    self.lower[address] = value
            elif address < 128:
                self.lower[address] = value
            else:
                self._upper()[address - 128] = value

    def close(self) -> None:
        pass

    def page_bytes(self, page: int) -> bytes:
        return bytes(self.lower if page == LOWER else self.pages[page])


class StickyImageIo(ImageIo):
    """An image in which writes to some bytes do not stick (the module ignores them)."""

    def __init__(self, pages: Mapping[int, bytes | bytearray], *,
                 ignored: set[tuple[int, int]]):
        super().__init__(pages)
        self.ignored = ignored  # (page, byte address)

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        before = bytes(self.pages[page]) if page in self.pages else b""
        super().write(page, offset, data, bank=bank)
        base = 0 if page == LOWER else 128
        for ignored_page, address in self.ignored:
            if ignored_page == page and offset <= address < offset + len(data):
                self.pages[page][address - base] = before[address - base]


class RecordingImageIo(ImageIo):
    """An image that logs every write, with the events of the test (sleeps) in one list."""

    def __init__(self, pages: Mapping[int, bytes | bytearray], events: list[tuple[str, object]]):
        super().__init__(pages)
        self.events = events

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        self.events.append(("write", (page, offset, bytes(data))))
        super().write(page, offset, data, bank=bank)
