"""What the clients of an emulated instrument sent (``device.requests``).

Every program message (line) as it arrived, and how many times each command arrived,
by its key in the command table, whether the unit has it or answers it undefined (an
absent feature's header still counts: a test that asserts a refusal came before
anything was sent sees what reached the unit). A test reads the resynchronisation
probes a session sent after a timeout or a garbled reply from here too: none means no
exchange waited out a timeout.
"""

from __future__ import annotations

import re
from collections import Counter, deque

LOG_SIZE = 100_000
"""Program messages remembered."""
_RESYNC_PROBE = re.compile(r"\*ESE\s+\d+\s*;\s*\*ESE\?")


class RequestLog:
    """The program messages and commands one instrument received."""

    def __init__(self) -> None:
        self.messages: deque[str] = deque(maxlen=LOG_SIZE)
        self.received = 0
        """Program messages received in all (not bounded by :data:`LOG_SIZE`)."""
        self.commands: Counter[str] = Counter()

    def message(self, line: str) -> None:
        self.messages.append(line)
        self.received += 1

    def command(self, key: str) -> None:
        self.commands[key] += 1

    def clear(self) -> None:
        self.messages.clear()
        self.received = 0
        self.commands.clear()

    def resync_probes(self) -> list[str]:
        """The resynchronisation probes (``*ESE <n>;*ESE?``) among the messages."""
        return [line for line in self.messages if _RESYNC_PROBE.fullmatch(line.strip())]
