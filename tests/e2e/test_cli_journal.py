"""``msoctl journal import|export|prune|info`` and where the journal is, on the command line.

Every refusal is one ``error:`` line and exit 2 before anything is written; the old
JSON-lines journals are refused with the hint to import them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from msoctl.journal import Journal
from tests.support import Msoctl, Result, dead_pid, empty_journal, in_process

OLD = [
    {"ts": "2020-03-01T10:00:00.000Z", "op": "o1", "event": "intent", "device": "ocs-a",
     "action": "ocs.connect", "user": "ann", "host": "h1", "pid": 11, "ports": [1, 65]},
    {"ts": "2020-03-01T10:00:01.000Z", "op": "o1", "event": "result", "device": "ocs-a",
     "action": "ocs.connect", "status": "ok"},
    {"ts": "2020-03-02T10:00:00.000Z", "op": "o2", "event": "intent", "device": "ocs-b",
     "action": "ocs.apply", "user": "bob", "host": "h2", "pid": 12},
]


@pytest.fixture
def msoctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Msoctl:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MSOCTL_INVENTORY", raising=False)
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    return in_process(capsys)


@pytest.fixture
def old_journal(tmp_path: Path) -> Path:
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in OLD) + '{"op":"o3","eve')
    return path


def one_error(result: Result, code: int) -> str:
    assert result.code == code, result
    assert result.err.startswith("error: ") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    return result.err


def test_import_then_history_export_and_round_trip(msoctl: Msoctl, old_journal: Path,
                                                   tmp_path: Path) -> None:
    new = tmp_path / "journal.sqlite"
    done = msoctl("--journal", str(new), "journal", "import", str(old_journal))
    assert done.code == 0, done
    assert done.out == (f"{old_journal}: 3 records imported into {new}, "
                        "1 line skipped (torn or not records)\n")
    again = msoctl("--journal", str(new), "journal", "import", str(old_journal))
    assert "0 records imported" in again.out and "3 already there" in again.out
    history = json.loads(msoctl("--journal", str(new), "history", "-o", "json").out)
    assert [(o["op"], o["status"]) for o in history["operations"]] == [
        ("o1", "ok"), ("o2", "interrupted")]
    exported = msoctl("--journal", str(new), "journal", "export")
    assert exported.code == 0 and [json.loads(x) for x in exported.out.splitlines()] == OLD
    archive = tmp_path / "archive.jsonl"
    to_file = msoctl("--journal", str(new), "journal", "export", "--file", str(archive))
    assert to_file.code == 0 and to_file.err == f"3 records exported from {new} to " \
        f"{archive}\n"
    assert [json.loads(x) for x in archive.read_text().splitlines()] == OLD
    info = json.loads(msoctl("--journal", str(new), "journal", "info", "-o", "json").out)
    assert info["store"] == "sqlite" and info["records"] == 3
    assert (info["operations"], info["open_operations"]) == (2, 1)


def test_prune_keeps_open_operations_and_refuses_a_bad_date(msoctl: Msoctl, old_journal: Path,
                                                          tmp_path: Path) -> None:
    new = tmp_path / "journal.sqlite"
    msoctl("--journal", str(new), "journal", "import", str(old_journal))
    dry = msoctl("--journal", str(new), "journal", "prune", "--before", "2021-01-01",
                 "--dry-run")
    assert dry.out.startswith("would remove 1 operation, 2 records that ended before "
                              "2021-01-01T00:00:00.000Z")
    done = msoctl("--journal", str(new), "journal", "prune", "--before", "2021-01-01")
    assert done.code == 0 and done.out.startswith("removed 1 operation, 2 records")
    assert [o.op for o in Journal(new).operations()] == ["o2"]  # open: kept
    assert "--before 'soon'" in one_error(
        msoctl("--journal", str(new), "journal", "prune", "--before", "soon"), 2)
    assert [o.op for o in Journal(new).operations()] == ["o2"]


def test_a_jsonl_journal_is_refused_with_the_hint(msoctl: Msoctl, old_journal: Path,
                                                 tmp_path: Path) -> None:
    error = one_error(msoctl("--journal", str(old_journal), "history"), 2)
    assert f"msoctl journal import {old_journal}" in error
    site = tmp_path / "site"
    site.mkdir()
    (site / "journal.jsonl").write_text(old_journal.read_text())
    (site / "inventory.yaml").write_text("journal: journal.jsonl\ndevices: []\n")
    error = one_error(msoctl("--inventory", str(site / "inventory.yaml"), "history"), 2)
    assert "JSON-lines journal" in error and "msoctl journal import" in error
    legacy_default = tmp_path / "xdg-state" / "msoctl" / "journal.jsonl"
    legacy_default.parent.mkdir(parents=True)
    legacy_default.write_text(old_journal.read_text())
    error = one_error(msoctl("history"), 2)
    assert f"msoctl journal import {legacy_default}" in error
    assert msoctl("journal", "import", str(legacy_default)).code == 0  # into the default
    assert "interrupted" in msoctl("history").out  # o2, imported


def test_bad_journal_locations_are_one_error_line(msoctl: Msoctl, tmp_path: Path) -> None:
    assert "ftp:// is not a journal store" in one_error(
        msoctl("--journal", "ftp://host/x", "history"), 2)
    assert "must not hold a password" in one_error(
        msoctl("--journal", "postgresql://u:pw@127.0.0.1/db", "history"), 2)
    journal = tmp_path / "journal.sqlite"
    Journal(journal).append({"op": "x", "event": "intent", "device": "d"})
    assert "is the journal itself" in one_error(
        msoctl("--journal", str(journal), "journal", "import", str(journal)), 2)
    other = tmp_path / "other.sqlite"
    Journal(other).append({"op": "y", "event": "intent", "device": "d"})
    assert "is an SQLite journal" in one_error(
        msoctl("--journal", str(journal), "journal", "import", str(other)), 2)
    site = tmp_path / "site"
    site.mkdir()
    (site / "inventory.yaml").write_text("journal_password: env:X\ndevices: []\n")
    assert "journal_password" in one_error(
        msoctl("--inventory", str(site / "inventory.yaml"), "history"), 2)
    (site / "inventory.yaml").write_text("journal: j.sqlite\njournal_password: hunter2\n"
                                         "devices: []\n")
    error = one_error(msoctl("--inventory", str(site / "inventory.yaml"), "history"), 2)
    assert "env:NAME or file:PATH" in error and "hunter2" not in error


def test_an_import_reads_only_a_journal_file_and_within_bounds(
        msoctl: Msoctl, tmp_path: Path, old_journal: Path) -> None:
    """A FIFO or a device is refused unread (an import of a FIFO waited for ever, of
    /dev/zero it grew by a gigabyte a second); a file with lines but no record is not a
    journal; a line too long for a record is read past, never held whole. Nothing is
    added by a refused import."""
    journal = tmp_path / "journal.sqlite"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for source in (str(fifo), "/dev/zero"):
        error = one_error(msoctl("--journal", str(journal), "journal", "import", source), 2)
        assert "not a regular file" in error
    text = tmp_path / "notes.txt"
    text.write_text("not a journal\n{}\n[1, 2]\n")
    error = one_error(msoctl("--journal", str(journal), "journal", "import", str(text)), 2)
    assert "no journal record in its 3 lines" in error
    assert not journal.exists() or Journal(journal).records() == []
    long = tmp_path / "long.jsonl"
    long.write_bytes(b"x" * (3 * 2**20) + b"\n" + old_journal.read_bytes())
    done = msoctl("--journal", str(journal), "journal", "import", str(long))
    assert done.code == 0 and "3 records imported" in done.out, done
    assert "2 lines skipped" in done.out  # the long line, and the torn last one
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")  # an empty journal, as an export of one writes
    done = msoctl("--journal", str(journal), "journal", "import", str(empty))
    assert done.code == 0 and "empty, nothing imported" in done.out, done
    # a big file that is not a journal is refused at its hundredth line, not read whole
    # (50 MB of "x: 1" took more than 40 s to be told "no journal record")
    big = tmp_path / "big.yaml"
    with big.open("wb") as out:
        for _ in range(50):
            out.write(b"x: 1\n" * 200_000)
    error = one_error(msoctl("--journal", str(journal), "journal", "import", str(big)), 2)
    assert "no journal record in its first 100 lines" in error
    # NaN is not JSON: a line carrying it is not one msoctl wrote
    nan = tmp_path / "nan.jsonl"
    nan.write_text('{"op": "n1", "event": "intent", "power_dbm": NaN}\n'
                   + old_journal.read_text())
    done = msoctl("--journal", str(tmp_path / "nan.sqlite"), "journal", "import", str(nan))
    assert done.code == 0 and "3 records imported" in done.out, done
    assert "2 lines skipped" in done.out  # the NaN line, and the torn last one


def test_history_of_a_kind_no_action_has_is_refused(msoctl: Msoctl, tmp_path: Path) -> None:
    journal = str(tmp_path / "journal.sqlite")
    error = one_error(msoctl("--journal", journal, "history", "--kind", "bogus"), 2)
    assert "'bogus': no action is of that kind" in error
    for kind in ("ocs", "ocs.apply", "protection.switch", "switch.cc"):
        assert msoctl("--journal", journal, "history", "--kind", kind).code == 0


def test_a_journal_in_a_directory_that_does_not_exist_is_an_error(
        msoctl: Msoctl, tmp_path: Path) -> None:
    """Not "no changes", nor a journal started apart from the audit trail."""
    missing = tmp_path / "typo" / "journal.sqlite"
    for args in (("history",), ("journal", "info")):
        error = one_error(msoctl("--journal", str(missing), *args), 2)
        assert f"no directory {missing.parent}" in error
    site = tmp_path / "site"
    site.mkdir()
    (site / "inventory.yaml").write_text("journal: logs/journal.sqlite\ndevices: []\n")
    error = one_error(msoctl("--inventory", str(site / "inventory.yaml"), "history"), 2)
    assert "the inventory's journal" in error and "no directory" in error
    assert not (tmp_path / "typo").exists() and not (site / "logs").exists()


def test_the_commands_on_a_postgresql_journal(msoctl: Msoctl, old_journal: Path,
                                              postgres_url: str) -> None:
    empty_journal(Journal(postgres_url))
    done = msoctl("--journal", postgres_url, "journal", "import", str(old_journal))
    assert done.code == 0 and "3 records imported" in done.out, done
    Journal(postgres_url).append({"op": "o4", "event": "intent", "device": "ocs-a",
                                  "action": "ocs.apply", "pid": dead_pid()})
    history = json.loads(msoctl("--journal", postgres_url, "history", "--device", "ocs-a",
                                "-o", "json").out)
    assert history["journal"] == postgres_url
    assert [(o["op"], o["status"]) for o in history["operations"]] == [
        ("o1", "ok"), ("o4", "interrupted")]
    assert msoctl("--journal", postgres_url, "journal", "prune", "--before",
                  "2021-01-01").out.startswith("removed 1 operation, 2 records")
    exported = msoctl("--journal", postgres_url, "journal", "export").out.splitlines()
    assert [json.loads(line)["op"] for line in exported] == ["o2", "o4"]
    info = json.loads(msoctl("--journal", postgres_url, "journal", "info", "-o", "json").out)
    assert info["store"] == "postgresql" and info["open_operations"] == 2
