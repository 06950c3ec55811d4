"""CMIS paged memory as a module's two-wire slave sees it.

The memory holds lower memory (bytes 0-127) and one 128-byte upper page per
supported page (bank 0 only). What a host read or write does to each byte
comes from the declarative field tables (drivers/cmis/pages, the amplifier's
vendor page), never from code paths here:

| access   | host read                          | host write                          |
|----------|------------------------------------|-------------------------------------|
| ro       | the value                          | ignored (acknowledged, not stored)  |
| rw       | the value                          | stored (only the bits rw fields own)|
| cor      | the value, then the byte clears    | ignored                             |
| wo       | 0                                  | handed to the device as a command   |
| reserved | 0 (a byte in no field)             | ignored                             |

Addressing, as on the bus: a transaction starts at byte address ``offset``
(0-255) and auto-increments. Addresses 0-127 are lower memory; 128-255 are
the page selected by bytes 126 (bank) and 127 (page). An access that runs
past 127 continues at 128 of the selected page; one that runs past 255 wraps
to 128 of the same page (lower memory is not re-entered), as CMIS modules do.

Bank and page select (bytes 126 and 127), as CMIS 5.x Page Mapping has them
(section 8.2.15 of CMIS 5.3): a host writes both in one transaction; the
module acts on the bank only when the page select is written, so a write of
byte 126 alone is stored and waits for the next write of byte 127. A
selection takes effect when the write transaction that makes it ends, so
bytes 128-255 written in the same transaction still go to the page selected
when it began. A selection the module does not have (a page not
implemented, any bank but 0) is not accepted: both select bytes fall back to
bank 0, page 00h -- the rule SFF-8636 states for its page select byte, which
this module follows under CMIS too -- and a host that reads 126-127 back sees
that its page was refused. Upper memory then shows page 00h, which is why a host must check
the select bytes (or the pages the module advertises) before it trusts bytes
128-255.

The device side (the module model) uses :meth:`peek`, :meth:`poke`,
:meth:`set_field` and :meth:`latch`, which bypass the host access rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from drivers.cmis.fields import LOWER, Field

PAGE_SIZE = 128
BANK_SELECT = 126
PAGE_SELECT = 127


@dataclass(frozen=True)
class ByteAccess:
    """What a host access does to one byte: kind (see the module table) and the rw bits."""

    kind: str  # "ro", "rw", "cor", "wo" or "reserved"
    writable: int = 0  # bits a host write changes (rw bytes)


RESERVED = ByteAccess("reserved")


@dataclass
class HostWrite:
    """What one host write transaction did, for the device to act on."""

    stored: set[tuple[int, int]] = field(default_factory=set)  # (page, byte) of rw bytes written
    commands: dict[tuple[int, int], int] = field(default_factory=dict)  # wo bytes: value written
    refused_select: bool = False

    def touched(self, fields: Iterable[Field]) -> list[Field]:
        """The fields among ``fields`` that this write stored into or commanded."""
        hit = self.stored | set(self.commands)
        return [f for f in fields if any((f.page, b) in hit for b in range(f.offset, f.end))]


def build_access(fields: Iterable[Field]) -> dict[tuple[int, int], ByteAccess]:
    """Per-byte access from field tables; several fields may share a byte (bit fields)."""
    kinds: dict[tuple[int, int], set[str]] = {}
    writable: dict[tuple[int, int], int] = {}
    for f in fields:
        for byte in range(f.offset, f.end):
            key = (f.page, byte)
            kinds.setdefault(key, set()).add(f.access)
            if f.access == "rw":
                bits = f.mask if f.kind == "bits" else 0xFF
                writable[key] = writable.get(key, 0) | bits
    table: dict[tuple[int, int], ByteAccess] = {}
    for key, found in kinds.items():
        special = found & {"cor", "wo"}
        if special:
            if len(found) > 1:
                raise ValueError(f"page {key[0]} byte {key[1]}: access {sorted(found)} conflict")
            table[key] = ByteAccess(special.pop())
        elif "rw" in found:
            table[key] = ByteAccess("rw", writable[key])
        else:
            table[key] = ByteAccess("ro")
    return table


class PagedMemory:
    """Lower memory plus the upper pages ``pages`` (bank 0), with host access rules."""

    def __init__(self, fields: Iterable[Field], pages: Iterable[int]):
        self.pages = frozenset(pages)
        self._data: dict[int, bytearray] = {LOWER: bytearray(PAGE_SIZE)}
        for page in self.pages:
            if not 0 <= page <= 0xFF:
                raise ValueError(f"page {page} is not 00h..FFh")
            self._data[page] = bytearray(PAGE_SIZE)
        self.access = build_access(fields)
        self._bank_in_effect = 0
        for page, _byte in self.access:
            if page not in self._data:
                raise ValueError(f"a field lies on page {page:02X}h, which is not implemented")

    # ---- device side ----------------------------------------------------------------

    @property
    def selected_page(self) -> int:
        return self._data[LOWER][PAGE_SELECT]

    @property
    def selected_bank(self) -> int:
        """The bank in effect (byte 126 may hold a bank written alone, not yet acted on)."""
        return self._bank_in_effect

    def has(self, page: int, bank: int) -> bool:
        """Whether the module has ``page`` in ``bank`` (bank 0 only)."""
        return bank == 0 and page in self.pages

    def select_page_00h(self) -> None:
        """Device side: bank 0, page 00h (after a reset, or a refused selection)."""
        self._data[LOWER][BANK_SELECT] = self._data[LOWER][PAGE_SELECT] = 0
        self._bank_in_effect = 0

    def peek(self, page: int, offset: int, length: int = 1) -> bytes:
        start = self._index(page, offset, length)
        return bytes(self._data[page][start:start + length])

    def poke(self, page: int, offset: int, data: bytes) -> None:
        start = self._index(page, offset, len(data))
        self._data[page][start:start + len(data)] = data

    def set_field(self, f: Field, value: float | int | str) -> None:
        """Store ``value`` (engineering units; text for str fields; raw for bits)."""
        if f.kind == "str":
            text = str(value).encode("ascii")
            if len(text) > f.size:
                raise ValueError(f"{f.name}: {value!r} is longer than {f.size} bytes")
            self.poke(f.page, f.offset, text.ljust(f.size, b" "))
        elif f.kind == "bits":
            raw = int(value) << f.shift
            if raw & ~f.mask:
                raise ValueError(f"{f.name}: {value} does not fit mask {f.mask:#04x}")
            old = self.peek(f.page, f.offset)[0]
            self.poke(f.page, f.offset, bytes(((old & ~f.mask) | raw,)))
        elif f.kind == "bytes":
            raise ValueError(f"{f.name}: poke raw bytes instead")
        else:
            self.poke(f.page, f.offset, f.encode(float(value)))

    def raw(self, f: Field) -> int:
        """The raw integer of a numeric or bit field (as a host would decode it)."""
        value = f.raw(self.peek(f.page, f.offset, f.size), f.offset)
        if not isinstance(value, int):
            raise ValueError(f"{f.name} is not numeric")
        return value

    def latch(self, page: int, offset: int, bits: int) -> None:
        """Set ``bits`` in a latched (clear-on-read) flag byte."""
        if self.access.get((page, offset), RESERVED).kind != "cor":
            raise ValueError(f"page {page} byte {offset} is not a latched flag byte")
        if bits:
            index = self._index(page, offset, 1)
            self._data[page][index] |= bits

    def _index(self, page: int, offset: int, length: int) -> int:
        low = 0 if page == LOWER else PAGE_SIZE
        if page not in self._data or not (low <= offset and offset + length <= low + PAGE_SIZE):
            raise ValueError(f"page {page} bytes {offset}..{offset + length - 1} not implemented")
        return offset - low

    # ---- host side (one bus transaction each) ------------------------------------------

    def _addresses(self, offset: int, length: int) -> list[tuple[int, int]]:
        if not 0 <= offset <= 255 or length < 0:
            raise ValueError(f"byte address {offset} is not 0..255")
        page = self.selected_page
        result = []
        address = offset
        for _ in range(length):
            result.append((LOWER if address < PAGE_SIZE else page, address))
            address += 1
            if address > 255:
                address = PAGE_SIZE  # wrap within the upper page
        return result

    def host_read(self, offset: int, length: int) -> bytes:
        out = bytearray()
        for page, address in self._addresses(offset, length):
            access = self.access.get((page, address), RESERVED)
            if access.kind in ("reserved", "wo"):
                out.append(0)
                continue
            index = self._index(page, address, 1)
            out.append(self._data[page][index])
            if access.kind == "cor":
                self._data[page][index] = 0
        return bytes(out)

    def host_write(self, offset: int, data: bytes) -> HostWrite:
        result = HostWrite()
        selects: dict[int, int] = {}
        for (page, address), value in zip(self._addresses(offset, len(data)), data, strict=True):
            if page == LOWER and address in (BANK_SELECT, PAGE_SELECT):
                selects[address] = value
                continue
            access = self.access.get((page, address), RESERVED)
            if access.kind == "wo":
                result.commands[(page, address)] = value
            elif access.kind == "rw":
                index = self._index(page, address, 1)
                old = self._data[page][index]
                self._data[page][index] = (old & ~access.writable) | (value & access.writable)
                result.stored.add((page, address))
        # The selects take effect when the transaction ends; a bank waits for a page.
        lower = self._data[LOWER]
        if BANK_SELECT in selects:
            lower[BANK_SELECT] = selects[BANK_SELECT]
        if PAGE_SELECT in selects:
            bank, page = lower[BANK_SELECT], selects[PAGE_SELECT]
            if self.has(page, bank):
                lower[PAGE_SELECT] = page
                self._bank_in_effect = bank
            else:
                self.select_page_00h()
                result.refused_select = True
        return result
