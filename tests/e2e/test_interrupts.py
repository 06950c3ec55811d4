"""Ctrl-C at random moments of ``msoctl ocs apply`` and ``msoctl fabric apply``.

Every time, the journal must tell the truth: an operation whose intent is on disk
has exactly one result, and an interrupted one records what the device really held
when it stopped (read back: applied, partly applied, not applied) — which the test
checks against the emulated device itself. A rerun then converges and closes
nothing a second time.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.lab import Lab
from msoctl.journal import Journal, Operation
from tests.support import Msoctl, operation_count, subprocess_env
from tests.support.journal import record_count

MSOCTL = [sys.executable, "-m", "msoctl"]
OCS_TRIES = 14
FABRIC_TRIES = 6


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _permutation(shift: int) -> dict[int, int]:
    return {i: 64 + ((i * 37 + shift) % 64) + 1 for i in range(1, 65)}


def _map_file(path: Path, mapping: dict[int, int]) -> Path:
    path.write_text("connections:\n" + "".join(f'  - "{i}:{e}"\n' for i, e in mapping.items()))
    return path


def _run_interrupted(lab: Lab, args: list[str], journal_path: Path, *,
                     after_intent: float | None, after_start: float = 0.0,
                     after_records: int = 1) -> subprocess.CompletedProcess[str]:
    """Run msoctl and send it SIGINT ``after_intent`` seconds after its first intent record
    reaches the journal (after its first ``after_records`` records, when more than one),
    or (``after_intent`` None) ``after_start`` seconds after it starts."""
    size = operation_count(journal_path)
    records = record_count(journal_path)
    process = subprocess.Popen([*MSOCTL, *args], env=subprocess_env(lab),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    if after_intent is None:
        time.sleep(after_start)
    else:
        while process.poll() is None and not (
                operation_count(journal_path) > size
                and record_count(journal_path) >= records + after_records):
            assert time.monotonic() < deadline, "no intent was journaled"
            time.sleep(0.001)
        time.sleep(after_intent)
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _timed(lab: Lab, args: list[str], journal_path: Path) -> tuple[float, float]:
    """Seconds from start to the first intent record, and from it to the moment the run's
    operations are closed again (the change itself: not the interpreter's exit after it,
    which under load can be longer than the change)."""
    intent_at, window, _ = _timed_with_records(lab, args, journal_path)
    return intent_at, window


def _timed_with_records(lab: Lab, args: list[str], journal_path: Path
                        ) -> tuple[float, float, int]:
    """:func:`_timed`, and how many journal records the run wrote."""
    store = Journal(journal_path).store
    before = store.counts()
    start = time.monotonic()
    process = subprocess.Popen([*MSOCTL, *args], env=subprocess_env(lab),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    intent_at = closed_at = None
    while process.poll() is None and closed_at is None:
        now = store.counts()
        if intent_at is None and now["operations"] > before["operations"]:
            intent_at = time.monotonic() - start
        if intent_at is not None and now["open_operations"] == before["open_operations"]:
            closed_at = time.monotonic() - start
        time.sleep(0.001)
    process.communicate(timeout=60)
    assert process.returncode == 0
    total = time.monotonic() - start
    intent_at = intent_at or total / 2
    closed_at = closed_at or total
    return intent_at, closed_at - intent_at, store.counts()["records"] - before["records"]


def _moment(rng: random.Random, intent_at: float, window: float) -> dict[str, Any]:
    """A quarter of the tries land before the intent is written, the rest inside the change."""
    if rng.random() < 0.25:
        return {"after_intent": None, "after_start": rng.uniform(0.0, intent_at)}
    return {"after_intent": rng.uniform(0.0, window)}


def _moment_by_progress(rng: random.Random, intent_at: float, records: int
                        ) -> dict[str, Any]:
    """Like :func:`_moment`, the moments inside the change placed by its progress rather
    than by a time measured once: a few milliseconds after one of its records but the
    last, chosen at random (a run's length varies with the machine's load; the order of
    its records does not)."""
    if rng.random() < 0.25:
        return {"after_intent": None, "after_start": rng.uniform(0.0, intent_at)}
    return {"after_records": rng.randint(1, max(1, records - 1)),
            "after_intent": rng.uniform(0.0, 0.02)}


def _results_per_op(journal: Journal) -> Counter[str]:
    return Counter(str(r["op"]) for r in journal.records() if r.get("event") == "result")


def _check_closed_once(journal: Journal) -> None:
    twice = {op: n for op, n in _results_per_op(journal).items() if n > 1}
    assert not twice, f"operations closed more than once: {twice}"


def _state(found: dict[str, Any], now: dict[int, int], before: dict[int, int],
           wanted: dict[int, int]) -> None:
    """The read-back recorded in ``found`` agrees with the map the device holds now."""
    assert {int(k): v for k, v in found["map"].items()} == now
    expected = ("applied" if now == wanted else "not applied" if now == before
                else "partly applied")
    assert found["state"] == expected, (found["state"], expected)


def _last_ocs_op(journal: Journal, device: str, seen: set[str]) -> Operation | None:
    new = [o for o in journal.operations(device) if o.op not in seen
           and o.action == "ocs.apply"]
    return new[-1] if new else None


def test_ctrl_c_during_ocs_apply_is_recorded_as_the_device_has_it(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    device = lab.ocs["ocs-a"]
    journal_path = lab.state_dir / "journal.sqlite"
    journal = Journal(journal_path)
    maps = [_permutation(0), _permutation(11)]
    files = [_map_file(tmp_path / f"map-{n}.yaml", m) for n, m in enumerate(maps)]
    intent_at, window = _timed(lab, ["ocs", "apply", "ocs-a", str(files[0])], journal_path)
    rng = random.Random(1312)
    outcomes: Counter[str] = Counter()
    for attempt in range(OCS_TRIES):
        wanted = maps[(attempt + 1) % 2]
        mapfile = files[(attempt + 1) % 2]
        # A cold LC cell switches for about 0.4 s: half the tries land inside a long switch.
        device.heater_on = attempt % 2 == 0
        device.ambient_celsius = 25.0 if device.heater_on else 0.0
        before = device.connection_map()
        seen = {o.op for o in journal.operations("ocs-a")}
        slow = 0.0 if device.heater_on else 0.4  # the cold cell's extra switching time
        done = _run_interrupted(lab, ["ocs", "apply", "ocs-a", str(mapfile)], journal_path,
                                **_moment(rng, intent_at, window + slow))
        # 130: stopped by Ctrl-C; -SIGINT: the signal came as the interpreter was exiting
        assert done.returncode in (0, 130, -signal.SIGINT), done.stderr
        assert "Traceback" not in done.stderr
        op = _last_ocs_op(journal, "ocs-a", seen)
        device.heater_on = True
        device.ambient_celsius = 25.0
        now = device.connection_map()
        if op is None:  # stopped before its intent: nothing may have been sent
            outcomes["before the intent"] += 1
            assert now == before
        else:
            assert op.result is not None, f"try {attempt}: {op.op} left open"
            outcomes[op.result["status"]] += 1
            if op.result["status"] == "ok":
                assert now == wanted
            else:
                assert op.result["status"] == "interrupted", (
                    f"try {attempt}: {op.result.get('status')}: {op.result.get('error')} "
                    f"(found {op.result.get('found')})")
                assert op.result["signal"] == "SIGINT"
                _state(op.result["found"], now, before, wanted)
                outcomes[op.result["found"]["state"]] += 1
        _check_closed_once(journal)
        rerun = msoctl("ocs", "apply", "ocs-a", str(mapfile))
        assert rerun.code == 0, rerun.err
        assert device.connection_map() == wanted
        assert "was interrupted" not in rerun.out  # nothing was left open to close
        _check_closed_once(journal)
        assert journal.interrupted("ocs-a") == []
    assert outcomes["interrupted"] >= OCS_TRIES // 3, outcomes  # the moments did land mid-way


def _intent(lab: Lab, span: str) -> Path:
    path = lab.state_dir / f"fabric-{span}.yaml"
    path.write_text(yaml.safe_dump({"links": {"link-1": {"span": span}}}))
    return path


def test_ctrl_c_during_fabric_apply_is_recorded_as_the_devices_have_it(
        lab: Lab, msoctl: Msoctl) -> None:
    journal_path = lab.state_dir / "journal.sqlite"
    journal = Journal(journal_path)
    spans = ["working", "protection"]
    intents = {span: _intent(lab, span) for span in spans}
    maps: dict[str, dict[str, dict[int, int]]] = {}
    for span in spans:  # each intent once, whole: what each OCS holds when it is done
        whole = msoctl("fabric", "apply", str(intents[span]))
        assert whole.code == 0, whole.err
        maps[span] = {name: lab.ocs[name].connection_map() for name in ("ocs-a", "ocs-b")}
    intent_at, _, records = _timed_with_records(
        lab, ["fabric", "apply", str(intents["working"])], journal_path)
    rng = random.Random(2024)
    outcomes: Counter[str] = Counter()
    for attempt in range(FABRIC_TRIES):
        span = spans[attempt % 2]
        before = {name: lab.ocs[name].connection_map() for name in ("ocs-a", "ocs-b")}
        seen = {o.op for o in journal.operations()}
        done = _run_interrupted(lab, ["fabric", "apply", str(intents[span])], journal_path,
                                **_moment_by_progress(rng, intent_at, records))
        # 130: stopped by Ctrl-C; -SIGINT: the signal came as the interpreter was exiting
        assert done.returncode in (0, 130, -signal.SIGINT), done.stderr
        assert "Traceback" not in done.stderr
        new = [o for o in journal.operations() if o.op not in seen]
        for operation in new:
            assert operation.result is not None, f"{operation.action} {operation.op} left open"
        fabric_ops = [o for o in new if o.device == "fabric"]
        outcomes[fabric_ops[-1].status if fabric_ops else "before the intent"] += 1
        for name in ("ocs-a", "ocs-b"):
            op = _last_ocs_op(journal, name, seen)
            now = lab.ocs[name].connection_map()
            if op is None:
                continue
            assert op.result is not None
            if op.result["status"] == "ok":
                assert now == maps[span][name]
            else:
                wanted = {int(k): v for k, v in op.intent["wanted"].items()}
                _state(op.result["found"], now, before[name], wanted)
        if fabric_ops and fabric_ops[-1].status == "interrupted":
            found = fabric_ops[-1].result["found"]  # type: ignore[index]
            ocs_done = {s for s in found["steps_done"] if s.startswith("ocs:")}
            for name in ("ocs-a", "ocs-b"):
                if f"ocs:{name}" in ocs_done:
                    assert lab.ocs[name].connection_map() == maps[span][name]
                # and the other way: the parent agrees with its children
                op = _last_ocs_op(journal, name, seen)
                if op is not None and op.result is not None and (
                        op.result["status"] == "ok"
                        or op.result.get("found", {}).get("state") == "applied"):
                    assert f"ocs:{name}" in ocs_done, (name, found, op.result)
        _check_closed_once(journal)
        rerun = msoctl("fabric", "apply", str(intents[span]))
        assert rerun.code == 0, rerun.err
        for name in ("ocs-a", "ocs-b"):
            assert lab.ocs[name].connection_map() == maps[span][name]
        _check_closed_once(journal)
        assert all(not o.orphaned for o in journal.operations())
    assert outcomes["interrupted"] >= FABRIC_TRIES // 3, outcomes


@pytest.mark.parametrize(("command", "device"), [
    ("ocs", "ocs-a"), ("fabric", "fabric"), ("fabric", "ocs-a")])
def test_a_ctrl_c_the_moment_an_intent_is_on_disk_still_records_what_the_device_holds(
        lab: Lab, msoctl: Msoctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        command: str, device: str) -> None:
    """A Ctrl-C that comes while an intent is written is held, and raised as soon as the
    intent is on disk: before the change's first statement. The result must still say what
    the device holds (a fabric apply's OCS step once recorded none, as ``found`` was set
    only inside the change)."""
    journal_path = lab.state_dir / "journal.sqlite"
    journal = Journal(journal_path)
    if command == "ocs":
        args = ["ocs", "apply", "ocs-a", str(_map_file(tmp_path / "map.yaml", _permutation(3)))]
    else:
        args = ["fabric", "apply", str(_intent(lab, "working"))]
    before = lab.ocs["ocs-a"].connection_map()
    append, signalled = Journal.append, []

    def append_then_signal(self: Journal, record: dict[str, Any]) -> dict[str, Any]:
        written = append(self, record)
        if record.get("event") == "intent" and record.get("device") == device \
                and not signalled:
            signalled.append(record["op"])
            signal.raise_signal(signal.SIGINT)  # held by the journal until the intent is in
        return written

    with monkeypatch.context() as patched:
        patched.setattr(Journal, "append", append_then_signal)
        stopped = msoctl(*args)
    assert stopped.code == 130, stopped.err
    assert lab.ocs["ocs-a"].connection_map() == before  # stopped before a command was sent
    operation = journal.operation(signalled[0])
    assert operation is not None and operation.result is not None
    assert operation.result["status"] == "interrupted" and operation.result["signal"] == "SIGINT"
    found = operation.result["found"]
    assert found["state"] == "not applied", found
    if device == "fabric":
        assert found["steps_done"] == []
    else:
        assert {int(k): v for k, v in found["map"].items()} == before
    others = [o for o in journal.operations() if o.result is None]
    assert others == []  # every operation the run began is closed
    again = msoctl(*args)
    assert again.code == 0, again.err
