"""An I2C bus through a USB-serial I2C bridge board, over pyserial.

The address is anything :func:`serial.serial_for_url` takes: a device path
(``/dev/ttyACM0``), a pty, ``socket://host:port``. The emulator serves the
same protocol on a pty and on TCP (``emulators/amp/bridge.py``).

Bridge line protocol, version 1
-------------------------------

- ASCII lines. The host ends every line with LF; the bridge accepts CR LF as
  well. The bridge answers every line it receives with exactly one line
  ending in LF, in the order the lines came.
- Fields are separated by one space. Numbers are hexadecimal, two digits per
  byte: ``AA`` the 7-bit device address, ``OO`` the byte address the
  transfer starts at, ``NN`` a byte count from 01 to 80 (1..128), ``DD…`` the
  data, 1..128 bytes. A transfer stays inside byte addresses 00..FF.

| host sends      | bridge answers on success       | on the bus                             |
|-----------------|---------------------------------|----------------------------------------|
| ``V``           | ``OK MSO-I2C-BRIDGE 1 400``     | nothing (protocol version 1, 400 kHz)  |
| ``R AA OO NN``  | ``OK`` and 2*NN hex digits      | write OO, restart, read NN bytes       |
| ``W AA OO DD…`` | ``OK``                          | write OO then the data, one transfer   |

For example ``R 50 00 02`` -> ``OK 1840``; ``W 50 7E 0011`` -> ``OK``.

| error reply           | meaning                                 | raised here        |
|-----------------------|-----------------------------------------|--------------------|
| ``NACK``              | the device did not acknowledge          | DeviceRejected     |
| ``ERR BUS``           | the bus is hung (SDA or SCL held low)   | DeviceTimeout      |
| ``ERR SYNTAX <text>`` | the request line could not be parsed    | ProtocolError      |
| ``ERR RANGE <text>``  | a number is out of range                | ProtocolError      |

Anything else, or an ``OK`` of the wrong length, is a :class:`ProtocolError`;
no reply within the timeout is a :class:`DeviceTimeout`.

The host sends ``V`` when it opens the line and refuses a bridge that does
not answer version 1. After a timeout or a garbled reply, a late or partial
reply may still be on its way, so before the next request the host
resynchronises: it drops what has arrived, sends ``V`` and skips lines until
the version reply comes back. Because the bridge answers in order, every
reply older than that ``V`` has then been consumed, and a late reply is never
taken for the answer to a later request.
"""

from __future__ import annotations

import re
import time

from drivers.cmis.io import MAX_TRANSFER, IoStats
from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    ValidationError,
)
from drivers.transports.i2c_bus import check_device_address, check_transfer, read_transfers
from drivers.transports.serial import SerialTransport

PROTOCOL_VERSION = 1
IDENTITY = "MSO-I2C-BRIDGE"
DEFAULT_BAUD = 115200

# Searched for at the end of a line, so that a truncated reply that never got
# its LF and ran into the version reply does not hide it.
_VERSION_REPLY = re.compile(rb"OK MSO-I2C-BRIDGE ([0-9]+)(?: ([0-9]+))?[ -~]*?\r?\n\Z")
_HEX = re.compile(r"[0-9A-Fa-f]*")


class BridgeBus:
    """One device address behind a USB-serial I2C bridge (see the module docstring).

    ``timeout_seconds`` is how long one request waits for its reply. Raises
    :class:`DeviceRejected` on NACK, :class:`DeviceTimeout` on a hung bus or
    no reply, :class:`ProtocolError` on a malformed reply or a bridge that
    does not speak version 1, :class:`DeviceUnreachable` when the serial line
    cannot be opened or is lost, :class:`ValidationError` for a transfer
    outside byte addresses 0..255 or a write of more than 128 bytes.
    """

    def __init__(
        self,
        url: str,
        *,
        device_address: int = 0x50,
        timeout_seconds: float = 2.0,
        baudrate: int = DEFAULT_BAUD,
    ):
        check_device_address(device_address)
        self.url = url
        self.device_address = device_address
        self.stats = IoStats()
        self.bus_khz: int | None = None
        """The bus speed the bridge reported, once open."""
        self._link = SerialTransport(url, baudrate=baudrate, timeout_seconds=timeout_seconds)
        self._in_sync = False

    @property
    def timeout_seconds(self) -> float:
        return self._link.timeout_seconds

    @timeout_seconds.setter
    def timeout_seconds(self, seconds: float) -> None:
        if seconds != self._link.timeout_seconds:
            # The serial port takes its timeout when it opens: open it again.
            self.close()
            self._link.timeout_seconds = seconds

    @property
    def address(self) -> str:
        return f"{self.url}@{self.device_address:#04x}"

    def open(self) -> None:
        """Open the line and check the bridge's protocol version; again after any resync."""
        self._link.open()
        if not self._in_sync:
            self._synchronise()

    def close(self) -> None:
        self._in_sync = False
        self._link.close()

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from ``offset`` in one ``R`` request (two when ``length`` is
        over 128: see :func:`~drivers.transports.i2c_bus.read_transfers`)."""
        check_transfer(offset, length)
        return b"".join(self._read_once(start, size)
                        for start, size in read_transfers(offset, length))

    def write(self, offset: int, data: bytes) -> None:
        """Write ``data`` (1..128 bytes) from ``offset``, in one transfer."""
        check_transfer(offset, len(data))
        if len(data) > MAX_TRANSFER:
            raise ValidationError(f"{self.address}: a bridge write moves at most "
                                  f"{MAX_TRANSFER} bytes, not {len(data)}")
        what = f"write of {len(data)} bytes at byte {offset}"
        hex_data = bytes(data).hex().upper()
        reply = self._exchange(f"W {self.device_address:02X} {offset:02X} {hex_data}", what)
        if reply != "OK":
            raise self._unexpected(reply, what)
        self.stats.bytes_written += len(data)

    def _read_once(self, offset: int, length: int) -> bytes:
        what = f"read of {length} bytes at byte {offset}"
        reply = self._exchange(f"R {self.device_address:02X} {offset:02X} {length:02X}", what)
        digits = reply[3:] if reply.startswith("OK ") else None
        if digits is None or len(digits) != 2 * length or not _HEX.fullmatch(digits):
            raise self._unexpected(reply, what, expected=f"OK and {2 * length} hex digits")
        self.stats.bytes_read += length
        return bytes.fromhex(digits)

    def _exchange(self, request: str, what: str) -> str:
        """Send one request line (one transaction) and return its reply, without the line end."""
        self.open()
        self._send(request)
        self.stats.transactions += 1
        try:
            line = self._link.read_until(b"\n")
        except DeviceTimeout as error:
            self._in_sync = False
            raise DeviceTimeout(f"{self.address}: {what}: no reply within "
                                f"{self.timeout_seconds:g} s", detail=error.detail) from None
        except DeviceUnreachable:
            self._in_sync = False
            raise
        return line.rstrip(b"\r\n").decode("ascii", "replace")

    def _send(self, request: str) -> None:
        try:
            self._link.write(request.encode("ascii") + b"\n")
        except (DeviceTimeout, DeviceUnreachable):
            self._in_sync = False
            raise

    def _unexpected(self, reply: str, what: str, *, expected: str = "OK") -> DeviceError:
        """The error for a reply that is not the success reply (in sync or not)."""
        where = f"{self.address}: {what}"
        if reply == "NACK":
            return DeviceRejected(f"I2C NACK from {self.address}: {what}")
        if reply == "ERR BUS" or reply.startswith("ERR BUS "):
            return DeviceTimeout(f"{where}: the bridge reports the I2C bus hung",
                                 detail=reply)
        if reply.startswith(("ERR SYNTAX", "ERR RANGE")):
            return ProtocolError(f"{where}: the bridge refused the request: {reply}")
        # A reply that belongs to no request we know: the stream may be off by one.
        self._in_sync = False
        return ProtocolError(f"{where}: expected {expected}, got {_shorten(reply)}",
                             detail=f"reply {reply!r}")

    def _synchronise(self) -> None:
        """Drop stale input, send ``V``, skip lines until its reply, check the version."""
        self._link.discard_input()
        self._send("V")
        deadline = time.monotonic() + self.timeout_seconds
        skipped: list[bytes] = []
        while True:
            try:
                line = self._link.read_until(b"\n")
            except DeviceTimeout:
                raise DeviceTimeout(f"{self.url}: no answer to V within "
                                    f"{self.timeout_seconds:g} s (is it an I2C bridge?)",
                                    detail=f"skipped {skipped[-3:]!r}" if skipped else None) \
                    from None
            except DeviceUnreachable:
                self._in_sync = False
                raise
            match = _VERSION_REPLY.search(line)
            if match is not None:
                break
            skipped.append(line)  # a late reply, or noise
            if time.monotonic() >= deadline:
                raise ProtocolError(f"{self.url} does not answer V like an {IDENTITY} bridge",
                                    detail=f"lines {skipped[-3:]!r}")
        version = int(match[1])
        if version != PROTOCOL_VERSION:
            raise ProtocolError(f"{self.url}: the bridge speaks protocol version {version}; "
                                f"this host speaks {PROTOCOL_VERSION}",
                                detail=f"reply {line!r}")
        if match[2] is None:
            raise ProtocolError(f"{self.url}: the bridge's version reply has no bus speed",
                                detail=f"reply {line!r}")
        self.bus_khz = int(match[2])
        self._in_sync = True


def _shorten(reply: str, limit: int = 40) -> str:
    return repr(reply if len(reply) <= limit else reply[:limit] + "…")
