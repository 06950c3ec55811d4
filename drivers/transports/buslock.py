"""One module's page select, held by one host process at a time.

A CMIS module has one page select register (bytes 126-127) for every host on
its bus, and a transaction cannot select and read at once. A host that selects
a page, checks it and then reads or writes far into it makes three or four
transactions, and another process on the same machine polling the same module
(a second exporter, a command run beside it) can select another page in
between: the read returns another page's bytes, or the write lands on another
page. Linux's optoe driver holds a mutex across that sequence for the
processes that go through it; this is the same for the raw transports:

- an ``flock`` on a lock file named after the bus address (as
  :attr:`~drivers.cmis.io.I2cBus.address` spells it: bus device or bridge URL,
  and the device address), in a directory of the user's own under the system's
  temporary directory, so every msoctl process of that user on this machine
  takes turns at the module;
- a thread lock, for threads sharing one connection (an ``flock`` does not
  exclude holders of the same open file).

A host elsewhere (a BMC on the same two-wire bus) takes no lock here: for it,
the select bytes read with the data are what remains (see
:class:`~drivers.cmis.io.PagedIo`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from drivers.errors import DeviceTimeout, DeviceUnreachable


def lock_directory() -> Path:
    """Where the lock files are: one directory per user, made private on first use."""
    return Path(tempfile.gettempdir()) / f"msoctl-i2c-{os.getuid()}"


def lock_path(address: str, directory: Path | None = None) -> Path:
    """The lock file of the module at ``address``: readable, and unique per address."""
    readable = re.sub(r"[^A-Za-z0-9.@-]+", "_", address)[-60:]
    digest = hashlib.sha256(address.encode()).hexdigest()[:12]
    return (directory or lock_directory()) / f"{readable}.{digest}.lock"


LOCK_POLL_SECONDS = 0.0002
"""How often a waiting process tries the lock again."""


class BusLock:
    """Held across one page select and the transfers under it (:meth:`held`).

    The lock file is opened on first use and kept open until :meth:`close`;
    ``directory`` is for tests (by default :func:`lock_directory`).
    """

    def __init__(self, address: str, *, directory: Path | None = None):
        self.address = address
        self.path = lock_path(address, directory)
        self._thread_lock = threading.Lock()
        self._fd: int | None = None

    @contextmanager
    def held(self, timeout_seconds: float) -> Iterator[None]:
        """Hold the lock for the ``with`` block, waiting for it at most ``timeout_seconds``.

        Raises :class:`DeviceTimeout` when another thread or process holds it longer (a
        process stopped in the middle of a read), :class:`DeviceUnreachable` when the lock
        file cannot be made or opened."""
        deadline = time.monotonic() + timeout_seconds
        if not self._thread_lock.acquire(timeout=timeout_seconds):
            raise self._timed_out(timeout_seconds)
        try:
            fd = self._open()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise self._timed_out(timeout_seconds) from None
                    time.sleep(LOCK_POLL_SECONDS)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def _timed_out(self, seconds: float) -> DeviceTimeout:
        return DeviceTimeout(f"{self.address}: another msoctl process or thread has held "
                             f"the module's page select for over {seconds:g} s",
                             detail=f"lock file {self.path}")

    def _open(self) -> int:
        if self._fd is None:
            try:
                self.path.parent.mkdir(mode=0o700, exist_ok=True)
                if self.path.parent.stat().st_uid != os.getuid():
                    raise DeviceUnreachable(f"{self.path.parent} belongs to another user: "
                                            f"cannot lock {self.address}'s page select there")
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            except OSError as error:
                raise DeviceUnreachable(f"cannot make the lock of {self.address}'s page select "
                                        f"({self.path}): {error.strerror or error}") from None
        return self._fd

    def close(self) -> None:
        with self._thread_lock:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
