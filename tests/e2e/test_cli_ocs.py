"""``msoctl ocs`` end to end: the CLI, the journal and the emulated switches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.journal import Journal
from tests.support import Msoctl, Result, restart_amplifier, wait_until


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _journal(lab: Lab) -> list[dict[str, Any]]:
    return list(Journal(lab.state_dir / "journal.sqlite").records())


def _one_error_line(result: Result) -> str:
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.err
    return lines[0]


def test_status_json_contract(msoctl: Msoctl, lab: Lab) -> None:
    lab.ocs["ocs-a"].add((1, 2), (121, 66))
    result = msoctl("ocs", "status", "ocs-a", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["device"] == "ocs-a"
    assert document["size"] == [64, 64]
    assert [(c["ingress"], c["egress"]) for c in document["connections"]] == [(1, 121), (2, 66)]
    assert all(1.5 <= c["insertion_loss_db"] <= 2.0 for c in document["connections"])
    assert document["lc_cell_temperature_celsius"] == pytest.approx(40, abs=1)


def test_status_table(msoctl: Msoctl, lab: Lab) -> None:
    lab.ocs["ocs-a"].add((1,), (121,))
    result = msoctl("ocs", "status", "ocs-a")
    assert result.code == 0
    assert "LCOCS-64x64" in result.out
    assert "121" in result.out


def test_power_json_contract(msoctl: Msoctl) -> None:
    result = msoctl("ocs", "power", "ocs-a", "1", "2", "100", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert [p["port"] for p in document["ports"]] == [1, 2, 100]
    assert document["ports"][0]["power_dbm"] > -5
    assert document["ports"][2]["power_dbm"] < -50


def test_power_in_both_reply_forms_and_on_a_unit_without_monitors(
        msoctl: Msoctl, lab: Lab) -> None:
    """The lab's OCS answers as Polatis-family units do (power as a parenthesised list,
    SCPI-99 vol. 2 §21.8 for the error of a unit without monitors): ``msoctl ocs power``
    reads that form and the bare one; on a unit without monitors it refuses in one line
    naming them (exit 2), and a change there is made with its light unchecked."""
    device = lab.ocs["ocs-a"]
    assert device.reply_form == "polatis"
    for form in ("polatis", "bare"):
        device.reply_form = form
        result = msoctl("ocs", "power", "ocs-a", "1", "100", "-o", "json")
        assert result.code == 0, result.err
        ports = json.loads(result.out)["ports"]
        assert ports[0]["power_dbm"] > -5 and ports[1]["power_dbm"] < -50
    device.power_monitors = False
    for args in (("-o", "json"), ()):
        result = msoctl("ocs", "power", "ocs-a", "1", "100", *args)
        assert result.code == 2 and result.out == ""
        assert result.err == ("error: ocs-a: power monitors not supported by this unit "
                              "(:PMON:POW? is an undefined header on it)\n")
    # The lit-port interlock cannot check ports without readings: said, journaled, not refused.
    change = msoctl("ocs", "connect", "ocs-a", "1:70")
    assert change.code == 0, change.err
    assert "no power reading on ports 1, 70: the lit-port interlock could not check" \
        in " ".join(change.out.split())  # the line wraps within 80 columns
    assert "light not checked: ocs-a has no power monitors" in change.out
    intent = next(r for r in _journal(lab) if r["event"] == "intent")
    assert intent["power_unchecked_ports"] == [1, 70]


def test_power_all_ports_and_ports_view(msoctl: Msoctl) -> None:
    assert len(json.loads(msoctl("ocs", "power", "ocs-a", "-o", "json").out)["ports"]) == 128
    msoctl("ocs", "connect", "ocs-a", "3:70")
    document = json.loads(msoctl("ocs", "ports", "ocs-a", "-o", "json").out)
    port3 = next(p for p in document["ports"] if p["port"] == 3)
    assert port3 == {**port3, "direction": "ingress", "state": "enabled", "connected_to": 70}


def test_connect_then_disconnect_journaled(msoctl: Msoctl, lab: Lab) -> None:
    result = msoctl("ocs", "connect", "ocs-a", "1:121", "2:122")
    assert result.code == 0, result.err
    assert lab.ocs["ocs-a"].connection_map() == {1: 121, 2: 122}
    assert "light verified on 2 lit paths" in result.out
    result = msoctl("ocs", "disconnect", "ocs-a", "122")
    assert result.code == 0, result.err
    assert lab.ocs["ocs-a"].connection_map() == {1: 121}
    events = [(r["action"], r["event"], r.get("status")) for r in _journal(lab)]
    assert events == [
        ("ocs.connect", "intent", None), ("ocs.connect", "result", "ok"),
        ("ocs.disconnect", "intent", None), ("ocs.disconnect", "result", "ok"),
    ]


@pytest.mark.parametrize("pairs, message", [
    (["5:70", "6:70"], "egress port 70 is fed by both 5 and 6"),
    (["1:300"], "out of range"),
    (["70:1"], "out of range"),
    (["1-65"], "must be written IN:OUT"),
    (["\u00b2:65"], "must be written IN:OUT"),  # a superscript two: isdigit(), not int()
])
def test_bad_connections_refused_before_sending(
    msoctl: Msoctl, lab: Lab, pairs: list[str], message: str
) -> None:
    errors_before = lab.ocs["ocs-a"].errors_reported
    result = msoctl("ocs", "connect", "ocs-a", *pairs)
    assert result.code == 2
    assert message in _one_error_line(result)
    assert lab.ocs["ocs-a"].connection_map() == {}
    assert lab.ocs["ocs-a"].errors_reported == errors_before  # nothing wrong reached it
    if pairs != ["1-65"]:
        (record,) = _journal(lab)
        assert record["event"] == "refused" and record["exit_code"] == 2


def test_a_port_that_is_not_a_decimal_number_is_bad_input(msoctl: Msoctl) -> None:
    for command in (["power", "ocs-a"], ["disconnect", "ocs-a"]):
        result = msoctl("ocs", *command, "\u00b2")
        assert result.code == 2, result.err
        assert "must be a number" in _one_error_line(result)


def test_connect_onto_a_used_port_is_refused(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("ocs", "connect", "ocs-a", "1:65").code == 0
    result = msoctl("ocs", "connect", "ocs-a", "2:65")
    assert result.code == 2
    assert "fed by ingress 1" in _one_error_line(result)
    assert lab.ocs["ocs-a"].connection_map() == {1: 65}


def _write_map(path: Path, pairs: list[str]) -> Path:
    path.write_text("connections:\n" + "".join(f'  - "{p}"\n' for p in pairs))
    return path


def test_apply_dry_run_then_apply(msoctl: Msoctl, lab: Lab, tmp_path: Path) -> None:
    lab.ocs["ocs-a"].add((1, 2), (65, 66))
    mapfile = _write_map(tmp_path / "map.yaml", ["1:65", "2:67", "3:66"])
    dry = msoctl("ocs", "apply", "ocs-a", str(mapfile), "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    plan = json.loads(dry.out)
    assert plan["dry_run"] is True and plan["method"] == "replace"
    assert plan["changes"] == [
        {"action": "remove", "ingress": 2, "egress": 66},
        {"action": "add", "ingress": 2, "egress": 67},
        {"action": "add", "ingress": 3, "egress": 66},
    ]
    assert lab.ocs["ocs-a"].connection_map() == {1: 65, 2: 66}
    assert _journal(lab) == []

    result = msoctl("ocs", "apply", "ocs-a", str(mapfile), "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert lab.ocs["ocs-a"].connection_map() == {1: 65, 2: 67, 3: 66}
    assert {p["status"] for p in document["light"]} == {"ok"}
    # Nothing left to do: a rerun sends no change.
    again = json.loads(msoctl("ocs", "apply", "ocs-a", str(mapfile), "-o", "json").out)
    assert again["method"] == "none" and again["changes"] == []


def test_a_saved_map_is_put_back_by_apply(msoctl: Msoctl, lab: Lab, tmp_path: Path) -> None:
    """``ocs map`` writes the map as a map file; applied later, it puts the map back."""
    device = lab.ocs["ocs-a"]
    device.add((1, 2, 3), (65, 70, 66))
    saved = msoctl("ocs", "map", "ocs-a")
    assert saved.code == 0 and saved.err == ""
    (tmp_path / "saved.yaml").write_text(saved.out)
    as_json = json.loads(msoctl("ocs", "map", "ocs-a", "-o", "json").out)
    assert as_json["connections"] == [{"ingress": 1, "egress": 65},
                                      {"ingress": 2, "egress": 70},
                                      {"ingress": 3, "egress": 66}]
    device.disconnect_all()
    device.add((4,), (67,))
    result = msoctl("ocs", "apply", "ocs-a", str(tmp_path / "saved.yaml"))
    assert result.code == 0, result.err
    assert device.connection_map() == {1: 65, 2: 70, 3: 66}
    device.disconnect_all()
    empty = msoctl("ocs", "map", "ocs-a")
    (tmp_path / "empty.yaml").write_text(empty.out)
    device.add((5,), (68,))
    assert msoctl("ocs", "apply", "ocs-a", str(tmp_path / "empty.yaml")).code == 0
    assert device.connection_map() == {}


@pytest.mark.parametrize("current, wanted, method", [
    ({}, ["1:65", "2:66"], "add"),
    ({1: 65, 2: 66}, ["1:65"], "subtract"),
    ({1: 65}, ["1:66"], "replace"),
])
def test_apply_uses_the_fewest_commands(
    msoctl: Msoctl, lab: Lab, tmp_path: Path, current: dict[int, int], wanted: list[str],
    method: str,
) -> None:
    if current:
        lab.ocs["ocs-a"].add(tuple(current), tuple(current.values()))
    mapfile = _write_map(tmp_path / "map.yaml", wanted)
    document = json.loads(msoctl("ocs", "apply", "ocs-a", str(mapfile), "-o", "json").out)
    assert document["method"] == method and document["commands"] == 1


@pytest.mark.parametrize("text, message", [
    ("connections:\n  - 1:65\n  - 2:65\n", "egress port 65 is fed by both 1 and 2"),
    ("connections:\n  - 1:65\n  - nonsense\n", ":3: connection 'nonsense' must be written IN:OUT"),
    ("connection:\n  - 1:65\n", "unknown field"),
    ("connections: [1:65\n", "not valid YAML"),
    ("connections:\n  - {ingress: 1, egress: x}\n", "field 'egress': must be an integer"),
    ('connections:\n  - "1:6\u00b2"\n', ":2: connection '1:6\u00b2' must be written IN:OUT"),
])
def test_bad_map_files(msoctl: Msoctl, lab: Lab, tmp_path: Path, text: str,
                       message: str) -> None:
    mapfile = tmp_path / "map.yaml"
    mapfile.write_text(text)
    result = msoctl("ocs", "apply", "ocs-a", str(mapfile))
    assert result.code == 2
    assert message in _one_error_line(result)
    assert lab.ocs["ocs-a"].connection_map() == {}
    assert [r["event"] for r in _journal(lab)] == ["refused"]


def test_missing_map_file(msoctl: Msoctl, tmp_path: Path) -> None:
    result = msoctl("ocs", "apply", "ocs-a", str(tmp_path / "nope.yaml"))
    assert result.code == 2
    assert "no such file" in _one_error_line(result)


def _hot_transmitter(lab: Lab, lane: int, power_dbm: float) -> None:
    lab.override_launch_power("sw-a", lane, power_dbm)


def test_switching_a_hot_port_needs_force(msoctl: Msoctl, lab: Lab) -> None:
    _hot_transmitter(lab, 1, 23.0)  # ingress port 1 now carries about +22.7 dBm
    result = msoctl("ocs", "connect", "ocs-a", "1:65")
    assert result.code == 3
    line = _one_error_line(result)
    assert "port 1 carries" in line and "--force" in line
    assert lab.ocs["ocs-a"].connection_map() == {}
    (refusal,) = _journal(lab)
    assert refusal["event"] == "refused" and refusal["exit_code"] == 3

    forced = msoctl("ocs", "connect", "ocs-a", "1:65", "--force")
    assert forced.code == 0, forced.err
    assert "safety override" in forced.out
    assert lab.ocs["ocs-a"].connection_map() == {1: 65}
    events = [r["event"] for r in _journal(lab)]
    assert events == ["refused", "intent", "override", "result"]


def test_cold_ports_are_not_interlocked(msoctl: Msoctl, lab: Lab) -> None:
    _hot_transmitter(lab, 1, 23.0)
    assert msoctl("ocs", "connect", "ocs-a", "2:66").code == 0  # port 1 is not switched


def test_port_disable_and_enable(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("ocs", "port", "disable", "ocs-a", "3", "4").code == 0
    assert lab.ocs["ocs-a"].port_state(3) == "D"
    ports = json.loads(msoctl("ocs", "ports", "ocs-a", "-o", "json").out)["ports"]
    assert [p["state"] for p in ports[2:5]] == ["disabled", "disabled", "enabled"]
    assert msoctl("ocs", "port", "enable", "ocs-a", "3", "4").code == 0
    assert lab.ocs["ocs-a"].port_state(3) == "E"
    bad = msoctl("ocs", "port", "disable", "ocs-a", "999")
    assert bad.code == 2 and "out of range" in _one_error_line(bad)


def test_boot_mode_command(msoctl: Msoctl, lab: Lab) -> None:
    assert "restore" in msoctl("ocs", "boot-mode", "ocs-a").out
    assert msoctl("ocs", "boot-mode", "ocs-a", "dark").code == 0
    assert lab.ocs["ocs-a"].boot_mode == "dark"


def test_serial_console(msoctl: Msoctl, lab: Lab) -> None:
    result = msoctl("ocs", "connect", "ocs-b", "61:65", "--console")
    assert result.code == 0, result.err
    assert lab.ocs["ocs-b"].connection_map() == {61: 65}
    status = json.loads(msoctl("ocs", "status", "ocs-b", "--console", "-o", "json").out)
    assert status["connections"][0]["egress"] == 65


def test_light_check_reports_a_cut_fiber(msoctl: Msoctl, lab: Lab) -> None:
    lab.ocs["ocs-a"].add((1,), (121,))
    lab.ocs["ocs-b"].add((61,), (65,))
    restart_amplifier(lab, "amp-1")
    wait_until(lambda: lab.optics.power_dbm("ocs-b:61") > 0, "amp-1 amplifies span-1")
    document = json.loads(msoctl("ocs", "light", "ocs-b", "-o", "json").out)
    assert document["paths"][0]["status"] == "ok"
    lab.inject("span-1", Fault("fiber_cut"))
    wait_until(lambda: lab.amps["amp-1"].als_state == 2, "ALS shuts amp-1")
    document = json.loads(msoctl("ocs", "light", "ocs-b", "-o", "json").out)
    assert document["paths"][0]["status"] == "dark input"


@pytest.mark.parametrize("fault", [
    Fault("reset", count=1), Fault("garbage", count=1), Fault("freeze"),
])
def test_device_faults_give_one_line_and_a_consistent_journal(
    msoctl: Msoctl, lab: Lab, fault: Fault, tmp_path: Path
) -> None:
    inventory = lab.state_dir / "inventory.yaml"
    inventory.write_text(inventory.read_text().replace("timeout_seconds: 5.0",
                                                       "timeout_seconds: 1.0"))
    lab.ocs["ocs-a"].add((1,), (65,))
    mapfile = _write_map(tmp_path / "map.yaml", ["1:65", "2:66"])
    # Let the pre-reads through, then spoil the change's fence.
    original = lab.ocs["ocs-a"].add

    def add_then_fault(*args: Any) -> None:
        original(*args)
        lab.inject("ocs-a", fault)

    lab.ocs["ocs-a"].add = add_then_fault  # type: ignore[method-assign]
    result = msoctl("ocs", "apply", "ocs-a", str(mapfile))
    lab.ocs["ocs-a"].add = original  # type: ignore[method-assign]
    lab.clear("ocs-a")
    assert result.code == 1
    _one_error_line(result)
    records = _journal(lab)
    assert [r["event"] for r in records] == ["intent", "result"]
    assert records[1]["status"] == "failed"
    # The device did take the change; a rerun finds nothing to do and verifies.
    rerun = msoctl("ocs", "apply", "ocs-a", str(mapfile), "-o", "json")
    assert rerun.code == 0, rerun.err
    assert json.loads(rerun.out)["method"] == "none"
    assert lab.ocs["ocs-a"].connection_map() == {1: 65, 2: 66}


def test_verbose_adds_detail(msoctl: Msoctl, lab: Lab) -> None:
    inventory = lab.state_dir / "inventory.yaml"
    inventory.write_text(inventory.read_text().replace("timeout_seconds: 5.0",
                                                       "timeout_seconds: 0.5"))
    lab.inject("ocs-a", Fault("freeze"))
    result = msoctl("-v", "ocs", "status", "ocs-a")
    assert result.code == 1
    assert result.err.startswith("error: ocs-a: no reply")
    assert "detail:" in result.err and "Traceback" not in result.err


@pytest.mark.parametrize("text", [
    "connections:\n", "{}\n", "# nothing but a comment\nconnections: ~\n",
])
def test_a_map_file_without_its_list_is_refused(
    msoctl: Msoctl, lab: Lab, tmp_path: Path, text: str
) -> None:
    lab.ocs["ocs-a"].add((1,), (65,))
    mapfile = tmp_path / "map.yaml"
    mapfile.write_text(text)
    result = msoctl("ocs", "apply", "ocs-a", str(mapfile))
    assert result.code == 2
    assert "connections: []" in _one_error_line(result)
    assert lab.ocs["ocs-a"].connection_map() == {1: 65}


def test_an_explicit_empty_map_clears_the_switch(msoctl: Msoctl, lab: Lab, tmp_path: Path) -> None:
    lab.ocs["ocs-a"].add((1,), (65,))
    mapfile = tmp_path / "map.yaml"
    mapfile.write_text("connections: []\n")
    result = msoctl("ocs", "apply", "ocs-a", str(mapfile))
    assert result.code == 0, result.err
    assert lab.ocs["ocs-a"].connection_map() == {}
