"""The journal: every change's intent before it is sent, its result after.

Every change writes an ``intent`` record before anything is sent and a ``result``
record once it is known how it ended; each record is committed (durable) before the
call returns, so a change whose intent cannot be written is never sent. An ``intent``
without a ``result`` whose process is gone is an interrupted change: the next change to
that device finds it by index (:meth:`Journal.interrupted`) and closes it with a result
of status ``interrupted`` saying what it found — exactly once, even when two processes
try (:meth:`Journal.close`). Refusals (bad input, safety interlocks) and safety
overrides are journaled too: this is the audit trail.

The records live in a store (:mod:`msoctl.journal.sqlite_store`,
:mod:`msoctl.journal.postgres_store`), one per location and process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msoctl import interrupts
from msoctl.journal.location import JournalLocation, legacy_problem, parse_location
from msoctl.journal.model import _OPEN_OPS, JournalError, Operation, new_id, now_ts, who
from msoctl.journal.store import Query, SqlStore

_STORES: dict[str, SqlStore] = {}
_STORES_LOCK = threading.Lock()


def open_store(location: JournalLocation, *, importing: bool = False) -> SqlStore:
    """This process's store for ``location`` (opened once, shared).

    A new store is first checked for being a JSON-lines journal (:class:`LegacyJournal`).
    Only then: the check reads the file's first bytes, and closing any descriptor of an
    SQLite file drops the POSIX locks this process's connection holds on it.
    """
    key = location.key()
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            problem = legacy_problem(location, beside=not importing)
            if problem is not None:
                raise LegacyJournal(problem)
            if location.path is not None:
                from msoctl.journal.sqlite_store import SqliteStore

                store = SqliteStore(location)
            else:
                from msoctl.journal.postgres_store import PostgresStore

                store = PostgresStore(location)
            _STORES[key] = store
        return store


def close_stores() -> None:
    """Close every connection this process holds (they reopen on the next use)."""
    with _STORES_LOCK:
        for store in _STORES.values():
            store.close()
        _STORES.clear()


def as_location(where: Path | str | JournalLocation) -> JournalLocation:
    if isinstance(where, JournalLocation):
        return where
    if isinstance(where, Path):
        return JournalLocation(path=where)
    try:
        return parse_location(where)
    except ValueError as error:
        raise JournalError(f"journal {where!r}: {error}") from None


class Journal:
    """The journal at ``where``: an SQLite file path, a ``postgresql://`` URL or a
    :class:`JournalLocation`. Nothing is opened until it is used.

    A JSON-lines journal of an earlier version is refused (:class:`LegacyJournal`) with the
    hint to import it, and so is the default location while the old default journal lies
    beside it; ``importing=True`` (``msoctl journal import``) allows the latter.
    """

    def __init__(self, where: Path | str | JournalLocation, *, importing: bool = False):
        self.location = as_location(where)
        self.path: Path | None = self.location.path
        self._importing = importing
        self._store: SqlStore | None = None

    def __repr__(self) -> str:
        return f"Journal({str(self.location)!r})"

    @property
    def where(self) -> str:
        """The file or the database URL (never with a password)."""
        return str(self.location)

    @property
    def store(self) -> SqlStore:
        if self._store is None:
            self._store = open_store(self.location, importing=self._importing)
        return self._store

    # ---- writing -------------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write one record durably; it returns only once the record is committed."""
        full = {"ts": now_ts(), **record}
        self.store.append(full)
        return full

    def close(self, operation: Operation | str, record: dict[str, Any]) -> bool:
        """Close an open operation with ``record`` (its result), unless another process
        closed it first: True when this call closed it."""
        op = operation if isinstance(operation, str) else operation.op
        return self.store.close_open(op, {"ts": now_ts(), **record, "op": op,
                                          "event": "result"})

    def refuse(self, *, device: str, action: str, reason: str, exit_code: int,
               **details: Any) -> None:
        self.append({"op": new_id(), "event": "refused", "device": device, "action": action,
                     "reason": reason, "exit_code": exit_code, **who(), **details})

    # ---- reading -------------------------------------------------------------------------

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record, in journal order (a page at a time)."""
        return self.store.records()

    def operations(self, device: str | None = None, *, mentions: str | None = None,
                   action: str | None = None, action_prefix: str | None = None,
                   actions: tuple[str, ...] | None = None, op: str | None = None,
                   open_only: bool = False, status: str | None = None,
                   since: str | None = None, newest: int | None = None) -> list[Operation]:
        """The operations that match every filter given, oldest first; ``newest=N`` keeps
        the last N. Each is an index lookup (see :class:`msoctl.journal.store.Query`)."""
        return self.store.operations(Query(
            device=device, mentions=mentions, action=action, action_prefix=action_prefix,
            actions=actions, op=op, open_only=open_only, status=status, since=since,
            newest=newest))

    def newest_first(self, device: str | None = None, *, page: int = 50,
                     **filters: Any) -> Iterator[Operation]:
        """The operations matching the filters, newest first, fetched ``page`` at a time:
        for "the last one that ..." without reading further back than needed."""
        before: int | None = None
        while True:
            found = self.store.operations(Query(device=device, newest=page, before=before,
                                                **filters))
            yield from reversed(found)
            if len(found) < page:
                return
            before = found[0].order

    def operation(self, op: str) -> Operation | None:
        found = self.operations(op=op)
        return found[0] if found else None

    def last(self, device: str | None = None, **filters: Any) -> Operation | None:
        """The newest operation matching the filters, or None."""
        found = self.operations(device, newest=1, **filters)
        return found[-1] if found else None

    def interrupted(self, device: str) -> list[Operation]:
        """The orphaned changes of ``device``: begun, never ended, their process gone.

        A change closed since (its ``result`` says ``interrupted`` and who resolved it)
        is not among them: each is closed exactly once.
        """
        return [o for o in self.operations(device, open_only=True) if o.orphaned]

    # ---- a change ------------------------------------------------------------------------

    @contextmanager
    def change(self, *, device: str, action: str,
               read_back: ReadBack | None = None, **intent: Any) -> Iterator[Change]:
        """Journal a change: the intent now, the result when the block ends (either way).

        When the block ends by an exception (the device failed, or SIGINT/SIGTERM
        interrupted it), ``read_back`` is asked what the device really holds, and its
        answer goes into the result as ``found``: the record then says whether the
        change was applied, partly applied or not applied, not just that the program
        stopped. The read-back and the result are written with SIGINT and SIGTERM held,
        so a second Ctrl-C cannot leave the operation open. A signal held while the
        intent is written is raised the moment it is on disk, before the block's first
        statement: the read-back is given here, never set inside the block.
        """
        change = Change(self, new_id(), device, action, read_back=read_back)
        started = time.monotonic()
        written = False
        try:
            # A signal held while the intent is written arrives just after, inside this
            # try: an intent on disk always gets its result.
            with interrupts.deferred():
                _OPEN_OPS.add(change.op)
                self.append({"op": change.op, "event": "intent", "device": device,
                             "action": action, **who(), **intent})
                written = True
            yield change
        except BaseException as error:
            if not written:
                raise
            with interrupts.deferred():
                signal_name = interrupts.signal_name(error)
                record: dict[str, Any] = {
                    "op": change.op, "event": "result", "device": device, "action": action,
                    "status": "interrupted" if signal_name else "failed",
                    "duration_seconds": round(time.monotonic() - started, 4),
                    **change.outcome}
                if signal_name:
                    record["signal"] = signal_name
                else:
                    record["error"] = f"{type(error).__name__}: {error}"
                found = change.found()
                if found is not None:
                    record["found"] = found
                self.append(record)
            raise
        else:
            with interrupts.deferred():
                self.append({"op": change.op, "event": "result", "device": device,
                             "action": action, "status": change.status,
                             "duration_seconds": round(time.monotonic() - started, 4),
                             **change.outcome})
        finally:
            _OPEN_OPS.discard(change.op)


class LegacyJournal(JournalError):
    """The location is a JSON-lines journal of an earlier version (import it first)."""


ReadBack = Callable[[], dict[str, Any]]
"""What a device holds after an interrupted change: ``{"state": "applied" | "partly applied"
| "not applied", ...}`` with whatever else tells it (the map read back, say)."""


@dataclass
class Change:
    journal: Journal
    op: str
    device: str
    action: str
    status: str = "ok"
    outcome: dict[str, Any] = field(default_factory=dict)
    read_back: ReadBack | None = None

    def found(self) -> dict[str, Any] | None:
        """The read-back's answer; ``state: unknown`` with the reason when it fails."""
        if self.read_back is None:
            return None
        try:
            return self.read_back()
        except Exception as error:  # the device may be what failed: say so, keep the record
            return {"state": "unknown", "error": f"{type(error).__name__}: {error}"}

    def note(self, event: str, **details: Any) -> None:
        """A record inside the change (a safety override, a recovered operation)."""
        self.journal.append({"op": self.op, "event": event, "device": self.device,
                             "action": self.action, **details})
