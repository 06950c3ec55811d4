"""CMIS memory over the Linux optoe driver: one linear file per module.

The optoe driver (device class ``optoe3`` for CMIS) selects pages itself, so
this transport implements :class:`~drivers.cmis.io.CmisIo` directly, without
:class:`~drivers.cmis.io.PagedIo`. The file, usually
``/sys/bus/i2c/devices/<bus>-0050/eeprom``, is laid out like this:

| file offset                   | CMIS bytes                      |
|-------------------------------|---------------------------------|
| 0..127                        | lower memory, bytes 0..127      |
| 128..255                      | page 00h, bytes 128..255        |
| (p + 1) * 128 + (o - 128)     | page p, byte o (128..255)       |

that is, file offset n >= 128 is page ``n // 128 - 1``, byte ``128 + n % 128``.
Only bank 0 is reachable through optoe.

The kernel splits every access into 128-byte chunks at page boundaries (and
writes the page select byte around upper-page chunks); :attr:`OptoeIo.stats`
counts one transaction per chunk, which is what reaches the bus apart from
those page select writes.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import TypeVar

from drivers.cmis.fields import LOWER
from drivers.cmis.io import IoStats, check_range
from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    ValidationError,
)
from drivers.transports.deadline import CallTimedOut, DeadlineWorker

PAGE_SIZE = 128
"""Bytes in one optoe chunk: lower memory, or the upper half of one page."""

R = TypeVar("R")

NACK_ERRNOS = frozenset({errno.EIO, errno.ENXIO, errno.EREMOTEIO})
"""What the kernel returns when the module is absent or does not acknowledge."""

GONE_ERRNOS = frozenset({errno.ENOENT, errno.ENODEV, errno.EBADF})
"""The file, or the device behind it, went away (driver unbound, module removed)."""


def file_offset(page: int, offset: int) -> int:
    """Where byte ``offset`` of ``page`` (LOWER for 0..127) sits in an optoe file."""
    if page == LOWER:
        return offset
    return (page + 1) * PAGE_SIZE + (offset - PAGE_SIZE)


def chunk_count(start: int, length: int) -> int:
    """How many 128-byte chunks an access of ``length`` bytes from file offset ``start`` touches."""
    return (start + length - 1) // PAGE_SIZE - start // PAGE_SIZE + 1


class OptoeIo:
    """:class:`~drivers.cmis.io.CmisIo` over an optoe file.

    ``timeout_seconds`` bounds every access: the kernel's own I2C timeouts and
    retries can block a read of the file for longer, and such an access is
    reported as :class:`DeviceTimeout` (it finishes, or not, in the background).

    Raises :class:`DeviceUnreachable` when the file is missing or cannot be
    opened, :class:`DeviceRejected` when the module does not acknowledge (EIO,
    ENXIO, EREMOTEIO: absent or NACK), :class:`DeviceTimeout` on ETIMEDOUT or
    after ``timeout_seconds``, :class:`ProtocolError` on a short read or write,
    :class:`ValidationError` for a range outside one page or a bank other than 0.
    """

    def __init__(self, path: str, *, timeout_seconds: float = 2.0):
        self._path = path
        self.timeout_seconds = timeout_seconds
        self.stats = IoStats()
        self._fd: int | None = None
        self._worker = DeadlineWorker(f"optoe {path}")

    @property
    def address(self) -> str:
        return self._path

    def open(self) -> None:
        """Open the file (once); every access opens it when needed."""
        if self._fd is not None:
            return
        try:
            self._fd = os.open(self._path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            raise DeviceUnreachable(f"{self._path}: no such optoe file (driver not bound, "
                                    "or wrong path)") from None
        except OSError as error:
            raise DeviceUnreachable(f"cannot open {self._path}: "
                                    f"{error.strerror or error}") from None

    def close(self) -> None:
        fd, self._fd = self._fd, None
        self._worker.close(None if fd is None else lambda: _close_quietly(fd))

    def read(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        """``length`` bytes from ``offset`` of ``page`` (LOWER for 0..127), one page at most."""
        check_range(page, offset, length)
        self._check_bank(bank)
        start = file_offset(page, offset)
        fd = self._require()
        data = self._kernel(lambda: os.pread(fd, length, start), chunk_count(start, length),
                            "read", page, offset)
        if len(data) != length:
            raise ProtocolError(
                f"{self._path}: read of {length} bytes at page {_page_name(page)} byte {offset} "
                f"returned {len(data)} (page not supported, or flat memory?)")
        self.stats.bytes_read += length
        return data

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        """Write ``data`` from ``offset`` of ``page`` (LOWER for 0..127), one page at most."""
        check_range(page, offset, len(data))
        self._check_bank(bank)
        start = file_offset(page, offset)
        fd = self._require()
        payload = bytes(data)
        written = self._kernel(lambda: os.pwrite(fd, payload, start),
                               chunk_count(start, len(payload)), "write", page, offset)
        if written != len(payload):
            raise ProtocolError(
                f"{self._path}: write of {len(payload)} bytes at page {_page_name(page)} "
                f"byte {offset} stored {written}")
        self.stats.bytes_written += written

    def _check_bank(self, bank: int) -> None:
        if bank != 0:
            raise ValidationError(f"{self._path}: bank {bank} is not reachable through optoe "
                                  "(bank 0 only)")

    def _require(self) -> int:
        self.open()
        assert self._fd is not None
        return self._fd

    def _kernel(self, call: Callable[[], R], chunks: int, what: str, page: int,
                offset: int) -> R:
        """Run ``call`` on the worker; count its ``chunks`` unless it never started."""
        where = f"{self._path}: {what} at page {_page_name(page)} byte {offset}"
        try:
            result = self._worker.call(call, self.timeout_seconds)
        except CallTimedOut as late:
            if late.started:
                self.stats.transactions += chunks
            raise DeviceTimeout(f"{where}: no answer within {self.timeout_seconds:g} s",
                                detail=f"the kernel call {late}") from None
        except OSError as error:
            self.stats.transactions += chunks
            raise self._os_error(error, where) from None
        self.stats.transactions += chunks
        return result

    def _os_error(self, error: OSError, where: str) -> DeviceError:
        text = error.strerror or str(error)
        if error.errno in NACK_ERRNOS:
            return DeviceRejected(f"{where}: I2C NACK, module absent or not answering ({text})")
        if error.errno == errno.ETIMEDOUT:
            return DeviceTimeout(f"{where}: I2C timeout ({text})")
        if error.errno in GONE_ERRNOS:
            self.close()
        return DeviceUnreachable(f"{where}: {text}")


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _page_name(page: int) -> str:
    return "lower" if page == LOWER else f"{page:02X}h"
