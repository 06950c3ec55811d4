"""Device sessions the exporter keeps open between probes.

An OCS probe used to open a TCP connection to the unit, send its queries and close
it: a unit scraped every 30 s saw a new connection every 30 s. A unit has a limited
number of connections and a limited command rate, and every connection costs both
ends a handshake, the VISA resource's set-up and the close. So the exporter keeps
one connection per unit open between probes, and a unit sees one long-lived
connection instead.

Rules of the pool (:class:`SessionPool`):

- keyed by what the connection is to (device name, transport, address, line
  terminations): an inventory that moves a device gets a new connection;
- one probe at a time per session: a probe takes the session out of the pool and
  gives it back when its reading is complete, so two probes never interleave on one
  stream (the prober reads one device at a time anyway);
- discarded (closed) on any error of the probe that held it: a timeout may leave a
  late reply on the stream, and a fresh connection starts clean;
- closed once idle for longer than ``idle_seconds`` (a few scrape intervals: a
  device no longer scraped is not held), and the longest idle one closed first when
  more than ``max_sessions`` are idle;
- each probe still is a fresh reading: the pool keeps the connection only, the
  driver on top of it (and anything it caches, such as the port count) is new for
  every probe, and it sends the same queries as on a new connection.

A held connection the device has closed meanwhile (a restart, an idle timeout of
its own) fails the first exchange; the collector then reads once more on a new
connection (see :mod:`msoctl.exporter.ocs`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from drivers.scpi.session import ScpiSession

log = logging.getLogger(__name__)

DEFAULT_IDLE_SECONDS = 120.0
"""A held session unused this long is closed: four 30 s scrape intervals."""
DEFAULT_MAX_SESSIONS = 4096
"""Idle sessions held at most: more than a shard's devices of a 2,000-target fleet."""


@dataclass
class _Idle:
    session: ScpiSession
    since: float  # time.monotonic() when it was given back


class SessionPool:
    """Idle SCPI sessions by key, each taken by one probe at a time. Thread-safe."""

    def __init__(self, *, idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 max_sessions: int = DEFAULT_MAX_SESSIONS,
                 clock: Callable[[], float] = time.monotonic):
        """``idle_seconds`` (> 0): how long an unused session is kept; ``max_sessions``
        (>= 0, 0 keeps none): idle sessions kept at most. ValueError otherwise."""
        if idle_seconds <= 0:
            raise ValueError(f"idle_seconds {idle_seconds}: more than 0")
        if max_sessions < 0:
            raise ValueError(f"max_sessions {max_sessions}: 0 or more")
        self.idle_seconds = idle_seconds
        self.max_sessions = max_sessions
        self._clock = clock
        self._idle: dict[Hashable, _Idle] = {}
        self._lock = threading.Lock()
        self.opened = 0  # sessions made by callers after a miss (see take)
        self.reused = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._idle)

    def take(self, key: Hashable) -> ScpiSession | None:
        """The idle session of ``key``, now the caller's alone; ``None`` when there is
        none (the caller opens one and may :meth:`give_back` it)."""
        expired = []
        with self._lock:
            expired = self._expire()
            held = self._idle.pop(key, None)
            if held is None:
                self.opened += 1
            else:
                self.reused += 1
        _close(expired)
        return None if held is None else held.session

    def give_back(self, key: Hashable, session: ScpiSession) -> None:
        """Keep ``session`` (whose last exchange completed without error) for the next
        probe of ``key``. A session already held for ``key`` is closed: one per key."""
        with self._lock:
            expired = self._expire()
            previous = self._idle.pop(key, None)
            if previous is not None:
                expired.append(previous.session)
            self._idle[key] = _Idle(session, self._clock())
            while len(self._idle) > self.max_sessions:  # the longest idle goes first
                oldest = next(iter(self._idle))
                expired.append(self._idle.pop(oldest).session)
        _close(expired)

    def close(self) -> None:
        """Close every idle session (the exporter stops)."""
        with self._lock:
            sessions = [held.session for held in self._idle.values()]
            self._idle.clear()
        _close(sessions)

    def _expire(self) -> list[ScpiSession]:
        # dicts keep insertion order, and give_back re-inserts: the oldest come first
        limit = self._clock() - self.idle_seconds
        expired = []
        while self._idle:
            key = next(iter(self._idle))
            if self._idle[key].since > limit:
                break
            expired.append(self._idle.pop(key).session)
        return expired


def _close(sessions: list[ScpiSession]) -> None:
    for session in sessions:
        try:
            session.close()
        except Exception:  # a session that fails to close is gone anyway
            log.debug("%s: close of an idle session", session.device, exc_info=True)
