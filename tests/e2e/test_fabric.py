"""``msoctl fabric plan|apply``: one intent file, one diff, a safe order, light verified,
resumed after an interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.errors import DeviceUnreachable, ValidationError
from drivers.ocs import PortMap
from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.fabric import apply as fabric_apply
from msoctl.fabric.intent import load_intent
from msoctl.fabric.plan import wanted_map
from msoctl.inventory import load_inventory
from msoctl.journal import Journal
from msoctl.ops.switch import CONFIRM, Fleet
from tests.support import Msoctl, in_process, subprocess_env, wait_until
from tests.support.inventory import INVENTORY

MSOCTL = [sys.executable, "-m", "msoctl"]

WANT = {"switch": {"fast-cnp": {"enabled": True, "cnp-dscp": 48, "cnp-priority": 6},
                   "ports": {"port": [{"name": "Ethernet1", "speed": "400G",
                                       "cable-length-meters": 30010,
                                       "lossless-priorities": [3],
                                       "pfc": {"xoff-bytes": 23797850,
                                               "xon-bytes": 20480}}]}}}


# ---- the intent file, without devices ----------------------------------------------------


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


@pytest.fixture
def inventory_file(tmp_path: Path) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    return path


BAD_INTENTS = [
    ("lnks:\n  link-1: {span: working}\n", 1, "unknown field"),
    ("links:\n  link-1: {span: working}\n  link-9: {span: working}\n", 3, "no such link"),
    ("links:\n  link-1: {span: spare}\n", 2, "must be one of working, protection"),
    ("links:\n  link-1: {state: down, span: working}\n", 2, "a link that is down is on no span"),
    ("links:\n  link-1: working\n", 2, "expected a mapping"),
    ("amplifiers:\n  ocs-a: {gain_db: 3}\n", 2, "is of kind 'ocs', not 'amp'"),
    ("amplifiers:\n  amp-1:\n    gain_db: high\n", 3, "must be a number"),
    ("amplifiers:\n  amp-1: {}\n", 2, "give mode, gain_db"),
    ("ocs:\n  ocs-a:\n    connections:\n      - \"1:65\"\n      - \"2-66\"\n", 5,
     "must be written IN:OUT"),
    ("ocs:\n  ocs-a:\n    connections: [\"1:65\", \"2:65\"]\n", 3, "uses a port"),
    ("switches:\n  sw-a:\n    want:\n      switch:\n        fast-cnp:\n          bogus: 1\n", 6,
     "unknown"),
    ("switches:\n  sw-a: {want: nowhere.yaml}\n", 2, "no such WANT file"),
    ("verify: {timeout_seconds: 0}\n", 1, "must be more than 0"),
    ("links: {}\n", 1, "says nothing"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_INTENTS)
def test_bad_intent_files_are_refused_with_their_line(
        tmp_path: Path, inventory_file: Path, capsys: pytest.CaptureFixture[str],
        text: str, line: int, message: str) -> None:
    intent = tmp_path / "fabric.yaml"
    intent.write_text(text)
    for command in ("plan", "apply"):
        result = in_process(capsys)("-i", str(inventory_file), "--journal",
                                    str(tmp_path / "journal.sqlite"), "fabric", command,
                                    str(intent))
        assert result.code == 2, result
        assert result.err.count("\n") == 1, result.err
        assert result.err.startswith(f"error: {intent}:{line}: "), result.err
        assert message in result.err, result.err
        assert result.out == ""
    assert not (tmp_path / "journal.sqlite").exists()  # refused before anything was sent


def _intent(tmp_path: Path, inventory_file: Path, text: str) -> Any:
    path = tmp_path / "fabric.yaml"
    path.write_text(text)
    return load_intent(path, load_inventory(inventory_file))


def test_wanted_map_moves_a_link_and_keeps_the_rest(tmp_path: Path,
                                                    inventory_file: Path) -> None:
    inventory = load_inventory(inventory_file)
    intent = _intent(tmp_path, inventory_file, "links:\n  link-1: {span: protection}\n")
    current = PortMap({1: 121, 61: 65, 3: 67, 7: 122}, 64)  # 7:122 holds span-2's port
    wanted, reasons = wanted_map("ocs-a", current, intent, inventory)
    assert dict(wanted) == {1: 122, 62: 65, 3: 67}
    assert reasons[("remove", 1, 121)] == "link-1 moves to its protection span"
    assert reasons[("remove", 7, 122)] == "holds ocs-a:122, which link-1 needs"
    assert reasons[("add", 62, 65)] == "link-1 on its protection span span-2"

    down = _intent(tmp_path, inventory_file, "links:\n  link-1: {state: down}\n")
    wanted, reasons = wanted_map("ocs-a", current, down, inventory)
    assert dict(wanted) == {3: 67, 7: 122}
    assert reasons[("remove", 61, 65)] == "link-1 is down"


def test_a_raw_map_is_the_whole_map_and_may_not_take_a_links_port(
        tmp_path: Path, inventory_file: Path) -> None:
    inventory = load_inventory(inventory_file)
    current = PortMap({3: 67, 5: 69}, 64)
    intent = _intent(tmp_path, inventory_file,
                     "links:\n  link-1: {}\nocs:\n  ocs-a:\n    connections: [\"4:68\"]\n")
    wanted, reasons = wanted_map("ocs-a", current, intent, inventory)
    assert dict(wanted) == {1: 121, 61: 65, 4: 68}
    assert reasons[("remove", 3, 67)] == "not in the intent's map of ocs-a"
    assert reasons[("add", 4, 68)] == "the intent's map (line 5)"
    clash = _intent(tmp_path, inventory_file,
                    "links:\n  link-1: {}\nocs:\n  ocs-a:\n    connections:\n"
                    "      - \"4:68\"\n      - \"1:67\"\n")
    with pytest.raises(ValidationError, match=r"fabric.yaml:7: ocs 'ocs-a': connection 1:67 "
                                              r"uses port 1, which link 'link-1' needs"):
        wanted_map("ocs-a", current, clash, inventory)


# ---- against the lab ---------------------------------------------------------------------


def _write(lab: Lab, name: str, document: dict[str, Any]) -> Path:
    path = lab.state_dir / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _fabric(lab: Lab, **extra: Any) -> Path:
    _write(lab, "want-cc.yaml", WANT)
    return _write(lab, "fabric.yaml", {
        "links": {"link-1": {"span": "working"}},
        "amplifiers": {"amp-1": {"gain_db": 18.0}},
        "switches": {"sw-a": {"want": "want-cc.yaml"}, "sw-b": {"want": WANT}},
        **extra})


def _steps(document: dict[str, Any]) -> dict[str, str]:
    return {s["step"]: s["status"] for s in document["steps"]}


def test_plan_is_one_diff_across_devices_and_changes_nothing(lab: Lab,
                                                             msoctl: Msoctl) -> None:
    wait_until(lambda: lab.amps["amp-1"].als_state == 2, "ALS shuts amp-1 (its span is dark)")
    intent = _fabric(lab)
    result = msoctl("fabric", "plan", str(intent), "-o", "json")
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    assert plan["step_order"] == ["switch:sw-a", "switch:sw-b", "ocs:ocs-a", "ocs:ocs-b",
                                  "amp:amp-1", "restart:amp-1", "verify"]
    steps = {s["step"]: s for s in plan["steps"]}
    paths = {c["path"] for c in steps["switch:sw-a"]["changes"]}
    assert "/switch/fast-cnp/enabled" in paths
    assert "/switch/ports/port[name='Ethernet1']/cable-length-meters" in paths
    assert steps["switch:sw-b"]["changes"] == steps["switch:sw-a"]["changes"]
    assert steps["ocs:ocs-a"]["changes"] == [
        {"action": "add", "ingress": 1, "egress": 121,
         "reason": "link-1 on its working span span-1"},
        {"action": "add", "ingress": 61, "egress": 65,
         "reason": "link-1 on its working span span-1"}]
    assert steps["ocs:ocs-b"]["method"] == "add"
    assert steps["amp:amp-1"]["changes"] == [
        {"setting": "gain_db", "current": 20.0, "wanted": 18.0}]
    assert steps["restart:amp-1"]["als_state"] == "shutdown"
    assert steps["verify"]["links"] == ["link-1"]
    assert plan["resume"] is None
    # nothing was changed
    assert lab.ocs["ocs-a"].connection_map() == {} == lab.ocs["ocs-b"].connection_map()
    table = msoctl("fabric", "plan", str(intent))
    assert table.code == 0
    assert "+ 1:121  link-1 on its working span span-1" in table.out
    assert "amp amp-1: gain_db 20.00 -> 18.00 (ramped)" in table.out
    assert not Journal(lab.state_dir / "journal.sqlite").path.exists()


def test_apply_lights_link_1_end_to_end_and_a_rerun_finds_it_in_place(
        lab: Lab, msoctl: Msoctl) -> None:
    intent = _fabric(lab)
    result = msoctl("fabric", "apply", str(intent), "-o", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert _steps(report) == {
        "switch:sw-a": "done", "switch:sw-b": "done", "ocs:ocs-a": "done",
        "ocs:ocs-b": "done", "amp:amp-1": "done", "restart:amp-1": "done", "verify": "done"}
    (link,) = report["light"]["links"]
    assert link["span"] == "working" and link["light"] == "arrives"
    for direction in link["directions"]:
        assert all(hop["status"] == "ok" for hop in direction["hops"])
    assert lab.ocs["ocs-a"].connection_map() == {1: 121, 61: 65}
    assert lab.ocs["ocs-b"].connection_map() == {1: 121, 61: 65}
    # the devices' own operations, in the safe order, beside the fabric operation
    journal = Journal(lab.state_dir / "journal.sqlite")
    actions = [(o.device, o.action) for o in journal.operations()]
    assert actions == [
        ("fabric", "fabric.apply"), ("sw-a", "switch.cc.apply"), ("sw-b", "switch.cc.apply"),
        ("sw-a", "switch.cc.confirm"), ("sw-b", "switch.cc.confirm"),
        ("ocs-a", "ocs.apply"), ("ocs-b", "ocs.apply"), ("amp-1", "amp.set"),
        ("amp-1", "amp.restart")]
    # each switch commit was left pending, then confirmed once both had verified
    assert [o.status for o in journal.operations()] == ["ok", "pending", "pending"] + \
        ["ok"] * 6
    gain = next(o for o in journal.operations("amp-1") if o.action == "amp.set")
    assert gain.intent["fabric_op"] == report["op"]
    assert len(gain.result["gain_steps_db"]) == 4  # 20 -> 18 dB in 0.5 dB steps
    running = msoctl("switch", "cc", "show", "sw-b", "-o", "json")
    assert json.loads(running.out)["fast_cnp"]["enabled"] is True

    again = msoctl("fabric", "apply", str(intent))
    assert again.code == 0, again.err
    for step in ("switch:sw-a", "switch:sw-b", "ocs:ocs-a", "ocs:ocs-b", "amp:amp-1",
                 "restart:amp-1"):
        assert f"{step}: in place" in again.out
    assert "verify: done: link-1 light arrives both ways on working" in again.out
    assert "link-1 sw-a:Ethernet1 -> sw-b:Ethernet1 on working span-1:" in again.out


def test_resume_after_a_failure_mid_apply(lab: Lab, msoctl: Msoctl,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    intent = _write(lab, "fabric.yaml", {"links": {"link-1": {"span": "working"}}})
    real = fabric_apply.apply_plan
    calls: list[str] = []

    def failing(driver: Any, plan: Any, **kwargs: Any) -> Any:
        calls.append(plan.device)
        if plan.device == "ocs-b":
            raise DeviceUnreachable("connection lost", device="ocs-b")
        return real(driver, plan, **kwargs)

    monkeypatch.setattr(fabric_apply, "apply_plan", failing)
    first = msoctl("fabric", "apply", str(intent))
    assert first.code == 1
    assert first.err == "error: ocs-b: connection lost\n"
    assert "ocs:ocs-a: done" in first.out
    journal = Journal(lab.state_dir / "journal.sqlite")
    (failed,) = journal.operations("fabric")
    assert failed.status == "failed" and failed.result is not None
    assert failed.result["failed_step"] == "ocs:ocs-b"
    assert lab.ocs["ocs-b"].connection_map() == {}

    monkeypatch.setattr(fabric_apply, "apply_plan", real)
    plan = json.loads(msoctl("fabric", "plan", str(intent), "-o", "json").out)
    assert plan["resume"]["op"] == failed.op
    assert plan["resume"]["failed_step"] == "ocs:ocs-b"
    assert plan["step_order"] == ["ocs:ocs-b", "restart:amp-1", "verify"]
    rerun = msoctl("fabric", "apply", str(intent), "-o", "json")
    assert rerun.code == 0, rerun.err
    report = json.loads(rerun.out)
    assert report["resumed"]["op"] == failed.op
    assert report["resumed"]["steps_done"] == ["ocs:ocs-a"]
    assert _steps(report) == {"ocs:ocs-a": "in place", "ocs:ocs-b": "done",
                              "restart:amp-1": "done", "verify": "done"}
    assert report["light"]["links"][0]["light"] == "arrives"
    second = journal.operations("fabric")[-1]
    assert second.intent["resumes"] == failed.op and second.status == "ok"


def test_resume_cancels_a_commit_the_failed_run_left_pending(
        lab: Lab, msoctl: Msoctl, monkeypatch: pytest.MonkeyPatch) -> None:
    intent = _write(lab, "fabric.yaml", {"switches": {"sw-a": {"want": WANT},
                                                      "sw-b": {"want": WANT}}})
    real = Fleet.settle

    def lost(self: Fleet, device: str, action: str, persist_id: str | None = None) -> str:
        raise DeviceUnreachable("management network down", device=device)

    monkeypatch.setattr(Fleet, "settle", lost)  # no confirm, and no cancel either
    first = msoctl("fabric", "apply", str(intent))
    assert first.code == 1 and "management network down" in first.err
    journal = Journal(lab.state_dir / "journal.sqlite")
    left = {name: Fleet(journal, lambda n: None).pending(name)  # type: ignore[arg-type,return-value]
            for name in ("sw-a", "sw-b")}
    assert all(left.values())  # both commits pending on the switches

    monkeypatch.setattr(Fleet, "settle", real)
    rerun = msoctl("fabric", "apply", str(intent), "-o", "json")
    assert rerun.code == 0, rerun.err
    report = json.loads(rerun.out)
    assert report["cancelled_pending_commits"] == {
        name: entry["persist_id"] for name, entry in left.items() if entry}
    assert _steps(report) == {"switch:sw-a": "done", "switch:sw-b": "done"}
    settled = [(o.device, o.action) for o in journal.operations()
               if o.action in ("switch.cc.cancel", CONFIRM)]
    assert settled == [("sw-a", "switch.cc.cancel"), ("sw-b", "switch.cc.cancel"),
                       ("sw-a", CONFIRM), ("sw-b", CONFIRM)]
    assert Fleet(journal, lambda n: None).pending("sw-a") is None  # type: ignore[arg-type,return-value]


def test_a_killed_apply_is_resumed_by_the_rerun(lab: Lab) -> None:
    intent = _write(lab, "fabric.yaml", {"links": {"link-1": {"span": "working"}}})
    journal_path = lab.state_dir / "journal.sqlite"
    lab.inject("ocs-b", Fault("latency", seconds=0.3))  # ocs-b's step takes a while
    process = subprocess.Popen([*MSOCTL, "fabric", "apply", str(intent)],
                               env=subprocess_env(lab), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    def started_ocs_b() -> bool:
        return any(r.get("step") == "ocs:ocs-b" and r.get("status") == "started"
                   for o in Journal(journal_path).operations("fabric") for r in o.records)

    while not started_ocs_b():
        assert time.monotonic() < deadline, "the apply never reached ocs-b"
        assert process.poll() is None, process.communicate()
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.communicate()
    lab.clear("ocs-b", "latency")
    journal = Journal(journal_path)
    (killed,) = journal.operations("fabric")
    assert killed.status == "interrupted"

    rerun = subprocess.run([*MSOCTL, "fabric", "apply", str(intent), "-o", "json"],
                           env=subprocess_env(lab), capture_output=True, text=True,
                           timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert report["resumed"]["op"] == killed.op
    assert report["resumed"]["status"] == "interrupted"
    assert report["resumed"]["steps_done"] == ["ocs:ocs-a"]
    assert _steps(report)["ocs:ocs-a"] == "in place"
    assert _steps(report)["verify"] == "done"
    assert lab.ocs["ocs-b"].connection_map() == {1: 121, 61: 65}
    operations = {o.op: o for o in journal.operations("fabric")}
    closing = operations[killed.op].result
    assert closing is not None and closing["status"] == "interrupted"
    assert closing["resolved_by"] == report["op"]
    assert closing["found"] == "1 step done: ocs:ocs-a"
    assert operations[report["op"]].status == "ok"
