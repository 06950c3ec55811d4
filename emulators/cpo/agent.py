"""The SNMP agent of a switch's CPO/CPC telemetry: pysnmp 7 on asyncio, SNMPv3 by default.

Security: one USM user with HMAC-SHA-256 authentication (usmHMAC192SHA256AuthProtocol)
and AES-128 privacy (usmAesCfb128Protocol), authPriv required; a v2c community only
when one is given. VACM gives both read access to what the agent serves, nothing
else, and no write access.

Structure (the REFERENCE.md recipe):

- The UDP socket is bound before pysnmp sees it (``port=0``: an ephemeral port,
  and a bind error raised at once by :meth:`CpoAgent.start`).
- A MIB instrumentation controller of our own over :class:`~.mibview.MibView`'s
  sorted OID list replaces pysnmp's MIB tree: GET is a dict lookup, GETNEXT a
  bisection, both still asking VACM (the responder's access callback) about every
  instance they return.
- GETBULK fills the response up to the size the manager accepts and stops after
  the first repetition in which every variable is endOfMibView (RFC 3416 allows
  it; the stock responder repeats endOfMibView to the end of max-repetitions and
  caps a response at 64 variables).
- Values come from :class:`~.model.SwitchTelemetry`: the agent brings the model
  up to the clock at most once per ``refresh_seconds`` of device time (as a
  device's firmware refreshes its counters about once a second), so that a walk
  reads one consistent snapshot; sysUpTime is computed for every request.

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
|         | counters from zero, sysUpTime from zero, snmpEngineBoots + 1                |

plus the model's own (els, rising_ber, engine, overheat, lane_reset; see
:mod:`.model`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pysnmp.carrier.asyncio.dgram import udp
from pysnmp.entity import config, engine
from pysnmp.entity.rfc3413 import cmdrsp, context
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.smi import error as smi_error
from pysnmp.smi.instrum import AbstractMibInstrumController

from drivers.snmp import mibs
from drivers.snmp.collector import TICKS_PER_SECOND
from drivers.snmp.mibs import MibObject
from emulators.cpo.mibview import MibView, Snapshot, SystemInfo, Value
from emulators.cpo.model import SwitchTelemetry
from emulators.faults import Fault, FaultError

log = logging.getLogger(__name__)

V2C_SECURITY_NAME = "msoctl-v2c"
MIN_KEY_LENGTH = 8  # RFC 3414 passphrases; net-snmp refuses shorter ones
MAX_REPETITIONS = 1000  # however large the response may be
RESPONSE_MARGIN = 64  # bytes kept free in a response for the PDU's own header

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
    """The SNMP agent of one switch's :class:`SwitchTelemetry`, on the running event loop."""

    def __init__(
        self,
        telemetry: SwitchTelemetry,
        credentials: UsmCredentials,
        *,
        community: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        refresh_seconds: float = 1.0,
        port_names: Mapping[int, str] | None = None,
        system: SystemInfo | None = None,
        seed: int = 0,
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
        telemetry.update()
        self.view = MibView(telemetry.read(), self.system,
                            port_names or {port: f"port{port}" for port in telemetry.spec.ports})
        self._lock = threading.RLock()
        self._boot_time = self.clock.now()
        self._boots_pending = 0
        self._reset_pending = False
        self._snapshot: Snapshot | None = None
        self._wire: dict[int, Any] = {}
        self._names: dict[int, rfc1902.ObjectName] = {}
        self._sizes: dict[int, int] = {}
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

    # ---- life cycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the UDP socket (OSError if it cannot) and start answering."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((self.host, self.requested_port))
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        self._socket = sock
        self.port = sock.getsockname()[1]
        snmp_engine = engine.SnmpEngine()
        transport = _FaultyUdpTransport(self, loop=asyncio.get_running_loop())
        transport.open_server_mode(sock=sock)
        config.add_transport(snmp_engine, udp.DOMAIN_NAME, transport)
        config.add_v3_user(snmp_engine, self.credentials.user,
                           config.USM_AUTH_HMAC192_SHA256, self.credentials.auth_key,
                           config.USM_PRIV_CFB128_AES, self.credentials.priv_key)
        served = _common_prefix(self.view.oids)
        config.add_vacm_user(snmp_engine, 3, self.credentials.user, "authPriv", served)
        if self.community is not None:
            config.add_v1_system(snmp_engine, V2C_SECURITY_NAME, self.community)
            config.add_vacm_user(snmp_engine, 2, V2C_SECURITY_NAME, "noAuthNoPriv", served)
        snmp_context = context.SnmpContext(snmp_engine)
        snmp_context.context_names[b""] = _Instrumentation(self)
        cmdrsp.GetCommandResponder(snmp_engine, snmp_context)
        cmdrsp.NextCommandResponder(snmp_engine, snmp_context)
        _BulkResponder(snmp_engine, snmp_context)
        self._engine = snmp_engine
        self._transport = transport
        await transport.ready()
        log.info("%s: SNMP agent on udp://%s:%d", self.telemetry.name, self.host, self.port)

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
        (snmpEngineBoots) with its engine time from zero.
        """
        with self._lock:
            self._boot_time = self.clock.now() + down_seconds
            self._reset_pending = True
            self._reset_counters_when_up()
            self._snapshot = None
            self._wire.clear()
            self._sizes.clear()
            self._boots_pending += 1

    @property
    def engine_boots(self) -> int | None:
        """snmpEngineBoots as the SNMP engine counts it (None before :meth:`start`)."""
        if self._engine is None:
            return None
        (boots,) = self._engine.get_mib_builder().import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineBoots")
        return int(boots.syntax)

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

    def snapshot(self) -> Snapshot:
        """The snapshot requests read now.

        The model is brought up to the clock when the snapshot is ``refresh_seconds``
        old; a change made to it meanwhile (a fault) shows at once.
        """
        with self._lock:
            self._reset_counters_when_up()
            now = self.clock.now()
            current = self._snapshot
            if current is None or now - current.reading.at >= self.refresh_seconds:
                self.telemetry.update(now)
            reading = self.telemetry.read()
            if current is None or reading is not current.reading:
                current = Snapshot(reading, self._boot_time, 0)
                self._snapshot = current
                self._wire.clear()
                self._sizes.clear()
            current.uptime_ticks = self.uptime_ticks()
            return current

    def wire_value(self, position: int, snapshot: Snapshot) -> Any:
        """The pysnmp value of instance ``position`` in ``snapshot``, ``None`` if absent."""
        node = self.view.nodes[position]
        if node.base_type == "TimeTicks" and node.kind == "scalar":  # sysUpTime: every time
            return rfc1902.TimeTicks(snapshot.uptime_ticks)
        cached = self._wire.get(position)
        if cached is None:
            raw: Value | None = self.view.getters[position](snapshot)
            if raw is None:
                return None
            cached = _WIRE_TYPES[node.base_type or ""](raw)
            self._wire[position] = cached
        return cached

    def encoded_size(self, position: int, value: Any) -> int:
        """The BER size of instance ``position`` with ``value`` in a response."""
        size = self._sizes.get(position)
        if size is None or self.view.nodes[position].base_type == "Counter64":
            size = self._sizes[position] = _encoded_size(self.view.oids[position], value)
        return size

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

    def apply_pending_boots(self, snmp_engine: engine.SnmpEngine) -> None:
        """On the loop: a restart counts one more snmpEngineBoots and resets engine time."""
        with self._lock:
            boots, self._boots_pending = self._boots_pending, 0
        if not boots:
            return
        builder = snmp_engine.get_mib_builder()
        engine_boots, engine_time = builder.import_symbols(
            "__SNMP-FRAMEWORK-MIB", "snmpEngineBoots", "snmpEngineTime")
        engine_boots.syntax = engine_boots.syntax.clone(int(engine_boots.syntax) + boots)
        engine_time.syntax = engine_time.syntax.clone(int(time.time()))


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
            agent.apply_pending_boots(agent._engine)
        latency = agent.telemetry.faults.consume("latency")
        if latency is not None and latency.seconds:
            self.loop.call_later(latency.seconds, self._callback_function, self,
                                 transportAddress, datagram)
            return
        super().datagram_received(datagram, transportAddress)


class _Instrumentation(AbstractMibInstrumController):  # type: ignore[misc]
    """GET and GETNEXT over the view's sorted OIDs, asking VACM about what they answer.

    VACM's verdict is asked once per object (column or scalar) and request: the agent
    opens views on whole subtrees only, never on single instances.
    """

    def __init__(self, agent: CpoAgent):
        self.agent = agent

    def _allowed(self, position: int, value: Any, index: int, ctx: dict[str, Any]) -> bool:
        access = ctx.get("acFun")
        if access is None:
            return True
        node = self.agent.view.nodes[position]
        verdicts: dict[MibObject, bool] = ctx.setdefault("msoVerdicts", {})
        verdict = verdicts.get(node)
        if verdict is None:
            ctx["idx"] = index
            verdict = verdicts[node] = not access("read", (self.agent.view.oids[position],
                                                           value), **ctx)
        return verdict

    @staticmethod
    def _snapshot(agent: CpoAgent, ctx: dict[str, Any]) -> Snapshot:
        snapshot: Snapshot | None = ctx.get("msoSnapshot")
        if snapshot is None:
            snapshot = ctx["msoSnapshot"] = agent.snapshot()
        return snapshot

    def read_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        agent, view = self.agent, self.agent.view
        snapshot = self._snapshot(agent, ctx)
        answers: list[tuple[Any, Any]] = []
        for index, (name, _) in enumerate(var_binds):
            oid = tuple(name)
            position = view.position(oid)
            value = None if position is None else agent.wire_value(position, snapshot)
            if value is None:
                answers.append((name, rfc1905.noSuchInstance if view.is_object(oid)
                                else rfc1905.noSuchObject))
            elif position is not None and not self._allowed(position, value, index, ctx):
                answers.append((name, rfc1905.noSuchObject))
            else:
                answers.append((name, value))
        return answers

    def read_next_variables(self, *var_binds: Any, **ctx: Any) -> list[tuple[Any, Any]]:
        return [answer for answer, _ in self.read_next_sized(var_binds, ctx)]

    def read_next_sized(self, var_binds: Sequence[Any],
                        ctx: dict[str, Any]) -> list[tuple[tuple[Any, Any], int]]:
        """GETNEXT of each variable: ((name, value), encoded size) for each."""
        agent, view = self.agent, self.agent.view
        snapshot = self._snapshot(agent, ctx)
        answers: list[tuple[tuple[Any, Any], int]] = []
        end = len(view)
        for index, (name, _) in enumerate(var_binds):
            position = view.position_after(tuple(name))
            while position < end:
                value = agent.wire_value(position, snapshot)
                if value is not None and self._allowed(position, value, index, ctx):
                    answers.append(((agent.object_name(position), value),
                                    agent.encoded_size(position, value)))
                    break
                position += 1
            else:
                answers.append(((name, rfc1905.endOfMibView), _encoded_size(name, None)))
        return answers


class _BulkResponder(cmdrsp.BulkCommandResponder):  # type: ignore[misc]
    """GETBULK filled up to the manager's size limit, ended by a row of endOfMibView."""

    def __init__(self, snmp_engine: engine.SnmpEngine, snmp_context: context.SnmpContext):
        super().__init__(snmp_engine, snmp_context)
        self._size_limits: dict[Any, int] = {}

    def process_pdu(self, snmpEngine: Any, messageProcessingModel: Any,
                    securityModel: Any, securityName: Any, securityLevel: Any,
                    contextEngineId: Any, contextName: Any, pduVersion: Any,
                    PDU: Any, maxSizeResponseScopedPDU: Any,
                    stateReference: Any) -> None:
        self._size_limits[stateReference] = int(maxSizeResponseScopedPDU)
        try:
            super().process_pdu(snmpEngine, messageProcessingModel, securityModel,
                                securityName, securityLevel, contextEngineId, contextName,
                                pduVersion, PDU, maxSizeResponseScopedPDU, stateReference)
        finally:
            self._size_limits.pop(stateReference, None)

    def handle_management_operation(self, snmpEngine: Any, stateReference: Any,
                                    contextName: Any, PDU: Any) -> None:
        non_repeaters = max(0, int(v2c.apiBulkPDU.get_non_repeaters(PDU)))
        repetitions = min(MAX_REPETITIONS,
                          max(0, int(v2c.apiBulkPDU.get_max_repetitions(PDU))))
        requested = list(v2c.apiPDU.get_varbinds(PDU))
        non_repeaters = min(non_repeaters, len(requested))
        instrumentation = self.snmpContext.get_mib_instrum(contextName)
        if not isinstance(instrumentation, _Instrumentation):
            raise smi_error.GenError()
        ctx = {"snmpEngine": snmpEngine, "acFun": self.verify_access, "cbCtx": self.cbCtx}
        budget = self._size_limits.get(stateReference, 1472) - RESPONSE_MARGIN
        first = instrumentation.read_next_sized(requested[:non_repeaters], ctx)
        answers = [answer for answer, _ in first]
        used = sum(size for _, size in first)
        repeating = requested[non_repeaters:]
        while repeating and repetitions > 0:
            row = instrumentation.read_next_sized(repeating, ctx)
            size = sum(size for _, size in row)
            if used + size > budget and answers:
                break  # RFC 3416 4.2.3: fewer repetitions rather than tooBig
            repeating = [answer for answer, _ in row]
            answers.extend(repeating)
            used += size
            repetitions -= 1
            if all(value is rfc1905.endOfMibView for _, value in repeating):
                break
        self.send_varbinds(snmpEngine, stateReference, 0, 0, answers)
        self.release_state_information(stateReference)


def _length_octets(length: int) -> int:
    return 1 if length < 128 else 1 + (length.bit_length() + 7) // 8


def _tlv(content: int) -> int:
    return 1 + _length_octets(content) + content


def _oid_content(arcs: Sequence[int]) -> int:
    return 1 + sum(max(1, (int(arc).bit_length() + 6) // 7) for arc in arcs[2:])


def _encoded_size(name: Sequence[int], value: Any) -> int:
    """The BER size of one variable binding, closely enough to fill a response."""
    if value is None:  # endOfMibView, noSuchObject, noSuchInstance
        content = 0
    elif isinstance(value, rfc1902.ObjectIdentifier):
        content = _oid_content(tuple(value))
    elif isinstance(value, rfc1902.OctetString):
        content = len(value.asOctets())
    else:
        content = int(value).bit_length() // 8 + 1
    return _tlv(_tlv(_oid_content(tuple(name))) + _tlv(content))
