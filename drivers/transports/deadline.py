"""Blocking kernel calls with a deadline, for the I2C transports that call into the kernel.

A read of an optoe file or an ``I2C_RDWR`` ioctl blocks inside the kernel
until the adapter gives up, which on a hung bus can take many seconds
(adapter timeout times retries) and cannot be interrupted from user space.
A transport runs such calls on its own :class:`DeadlineWorker` and waits at
most its ``timeout_seconds``. Calls run one at a time, in submission order;
a call whose caller stopped waiting before it started is never started, and
one that overran finishes in the background and its result is dropped.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class CallTimedOut(Exception):
    """The call did not finish in time; ``started`` says whether it may still take effect."""

    def __init__(self, *, started: bool):
        super().__init__("started but not finished" if started else "never started")
        self.started = started


class _Job(Generic[T]):
    def __init__(self, function: Callable[[], T]):
        self.function = function
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None
        self._state = "queued"
        self._lock = threading.Lock()

    def cancel(self) -> bool:
        """Withdraw the job if it has not started; False when it already runs or ran."""
        with self._lock:
            if self._state != "queued":
                return False
            self._state = "cancelled"
            return True

    def run(self) -> None:
        with self._lock:
            if self._state == "cancelled":
                return
            self._state = "running"
        try:
            self.result = self.function()
        except BaseException as error:  # handed to the waiting caller
            self.error = error
        finally:
            self.done.set()

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # set by run() before done


class DeadlineWorker:
    """One daemon thread that runs a transport's blocking calls, started on first use."""

    def __init__(self, name: str):
        self.name = name
        self._queue: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, function: Callable[[], T], timeout_seconds: float) -> T:
        """``function()``'s result or exception; :class:`CallTimedOut` after ``timeout_seconds``."""
        job = _Job(function)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=_serve, args=(self._queue,),
                                                name=self.name, daemon=True)
                self._thread.start()
            self._queue.put(job)
        if not job.done.wait(timeout_seconds):
            if job.cancel():
                raise CallTimedOut(started=False)
            if not job.done.is_set():
                raise CallTimedOut(started=True)
        return job.outcome()

    def close(self, final: Callable[[], None] | None = None) -> None:
        """Run ``final`` (closing the file the calls use) after every queued call, then stop.

        Returns at once: a call stuck in the kernel delays ``final``, not the caller.
        """
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is None:
                if final is not None:
                    final()
                return
            if final is not None:
                self._queue.put(_Job(final))
            self._queue.put(None)
            # A new call after close starts a new thread with a new queue.
            self._queue = queue.SimpleQueue()


def _serve(jobs: queue.SimpleQueue[_Job[Any] | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        job.run()
