"""Helpers of the journal tests: reading and emptying journals, worker processes, and the
store's own consistency check."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from emulators.lab.constants import JOURNAL_FILE
from msoctl.journal import Journal, close_stores
from msoctl.journal.model import fold
from tests.support.paths import ROOT

if TYPE_CHECKING:  # the lab's emulators are a second of imports in each process spawned here
    from emulators.lab import Lab

JOURNAL_TABLES = ("records", "operations", "op_devices", "link_states", "device_locks")


def lab_journal(lab: Lab) -> Journal:
    """The journal the lab's inventory names (read through the store, like msoctl)."""
    return Journal(lab.state_dir / JOURNAL_FILE)


def journal_actions(path: Path) -> list[str]:
    """The action of every record in the SQLite journal at ``path`` ([] when there is none)."""
    if not path.exists():
        return []
    return [str(r.get("action", "")) for r in Journal(path).records()]


def operation_count(path: Path) -> int:
    """How many operations the SQLite journal at ``path`` holds (0 when there is none):
    read through the store, never the file's bytes (closing a descriptor of an SQLite file
    would drop the locks of this process's connection to it)."""
    return Journal(path).store.counts()["operations"]


def record_count(path: Path) -> int:
    """How many records the SQLite journal at ``path`` holds, read as
    :func:`operation_count` reads."""
    return Journal(path).store.counts()["records"]


def remove_journal(path: Path) -> None:
    """Delete an SQLite journal with its WAL files, this process's connection closed first
    (so that closing it later cannot remove a newer journal's WAL)."""
    close_stores()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def empty_journal(journal: Journal) -> Journal:
    """Remove every row of a PostgreSQL journal (for the next test), and check it is empty."""
    with journal.store._write() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(JOURNAL_TABLES))
    assert journal.store.counts() == {"records": 0, "operations": 0, "open_operations": 0}
    return journal


def start_worker(journal: Journal, command: str, *args: str, host: str | None = None,
                 collide: bool = False, wait_ready: bool = True
                 ) -> tuple[subprocess.Popen[str], str]:
    """A ``tests.support.journal_worker`` process on ``journal``; returns it and its ready line."""
    argv = [sys.executable, "-m", "tests.support.journal_worker"]
    if host:
        argv += ["--host", host]
    if collide:
        argv.append("--collide")
    argv += [journal.where, command, *args]
    process = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = ""
    if wait_ready:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("ready"):
            process.kill()
            _, err = process.communicate(timeout=30)
            raise AssertionError(f"worker {command} did not get ready: {line!r} {err}")
    return process, line


def assert_consistent(journal: Journal) -> dict[str, Any]:
    """Every record parses, every operation's summary row agrees with its records (count,
    order, open or closed, status, device, action), and each operation's records are
    numbered 0..n-1. Returns a few figures for the caller to check."""
    store = journal.store
    with store._read() as cursor:
        cursor.execute("SELECT op, seq, body, id FROM records ORDER BY id")
        rows = cursor.fetchall()
        cursor.execute("SELECT op, first_id, last_id, device, action, status, is_open, "
                       "records FROM operations")
        summaries = {str(r[0]): r for r in cursor.fetchall()}
    bodies = [json.loads(r[2]) for r in rows]  # no torn record: each is whole JSON
    seqs: dict[str, list[int]] = {}
    ids: dict[str, list[int]] = {}
    for row in rows:
        seqs.setdefault(str(row[0]), []).append(int(row[1]))
        ids.setdefault(str(row[0]), []).append(int(row[3]))
    operations = fold(bodies)
    assert set(summaries) == {o.op for o in operations}
    for operation in operations:
        op, first_id, last_id, device, action, status, is_open, count = summaries[operation.op]
        assert sorted(seqs[op]) == list(range(len(operation.records))), op
        assert int(count) == len(operation.records), op
        assert (int(first_id), int(last_id)) == (min(ids[op]), max(ids[op])), op
        assert (device, action) == (operation.device, operation.action), op
        assert bool(is_open) == operation.is_open, op
        expected = None if operation.result is None else str(operation.result.get("status"))
        assert status == expected, op
    return {"records": len(bodies), "operations": len(operations),
            "open": sum(o.is_open for o in operations),
            "hosts": Counter(str(o.intent.get("host")) for o in operations)}


def open_new_journals(directory: str, start: Any, rounds: int, index: int, errors: Any) -> None:
    """One of several processes that, ``rounds`` times, wait at the barrier ``start`` and then
    open the same new SQLite journal at once: the even ones write to it, the odd ones read.
    What refuses them goes to the queue ``errors``."""
    from msoctl.journal import JournalError

    for n in range(rounds):
        start.wait(timeout=30)  # a dead peer breaks the barrier instead of hanging it
        journal = Journal(Path(directory) / f"journal-{n}.sqlite")
        try:
            if index % 2 == 0:
                journal.append({"op": f"op-{n}-{index}", "event": "intent"})
            else:
                list(journal.records())
        except JournalError as error:
            errors.put(str(error))
