"""When a client's bytes reached the emulated unit: the kernel's receive time.

The lab serves several units from one event loop, one command at a time. A real unit
has a processor of its own and starts on a command once its bytes are in; an emulated
one whose loop is busy with another unit's command reads them a few milliseconds later.
So that the late read is not taken for the unit's own latency, an SCPI connection asks
the kernel to stamp every segment it receives (``SO_TIMESTAMPNS``, Linux) and the
server takes the stamp of the newest segment read as the moment the command arrived
(:data:`emulators.clock.COMMAND_READY_AT`).

asyncio reads a connection with ``sock.recv()`` and hands the bytes to the protocol at
once, in the loop's thread: :class:`StampingSocket` reads them with ``recvmsg`` instead
and leaves the stamp where :func:`take_arrival` finds it. Where the kernel does not
stamp (another system, an option refused), nothing is left and the server falls back
to the time the loop read the bytes.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time

_SO_TIMESTAMPNS = 35
"""``SO_TIMESTAMPNS`` (and its control message type, ``SCM_TIMESTAMPNS``) in Linux's
generic socket options; Python does not export it. Its payload is a ``struct timespec``
of the realtime clock: two native longs, seconds and nanoseconds."""
_TIMESPEC = struct.Struct("@ll")
_STAMPS = sys.platform == "linux" and _TIMESPEC.size == 16
"""Stamps are asked for only where that layout is certain (64-bit Linux)."""
_ANCILLARY_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) if _STAMPS else 0

_last = threading.local()


def take_arrival() -> float | None:
    """How many seconds ago (real time) the kernel received the newest bytes the last
    ``recv`` of this thread returned, and forget it; ``None`` when there is no stamp."""
    stamp: float | None = getattr(_last, "stamp", None)
    _last.stamp = None
    if stamp is None:
        return None
    return max(0.0, time.time() - stamp)


class StampingSocket(socket.socket):
    """A connected socket whose ``recv`` notes the kernel's receive time of what it read."""

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _ANCILLARY_BYTES, flags)
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS \
                    and len(payload) >= _TIMESPEC.size:
                seconds, nanoseconds = _TIMESPEC.unpack_from(payload)
                _last.stamp = seconds + nanoseconds / 1e9
        return data


class StampingListener(socket.socket):
    """A listening socket whose connections are :class:`StampingSocket` s, stamped."""

    def accept(self) -> tuple[socket.socket, object]:
        descriptor, address = self._accept()  # type: ignore[attr-defined]
        connection = StampingSocket(self.family, self.type, self.proto, fileno=descriptor)
        if _STAMPS:
            try:
                connection.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            except OSError:
                pass  # not stamped: the loop's read time stands
        return connection, address


def listening_socket(host: str, port: int) -> socket.socket:
    """A non-blocking stamping listener on ``host``:``port`` (0: a free port), address
    reuse on, as ``loop.create_server`` would make it."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    listener = StampingListener(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(100)
        listener.setblocking(False)
    except OSError:
        listener.close()
        raise
    return listener
