"""Line servers: raw TCP socket (port 5025 style) and a pty console.

Used by the SCPI instruments and by the amplifier's serial I2C bridge. Both
feed whole lines to a :class:`LineInterpreter` (a :class:`ScpiInterpreter`,
say) one at a time, in order, and carry out the transport faults of
:mod:`emulators.faults` (those the server is told to honour).

A server is given either one interpreter that every client shares (a line
protocol without per-client state, as the I2C bridge's) or a function that
makes one per client: an SCPI instrument's, so that each TCP connection, and
the console, has its own error queue and status registers.

Lines: over TCP a program message ends with LF (IEEE 488.2's terminator; a
CR before it is white space and dropped), so a CR inside a line is white
space, as 488.2 has it. On the console, CR or LF ends a line, as a terminal's
Enter key sends either. A device that
loses power takes its TCP listener and connections down with it (clients see
the connection drop, then refusal until it has booted); the serial console's
cable stays attached, but nothing is read or answered while the device is down.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import termios
import tty
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Protocol, SupportsIndex

from emulators.clock import Clock, RealClock, arrived_at
from emulators.faults import TRANSPORT_FAULTS, FaultInjector
from emulators.http import reset_connection
from emulators.scpi.arrival import listening_socket, take_arrival

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024


class LineDevice(Protocol):
    name: str
    clock: Clock
    faults: FaultInjector
    power_listeners: list[Callable[[bool], None]]

    def is_up(self) -> bool: ...

    def seconds_until_up(self) -> float: ...


class LineInterpreter(Protocol):
    async def execute(self, line: str) -> str | bytes | None:
        """The reply to one line (without terminator), or ``None`` for no reply.

        ``bytes`` go out as they are (binary block data); text is sent as ASCII.
        """

    def line_too_long(self) -> str | None:
        """The reply to a line longer than the server buffers, or ``None``."""


class ReopensAfterPowerLoss(ABC):
    """A TCP server that a power loss of its device takes down: every client dropped and
    the listening socket closed at once, as a unit losing power does; it listens again
    (on the same port) once the device is up. A subclass gives ``_listen`` and
    ``_drop_everything``, sets ``self._loop`` when it starts and calls
    :meth:`_follow_power` from ``__init__``; ``_reopened`` runs after each reopening."""

    device: LineDevice
    _loop: asyncio.AbstractEventLoop | None
    _reopen: asyncio.Task[None] | None

    def _follow_power(self) -> None:
        self._loop = None
        self._reopen = None
        self.device.power_listeners.append(self._on_power)

    @abstractmethod
    async def _listen(self) -> None:
        """Listen on ``self.port`` (its own again after a power loss)."""

    @abstractmethod
    def _drop_everything(self) -> None:
        """Close the listening socket and drop every client at once."""

    def _reopened(self) -> None:
        """What to do once listening again: nothing, unless a server says otherwise."""
        return None

    def _on_power(self, up: bool) -> None:  # from the device's thread
        if not up and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._power_lost)

    def _power_lost(self) -> None:
        self._drop_everything()
        if self._reopen is None or self._reopen.done():
            self._reopen = asyncio.ensure_future(self._reopen_when_up())

    async def _reopen_when_up(self) -> None:
        while not self.device.is_up():
            await self.device.clock.sleep(max(0.001, min(self.device.seconds_until_up(), 0.05)))
        await self._listen()
        self._reopened()


def split_lines(buffer: bytearray) -> list[bytes]:
    """Take every complete line (CR, LF or CR LF terminated) out of ``buffer``."""
    lines: list[bytes] = []
    start = 0
    for index, byte in enumerate(buffer):
        if byte in (10, 13):
            lines.append(bytes(buffer[start:index]))
            start = index + 1
    del buffer[:start]
    return [line for line in lines if line.strip()]


def split_lf_lines(buffer: bytearray) -> list[bytes]:
    """Take every complete LF-terminated line out of ``buffer``, blank ones too; a CR
    before the LF is dropped (CR LF is accepted as a line end)."""
    lines: list[bytes] = []
    while (end := buffer.find(b"\n")) >= 0:
        line = bytes(buffer[:end])
        del buffer[:end + 1]
        lines.append(line[:-1] if line.endswith(b"\r") else line)
    return lines


Splitter = Callable[[bytearray], list[bytes]]
Interpreters = LineInterpreter | Callable[[], LineInterpreter]
"""One interpreter shared by every client, or a function making one per client."""


def _per_client(interpreter: Interpreters) -> Callable[[], LineInterpreter]:
    if callable(interpreter):
        return interpreter
    return lambda: interpreter


class _Session:
    """One client's line stream: faults, execution, reply."""

    def __init__(
        self,
        device: LineDevice,
        interpreter: LineInterpreter,
        terminator: bytes,
        send: Callable[[bytes], None],
        reset: Callable[[], None],
        *,
        transport_faults: frozenset[str] = TRANSPORT_FAULTS,
        split: Splitter = split_lines,
    ):
        self.device = device
        self.transport_faults = transport_faults
        self.split = split
        self.interpreter = interpreter
        self.terminator = terminator
        self._write = send
        self._out: list[bytes] | None = None  # replies held while a message is carried out
        self.reset = reset
        self.buffer = bytearray()
        self.overflowed = False
        self.garbage = random.Random(f"{device.name}/garbage")
        self.last_done: float | None = None  # device time the last line was carried out

    def send(self, data: bytes) -> None:
        """Reply ``data``: at once, or with the other replies to the lines being carried
        out (:meth:`feed`)."""
        if self._out is not None:
            self._out.append(data)
        else:
            self._write(data)

    async def feed(self, data: bytes, received_at: float | None = None) -> None:
        """Carry out the lines ``data`` completes; ``received_at``: the device time it
        arrived (:data:`~emulators.clock.COMMAND_READY_AT`), now if not given. The
        replies to the lines that came together leave together once the last is carried
        out, in one write (a change, its ``*OPC?``, its error queue and its read-back:
        one segment, not three), unless a line waits (``*OPC?`` for a switch): what was
        answered before it leaves then, as from the output queue of a unit that sends
        what it has whenever it has to wait."""
        self._out = []
        try:
            await self._feed(data, received_at)
        finally:
            self._flush()
            self._out = None

    def _flush(self) -> None:
        if self._out:
            out, self._out = b"".join(self._out), []
            self._write(out)

    async def _feed(self, data: bytes, received_at: float | None) -> None:
        self.buffer.extend(data)
        arrived = self.device.clock.now() if received_at is None else received_at
        lines = self.split(self.buffer)
        if len(self.buffer) > MAX_LINE_BYTES:
            self.buffer.clear()
            self.overflowed = True
        for line in lines:
            if self.overflowed:  # the tail of an overlong line
                self.overflowed = False
                reply = self.interpreter.line_too_long()
                if reply is not None:
                    self.send(reply.encode("ascii", "replace") + self.terminator)
                continue
            ready = arrived if self.last_done is None else max(arrived, self.last_done)
            # runs only if this line waits (the loop gets to it only then)
            waiting = asyncio.get_running_loop().call_soon(self._flush) if self._out else None
            try:
                with arrived_at(ready):
                    await self.handle(line)
            finally:
                if waiting is not None:
                    waiting.cancel()
                self.last_done = self.device.clock.now()

    def _fault(self, kind: str) -> bool:
        return kind in self.transport_faults and self.device.faults.consume(kind) is not None

    async def handle(self, raw: bytes) -> None:
        faults = self.device.faults
        frozen = "freeze" in self.transport_faults and faults.is_active("freeze")
        if frozen or not self.device.is_up():
            return
        if self._fault("drop"):
            return
        if self._fault("reset"):
            self._flush()  # what was answered before the reset has left
            self.reset()
            return
        reply = await self.interpreter.execute(raw.decode("latin-1"))
        if reply is None:
            return
        latency = faults.consume("latency") if "latency" in self.transport_faults else None
        if latency and latency.seconds:
            await asyncio.sleep(latency.seconds)
        frozen = "freeze" in self.transport_faults and faults.is_active("freeze")
        if not self.device.is_up() or frozen:
            return
        data = reply if isinstance(reply, bytes) else reply.encode("ascii", "replace")
        if self._fault("garbage"):
            noise = bytes(self.garbage.randrange(256) for _ in range(max(8, len(data))))
            data = noise.replace(b"\n", b"\x00").replace(b"\r", b"\x00")
        if self._fault("truncate"):
            self.send(data[: max(1, len(data) // 2)])
            return
        self.send(data + self.terminator)


class ScpiTcpServer(ReopensAfterPowerLoss):
    """Lines over a raw TCP socket (SCPI, the I2C bridge); replies end in LF."""

    def __init__(
        self,
        device: LineDevice,
        interpreter: Interpreters,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        transport_faults: frozenset[str] = TRANSPORT_FAULTS,
        split: Splitter = split_lf_lines,
    ):
        self.device = device
        self.new_interpreter = _per_client(interpreter)
        self.transport_faults = transport_faults
        self.split = split
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._follow_power()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._listen()

    async def _listen(self) -> None:
        loop = asyncio.get_running_loop()
        clock = self.device.clock

        def protocol() -> asyncio.StreamReaderProtocol:
            return asyncio.StreamReaderProtocol(_StampedReader(clock), self._client)

        self._server = await loop.create_server(
            protocol, sock=listening_socket(self.host, self.port))
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._reopen is not None:
            self._reopen.cancel()
        self._drop_everything()

    def _drop_everything(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            reset_connection(writer)
        self._writers.clear()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.device.is_up():
            reset_connection(writer)
            return
        self._writers.add(writer)
        session = _Session(
            self.device, self.new_interpreter(), b"\n", writer.write,
            lambda: reset_connection(writer), transport_faults=self.transport_faults,
            split=self.split,
        )
        stamped = reader if isinstance(reader, _StampedReader) else None
        try:
            while not writer.is_closing():
                data = await reader.read(4096)
                if not data:
                    break
                await session.feed(data, None if stamped is None else stamped.received_at)
                if not writer.is_closing():
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            if not writer.is_closing():
                writer.close()


class _StampedReader(asyncio.StreamReader):
    """A stream that notes the device time its newest bytes arrived: when the kernel
    received them (emulators/scpi/arrival.py), on a clock that runs in real time; when
    the loop read them otherwise (a stepped clock's time is the test's, not the
    kernel's)."""

    def __init__(self, clock: Clock):
        super().__init__()
        self.clock = clock
        self.received_at: float | None = None

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        ago = take_arrival()  # asyncio calls this right after the socket's recv
        now = self.clock.now()
        self.received_at = now - ago if ago is not None and isinstance(
            self.clock, RealClock) else now
        super().feed_data(data)


class ScpiPtyServer:
    """Lines on a pseudo-terminal: a serial console, by default SCPI at 38400 8N1
    with replies ending in CR.

    ``path`` is the slave side (``/dev/pts/N``) that a client opens with pyserial
    or a VISA ``ASRL`` resource.
    """

    def __init__(
        self,
        device: LineDevice,
        interpreter: Interpreters,
        *,
        baud: int = 38400,
        terminator: bytes = b"\r",
        transport_faults: frozenset[str] = TRANSPORT_FAULTS,
        split: Splitter = split_lines,
    ):
        self.device = device
        self.interpreter = _per_client(interpreter)()  # the console is one client, for good
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        attrs = termios.tcgetattr(self._slave)
        speed = getattr(termios, f"B{baud}")
        attrs[4] = attrs[5] = speed
        termios.tcsetattr(self._slave, termios.TCSANOW, attrs)
        os.set_blocking(self.master, False)
        self.path = os.ttyname(self._slave)
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session = _Session(device, self.interpreter, terminator, self._write, lambda: None,
                                 transport_faults=transport_faults, split=split)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.master, self._readable)
        self._task = asyncio.ensure_future(self._run())

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            self._queue.put_nowait(data)

    async def _run(self) -> None:
        while True:
            data = await self._queue.get()
            if not self.device.is_up():
                continue  # a powered-off device reads nothing from its console
            await self._session.feed(data)

    def _write(self, data: bytes) -> None:
        try:
            os.write(self.master, data)
        except BlockingIOError:
            log.warning("%s console: output dropped, nobody is reading", self.device.name)

    async def stop(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.master)
        if self._task is not None:
            self._task.cancel()
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

