"""One lab per state directory.

A lab writes its inventory, secrets, known_hosts, device NVRAM and ``lab.json``
into its state directory; a second lab started on the same directory would
overwrite them under the first one's clients. So a lab holds an exclusive lock
on ``DIR/lab.lock`` (``flock``, released by the kernel when the process ends,
however it ends) from before it touches anything in the directory until it
stops; the file names the holder (pid, host, start time) for whoever is refused.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

LOCK_FILE = "lab.lock"


class StateDirBusy(RuntimeError):
    """Another lab runs on this state directory."""


class StateDirLock:
    def __init__(self, directory: Path):
        self.path = Path(directory) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`StateDirBusy` naming the lab that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StateDirBusy(f"{self.path.parent} is in use by the lab of {holder}; stop it "
                               "first, or give another --state-dir") from None
        os.ftruncate(fd, 0)
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} since {started}\n".encode(),
                  0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
