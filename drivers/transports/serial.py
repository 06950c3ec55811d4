"""Serial transport over pyserial: a device path, a pty, or any ``serial_for_url`` URL."""

from __future__ import annotations

import socket
import time
from typing import Any

import serial
from serial.urlhandler import protocol_socket

from drivers.errors import DeviceTimeout, DeviceUnreachable


class _SocketPort(protocol_socket.Serial):  # type: ignore[misc]  # pyserial is untyped
    """pyserial's ``socket://`` port, closed without the 0.3 s pyserial sleeps after
    closing (left for servers slow to take a quick reconnect). The bridge's server takes
    a new connection at once, and every command and probe that closes an amplifier's
    line would pay the 0.3 s."""

    def close(self) -> None:
        state: Any = self  # pyserial's attributes, untyped
        if not state.is_open:
            return
        connection, state._socket = state._socket, None
        if connection is not None:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()
        state.is_open = False


class SerialTransport:
    """A serial line, 8N1 at ``baudrate`` (38400 for the OCS console).

    ``address`` is anything :func:`serial.serial_for_url` takes: ``/dev/ttyUSB0``,
    ``/dev/pts/7``, ``socket://host:port``, ``rfc2217://host:port``.
    """

    def __init__(self, address: str, *, baudrate: int = 38400, timeout_seconds: float = 5.0):
        self._address = address
        self.baudrate = baudrate
        self.timeout_seconds = timeout_seconds
        self._port: serial.SerialBase | None = None
        self._pending = bytearray()

    @property
    def address(self) -> str:
        return self._address

    def open(self) -> None:
        if self._port is not None:
            return
        try:
            settings = {"baudrate": self.baudrate, "bytesize": serial.EIGHTBITS,
                        "parity": serial.PARITY_NONE, "stopbits": serial.STOPBITS_ONE,
                        "timeout": self.timeout_seconds,
                        "write_timeout": self.timeout_seconds}
            port: serial.SerialBase
            if self._address.startswith("socket://"):
                port = _SocketPort(self._address, **settings)
            else:
                port = serial.serial_for_url(self._address, **settings)
        except (serial.SerialException, OSError, ValueError) as error:
            raise DeviceUnreachable(f"cannot open serial port {self._address}: {error}") from None
        self._port = port
        self.discard_input()

    def close(self) -> None:
        self._pending.clear()
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    def _require(self) -> serial.SerialBase:
        if self._port is None:
            self.open()
        assert self._port is not None
        return self._port

    def write(self, data: bytes) -> None:
        port = self._require()
        try:
            port.write(data)
            port.flush()
        except serial.SerialTimeoutException:
            self.close()
            raise DeviceTimeout(f"write to {self._address} timed out") from None
        except (serial.SerialException, OSError) as error:
            self.close()
            raise DeviceUnreachable(f"serial link {self._address} lost: {error}") from None

    def read_until(self, terminator: bytes) -> bytes:
        port = self._require()
        deadline = time.monotonic() + self.timeout_seconds
        while terminator not in self._pending:
            if time.monotonic() >= deadline:
                raise self._timed_out()
            try:
                # Block for the first byte (up to the port timeout), then take
                # everything already buffered: pyserial's read_until reads one
                # byte per call, which costs milliseconds on long replies.
                chunk = bytes(port.read(max(1, port.in_waiting)))
            except (serial.SerialException, OSError) as error:
                self.close()
                raise DeviceUnreachable(f"serial link {self._address} lost: {error}") from None
            if not chunk:
                raise self._timed_out()
            self._pending.extend(chunk)
        end = self._pending.index(terminator) + len(terminator)
        line = bytes(self._pending[:end])
        del self._pending[:end]
        return line

    def read_exactly(self, count: int) -> bytes:
        """Exactly ``count`` bytes, terminator bytes among them or not (binary block data)."""
        port = self._require()
        deadline = time.monotonic() + self.timeout_seconds
        while len(self._pending) < count:
            if time.monotonic() >= deadline:
                raise self._timed_out()
            try:
                chunk = bytes(port.read(max(1, min(count - len(self._pending),
                                                   port.in_waiting or 1))))
            except (serial.SerialException, OSError) as error:
                self.close()
                raise DeviceUnreachable(f"serial link {self._address} lost: {error}") from None
            if not chunk:
                raise self._timed_out()
            self._pending.extend(chunk)
        data = bytes(self._pending[:count])
        del self._pending[:count]
        return data

    def _timed_out(self) -> DeviceTimeout:
        partial, self._pending = bytes(self._pending), bytearray()
        return DeviceTimeout(
            f"no reply from {self._address} within {self.timeout_seconds:g} s",
            detail=f"partial reply {partial!r}" if partial else None,
        )

    def discard_input(self) -> None:
        self._pending.clear()
        if self._port is None:
            return
        try:
            self._port.reset_input_buffer()
        except (serial.SerialException, OSError):
            pass
