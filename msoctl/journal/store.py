"""What both stores share: writing a record with its operation, and the indexed queries.

A store owns one database connection per process (opened on first use, reopened after
a fork or a lost connection) and serializes its use between threads. Every record is
its own transaction: the record, its operation's summary row and, for the record that
names the devices, the ``op_devices`` rows, committed together or not at all.

Subclasses give the connection (:meth:`_connect`), a write transaction
(:meth:`_write`), a read cursor (:meth:`_read`) and the device lock.
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, Protocol

from msoctl.journal.location import JournalLocation
from msoctl.journal.model import _OPEN_OPS, CLOSING_EVENTS, JournalError, Operation, fold, new_id
from msoctl.journal.schema import LATEST, MIGRATIONS, VERSION_TABLE, Dialect

PAGE = 500
"""Operations fetched per query page, and ids per ``IN (...)`` list."""
MAX_ACTIONS_MERGED = 64
TOP = "\U0010ffff"
"""Sorts after every character: ``action < prefix + TOP`` ends a prefix range."""


class HeldLock(Protocol):
    def release(self) -> None: ...


class Cursor(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> Any: ...
    def executemany(self, sql: str, params: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


@dataclass(frozen=True)
class Query:
    """Which operations: every field given narrows the selection (None: any)."""

    device: str | None = None
    """Operations of exactly this device."""
    mentions: str | None = None
    """Operations naming this device, alone or in a comma-separated list."""
    action: str | None = None
    action_prefix: str | None = None
    actions: tuple[str, ...] | None = None
    op: str | None = None
    open_only: bool = False
    status: str | None = None
    since: str | None = None
    """Begun at or after this timestamp (journal format, or any prefix of it)."""
    newest: int | None = None
    """Only the newest N (still returned oldest first)."""
    before: int | None = None
    """Only operations begun before the one of this :attr:`Operation.order` (paging)."""


@dataclass
class JobRow:
    name: str
    since: str
    user: str
    op: str
    body: str  # JSON


@dataclass
class Drain:
    link: str
    since: str
    user: str
    reason: str
    op: str


_INSERT_RECORD = (
    "INSERT INTO records (rid, op, seq, ts, event, device, action, username, host, pid, "
    "status, body) VALUES (%(rid)s, %(op)s, "
    "(SELECT COALESCE(MAX(seq) + 1, 0) FROM records WHERE op = %(op)s), %(ts)s, %(event)s, "
    "%(device)s, %(action)s, %(user)s, %(host)s, %(pid)s, %(status)s, %(body)s)")
_UPSERT_OPERATION = (
    "INSERT INTO operations (op, first_id, last_id, started, last_ts, device, action, kind, "
    "username, host, pid, session, status, is_open, records) VALUES (%(op)s, {last_id}, "
    "{last_id}, %(ts)s, %(ts)s, %(device)s, %(action)s, %(event)s, %(user)s, %(host)s, "
    "%(pid)s, %(session)s, %(status)s, %(opens)s, 1) "
    "ON CONFLICT (op) DO UPDATE SET last_id = excluded.last_id, last_ts = excluded.last_ts, "
    "records = operations.records + 1, "
    "status = CASE WHEN %(closes)s THEN excluded.status ELSE operations.status END, "
    "is_open = CASE WHEN %(closes)s THEN FALSE ELSE operations.is_open END")
_INSERT_DEVICE = (
    "INSERT INTO op_devices (name, op, first_id) SELECT %(name)s, op, first_id "
    "FROM operations WHERE op = %(op)s ON CONFLICT DO NOTHING")


def _column(value: Any) -> Any:
    return None if value is None else str(value)


def record_row(record: dict[str, Any], rid: str, session: str | None) -> dict[str, Any]:
    """The parameters of the statements that write ``record``."""
    event = str(record.get("event", ""))
    closes = event in CLOSING_EVENTS
    pid = record.get("pid")
    status = record.get("status", "unknown") if event == "result" else (
        "refused" if event == "refused" else None)
    return {
        "rid": rid, "op": str(record["op"]), "ts": str(record.get("ts", "")), "event": event,
        "device": str(record.get("device", "")), "action": str(record.get("action", "")),
        "user": _column(record.get("user")), "host": _column(record.get("host")),
        "pid": pid if isinstance(pid, int) and not isinstance(pid, bool)
        and -2**63 <= pid < 2**63 else None,
        "status": _column(status), "closes": closes, "opens": not closes,
        # the session runs the change only for an intent this process is carrying out
        "session": session if event == "intent" and str(record["op"]) in _OPEN_OPS else None,
        "body": json.dumps(record, default=str, separators=(",", ":")),
    }


def _names(device: str) -> list[str]:
    return sorted({name for name in device.split(",") if name})


class SqlStore(ABC):
    """One journal database, reached through one connection per process."""

    dialect: Dialect

    def __init__(self, location: JournalLocation):
        self.location = location
        self._mutex = threading.RLock()
        self._sql_cache: dict[str, str] = {}

    # ---- what subclasses give ------------------------------------------------------------

    @abstractmethod
    def _write(self) -> AbstractContextManager[Cursor]:
        """A cursor inside a write transaction, committed when the block ends cleanly."""

    @abstractmethod
    def _read(self) -> AbstractContextManager[Cursor]:
        """A cursor for reading (autocommit)."""

    @abstractmethod
    def _retrying(self, work: Callable[[bool], Any]) -> Any:
        """Run ``work(retry)``; after a lost connection, reconnect and run it once more
        with ``retry`` true."""

    @property
    def session(self) -> str | None:
        """This process's database session, where the store can tell others of it."""
        return None

    def live_sessions(self, sessions: set[str]) -> set[str]:
        """Which of ``sessions`` are still connected (PostgreSQL); empty elsewhere."""
        return set()

    @abstractmethod
    def close(self) -> None:
        """Close this process's connection (it reopens on the next use)."""

    @abstractmethod
    def lock(self, device: str) -> HeldLock:
        """Take ``device``'s lock now or raise :class:`DeviceBusy` naming its holder."""

    # ---- SQL ---------------------------------------------------------------------------

    def sql(self, statement: str) -> str:
        """``statement`` in this dialect: ``{text}`` etc. expanded; ``%s`` / ``%(name)s``
        parameters as the driver wants them."""
        cached = self._sql_cache.get(statement)
        if cached is None:
            cached = self.dialect.sql(statement)
            if self.dialect.name == "sqlite":
                cached = re.sub(r"%\((\w+)\)s", r":\1", cached).replace("%s", "?")
            self._sql_cache[statement] = cached
        return cached

    def migrate(self, cursor: Cursor) -> None:
        """Bring the schema to :data:`LATEST` (inside the caller's write transaction)."""
        cursor.execute(self.sql(VERSION_TABLE))
        cursor.execute("SELECT MAX(version) FROM schema_version")
        current = cursor.fetchone()[0] or 0
        if current > LATEST:
            raise JournalError(f"the journal {self.location} has schema version {current}, "
                               f"newer than this msoctl knows ({LATEST}): upgrade msoctl")
        from msoctl.journal.model import now_ts

        for version, description, statements in MIGRATIONS:
            if version <= current:
                continue
            for statement in statements:
                cursor.execute(self.sql(statement))
            cursor.execute(self.sql("INSERT INTO schema_version (version, applied, description)"
                                    " VALUES (%s, %s, %s)"), (version, now_ts(), description))

    def schema_version(self) -> int:
        def work(retry: bool) -> int:
            with self._read() as cursor:
                cursor.execute("SELECT MAX(version) FROM schema_version")
                return int(cursor.fetchone()[0] or 0)
        with self._mutex:
            return int(self._retrying(work))

    # ---- writing -------------------------------------------------------------------------

    def _insert(self, cursor: Cursor, record: dict[str, Any], rid: str) -> None:
        row = record_row(record, rid, self.session)
        cursor.execute(self.sql(_INSERT_RECORD), row)
        cursor.execute(self.sql(_UPSERT_OPERATION), row)
        if row["event"] != "" and row["event"] in ("intent", *CLOSING_EVENTS):
            # one batch for every device of the change (a cable cut names dozens of
            # links): one call, and with PostgreSQL one round trip (a pipeline)
            cursor.executemany(self.sql(_INSERT_DEVICE), [
                {"name": name, "op": row["op"]} for name in _names(row["device"])])

    def _exists(self, cursor: Cursor, rid: str) -> bool:
        cursor.execute(self.sql("SELECT 1 FROM records WHERE rid = %s"), (rid,))
        return cursor.fetchone() is not None

    def append(self, record: dict[str, Any]) -> None:
        """Commit one record (with ``op`` and ``ts``) and its operation's summary."""
        rid = new_id() + new_id()

        def work(retry: bool) -> None:
            with self._write() as cursor:
                if retry and self._exists(cursor, rid):
                    return  # committed before the connection was lost
                self._insert(cursor, record, rid)

        with self._mutex:
            self._retrying(work)

    def close_open(self, op: str, record: dict[str, Any]) -> bool:
        """Write ``record`` (a result) only if operation ``op`` is still open; False when it
        was closed already (by another process, say): each is closed exactly once."""
        rid = new_id() + new_id()

        def work(retry: bool) -> bool:
            with self._write() as cursor:
                if retry and self._exists(cursor, rid):
                    return True
                cursor.execute(self.sql("UPDATE operations SET is_open = FALSE "
                                        "WHERE op = %s AND is_open"), (op,))
                if getattr(cursor, "rowcount", 1) != 1:
                    return False
                self._insert(cursor, record, rid)
                return True

        with self._mutex:
            return bool(self._retrying(work))

    def import_records(self, records: Iterable[tuple[str, dict[str, Any]]],
                       batch: int = 2000) -> tuple[int, int]:
        """Add ``(rid, record)`` pairs in order, in transactions of ``batch``; a record whose
        rid is present already is skipped. Returns (added, already present)."""
        added = present = 0
        chunk: list[tuple[str, dict[str, Any]]] = []

        def work(retry: bool) -> int:
            with self._write() as cursor:
                known = self._known_rids(cursor, [rid for rid, _ in chunk])
                inserted = 0
                for rid, record in chunk:
                    if rid not in known:
                        self._insert(cursor, record, rid)
                        known.add(rid)  # a line repeated in the file counts once
                        inserted += 1
                return inserted

        def flush() -> None:
            nonlocal added, present
            with self._mutex:
                inserted = int(self._retrying(work))
            added += inserted
            present += len(chunk) - inserted
            chunk.clear()

        for item in records:
            chunk.append(item)
            if len(chunk) >= batch:
                flush()
        if chunk:
            flush()
        return added, present

    def _known_rids(self, cursor: Cursor, rids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(rids), PAGE):
            part = list(rids[start:start + PAGE])
            marks = ",".join(["%s"] * len(part))
            cursor.execute(self.sql(f"SELECT rid FROM records WHERE rid IN ({marks})"), part)
            found.update(str(row[0]) for row in cursor.fetchall())
        return found

    # ---- reading -------------------------------------------------------------------------

    def operations(self, query: Query) -> list[Operation]:
        """The operations ``query`` selects, oldest first, each with all its records."""
        with self._mutex:
            found: list[Operation] = self._retrying(
                lambda retry: self._load(self._select(query)))
            return found

    def _select(self, query: Query) -> list[tuple[str, int, Any, Any]]:
        """The (op, order, session, is_open) of the operations ``query`` selects, oldest
        first. "The newest N of these actions" is one ordered index range per action,
        merged, rather than a sort of every operation of those actions."""
        if query.newest is not None and query.device is None and query.mentions is None \
                and query.op is None and (query.action_prefix or query.actions):
            actions = query.actions
            if query.action_prefix and query.action is None:
                within = self._actions_with_prefix(query.action_prefix)
                if within is not None:
                    actions = tuple(a for a in within if actions is None or a in actions)
            if actions is not None and len(actions) <= MAX_ACTIONS_MERGED:
                rows: list[tuple[str, int, Any, Any]] = []
                for action in actions:
                    rows += self._select_plain(replace(query, action=action, actions=None,
                                                       action_prefix=None))
                rows.sort(key=lambda row: row[1])
                return rows[-query.newest:] if query.newest else []
        return self._select_plain(query)

    def _actions_with_prefix(self, prefix: str) -> list[str] | None:
        """The distinct actions starting with ``prefix``, one index seek each (None when
        there are more than :data:`MAX_ACTIONS_MERGED`)."""
        found: list[str] = []
        after, low = prefix, ">="
        with self._read() as cursor:
            while len(found) <= MAX_ACTIONS_MERGED:
                cursor.execute(self.sql(f"SELECT MIN(action) FROM operations WHERE action "
                                        f"{low} %s AND action < %s"), (after, prefix + TOP))
                action = cursor.fetchone()[0]
                if action is None:
                    return found
                found.append(str(action))
                after, low = str(action), ">"
        return None

    def _select_plain(self, query: Query) -> list[tuple[str, int, Any, Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.mentions is not None:
            source = ("op_devices d JOIN operations o ON o.op = d.op", "d.first_id")
            clauses.append("d.name = %s")
            params.append(query.mentions)
        else:
            source = ("operations o", "o.first_id")
        if query.device is not None:
            clauses.append("o.device = %s")
            params.append(query.device)
        if query.op is not None:
            clauses.append("o.op = %s")
            params.append(query.op)
        if query.action is not None:
            clauses.append("o.action = %s")
            params.append(query.action)
        if query.actions is not None:
            clauses.append("o.action IN (" + ",".join(["%s"] * len(query.actions)) + ")")
            params.extend(query.actions)
        if query.action_prefix:
            clauses.append("o.action >= %s AND o.action < %s")
            params += [query.action_prefix, query.action_prefix + TOP]
        if query.open_only:
            clauses.append("o.is_open")
        if query.status is not None:
            clauses.append("o.status = %s")
            params.append(query.status)
        if query.since is not None:
            clauses.append("o.started >= %s")
            params.append(query.since)
        if query.before is not None:
            clauses.append(f"{source[1]} < %s")
            params.append(query.before)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        statement = (f"SELECT o.op, o.first_id, o.session, o.is_open FROM {source[0]}{where} "
                     f"ORDER BY {source[1]} DESC")
        if query.newest is not None:
            statement += f" LIMIT {int(query.newest)}"
        with self._read() as cursor:
            cursor.execute(self.sql(statement), params)
            rows = cursor.fetchall()
        rows.reverse()
        return [(str(r[0]), int(r[1]), r[2], r[3]) for r in rows]

    def _load(self, rows: list[tuple[str, int, Any, Any]]) -> list[Operation]:
        if not rows:
            return []
        ops = [row[0] for row in rows]
        bodies: dict[str, list[dict[str, Any]]] = {op: [] for op in ops}
        with self._read() as cursor:
            for start in range(0, len(ops), PAGE):
                part = ops[start:start + PAGE]
                marks = ",".join(["%s"] * len(part))
                cursor.execute(self.sql(f"SELECT op, body FROM records WHERE op IN ({marks}) "
                                        "ORDER BY op, seq"), part)
                for op, body in cursor.fetchall():
                    bodies[str(op)].append(json.loads(body))
        sessions = {str(r[2]) for r in rows if r[2] is not None and r[3]}
        live = self.live_sessions(sessions) if sessions else set()
        result: list[Operation] = []
        for op, order, session, _ in rows:
            folded = fold(bodies[op])
            if not folded:
                continue
            operation = folded[0]
            operation.order = order
            if session is not None:
                operation.session_alive = str(session) in live
            result.append(operation)
        return result

    def records(self, page: int = 5000) -> Iterator[dict[str, Any]]:
        """Every record in journal order, read a page at a time (flat memory)."""
        for _, body in self.raw_records(page):
            yield json.loads(body)

    def raw_records(self, page: int = 5000) -> Iterator[tuple[int, str]]:
        """``(id, body)`` of every record in journal order, a page at a time."""
        last = 0
        while True:
            def work(retry: bool, last: int = last) -> list[Any]:
                with self._read() as cursor:
                    cursor.execute(self.sql("SELECT id, body FROM records WHERE id > %s "
                                            f"ORDER BY id LIMIT {int(page)}"), (last,))
                    return cursor.fetchall()
            with self._mutex:
                rows = self._retrying(work)
            if not rows:
                return
            for record_id, body in rows:
                yield int(record_id), str(body)
            last = int(rows[-1][0])

    def counts(self) -> dict[str, int]:
        """How many records, operations and open operations the journal holds."""
        def work(retry: bool) -> dict[str, int]:
            with self._read() as cursor:
                found = {}
                for name, statement in (
                        ("records", "SELECT COUNT(*) FROM records"),
                        ("operations", "SELECT COUNT(*) FROM operations"),
                        ("open_operations", "SELECT COUNT(*) FROM operations WHERE is_open")):
                    cursor.execute(statement)
                    found[name] = int(cursor.fetchone()[0])
                return found
        with self._mutex:
            result: dict[str, int] = self._retrying(work)
            return result

    # ---- pruning -------------------------------------------------------------------------

    def prune(self, before: str, *, dry_run: bool = False) -> tuple[int, int]:
        """Remove the closed operations whose last record is older than ``before`` (never an
        open one). Returns (operations, records) removed (or that would be)."""
        removed_ops = removed_records = 0
        after = 0
        while True:
            def select(retry: bool, after: int = after) -> list[Any]:
                with self._read() as cursor:
                    cursor.execute(self.sql(
                        "SELECT op, records, first_id FROM operations WHERE started < %s "
                        "AND last_ts < %s AND NOT is_open AND first_id > %s "
                        f"ORDER BY first_id LIMIT {PAGE}"), (before, before, after))
                    return cursor.fetchall()
            with self._mutex:
                rows = self._retrying(select)
                if not rows:
                    return removed_ops, removed_records
                after = int(rows[-1][2])
                ops = [str(r[0]) for r in rows]
                if not dry_run:
                    marks = ",".join(["%s"] * len(ops))

                    def work(retry: bool, ops: list[str] = ops, marks: str = marks) -> None:
                        with self._write() as cursor:
                            # re-checked inside the transaction: never an open operation
                            cursor.execute(self.sql(
                                f"SELECT op FROM operations WHERE op IN ({marks}) AND "
                                "NOT is_open"), ops)
                            closed = [str(r[0]) for r in cursor.fetchall()]
                            if not closed:
                                return
                            inner = ",".join(["%s"] * len(closed))
                            for table in ("records", "op_devices", "operations"):
                                cursor.execute(self.sql(
                                    f"DELETE FROM {table} WHERE op IN ({inner})"), closed)
                    self._retrying(work)
            removed_ops += len(rows)
            removed_records += sum(int(r[1]) for r in rows)

    # ---- drained links -------------------------------------------------------------------

    def drains(self) -> dict[str, Drain]:
        """The drained links now: link name -> its drain."""
        def work(retry: bool) -> dict[str, Drain]:
            with self._read() as cursor:
                cursor.execute("SELECT link, since, username, reason, op FROM link_states")
                return {str(r[0]): Drain(str(r[0]), str(r[1]), str(r[2]), str(r[3]),
                                         str(r[4])) for r in cursor.fetchall()}
        with self._mutex:
            result: dict[str, Drain] = self._retrying(work)
            return result

    def set_drain(self, drain: Drain) -> None:
        def work(retry: bool) -> None:
            with self._write() as cursor:
                cursor.execute(self.sql(
                    "INSERT INTO link_states (link, since, username, reason, op) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (link) DO UPDATE SET "
                    "since = excluded.since, username = excluded.username, "
                    "reason = excluded.reason, op = excluded.op"),
                    (drain.link, drain.since, drain.user, drain.reason, drain.op))
        with self._mutex:
            self._retrying(work)

    def clear_drain(self, link: str) -> None:
        def work(retry: bool) -> None:
            with self._write() as cursor:
                cursor.execute(self.sql("DELETE FROM link_states WHERE link = %s"), (link,))
        with self._mutex:
            self._retrying(work)

    # ---- jobs on the fabric ----------------------------------------------------------------

    def jobs(self) -> dict[str, JobRow]:
        """The jobs planned and not ended: name -> its row."""
        def work(retry: bool) -> dict[str, JobRow]:
            with self._read() as cursor:
                cursor.execute("SELECT name, since, username, op, body FROM jobs")
                return {str(r[0]): JobRow(str(r[0]), str(r[1]), str(r[2]), str(r[3]),
                                          str(r[4])) for r in cursor.fetchall()}
        with self._mutex:
            result: dict[str, JobRow] = self._retrying(work)
            return result

    def set_job(self, job: JobRow) -> None:
        def work(retry: bool) -> None:
            with self._write() as cursor:
                cursor.execute(self.sql(
                    "INSERT INTO jobs (name, since, username, op, body) "
                    "VALUES (%s, %s, %s, %s, %s)"),
                    (job.name, job.since, job.user, job.op, job.body))
        with self._mutex:
            self._retrying(work)

    def update_job(self, name: str, body: str) -> None:
        """Job ``name``'s kept document is now ``body``."""
        def work(retry: bool) -> None:
            with self._write() as cursor:
                cursor.execute(self.sql("UPDATE jobs SET body = %s WHERE name = %s"),
                               (body, name))
        with self._mutex:
            self._retrying(work)

    def clear_job(self, name: str) -> None:
        def work(retry: bool) -> None:
            with self._write() as cursor:
                cursor.execute(self.sql("DELETE FROM jobs WHERE name = %s"), (name,))
        with self._mutex:
            self._retrying(work)
