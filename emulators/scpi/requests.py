"""What the clients of an emulated SCPI device sent (``device.requests``).

Every program message (line) as it arrived, with the device time it arrived at, and
how many times each command arrived, by its key in the command table, whether the
unit has it or answers it undefined (an absent feature's header still counts: a test
that asserts a refusal came before anything was sent sees what reached the unit).
Tests check a client's rate at the device itself from the times, and read the
resynchronisation probes a session sent after a timeout or a garbled reply from the
lines: none means no exchange waited out a timeout.

:func:`counting_interpreter` makes an interpreter that keeps this log.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import Any

from emulators.clock import Clock
from emulators.scpi.parser import CommandTree, Handler, ScpiInterpreter, SuffixedHandler
from emulators.scpi.status import ClientStatus

LOG_SIZE = 200_000
"""Program messages remembered (line and device time)."""
_RESYNC_PROBE = re.compile(r"\*ESE\s+\d+\s*;\s*\*ESE\?")


class RequestLog:
    """The program messages and commands one device received."""

    def __init__(self) -> None:
        self.messages: deque[str] = deque(maxlen=LOG_SIZE)
        self.times: deque[float] = deque(maxlen=LOG_SIZE)
        """The device time each of :attr:`messages` arrived at."""
        self.received = 0
        """Program messages received in all (not bounded by :data:`LOG_SIZE`)."""
        self.commands: Counter[str] = Counter()

    def message(self, line: str, when: float) -> None:
        self.messages.append(line)
        self.times.append(when)
        self.received += 1

    def command(self, key: str) -> None:
        self.commands[key] += 1

    def clear(self) -> None:
        self.messages.clear()
        self.times.clear()
        self.received = 0
        self.commands.clear()

    def between(self, start: float, end: float) -> int:
        """Messages received in device time ``[start, end)``."""
        return sum(1 for t in self.times if start <= t < end)

    def most_in_window(self, seconds: float, *, since: float = float("-inf")) -> int:
        """The most messages received within any ``seconds`` of device time (from
        ``since`` on): a sliding window over the log."""
        times = [t for t in self.times if t >= since]
        most = start = 0
        for end, when in enumerate(times):
            while when - times[start] >= seconds:
                start += 1
            most = max(most, end - start + 1)
        return most

    def resync_probes(self) -> list[str]:
        """The resynchronisation probes (``*ESE <n>;*ESE?``) among the messages."""
        return [line for line in self.messages if _RESYNC_PROBE.fullmatch(line.strip())]


class _CountingInterpreter(ScpiInterpreter):
    """An interpreter that logs each program message it is given."""

    def __init__(self, log: RequestLog, clock: Clock, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.log = log
        self.clock = clock

    async def execute(self, line: str) -> str | bytes | None:
        self.log.message(line, self.clock.now())
        return await super().execute(line)


def _counted(log: RequestLog, key: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    def counting(*args: Any) -> Any:
        log.command(key)
        return handler(*args)

    return counting


def counting_interpreter(log: RequestLog, clock: Clock, tree: CommandTree,
                         handlers: Mapping[str, Handler], status: ClientStatus, *,
                         messages: Mapping[int, str],
                         suffixed: Mapping[str, SuffixedHandler] | None = None
                         ) -> ScpiInterpreter:
    """An interpreter whose every message (at ``clock``'s time) and command is counted
    on ``log``."""
    return _CountingInterpreter(
        log, clock, tree, {key: _counted(log, key, h) for key, h in handlers.items()},
        status, messages=messages,
        suffixed_handlers={key: _counted(log, key, h) for key, h in (suffixed or {}).items()})
