"""VISA transport over pyvisa with the pure-Python pyvisa-py backend.

Resource strings: ``TCPIP::host::5025::SOCKET`` (raw SCPI socket),
``ASRL/dev/ttyUSB0::INSTR`` (serial), ``TCPIP::host::INSTR`` (VXI-11).
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
from typing import Any

from drivers.errors import DeviceError, DeviceTimeout, DeviceUnreachable

# pyvisa imports numpy when it is installed, for callers that ask for a binary block
# as an array; these drivers never do, and numpy's import (a quarter of a second of
# CPU) was half of what starting an OCS command cost. numpy is in the venv for
# `design cost`'s plots, so pyvisa is imported as on a machine without it (pyvisa
# supports that: it then builds lists), unless this process has numpy loaded already.
# numpy stays importable afterwards.
_HIDE_NUMPY = "numpy" not in sys.modules
if _HIDE_NUMPY:
    sys.modules["numpy"] = None  # type: ignore[assignment]  # `import numpy` fails
try:
    import pyvisa
    from pyvisa import constants
    from pyvisa.errors import VisaIOError
finally:
    if _HIDE_NUMPY:
        del sys.modules["numpy"]

_CLOSED_BY_PEER = frozenset({errno.EPIPE, errno.ECONNRESET, errno.ECONNABORTED,
                             errno.ECONNREFUSED})

_manager: pyvisa.ResourceManager | None = None
_manager_lock = threading.Lock()


def resource_manager() -> pyvisa.ResourceManager:
    """One pyvisa-py resource manager per process (creating one is not free)."""
    global _manager
    with _manager_lock:
        if _manager is None:
            _manager = pyvisa.ResourceManager("@py")
        return _manager


def _no_delay(resource: Any) -> None:
    """Send small writes at once on a raw SCPI socket (TCP_NODELAY): a command without a
    reply (``*CLS``) followed by a query is otherwise held back by Nagle's algorithm
    until the first is acknowledged, and the peer delays that acknowledgement (40 ms
    on Linux) once a connection is past its first exchanges: 48 ms instead of 3 ms for
    an OCS reading on a connection kept open. pyvisa-py has no attribute for it; its
    session's ``interface`` is the socket (nothing is done if that ever changes)."""
    try:
        sock = resource.visalib.sessions[resource.session].interface
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, KeyError, TypeError, OSError):
        pass


class VisaTransport:
    def __init__(self, address: str, *, baudrate: int = 38400, timeout_seconds: float = 5.0):
        self._address = address
        self.baudrate = baudrate
        self._timeout_seconds = timeout_seconds
        self._resource: Any = None
        self._termination: bytes | None = None

    @property
    def address(self) -> str:
        return self._address

    @property
    def timeout_seconds(self) -> float:
        """How long each read or write waits, in seconds."""
        return self._timeout_seconds

    @timeout_seconds.setter
    def timeout_seconds(self, seconds: float) -> None:
        # an open resource takes it too: a connection held across probes (the
        # exporter's) is given each probe's own budget
        self._timeout_seconds = seconds
        if self._resource is not None:
            self._resource.timeout = int(seconds * 1000)

    @property
    def is_open(self) -> bool:
        return self._resource is not None

    def open(self) -> None:
        if self._resource is not None:
            return
        try:
            resource: Any = resource_manager().open_resource(
                self._address, open_timeout=int(self.timeout_seconds * 1000)
            )
            resource.timeout = int(self.timeout_seconds * 1000)
            if self._address.upper().startswith("ASRL"):
                resource.baud_rate = self.baudrate
                resource.data_bits = 8
                resource.parity = constants.Parity.none
                resource.stop_bits = constants.StopBits.one
        except VisaIOError as error:
            raise DeviceUnreachable(f"cannot open {self._address}: {error.description}") from None
        except (OSError, ValueError) as error:
            raise DeviceUnreachable(f"cannot open {self._address}: {error}") from None
        except Exception as error:
            # pyvisa-py's TCPIP sessions raise a bare Exception("could not connect: ...")
            # when the connection cannot be made at all (a host name DNS does not know):
            # the device is unreachable, not an internal error.
            if not str(error).startswith("could not connect"):
                raise
            raise DeviceUnreachable(f"cannot open {self._address}: "
                                    f"{str(error).removeprefix('could not connect: ')}"
                                    ) from None
        self._resource = resource
        self._termination = None
        if self._address.upper().endswith("::SOCKET"):
            _no_delay(resource)
        if self._address.upper().startswith("ASRL"):
            # A serial line may hold what the device said before we came (a boot banner).
            # A new TCP connection holds nothing, and pyvisa-py's flush of one waits out
            # a 0.1 s read first: a tenth of a second on every connect for nothing.
            self.discard_input()

    def close(self) -> None:
        resource, self._resource = self._resource, None
        if resource is not None:
            try:
                resource.close()
            except (VisaIOError, OSError):
                pass

    def _require(self) -> Any:
        if self._resource is None:
            self.open()
        return self._resource

    def _fail(self, error: Exception, doing: str) -> DeviceError:
        code = getattr(error, "error_code", None)
        if code == constants.StatusCode.error_timeout:
            return DeviceTimeout(f"no reply from {self._address} within {self.timeout_seconds:g} s")
        self.close()
        if isinstance(error, OSError) and error.errno in _CLOSED_BY_PEER:
            # pyvisa-py connects lazily: a refused connection shows up at the first write.
            return DeviceUnreachable(
                f"{doing} {self._address} failed: connection refused or closed by the device",
                detail=str(error))
        reason = getattr(error, "description", None) or str(error) or type(error).__name__
        return DeviceUnreachable(f"{doing} {self._address} failed: {reason}")

    def write(self, data: bytes) -> None:
        resource = self._require()
        try:
            resource.write_raw(data)
        except (VisaIOError, OSError) as error:
            raise self._fail(error, "write to") from None

    def read_until(self, terminator: bytes) -> bytes:
        resource = self._require()
        if terminator != self._termination:
            resource.read_termination = terminator.decode("ascii")
            self._termination = terminator
        try:
            data = bytes(resource.read_raw())
        except (VisaIOError, OSError) as error:
            raise self._fail(error, "read from") from None
        if not data.endswith(terminator):
            raise DeviceUnreachable(f"connection to {self._address} closed mid-reply",
                                    detail=f"partial reply {data!r}")
        return data

    def read_exactly(self, count: int) -> bytes:
        """Exactly ``count`` bytes, terminator bytes among them or not (binary block data)."""
        resource = self._require()
        resource.read_termination = None  # reads on through LF bytes in the data
        self._termination = None
        try:
            data = bytes(resource.read_bytes(count, break_on_termchar=False))
        except (VisaIOError, OSError) as error:
            raise self._fail(error, "read from") from None
        if len(data) != count:
            raise DeviceUnreachable(f"connection to {self._address} closed mid-reply",
                                    detail=f"{len(data)} of {count} bytes")
        return data

    def discard_input(self) -> None:
        resource = self._resource
        if resource is None:
            return
        try:
            resource.flush(constants.BufferOperation.discard_read_buffer)
        except (VisaIOError, OSError, NotImplementedError, ValueError):
            pass
