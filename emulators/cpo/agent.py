"""The SNMP agent of a switch's CPO/CPC telemetry: pysnmp 7 on asyncio, SNMPv3 by default.

Security: one USM user with HMAC-SHA-256 authentication (usmHMAC192SHA256AuthProtocol)
and AES-128 privacy (usmAesCfb128Protocol), authPriv required; a v2c community only
when one is given. VACM (RFC 3415) gives both read access to what the agent serves and
nothing else; the v3 user also has a write view over the same subtree, so that its
SETs reach the agent's checks and are refused as RFC 3416 says (notWritable,
noAccess, noCreation: :mod:`.responders`), while the community's write view
includes nothing (noAccess, as a read-only community gets elsewhere). The v3 user may
set what RFC 3418 and RFC 2863 make writable (sysContact, sysName, sysLocation, each
port's ifAlias), each checked as RFC 3416 4.2.5 says; every other SET is refused.

Structure:

- The UDP socket is bound before pysnmp sees it (``port=0``: an ephemeral port,
  and a bind error raised at once by :meth:`CpoAgent.start`).
- The responders of :mod:`.responders` over :class:`~.mibview.MibView`'s sorted OID
  list replace pysnmp's MIB tree.
- Values come from :class:`~.model.SwitchTelemetry`: the agent brings the model
  up to the clock at most once per ``refresh_seconds`` of device time (as a
  device's firmware refreshes its counters about once a second), so that a walk
  reads one consistent snapshot; sysUpTime, snmpEngineBoots and snmpEngineTime
  are computed for every request.
- The SNMP engine's identity is :mod:`.snmpengine`'s: a stable snmpEngineID,
  snmpEngineBoots counted at every start and reboot (kept in ``nvram_path`` when
  given, as a real engine keeps it across restarts), snmpEngineTime on the device
  clock. What USM writes in message headers and what the snmpEngine group serves
  are the same values.

Faults, on the telemetry's :class:`~emulators.faults.FaultInjector`:

| kind    | effect                                                                      |
|---------|-----------------------------------------------------------------------------|
| drop    | requests are dropped unanswered: every one (target None; ``count`` limits   |
|         | them), or a fraction (target ``"0.3"``), drawn from the agent's seeded RNG   |
| latency | each request is answered ``seconds`` (real time) late: a slow agent         |
| freeze  | nothing is answered until cleared                                           |
| reset   | as drop (UDP has no connection to reset)                                    |
| garbage | the response is replaced by random bytes of its length                      |
| truncate| the response is cut to its first half                                       |
| reboot  | the agent restarts: down for ``seconds`` of device time (default 0), then   |
|         | counters from zero, sysUpTime and snmpEngineTime from zero,                  |
|         | snmpEngineBoots + 1                                                         |
| malformed_sensors | with entity tables only: target ``type``, ``orphan`` or both     |
|         | (comma-separated): the first port's temperature sensor typed 99, which no   |
|         | EntitySensorDataType is; its first Rx power sensor's entPhysicalTable row   |
|         | left out (a partial entity table), its sensor row still served              |

plus the model's own (els, rising_ber, engine, overheat, lane_reset, clear_counters;
see :mod:`.model`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902

from drivers.snmp import mibs
from drivers.snmp.mibsource import new_engine
from emulators.cpo import snmpengine, wire
from emulators.cpo.entity import MALFORMATIONS, EntityTables
from emulators.cpo.interfaces import Interface, check_covers, default_interfaces
from emulators.cpo.mibview import (
    TICKS_PER_SECOND,
    EngineState,
    MibView,
    Snapshot,
    Statistics,
    SystemInfo,
    Value,
)
from emulators.cpo.model import SwitchTelemetry
from emulators.cpo.responders import BulkResponder, Instrumentation, SetResponder
from emulators.faults import Fault, FaultError

log = logging.getLogger(__name__)

V2C_SECURITY_NAME = "msoctl-v2c"
MIN_KEY_LENGTH = 8  # RFC 3414 passphrases; net-snmp refuses shorter ones

_WIRE_TYPES: dict[str, Any] = {
    "Integer32": rfc1902.Integer32,
    "Unsigned32": rfc1902.Unsigned32,
    "Gauge32": rfc1902.Gauge32,
    "Counter32": rfc1902.Counter32,
    "Counter64": rfc1902.Counter64,
    "TimeTicks": rfc1902.TimeTicks,
    "OCTET STRING": rfc1902.OctetString,
    "BITS": rfc1902.Bits,
    "OBJECT IDENTIFIER": rfc1902.ObjectIdentifier,
}


@dataclass(frozen=True)
class UsmCredentials:
    """An SNMPv3 user and its two passphrases (at least 8 characters each)."""

    user: str
    auth_key: str
    priv_key: str

    def __post_init__(self) -> None:
        if not self.user:
            raise ValueError("an SNMPv3 user needs a name")
        if len(self.auth_key) < MIN_KEY_LENGTH or len(self.priv_key) < MIN_KEY_LENGTH:
            raise ValueError(f"SNMPv3 passphrases need at least {MIN_KEY_LENGTH} characters")


class CpoAgent:
    """The SNMP agent of one switch's :class:`SwitchTelemetry`, on the running event loop.

    ``entity_layout`` (one of :data:`~.entity.LAYOUT_NAMES`) also serves the ports'
    optics as ENTITY-MIB and ENTITY-SENSOR-MIB rows numbered as that agent numbers
    them (:mod:`.entity`), with that agent's vendor threshold table; ``None``, only the
    project's MIBs. ``dom_mib`` (``hh3c``) serves a vendor's transceiver DOM MIB as well
    (:mod:`.vendor`).

    ``interfaces`` are the ports the CPO/CPC tables index (IF-MIB's rows; by default
    ``portN`` at 200 Gb/s per electrical lane); they must be exactly the telemetry's
    ports (ValueError otherwise). ``engine_id`` defaults to one made from the switch's
    name (:func:`~.snmpengine.engine_id_for`); ``nvram_path`` keeps snmpEngineBoots
    across restarts of the agent (in memory, for this object's life, without it).
    """

    def __init__(
        self,
        telemetry: SwitchTelemetry,
        credentials: UsmCredentials,
        *,
        community: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        refresh_seconds: float = 1.0,
        interfaces: Sequence[Interface] | None = None,
        system: SystemInfo | None = None,
        engine_id: bytes | None = None,
        nvram_path: Path | None = None,
        seed: int = 0,
        entity_layout: str | None = None,
        dom_mib: str | None = None,
    ):
        self.telemetry = telemetry
        self.clock = telemetry.clock
        self.credentials = credentials
        self.community = community
        self.host = host
        self.requested_port = port
        self.refresh_seconds = refresh_seconds
        self.system = system or SystemInfo(
            descr=f"msoctl CPO/CPC telemetry agent emulator, switch {telemetry.name}",
            object_id=mibs.oid("MSO-SMI", "megaScaleOut"), name=telemetry.name)
        spec = telemetry.spec
        if interfaces is None:
            interfaces = default_interfaces(spec.ports, spec.electrical_lanes_per_port)
        check_covers(interfaces, spec.ports)
        # each port's traffic is the load times its ifSpeed
        telemetry.set_port_speeds({interface.index: interface.speed_bps
                                   for interface in interfaces})
        self.engine_id = engine_id or snmpengine.engine_id_for(telemetry.name)
        if not 5 <= len(self.engine_id) <= 32:
            raise ValueError("an snmpEngineID is 5 to 32 octets (RFC 3411)")
        self.nvram = snmpengine.EngineNvram(nvram_path)
        telemetry.update()
        entity = None if entity_layout is None else EntityTables(
            entity_layout, interfaces, telemetry.name,
            lanes_per_port=spec.optical_lanes_per_port, seed=seed)
        self.view = MibView(telemetry.read(), self.system, interfaces, entity=entity,
                            dom_mib=dom_mib)
        self._lock = threading.RLock()
        self._boot_time = self.clock.now()
        self._boots = 0
        self._boots_on_engine = 0
        self._started = False
        self._reset_pending = False
        self._snapshot: Snapshot | None = None
        self._wire: dict[int, Any] = {}
        self._names: dict[int, rfc1902.ObjectName] = {}
        self._encoded: dict[int, bytes] = {}  # the BER of a binding, for this snapshot
        self._encoded_names: dict[int, bytes] = {}
        self._drop_rng = random.Random(f"{seed}:drop")
        self._garbage_rng = random.Random(f"{seed}:garbage")
        self.requests_received = 0
        self.requests_dropped = 0
        self._engine: engine.SnmpEngine | None = None
        self._transport: _FaultyUdpTransport | None = None
        self._socket: socket.socket | None = None
        self.port = 0
        faults = telemetry.faults
        faults.handle("reboot", self._fault_reboot)
        faults.handle("drop", self._check_drop)
        if entity is not None:
            faults.handle("malformed_sensors", self._fault_malformed, self._clear_malformed)

    # ---- life cycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the UDP socket (OSError if it cannot) and start answering.

        The engine counts one more boot (snmpEngineBoots, kept in ``nvram_path``), and
        sysUpTime and snmpEngineTime start from zero. OSError also if the boots
        cannot be written.
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self.host, self.requested_port))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        try:
            with self._lock:
                self._boots = self.nvram.next_boot(self.engine_id)
                if self._started:  # started again after stop(): a new boot
                    self._begin_boot(0.0)
                self._started = True
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self.port = sock.getsockname()[1]
        snmp_engine = new_engine(max_message_size=snmpengine.MAX_MESSAGE_SIZE)
        snmpengine.install(snmp_engine, self.engine_id, self._boots, self.engine_seconds)
        self._boots_on_engine = self._boots
        transport = _FaultyUdpTransport(self, loop=asyncio.get_running_loop())
        transport.open_server_mode(sock=sock)
        config.add_transport(snmp_engine, udp.DOMAIN_NAME, transport)
        config.add_v3_user(snmp_engine, self.credentials.user,
                           config.USM_AUTH_HMAC192_SHA256, self.credentials.auth_key,
                           config.USM_PRIV_CFB128_AES, self.credentials.priv_key)
        served = _common_prefix(self.view.oids)
        config.add_vacm_user(snmp_engine, 3, self.credentials.user, "authPriv", served,
                             served)
        if self.community is not None:
            config.add_v1_system(snmp_engine, V2C_SECURITY_NAME, self.community)
            _read_only_vacm(snmp_engine, V2C_SECURITY_NAME, served)
        snmp_context = context.SnmpContext(snmp_engine)
        snmp_context.context_names[b""] = Instrumentation(self)
        cmdrsp.GetCommandResponder(snmp_engine, snmp_context)
        cmdrsp.NextCommandResponder(snmp_engine, snmp_context)
        BulkResponder(snmp_engine, snmp_context)
        SetResponder(snmp_engine, snmp_context)
        self._engine = snmp_engine
        self._transport = transport
        await transport.ready()
        log.info("%s: SNMP agent on udp://%s:%d (snmpEngineBoots %d)", self.telemetry.name,
                 self.host, self.port, self._boots)

    async def stop(self) -> None:
        if self._engine is not None:
            self._engine.close_dispatcher()
            self._engine = None
        if self._transport is not None:
            self._transport.close_transport()
            self._transport = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        await asyncio.sleep(0)

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def restart(self, down_seconds: float = 0.0) -> None:
        """Restart the agent: down ``down_seconds`` of device time, then everything anew.

        When the agent is back, the FEC counters and sysUpTime start from zero, every
        lane's discontinuity time is 0 again, and the SNMP engine counts one more boot
        (snmpEngineBoots, kept in ``nvram_path``) with its engine time from zero.
        Raises OSError if the boots cannot be kept.
        """
        with self._lock:
            self._boots = self.nvram.next_boot(self.engine_id)
            self._begin_boot(down_seconds)

    def _begin_boot(self, down_seconds: float) -> None:
        self._boot_time = self.clock.now() + down_seconds
        self._reset_pending = True
        self._reset_counters_when_up()
        self._snapshot = None
        self._wire.clear()
        self._encoded.clear()

    @property
    def engine_boots(self) -> int | None:
        """snmpEngineBoots as the SNMP engine counts it (None before :meth:`start`)."""
        if self._engine is None:
            return None
        return self._boots

    def engine_seconds(self) -> int:
        """snmpEngineTime: whole seconds of device time since the last boot."""
        seconds = max(0.0, self.clock.now() - self._boot_time)
        return min(snmpengine.MAX_ENGINE_SECONDS, int(seconds))

    @property
    def is_up(self) -> bool:
        return self.clock.now() >= self._boot_time

    def uptime_ticks(self) -> int:
        return int(max(0.0, self.clock.now() - self._boot_time) * TICKS_PER_SECOND) % 2**32

    # ---- values ----------------------------------------------------------------------

    def _reset_counters_when_up(self) -> None:
        """A restarted agent's counters start from zero when it is back up, not before."""
        if self._reset_pending and self.clock.now() >= self._boot_time:
            self.telemetry.reset_counters(self._boot_time)
            self._reset_pending = False

    def _engine_state(self) -> EngineState:
        snmp_engine = self._engine
        boots = snmpengine.boots_of(snmp_engine) if snmp_engine is not None else self._boots
        size = (snmpengine.max_message_size_of(snmp_engine) if snmp_engine is not None
                else snmpengine.MAX_MESSAGE_SIZE)
        return EngineState(self.engine_id, boots, self.engine_seconds(), size)

    def snapshot(self) -> Snapshot:
        """The snapshot requests read now.

        The model is brought up to the clock when the snapshot is ``refresh_seconds``
        old; a change made to it meanwhile (a fault) shows at once. sysUpTime and the
        snmpEngine group are as the engine has them at this request.
        """
        with self._lock:
            self._reset_counters_when_up()
            now = self.clock.now()
            current = self._snapshot
            if current is None or now - current.reading.at >= self.refresh_seconds:
                self.telemetry.update(now)
            reading = self.telemetry.read()
            if current is None or reading is not current.reading:
                current = Snapshot(self.view, reading, self._boot_time, self._engine_state())
                self._snapshot = current
                self._wire.clear()
                self._encoded.clear()
            current.uptime_ticks = self.uptime_ticks()
            current.engine = self._engine_state()
            if self._engine is not None:
                current.statistics = Statistics(**snmpengine.snmp_counters_of(self._engine))
            return current

    def wire_value(self, position: int, snapshot: Snapshot) -> Any:
        """The pysnmp value of instance ``position`` in ``snapshot``, ``None`` if absent."""
        return self._per_snapshot(self._wire, position, snapshot,
                                  _WIRE_TYPES[self.view.nodes[position].base_type or ""])

    def encoded_binding(self, position: int, snapshot: Snapshot) -> bytes | None:
        """The BER of instance ``position``'s variable binding in ``snapshot``
        (:mod:`.wire`), ``None`` if the instance is absent."""
        base_type = self.view.nodes[position].base_type or ""

        def encode(raw: Value) -> bytes:
            name = self._encoded_names.get(position)
            if name is None:
                name = self._encoded_names[position] = wire.name(self.view.oids[position])
            return wire.binding(name, wire.value(base_type, raw))

        encoded: bytes | None = self._per_snapshot(self._encoded, position, snapshot, encode)
        return encoded

    def _per_snapshot(self, cache: dict[int, Any], position: int, snapshot: Snapshot,
                      make: Callable[[Value], Any]) -> Any:
        """``make`` of instance ``position``'s raw value in ``snapshot`` (``None`` if it is
        absent), kept in ``cache`` for the snapshot unless it changes at every request."""
        per_request = position in self.view.per_request
        found = None if per_request else cache.get(position)
        if found is None:
            raw: Value | None = self.view.getters[position](snapshot)
            if raw is None:
                return None
            found = make(raw)
            if not per_request:
                cache[position] = found
        return found

    def object_name(self, position: int) -> rfc1902.ObjectName:
        name = self._names.get(position)
        if name is None:
            name = self._names[position] = rfc1902.ObjectName(self.view.oids[position])
        return name

    # ---- faults ----------------------------------------------------------------------

    def _fault_reboot(self, fault: Fault) -> None:
        if fault.target is not None:
            raise FaultError(f"{self.telemetry.name}: a reboot takes no target")
        seconds = fault.seconds or 0.0
        if seconds < 0:
            raise FaultError(f"{self.telemetry.name}: a reboot takes seconds >= 0")
        self.restart(seconds)

    def _fault_malformed(self, fault: Fault) -> None:
        entity = self.view.entity
        assert entity is not None  # handled only with entity tables
        kinds = set((fault.target or "").split(",")) - {""}
        if not kinds or not kinds <= set(MALFORMATIONS):
            raise FaultError(f"{self.telemetry.name}: malformed_sensors takes one or more of "
                             f"{', '.join(MALFORMATIONS)}, got {fault.target!r}")
        with self._lock:
            entity.malformed = frozenset(kinds)
            self._snapshot = None

    def _clear_malformed(self, fault: Fault) -> None:
        entity = self.view.entity
        assert entity is not None
        with self._lock:
            entity.malformed = frozenset()
            self._snapshot = None

    def _check_drop(self, fault: Fault) -> None:
        if fault.target is not None:
            fraction = _fraction(fault.target)
            if fraction is None:
                raise FaultError(f"{self.telemetry.name}: a drop fault takes no target or a "
                                 f"fraction 0..1 of requests to drop, got {fault.target!r}")

    def should_drop(self) -> bool:
        """Whether to discard the request that just arrived (drop, freeze, or down)."""
        faults = self.telemetry.faults
        if not self.is_up or faults.is_active("freeze"):
            return True
        if faults.consume("reset") is not None:  # UDP has no connection to reset
            return True
        for fault in faults.active():
            if fault.kind != "drop":
                continue
            fraction = _fraction(fault.target) if fault.target is not None else 1.0
            if fraction is not None and self._drop_rng.random() < fraction:
                faults.consume("drop")
                return True
            return False
        return False

    def garbage(self, length: int) -> bytes:
        """Line noise to send instead of a response (the garbage fault)."""
        return self._garbage_rng.randbytes(length)

    def sync_engine(self, snmp_engine: engine.SnmpEngine) -> None:
        """On the loop, before a request is processed: USM's snmpEngineBoots is the
        agent's (a restart from another thread shows in the next message header)."""
        boots = self._boots
        if boots != self._boots_on_engine:
            snmpengine.set_boots(snmp_engine, boots)
            self._boots_on_engine = boots


def _read_only_vacm(snmp_engine: engine.SnmpEngine, security_name: str,
                    served: tuple[int, ...]) -> None:
    """VACM for a v2c community: read ``served``, and a write view that excludes
    everything, so a SET is refused noAccess (RFC 3416 4.2.5 (1)), as a read-only
    community is by other agents. (pysnmp's own user helper names a write view that
    has no subtrees, and pysnmp 7.1 then lets writes through instead of answering
    noSuchView.)"""
    group = f"{security_name}-group"
    read_view, write_view = f"{security_name}-read", f"{security_name}-no-write"
    config.add_vacm_group(snmp_engine, group, 2, security_name)
    config.add_vacm_access(snmp_engine, group, b"", 2, "noAuthNoPriv", "exact",
                           read_view, write_view, "")
    config.add_vacm_view(snmp_engine, read_view, "included", served, b"")
    config.add_vacm_view(snmp_engine, write_view, "excluded", (1,), b"")


def _fraction(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def _common_prefix(oids: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The longest OID prefix shared by all of ``oids``: the one subtree VACM opens."""
    first, last = min(oids), max(oids)
    length = 0
    while length < min(len(first), len(last)) and first[length] == last[length]:
        length += 1
    return first[:length]


class _FaultyUdpTransport(udp.UdpAsyncioTransport):  # type: ignore[misc]
    """pysnmp's UDP transport with the agent's transport faults in front of it."""

    def __init__(self, agent: CpoAgent, *, loop: asyncio.AbstractEventLoop):
        super().__init__(loop=loop)
        self.agent = agent

    async def ready(self) -> None:
        if self._lport is not None:
            await self._lport

    def send_message(self, outgoingMessage: bytes, transportAddress: Any) -> None:
        faults = self.agent.telemetry.faults
        if faults.consume("garbage") is not None:
            outgoingMessage = self.agent.garbage(len(outgoingMessage))
        elif faults.consume("truncate") is not None:
            outgoingMessage = outgoingMessage[:len(outgoingMessage) // 2]
        super().send_message(outgoingMessage, transportAddress)

    def datagram_received(self, datagram: bytes, transportAddress: Any) -> None:
        agent = self.agent
        agent.requests_received += 1
        if agent.should_drop():
            agent.requests_dropped += 1
            return
        if agent._engine is not None:
            agent.sync_engine(agent._engine)
        latency = agent.telemetry.faults.consume("latency")
        if latency is not None and latency.seconds:
            self.loop.call_later(latency.seconds, self._callback_function, self,
                                 transportAddress, datagram)
            return
        super().datagram_received(datagram, transportAddress)


