"""The journal under faults: the database restarting or unreachable, a writer killed
mid-record, sixteen writers from two hosts at once.

The PostgreSQL restarts run on a cluster of this module's own (the session's is shared
with the other modules); everything else runs on both stores.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from emulators.lab import Lab
from msoctl.journal import DeviceBusy, DeviceLock, Journal, JournalError, close_stores
from tests.support import Msoctl
from tests.support.journal import assert_consistent, start_worker
from tests.support.postgres import PostgresCluster, running_cluster

WRITERS = 16
CHANGES_PER_WRITER = 12


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[PostgresCluster]:
    yield from running_cluster()


@pytest.fixture
def restartable(own_cluster: PostgresCluster) -> Iterator[tuple[PostgresCluster, Journal]]:
    url = own_cluster.create_database("faults")
    yield own_cluster, Journal(url)
    close_stores()
    if not (own_cluster.data / "postmaster.pid").exists():
        own_cluster.start_server()


# ---- the database restarts ----------------------------------------------------------------


def test_a_restart_mid_change_and_the_change_completes(
        restartable: tuple[PostgresCluster, Journal]) -> None:
    """The server restarts between the intent and the result: the result is written on a
    new connection, once; the device lock is taken again on the new session and still
    excludes another process."""
    cluster, journal = restartable
    with DeviceLock(journal, "ocs-a"), journal.change(device="ocs-a", action="ocs.apply") as c:
        cluster.restart("fast")
        c.outcome["sent"] = True
    assert journal.store.lost_locks == []  # type: ignore[attr-defined]
    [operation] = journal.operations()
    assert operation.status == "ok" and operation.result is not None
    assert operation.result["sent"] is True
    assert [r["event"] for r in journal.records()] == ["intent", "result"]
    assert assert_consistent(journal)["open"] == 0
    with DeviceLock(journal, "ocs-b"):
        cluster.restart("immediate")  # a crash of the server, not a clean stop
        journal.operations()  # the holder's next statement reconnects and retakes its lock
        assert journal.store.lost_locks == []  # type: ignore[attr-defined]
        holder, _ = start_worker(journal, "hold-lock", "ocs-b", wait_ready=False)
        out, err = holder.communicate(timeout=60)
        assert holder.returncode != 0 and "ocs-b is being changed by" in err, (out, err)


def test_a_database_down_past_the_retry_fails_the_change_which_the_next_one_closes(
        restartable: tuple[PostgresCluster, Journal], monkeypatch: pytest.MonkeyPatch) -> None:
    """Down for good after the intent: the result cannot be written, the change ends with
    a JournalError and stays open; once the server is back, the next change of the device
    finds it interrupted and closes it, exactly once."""
    from msoctl.journal import postgres_store

    monkeypatch.setattr(postgres_store, "RECONNECT_SECONDS", 0.5)
    cluster, journal = restartable
    with pytest.raises(JournalError, match="could not reconnect"), \
            journal.change(device="ocs-a", action="ocs.apply"):
        cluster.stop("fast")
    cluster.start_server()
    [orphan] = journal.interrupted("ocs-a")
    with journal.change(device="ocs-a", action="ocs.apply") as change:
        assert journal.close(orphan, {"device": "ocs-a", "action": "ocs.apply",
                                      "status": "interrupted", "resolved_by": change.op})
    assert journal.interrupted("ocs-a") == []
    assert [o.status for o in journal.operations()] == ["interrupted", "ok"]
    assert_consistent(journal)


# ---- the database is unreachable ---------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once it is closed


def test_an_unreachable_database_is_one_error_and_no_device_is_touched(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """The inventory's journal is a database nobody answers for: ``ocs connect`` fails with
    one error line and exit 1 before anything is sent (the OCS map is unchanged)."""
    document = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    url = f"postgresql://msoctl@127.0.0.1:{_closed_port()}/msoctl?connect_timeout=2"
    document["journal"] = url
    for device in document["devices"]:  # the copy lives elsewhere: keep secrets reachable
        for key, value in list(device.items()):
            if isinstance(value, str) and value.startswith("file:") and \
                    not Path(value[5:]).is_absolute():
                device[key] = f"file:{lab.state_dir / value[5:]}"
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(document))
    before = lab.ocs["ocs-a"].connection_map()
    result = msoctl("--inventory", str(inventory), "ocs", "connect", "ocs-a", "3:67")
    assert result.code == 1, result
    assert result.err.count("\n") == 1 and result.err.startswith("error: "), result.err
    assert "cannot reach the journal database" in result.err and url.split("?")[0] in result.err
    assert lab.ocs["ocs-a"].connection_map() == before
    history = msoctl("--journal", url, "history")
    assert history.code == 1 and history.err.count("\n") == 1, history


# ---- a writer killed mid-record, many writers at once ---------------------------------------


def test_a_writer_killed_mid_record_leaves_no_torn_record(store_journal: Journal) -> None:
    """SIGKILL while a writer commits notes as fast as it can: every record is whole, the
    summary agrees with the records, and the next change finds the operation interrupted
    and closes it once."""
    journal = store_journal
    writer, ready = start_worker(journal, "notes-forever", "ocs-a")
    op = ready.split()[1]
    deadline = time.monotonic() + 60
    while journal.store.counts()["records"] < 40:
        assert time.monotonic() < deadline and writer.poll() is None, writer.communicate()
        time.sleep(0.01)
    os.kill(writer.pid, signal.SIGKILL)
    writer.communicate(timeout=30)
    figures = assert_consistent(journal)
    assert figures["open"] == 1 and figures["records"] >= 40
    deadline = time.monotonic() + 30
    while not journal.interrupted("ocs-a"):  # PostgreSQL: the server notices the socket
        assert time.monotonic() < deadline, "the killed writer is never seen as gone"
        time.sleep(0.05)
    [orphan] = journal.interrupted("ocs-a")
    assert orphan.op == op
    with journal.change(device="ocs-a", action="ocs.apply") as change:
        assert journal.close(orphan, {"device": "ocs-a", "action": orphan.action,
                                      "status": "interrupted", "resolved_by": change.op})
    assert journal.interrupted("ocs-a") == []
    assert assert_consistent(journal)["open"] == 0


def test_sixteen_writers_from_two_hosts_lose_nothing(store_journal: Journal) -> None:
    """16 processes (own connections), 8 reporting host-a and 8 host-b, write changes at
    once, and take turns on one shared device under its lock: every record arrives, every
    operation is whole and closed, and no two holders of the shared lock overlapped."""
    journal = store_journal
    workers = [start_worker(journal, "writer", str(n), str(CHANGES_PER_WRITER),
                            host="host-a" if n % 2 else "host-b")[0] for n in range(WRITERS)]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    locked = CHANGES_PER_WRITER // 4
    per_writer = 3 * CHANGES_PER_WRITER + 3 * locked
    figures = assert_consistent(journal)
    assert figures["records"] == WRITERS * per_writer
    assert figures["operations"] == WRITERS * (CHANGES_PER_WRITER + locked)
    assert figures["open"] == 0
    assert figures["hosts"] == {"host-a": 8 * (CHANGES_PER_WRITER + locked),
                                "host-b": 8 * (CHANGES_PER_WRITER + locked)}
    for n in range(WRITERS):
        mine = [o for o in journal.operations(action="test.write")
                if o.intent["writer"] == str(n)]
        assert sorted(o.intent["n"] for o in mine) == list(range(CHANGES_PER_WRITER))
        assert all(o.status == "ok" and [r["event"] for r in o.records] ==
                   ["intent", "step", "result"] for o in mine)
    held = sorted((r["entered"], r["left"]) for o in journal.operations("shared")
                  for r in o.records if r["event"] == "held")
    assert len(held) == WRITERS * locked
    for (_, left), (entered, _) in itertools.pairwise(held):
        assert entered >= left, "two processes held the shared device's lock at once"


def test_a_refused_lock_does_not_write_an_intent(store_journal: Journal) -> None:
    from msoctl.journal import locked_change

    holder, _ = start_worker(store_journal, "hold-lock", "ocs-a")
    try:
        with pytest.raises(DeviceBusy), locked_change(store_journal, device="ocs-a",
                                                      action="ocs.apply"):
            raise AssertionError("entered without the lock")
    finally:
        holder.kill()
        holder.communicate(timeout=30)
    assert list(store_journal.records()) == []
