"""Many emulated switches in one process, for benchmarks: each a :class:`SwitchDevice`
with its server on loopback, controlled over two multiprocessing pipes.

Run :func:`serve_fleet` as the target of a process of its own. Every switch of a fleet
has one face (``face``, ``augments`` and ``commit_confirmed`` as
:class:`SwitchDevice` takes them): ``"msoctl"`` serves NETCONF over SSH, ``"openconfig"``
and ``"sonic"`` serve gNMI in plaintext. It sends on ``ready`` one
``(name, port, known_hosts_line)`` per switch once all listen (the line is None for a
gNMI switch, which has no host key), then answers ``"cpu"`` on ``stop`` with the
process's CPU seconds so far, and stops every switch on anything else.
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
                stop: Connection, *, ports: int = 8, user: str = "msoctl",
                face: str = "msoctl", augments: str = "msoctl",
                commit_confirmed: bool = True, prefix: str = "sw") -> None:
    """Serve ``count`` switches named ``PREFIX-000`` on, each with ``ports`` 400G ports
    on 30 km of cable, the one user ``user``, and every reply ``latency_seconds`` late
    (0: none)."""
    async def main() -> None:
        clock = RealClock()
        physical = {f"Ethernet{i}": PhysicalPort("400G", 30_010.0) for i in range(1, ports + 1)}
        devices = [SwitchDevice(f"{prefix}-{i:03d}", physical, clock=clock,
                                users={user: password}, face=face, augments=augments,
                                commit_confirmed=commit_confirmed)
                   for i in range(count)]
        for device in devices:
            await device.start()
            if latency_seconds:
                device.faults.inject(Fault("latency", seconds=latency_seconds))
        ready.send([(d.name, d.port, d.known_hosts_line() if d.datastores is not None
                     else None) for d in devices])
        await answer_until_stopped(stop)
        for device in devices:
            await device.stop()

    asyncio.run(main())
