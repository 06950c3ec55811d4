"""Many emulated OCSes in one process, for benchmarks: each an :class:`OcsDevice` with
its SCPI server on loopback TCP, controlled over two multiprocessing pipes.

Run :func:`serve_fleet` as the target of a process of its own. It sends on ``ready``
one ``(name, port)`` per OCS once all listen, then answers ``"cpu"`` on ``stop`` with
the process's CPU seconds so far, and stops every server on anything else.
"""

from __future__ import annotations

import asyncio
import functools
from multiprocessing.connection import Connection

from emulators.clock import RealClock
from emulators.fleetprocess import answer_until_stopped
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.server import ScpiTcpServer


def serve_fleet(count: int, ready: Connection, stop: Connection, *, size: int = 64,
                prefix: str = "ocs") -> None:
    async def main() -> None:
        optics = OpticalModel(RealClock())
        servers = []
        for index in range(count):
            device = OcsDevice(f"{prefix}-{index:03d}", optics, size=size, boot_seconds=0.0)
            server = ScpiTcpServer(device, functools.partial(make_interpreter, device))
            await server.start()
            servers.append(server)
        ready.send([(server.device.name, server.port) for server in servers])
        await answer_until_stopped(stop)
        for server in servers:
            await server.stop()

    asyncio.run(main())
