"""The embedded store: one SQLite file, nothing to install.

Settings, and why:

- WAL journal mode: readers (``msoctl history``, the protection controller's drain
  check) never wait for a writer, and a commit appends to one file.
- ``synchronous=FULL``: every commit (every record) is fsynced before it returns, so an
  intent is on disk before the first byte goes to a device, even across a power loss.
  NORMAL would survive a killed process but could lose the last commits to a power cut,
  which is exactly the record that says what was being done.
- A busy timeout of 30 s: a writer waits for another one (one transaction per record
  lasts a millisecond) instead of failing.
- One connection per process, shared by its threads under a lock; reopened after a fork
  and when the file was replaced or removed underneath it.

Device locks are local, as they always were: an ``flock`` on ``locks/DEVICE.lock``
beside the file, released by the kernel when the holder dies. They exclude processes on
this host only; a team or a fleet shares a PostgreSQL journal instead.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from msoctl.journal.location import JournalLocation
from msoctl.journal.model import DeviceBusy, JournalError, current_user, now_ts
from msoctl.journal.schema import LATEST, SQLITE
from msoctl.journal.store import Cursor, SqlStore

BUSY_TIMEOUT_SECONDS = 30.0
LOCK_NOTE_BYTES = 256
"""A lock file holds who holds it, in this many bytes (space-padded)."""


class FileLock:
    """A held ``flock``; the holder's name is written in the file for whoever is refused."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SqliteStore(SqlStore):
    dialect = SQLITE

    def __init__(self, location: JournalLocation):
        super().__init__(location)
        assert location.path is not None
        self.path: Path = location.path
        self._connection: sqlite3.Connection | None = None
        self._owner: tuple[int, tuple[int, int]] | None = None
        self._empty: sqlite3.Connection | None = None

    # ---- the connection ------------------------------------------------------------------

    def _identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise JournalError(f"cannot open journal {self.path}: {error.strerror}") from None
        return found.st_dev, found.st_ino

    def _open(self, *, create: bool) -> sqlite3.Connection | None:
        identity = self._identity()
        if (self._connection is not None and self._owner is not None
                and self._owner == (os.getpid(), identity)):
            return self._connection
        if self._connection is not None and self._owner is not None \
                and self._owner[0] == os.getpid():
            self._connection.close()  # the file was replaced or removed: follow the path
        self._connection = None
        if identity is None and not create:
            return None
        try:
            if identity is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o640))
            connection = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_SECONDS,
                                         isolation_level=None, check_same_thread=False)
        except OSError as error:
            raise JournalError(f"cannot create journal {self.path}: {error.strerror}") from None
        except sqlite3.Error as error:
            raise JournalError(f"cannot open journal {self.path}: {error}") from None
        try:
            self._configure_when_free(connection)
        except sqlite3.Error as error:
            connection.close()
            raise JournalError(f"cannot open journal {self.path}: {error}") from None
        self._connection = connection
        self._owner = (os.getpid(), self._identity() or (0, 0))
        return connection

    def _configure_when_free(self, connection: sqlite3.Connection) -> None:
        """Configure, waiting out another process that configures the same new file.

        A journal just created is still in rollback mode, and turning it to WAL takes
        its exclusive lock. Two processes that open it at once (an apply creating it, a
        ``history`` reading it) both hold a shared lock and both want that one, and
        SQLite answers one of them "database is locked" at once rather than deadlock,
        without calling the busy handler. Nothing is held after that answer, so the
        loser tries again, within the same busy timeout as any other wait.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        pause = 0.002
        while True:
            try:
                self._configure(connection)
                return
            except sqlite3.OperationalError as error:
                busy = getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
                if not busy or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _configure(self, connection: sqlite3.Connection) -> None:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
        version = self._version(connection)
        if version != LATEST:
            connection.execute("BEGIN IMMEDIATE")
            try:
                self.migrate(connection.cursor())
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise

    @staticmethod
    def _version(connection: sqlite3.Connection) -> int:
        found = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                   "name = 'schema_version'").fetchone()
        if found is None:
            return 0
        return int(connection.execute("SELECT MAX(version) FROM schema_version"
                                      ).fetchone()[0] or 0)

    def _empty_journal(self) -> sqlite3.Connection:
        """An empty journal in memory: what reading a journal not yet written shows
        (reading never creates the file)."""
        if self._empty is None:
            empty = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            empty.execute("BEGIN")
            self.migrate(empty.cursor())
            empty.execute("COMMIT")
            self._empty = empty
        return self._empty

    def close(self) -> None:
        with self._mutex:
            if self._connection is not None and self._owner is not None \
                    and self._owner[0] == os.getpid():
                self._connection.close()
            self._connection = None

    # ---- transactions --------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        connection = self._open(create=True)
        assert connection is not None
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise JournalError(f"cannot write journal {self.path}: {error}") from None
        try:
            yield connection.cursor()
            connection.execute("COMMIT")
        except BaseException as error:
            try:
                connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the transaction is gone already: nothing was committed
            if isinstance(error, sqlite3.Error):
                raise JournalError(f"cannot write journal {self.path}: {error}") from None
            raise

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        connection = self._open(create=False) or self._empty_journal()
        try:
            yield connection.cursor()
        except sqlite3.Error as error:
            raise JournalError(f"cannot read journal {self.path}: {error}") from None

    def _retrying(self, work: Callable[[bool], Any]) -> Any:
        return work(False)  # a local file does not go away mid-session like a server

    # ---- device locks --------------------------------------------------------------------

    def lock(self, device: str) -> FileLock:
        path = self.path.parent / "locks" / f"{device}.lock"
        try:
            try:  # one system call when the directory is there (a controller takes 16 at once)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
        except OSError as error:
            raise JournalError(f"cannot create lock {path}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, LOCK_NOTE_BYTES, 0).decode(errors="replace").strip() or \
                "another process"
            os.close(fd)
            raise DeviceBusy(f"{device} is being changed by {holder}") from None
        import socket

        note = (f"{current_user()} (pid {os.getpid()} on {socket.gethostname()}, "
                f"since {now_ts()})").encode()
        if len(note) < LOCK_NOTE_BYTES:
            # written over whatever the last holder left, padded (a truncate costs a
            # metadata update: sixteen locks took 3.9 ms with it, 0.8 ms without)
            os.pwrite(fd, note.ljust(LOCK_NOTE_BYTES), 0)
        else:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note, 0)
        return FileLock(fd)
