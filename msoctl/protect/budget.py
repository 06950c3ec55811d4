"""The command rate the controller allows itself on each OCS.

A real OCS answers a limited rate of commands; the controller states the rate it
assumes (``ProtectConfig.ocs_messages_per_second``, 50 by default) and never sends more.
What is counted is every program message (line) sent to the unit: a power query with
the error-queue check behind it is two, a whole-map change is three (the change, its
``*OPC?`` fence, the error check) and its read-back a fourth.

:class:`QueryBudget` is a token bucket per OCS, shared by the watch that polls it and
the session that changes it: room for ``burst`` messages, refilled at ``per_second -
burst`` a second, so that no window of one second ever holds more than
``per_second`` messages, whatever the number of links. The watch plans its polls well
inside the refill rate (:func:`poll_interval`) and only ever takes tokens above a
reserve kept for a move's command (its map read, the change and the read-back): a
move's command is never held back by the polling it interrupts. Right after a move
the polls pause until the bucket is above the reserve again (a few hundred ms at
50 messages a second): the price of never exceeding the budget.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

POWER_QUERY_MESSAGES = 2
"""A power query and the error-queue check sent behind it."""
MAP_QUERY_MESSAGES = 1
MOVE_MESSAGES = 11
"""A move on one OCS: map read 1, change 3 (change, fence, error check), read-back 1,
the light check 2 (a power query), the switching time 4 (two queries)."""
COMMAND_MESSAGES = 5
"""What a move needs before its command has left (map read, change, read-back): the
reserve the polls leave alone."""
MIN_BURST = MOVE_MESSAGES + 2 * POWER_QUERY_MESSAGES
BURST_SHARE = 0.25
POLL_SHARE = 0.8
"""The share of the refill rate the watch plans to use: the rest refills the reserve."""
MIN_MESSAGES_PER_SECOND = 2 * MIN_BURST


class QueryBudget:
    """At most ``per_second`` messages to one OCS in any second (a token bucket).

    ``clock`` is monotonic seconds (injectable for tests of the arithmetic).
    """

    def __init__(self, per_second: float, *, clock: Callable[[], float] = time.monotonic):
        if per_second < MIN_MESSAGES_PER_SECOND:
            raise ValueError(f"a budget of {per_second:g} messages/s leaves no room for a "
                             f"move ({MIN_MESSAGES_PER_SECOND} at least)")
        self.per_second = per_second
        self.burst = max(float(MIN_BURST), per_second * BURST_SHARE)
        self.rate = per_second - self.burst
        self.reserve = float(COMMAND_MESSAGES)
        self._clock = clock
        self._tokens = self.burst
        self._at = clock()
        self._condition = threading.Condition()
        self.sent = 0
        """Messages taken so far (all of them were sent, or about to be)."""

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self, messages: int, *, urgent: bool | Callable[[], bool] = False,
             stop: threading.Event | None = None) -> bool:
        """Wait until ``messages`` may be sent, and count them as sent. A poll
        (``urgent`` false) leaves the reserve alone; a move may use it (``urgent`` may be
        a function, asked again while waiting: a poll can become a move's light check).
        A request larger than the burst waits for a full bucket. False when ``stop`` was
        set while waiting (nothing is taken then)."""
        with self._condition:
            while True:
                floor = 0.0 if (urgent() if callable(urgent) else urgent) else self.reserve
                needed = min(float(messages) + floor, self.burst)
                self._refill()
                if self._tokens >= needed:
                    self._tokens -= messages
                    self.sent += messages
                    return True
                if stop is not None and stop.is_set():
                    return False
                wait = (needed - self._tokens) / self.rate
                self._condition.wait(min(wait, 0.005 if callable(urgent) else 0.05))

    def tokens(self) -> float:
        with self._condition:
            self._refill()
            return self._tokens


def poll_interval(per_second: float, *, ports: int, map_every_seconds: float,
                  fastest_seconds: float, max_ports_per_query: int = 256) -> float:
    """Seconds between two power polls of an OCS whose ``ports`` are watched, so that the
    polls and the map reads (every ``map_every_seconds``) use at most
    :data:`POLL_SHARE` of the refill rate of a budget of ``per_second``; never faster
    than ``fastest_seconds``."""
    burst = max(float(MIN_BURST), per_second * BURST_SHARE)
    usable = (per_second - burst) * POLL_SHARE - MAP_QUERY_MESSAGES / map_every_seconds
    per_poll = POWER_QUERY_MESSAGES * max(1, math.ceil(ports / max_ports_per_query))
    if usable <= 0:
        raise ValueError(f"a budget of {per_second:g} messages/s leaves nothing to poll "
                         "with")
    return max(fastest_seconds, per_poll / usable)


class BudgetedTransport:
    """A transport whose every write takes its program messages from a budget first:
    the count is made where the bytes leave, so nothing the driver sends escapes it.
    Everything else is the wrapped transport's."""

    def __init__(self, inner: object, budget: QueryBudget, terminator: bytes, *,
                 urgent: bool | Callable[[], bool], stop: threading.Event | None = None):
        self._inner = inner
        self._budget = budget
        self._terminator = terminator
        self._urgent = urgent
        self._stop = stop
        self.last_sent = 0.0
        """Monotonic seconds: when the last write was let through."""

    def write(self, data: bytes) -> None:
        self._budget.take(max(1, data.count(self._terminator)), urgent=self._urgent,
                          stop=self._stop)
        self.last_sent = time.monotonic()
        self._inner.write(data)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)
