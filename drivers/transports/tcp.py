"""A raw TCP byte stream: the transport of the OCS's alarm connection.

The SCPI connections go through VISA or pyserial (drivers/transports/visa.py,
serial.py); the alarm connection is read by a thread of its own that must be woken
at once when it is closed, which a plain socket does (``shutdown`` ends a blocked
``recv``) and those layers do not promise.
"""

from __future__ import annotations

import socket
import threading

from drivers.errors import DeviceTimeout, DeviceUnreachable

_CHUNK_BYTES = 4096


class TcpTransport:
    """``host``:``port`` over TCP; one timeout for connecting and for each read.

    Raises :class:`DeviceUnreachable` when the connection cannot be made or is lost
    (closed by the peer included) and :class:`DeviceTimeout` when ``timeout_seconds``
    pass without the wanted bytes. :meth:`close` may be called from another thread;
    a read blocked in this one then ends with :class:`DeviceUnreachable`.
    """

    def __init__(self, host: str, port: int, *, timeout_seconds: float = 5.0):
        self.host = host
        self.port = port
        self.timeout_seconds = timeout_seconds
        self._socket: socket.socket | None = None
        self._pending = bytearray()
        self._lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def open(self) -> None:
        if self._socket is not None:
            return
        try:
            sock = socket.create_connection((self.host, self.port),
                                            timeout=self.timeout_seconds)
        except TimeoutError:
            raise DeviceTimeout(f"no connection to {self.address} within "
                                f"{self.timeout_seconds:g} s") from None
        except OSError as error:
            raise DeviceUnreachable(f"cannot connect to {self.address}: "
                                    f"{error.strerror or error}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._socket = sock
        self._pending.clear()

    def close(self) -> None:
        with self._lock:
            sock, self._socket = self._socket, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes a recv blocked in another thread
        except OSError:
            pass
        sock.close()

    def _require(self) -> socket.socket:
        with self._lock:
            sock = self._socket
        if sock is None:
            raise DeviceUnreachable(f"{self.address}: not connected")
        return sock

    def write(self, data: bytes) -> None:
        try:
            self._require().sendall(data)
        except TimeoutError:
            raise DeviceTimeout(f"write to {self.address} timed out") from None
        except OSError as error:
            raise DeviceUnreachable(f"{self.address} lost: {error.strerror or error}") from None

    def read_until(self, terminator: bytes) -> bytes:
        sock = self._require()
        while terminator not in self._pending:
            try:
                chunk = sock.recv(_CHUNK_BYTES)
            except TimeoutError:
                raise DeviceTimeout(f"nothing from {self.address} within "
                                    f"{self.timeout_seconds:g} s") from None
            except OSError as error:
                raise DeviceUnreachable(f"{self.address} lost: "
                                        f"{error.strerror or error}") from None
            if not chunk:
                raise DeviceUnreachable(f"{self.address} closed the connection")
            self._pending.extend(chunk)
        end = self._pending.index(terminator) + len(terminator)
        line = bytes(self._pending[:end])
        del self._pending[:end]
        return line

    def has_line(self, terminator: bytes) -> bool:
        """Whether a whole line is buffered already: :meth:`read_until` would not wait."""
        return terminator in self._pending

    def discard_input(self) -> None:
        self._pending.clear()
