"""Ctrl-C and SIGTERM during a change: where they may land, and where they wait.

Python turns SIGINT into :class:`KeyboardInterrupt` wherever the main thread
happens to be; :func:`raise_on_sigterm` makes SIGTERM do the same with
:class:`Terminated`, so that a ``kill`` from a supervisor unwinds a change like
Ctrl-C does instead of ending the process with its journal record unwritten.

Once a change is interrupted, what remains to do (reading back what the
device really holds, writing the journal's result) must not itself be cut
short by a second signal: :func:`deferred` holds SIGINT and SIGTERM for the
length of a block and delivers the first one held when the block ends. Only
the main thread receives signals; elsewhere both are no-ops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any] | int | None


class Terminated(BaseException):
    """SIGTERM arrived; raised in the main thread as SIGINT raises KeyboardInterrupt."""


def signal_name(error: BaseException) -> str | None:
    """``SIGINT`` / ``SIGTERM`` for the exceptions they raise, else ``None``."""
    if isinstance(error, KeyboardInterrupt):
        return "SIGINT"
    if isinstance(error, Terminated):
        return "SIGTERM"
    return None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def raise_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise :class:`Terminated`; returns the function that undoes it."""
    if not _in_main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGTERM, _terminate)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM during the block; the first one held is raised after it."""
    if not _in_main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    previous: dict[int, Handler] = {}
    for signum in (int(signal.SIGINT), int(signal.SIGTERM)):
        previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if held:
        handler = previous[held[0]]
        if callable(handler):
            handler(held[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(held[0])
