"""Many emulated CPO/CPC SNMP agents in one process, for benchmarks: each a
:class:`SwitchTelemetry` served by its :class:`CpoAgent` on UDP loopback (SNMPv3 USM,
SHA-256 and AES-128), controlled over two multiprocessing pipes
(:mod:`emulators.fleetprocess`).

Run :func:`serve_fleet` as the target of a process of its own: ``count`` agents numbered
from ``first`` (several processes serve one fleet). It sends on ``ready`` one
``(index, port)`` per agent once all listen, then answers ``"cpu"`` on ``stop``
with the process's CPU seconds so far, and stops every agent on anything else. Each
agent has ``ports`` ports (``EthernetN``) of ``lanes`` optical and electrical lanes (8
by default), in the shape :func:`telemetry_spec` gives (emulators/switch/fleet.py's
gNMI switches with telemetry have the same); ``entity_layout`` (one of
:data:`emulators.cpo.entity.LAYOUT_NAMES`) also serves their optics as ENTITY-MIB and
ENTITY-SENSOR-MIB rows numbered as that agent numbers them.
"""

from __future__ import annotations

import asyncio
from multiprocessing.connection import Connection

from emulators.clock import RealClock
from emulators.cpo.agent import CpoAgent, UsmCredentials
from emulators.cpo.interfaces import Interface
from emulators.cpo.model import SwitchTelemetry, TelemetrySpec
from emulators.fleetprocess import answer_until_stopped

LANES_PER_PORT = 8
PORT_SPEED_BPS = 1.6e12  # 8 electrical lanes of 200G


def telemetry_spec(ports: int, lanes: int = LANES_PER_PORT) -> TelemetrySpec:
    """A fleet switch's CPO/CPC shape: ``ports`` ports of ``lanes`` optical and electrical
    lanes, 16 lanes an engine, one laser per port's lanes, 4 lasers an ELS module."""
    return TelemetrySpec(ports=tuple(range(1, ports + 1)), optical_lanes_per_port=lanes,
                         electrical_lanes_per_port=lanes, lanes_per_engine=16,
                         lanes_per_laser=lanes, lasers_per_els_module=4)


def serve_fleet(count: int, ports: int, user: str, auth_key: str, priv_key: str,
                ready: Connection, stop: Connection, *, first: int = 0,
                lanes: int = LANES_PER_PORT, entity_layout: str | None = None) -> None:
    async def main() -> None:
        clock = RealClock()
        spec = telemetry_spec(ports, lanes)
        speed = PORT_SPEED_BPS * lanes / LANES_PER_PORT  # 200G a lane
        agents = []
        for index in range(first, first + count):  # names (and engine IDs) fleet-wide
            telemetry = SwitchTelemetry(f"cpo-{index:04d}", clock, spec, seed=index)
            agent = CpoAgent(telemetry, UsmCredentials(user, auth_key, priv_key),
                             interfaces=[Interface(port, f"Ethernet{port}", speed)
                                         for port in spec.ports],
                             entity_layout=entity_layout)
            await agent.start()
            agents.append(agent)
        ready.send([(first + index, agent.port) for index, agent in enumerate(agents)])
        await answer_until_stopped(stop)
        for agent in agents:
            await agent.stop()

    asyncio.run(main())
