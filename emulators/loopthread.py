"""An asyncio event loop in a daemon thread: emulated devices serve on it, callers in
other threads (tests, the CLI, the demo) hand it coroutines and wait for their results."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str):
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        return self._loop is not None

    def start(self) -> None:
        if self._loop is not None:
            raise RuntimeError(f"{self.name} already started")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=self.name,
                                        daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coroutine`` on the loop and wait for its result."""
        if self._loop is None:
            coroutine.close()
            raise RuntimeError(f"{self.name} not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def stop(self, last: Callable[[], Coroutine[Any, Any, None]] | None = None) -> None:
        """Run ``last()`` on the loop (stopping the servers), then end the loop and its
        thread, whatever ``last`` raised."""
        loop = self._loop
        if loop is None:
            return
        if loop.is_running():
            try:
                if last is not None:
                    self.call(last(), timeout=10)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                if self._thread is not None:
                    self._thread.join(timeout=10)
        loop.close()
        self._loop = None
