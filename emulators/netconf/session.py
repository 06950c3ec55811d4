"""One NETCONF session: its id, the client's hello, its framing, its SSH channel, and what
RFC 6022 reports of it (where from, since when, its counters, how it ended)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from enum import Enum

import asyncssh

from emulators.netconf.framing import Decoder, Framing, encode
from emulators.netconf.monitoring import Counters, now

READ_BYTES = 64 * 1024
# How long a politely ended session waits for the client to close its side of the
# channel (ncclient does so as soon as it has read the reply to close-session).
CLOSE_GRACE_SECONDS = 2.0


class Ending(Enum):
    """How a session ended, where RFC 6022 tells the endings apart (anything else is a
    dropped session)."""

    CLOSE_SESSION = "close-session"
    KILL_SESSION = "kill-session"
    BAD_HELLO = "bad-hello"


class NetconfSession:
    """The state the protocol layer keeps for one client session.

    ``session_id`` is unique within the server (from 1). ``client_capabilities``
    is empty until the client's hello has arrived; ``framing`` becomes chunked
    after the hellos when both list base:1.1. Layers above keep their own
    per-session state keyed by ``session_id`` (locks, say) and drop it in the
    server's ``on_session_end`` hook. ``source_host`` is the client's address
    (``None`` when the transport does not tell), ``login_time`` when the netconf
    subsystem started, ``counters`` its RFC 6022 counters, ``ending`` how it ended
    (``None`` while it runs, and for a session dropped).
    """

    def __init__(self, session_id: int, username: str,
                 process: asyncssh.SSHServerProcess[bytes]):
        self.session_id = session_id
        self.username = username
        self.client_capabilities: tuple[str, ...] = ()
        self.decoder = Decoder()
        self._process = process
        self._task: asyncio.Task[None] | None = None
        self.ended = False
        self.ending: Ending | None = None
        self.login_time: datetime = now()
        self.counters = Counters()
        peer = process.get_extra_info("peername")
        self.source_host: str | None = str(peer[0]) if isinstance(peer, tuple) and peer \
            else None

    @property
    def framing(self) -> Framing:
        return self.decoder.framing

    @framing.setter
    def framing(self, framing: Framing) -> None:
        self.decoder.framing = framing

    def bind_task(self, task: asyncio.Task[None] | None) -> None:
        """The task that serves this session (the one ``kill`` cancels)."""
        self._task = task

    async def read(self) -> bytes:
        """The next bytes from the client, ``b""`` when the channel is closed."""
        return await self._process.stdin.read(READ_BYTES)

    async def send_message(self, message: bytes) -> None:
        await self.send_raw(encode(message, self.framing))

    async def send_raw(self, data: bytes) -> None:
        self._process.stdout.write(data)
        await self._process.stdout.drain()

    def close(self) -> None:
        """End the SSH connection at once, with a disconnect message: what is still
        queued for the client may be lost (kill-session, the drop fault)."""
        if not self._process.is_closing():
            self._process.exit(0)
        connection = self._connection()
        if connection is not None:
            connection.close()

    async def finish(self, grace_seconds: float = CLOSE_GRACE_SECONDS) -> None:
        """End the session so that everything written reaches the client first
        (RFC 6241 7.8: the ``<ok/>`` to close-session, then the close).

        The channel is closed after its last byte (exit status, EOF, close), and the
        SSH connection only once the client has closed its side too, or after
        ``grace_seconds``. Closing the connection at once would drop the TCP stream
        with bytes still on their way: asyncssh aborts the transport, and a socket
        closed with unread input (a request the client sent meanwhile, its own EOF)
        is reset, which can discard the reply at the client before it is read.
        """
        if not self._process.is_closing():
            self._process.exit(0)
        with contextlib.suppress(asyncio.TimeoutError, asyncssh.Error, ConnectionError):
            await asyncio.wait_for(self._process.wait_closed(), grace_seconds)
        self.close()

    def abort(self) -> None:
        """Drop the SSH connection's TCP stream at once, as a crashed server would."""
        connection = self._connection()
        if connection is not None:
            connection.abort()

    async def kill(self) -> None:
        """Stop serving this session (kill-session) and wait until it has ended."""
        self.close()
        task = self._task
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({task})

    def _connection(self) -> asyncssh.SSHServerConnection | None:
        connection = self._process.get_extra_info("connection")
        return connection if isinstance(connection, asyncssh.SSHServerConnection) else None
