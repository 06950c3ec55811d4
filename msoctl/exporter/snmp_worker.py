"""The exporter's SNMP worker: one process with one asyncio event loop for every
CPO/CPC collection.

Why a process: decoding a switch's telemetry (some 4,000 variables through
pysnmp, pure Python) takes about a second of CPU. Run in the exporter's own
process, it holds the GIL in 5 ms slices against the threads of the other
probes, whose every socket read then waits for the GIL again: measured on the
lab, an amplifier or OCS probe went from about 0.1 s to 0.7-1.4 s while a CPO
probe ran, past a 1 s scrape's budget. In a process of its own the SNMP work
delays nobody; its results come back pickled (typed dataclasses).

The worker is ``python -m msoctl.exporter.snmp_worker FD``, FD one end of a socket
pair wrapped in a :class:`multiprocessing.connection.Connection` (not a
multiprocessing child: that would import the parent's main module again).
Protocol: the exporter sends
``(request_id, SnmpTarget, budget_seconds, surfaces)``; the worker answers each with
``(request_id, "ok", SnmpTelemetry, cpu_seconds)`` or
``(request_id, "error", (error class name, message), cpu_seconds)``, in any order,
collections running concurrently on its loop; ``None`` stops it. A worker that
dies fails the requests it held (:class:`DeviceUnreachable`) and is started
again at the next request.

``surfaces`` ``("auto",)``: the worker probes which surfaces an agent serves at its
first collection and remembers it for :data:`PROBE_EVERY_SECONDS` (a switch's software
does not change between two scrapes), or until a collection of it fails.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from multiprocessing.connection import Connection
from typing import Any

from drivers import errors
from drivers.errors import DeviceError, DeviceTimeout, DeviceUnreachable

log = logging.getLogger(__name__)

Result = Any  # drivers.snmp.surfaces.SnmpTelemetry
PROBE_EVERY_SECONDS = 600.0


def serve(connection: Connection) -> None:
    """The worker process's main function."""
    from drivers.snmp import mibs, surfaces
    from drivers.snmp.session import close_engines

    mibs.load()  # the compiled MIBs, before the first probe waits for them
    served: dict[str, tuple[float, tuple[str, ...]]] = {}

    async def collect(request_id: int, target: Any, budget: float,
                      wanted: tuple[str, ...]) -> None:
        known = served.get(target.name)
        if known is not None and time.monotonic() - known[0] > PROBE_EVERY_SECONDS:
            known = None
        try:
            found = await surfaces.collect(target, surfaces=wanted, budget_seconds=budget,
                                           served=None if known is None else known[1])
            if known is None:
                served[target.name] = (time.monotonic(), found.served)
            reply: tuple[Any, ...] = ("ok", found)
        except DeviceError as error:
            served.pop(target.name, None)
            reply = ("error", (type(error).__name__, error.message))
        except Exception as error:  # a bug here must not end the worker for everybody
            served.pop(target.name, None)
            reply = ("error", ("ProtocolError", f"SNMP collection failed: {error!r}"))
        with sending:
            connection.send((request_id, *reply, time.process_time()))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        running: set[asyncio.Task[None]] = set()
        while True:
            try:
                message = await loop.run_in_executor(None, connection.recv)
            except EOFError:
                break
            if message is None:
                break
            task = asyncio.create_task(collect(*message))
            running.add(task)
            task.add_done_callback(running.discard)
        for task in running:
            task.cancel()
        await close_engines()

    sending = threading.Lock()
    asyncio.run(main())


class SnmpWorker:
    """The exporter's side: starts the worker, sends requests, waits for answers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[int, Future[Result]] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self.cpu_seconds = 0.0
        """The worker's CPU seconds so far (as of its last answer)."""

    def start(self) -> None:
        """Start the worker (at once, so that it has imported pysnmp by the first probe)."""
        with self._lock:
            self._start_locked()

    def _start_locked(self) -> Connection:
        if self._connection is not None and self._process is not None \
                and self._process.poll() is None:
            return self._connection
        mine, theirs = socket.socketpair()
        with theirs:
            # A process group of its own: a terminal's Ctrl-C reaches the exporter's
            # group only (the exporter stops the worker itself); one landing while the
            # worker still imports, before it can ignore SIGINT, printed a traceback.
            self._process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, process_group=0)
        ours = Connection(mine.detach())
        self._connection = ours
        threading.Thread(target=self._read, args=(ours,), name="snmp-replies",
                         daemon=True).start()
        return ours

    def _read(self, connection: Connection) -> None:
        while True:
            try:
                request_id, status, payload, cpu = connection.recv()
            except (EOFError, OSError):
                break
            self.cpu_seconds = cpu
            with self._lock:
                future = self._pending.pop(request_id, None)
            if future is None:
                continue  # its prober stopped waiting
            if status == "ok":
                future.set_result(payload)
            else:
                kind, message = payload
                error_class = getattr(errors, kind, None)
                if not (isinstance(error_class, type) and issubclass(error_class, DeviceError)):
                    error_class = DeviceError
                future.set_exception(error_class(message))
        with self._lock:
            failed, self._pending = self._pending, {}
            if self._connection is connection:
                self._connection = None
        for future in failed.values():
            future.set_exception(DeviceUnreachable("the exporter's SNMP worker process ended"))

    def collect(self, target: Any, *, budget_seconds: float, device: str,
                surfaces: tuple[str, ...] = ("auto",)) -> Result:
        """One collection of ``target`` (an SnmpTarget) from ``surfaces``; DeviceTimeout
        past the budget (plus a moment for the answer to come back)."""
        future: Future[Result] = Future()
        with self._lock:
            connection = self._start_locked()
            request_id = next(self._ids)
            self._pending[request_id] = future
            try:
                connection.send((request_id, target, budget_seconds, surfaces))
            except (OSError, ValueError) as error:
                self._pending.pop(request_id, None)
                raise DeviceUnreachable(f"the SNMP worker cannot be reached: {error}",
                                        device=device) from None
        try:
            result = future.result(budget_seconds + 0.5)
        except FutureTimeout:
            with self._lock:
                self._pending.pop(request_id, None)
            raise DeviceTimeout(f"no SNMP answer within {budget_seconds:.3g} s",
                                device=device) from None
        except DeviceError as error:
            error.device = error.device or device
            raise
        return result

    def close(self) -> None:
        """Stop the worker (it closes its SNMP engines) and wait a little for it."""
        with self._lock:
            connection, process = self._connection, self._process
            self._connection = None
        if connection is None:
            return
        try:
            connection.send(None)
        except (OSError, ValueError):
            pass
        if process is not None:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.terminate()
                process.wait(timeout=5)
        connection.close()


if __name__ == "__main__":
    # The exporter stops us itself (and a SIGINT sent to our group by hand is not a stop).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(Connection(int(sys.argv[1])))
