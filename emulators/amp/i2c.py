"""The amplifier module's two-wire (I2C) slave: what a host transport talks to.

One call is one bus transaction. :meth:`I2cSlave.read` is the combined
format (write the offset byte, repeated START, read ``length`` bytes);
:meth:`I2cSlave.write` writes the offset byte and 1..128 data bytes. Byte
addressing, auto-increment and the wrap past 255 are those of
:mod:`emulators.amp.memory`.

Bus time at ``bus_hz`` (400 kHz: 2.5 us per bit), 9 bit times per byte
(8 bits and the acknowledge), START, repeated START and STOP one bit time
each:

- combined read of n bytes: START + address(W) + offset + repeated START
  + address(R) + n bytes + STOP = 30 + 9n bit times (128 bytes: 2.955 ms);
- write of n bytes: START + address(W) + offset + n bytes + STOP
  = 20 + 9n bit times;
- a transaction the module does not acknowledge ends after its address
  byte: START + address + STOP = 11 bit times; a hung bus has carried
  START + address (10 bit times) when the host gives up.

Every transaction that went on the bus is counted in :attr:`I2cSlave.stats`,
failed ones too; bytes only when they were moved. The stats also count, per
page, the selects a host wrote (byte 127, accepted or not) and the reads that
moved bytes of an upper page (by the page that was selected), so that a test
can tell which pages a host asked for and which it read.

Faults (the module's FaultInjector): ``nack`` and ``bus_hang`` spoil
transactions, each use taking one from ``count`` (``None``: until cleared);
``corrupt`` flips one bit of one byte of a read's data, on ``count`` reads
(``None``: the next read only). The module does not acknowledge while it
resets. Thread-safe: one transaction at a time.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from emulators.amp.model import AmplifierModule

MAX_TRANSFER = 128


class I2cNack(Exception):
    """The addressed device did not acknowledge."""


class I2cBusHang(Exception):
    """SDA held low; the transaction could not complete."""


@dataclass
class BusStats:
    transactions: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    seconds: float = 0.0  # bus time at the bus speed
    selects: dict[int, int] = field(default_factory=dict)
    """Page -> how many writes of the page select byte (127) asked for it."""
    page_reads: dict[int, int] = field(default_factory=dict)
    """Upper page -> how many reads moved bytes 128-255 while it was selected."""


READ_OVERHEAD_BITS = 1 + 9 + 9 + 1 + 9 + 1
WRITE_OVERHEAD_BITS = 1 + 9 + 9 + 1
NACK_BITS = 1 + 9 + 1
HANG_BITS = 1 + 9


class I2cSlave:
    """The module at ``address`` (7-bit) on a bus running at ``bus_hz``."""

    address: int = 0x50
    bus_hz: int = 400_000

    def __init__(self, module: AmplifierModule, *, address: int = 0x50, bus_hz: int = 400_000):
        if not 0x08 <= address <= 0x77:
            raise ValueError(f"I2C address {address:#04x} is not a 7-bit device address")
        if bus_hz <= 0:
            raise ValueError("bus_hz must be positive")
        self.module = module
        self.address = address
        self.bus_hz = bus_hz
        self.stats = BusStats()
        self._lock = threading.Lock()
        self._flips = random.Random(f"{module.serial}/corrupt")

    def transaction_seconds(self, kind: str, data_bytes: int) -> float:
        """Bus time of one ``"read"`` or ``"write"`` transaction moving ``data_bytes``."""
        if kind == "read":
            bits = READ_OVERHEAD_BITS + 9 * data_bytes
        elif kind == "write":
            bits = WRITE_OVERHEAD_BITS + 9 * data_bytes
        elif kind == "nack":
            bits = NACK_BITS
        elif kind == "hang":
            bits = HANG_BITS
        else:
            raise ValueError(f"transaction kind must be 'read' or 'write', got {kind!r}")
        return bits / self.bus_hz

    def read(self, offset: int, length: int) -> bytes:
        """Combined read of ``length`` (1..128) bytes from byte address ``offset``."""
        _check(offset, length)
        with self._lock:
            self._begin()
            if offset + length > 128:
                page = self.module.memory.selected_page
                self.stats.page_reads[page] = self.stats.page_reads.get(page, 0) + 1
            data = bytearray(self.module.host_read(offset, length))
            corrupt = self.module.faults.consume("corrupt")
            if corrupt is not None:
                if corrupt.count is None:
                    self.module.faults.clear("corrupt")
                index = self._flips.randrange(len(data))
                data[index] ^= 1 << self._flips.randrange(8)
            self._account("read", length)
            self.stats.bytes_read += length
            return bytes(data)

    def write(self, offset: int, data: bytes) -> None:
        """Write ``data`` (1..128 bytes) from byte address ``offset`` in one transaction."""
        _check(offset, len(data))
        with self._lock:
            self._begin()
            if offset <= 127 < offset + len(data):
                page = data[127 - offset]
                self.stats.selects[page] = self.stats.selects.get(page, 0) + 1
            self.module.host_write(offset, bytes(data))
            self._account("write", len(data))
            self.stats.bytes_written += len(data)

    def _begin(self) -> None:
        faults = self.module.faults
        if faults.consume("bus_hang") is not None:
            self._account("hang", 0)
            raise I2cBusHang(f"{self.module.name}: SDA held low at address {self.address:#04x}")
        if faults.consume("nack") is not None or not self.module.acknowledges():
            self._account("nack", 0)
            raise I2cNack(f"{self.module.name}: no acknowledge at address {self.address:#04x}")

    def _account(self, kind: str, data_bytes: int) -> None:
        self.stats.transactions += 1
        self.stats.seconds += self.transaction_seconds(kind, data_bytes)


def _check(offset: int, length: int) -> None:
    if not 0 <= offset <= 255:
        raise ValueError(f"byte address {offset} is not 0..255")
    if not 1 <= length <= MAX_TRANSFER:
        raise ValueError(f"a transaction moves 1..{MAX_TRANSFER} bytes, not {length}")
