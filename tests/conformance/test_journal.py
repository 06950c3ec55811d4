"""The journal's conformance suite: the same tests against both stores.

Every test here takes ``store_journal``, an empty journal on SQLite (a file) and on
PostgreSQL (a database of a private cluster, see tests/postgres_peer.py): append,
intent and result, refusals and notes, the indexed queries, interrupted operations
closed exactly once, prune, import and export, the device locks across processes, the
drained links. What only one store does (SQLite's lock files, PostgreSQL's sessions)
is at the end.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
from pathlib import Path

import pytest

from drivers.errors import ValidationError
from msoctl.jobs.registry import Jobs
from msoctl.journal import DeviceBusy, DeviceLock, Journal, JournalError, LegacyJournal
from msoctl.journal.jsonl import export_jsonl, import_jsonl
from msoctl.journal.schema import LATEST
from msoctl.linkstate import LinkStates
from tests.support import dead_pid, wait_until
from tests.support.journal import assert_consistent, start_worker


def intent_by_hand(journal: Journal, op: str, pid: int, *, host: str | None = None,
                   device: str = "ocs-a", action: str = "ocs.connect") -> None:
    """An intent record as a crashed msoctl process would have left it."""
    journal.append({"op": op, "event": "intent", "device": device, "action": action,
                    "user": "someone", "host": host or socket.gethostname(), "pid": pid})


# ---- appending and reading -----------------------------------------------------------------


def test_append_commits_records_in_order_with_ts(store_journal: Journal) -> None:
    journal = store_journal
    first = journal.append({"op": "a1", "event": "intent", "device": "ocs-a"})
    journal.append({"op": "a1", "event": "result", "device": "ocs-a", "status": "ok"})
    records = list(journal.records())
    assert [r["event"] for r in records] == ["intent", "result"]
    assert records[0] == first
    for record in records:
        assert record["ts"].endswith("Z") and record["ts"][:2] == "20" and "T" in record["ts"]
    assert Journal(journal.location).operations()[0].status == "ok"  # another instance
    assert assert_consistent(journal)["records"] == 2


def test_the_intent_is_committed_before_the_change_runs(store_journal: Journal) -> None:
    """Committed, seen from outside: inside the block, another process (its own
    connection) already finds the intent."""
    journal = store_journal
    with journal.change(device="ocs-a", action="ocs.connect", pairs=["1:65"]) as change:
        seen = _read_elsewhere(journal)
        assert [(r["op"], r["event"]) for r in seen] == [(change.op, "intent")]
    assert [r["event"] for r in _read_elsewhere(journal)] == ["intent", "result"]


def _read_elsewhere(journal: Journal) -> list[dict[str, object]]:
    import subprocess
    import sys

    from tests.support.journal import ROOT

    code = ("import json,sys; from msoctl.journal import Journal; "
            "print(json.dumps(list(Journal(sys.argv[1]).records())))")
    done = subprocess.run([sys.executable, "-c", code, journal.where], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    records: list[dict[str, object]] = json.loads(done.stdout)
    return records


def test_change_writes_intent_then_result(store_journal: Journal) -> None:
    journal = store_journal
    with journal.change(device="ocs-a", action="ocs.connect", pairs=["1:65"]) as change:
        assert [r["event"] for r in journal.records()] == ["intent"]
        assert journal.operations()[0].status == "running"
        change.outcome["connected"] = 1
    intent, result = journal.records()
    assert intent["op"] == result["op"] == change.op
    assert (intent["device"], intent["action"], intent["pairs"]) == ("ocs-a", "ocs.connect",
                                                                     ["1:65"])
    assert intent["pid"] == os.getpid() and intent["host"] == socket.gethostname()
    assert intent["user"]
    assert (result["event"], result["status"], result["connected"]) == ("result", "ok", 1)
    assert result["duration_seconds"] >= 0 and "error" not in result
    [operation] = journal.operations()
    assert operation.status == "ok" and operation.result == result


def test_change_status_failure_and_note(store_journal: Journal) -> None:
    journal = store_journal
    with journal.change(device="ocs-a", action="ocs.apply") as change:
        change.status = "partial"
        change.note("override", reason="maintenance window")
    with pytest.raises(ValueError, match="boom"), \
            journal.change(device="ocs-a", action="ocs.connect") as change:
        change.outcome["sent"] = 2
        raise ValueError("boom")
    first, second = journal.operations()
    assert first.status == "partial"
    assert [r["event"] for r in first.records] == ["intent", "override", "result"]
    assert first.records[1]["reason"] == "maintenance window"
    assert second.status == "failed"
    assert second.result is not None
    assert (second.result["error"], second.result["sent"]) == ("ValueError: boom", 2)
    assert_consistent(journal)


def test_refuse_is_journaled_as_refused(store_journal: Journal) -> None:
    journal = store_journal
    journal.refuse(device="ocs-b", action="ocs.connect", reason="port 200 out of range",
                   exit_code=2, pairs=["1:200"])
    [record] = journal.records()
    assert (record["event"], record["reason"], record["exit_code"]) == (
        "refused", "port 200 out of range", 2)
    assert record["pairs"] == ["1:200"] and record["pid"] == os.getpid()
    [operation] = journal.operations()
    assert (operation.status, operation.device) == ("refused", "ocs-b")
    assert journal.interrupted("ocs-b") == []
    assert journal.operations(open_only=True) == []


def test_interrupted_changes_record_what_the_device_holds(store_journal: Journal) -> None:
    """Ctrl-C, SIGTERM and a failure with a failing read-back: the result says how it
    ended and what was found; each operation is closed."""
    from msoctl.interrupts import Terminated

    journal = store_journal
    with pytest.raises(KeyboardInterrupt), journal.change(
            device="ocs-a", action="ocs.apply",
            read_back=lambda: {"state": "applied", "map": {"1": 65}}):
        raise KeyboardInterrupt
    with pytest.raises(Terminated), journal.change(device="ocs-a", action="ocs.apply") as change:
        change.read_back = lambda: {"state": "not applied"}
        raise Terminated
    with pytest.raises(RuntimeError), journal.change(device="ocs-a", action="ocs.apply") as change:
        def unreachable() -> dict[str, object]:
            raise OSError("no route to host")
        change.read_back = unreachable
        raise RuntimeError("link down")
    results = [o.result for o in journal.operations()]
    assert all(r is not None for r in results)
    first, second, third = (r for r in results if r is not None)
    assert (first["status"], first["signal"], first["found"]) == (
        "interrupted", "SIGINT", {"state": "applied", "map": {"1": 65}})
    assert (second["signal"], second["found"]) == ("SIGTERM", {"state": "not applied"})
    assert third["error"] == "RuntimeError: link down"
    assert third["found"] == {"state": "unknown", "error": "OSError: no route to host"}
    assert journal.interrupted("ocs-a") == []


def test_a_second_signal_while_the_result_is_written_waits_for_it(
        store_journal: Journal) -> None:
    def read_back() -> dict[str, object]:
        signal.raise_signal(signal.SIGINT)  # a second Ctrl-C, during the read-back
        return {"state": "applied"}

    with pytest.raises(KeyboardInterrupt), store_journal.change(
            device="ocs-a", action="ocs.apply", read_back=read_back):
        raise RuntimeError("first failure")
    [operation] = store_journal.operations()
    assert operation.result is not None
    assert (operation.result["status"], operation.result["found"]) == (
        "failed", {"state": "applied"})


# ---- the indexed queries -------------------------------------------------------------------


def test_queries_by_device_action_status_time_and_newest(store_journal: Journal) -> None:
    journal = store_journal
    with journal.change(device="ocs-a", action="ocs.connect"):
        pass
    with pytest.raises(RuntimeError), journal.change(device="ocs-b", action="ocs.disconnect"):
        raise RuntimeError("link down")
    journal.refuse(device="ocs-a", action="ocs.apply", reason="bad map", exit_code=2)
    with journal.change(device="link-1,link-2", action="protection.switch"):
        pass
    with journal.change(device="amp-1", action="amp.set") as change:
        change.status = "pending"
    every = journal.operations()
    assert [(o.device, o.action, o.status) for o in every] == [
        ("ocs-a", "ocs.connect", "ok"), ("ocs-b", "ocs.disconnect", "failed"),
        ("ocs-a", "ocs.apply", "refused"), ("link-1,link-2", "protection.switch", "ok"),
        ("amp-1", "amp.set", "pending")]
    assert [len(o.records) for o in every] == [2, 2, 1, 2, 2]
    assert [o.action for o in journal.operations("ocs-a")] == ["ocs.connect", "ocs.apply"]
    assert journal.operations("ocs-z") == []
    assert [o.action for o in journal.operations(action_prefix="ocs")] == [
        "ocs.connect", "ocs.disconnect", "ocs.apply"]
    assert [o.action for o in journal.operations(action_prefix="ocs.d")] == ["ocs.disconnect"]
    # the newest N of a prefix: merged from each action's own index range
    assert [o.action for o in journal.operations(action_prefix="ocs", newest=2)] == [
        "ocs.disconnect", "ocs.apply"]
    assert [o.action for o in journal.operations(action_prefix="o", newest=5)] == [
        "ocs.connect", "ocs.disconnect", "ocs.apply"]
    assert journal.operations(action_prefix="zzz", newest=3) == []
    assert [o.device for o in journal.operations(actions=("amp.set", "ocs.connect"),
                                                 newest=1)] == ["amp-1"]
    assert [o.device for o in journal.operations(action="ocs.apply")] == ["ocs-a"]
    assert [o.device for o in journal.operations(actions=("amp.set", "ocs.apply"))] == [
        "ocs-a", "amp-1"]
    assert [o.device for o in journal.operations(status="pending")] == ["amp-1"]
    assert [o.device for o in journal.operations(mentions="link-2")] == ["link-1,link-2"]
    assert journal.operations(device="link-2") == []  # device is the exact name
    assert [o.device for o in journal.operations(newest=2)] == ["link-1,link-2", "amp-1"]
    assert [o.action for o in journal.operations("ocs-a", newest=1)] == ["ocs.apply"]
    last = journal.last("ocs-a")
    assert last is not None and last.action == "ocs.apply"
    assert journal.operation(every[1].op) is not None
    assert journal.operation("nope") is None
    since = journal.operations(since=every[3].started)  # same millisecond: may be more
    assert since[-2:] == every[3:] and all(o.started >= every[3].started for o in since)
    assert journal.operations(since="2999") == []
    newest_first = [o.device for o in journal.newest_first(page=2)]
    assert newest_first == [o.device for o in reversed(every)]


# ---- interrupted operations ------------------------------------------------------------------


def test_an_intent_whose_process_is_gone_is_interrupted_and_closed_once(
        store_journal: Journal) -> None:
    journal = store_journal
    intent_by_hand(journal, "crashed", dead_pid())
    intent_by_hand(journal, "remote", os.getppid(), host="not-" + socket.gethostname())
    intent_by_hand(journal, "elsewhere", os.getppid())  # alive on this host: running
    statuses = {o.op: o.status for o in journal.operations()}
    assert statuses == {"crashed": "interrupted", "remote": "interrupted",
                        "elsewhere": "running"}
    assert [o.op for o in journal.interrupted("ocs-a")] == ["crashed", "remote"]
    assert journal.interrupted("ocs-b") == []
    assert journal.close("crashed", {"device": "ocs-a", "action": "ocs.connect",
                                     "status": "interrupted", "resolved_by": "x1",
                                     "found": "map unchanged"})
    assert not journal.close("crashed", {"device": "ocs-a", "action": "ocs.connect",
                                         "status": "interrupted", "resolved_by": "x2"})
    closed = journal.operation("crashed")
    assert closed is not None and closed.result is not None
    assert closed.result["resolved_by"] == "x1" and closed.status == "interrupted"
    assert not closed.is_open and not closed.orphaned
    assert [o.op for o in journal.interrupted("ocs-a")] == ["remote"]
    assert [r["event"] for r in journal.records()].count("result") == 1
    assert_consistent(journal)


def test_two_processes_closing_one_operation_close_it_once(store_journal: Journal) -> None:
    journal = store_journal
    intent_by_hand(journal, "orphan01", dead_pid())
    workers = [start_worker(journal, "close", "orphan01", wait_ready=False)[0]
               for _ in range(4)]
    answers = sorted(w.communicate(timeout=60)[0].strip() for w in workers)
    assert answers == ["closed", "not closed", "not closed", "not closed"]
    assert [r["event"] for r in journal.records()] == ["intent", "result"]
    assert journal.interrupted("ocs-a") == []


# ---- prune, import, export -------------------------------------------------------------------


def test_prune_removes_old_closed_operations_never_an_open_one(store_journal: Journal) -> None:
    journal = store_journal
    journal.append({"ts": "2020-01-01T00:00:00.000Z", "op": "old-ok", "event": "intent",
                    "device": "ocs-a", "action": "ocs.connect", "pid": dead_pid()})
    journal.append({"ts": "2020-01-01T00:00:01.000Z", "op": "old-ok", "event": "result",
                    "device": "ocs-a", "action": "ocs.connect", "status": "ok"})
    journal.append({"ts": "2020-01-02T00:00:00.000Z", "op": "old-open", "event": "intent",
                    "device": "ocs-a", "action": "ocs.connect", "pid": dead_pid()})
    journal.append({"ts": "2020-01-03T00:00:00.000Z", "op": "old-refused", "event": "refused",
                    "device": "ocs-b", "action": "ocs.connect"})
    journal.append({"ts": "2020-01-04T00:00:00.000Z", "op": "ends-late", "event": "intent",
                    "device": "ocs-b", "action": "ocs.connect"})
    journal.append({"ts": "2024-01-04T00:00:00.000Z", "op": "ends-late", "event": "result",
                    "device": "ocs-b", "action": "ocs.connect", "status": "ok"})
    with journal.change(device="ocs-a", action="ocs.connect"):
        pass
    assert journal.store.prune("2021-01-01T00:00:00.000Z", dry_run=True) == (2, 3)
    assert len(journal.operations()) == 5
    assert journal.store.prune("2021-01-01T00:00:00.000Z") == (2, 3)
    left = [o.op for o in journal.operations()]
    assert left[:2] == ["old-open", "ends-late"] and len(left) == 3
    assert journal.store.prune("2999-01-01T00:00:00.000Z") == (2, 4)
    assert [o.op for o in journal.operations()] == ["old-open"]  # open: never pruned
    assert_consistent(journal)


def test_import_of_a_jsonl_journal_with_torn_lines(store_journal: Journal,
                                                   tmp_path: Path) -> None:
    """The JSON-lines journals of earlier versions: a torn line (a crash mid-write) and
    lines that are no records are skipped; importing twice adds nothing."""
    old = tmp_path / "journal.jsonl"
    lines = [
        {"ts": "2024-05-01T10:00:00.000Z", "op": "o1", "event": "intent", "device": "ocs-a",
         "action": "ocs.connect", "user": "ann", "host": "h1", "pid": 11},
        {"ts": "2024-05-01T10:00:01.000Z", "op": "o1", "event": "result", "device": "ocs-a",
         "action": "ocs.connect", "status": "ok"},
        {"ts": "2024-05-01T10:00:02.000Z", "op": "o2", "event": "intent", "device": "ocs-b",
         "action": "ocs.apply", "user": "bob", "host": "h2", "pid": 12},
    ]
    text = "\n".join(json.dumps(line) for line in lines[:2]) + '\n{"op": "torn","ev\n' + \
        '[1, 2]\n\n{"no_op": 1}\n' + json.dumps(lines[2]) + "\n" + '{"op":"last","event":"in'
    old.write_text(text)
    report = import_jsonl(store_journal, old)
    assert (report.lines, report.added, report.present, report.skipped) == (8, 3, 0, 5)
    assert list(store_journal.records()) == lines
    again = import_jsonl(store_journal, old)
    assert (again.added, again.present) == (0, 3)
    assert [o.status for o in store_journal.operations()] == ["ok", "interrupted"]
    assert [o.op for o in store_journal.interrupted("ocs-b")] == ["o2"]
    assert_consistent(store_journal)


def test_export_and_import_round_trip(store_journal: Journal, tmp_path: Path) -> None:
    import io

    journal = store_journal
    with journal.change(device="ocs-a", action="ocs.connect", pairs=["1:65"]) as change:
        change.note("override", reason="x", nested={"a": [1, 2.5, None]})
    journal.refuse(device="ocs-b", action="ocs.apply", reason="no", exit_code=3)
    out = io.StringIO()
    assert export_jsonl(journal, out) == 4
    exported = tmp_path / "export.jsonl"
    exported.write_text(out.getvalue())
    copy = Journal(tmp_path / "copy.sqlite")
    assert import_jsonl(copy, exported).added == 4
    assert list(copy.records()) == list(journal.records())
    assert [(o.op, o.status) for o in copy.operations()] == [
        (o.op, o.status) for o in journal.operations()]


# ---- locks -----------------------------------------------------------------------------------


def test_a_second_lock_on_a_device_is_busy_and_names_the_holder(
        store_journal: Journal) -> None:
    journal = store_journal
    with DeviceLock(journal, "ocs-a"):
        with pytest.raises(DeviceBusy) as caught, DeviceLock(journal, "ocs-a"):
            pass
        message = str(caught.value)
        assert message.startswith("ocs-a ")
        assert f"pid {os.getpid()}" in message and socket.gethostname() in message
        with DeviceLock(journal, "ocs-b"):  # another device: no conflict
            pass
    with DeviceLock(journal, "ocs-a"):  # released on exit
        pass
    with pytest.raises(RuntimeError), DeviceLock(journal, "ocs-a"):
        raise RuntimeError("failed mid-change")
    with DeviceLock(journal, "ocs-a"):  # and when the block raised
        pass


def test_locks_exclude_across_processes_and_a_killed_holder_frees_its_lock(
        store_journal: Journal) -> None:
    journal = store_journal
    holder, _ = start_worker(journal, "hold-lock", "ocs-a", host="host-b")
    try:
        with pytest.raises(DeviceBusy) as caught, DeviceLock(journal, "ocs-a"):
            pass
        message = str(caught.value)
        assert f"pid {holder.pid} on host-b" in message, message
        assert "ocs-a is being changed by" in message
        with DeviceLock(journal, "ocs-b"):
            pass
    finally:
        holder.kill()  # SIGKILL: no chance to release anything itself
        holder.communicate(timeout=30)

    def freed() -> bool:
        try:
            with DeviceLock(journal, "ocs-a"):
                return True
        except DeviceBusy:
            return False

    # The kernel frees a file lock as the process dies; PostgreSQL frees an advisory lock
    # when the holder's server process sees its connection closed, a moment later (on a
    # loaded machine, once, just after the holder's exit had been collected).
    wait_until(freed, "the killed holder's lock freed by the kernel or the database",
               seconds=10)


# ---- drained links ---------------------------------------------------------------------------


def test_drained_links_live_in_the_store(store_journal: Journal) -> None:
    states = LinkStates(store_journal)
    assert states.drained() == {}
    entry, new = states.drain("link-1", reason="fiber work")
    assert new and entry.reason == "fiber work" and entry.since.endswith("Z")
    again, new = states.drain("link-1", reason="twice")
    assert not new and again == entry
    elsewhere = LinkStates(Journal(store_journal.location))
    assert "link-1" in elsewhere.drained() and "link-2" not in elsewhere.drained()
    assert elsewhere.drained()["link-1"].op == entry.op
    assert states.undrain("link-1") == entry
    assert states.undrain("link-1") is None
    assert states.drained() == {}
    assert [o.action for o in store_journal.operations("link-1")] == [
        "link.drain", "link.drain", "link.undrain", "link.undrain"]


# ---- kept jobs ---------------------------------------------------------------------------------


def test_kept_jobs_live_in_the_store_with_their_circuits(store_journal: Journal) -> None:
    jobs = Jobs(store_journal)
    document = {"world_size": 8, "vendors": ["nvidia"], "links": ["link-1"],
                "hosts": [{"name": "gpu-a1", "nics": ["mlx5_0"], "gpus": [0, 1, 2, 3],
                           "first_rank": 0}], "switch_ports": ["sw-a:Ethernet9"]}
    kept = jobs.register("llm", document)
    with pytest.raises(ValidationError, match="has not ended"):
        jobs.register("llm", document)
    jobs.add_circuits("llm", ["link-2", "link-1"], "/tmp/llm-circuits.yaml")
    elsewhere = Jobs(Journal(store_journal.location)).get("llm")
    assert elsewhere.circuits == ["link-2", "link-1"]
    assert elsewhere.links == ["link-1", "link-2"]  # planned, then its circuits
    assert (elsewhere.since, elsewhere.op) == (kept.since, kept.op)
    assert jobs.end("llm").circuits == ["link-2", "link-1"]
    assert jobs.all() == {}
    assert [o.action for o in store_journal.operations("job/llm")] == [
        "job.plan", "job.plan", "job.circuits", "job.end"]


# ---- the schema --------------------------------------------------------------------------------


def test_schema_is_versioned_and_a_newer_one_is_refused(store_journal: Journal) -> None:
    from msoctl.journal import close_stores

    journal = store_journal
    journal.append({"op": "v", "event": "intent", "device": "d"})
    assert journal.store.schema_version() == LATEST
    with journal.store._write() as cursor:
        cursor.execute(journal.store.sql(
            "INSERT INTO schema_version (version, applied, description) VALUES (%s, %s, %s)"),
            (LATEST + 1, "2999-01-01T00:00:00.000Z", "from the future"))
    close_stores()
    try:
        with pytest.raises(JournalError, match="newer than this msoctl knows"):
            Journal(journal.location).append({"op": "w", "event": "intent", "device": "d"})
    finally:
        close_stores()
        if journal.location.path is None:
            import psycopg

            with psycopg.connect(journal.where, autocommit=True) as connection:
                connection.execute("DELETE FROM schema_version WHERE version > %s", (LATEST,))


# ---- SQLite only ------------------------------------------------------------------------------


def test_sqlite_creates_missing_directories_and_reading_creates_nothing(
        tmp_path: Path) -> None:
    journal = Journal(tmp_path / "a" / "b" / "journal.sqlite")
    assert list(journal.records()) == [] and journal.operations() == []
    assert not (tmp_path / "a").exists()
    journal.append({"op": "x", "event": "intent"})
    assert journal.path is not None and journal.path.is_file()
    with sqlite3.connect(journal.path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_processes_opening_a_new_journal_at_once_all_get_in(tmp_path: Path) -> None:
    """Turning a new file to WAL takes its exclusive lock, and SQLite refuses one of two
    processes asking at once ("database is locked") without waiting: an apply creating the
    journal while ``history`` read it failed so. Each opener must wait its turn instead."""
    import multiprocessing

    from tests.support.journal import open_new_journals

    rounds, openers = 60, 4  # about one round in ten collided before the fix
    context = multiprocessing.get_context("spawn")
    start, errors = context.Barrier(openers), context.Queue()
    processes = [context.Process(target=open_new_journals,
                                 args=(str(tmp_path), start, rounds, index, errors))
                 for index in range(openers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * openers
    refused = []
    while not errors.empty():
        refused.append(errors.get())
    assert refused == []
    for n in range(rounds):
        journal = Journal(tmp_path / f"journal-{n}.sqlite")
        assert sorted(o.op for o in journal.operations()) == [f"op-{n}-0", f"op-{n}-2"]
        assert_consistent(journal)


def test_sqlite_unwritable_or_unreadable_is_a_journal_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the journal directory should be")
    journal = Journal(blocker / "journal.sqlite")
    with pytest.raises(JournalError) as caught:
        journal.append({"op": "x", "event": "intent"})
    assert str(blocker) in str(caught.value)
    entered = []
    with pytest.raises(JournalError), journal.change(device="ocs-a", action="ocs.connect"):
        entered.append(True)
    assert entered == []  # a change whose intent cannot be written does not run
    with pytest.raises(JournalError):
        list(Journal(tmp_path).records())  # a directory, not a database
    with pytest.raises(JournalError), DeviceLock(journal, "ocs-a"):
        pass


def test_sqlite_lock_files_sit_beside_the_journal(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    with DeviceLock(journal, "ocs-a") as held, DeviceLock(journal, "ocs-b"):
        assert held.path == tmp_path / "locks" / "ocs-a.lock"
        assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == [
            "ocs-a.lock", "ocs-b.lock"]


def test_a_jsonl_journal_is_refused_with_the_hint_to_import_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "journal.jsonl"
    with pytest.raises(LegacyJournal, match=r"msoctl journal import .*journal\.jsonl"):
        Journal(old).operations()
    renamed = tmp_path / "journal.sqlite"
    renamed.write_text('{"op": "a", "event": "intent"}\n')
    with pytest.raises(LegacyJournal, match="JSON-lines journal, not an SQLite one"):
        Journal(renamed).append({"op": "b", "event": "intent"})
    assert renamed.read_text() == '{"op": "a", "event": "intent"}\n'  # left as it was
    from msoctl.journal import JournalLocation, default_journal_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    legacy = tmp_path / "state" / "msoctl" / "journal.jsonl"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('{"op": "a", "event": "intent"}\n')
    default = JournalLocation(path=default_journal_path(), is_default=True)
    with pytest.raises(LegacyJournal, match="import it first"):
        Journal(default).operations()
    assert import_jsonl(Journal(default, importing=True), legacy).added == 1
    assert [o.op for o in Journal(default).operations()] == ["a"]  # imported: in use


def test_an_older_schema_is_migrated(tmp_path: Path) -> None:
    """A journal made by the first migration only gets the later ones when opened."""
    from msoctl.journal.schema import MIGRATIONS, SQLITE, VERSION_TABLE

    path = tmp_path / "journal.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute(SQLITE.sql(VERSION_TABLE))
        for statement in MIGRATIONS[0][2]:
            raw.execute(SQLITE.sql(statement))
        raw.execute("INSERT INTO schema_version VALUES (1, 'then', 'first')")
    journal = Journal(path)
    LinkStates(journal).drain("link-1", reason="after the migration")
    assert journal.store.schema_version() == LATEST
    with sqlite3.connect(path) as raw:
        versions = [r[0] for r in raw.execute("SELECT version FROM schema_version ORDER BY 1")]
    assert versions == list(range(1, LATEST + 1))


# ---- PostgreSQL only --------------------------------------------------------------------------


@pytest.fixture
def pg_journal(postgres_url: str) -> Journal:
    from tests.support import empty_journal

    return empty_journal(Journal(postgres_url))


def test_postgres_a_live_writer_on_another_host_is_running_until_killed(
        pg_journal: Journal) -> None:
    """On a shared database, the writer's session says whether it is alive, on any host:
    running while its connection is open, interrupted (orphaned) once it is killed."""
    writer, ready = start_worker(pg_journal, "open-change", "ocs-a", host="host-b")
    op = ready.split()[1]
    try:
        [operation] = pg_journal.operations()
        assert (operation.op, operation.intent["host"]) == (op, "host-b")
        assert operation.status == "running" and pg_journal.interrupted("ocs-a") == []
    finally:
        writer.kill()
        writer.communicate(timeout=30)
    import time

    deadline = time.monotonic() + 30
    while not pg_journal.interrupted("ocs-a"):  # the server notices the closed socket
        assert time.monotonic() < deadline, "the killed writer's session never ended"
        time.sleep(0.05)
    assert [o.op for o in pg_journal.interrupted("ocs-a")] == [op]


def test_postgres_a_lock_key_collision_is_detected_and_named(
        pg_journal: Journal, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two device names whose keys collide exclude each other (safe), and the refusal says
    so, naming the other device and its holder."""
    holder, _ = start_worker(pg_journal, "hold-lock", "ocs-a", host="host-b", collide=True)
    try:
        from msoctl.journal import postgres_store

        monkeypatch.setattr(postgres_store, "lock_key", lambda device: 42)
        with pytest.raises(DeviceBusy) as caught, DeviceLock(pg_journal, "ocs-b"):
            pass
        message = str(caught.value)
        assert "ocs-b shares its lock key with ocs-a" in message
        assert f"pid {holder.pid} on host-b" in message
    finally:
        holder.kill()
        holder.communicate(timeout=30)


def test_postgres_url_must_not_hold_a_password_and_one_is_given_by_reference(
        postgres_cluster: object, postgres_url: str, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from msoctl.inventory import load_inventory
    from tests.support.postgres import PASSWORD_ROLE

    database = postgres_url.rpartition("/")[2]
    host_port = postgres_url.split("@")[1].split("/")[0]
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(f"journal: postgresql://{PASSWORD_ROLE}:secret@{host_port}/{database}"
                         "\ndevices: []\n")
    with pytest.raises(Exception, match="must not hold a password") as caught:
        load_inventory(inventory)
    assert "secret" not in str(caught.value)
    inventory.write_text(f"journal: postgresql://{PASSWORD_ROLE}@{host_port}/{database}"
                         "?sslmode=disable&application_name=conformance\n"
                         "journal_password: env:TEST_JOURNAL_PASSWORD\ndevices: []\n")
    location = load_inventory(inventory).journal
    assert location is not None and location.kind == "postgresql"
    monkeypatch.setenv("TEST_JOURNAL_PASSWORD", "wrong")
    with pytest.raises(JournalError, match="password authentication failed"):
        Journal(location).operations()
    monkeypatch.setenv("TEST_JOURNAL_PASSWORD", "pw-for-tests")
    from msoctl.journal import close_stores

    close_stores()
    journal = Journal(location)
    journal.append({"op": "pw", "event": "intent", "device": "d"})
    assert [o.op for o in journal.operations(op="pw")] == ["pw"]
    journal.store.prune("2999")
    with journal.store._write() as cursor:
        cursor.execute("TRUNCATE records, operations, op_devices")
