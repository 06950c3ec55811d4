"""The one injectable clock every emulator reads time from.

Device physics (LC switching, cell warm-up, later ALS timers) is evaluated
lazily against ``clock.now()``; servers wait through ``clock.sleep()``. So the
same model runs in real time in the lab and in benchmarks, and stepped in tests,
where a wait jumps the clock instead of sleeping.

Transport faults (added latency, a frozen console) are network behaviour and
use real time, because the driver's timeout they exercise is real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Protocol

COMMAND_READY_AT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "command_ready_at", default=None)
"""While a transport has a command carried out: the device time from which the unit
could have carried it out: the moment the whole command had reached it, or the one its
previous command on that connection was done, whichever is later (``None``: now). An
emulated unit starts timed work (a reconfiguration) then rather than when the
emulator's interpreter got round to it: the lab runs several units in one process, one
command at a time, where each real unit has its own processor and does not wait for
the others' commands."""


class Clock(Protocol):
    def now(self) -> float:
        """Device time in seconds; only differences are meaningful."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of device time."""


@contextlib.contextmanager
def arrived_at(when: float | None) -> Iterator[None]:
    """Commands carried out in the block had reached their unit at device time ``when``
    (:data:`COMMAND_READY_AT`; ``None``: now)."""
    token = COMMAND_READY_AT.set(when)
    try:
        yield
    finally:
        COMMAND_READY_AT.reset(token)


def command_time(clock: Clock) -> float:
    """When the unit began the command being carried out: the moment it could have
    (:data:`COMMAND_READY_AT`), or now where no transport says or now is earlier."""
    now = clock.now()
    ready = COMMAND_READY_AT.get()
    return now if ready is None else min(now, ready)


class RealClock:
    """Wall-clock time (monotonic)."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            await asyncio.sleep(seconds)


class SteppedClock:
    """Time moves only when told: ``advance()``, or a wait that jumps over itself.

    With ``jump_on_sleep`` (the default) a device that waits 100 s finishes its
    wait at once and the clock has moved 100 s, which keeps tests fast and
    deterministic.
    """

    def __init__(self, start: float = 0.0, *, jump_on_sleep: bool = True):
        self._now = start
        self._lock = threading.Lock()
        self.jump_on_sleep = jump_on_sleep

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not run backwards")
        with self._lock:
            self._now += seconds

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        if self.jump_on_sleep:
            with self._lock:
                self._now += seconds
            await asyncio.sleep(0)
            return
        deadline = self.now() + seconds
        while self.now() < deadline:
            await asyncio.sleep(0.001)
