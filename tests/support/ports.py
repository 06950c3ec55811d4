"""A TCP port for a server that a test starts by its own means (PostgreSQL, netconfd,
Prometheus) and must name before the server listens.

A port the kernel hands a socket bound to port 0 comes from its ephemeral range, the
same range every client connection's own port is taken from; a server that binds it
a second later (PostgreSQL after its initdb) can find a connection of another test
holding it ("Address already in use", seen once in a full run). The ports given here
lie below that range, where the kernel never picks one by itself.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
SPAN = 12_000  # how far below the ephemeral range the ports are drawn from
_draw = random.SystemRandom()  # workers started at once must not draw alike


def free_port() -> int:
    """A port on 127.0.0.1 that nothing is bound to now, below the ephemeral range
    (or, where that range leaves no room below it, one the kernel picks)."""
    low = _ephemeral_low()
    if low - SPAN >= 1024:
        for _ in range(100):
            port = _draw.randrange(low - SPAN, low)
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
