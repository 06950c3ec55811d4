"""Many emulated amplifiers in one process, for benchmarks: each an
:class:`AmplifierModule` behind its own I2C bridge board on TCP loopback (the bridge's
line protocol, ``socket://`` in an inventory), controlled over two multiprocessing
pipes (:mod:`emulators.fleetprocess`).

Run :func:`serve_fleet` as the target of a process of its own. It sends on ``ready``
one ``(name, port)`` per amplifier once all listen, then answers ``"cpu"`` on ``stop``
with the process's CPU seconds so far, and stops every bridge on anything else.
"""

from __future__ import annotations

import asyncio
from multiprocessing.connection import Connection

from emulators.amp.bridge import I2cBridge
from emulators.amp.i2c import I2cSlave
from emulators.amp.model import AmplifierModule
from emulators.clock import RealClock
from emulators.fleetprocess import answer_until_stopped
from emulators.optics.model import OpticalModel


def serve_fleet(count: int, ready: Connection, stop: Connection, *,
                prefix: str = "amp") -> None:
    async def main() -> None:
        clock = RealClock()
        optics = OpticalModel(clock)
        bridges = []
        for index in range(count):
            module = AmplifierModule(f"{prefix}-{index:04d}", optics,
                                     serial=f"AMP{index:06d}")
            bridge = I2cBridge(module.name, [I2cSlave(module)], clock=clock,
                               faults=module.faults, serial_console=False)
            await bridge.start()
            bridges.append((module.name, bridge))
        ready.send([(name, bridge.port) for name, bridge in bridges])
        await answer_until_stopped(stop)
        for _, bridge in bridges:
            await bridge.stop()

    asyncio.run(main())
