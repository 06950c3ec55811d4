"""The one I/O seam of the CMIS layer, and page selection over a raw I2C bus.

Everything above this module speaks ``read(page, offset, length)`` and
``write(page, offset, data)``; ``page`` is :data:`~drivers.cmis.fields.LOWER`
for bytes 0-127. Below it are two kinds of transport:

- a linear file in which the kernel selects pages itself (Linux optoe), which
  implements :class:`CmisIo` directly;
- a raw two-wire bus to the module's address (Linux i2c-dev, the USB-serial
  bridge), an :class:`I2cBus`, wrapped in :class:`PagedIo`, which writes the
  bank and page select bytes (126-127, in one write) and checks them.

Page selection is verified on every upper-page read: a read that starts at
byte 128 starts two bytes early instead, at 126, and so returns the bank and
page select along with the data in the same transaction. If they are not
what we selected (the module reset and fell back to page 00h, say) the read
is repeated after selecting again, so another page's bytes are never taken
as data. A read that starts further in, where starting early would cross
latched clear-on-read bytes or cost more than a small transaction, checks
the select bytes with a separate two-byte read first, as a write does. The
select, the check and the transfer are then separate transactions, so another
process polling the same module could select its page in between: the
``lock`` (for the raw transports a
:class:`~drivers.transports.buslock.BusLock`) is held across them, so every
msoctl process on this machine takes turns at the module's page select.

A module does not accept a bank or page it does not have: its select bytes
read back another page (page 00h of bank 0) instead. When selecting again
does not help either, the module has refused the page, and that is
:class:`~drivers.errors.DeviceRejected` -- nothing of the page that is
there instead is returned or written.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Protocol

from drivers.cmis.fields import LOWER, Field
from drivers.errors import DeviceRejected, ValidationError

MAX_TRANSFER = 128
"""Bytes one transaction moves at most (one page; i2c_rdwr and the bridge both allow it)."""

EARLY_START_LIMIT = 8
"""Start a read at most this many bytes early to verify the page in the same transaction."""


@dataclass
class IoStats:
    """What the bus did: the figures the status-poll benchmark reports."""

    transactions: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


class CmisIo(Protocol):
    stats: IoStats

    @property
    def address(self) -> str:
        """Where the module is, for messages."""

    def read(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        """``length`` bytes of ``page`` (LOWER for 0-127) from byte address ``offset``."""

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None: ...

    def close(self) -> None: ...


class I2cBus(Protocol):
    """One device address on a two-wire bus. Raises DeviceRejected on NACK,
    DeviceTimeout on a hung bus, DeviceUnreachable when the adapter is gone."""

    timeout_seconds: float
    stats: IoStats

    @property
    def address(self) -> str: ...

    def read(self, offset: int, length: int) -> bytes:
        """Set the address pointer to ``offset`` and read ``length`` bytes (one transaction)."""

    def write(self, offset: int, data: bytes) -> None:
        """Write ``data`` from ``offset`` (one transaction)."""

    def close(self) -> None: ...


def check_range(page: int, offset: int, length: int) -> None:
    low, high = (0, 127) if page == LOWER else (128, 255)
    if length < 1 or not (low <= offset and offset + length - 1 <= high):
        where = "lower memory" if page == LOWER else f"page {page:02X}h"
        raise ValidationError(f"bytes {offset}..{offset + length - 1} are outside {where} "
                              f"({low}..{high})")
    if not (page == LOWER or 0 <= page <= 0xFF):
        raise ValidationError(f"page {page} is not 00h..FFh")


class PageLock(Protocol):
    """Held across a page select and the transfers under it (see the module docstring)."""

    def held(self, timeout_seconds: float) -> AbstractContextManager[None]: ...

    def close(self) -> None: ...


class NoLock:
    """For a module no other process on this machine reaches (a test's double)."""

    def held(self, timeout_seconds: float) -> AbstractContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        pass


OTHER_HOST_ATTEMPTS = 5
"""Selects of a page before giving up when each time another host's page was in place."""


@dataclass
class PagedIo:
    """:class:`CmisIo` over an :class:`I2cBus`: page and bank selection, tracked and verified."""

    bus: I2cBus
    latched: frozenset[tuple[int, int]]
    """(page, byte) of clear-on-read bytes, which no early start may cross. Required: without
    it an early start could consume a latched flag (see :func:`latched_bytes`)."""
    lock: PageLock = field(default_factory=NoLock)
    stats: IoStats = field(init=False)
    _selected: tuple[int, int] | None = field(default=None, init=False)  # (bank, page)

    def __post_init__(self) -> None:
        self.stats = self.bus.stats

    @property
    def address(self) -> str:
        return self.bus.address

    def forget_page(self) -> None:
        """The module may have changed its page select (a reset): select again next time."""
        self._selected = None

    def _select(self, page: int, bank: int) -> None:
        if self._selected != (bank, page):
            self.bus.write(126, bytes((bank, page)))
            self._selected = (bank, page)

    def _early_start_ok(self, page: int, offset: int) -> bool:
        if offset - 128 > EARLY_START_LIMIT:
            return False
        return not any((page, byte) in self.latched for byte in range(128, offset))

    def read(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        check_range(page, offset, length)
        if page == LOWER:
            return b"".join(self.bus.read(start, size)
                            for start, size in _chunks(offset, length))
        selected: tuple[int, ...] = ()
        attempt = 0
        with self.lock.held(self.bus.timeout_seconds):
            while True:
                self._select(page, bank)
                data, selected = self._read_verified(page, bank, offset, length)
                if data is not None:
                    return data
                self.forget_page()
                attempt += 1
                if attempt >= self._attempts(selected):
                    raise self._refused(page, bank, selected)

    @staticmethod
    def _attempts(selected: tuple[int, ...]) -> int:
        """How often to select before giving up. A module refusing a page falls back to
        bank 0 page 00h (CMIS Page Mapping): twice tells that. Any other page in the select
        bytes is one the module has and somebody selected: another host on the bus (a
        second process, a BMC) between this host's select and its read, so select again."""
        return 2 if tuple(selected) == (0, 0) else OTHER_HOST_ATTEMPTS

    def _refused(self, page: int, bank: int, selected: tuple[int, ...]) -> DeviceRejected:
        shown = f"bank {selected[0]} page {selected[1]:02X}h" if len(selected) == 2 else "?"
        if len(selected) == 2 and tuple(selected) != (0, 0):
            return DeviceRejected(
                f"{self.address}: page {page:02X}h bank {bank} was selected "
                f"{OTHER_HOST_ATTEMPTS} times and each time another was in place when it was "
                f"read ({shown}): another host is using the bus")
        return DeviceRejected(f"{self.address}: the module does not select page {page:02X}h "
                              f"bank {bank} (its select bytes read back {shown}): it does not "
                              "have that page")

    def _read_verified(self, page: int, bank: int, offset: int, length: int
                       ) -> tuple[bytes | None, tuple[int, ...]]:
        """The bytes, or None when the select bytes show another page; and the selects."""
        if self._early_start_ok(page, offset) and offset + length - 126 <= MAX_TRANSFER:
            skip = offset - 126
            data = self.bus.read(126, skip + length)
            selected = tuple(data[:2])
            if selected != (bank, page):
                return None, selected
            return data[skip:], selected
        selected = tuple(self.bus.read(126, 2))
        if selected != (bank, page):
            return None, selected
        return b"".join(self.bus.read(start, size)
                        for start, size in _chunks(offset, length)), selected

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        check_range(page, offset, len(data))
        if page == LOWER:
            self._write(offset, data)
            if offset <= 127 < offset + len(data):
                self.forget_page()
            return
        with self.lock.held(self.bus.timeout_seconds):
            attempt = 0
            while True:
                self._select(page, bank)
                selected = tuple(self.bus.read(126, 2))
                if selected == (bank, page):
                    break
                self.forget_page()
                attempt += 1
                if attempt >= self._attempts(selected):
                    raise self._refused(page, bank, selected)
            self._write(offset, data)

    def _write(self, offset: int, data: bytes) -> None:
        for start, size in _chunks(offset, len(data)):
            self.bus.write(start, data[start - offset:start - offset + size])

    def close(self) -> None:
        try:
            self.bus.close()
        finally:
            self.lock.close()


def _chunks(offset: int, length: int) -> list[tuple[int, int]]:
    return [(start, min(MAX_TRANSFER, offset + length - start))
            for start in range(offset, offset + length, MAX_TRANSFER)]


def latched_bytes(fields: Iterable[Field]) -> frozenset[tuple[int, int]]:
    """(page, byte) of every clear-on-read byte in ``fields``."""
    return frozenset((f.page, byte) for f in fields if f.access == "cor"
                     for byte in range(f.offset, f.end))
