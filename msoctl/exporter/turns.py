"""Turns for device readings: at most N at a time, the newest waiter served first.

The prober takes at most ``--max-readings`` readings at once (see
:mod:`msoctl.exporter.probe`). When more probes want a turn than there are, they
wait; the question is who gets the next free turn. First come, first served gives
it to the probe that has waited longest, which has the least of its budget left: on
a host short of CPU (a fleet's scrapes while the exporter starts, a busy machine)
that probe's reading tends to end after Prometheus has given up, the CPU it used
was for nothing, and the probes behind it wait longer still. Such a backlog feeds
itself: once behind, every reading starts late.

So a free turn goes to the waiter with the most budget left (the latest deadline:
normally the newest), and never to one with less than ``min_seconds`` left, which
gives up at once instead (``msoctl_up 0`` with reason ``budget``, costing no device
exchange and next to no CPU). Under a load the exporter can serve, nobody waits
and nothing changes; past it, the probes served are those that can still finish,
and a backlog drains instead of growing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class _Waiter:
    deadline: float
    granted: bool = False
    woken: threading.Event = field(default_factory=threading.Event)


class Turns:
    """``count`` turns (>= 1; ValueError otherwise). Thread-safe."""

    def __init__(self, count: int, *, min_seconds: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        """``min_seconds`` (>= 0): a waiter with less than this left of its deadline is
        given no turn."""
        if count < 1:
            raise ValueError(f"turns {count}: 1 or more")
        if min_seconds < 0:
            raise ValueError(f"min_seconds {min_seconds}: 0 or more")
        self.count = count
        self.min_seconds = min_seconds
        self._clock = clock
        self._free = count
        self._waiting: list[_Waiter] = []
        self._lock = threading.Lock()

    def acquire(self, deadline: float) -> bool:
        """A turn, waiting at most until ``min_seconds`` before ``deadline`` (a
        ``time.monotonic()`` value); False when none came by then (nothing to
        release)."""
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return True
            waiter = _Waiter(deadline)
            self._waiting.append(waiter)
        waiter.woken.wait(max(0.0, deadline - self.min_seconds - self._clock()))
        with self._lock:
            if not waiter.granted and waiter in self._waiting:
                self._waiting.remove(waiter)
            return waiter.granted

    def release(self) -> None:
        """Give a turn back: to the waiter with the latest deadline that still has
        ``min_seconds`` left, or to the pool; the waiters left with less give up."""
        with self._lock:
            latest = self._clock() + self.min_seconds
            while self._waiting:
                waiter = max(self._waiting, key=lambda w: w.deadline)
                self._waiting.remove(waiter)
                if waiter.deadline >= latest:
                    waiter.granted = True
                    waiter.woken.set()
                    return
                # the latest has too little left: so have all the others
                for late in (waiter, *self._waiting):
                    late.woken.set()
                self._waiting.clear()
            if self._free >= self.count:
                raise ValueError("turn released more often than acquired")
            self._free += 1

    @property
    def waiting(self) -> int:
        """Waiters now (for the exporter's own metrics)."""
        with self._lock:
            return len(self._waiting)
