"""The SNMP session: GET and GETBULK PDUs to one agent over pysnmp 7's asyncio engine.

This is the layer between pysnmp and the collector. It sends numeric OIDs only
(they come from :mod:`drivers.snmp.mibs`) through pysnmp's low-level command
generators, so that no MIB is resolved at run time and pysmi is never imported
(the high-level ``pysnmp.hlapi`` imports it, and builds a MIB compiler in every new
engine: about 0.3 s).

Responses: pysnmp handles every message (USM authentication, decryption,
discovery, retries), but the variable bindings of the responses to this
session's requests are decoded by :mod:`drivers.snmp.fastber` rather than by
pyasn1's generic decoder: that was some 85 % of a CPO/CPC collection's CPU.

Engines: pysnmp's :class:`~pysnmp.entity.engine.SnmpEngine` belongs to the event loop
it was first used on, so there is one per loop, kept in a per-loop cache
(:func:`close_engines` closes the current loop's). A USM user is one row per user
name in an engine, so a second key set under a user name the engine already holds
(two agents with user ``msoctl`` and different passphrases, as in the lab) gets a
second engine on the same loop rather than overwriting the first's keys while a
request is in flight; with one key set per user name, as in most fleets, there is
one engine per loop.

Walks (:meth:`SnmpSession.walk`) are GETBULK walks of several subtrees at once
(a table's columns, say), each with its own cursor, ``max_repetitions`` rows per
request. A subtree is done at the first OID outside it (or endOfMibView), and
is then no longer asked for: no walk runs on lexicographically past its table.
Any error indication ends the walk at once with an exception: the engine's own
retries (``retries`` of the target) are the only resends, never a loop of them.

Errors (:mod:`drivers.errors`):

- wrong auth passphrase, wrong privacy passphrase, unknown user, unsupported
  security level or protocol: :class:`DeviceRejected`, one line naming the user;
- nothing answering within ``timeout_seconds`` × (1 + ``retries``):
  :class:`DeviceTimeout` (a v2c request to an agent that speaks only SNMPv3, or
  with a wrong community, is not answered at all, so it ends here too);
- an error-status in a response: :class:`DeviceRejected`;
- a response that breaks the protocol (OIDs not increasing, nothing to continue
  a walk with, an unparsable message): :class:`ProtocolError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import socket
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pysnmp.carrier.asyncio.dgram import udp, udp6
from pysnmp.entity import config
from pysnmp.entity.rfc3413 import cmdgen
from pysnmp.proto import errind, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.proto.rfc1902 import Null, ObjectName

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    ProtocolError,
    ValidationError,
)
from drivers.snmp import fastber
from drivers.snmp.mibs import Oid
from drivers.snmp.mibsource import new_engine

DEFAULT_MAX_REPETITIONS = 50
"""Rows asked for per GETBULK and walked subtree."""
DEFAULT_MAX_VARBINDS = 500
"""A walk asks for at most this many variables per request (subtrees × repetitions),
about 16 KB of response: fewer subtrees per request beyond it."""
DEFAULT_MAX_MESSAGE_SIZE = 65507
"""The largest SNMP message this manager accepts (msgMaxSize), the most a UDP
datagram carries; the agent fills a GETBULK response up to it."""

MIN_PASSPHRASE_CHARACTERS = 8
"""RFC 3414, 11.2: a USM password is at least 8 octets (pysnmp refuses a shorter one)."""

AUTH_PROTOCOLS: Mapping[str, tuple[int, ...]] = {
    "sha256": config.USM_AUTH_HMAC192_SHA256,
    "sha384": config.USM_AUTH_HMAC256_SHA384,
    "sha512": config.USM_AUTH_HMAC384_SHA512,
    "sha1": config.USM_AUTH_HMAC96_SHA,
}
"""The inventory's names of USM authentication protocols (RFC 7860, RFC 3414)."""
PRIV_PROTOCOLS: Mapping[str, tuple[int, ...]] = {
    "aes128": config.USM_PRIV_CFB128_AES,
    # AES-192/256 have no RFC; these are the Blumenthal draft's key extension, which
    # net-snmp calls AES-192 and AES-256 (its -C variants are Reeder's, Cisco's).
    "aes192": config.USM_PRIV_CFB192_AES_BLUMENTHAL,
    "aes256": config.USM_PRIV_CFB256_AES_BLUMENTHAL,
}
"""The inventory's names of USM privacy protocols; AES-128 (RFC 3826) by default."""

_END = (rfc1905.EndOfMibView, rfc1905.NoSuchObject, rfc1905.NoSuchInstance)
_ERROR_STATUS = ("noError", "tooBig", "noSuchName", "badValue", "readOnly", "genErr",
                 "noAccess", "wrongType", "wrongLength", "wrongEncoding", "wrongValue",
                 "noCreation", "inconsistentValue", "resourceUnavailable", "commitFailed",
                 "undoFailed", "authorizationError", "notWritable", "inconsistentName")
"""RFC 3416 error-status names by number."""

SIMILAR_SIZE = 0.6
"""A walk joins a request when it wants at least this share of the repetitions that the
request's first walk wants (and sizes are known)."""

VarBind = tuple[Oid, Any]
T = TypeVar("T")


def _fast_varbinds(pdu: Any) -> Any:
    """The response's bindings as :mod:`.fastber` decoded them, else as pyasn1 did."""
    if pdu is None:
        return ()
    fast = fastber.take(int(v2c.apiPDU.get_request_id(pdu)))
    return v2c.apiPDU.get_varbinds(pdu) if fast is None else fast


class _FastResponses:
    """A command generator whose requests' responses are decoded by :mod:`.fastber`
    (pysnmp still checks, decrypts and matches them); the callback gets those bindings,
    or pyasn1's where the fast path was not taken."""

    def send_pdu(self, snmpEngine: Any, targetName: Any, contextEngineId: Any,
                 contextName: Any, PDU: Any, cbFun: Any, cbCtx: Any) -> Any:
        fastber.want(int(v2c.apiPDU.get_request_id(PDU)))
        return super().send_pdu(snmpEngine, targetName,  # type: ignore[misc]
                                contextEngineId, contextName, PDU, cbFun, cbCtx)

    def process_response_varbinds(self, snmpEngine: Any, sendRequestHandle: Any,
                                  errorIndication: Any, PDU: Any, cbCtx: Any) -> None:
        # the context is the generator's own tuple, whose last two are ours (GET: both
        # of it; GETBULK: after the request's parameters)
        callback, context = cbCtx[-2], cbCtx[-1]
        callback(snmpEngine, sendRequestHandle, errorIndication,
                 (PDU and v2c.apiPDU.get_error_status(PDU)) or 0,
                 (PDU and v2c.apiPDU.get_error_index(PDU, muteErrors=True)) or 0,
                 _fast_varbinds(PDU) if PDU else (), context)


class _Get(_FastResponses, cmdgen.GetCommandGenerator):  # type: ignore[misc]
    pass


class _Bulk(_FastResponses, cmdgen.BulkCommandGeneratorSingleRun):  # type: ignore[misc]
    pass


@dataclass(frozen=True)
class SnmpTarget:
    """One agent and how to speak to it.

    ``version`` "3" (USM authPriv: ``user``, ``auth_key``, ``priv_key``, protocols by
    the names of :data:`AUTH_PROTOCOLS` and :data:`PRIV_PROTOCOLS`) or "2c"
    (``community``). ``timeout_seconds`` is how long one request waits for its
    response; the engine sends it ``retries`` more times before giving up.
    """

    name: str
    host: str
    port: int = 161
    version: str = "3"
    user: str | None = None
    auth_key: str | None = field(default=None, repr=False)
    priv_key: str | None = field(default=None, repr=False)
    auth_protocol: str = "sha256"
    priv_protocol: str = "aes128"
    community: str | None = field(default=None, repr=False)
    timeout_seconds: float = 2.0
    retries: int = 1

    def __post_init__(self) -> None:
        if self.version == "3":
            if not self.user or self.auth_key is None or self.priv_key is None:
                raise ValueError(f"{self.name}: SNMPv3 needs user, auth_key and priv_key")
            if self.auth_protocol not in AUTH_PROTOCOLS:
                raise ValueError(f"{self.name}: unknown auth_protocol {self.auth_protocol!r}")
            if self.priv_protocol not in PRIV_PROTOCOLS:
                raise ValueError(f"{self.name}: unknown priv_protocol {self.priv_protocol!r}")
            short = [name for name, key in (("auth_key", self.auth_key),
                                            ("priv_key", self.priv_key))
                     if len(key) < MIN_PASSPHRASE_CHARACTERS]
            if short:
                raise ValidationError(
                    f"{self.name}: the SNMPv3 {' and '.join(short)} "
                    f"{'is' if len(short) == 1 else 'are'} shorter than "
                    f"{MIN_PASSPHRASE_CHARACTERS} characters, the least a USM passphrase "
                    "may be (RFC 3414, 11.2); no agent accepts keys made from it")
        elif self.version == "2c":
            if self.community is None:
                raise ValueError(f"{self.name}: SNMP v2c needs a community")
        else:
            raise ValueError(f"{self.name}: SNMP version is 3 or 2c, not {self.version!r}")
        if self.timeout_seconds <= 0 or self.retries < 0:
            raise ValueError(f"{self.name}: timeout_seconds > 0 and retries >= 0")

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"udp://{host}:{self.port}"


# ---- engines, one per loop ---------------------------------------------------------------


class _Engine:
    """One SnmpEngine with what has been configured in it."""

    def __init__(self, max_message_size: int):
        self.engine = new_engine(max_message_size=max_message_size)
        self.users: dict[str, str] = {}  # user name -> fingerprint of its keys
        self.names: dict[tuple[Any, ...], str] = {}  # configuration key -> name in the engine
        self.domains: set[tuple[int, ...]] = set()

    def accepts(self, target: SnmpTarget) -> bool:
        if target.version != "3":
            return True
        held = self.users.get(target.user or "")
        return held is None or held == _fingerprint(target)

    def address_name(self, target: SnmpTarget, domain: tuple[int, ...],
                     address: tuple[Any, ...]) -> str:
        """The engine's target-address name for ``target`` at ``address``, set up once."""
        if target.version == "3":
            user = target.user or ""
            if user not in self.users:
                config.add_v3_user(self.engine, user, AUTH_PROTOCOLS[target.auth_protocol],
                                   target.auth_key, PRIV_PROTOCOLS[target.priv_protocol],
                                   target.priv_key)
                self.users[user] = _fingerprint(target)
            params_key: tuple[Any, ...] = ("params", "3", user)
            security_name, level, model = user, "authPriv", 3
        else:
            community_key = ("community", _fingerprint(target))
            if community_key not in self.names:
                index = f"c{len(self.names)}"
                config.add_v1_system(self.engine, index, target.community)
                self.names[community_key] = index
            params_key = ("params", "2c", self.names[community_key])
            security_name, level, model = self.names[community_key], "noAuthNoPriv", 1
        if params_key not in self.names:
            params = f"p{len(self.names)}"
            config.add_target_parameters(self.engine, params, security_name, level, model)
            self.names[params_key] = params
        if domain not in self.domains:
            transport = (udp6.Udp6AsyncioTransport() if domain == udp6.DOMAIN_NAME
                         else udp.UdpAsyncioTransport())
            config.add_transport(self.engine, domain, transport.open_client_mode())
            self.domains.add(domain)
        address_key = ("address", self.names[params_key], domain, address,
                       target.timeout_seconds, target.retries)
        if address_key not in self.names:
            name = f"a{len(self.names)}"
            config.add_target_address(self.engine, name, domain, address,
                                      self.names[params_key],
                                      timeout=round(target.timeout_seconds * 100),
                                      retryCount=target.retries)
            self.names[address_key] = name
        return self.names[address_key]

    def close(self) -> None:
        self.engine.close_dispatcher()


_ENGINES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_Engine]] = (
    weakref.WeakKeyDictionary())


def _fingerprint(target: SnmpTarget) -> str:
    parts = (target.version, target.user or "", target.auth_protocol, target.auth_key or "",
             target.priv_protocol, target.priv_key or "", target.community or "")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _engine_for(target: SnmpTarget, max_message_size: int) -> _Engine:
    engines = _ENGINES.setdefault(asyncio.get_running_loop(), [])
    for candidate in engines:
        if candidate.accepts(target):
            return candidate
    created = _Engine(max_message_size)
    engines.append(created)
    return created


def engine_count() -> int:
    """How many engines the running loop has (one per distinct key set of a user name)."""
    return len(_ENGINES.get(asyncio.get_running_loop(), []))


async def close_engines() -> None:
    """Close the running loop's engines and their sockets (call before the loop ends)."""
    for held in _ENGINES.pop(asyncio.get_running_loop(), []):
        held.close()
    await asyncio.sleep(0)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` on a new event loop (``asyncio.run``), closing its engines after."""

    async def main() -> T:
        try:
            return await coroutine
        finally:
            await close_engines()

    return asyncio.run(main())


# ---- the session -------------------------------------------------------------------------


class SnmpSession:
    """GET and GETBULK to one agent, on the running event loop; counts its requests."""

    def __init__(self, target: SnmpTarget, *, max_repetitions: int = DEFAULT_MAX_REPETITIONS,
                 max_varbinds: int = DEFAULT_MAX_VARBINDS,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE):
        if max_repetitions < 1 or max_varbinds < 1:
            raise ValueError("max_repetitions and max_varbinds are at least 1")
        fastber.install()
        self.target = target
        self.max_repetitions = max_repetitions
        self.max_varbinds = max_varbinds
        self.max_message_size = max_message_size
        self.requests = 0
        """PDUs this session asked the engine to send (its own retries not counted)."""
        self.variables = 0
        """Variable bindings received."""
        self.answered = False
        """Whether the agent has answered a request of this session."""
        self.first_request_monotonic: float | None = None
        """``time.monotonic()`` when the first request since :meth:`mark` was handed to the
        engine (its USM discovery, on the first request to an agent, goes just before)."""
        self._address: tuple[tuple[int, ...], tuple[Any, ...]] | None = None

    def mark(self) -> None:
        """Start timing anew: the next request sets :attr:`first_request_monotonic`."""
        self.first_request_monotonic = None

    async def _resolve(self) -> tuple[tuple[int, ...], tuple[Any, ...]]:
        if self._address is None:
            loop = asyncio.get_running_loop()
            try:
                infos = await loop.getaddrinfo(self.target.host, self.target.port,
                                               type=socket.SOCK_DGRAM)
            except OSError as error:
                raise DeviceError(f"cannot resolve {self.target.host}: {error}",
                                  device=self.target.name) from None
            family, _, _, _, sockaddr = infos[0]
            if family == socket.AF_INET6:
                self._address = udp6.DOMAIN_NAME, udp6.Udp6TransportAddress(sockaddr)
            else:
                self._address = udp.DOMAIN_NAME, udp.UdpTransportAddress(sockaddr[:2])
        return self._address

    async def _send(self, generator: Any, *arguments: Any) -> tuple[Any, int, int, Any]:
        domain, address = await self._resolve()
        held = _engine_for(self.target, self.max_message_size)
        name = held.address_name(self.target, domain, address)
        future: asyncio.Future[tuple[Any, int, int, Any]] = (
            asyncio.get_running_loop().create_future())

        def done(snmp_engine: Any, handle: Any, error_indication: Any, error_status: Any,
                 error_index: Any, var_binds: Any, context: Any) -> None:
            if not future.done():
                future.set_result((error_indication, int(error_status or 0),
                                   int(error_index or 0), var_binds))

        self.requests += 1
        if self.first_request_monotonic is None:
            self.first_request_monotonic = time.monotonic()
        generator.send_varbinds(held.engine, name, None, b"", *arguments, done)
        return await future

    def _check(self, error_indication: Any, error_status: int, error_index: int,
               asked: Sequence[Oid]) -> None:
        if error_indication:
            raise self._error(error_indication)
        self.answered = True
        if error_status:
            status = (_ERROR_STATUS[error_status] if error_status < len(_ERROR_STATUS)
                      else str(error_status))
            where = (f" at {'.'.join(map(str, asked[error_index - 1]))}"
                     if 0 < error_index <= len(asked) else "")
            raise DeviceRejected(f"the agent answered {status}{where}",
                                 device=self.target.name, errors=(status,))

    def _error(self, indication: Any) -> DeviceError:
        """The driver error for a pysnmp error indication."""
        target, name = self.target, self.target.name
        user = target.user
        detail = f"{target.address}: {indication}"
        if isinstance(indication, errind.RequestTimedOut):
            tries = target.retries + 1
            message = (f"no answer from {target.address} "
                       f"({tries} {'try' if tries == 1 else 'tries'} of "
                       f"{target.timeout_seconds:g} s)")
            if target.version == "2c":
                message += ("; a v2c request with a wrong community, or to an agent that "
                            "speaks only SNMPv3, is not answered at all")
            return DeviceTimeout(message, device=name, detail=detail)
        if isinstance(indication, (errind.WrongDigest, errind.AuthenticationFailure,
                                   errind.AuthenticationError)):
            return DeviceRejected(
                f"SNMPv3 authentication failed for user {user!r}: wrong auth_key, or the "
                f"agent does not use {target.auth_protocol.upper()}",
                device=name, detail=detail, errors=("authenticationFailure",))
        if isinstance(indication, errind.DecryptionError):
            return DeviceRejected(
                f"SNMPv3 decryption failed for user {user!r}: wrong priv_key, or the agent "
                f"does not use {target.priv_protocol.upper()}",
                device=name, detail=detail, errors=("decryptionError",))
        if isinstance(indication, (errind.UnknownUserName, errind.UnknownSecurityName)):
            return DeviceRejected(f"SNMPv3 user {user!r} is unknown to the agent",
                                  device=name, detail=detail, errors=("unknownUserName",))
        if isinstance(indication, errind.UnsupportedSecurityLevel):
            return DeviceRejected(
                f"the agent does not accept authPriv for SNMPv3 user {user!r}",
                device=name, detail=detail, errors=("unsupportedSecurityLevel",))
        if isinstance(indication, (errind.UnsupportedAuthProtocol,
                                   errind.UnsupportedPrivProtocol)):
            return DeviceRejected(f"unsupported SNMPv3 protocol for user {user!r}",
                                  device=name, detail=detail, errors=(str(indication),))
        if isinstance(indication, (errind.DeserializationError, errind.InvalidMsg,
                                   errind.EmptyResponse, errind.DataMismatch,
                                   errind.EngineIDMismatch, errind.OidNotIncreasing)):
            return ProtocolError(f"malformed SNMP response: {indication}", device=name,
                                 detail=detail)
        if isinstance(indication, errind.NotInTimeWindow):
            return DeviceRejected(f"SNMPv3 message outside the agent's time window for user "
                                  f"{user!r} (the engine's clock resynchronisation failed)",
                                  device=name, detail=detail, errors=("notInTimeWindow",))
        return DeviceError(f"SNMP request failed: {indication}", device=name, detail=detail)

    async def get(self, oids: Sequence[Oid]) -> list[VarBind]:
        """GET ``oids``; an absent instance comes back as ``None``."""
        indication, status, index, var_binds = await self._send(
            _Get(), [(ObjectName(oid), Null()) for oid in oids])
        self._check(indication, status, index, oids)
        if len(var_binds) != len(oids):
            raise ProtocolError(f"a GET of {len(oids)} variables was answered with "
                                f"{len(var_binds)}", device=self.target.name)
        self.variables += len(var_binds)
        answers: list[VarBind] = []
        for asked, (name, value) in zip(oids, var_binds, strict=True):
            if tuple(name) != tuple(asked):
                raise ProtocolError(f"a GET of {_dotted(asked)} was answered for "
                                    f"{_dotted(tuple(name))}", device=self.target.name)
            answers.append((tuple(name), None if isinstance(value, _END) else value))
        return answers

    async def bulk(self, non_repeaters: Sequence[Oid], repeaters: Sequence[Oid],
                   max_repetitions: int) -> tuple[list[VarBind], list[VarBind]]:
        """One GETBULK: the non-repeaters' answers, and the repeaters' rows in order."""
        asked = [*non_repeaters, *repeaters]
        indication, status, index, var_binds = await self._send(
            _Bulk(), len(non_repeaters), max_repetitions,
            [(ObjectName(oid), Null()) for oid in asked])
        self._check(indication, status, index, asked)
        answers = [(tuple(name), value) for name, value in var_binds]
        self.variables += len(answers)
        if len(answers) < len(asked) and repeaters:
            raise ProtocolError(f"a GETBULK of {len(asked)} variables was answered with "
                                f"{len(answers)}", device=self.target.name)
        return answers[:len(non_repeaters)], answers[len(non_repeaters):]

    async def walk(self, roots: Sequence[Oid], *, with_each: Sequence[Oid] = (),
                   concurrency: int = 1) -> tuple[dict[Oid, list[VarBind]],
                                                  list[list[VarBind]]]:
        """GETBULK walks of the subtrees ``roots``, side by side (see :meth:`walk_segments`).

        Returns every instance under each root in OID order, and the answers to
        ``with_each`` of every request.
        """
        results, extras = await self.walk_segments([Segment(tuple(root)) for root in roots],
                                                   with_each=with_each,
                                                   concurrency=concurrency)
        return {result.segment.root: result.values for result in results}, extras

    async def walk_segments(
            self, segments: Sequence[Segment], *, with_each: Sequence[Oid] = (),
            concurrency: int = 1,
            then: Callable[[SegmentResult], Sequence[Segment]] | None = None,
    ) -> tuple[list[SegmentResult], list[list[VarBind]]]:
        """GETBULK walks of ``segments``, several per request, ``concurrency`` requests
        in flight.

        Every request asks for the same repetitions of each of its segments (GETBULK has
        one max-repetitions): :attr:`max_repetitions`, or fewer when every segment in it
        expects fewer instances (:attr:`Segment.expected`), and at most
        :attr:`max_varbinds` variables in all; segments of like sizes go together.
        Segments are shared out between the requests in flight. ``then`` is called with
        each segment's result as it finishes, and may return more segments to walk (a
        plan made from what was seen). Until the agent has answered this session once,
        one request goes alone (it carries USM discovery, and wrong credentials then fail
        one request, not several). ``with_each`` are non-repeaters asked in every request
        (GETNEXT of each: ``sysUpTime`` gives sysUpTime.0), returned per request, so a
        caller can tell whether the agent restarted during the walk.

        Returns every segment's result, in the order the segments were given or added,
        and the answers to ``with_each`` of every request, in the order they came.
        """
        most = self.max_repetitions
        every = [_Walk(segment) for segment in segments]
        waiting = list(every)
        extras: list[list[VarBind]] = []
        width = max(1, self.max_varbinds // most)
        workers_count = max(1, concurrency)
        answered = asyncio.Event()
        if self.answered:
            answered.set()
        changed = asyncio.Event()
        busy = 0  # workers with a request of their own in flight
        held = 0  # segments the workers hold between their requests

        def add(more: Sequence[Segment]) -> None:
            walks = [_Walk(segment) for segment in more]
            every.extend(walks)
            waiting.extend(walks)
            waiting.sort(key=lambda walk: -walk.wanted(most))  # like sizes side by side

        async def worker(first: bool) -> None:
            nonlocal busy, held
            if not first:
                await answered.wait()
            mine: list[_Walk] = []
            while True:
                # An even share of what is left, so that every request in flight is full.
                share = max(1, min(width, -(-(len(waiting) + held) // workers_count)))
                held -= len(mine)
                while waiting and len(mine) < share and (
                        not mine or _alike(mine[0], waiting[0], most)):
                    mine.append(waiting.pop(0))
                held += len(mine)
                if not mine:
                    if not busy and not waiting:
                        changed.set()
                        return
                    changed.clear()
                    await changed.wait()
                    continue
                busy += 1
                repetitions = min(most, self.max_varbinds // len(mine),
                                  max(walk.wanted(most) for walk in mine))
                extra, rows = await self.bulk(with_each, [walk.cursor for walk in mine],
                                              max(1, repetitions))
                extras.append(extra)
                answered.set()
                self._advance(mine, rows)
                for walk in mine:
                    if walk.done and then is not None:
                        add(then(walk.result()))
                held -= len(mine)
                mine = [walk for walk in mine if not walk.done]
                held += len(mine)
                busy -= 1
                changed.set()

        workers = [asyncio.ensure_future(worker(number == 0))
                   for number in range(workers_count)]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
        return [walk.result() for walk in every], extras

    def _advance(self, batch: Sequence[_Walk], rows: Sequence[VarBind]) -> None:
        """Take a GETBULK response's rows into the walks of ``batch``; end finished ones."""
        if not rows:
            raise ProtocolError("the agent answered a GETBULK without any repetition",
                                device=self.target.name)
        for position, (name, value) in enumerate(rows):
            walk = batch[position % len(batch)]
            if walk.done:
                continue  # this segment ended earlier in the response
            if isinstance(value, _END):
                walk.finish("endOfMibView")
                continue
            if name[:len(walk.segment.root)] != walk.segment.root:
                walk.finish("root")
                continue
            if name <= walk.cursor:
                raise ProtocolError(
                    f"the agent's OIDs do not increase: {_dotted(name)} after "
                    f"{_dotted(walk.cursor)}", device=self.target.name)
            walk.take(name, value)
        for walk in batch:
            walk.responded()


def _alike(first: _Walk, other: _Walk, most: int) -> bool:
    """Whether ``other`` wants about as many repetitions as ``first`` (a request asks the
    same of all its walks, so a small walk beside a large one is sent past its end)."""
    return other.wanted(most) >= SIMILAR_SIZE * first.wanted(most)


@dataclass(frozen=True)
class Segment:
    """A part of a subtree to walk.

    The walk starts after ``start`` (default: ``root``) and ends at the first OID outside
    ``root``, or at endOfMibView, or once it has passed ``end`` (the values it received
    past ``end`` within ``root`` are kept: a response does not stop at a bound). With
    ``first_response_only``, the walk stops after its first response whether it has
    finished or not, so that the caller can plan the rest from what it saw.
    ``expected`` is how many instances the segment should hold: the last request then
    asks for just those and one more, to see the end.
    """

    root: Oid
    start: Oid | None = None
    end: Oid | None = None
    first_response_only: bool = False
    expected: int | None = None


@dataclass
class SegmentResult:
    segment: Segment
    values: list[VarBind]
    last: Oid
    """The last OID received within ``root`` (the start if none)."""
    ended_by: str
    """``root`` (an OID outside it), ``end``, ``endOfMibView``, or ``first response``
    (with :attr:`Segment.first_response_only`, not finished)."""


class _Walk:
    """One segment's walk in progress."""

    def __init__(self, segment: Segment):
        self.segment = segment
        self.cursor: Oid = segment.start or segment.root
        self.end = segment.end
        self.values: list[VarBind] = []
        self.done = False
        self.ended_by = ""
        self.responses = 0

    def wanted(self, most: int) -> int:
        """Repetitions this walk needs next (at most ``most``): what it still expects and
        one more."""
        if self.segment.expected is None or len(self.values) > self.segment.expected:
            return most
        return min(most, self.segment.expected - len(self.values) + 1)

    def take(self, name: Oid, value: Any) -> None:
        self.values.append((name, value))
        self.cursor = name

    def finish(self, why: str) -> None:
        self.done, self.ended_by = True, why

    def responded(self) -> None:
        self.responses += 1
        if not self.done and self.segment.first_response_only:
            self.finish("first response")
        if not self.done and self.end is not None and self.cursor >= self.end:
            self.finish("end")

    def result(self) -> SegmentResult:
        return SegmentResult(self.segment, self.values, self.cursor, self.ended_by)


def _dotted(oid: Sequence[int]) -> str:
    return ".".join(str(arc) for arc in oid)
