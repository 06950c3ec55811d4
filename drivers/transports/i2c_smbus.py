"""A raw I2C bus through Linux i2c-dev (``/dev/i2c-N``) with smbus2.

Every access is one combined transfer through ``I2C_RDWR``: a read is a write
of the one-byte offset, a repeated start and a read of up to a page, which
smbus2's ``read_i2c_block_data`` cannot do (it stops at 32 bytes); a write is
one message of the offset followed by the data. The adapter must support
plain I2C transfers (``I2C_FUNC_I2C``), as a host bus adapter driving a
pluggable module cage does.

This is an :class:`~drivers.cmis.io.I2cBus`; :class:`~drivers.cmis.io.PagedIo`
adds page selection on top.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Protocol

from smbus2 import I2cFunc, SMBus, i2c_msg

from drivers.cmis.io import IoStats
from drivers.errors import DeviceError, DeviceRejected, DeviceTimeout, DeviceUnreachable
from drivers.transports.deadline import CallTimedOut, DeadlineWorker
from drivers.transports.i2c_bus import check_device_address, check_transfer, read_transfers

NACK_ERRNOS = frozenset({errno.ENXIO, errno.EREMOTEIO, errno.EIO})
"""What adapter drivers return when the addressed device does not acknowledge."""

HANG_ERRNOS = frozenset({errno.ETIMEDOUT, errno.EAGAIN})
"""What adapter drivers return when the bus is stuck (SDA held low, arbitration lost)."""


class RdwrBus(Protocol):
    """What this transport needs of an smbus2 ``SMBus``: combined transfers."""

    def i2c_rdwr(self, *i2c_msgs: i2c_msg) -> None: ...


class SmbusBus:
    """One device address on a Linux i2c-dev bus.

    ``bus`` is a bus number (``1`` or ``"1"`` for ``/dev/i2c-1``) or a device
    path; ``smbus`` replaces the bus that would be opened with any object that
    has smbus2's ``i2c_rdwr``, which tests use to put an emulated module on the
    wire (whoever passes it in closes it). ``timeout_seconds`` bounds every
    transfer, however long the adapter driver keeps it blocked in the kernel.

    Raises :class:`DeviceRejected` on a NACK (ENXIO, EREMOTEIO, EIO),
    :class:`DeviceTimeout` on a hung bus (ETIMEDOUT, EAGAIN) or after
    ``timeout_seconds``, :class:`DeviceUnreachable` when the bus device is
    missing or cannot be used, :class:`ValidationError` for a transfer
    outside byte addresses 0..255.
    """

    def __init__(
        self,
        bus: int | str,
        *,
        device_address: int = 0x50,
        timeout_seconds: float = 2.0,
        smbus: RdwrBus | None = None,
    ):
        check_device_address(device_address)
        numbered = isinstance(bus, int) or bus.isdigit()
        self._bus_path = f"/dev/i2c-{bus}" if numbered else str(bus)
        self.device_address = device_address
        self.timeout_seconds = timeout_seconds
        self.stats = IoStats()
        self._smbus: RdwrBus | None = smbus
        self._opened: SMBus | None = None  # what close() closes: only a bus opened here
        self._worker = DeadlineWorker(f"i2c-dev {self.address}")

    @property
    def address(self) -> str:
        return f"{self._bus_path}@{self.device_address:#04x}"

    def open(self) -> None:
        """Open the bus device (once); every transfer opens it when needed."""
        if self._smbus is not None:
            return
        smbus = SMBus()
        try:
            smbus.open(self._bus_path)  # opens, then asks the adapter what it can do
        except FileNotFoundError:
            raise DeviceUnreachable(f"{self._bus_path}: no such I2C bus (is i2c-dev loaded?)") \
                from None
        except OSError as error:
            smbus.close()
            raise DeviceUnreachable(f"cannot use {self._bus_path} as an I2C bus: "
                                    f"{error.strerror or error}") from None
        if not smbus.funcs & I2cFunc.I2C:
            smbus.close()
            raise DeviceUnreachable(f"{self._bus_path}: the adapter cannot do combined I2C "
                                    "transfers (no I2C_FUNC_I2C), only SMBus commands")
        self._smbus = self._opened = smbus

    def close(self) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            self._smbus = None
            self._worker.close(opened.close)
        else:
            self._worker.close()

    def read(self, offset: int, length: int) -> bytes:
        """Set the address pointer to ``offset`` and read ``length`` bytes, in one transfer
        (two when ``length`` is over 128: see :func:`~drivers.transports.i2c_bus.read_transfers`).
        """
        check_transfer(offset, length)
        return b"".join(self._read_once(start, size)
                        for start, size in read_transfers(offset, length))

    def _read_once(self, offset: int, length: int) -> bytes:
        smbus = self._require()
        pointer = i2c_msg.write(self.device_address, [offset])
        incoming = i2c_msg.read(self.device_address, length)
        self._transfer(lambda: smbus.i2c_rdwr(pointer, incoming),
                       f"read of {length} bytes at byte {offset}")
        data = bytes(incoming)
        self.stats.bytes_read += len(data)
        return data

    def write(self, offset: int, data: bytes) -> None:
        """Write ``data`` from ``offset``, in one transfer."""
        check_transfer(offset, len(data))
        smbus = self._require()
        outgoing = i2c_msg.write(self.device_address, bytes((offset, *data)))
        self._transfer(lambda: smbus.i2c_rdwr(outgoing),
                       f"write of {len(data)} bytes at byte {offset}")
        self.stats.bytes_written += len(data)

    def _require(self) -> RdwrBus:
        self.open()
        assert self._smbus is not None
        return self._smbus

    def _transfer(self, call: Callable[[], None], what: str) -> None:
        """Run one transfer on the worker; count it unless it never started."""
        try:
            self._worker.call(call, self.timeout_seconds)
        except CallTimedOut as late:
            if late.started:
                self.stats.transactions += 1
            raise DeviceTimeout(f"{self.address}: {what}: no answer within "
                                f"{self.timeout_seconds:g} s", detail=f"the transfer {late}") \
                from None
        except OSError as error:
            self.stats.transactions += 1
            raise self._os_error(error, what) from None
        self.stats.transactions += 1

    def _os_error(self, error: OSError, what: str) -> DeviceError:
        text = error.strerror or str(error)
        if error.errno in NACK_ERRNOS:
            return DeviceRejected(f"I2C NACK from {self.address}: {what} ({text})")
        if error.errno in HANG_ERRNOS:
            return DeviceTimeout(f"{self.address}: {what}: I2C bus hung ({text})")
        return DeviceUnreachable(f"{self.address}: {what}: {text}")
