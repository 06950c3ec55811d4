"""Line servers for SCPI instruments: raw TCP socket (port 5025 style) and a pty console.

Both feed whole lines to a :class:`ScpiInterpreter` one at a time, in order,
and carry out the transport faults of :mod:`emulators.faults`. A device that
loses power takes its TCP listener and connections down with it (clients see
the connection drop, then refusal until it has booted); the serial console's
cable stays attached, but nothing is read or answered while the device is down.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import struct
import termios
import tty
from collections.abc import Callable
from typing import Protocol

from emulators.clock import Clock
from emulators.faults import FaultInjector
from emulators.scpi.parser import ScpiInterpreter

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024


class LineDevice(Protocol):
    name: str
    clock: Clock
    faults: FaultInjector
    power_listeners: list[Callable[[bool], None]]

    def is_up(self) -> bool: ...

    def seconds_until_up(self) -> float: ...


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


class _Session:
    """One client's line stream: faults, execution, reply."""

    def __init__(
        self,
        device: LineDevice,
        interpreter: ScpiInterpreter,
        terminator: bytes,
        send: Callable[[bytes], None],
        reset: Callable[[], None],
    ):
        self.device = device
        self.interpreter = interpreter
        self.terminator = terminator
        self.send = send
        self.reset = reset
        self.buffer = bytearray()
        self.overflowed = False
        self.garbage = random.Random(f"{device.name}/garbage")

    async def feed(self, data: bytes) -> None:
        self.buffer.extend(data)
        lines = split_lines(self.buffer)
        if len(self.buffer) > MAX_LINE_BYTES:
            self.buffer.clear()
            self.overflowed = True
        for line in lines:
            if self.overflowed:  # the tail of an overlong line
                self.overflowed = False
                self.interpreter.errors.push(-223, "Too much data")
                continue
            await self.handle(line)

    async def handle(self, raw: bytes) -> None:
        faults = self.device.faults
        if faults.is_active("freeze") or not self.device.is_up():
            return
        if faults.consume("drop"):
            return
        if faults.consume("reset"):
            self.reset()
            return
        reply = await self.interpreter.execute(raw.decode("latin-1"))
        if reply is None:
            return
        latency = faults.consume("latency")
        if latency and latency.seconds:
            await asyncio.sleep(latency.seconds)
        if not self.device.is_up() or faults.is_active("freeze"):
            return
        data = reply.encode("ascii", "replace")
        if faults.consume("garbage"):
            noise = bytes(self.garbage.randrange(256) for _ in range(max(8, len(data))))
            data = noise.replace(b"\n", b"\x00").replace(b"\r", b"\x00")
        if faults.consume("truncate"):
            self.send(data[: max(1, len(data) // 2)])
            return
        self.send(data + self.terminator)


class ScpiTcpServer:
    """SCPI over a raw TCP socket; replies end in LF."""

    def __init__(
        self,
        device: LineDevice,
        interpreter: ScpiInterpreter,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.device = device
        self.interpreter = interpreter
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reopen: asyncio.Task[None] | None = None
        device.power_listeners.append(self._on_power)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._listen()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._client, self.host, self.port, reuse_address=True
        )
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
            _abort(writer)
        self._writers.clear()

    def _on_power(self, up: bool) -> None:
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

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.device.is_up():
            _abort(writer)
            return
        self._writers.add(writer)
        session = _Session(
            self.device, self.interpreter, b"\n", writer.write, lambda: _abort(writer)
        )
        try:
            while not writer.is_closing():
                data = await reader.read(4096)
                if not data:
                    break
                await session.feed(data)
                if not writer.is_closing():
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            if not writer.is_closing():
                writer.close()


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with RST, as a crashed or powered-off peer's kernel would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()


class ScpiPtyServer:
    """SCPI on a pseudo-terminal: a serial console at 38400 8N1; replies end in CR.

    ``path`` is the slave side (``/dev/pts/N``) that a client opens with pyserial
    or a VISA ``ASRL`` resource.
    """

    def __init__(self, device: LineDevice, interpreter: ScpiInterpreter, *, baud: int = 38400):
        self.device = device
        self.interpreter = interpreter
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
        self._session = _Session(device, interpreter, b"\r", self._write, lambda: None)

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

