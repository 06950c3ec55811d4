"""Many emulated switches in one process, for benchmarks: each a :class:`SwitchDevice`
with its server on loopback, controlled over two multiprocessing pipes.

Run :func:`serve_fleet` as the target of a process of its own. Every switch of a fleet
has one face (``face``, ``augments`` and ``commit_confirmed`` as
:class:`SwitchDevice` takes them): ``"msoctl"`` serves NETCONF over SSH, ``"openconfig"``
and ``"sonic"`` serve gNMI in plaintext. It sends on ``ready`` one
``(name, port, known_hosts_line)`` per switch once all listen (the line is None for a
gNMI switch, which has no host key), then answers ``"cpu"`` on ``stop`` with the
process's CPU seconds so far, and stops every switch on anything else.

With ``telemetry`` every switch has a CPO/CPC model (a :class:`SwitchTelemetry` of
``ports`` ports of ``lanes`` lanes, seeded by its number, in the shape of
emulators/cpo/fleet.py's SNMP agents), served by its gNMI face (OpenConfig's
platform-transceiver and if-ethernet paths, SONiC's STATE_DB and COUNTERS_DB), as the
lab's sw-c and sw-d. Switches are numbered from ``first`` (several processes serve one
fleet under one prefix). ``on_change_poll_seconds`` sets how often this process's gNMI
servers look for changes of ON_CHANGE subscriptions (None: the emulator's
:data:`emulators.gnmi.subscribe.ON_CHANGE_POLL_SECONDS`): each look builds the switch's
operational tree, where a real switch is told of a change.
"""

from __future__ import annotations

import asyncio
from multiprocessing.connection import Connection

from emulators.clock import RealClock
from emulators.cpo.fleet import LANES_PER_PORT, telemetry_spec
from emulators.cpo.model import SwitchTelemetry
from emulators.faults import Fault
from emulators.fleetprocess import answer_until_stopped
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort


def serve_fleet(count: int, latency_seconds: float, password: str, ready: Connection,
                stop: Connection, *, ports: int = 8, user: str = "msoctl",
                face: str = "msoctl", augments: str = "msoctl",
                commit_confirmed: bool = True, prefix: str = "sw", telemetry: bool = False,
                lanes: int = LANES_PER_PORT, first: int = 0,
                on_change_poll_seconds: float | None = None) -> None:
    """Serve ``count`` switches named ``PREFIX-000`` on (from ``first``), each with
    ``ports`` 400G ports on 30 km of cable, the one user ``user``, every reply
    ``latency_seconds`` late (0: none), and with ``telemetry`` their optics (module
    docstring)."""
    if on_change_poll_seconds is not None:
        if not on_change_poll_seconds > 0:
            raise ValueError("on_change_poll_seconds must be positive")
        from emulators.gnmi import subscribe
        subscribe.ON_CHANGE_POLL_SECONDS = on_change_poll_seconds  # this process's only

    async def main() -> None:
        clock = RealClock()
        physical = {f"Ethernet{i}": PhysicalPort("400G", 30_010.0) for i in range(1, ports + 1)}
        spec = telemetry_spec(ports, lanes) if telemetry else None
        devices = [SwitchDevice(f"{prefix}-{i:03d}", physical, clock=clock,
                                users={user: password}, face=face, augments=augments,
                                commit_confirmed=commit_confirmed,
                                telemetry=None if spec is None else SwitchTelemetry(
                                    f"{prefix}-{i:03d}", clock, spec, seed=i))
                   for i in range(first, first + count)]
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
