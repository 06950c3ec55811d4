"""The shared store: a PostgreSQL database (psycopg 3), for a team or a fleet.

Every record is one transaction, committed (``synchronous_commit`` as the server has
it, ``on`` by default: flushed to the server's WAL) before :meth:`append` returns.

Device locks are session-level advisory locks, one per device, keyed by the first 64
bits of SHA-256 of the device name. The database releases a session's locks when its
connection ends, so a holder that is killed (or whose host dies, once TCP notices)
frees its devices. The holder (user, host, pid, session) is written in
``device_locks`` beside the lock, so a refusal names it; two names whose keys collide
are detected there (the refusal names the other device) and are then simply changed one
at a time. Advisory locks belong to a server session: behind a PgBouncer in
transaction-pooling mode they silently break (use session pooling or connect directly).

A lost connection (the server restarted, say) is reopened for up to
:data:`RECONNECT_SECONDS` and the interrupted statement run again; a record whose
commit had reached the server is recognized by its record id and not written twice.
The locks this process held are taken again on the new session; a lock someone else
took meanwhile is reported by :attr:`PostgresStore.lost_locks`.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from msoctl.journal.location import DEFAULT_CONNECT_TIMEOUT_SECONDS, JournalLocation
from msoctl.journal.model import _OPEN_OPS, DeviceBusy, JournalError, current_user, now_ts
from msoctl.journal.schema import LATEST, POSTGRES
from msoctl.journal.store import Cursor, SqlStore

RECONNECT_SECONDS = 15.0
MIGRATION_LOCK_KEY = 0x6D736F63746C0001
"""The advisory lock that serializes migrations ("msoctl" and 1)."""


def lock_key(device: str) -> int:
    """The advisory lock key of ``device``: a signed 64-bit integer."""
    digest = hashlib.sha256(b"msoctl-device:" + device.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _one_line(error: BaseException) -> str:
    text = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
    return text or type(error).__name__


class _Lost(Exception):
    """The connection went away mid-statement."""


class AdvisoryLock:
    def __init__(self, store: PostgresStore, device: str):
        self.store = store
        self.device = device

    def release(self) -> None:
        self.store.unlock(self.device)


class PostgresStore(SqlStore):
    dialect = POSTGRES

    def __init__(self, location: JournalLocation):
        super().__init__(location)
        self._connection: Any = None
        self._pid = 0
        self._session: str | None = None
        self._held: dict[str, int] = {}
        self.lost_locks: list[str] = []
        try:
            import psycopg
        except ImportError:
            raise JournalError(f"{location}: the PostgreSQL journal needs psycopg 3 "
                               "(pip install 'psycopg[binary]')") from None
        self._psycopg = psycopg

    # ---- the connection ------------------------------------------------------------------

    @property
    def session(self) -> str | None:
        return self._session

    def _conninfo(self) -> dict[str, Any]:
        from psycopg.conninfo import conninfo_to_dict

        assert self.location.url is not None
        try:
            params: dict[str, Any] = dict(conninfo_to_dict(self.location.url))
        except self._psycopg.ProgrammingError as error:
            raise JournalError(f"journal {self.location}: {_one_line(error)}") from None
        params.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT_SECONDS)
        params.setdefault("application_name",
                          f"msoctl {current_user()}@{socket.gethostname()} pid {os.getpid()}")
        if self.location.password is not None:
            params["password"] = self.location.password()
        return params

    def _open(self) -> Any:
        connection = self._connection
        if connection is not None and self._pid == os.getpid() and not connection.closed \
                and not connection.broken:
            return connection
        if connection is not None and self._pid == os.getpid():
            try:
                connection.close()
            except self._psycopg.Error:
                pass
        self._connection = None
        reopened = bool(self._held) or self._session is not None
        try:
            connection = self._psycopg.connect(autocommit=True, **self._conninfo())
        except self._psycopg.Error as error:
            raise JournalError(f"cannot reach the journal database {self.location}: "
                               f"{_one_line(error)}") from None
        try:
            self._setup(connection)
        except self._psycopg.Error as error:
            connection.close()
            raise JournalError(f"journal database {self.location}: "
                               f"{_one_line(error)}") from None
        self._connection, self._pid = connection, os.getpid()
        if reopened:
            self._resume(connection)
        return connection

    def _setup(self, connection: Any) -> None:
        row = connection.execute(
            "SELECT pg_backend_pid(), (extract(epoch FROM backend_start) * 1000000)::bigint "
            "FROM pg_stat_activity WHERE pid = pg_backend_pid()").fetchone()
        self._session = f"{row[0]}:{row[1]}"
        present = connection.execute("SELECT to_regclass('schema_version') IS NOT NULL"
                                     ).fetchone()[0]
        version = 0
        if present:
            version = connection.execute("SELECT MAX(version) FROM schema_version"
                                         ).fetchone()[0] or 0
        if version != LATEST:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
                self.migrate(connection.cursor())

    def _resume(self, connection: Any) -> None:
        """After a reconnect: our open operations belong to the new session, and the
        locks we held are taken again (those someone else took meanwhile are lost)."""
        if _OPEN_OPS:
            connection.execute("UPDATE operations SET session = %s WHERE op = ANY(%s) "
                               "AND is_open", (self._session, sorted(_OPEN_OPS)))
        for device, key in list(self._held.items()):
            got = connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]
            if got:
                self._record_holder(connection, device, key)
            else:
                del self._held[device]
                self.lost_locks.append(device)

    def _drop(self) -> None:
        if self._connection is not None and self._pid == os.getpid():
            try:
                self._connection.close()
            except self._psycopg.Error:
                pass
        self._connection = None

    def close(self) -> None:
        with self._mutex:
            self._drop()
            self._held.clear()

    # ---- transactions --------------------------------------------------------------------

    def _lost(self, error: BaseException) -> bool:
        connection = self._connection
        return isinstance(error, self._psycopg.OperationalError) and (
            connection is None or connection.closed or connection.broken
            or isinstance(error, self._psycopg.errors.AdminShutdown))

    @contextmanager
    def _write(self) -> Iterator[Cursor]:
        connection = self._open()
        try:
            with connection.transaction(), connection.cursor() as cursor:
                yield cursor
        except self._psycopg.Error as error:
            if self._lost(error):
                raise _Lost(_one_line(error)) from None
            raise JournalError(f"cannot write the journal {self.location}: "
                               f"{_one_line(error)}") from None

    @contextmanager
    def _read(self) -> Iterator[Cursor]:
        connection = self._open()
        try:
            with connection.cursor() as cursor:
                yield cursor
        except self._psycopg.Error as error:
            if self._lost(error):
                raise _Lost(_one_line(error)) from None
            raise JournalError(f"cannot read the journal {self.location}: "
                               f"{_one_line(error)}") from None

    def _retrying(self, work: Callable[[bool], Any]) -> Any:
        try:
            return work(False)
        except _Lost as first:
            lost = str(first)
        deadline = time.monotonic() + RECONNECT_SECONDS
        while True:
            self._drop()
            try:
                return work(True)
            except (_Lost, JournalError) as error:
                if time.monotonic() >= deadline:
                    raise JournalError(f"lost the journal database {self.location} ({lost}) "
                                       f"and could not reconnect: {error}") from None
                time.sleep(0.25)

    def new_connection(self, *, purpose: str, statement_timeout_seconds: float | None = None,
                       connect_timeout_seconds: int | None = None) -> Any:
        """A connection of its own to the journal's database (autocommit), for a loop that
        must not queue behind the journal's writes (protection leases); the schema is
        brought up to date first. Raises :class:`JournalError`."""
        with self._mutex:
            self._retrying(lambda retry: self._open())
        params = self._conninfo()
        params["application_name"] = f"{params['application_name']} ({purpose})"
        if connect_timeout_seconds is not None:
            params["connect_timeout"] = connect_timeout_seconds
        if statement_timeout_seconds is not None:
            params["options"] = (f"{params.get('options', '')} -c statement_timeout="
                                 f"{max(1, round(statement_timeout_seconds * 1000))}").strip()
        try:
            return self._psycopg.connect(autocommit=True, **params)
        except self._psycopg.Error as error:
            raise JournalError(f"cannot reach the journal database {self.location}: "
                               f"{_one_line(error)}") from None

    @staticmethod
    def session_of(connection: Any) -> str:
        """The ``pid:start`` name of a connection's server session (as :attr:`session`)."""
        row = connection.execute(
            "SELECT pg_backend_pid(), (extract(epoch FROM backend_start) * 1000000)::bigint "
            "FROM pg_stat_activity WHERE pid = pg_backend_pid()").fetchone()
        return f"{row[0]}:{row[1]}"

    def live_sessions(self, sessions: set[str]) -> set[str]:
        pids = sorted({int(s.split(":")[0]) for s in sessions if s.split(":")[0].isdigit()})
        if not pids:
            return set()
        with self._read() as cursor:
            cursor.execute(
                "SELECT pid::text || ':' || ((extract(epoch FROM backend_start) * 1000000)"
                "::bigint)::text FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,))
            return {str(row[0]) for row in cursor.fetchall()} & sessions

    # ---- device locks --------------------------------------------------------------------

    def _record_holder(self, connection: Any, device: str, key: int) -> None:
        connection.execute(
            "INSERT INTO device_locks (device, lock_key, username, host, pid, session, since) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (device) DO UPDATE SET "
            "lock_key = excluded.lock_key, username = excluded.username, "
            "host = excluded.host, pid = excluded.pid, session = excluded.session, "
            "since = excluded.since",
            (device, key, current_user(), socket.gethostname(), os.getpid(), self._session,
             now_ts()))

    def lock(self, device: str) -> AdvisoryLock:
        key = lock_key(device)

        def work(retry: bool) -> bool:
            connection = self._open()
            try:
                got = bool(connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)
                                              ).fetchone()[0])
                if got:
                    self._record_holder(connection, device, key)
                return got
            except self._psycopg.Error as error:
                if self._lost(error):
                    raise _Lost(_one_line(error)) from None
                raise JournalError(f"cannot take the lock of {device} in {self.location}: "
                                   f"{_one_line(error)}") from None

        with self._mutex:
            if device in self._held or key in self._held.values():
                other = next(d for d, k in self._held.items() if k == key)
                same = "" if other == device else f" (its lock key is {other}'s)"
                raise DeviceBusy(f"{device} is being changed by {current_user()} (pid "
                                 f"{os.getpid()} on {socket.gethostname()}, this process)"
                                 f"{same}")
            if self._retrying(work):
                self._held[device] = key
                return AdvisoryLock(self, device)
            raise DeviceBusy(self._refusal(device, key))

    def _refusal(self, device: str, key: int) -> str:
        """Who holds ``key``, as the lock table and the server's lock list agree."""
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        with self._read() as cursor:
            cursor.execute(
                "SELECT a.pid::text || ':' || ((extract(epoch FROM a.backend_start) * 1000000)"
                "::bigint)::text FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
                "AND l.classid::bigint = %s AND l.objid::bigint = %s",
                (unsigned >> 32, unsigned & 0xFFFFFFFF))
            sessions = {str(row[0]) for row in cursor.fetchall()}
            cursor.execute("SELECT device, username, host, pid, session, since FROM "
                           "device_locks WHERE lock_key = %s", (key,))
            rows = cursor.fetchall()
        holders = [r for r in rows if str(r[4]) in sessions]
        if not holders:
            return (f"{device} is being changed by another session of the journal database "
                    f"{self.location} (it has not said who yet)")
        other, user, host, pid, _, since = holders[0]
        text = f"{user} (pid {pid} on {host}, since {since})"
        if other != device:
            return (f"{device} shares its lock key with {other} (a hash collision: the two "
                    f"are changed one at a time), which is being changed by {text}")
        return f"{device} is being changed by {text}"

    def unlock(self, device: str) -> None:
        with self._mutex:
            key = self._held.pop(device, None)
            if key is None:
                return
            connection = self._connection
            if connection is None or connection.closed or connection.broken:
                return  # the session is gone, and its locks with it
            try:
                connection.execute("DELETE FROM device_locks WHERE device = %s AND "
                                   "session = %s", (device, self._session))
                connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except self._psycopg.Error:
                self._drop()  # ending the session frees the lock in any case
