"""The thread that does one NETCONF server's work, off the event loop that serves its SSH.

Why a thread of its own: the lab serves every device (OCS over SCPI, amplifier
bridges, SNMP agents, the switches' SSH) on one asyncio loop. Reading, editing,
validating and writing a configuration is CPU work that takes as long as the
configuration is big (seconds for tens of thousands of list entries); done on
the loop, it froze every device of the lab for that long. So each
:class:`~emulators.netconf.server.NetconfServer` hands the work of an RPC
(parse the request, run the operation on the datastores, serialise the reply)
and the end of a session (its locks released) to its own :class:`Worker`, and
its loop only moves bytes. One thread per server keeps that switch's datastore
operations in order, one at a time, as they were on the loop: sessions of one
switch still wait for each other, as on a device, and two switches never do.

What a thread cannot give: the interpreter runs one thread's Python at a time
(the GIL). While a worker runs Python, a thread that wants to run waits at most
the interpreter's switch interval (``sys.getswitchinterval()``, 5 ms by
default) before the worker is made to let it; an answer that goes through the
loop a few times (read, parse, write) waits that long a few times. C code that
holds the GIL without releasing it (lxml copying or serialising a whole
datastore: tens of milliseconds at 40,000 entries) delays the loop by its whole
duration; lxml's parser and libyang (called through cffi) release it. So other
devices keep answering within tens of milliseconds, not within their idle
sub-millisecond time; bench/netconf_edit.py measures both side by side. The
step after this one is a process per group of devices (both cores serving), for
which a worker that owns its switch's datastores is the seam: its work already
reaches it as a request's bytes (with the session they came on) and leaves it as
the reply's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Worker:
    """A single thread that runs what it is given one call at a time, in order."""

    def __init__(self, name: str):
        self.name = name
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-worker")
        self._closed = False

    async def run(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)`` in the worker thread; its result, or what it raised.

        Cancelling the caller does not stop a call already running: the next call
        starts only after it, so the order of the server's work is kept. Once the
        worker is closed, calls run in the caller's thread (a session ending while
        its server stops still releases its locks).
        """
        if self._closed:
            return function(*args)
        return await asyncio.get_running_loop().run_in_executor(
            self._executor, function, *args)

    def close(self) -> None:
        """Take no more calls; the thread ends once the call running now (if any) ends."""
        self._closed = True
        self._executor.shutdown(wait=False)
