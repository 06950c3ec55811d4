"""A CPO/CPC SNMP agent for tests, and the clients that read it.

:class:`AgentUnderTest` is the emulator's agent on a stepped clock, served from its
own event loop in a background thread, so what it serves changes only when a test
moves the clock and the client under test runs on a loop of its own. :class:`Client`
is a small pysnmp 7 manager (one SnmpEngine, inside one event loop); :func:`net_snmp`
runs Debian's net-snmp tools against the agent with the project's MIBs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pysnmp.hlapi.v3arch.asyncio import (
    CommunityData,
    ContextData,
    ObjectIdentity,
    ObjectType,
    UdpTransportTarget,
    UsmUserData,
    bulk_cmd,
    get_cmd,
    set_cmd,
    usmAesCfb128Protocol,
    usmHMAC192SHA256AuthProtocol,
)
from pysnmp.proto import errind, rfc1905
from pysnmp.proto.rfc1902 import Null
from pysnmp.smi.builder import MibBuilder
from pysnmp.smi.view import MibViewController

from drivers.snmp import mibs
from drivers.snmp.mibs import Oid
from drivers.snmp.mibsource import new_engine
from drivers.snmp.session import SnmpTarget
from emulators.clock import SteppedClock
from emulators.cpo.agent import CpoAgent, UsmCredentials
from emulators.cpo.interfaces import Interface
from emulators.cpo.model import SwitchTelemetry, TelemetryReading, TelemetrySpec
from tests.support.peers import require_executable

T = TypeVar("T")

CREDENTIALS = UsmCredentials("msoctl", "auth-passphrase-1", "priv-passphrase-1")
SPEC = TelemetrySpec(ports=(1, 2, 5, 6), optical_lanes_per_port=8, electrical_lanes_per_port=4,
                     lanes_per_engine=16, lanes_per_laser=4, lasers_per_els_module=4)
TINY = TelemetrySpec(ports=(1, 2), optical_lanes_per_port=2, electrical_lanes_per_port=2,
                     lanes_per_engine=4, lanes_per_laser=2, lasers_per_els_module=2)
PORT_SPEED_BPS_PER_LANE = 200e9  # a 224G electrical lane carries 200G Ethernet
MIBS_DIR = mibs.source_directory()


def interfaces(spec: TelemetrySpec) -> list[Interface]:
    """``EthernetN`` for each port, at 200 Gb/s per electrical lane."""
    return [Interface(port, f"Ethernet{port}", PORT_SPEED_BPS_PER_LANE
                      * spec.electrical_lanes_per_port) for port in spec.ports]


class AgentUnderTest:
    """One agent named ``sw-t`` with ports named EthernetN (or ``ports``); close() when
    done. ``nvram_path`` keeps its snmpEngineBoots, as for a real engine."""

    def __init__(self, spec: TelemetrySpec = SPEC, credentials: UsmCredentials = CREDENTIALS,
                 *, community: str | None = None, refresh_seconds: float = 1.0,
                 seed: int = 7, nvram_path: Path | None = None,
                 ports: Sequence[Interface] | None = None, entity_layout: str | None = None,
                 dom_mib: str | None = None):
        self.clock = SteppedClock()
        self.telemetry = SwitchTelemetry("sw-t", self.clock, spec, seed=seed)
        self.agent = CpoAgent(self.telemetry, credentials, community=community,
                              refresh_seconds=refresh_seconds,
                              interfaces=interfaces(spec) if ports is None else ports,
                              nvram_path=nvram_path, entity_layout=entity_layout,
                              dom_mib=dom_mib, seed=seed)
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


# --- a small pysnmp client -------------------------------------------------------------


def v3(*, auth_key: str = CREDENTIALS.auth_key,
       priv_key: str = CREDENTIALS.priv_key) -> UsmUserData:
    return UsmUserData(CREDENTIALS.user, authKey=auth_key, privKey=priv_key,
                       authProtocol=usmHMAC192SHA256AuthProtocol,
                       privProtocol=usmAesCfb128Protocol)


class Client:
    """pysnmp 7 calls against one agent, with one SnmpEngine (use inside one event loop)."""

    def __init__(self, harness: AgentUnderTest, auth: UsmUserData | CommunityData | None = None,
                 *, timeout: float = 2.0, retries: int = 0, max_message_size: int = 65507):
        self.harness = harness
        self.auth = auth or v3()
        self.timeout = timeout
        self.retries = retries
        self.engine = new_engine(max_message_size=max_message_size)
        # pysnmp resolves every OID it sends through a MIB view, and sets up pysmi's
        # compiler in each new one (about 0.3 s): share one view between the clients.
        self.engine.cache["mibViewController"] = _shared_view()

    async def target(self) -> UdpTransportTarget:
        return await UdpTransportTarget.create(("127.0.0.1", self.harness.agent.port),
                                               timeout=self.timeout, retries=self.retries)

    async def get(self, *oids: Oid) -> tuple[Any, list[tuple[Oid, Any]]]:
        error, status, _, var_binds = await get_cmd(
            self.engine, self.auth, await self.target(), ContextData(),
            *(ObjectType(ObjectIdentity(oid)) for oid in oids), lookupMib=False)
        assert not status, status
        return error, [(tuple(name), value) for name, value in var_binds]

    async def set(self, *pairs: tuple[Oid, Any]) -> tuple[Any, int, int, list[tuple[Oid, Any]]]:
        """SET ``pairs``: (error indication, error-status, error-index, variables)."""
        error, status, index, var_binds = await set_cmd(
            self.engine, self.auth, await self.target(), ContextData(),
            *(ObjectType(ObjectIdentity(oid), value) for oid, value in pairs), lookupMib=False)
        return error, int(status), int(index), [(tuple(name), value) for name, value in var_binds]

    async def bulk(self, repetitions: int, *oids: Oid,
                   non_repeaters: int = 0) -> list[tuple[Oid, Any]]:
        error, status, _, var_binds = await bulk_cmd(
            self.engine, self.auth, await self.target(), ContextData(), non_repeaters,
            repetitions, *(ObjectType(ObjectIdentity(oid), Null()) for oid in oids),
            lookupMib=False)
        assert error is None and not status, (error, status)
        return [(tuple(name), value) for name, value in var_binds]

    async def walk(self, root: Oid, repetitions: int = 50) -> list[tuple[Oid, Any]]:
        """GETBULK from ``root`` until past its subtree; any error fails the test."""
        found: list[tuple[Oid, Any]] = []
        cursor = root
        while True:
            answers = await self.bulk(repetitions, cursor)
            for name, value in answers:
                if name[:len(root)] != root or value is rfc1905.endOfMibView \
                        or isinstance(value, rfc1905.EndOfMibView):
                    return found
                found.append((name, value))
            cursor = answers[-1][0]


def timed_out(error: Any) -> bool:
    return isinstance(error, errind.RequestTimedOut)


_VIEW: list[MibViewController] = []


def _shared_view() -> MibViewController:
    if not _VIEW:
        _VIEW.append(MibViewController(MibBuilder()))
    return _VIEW[0]


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


async def get_one(harness: AgentUnderTest, oid: Oid, **kwargs: Any) -> Any:
    error, var_binds = await Client(harness, **kwargs).get(oid)
    assert error is None, error
    return var_binds[0][1]


def scalar(module: str, name: str) -> Oid:
    """The instance OID of scalar ``module::name`` (its OID and .0)."""
    return (*mibs.oid(module, name), 0)


# --- net-snmp ----------------------------------------------------------------------------


def net_snmp(program: str, *arguments: str, timeout: float = 60
             ) -> subprocess.CompletedProcess[str]:
    """Run net-snmp's ``program`` without the caller's MIB settings."""
    executable = require_executable(program, debian_package="snmp")
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MIBS", "MIBDIRS", "SNMPCONFPATH")}
    return subprocess.run([str(executable), *arguments], capture_output=True, text=True,
                          timeout=timeout, env=environment, check=False)


def v3_arguments(*, auth_key: str = CREDENTIALS.auth_key) -> list[str]:
    """SNMPv3 authPriv (SHA-256, AES-128) with the project's MIBs on the path."""
    return ["-v3", "-l", "authPriv", "-u", CREDENTIALS.user, "-a", "SHA-256", "-A", auth_key,
            "-x", "AES", "-X", CREDENTIALS.priv_key, "-M", f"+{MIBS_DIR}", "-m", "ALL"]


def our_stderr(completed: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr without the noise of Debian's own MIBs (which import modules Debian lacks)."""
    return [line for line in completed.stderr.splitlines()
            if "/usr/share/snmp/mibs/" not in line]
