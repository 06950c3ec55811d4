"""A CPO/CPC SNMP agent for tests: the emulator's agent on a stepped clock, served
from its own event loop in a background thread, so what it serves changes only when
a test moves the clock and the client under test runs on a loop of its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from drivers.snmp.session import SnmpTarget
from emulators.clock import SteppedClock
from emulators.cpo.agent import CpoAgent, UsmCredentials
from emulators.cpo.model import SwitchTelemetry, TelemetryReading, TelemetrySpec

T = TypeVar("T")

CREDENTIALS = UsmCredentials("msoctl", "auth-passphrase-1", "priv-passphrase-1")
SPEC = TelemetrySpec(ports=(1, 2, 5, 6), optical_lanes_per_port=8, electrical_lanes_per_port=4,
                     lanes_per_engine=16, lanes_per_laser=4, lasers_per_els_module=4)
TINY = TelemetrySpec(ports=(1, 2), optical_lanes_per_port=2, electrical_lanes_per_port=2,
                     lanes_per_engine=4, lanes_per_laser=2, lasers_per_els_module=2)


class AgentUnderTest:
    """One agent named ``sw-t`` with ports named EthernetN; close() when done."""

    def __init__(self, spec: TelemetrySpec = SPEC, credentials: UsmCredentials = CREDENTIALS,
                 *, community: str | None = None, refresh_seconds: float = 1.0,
                 seed: int = 7):
        self.clock = SteppedClock()
        self.telemetry = SwitchTelemetry("sw-t", self.clock, spec, seed=seed)
        self.agent = CpoAgent(self.telemetry, credentials, community=community,
                              refresh_seconds=refresh_seconds,
                              port_names={port: f"Ethernet{port}" for port in spec.ports})
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.on_agent_loop(self.agent.start())

    def on_agent_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def close(self) -> None:
        self.on_agent_loop(self.agent.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def step(self, seconds: float) -> None:
        """Move the agent's clock."""
        self.clock.advance(seconds)

    def step_and_read(self, seconds: float) -> TelemetryReading:
        """Move the clock; the reading the agent will serve at the next request."""
        self.step(seconds)
        self.agent.snapshot()
        return self.telemetry.read()

    def target(self, **changes: Any) -> SnmpTarget:
        """The collector's target for this agent (SNMPv3 authPriv), with ``changes``."""
        fields: dict[str, Any] = {
            "name": "sw-t", "host": "127.0.0.1", "port": self.agent.port,
            "user": CREDENTIALS.user, "auth_key": CREDENTIALS.auth_key,
            "priv_key": CREDENTIALS.priv_key, "timeout_seconds": 1.0, "retries": 1}
        fields.update(changes)
        return SnmpTarget(**fields)
