"""NETCONF over SSH (RFC 6242) on asyncssh: the protocol layer of the switch emulator.

The server listens on loopback (an ephemeral port by default) with a host key
generated at start, whose public half it exports for a known_hosts file. It
serves the ``netconf`` subsystem only and refuses shells, commands and other
subsystems at the SSH request. Users log in with a password or a public key
given to the server.

Per session: the server's hello goes out at once in end-of-message framing;
the client's hello must follow (one without base:1.0 or base:1.1, or with a
session-id, ends the session); chunked framing starts when both list base:1.1.
Each ``<rpc>`` is answered in order by the handler registered for its
operation (``server.handle("get-config", fn)``); ``close-session`` and
``kill-session`` are built in; anything else is ``operation-not-supported``.
``on_session_end(session)`` is called once for every session however it ends
(close-session, kill-session, the client going away, a framing error).

The event loop only moves bytes: parsing a request, running a plain handler
and serialising its reply happen in the server's worker thread
(emulators/netconf/worker.py), as does ``on_session_end``, so one server's big
request never holds the loop that other servers (and other devices) share, and
one server's operations run one at a time in the order they came. Coroutine
handlers and the built-in operations run on the loop.

``close-session`` is answered ``<ok/>``; then the channel is closed after its
last byte and the SSH connection only once the client has closed its side (or
after a grace period), so the reply is never lost to the connection's teardown
(RFC 6241 7.8). kill-session and the drop fault close at once.

Transport faults (:mod:`emulators.faults`), per RPC:

| kind     | effect                                                               |
|----------|----------------------------------------------------------------------|
| latency  | the reply is held back ``seconds`` of real time                      |
| drop     | the request is read, not run, and the SSH connection closed          |
| reset    | as drop, but the TCP stream is cut without an SSH disconnect         |
| garbage  | the reply is replaced by a framed message that is not XML            |
| truncate | the reply is cut short and its framing never ended                   |
| freeze   | requests are read and ignored until the fault is cleared             |

A message that is not well-formed XML is answered with ``malformed-message``
(``operation-failed`` on a 1.0 session: RFC 6241 keeps that tag from 1.0
clients) and the session goes on; a framing error ends it.

The server counts what RFC 6022 reports (``statistics``, and each session's
counters: emulators/netconf/monitoring.py says what moves each one).
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, TypeAlias, TypeVar

import asyncssh
from lxml.etree import _Element

from emulators.faults import FaultInjector
from emulators.netconf import messages
from emulators.netconf.framing import (
    BASE_1_0,
    BASE_1_1,
    Framing,
    FramingError,
    encode,
    negotiate,
)
from emulators.netconf.messages import (
    NETCONF_NS,
    EnvelopeError,
    MessageError,
    Rpc,
    RpcError,
    RpcErrors,
    qname,
)
from emulators.netconf.monitoring import Statistics, now
from emulators.netconf.session import Ending, NetconfSession
from emulators.netconf.worker import Worker
from emulators.text import digits as _digits

log = logging.getLogger(__name__)
T = TypeVar("T")

HandlerResult: TypeAlias = "_Element | None"
Handler: TypeAlias = (
    "Callable[[NetconfSession, _Element], HandlerResult | Awaitable[HandlerResult]]")
SessionHook: TypeAlias = Callable[[NetconfSession], Awaitable[None] | None]

# Noise for the garbage fault: no '>' or ']' (so never an end-of-message marker)
# and no '<' (so never an element): a message no XML parser accepts.
_NOISE = bytes(range(0x21, 0x7F)).translate(None, b"<>]")


class _Reply(NamedTuple):
    """A serialised reply, and whether it holds an rpc-error (RFC 6022 counts those)."""

    data: bytes
    error: bool


class NetconfServer:
    """A NETCONF-over-SSH server; ``start`` it in an event loop, ``stop`` it there.

    ``users`` maps user names to passwords, ``authorized_keys`` user names to
    public keys (OpenSSH text or ``asyncssh.SSHKey``). ``capabilities`` are
    advertised after base:1.0 and base:1.1 (``base_1_1=False`` serves a
    NETCONF 1.0-only server).
    """

    def __init__(
        self,
        *,
        name: str = "netconf",
        users: Mapping[str, str] | None = None,
        authorized_keys: Mapping[str, Sequence[str | asyncssh.SSHKey]] | None = None,
        capabilities: Iterable[str] = (),
        base_1_1: bool = True,
        faults: FaultInjector | None = None,
        on_session_end: SessionHook | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.name = name
        self.host = host
        self.port = port
        self.faults = faults if faults is not None else FaultInjector(name)
        self.on_session_end = on_session_end
        bases = [BASE_1_0, BASE_1_1] if base_1_1 else [BASE_1_0]
        self.capabilities = tuple(bases + [c for c in capabilities if c not in bases])
        self._passwords = dict(users or {})
        self._keys = {
            user: [_public_key(key) for key in keys]
            for user, keys in (authorized_keys or {}).items()
        }
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        self.sessions: dict[int, NetconfSession] = {}
        self._handlers: dict[tuple[str, str], Handler] = {}
        self._next_session_id = 1
        self._listener: asyncssh.SSHAcceptor | None = None
        self.worker: Worker | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._connections: set[asyncssh.SSHServerConnection] = set()
        self._noise = random.Random(f"{name}/garbage")
        self.statistics = Statistics()

    # ---- setup -----------------------------------------------------------------------

    def handle(self, operation: str, handler: Handler, *, namespace: str = NETCONF_NS) -> None:
        """Answer ``operation`` (local name, in ``namespace``) with ``handler``.

        ``handler(session, rpc)`` gets the ``<rpc>`` element (its one element child
        is the operation) and returns the reply's payload (``messages.data(...)``)
        or ``None`` for ``<ok/>``, or raises :class:`RpcError` / :class:`RpcErrors`.
        It may be a coroutine function.
        """
        if namespace == NETCONF_NS and operation in ("close-session", "kill-session"):
            raise ValueError(f"{operation} is built into the protocol layer")
        self._handlers[(namespace, operation)] = handler

    @property
    def host_public_key(self) -> str:
        """The host key in OpenSSH public-key form (``ssh-ed25519 AAAA...``)."""
        return bytes(self.host_key.export_public_key("openssh")).decode("ascii").strip()

    def known_hosts_line(self) -> str:
        """The known_hosts line for this server (``[host]:port`` off port 22)."""
        where = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        return f"{where} {self.host_public_key}"

    def write_known_hosts(self, path: Path) -> None:
        path.write_text(self.known_hosts_line() + "\n", encoding="ascii")

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.statistics = Statistics(start_time=now())
        self.worker = Worker(self.name)
        self._listener = await asyncssh.create_server(
            lambda: _SshConnection(self), self.host, self.port,
            server_host_keys=[self.host_key], encoding=None, line_editor=False,
        )
        self.port = self._listener.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
            self._listener = None
        for session in list(self.sessions.values()):
            await session.kill()
        for connection in list(self._connections):
            connection.abort()
        self._connections.clear()
        if self.worker is not None:
            self.worker.close()

    # ---- authentication --------------------------------------------------------------

    def check_password(self, username: str, password: str) -> bool:
        expected = self._passwords.get(username)
        return expected is not None and hmac.compare_digest(
            expected.encode("utf-8"), password.encode("utf-8"))

    def check_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return any(known.public_data == key.public_data for known in self._keys.get(username, []))

    # ---- sessions ----------------------------------------------------------------------

    async def serve(self, process: asyncssh.SSHServerProcess[bytes]) -> None:
        """Run one session on an SSH channel whose netconf subsystem was accepted."""
        if process.subsystem != "netconf":  # refused at the request; never reached
            process.exit(1)
            return
        session_id = self._next_session_id
        self._next_session_id += 1
        username = str(process.get_extra_info("username") or "")
        session = NetconfSession(session_id, username, process)
        session.bind_task(asyncio.current_task())
        self.sessions[session_id] = session
        try:
            await session.send_raw(encode(messages.hello(self.capabilities, session_id),
                                          Framing.END_OF_MESSAGE))
            self.statistics.session_started()
            if await self._receive_hello(session):
                while (message := await self._next_message(session)) is not None:
                    if not await self._answer(session, message):
                        break
        except FramingError as error:
            log.info("%s session %d: %s; closing it", self.name, session_id, error)
        except (asyncssh.Error, ConnectionError, BrokenPipeError) as error:
            log.info("%s session %d lost: %s", self.name, session_id, error)
        finally:
            await self._end(session)

    async def _end(self, session: NetconfSession) -> None:
        if session.ended:
            self.sessions.pop(session.session_id, None)
            return
        session.ended = True
        if session.ending is None:  # counted before the session leaves the list
            self.statistics.session_dropped()
        self.sessions.pop(session.session_id, None)
        try:
            session.close()
        except Exception:  # the channel may be gone already
            log.debug("closing session %d", session.session_id, exc_info=True)
        hook = self.on_session_end
        if hook is None:
            return
        if inspect.iscoroutinefunction(hook) or self.worker is None:
            result = hook(session)
            if inspect.isawaitable(result):
                await result
        else:  # with the datastore operations, in their order
            await self.in_worker(hook, session)

    async def in_worker(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in this server's worker thread, after the work queued
        before it (RPCs, ended sessions); the server must have been started."""
        if self.worker is None:
            raise RuntimeError(f"{self.name} is not started")
        return await self.worker.run(function, *args)

    async def _next_message(self, session: NetconfSession) -> bytes | None:
        while (message := session.decoder.next_message()) is None:
            data = await session.read()
            if not data:
                return None
            session.decoder.feed(data)
        return message

    async def _receive_hello(self, session: NetconfSession) -> bool:
        raw = await self._next_message(session)
        if raw is None:
            return False
        try:
            hello = messages.parse_hello(raw)
        except MessageError as error:
            return self._bad_hello(session, f"bad hello: {error}")
        if hello.session_id is not None:
            return self._bad_hello(session, "client hello has a session-id")
        if not {BASE_1_0, BASE_1_1} & set(hello.capabilities) & set(self.capabilities):
            return self._bad_hello(session, "no common base version")
        session.client_capabilities = hello.capabilities
        session.framing = negotiate(self.capabilities, hello.capabilities)
        return True

    def _bad_hello(self, session: NetconfSession, why: str) -> bool:
        log.info("%s session %d: %s", self.name, session.session_id, why)
        session.ending = Ending.BAD_HELLO
        self.statistics.bad_hello()
        return False

    # ---- one RPC ------------------------------------------------------------------------

    async def _answer(self, session: NetconfSession, raw: bytes) -> bool:
        """Answer one message, with the transport faults; ``False`` ends the session."""
        faults = self.faults
        if faults.is_active("freeze"):
            return True
        if faults.consume("drop") is not None:
            session.close()
            return False
        if faults.consume("reset") is not None:
            session.abort()
            return False
        reply, go_on = await self._execute(session, raw)
        latency = faults.consume("latency")
        if latency is not None and latency.seconds:
            await asyncio.sleep(latency.seconds)
        if faults.is_active("freeze"):
            return True
        if faults.consume("garbage") is not None:
            reply = bytes(self._noise.choice(_NOISE) for _ in range(max(16, len(reply) // 4)))
        framed = encode(reply, session.framing)
        if faults.consume("truncate") is not None:
            framed = framed[: max(1, len(framed) // 2)]
        await session.send_raw(framed)
        if not go_on:  # close-session: the reply reaches the client before the close
            await session.finish()
        return go_on

    async def _execute(self, session: NetconfSession, raw: bytes) -> tuple[bytes, bool]:
        """The reply to one message, and whether the session goes on after it.

        Parsing, a plain handler and the reply's serialisation run in the worker; the
        built-in operations and coroutine handlers run here, on the loop."""
        prepared = await self.in_worker(self._prepare, session, raw)
        if isinstance(prepared, _Reply):
            return self._counted(session, prepared), True
        rpc, handler = prepared
        try:
            payload, go_on = await self._run_on_loop(session, rpc, handler)
        except Exception as error:  # every failure becomes an rpc-error
            return self._counted(session, _Reply(self._error_reply(rpc, error), True)), True
        return messages.reply(rpc.attributes, payload), go_on

    def _counted(self, session: NetconfSession, reply: _Reply) -> bytes:
        if reply.error:
            self.statistics.count(session, "out_rpc_errors")
        return reply.data

    def _prepare(self, session: NetconfSession, raw: bytes) -> _Reply | tuple[Rpc, Handler | None]:
        """In the worker: the reply, or the RPC and its coroutine handler (``None`` for a
        built-in operation) when the loop must run it."""
        try:
            rpc = messages.parse_rpc(raw)
        except MessageError as error:
            self.statistics.count(session, "in_bad_rpcs")
            tag = "malformed-message" if session.framing is Framing.CHUNKED else "operation-failed"
            return _Reply(messages.error_reply(
                (), [RpcError(tag, str(error), error_type="rpc")]), True)
        except EnvelopeError as error:
            self.statistics.count(session, "in_bad_rpcs")
            return _Reply(messages.error_reply(error.attributes, [error.error]), True)
        self.statistics.count(session, "in_rpcs")  # before it runs: a <get> counts itself
        namespace = rpc.operation_namespace or ""
        name = rpc.operation_name
        if namespace == NETCONF_NS and name in ("close-session", "kill-session"):
            return rpc, None
        handler = self._handlers.get((namespace, name))
        if handler is not None and inspect.iscoroutinefunction(handler):
            return rpc, handler
        try:
            if handler is None:
                raise RpcError("operation-not-supported",
                               f"operation {name!r} is not supported", error_type="protocol")
            payload = handler(session, rpc.element)
            if inspect.isawaitable(payload):  # a callable object returning a coroutine
                raise TypeError(f"the handler of {name} returned an awaitable; register "
                                "a coroutine function")
        except Exception as error:  # every failure becomes an rpc-error
            return _Reply(self._error_reply(rpc, error), True)
        return _Reply(messages.reply(rpc.attributes, payload), False)

    def _error_reply(self, rpc: Rpc, error: Exception) -> bytes:
        if isinstance(error, RpcErrors):
            return messages.error_reply(rpc.attributes, error.errors)
        if isinstance(error, RpcError):
            return messages.error_reply(rpc.attributes, [error])
        # a bug above the protocol layer: answer, log, go on
        log.error("%s: %s failed", self.name, rpc.operation_name, exc_info=error)
        failure = RpcError("operation-failed", f"internal error: {error!r}")
        return messages.error_reply(rpc.attributes, [failure])

    async def _run_on_loop(self, session: NetconfSession, rpc: Rpc,
                           handler: Handler | None) -> tuple[HandlerResult, bool]:
        if handler is None and rpc.operation_name == "close-session":
            session.ending = Ending.CLOSE_SESSION
            return None, False
        if handler is None:  # kill-session
            await self._kill_session(session, rpc.operation)
            return None, True
        result = handler(session, rpc.element)
        if inspect.isawaitable(result):
            result = await result
        return result, True

    async def _kill_session(self, session: NetconfSession, operation: _Element) -> None:
        element = operation.find(qname("session-id"))
        if element is None:
            raise RpcError("missing-element", "kill-session needs a session-id",
                           error_type="protocol", info={"bad-element": "session-id"})
        text = (element.text or "").strip()
        target = self.sessions.get(int(text)) if _digits(text) else None
        if target is None or target is session:
            why = "is this session" if target is session else "is not an open session"
            raise RpcError("invalid-value", f"session-id {text!r} {why}",
                           error_type="protocol", info={"bad-element": "session-id"})
        target.ending = Ending.KILL_SESSION
        await target.kill()


class _SshConnection(asyncssh.SSHServer):
    """One SSH connection: authentication, and a netconf-only session."""

    def __init__(self, server: NetconfServer):
        self._server = server
        self._connection: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._connection = conn
        self._server._connections.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._connection is not None:
            self._server._connections.discard(self._connection)

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return bool(self._server._passwords)

    def validate_password(self, username: str, password: str) -> bool:
        return self._server.check_password(username, password)

    def public_key_auth_supported(self) -> bool:
        return bool(self._server._keys)

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return self._server.check_public_key(username, key)

    def session_requested(self) -> asyncssh.SSHServerSession[bytes]:
        return _NetconfOnlyProcess(self._server.serve, None, 0, False)


class _NetconfOnlyProcess(asyncssh.SSHServerProcess[bytes]):
    """A session channel that accepts the netconf subsystem and nothing else."""

    def shell_requested(self) -> bool:
        return False

    def exec_requested(self, command: str) -> bool:
        return False

    def subsystem_requested(self, subsystem: str) -> bool:
        return subsystem == "netconf"


def _public_key(key: str | asyncssh.SSHKey) -> asyncssh.SSHKey:
    return asyncssh.import_public_key(key) if isinstance(key, str) else key
