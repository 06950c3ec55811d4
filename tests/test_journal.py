"""The change journal (the audit trail) and the per-device lock."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from msoctl.journal import DeviceBusy, DeviceLock, Journal, JournalError
from tests.conftest import dead_pid


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "state" / "journal.jsonl")


def lines(journal: Journal) -> list[str]:
    return journal.path.read_text(encoding="utf-8").split("\n")




def intent_by_hand(journal: Journal, op: str, pid: int, *, host: str | None = None,
                   device: str = "ocs-a") -> None:
    """An intent record as a crashed msoctl process would have left it."""
    journal.append({"op": op, "event": "intent", "device": device, "action": "ocs.connect",
                    "user": "someone", "host": host or socket.gethostname(), "pid": pid})


# ---- appending and reading -----------------------------------------------------------------


def test_append_writes_one_json_line_per_record_with_ts(journal: Journal) -> None:
    first = journal.append({"op": "a1", "event": "intent", "device": "ocs-a"})
    journal.append({"op": "a1", "event": "result", "device": "ocs-a", "status": "ok"})

    raw = lines(journal)
    assert raw[-1] == ""  # every record ends with a newline
    assert len(raw) == 3
    records = [json.loads(line) for line in raw[:-1]]
    assert [r["event"] for r in records] == ["intent", "result"]
    assert records[0] == first
    for record in records:
        assert record["ts"].endswith("Z")
        assert record["ts"][:2] == "20" and "T" in record["ts"]
    assert list(journal.records()) == records


def test_append_creates_missing_directories(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "a" / "b" / "journal.jsonl")
    journal.append({"op": "x", "event": "intent"})
    assert journal.path.is_file()


def test_append_is_fsynced_after_the_write(journal: Journal,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync
    on_disk_at_fsync: list[str] = []

    def watching_fsync(fd: int) -> None:
        on_disk_at_fsync.append(journal.path.read_text(encoding="utf-8"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watching_fsync)
    journal.append({"op": "f1", "event": "intent", "device": "ocs-a"})
    assert len(on_disk_at_fsync) == 1
    assert '"op":"f1"' in on_disk_at_fsync[0]  # the record was written before the fsync


def test_records_skip_lines_without_op_and_reading_a_missing_journal(journal: Journal) -> None:
    assert list(journal.records()) == []
    journal.path.parent.mkdir(parents=True)
    journal.path.write_text('{"no_op": 1}\n[1, 2]\n{"op": "k", "event": "intent"}\n')
    assert [r["op"] for r in journal.records()] == ["k"]


def test_torn_last_line_is_skipped_and_next_append_starts_a_fresh_line(
        journal: Journal) -> None:
    journal.append({"op": "before", "event": "intent", "device": "ocs-a"})
    with journal.path.open("ab") as handle:
        handle.write(b'{"op":"torn","event":"inte')  # a crash mid-write: no newline

    assert [r["op"] for r in journal.records()] == ["before"]

    journal.append({"op": "after", "event": "intent", "device": "ocs-a"})
    assert [r["op"] for r in journal.records()] == ["before", "after"]
    raw = lines(journal)
    assert raw[1] == '{"op":"torn","event":"inte'
    assert json.loads(raw[2])["op"] == "after"


def test_torn_line_in_the_middle_does_not_hide_the_rest(journal: Journal) -> None:
    journal.path.parent.mkdir(parents=True)
    journal.path.write_text('{"op": "one"}\n{"op": "tw\n{"op": "three"}\n')
    assert [r["op"] for r in journal.records()] == ["one", "three"]


# ---- changes ------------------------------------------------------------------------------


def test_change_writes_intent_then_result_ok(journal: Journal) -> None:
    with journal.change(device="ocs-a", action="ocs.connect", pairs=["1:65"]) as change:
        inside = list(journal.records())
        assert [r["event"] for r in inside] == ["intent"]
        assert journal.operations()[0].status == "running"
        change.outcome["connected"] = 1

    intent, result = journal.records()
    assert intent["op"] == result["op"] == change.op
    assert intent["device"] == result["device"] == "ocs-a"
    assert intent["action"] == result["action"] == "ocs.connect"
    assert intent["pairs"] == ["1:65"]
    assert intent["pid"] == os.getpid()
    assert intent["host"] == socket.gethostname()
    assert intent["user"]
    assert result["event"] == "result"
    assert result["status"] == "ok"
    assert result["connected"] == 1
    assert result["duration_seconds"] >= 0
    assert "error" not in result
    [operation] = journal.operations()
    assert operation.status == "ok"
    assert operation.result == result


def test_change_status_set_by_the_block_is_recorded(journal: Journal) -> None:
    with journal.change(device="ocs-a", action="ocs.apply") as change:
        change.status = "partial"
    assert journal.operations()[0].status == "partial"


def test_change_that_raises_records_failed_and_reraises(journal: Journal) -> None:
    with pytest.raises(ValueError, match="boom"), \
            journal.change(device="ocs-a", action="ocs.connect") as change:
        change.outcome["sent"] = 2
        raise ValueError("boom")

    intent, result = journal.records()
    assert intent["event"] == "intent"
    assert result["event"] == "result"
    assert result["op"] == intent["op"]
    assert result["status"] == "failed"
    assert result["error"] == "ValueError: boom"
    assert result["sent"] == 2
    assert journal.operations()[0].status == "failed"


def test_change_note_is_part_of_the_operation(journal: Journal) -> None:
    with journal.change(device="ocs-a", action="ocs.connect") as change:
        change.note("override", reason="maintenance window")
    [operation] = journal.operations()
    assert [r["event"] for r in operation.records] == ["intent", "override", "result"]
    assert operation.records[1]["reason"] == "maintenance window"
    assert operation.status == "ok"


def test_refuse_is_journaled_as_refused(journal: Journal) -> None:
    journal.refuse(device="ocs-b", action="ocs.connect", reason="port 200 out of range",
                   exit_code=2, pairs=["1:200"])
    [record] = journal.records()
    assert record["event"] == "refused"
    assert record["reason"] == "port 200 out of range"
    assert record["exit_code"] == 2
    assert record["pairs"] == ["1:200"]
    assert record["pid"] == os.getpid()
    [operation] = journal.operations()
    assert operation.status == "refused"
    assert operation.device == "ocs-b"
    assert journal.interrupted("ocs-b") == []


# ---- operations and their status ------------------------------------------------------------


def test_operations_group_by_op_and_filter_by_device(journal: Journal) -> None:
    with journal.change(device="ocs-a", action="ocs.connect"):
        pass
    with pytest.raises(RuntimeError), journal.change(device="ocs-b", action="ocs.disconnect"):
        raise RuntimeError("link down")
    journal.refuse(device="ocs-a", action="ocs.apply", reason="bad map", exit_code=2)

    operations = journal.operations()
    assert [(o.device, o.action, o.status) for o in operations] == [
        ("ocs-a", "ocs.connect", "ok"),
        ("ocs-b", "ocs.disconnect", "failed"),
        ("ocs-a", "ocs.apply", "refused"),
    ]
    assert len({o.op for o in operations}) == 3
    assert [len(o.records) for o in operations] == [2, 2, 1]
    assert [o.action for o in journal.operations("ocs-a")] == ["ocs.connect", "ocs.apply"]
    assert journal.operations("ocs-z") == []


def test_intent_of_a_dead_process_is_interrupted(journal: Journal) -> None:
    intent_by_hand(journal, "crashed", dead_pid())
    [operation] = journal.operations()
    assert operation.status == "interrupted"
    assert [o.op for o in journal.interrupted("ocs-a")] == ["crashed"]
    assert journal.interrupted("ocs-b") == []


def test_intent_of_a_live_other_process_is_running(journal: Journal) -> None:
    intent_by_hand(journal, "elsewhere", os.getppid())
    [operation] = journal.operations()
    assert operation.status == "running"
    assert journal.interrupted("ocs-a") == []


def test_intent_from_another_host_without_result_is_interrupted(journal: Journal) -> None:
    intent_by_hand(journal, "remote", os.getppid(), host="not-" + socket.gethostname())
    assert journal.operations()[0].status == "interrupted"


def test_interrupted_then_closed_is_no_longer_interrupted(journal: Journal) -> None:
    intent_by_hand(journal, "crashed", dead_pid())
    journal.append({"op": "crashed", "event": "result", "device": "ocs-a",
                    "action": "ocs.connect", "status": "interrupted", "resolved_by": "x1",
                    "found": "map unchanged"})
    [operation] = journal.operations()
    assert operation.status == "interrupted"  # the recorded status of the closing result
    assert operation.result is not None
    assert operation.result["resolved_by"] == "x1"
    # Closed once: no later change finds it again (it used to be re-closed by every one).
    assert not operation.is_open and not operation.orphaned
    assert journal.interrupted("ocs-a") == []


def test_an_interrupted_change_records_what_the_device_holds(journal: Journal) -> None:
    """Ctrl-C mid-change: the result says interrupted, by which signal, and what the
    read-back found; the operation is closed, so nothing closes it again."""
    with pytest.raises(KeyboardInterrupt), journal.change(
            device="ocs-a", action="ocs.apply",
            read_back=lambda: {"state": "applied", "map": {"1": 65}}):
        raise KeyboardInterrupt
    [operation] = journal.operations()
    assert operation.result is not None
    assert operation.result["status"] == "interrupted"
    assert operation.result["signal"] == "SIGINT"
    assert operation.result["found"] == {"state": "applied", "map": {"1": 65}}
    assert "error" not in operation.result
    assert journal.interrupted("ocs-a") == []


def test_a_read_back_set_inside_the_block_and_one_that_fails(journal: Journal) -> None:
    from msoctl.interrupts import Terminated

    with pytest.raises(Terminated), journal.change(device="ocs-a", action="ocs.apply") as change:
        change.read_back = lambda: {"state": "not applied"}
        raise Terminated
    with pytest.raises(RuntimeError), journal.change(device="ocs-a", action="ocs.apply") as change:
        def unreachable() -> dict[str, object]:
            raise OSError("no route to host")
        change.read_back = unreachable
        raise RuntimeError("link down")
    first, second = journal.operations()
    assert first.result is not None and second.result is not None
    assert (first.result["status"], first.result["signal"]) == ("interrupted", "SIGTERM")
    assert first.result["found"] == {"state": "not applied"}
    assert second.result["status"] == "failed"
    assert second.result["error"] == "RuntimeError: link down"
    assert second.result["found"] == {"state": "unknown", "error": "OSError: no route to host"}


def test_a_second_signal_while_the_result_is_written_waits_for_it(journal: Journal) -> None:
    """SIGINT and SIGTERM are held while the read-back and the result are written: the
    record is complete, then the held signal is delivered."""
    import signal

    def read_back() -> dict[str, object]:
        signal.raise_signal(signal.SIGINT)  # a second Ctrl-C, during the read-back
        return {"state": "applied"}

    with pytest.raises(KeyboardInterrupt), journal.change(
            device="ocs-a", action="ocs.apply", read_back=read_back):
        raise RuntimeError("first failure")
    [operation] = journal.operations()
    assert operation.result is not None
    assert operation.result["status"] == "failed"
    assert operation.result["found"] == {"state": "applied"}


# ---- failures to write ---------------------------------------------------------------------


def test_unwritable_journal_directory_is_a_journal_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the journal directory should be")
    journal = Journal(blocker / "journal.jsonl")
    with pytest.raises(JournalError) as caught:
        journal.append({"op": "x", "event": "intent"})
    assert str(journal.path) in str(caught.value)
    assert isinstance(caught.value, OSError)


def test_change_is_not_entered_when_the_intent_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    journal = Journal(blocker / "journal.jsonl")
    entered = []
    with pytest.raises(JournalError), journal.change(device="ocs-a", action="ocs.connect"):
        entered.append(True)
    assert entered == []


def test_unreadable_journal_is_a_journal_error(tmp_path: Path) -> None:
    journal = Journal(tmp_path)  # a directory, not a file
    with pytest.raises(JournalError):
        list(journal.records())


# ---- one change at a time per device --------------------------------------------------------


def test_second_lock_on_the_same_device_is_busy_and_names_the_holder(journal: Journal) -> None:
    with DeviceLock(journal, "ocs-a"):
        with pytest.raises(DeviceBusy) as caught, DeviceLock(journal, "ocs-a"):
            pass
        message = str(caught.value)
        assert message.startswith("ocs-a ")
        assert f"pid {os.getpid()}" in message
        assert socket.gethostname() in message


def test_lock_is_released_on_exit(journal: Journal) -> None:
    with DeviceLock(journal, "ocs-a"):
        pass
    with DeviceLock(journal, "ocs-a") as again:
        assert again.path == journal.path.parent / "locks" / "ocs-a.lock"


def test_lock_is_released_when_the_block_raises(journal: Journal) -> None:
    with pytest.raises(RuntimeError), DeviceLock(journal, "ocs-a"):
        raise RuntimeError("failed mid-change")
    with DeviceLock(journal, "ocs-a"):
        pass


def test_different_devices_do_not_conflict(journal: Journal) -> None:
    with DeviceLock(journal, "ocs-a"), DeviceLock(journal, "ocs-b"):
        held = sorted(p.name for p in (journal.path.parent / "locks").iterdir())
    assert held == ["ocs-a.lock", "ocs-b.lock"]


def test_lock_in_unwritable_directory_is_a_journal_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(JournalError), DeviceLock(Journal(blocker / "journal.jsonl"), "ocs-a"):
        pass
