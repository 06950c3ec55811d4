"""Many emulated switches in one process, for benchmarks: each a :class:`SwitchDevice`
with its NETCONF server on loopback, controlled over two multiprocessing pipes.

Run :func:`serve_fleet` as the target of a (spawned) process. It sends on
``ready`` one ``(name, port, known_hosts_line)`` per switch once all listen,
then answers ``"cpu"`` on ``stop`` with the process's CPU seconds so far, and
stops every switch on anything else.
"""

from __future__ import annotations

import asyncio
from multiprocessing.connection import Connection

from emulators.clock import RealClock
from emulators.faults import Fault
from emulators.fleetprocess import answer_until_stopped
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort


def serve_fleet(count: int, latency_seconds: float, password: str, ready: Connection,
                stop: Connection, *, ports: int = 8, user: str = "msoctl") -> None:
    async def main() -> None:
        clock = RealClock()
        physical = {f"Ethernet{i}": PhysicalPort("400G", 30_010.0) for i in range(1, ports + 1)}
        devices = [SwitchDevice(f"sw-{i:03d}", physical, clock=clock, users={user: password})
                   for i in range(count)]
        for device in devices:
            await device.start()
            if latency_seconds:
                device.faults.inject(Fault("latency", seconds=latency_seconds))
        ready.send([(d.name, d.port, d.known_hosts_line()) for d in devices])
        await answer_until_stopped(stop)
        for device in devices:
            await device.stop()

    asyncio.run(main())
