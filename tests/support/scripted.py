"""A transport with the unit behind it in one object, for driver tests that script a
unit's replies: what a subclass's ``write`` appends to ``output`` is read back line by
line, as a unit's output queue gives it; nothing left is a timeout."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from drivers.errors import DeviceTimeout


class ScriptedTransport:
    timeout_seconds = 1.0
    address = "scripted"

    def __init__(self, stale: Iterable[str] = ()):
        self.output: deque[str] = deque(stale)
        """The unit's output queue: replies not read yet (``stale``: left from before)."""
        self.opened = 0

    def open(self) -> None:
        self.opened += 1

    def close(self) -> None:
        pass

    def write(self, data: bytes) -> None:
        raise NotImplementedError  # the scripted unit answers what it is sent

    def read_until(self, terminator: bytes) -> bytes:
        if not self.output:
            raise DeviceTimeout("no reply")
        return self.output.popleft().encode("ascii") + terminator

    def discard_input(self) -> None:
        pass
