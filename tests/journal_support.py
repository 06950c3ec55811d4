"""Helpers of the journal tests: worker processes, and the store's own consistency check."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from msoctl.journal import Journal
from msoctl.journal.model import fold

ROOT = Path(__file__).resolve().parents[1]


def start_worker(journal: Journal, command: str, *args: str, host: str | None = None,
                 collide: bool = False, wait_ready: bool = True
                 ) -> tuple[subprocess.Popen[str], str]:
    """A ``tests.journal_worker`` process on ``journal``; returns it and its ready line."""
    argv = [sys.executable, "-m", "tests.journal_worker"]
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
