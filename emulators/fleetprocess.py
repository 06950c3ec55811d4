"""Many emulated devices in a process of their own, for benchmarks, controlled over
two multiprocessing pipes.

A fleet's ``serve`` function (emulators/ocs/fleet.py, emulators/switch/fleet.py) is
the target of a process of its own. It takes the two child ends last among its
positional arguments: it sends on ``ready`` one tuple per device once all of them
listen, then :func:`answer_until_stopped` answers ``"cpu"`` on ``stop`` with the
process's CPU seconds so far, until anything else comes, and the fleet stops.
:class:`FleetProcess` is the parent's side.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

from emulators.processes import process_context


async def answer_until_stopped(stop: Connection) -> None:
    """Answer ``"cpu"`` with this process's CPU seconds; return on anything else."""
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, stop.recv) == "cpu":
        stop.send(time.process_time())


class FleetProcess:
    """Start ``serve(*args, ready, stop, **kwargs)`` in a process of its own and wait, up to
    ``start_seconds``, for its devices (:attr:`devices`); RuntimeError naming ``what``
    when the process ends first or takes longer.

    With ``wait=False`` the process is started and :meth:`wait` waits for it, so that
    several fleets start side by side (a fresh fork server first imports the emulators)."""

    def __init__(self, serve: Callable[..., None], args: Sequence[Any], *, what: str,
                 kwargs: Mapping[str, Any] | None = None, start_seconds: float = 300.0,
                 wait: bool = True):
        context = process_context()
        self._what = what
        self._ready, child_ready = context.Pipe()
        self._stop, child_stop = context.Pipe()
        self._process = context.Process(target=serve, daemon=True,
                                        args=(*args, child_ready, child_stop),
                                        kwargs=dict(kwargs or {}))
        self._process.start()
        self._deadline = time.monotonic() + start_seconds
        self._start_seconds = start_seconds
        self.devices: list[tuple[Any, ...]] = []
        if wait:
            self.wait()

    def wait(self) -> list[tuple[Any, ...]]:
        """Wait for the fleet's devices (the deadline counts from the start)."""
        while not self._ready.poll(0.1):
            if not self._process.is_alive():
                raise RuntimeError(f"{self._what} did not start (its process ended)")
            if time.monotonic() > self._deadline:
                self.close()
                raise RuntimeError(f"{self._what} did not start within "
                                   f"{self._start_seconds:g} s")
        self.devices = self._ready.recv()
        return self.devices

    @property
    def pid(self) -> int:
        """The fleet's process (to sample its CPU from outside, as /proc shows it)."""
        pid = self._process.pid
        assert pid is not None  # started in __init__
        return pid

    def cpu_seconds(self) -> float:
        """CPU time the fleet's process has used so far."""
        self._stop.send("cpu")
        return float(self._stop.recv())

    def close(self) -> None:
        self._stop.send("stop")
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()
