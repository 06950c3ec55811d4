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


def pages_read(bus: ModuleBus) -> set[int]:
    """The upper pages a host read bytes 128-255 of (the page selected at each read)."""
    return {op.selected[1] for op in bus.ops
            if op.kind == "read" and op.offset + op.length > 128}


def pages_asked_for(bus: ModuleBus) -> set[int]:
    """The pages a host wrote into the page select byte (127), whether the module kept
    them or not."""
    return {op.data[127 - op.offset] for op in bus.ops
            if op.kind == "write" and op.offset <= 127 < op.offset + op.length}


def lower_bytes_read(bus: ModuleBus) -> set[int]:
    """The lower-memory byte addresses (0-127) the host's reads covered."""
    return {address for op in bus.ops if op.kind == "read"
            for address in range(op.offset, min(op.offset + op.length, 128))}


def plain_module_pages(*, module_monitors: int = 0x00, lane_monitors: int = 0x00,
                       vendor: str = "NorthLight", part_number: str = "NL-EDFA-QDD-C17",
                       page_b0: bytes | None = None) -> dict[int, bytes]:
    """A paged CMIS 5.2 QSFP-DD module in ModuleReady, written byte by byte from the
    specification (CMIS 5.2 sections 8.2-8.4), not from the driver's tables. Its monitor
    registers hold readings (lower 14-17: 25.0 degC and 3.3 V; page 11h lane 1: Tx power
    154-155, Tx bias 170-171, Rx power 186-187) and page 02h holds thresholds for every
    group, whatever page 01h advertises in bytes 159 (``module_monitors``) and 160
    (``lane_monitors``): a driver that reads a monitor the module does not implement
    shows a number. ``page_b0``: the bytes of a page B0h, which the image then has."""
    lower = bytearray(128)
    lower[0:4] = bytes((0x18, 0x52, 0x00, 0x07))  # QSFP-DD, CMIS 5.2, paged, ModuleReady
    lower[14:18] = bytes((0x19, 0x00, 0x80, 0xE8))  # 25.0 degC, 3.3 V
    lower[85] = 0x02  # MediaType: optical SMF
    lower[86:90] = bytes((0xC0, 0xC0, 0x11, 0x01))  # one custom application on lane 1
    lower[90:118] = bytes((0xFF, 0, 0, 0)) * 7
    page00 = bytearray(128)
    page00[0] = 0x18
    page00[129 - 128:145 - 128] = vendor.encode().ljust(16)
    page00[148 - 128:164 - 128] = part_number.encode().ljust(16)
    page01 = bytearray(128)
    page01[155 - 128] = 0x02  # Tx output disable implemented
    page01[159 - 128] = module_monitors
    page01[160 - 128] = lane_monitors
    page01[167 - 128] = 0x45  # power down < 100 ms, power up < 500 ms
    page02 = bytearray(128)
    page02[0:16] = bytes.fromhex("4B00FB00460000008DCC7404875A7A76")  # temperature, Vcc
    page02[176 - 128:200 - 128] = bytes.fromhex(  # Tx power, Tx bias, Rx power
        "4E2001F43A9803E8" "C35013882710C350" "7530006461A800C8")
    page11 = bytearray(128)
    page11[0:4] = bytes((0x14, 0x11, 0x11, 0x11))  # lane 1 DPActivated, 2-8 DPDeactivated
    page11[154 - 128:156 - 128] = (5000).to_bytes(2, "big")  # Tx power 0.5 mW
    page11[170 - 128:172 - 128] = (25000).to_bytes(2, "big")  # Tx bias 50 mA at 2 uA
    page11[186 - 128:188 - 128] = (1000).to_bytes(2, "big")  # Rx power 0.1 mW
    page11[206 - 128] = 0x10  # AppSel 1 on lane 1
    pages = {LOWER: bytes(lower), 0x00: bytes(page00), 0x01: bytes(page01),
             0x02: bytes(page02), 0x10: bytes(128), 0x11: bytes(page11)}
    if page_b0 is not None:
        pages[0xB0] = page_b0
    return pages
