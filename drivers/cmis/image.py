"""A module's memory held in bytes: decode a saved dump, or test the decoders on it.

:class:`ImageIo` is a :class:`~drivers.cmis.io.CmisIo` over an in-memory image:
lower memory plus any upper pages, 128 bytes each. It has no physics and no
side effects beyond storing writes: latched bytes are not cleared on read.
"""

from __future__ import annotations

from collections.abc import Mapping

from drivers.cmis.fields import LOWER
from drivers.cmis.io import IoStats, check_range
from drivers.errors import DeviceRejected


class ImageIo:
    def __init__(self, pages: Mapping[int, bytes | bytearray], *, address: str = "image"):
        self.pages: dict[int, bytearray] = {}
        for page, data in pages.items():
            if len(data) != 128:
                raise ValueError(f"page {page}: an image page is 128 bytes, got {len(data)}")
            self.pages[page] = bytearray(data)
        if LOWER not in self.pages:
            raise ValueError("an image needs lower memory (page LOWER)")
        self._address = address
        self.stats = IoStats()

    @property
    def address(self) -> str:
        return self._address

    def _page(self, page: int, bank: int) -> bytearray:
        if bank != 0 or page not in self.pages:
            raise DeviceRejected(f"page {page:02X}h bank {bank} is not in this image")
        return self.pages[page]

    def read(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        check_range(page, offset, length)
        base = 0 if page == LOWER else 128
        self.stats.transactions += 1
        self.stats.bytes_read += length
        return bytes(self._page(page, bank)[offset - base:offset - base + length])

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        check_range(page, offset, len(data))
        base = 0 if page == LOWER else 128
        self.stats.transactions += 1
        self.stats.bytes_written += len(data)
        self._page(page, bank)[offset - base:offset - base + len(data)] = data

    def close(self) -> None:
        pass
