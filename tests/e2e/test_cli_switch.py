"""``msoctl switch cc`` and ``msoctl switch counters`` against emulated switches.

Three NETCONF emulators stand for a fleet, with an inventory that names them
(password in a 0600 file, host keys in a known_hosts file, labels). The
commands' contracts: the diff of a plan, a confirmed commit verified in a new
session and confirmed, pending changes found again in the journal and settled
later, a fleet by label in parallel, all-or-nothing cancelling every pending
commit when one switch fails, and every failure one ``error:`` line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.faults import Fault
from msoctl.journal import Journal
from tests.support import Msoctl, in_process
from tests.support.netconf import PASSWORD, USER, Loop, Switch, leaf, netconf, want

NAMES = ("sw-1", "sw-2", "sw-3")


@pytest.fixture
def fleet(loop: Loop) -> Iterator[dict[str, Switch]]:
    switches = {name: Switch(loop) for name in NAMES}
    yield switches
    for switch in switches.values():
        switch.stop()


@pytest.fixture
def inventory(fleet: dict[str, Switch], tmp_path: Path) -> Path:
    secret = tmp_path / "secrets" / "switch.password"
    secret.parent.mkdir(mode=0o700)
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    (tmp_path / "known_hosts").write_text(
        "".join(s.server.known_hosts_line() + "\n" for s in fleet.values()))
    devices = [{
        "name": name, "kind": "switch", "transport": "netconf",
        "address": f"127.0.0.1:{switch.server.port}", "username": USER,
        "password": "file:secrets/switch.password", "known_hosts": "known_hosts",
        "timeout_seconds": 3,
        "labels": {"role": "leaf" if name != "sw-1" else "spine", "campus": "a"},
    } for name, switch in fleet.items()]
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"journal": "journal.sqlite", "devices": devices}))
    return path


@pytest.fixture
def msoctl(inventory: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(inventory))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


@pytest.fixture
def want_file(tmp_path: Path) -> Path:
    path = tmp_path / "want.yaml"
    path.write_text(yaml.safe_dump(want(), sort_keys=False))
    return path


def xoff(switch: Switch) -> str | None:
    with netconf(switch.server.port) as client:
        return leaf(client, "ports/port/pfc/xoff-bytes")


def journal(inventory: Path) -> Journal:
    return Journal(inventory.parent / "journal.sqlite")


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---- plan, apply, show -------------------------------------------------------------------


def test_plan_prints_the_diff_and_changes_nothing(msoctl: Msoctl, fleet: dict[str, Switch],
                                                  want_file: Path) -> None:
    result = msoctl("switch", "cc", "plan", "sw-1", "--file", str(want_file))
    assert result.code == 0, result.err
    assert "the switch's own diff" in result.out
    assert "  /switch/ports/port[name='Ethernet1']:\n" in result.out  # within 80 columns
    assert "    + pfc/xoff-bytes = 24000000\n" in result.out
    wide = msoctl("switch", "cc", "plan", "sw-1", "--file", str(want_file), "-o", "wide")
    assert "+ /switch/ports/port[name='Ethernet1']/pfc/xoff-bytes = 24000000" in wide.out
    document = json.loads(msoctl("switch", "cc", "plan", "sw-1", "--file", str(want_file),
                                 "-o", "json").out)
    assert {c["kind"] for c in document["changes"]} == {"add"}
    assert xoff(fleet["sw-1"]) is None


def test_apply_confirms_after_reading_back(msoctl: Msoctl, fleet: dict[str, Switch],
                                           want_file: Path, inventory: Path) -> None:
    result = msoctl("switch", "cc", "apply", "sw-1", "--file", str(want_file))
    assert result.code == 0, result.err
    assert "confirmed" in result.out
    assert xoff(fleet["sw-1"]) == "24000000"
    assert fleet["sw-1"].datastores.pending is None
    ops = journal(inventory).operations("sw-1")
    assert [(o.action, o.status) for o in ops] == [("switch.cc.apply", "ok")]
    assert ops[0].intent["want_sha256"] and ops[0].intent["persist_id"].startswith("msoctl-")
    again = msoctl("switch", "cc", "apply", "sw-1", "--file", str(want_file))
    assert again.code == 0 and "unchanged" in again.out

    shown = json.loads(msoctl("switch", "cc", "show", "sw-1", "-o", "json").out)
    port = shown["ports"][0]
    assert (port["name"], port["pfc_xoff_bytes"], port["lossless_priorities"]) == (
        "Ethernet1", 24_000_000, [3])
    assert port["queues"][0]["ecn_min_threshold_bytes"] == 1_000_000
    assert shown["fast_cnp"]["enabled"] is True and shown["pending"] is None
    table = msoctl("switch", "cc", "show", "sw-1", "--port", "Ethernet1")
    assert table.code == 0 and "Ethernet1" in table.out and "fast CNP on" in table.out


def test_no_confirm_leaves_it_pending_then_confirm(msoctl: Msoctl, fleet: dict[str, Switch],
                                                   want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", "sw-2", "--file", str(want_file), "--no-confirm",
                    "--confirm-timeout", "300")
    assert result.code == 0, result.err
    assert "pending" in result.out
    assert fleet["sw-2"].datastores.pending is not None
    shown = json.loads(msoctl("switch", "cc", "show", "sw-2", "-o", "json").out)
    assert shown["pending"]["persist_id"].startswith("msoctl-")
    confirmed = msoctl("switch", "cc", "confirm", "sw-2")
    assert confirmed.code == 0, confirmed.err
    assert fleet["sw-2"].datastores.pending is None
    fleet["sw-2"].clock.advance(600)
    assert xoff(fleet["sw-2"]) == "24000000"
    again = msoctl("switch", "cc", "confirm", "sw-2")
    assert again.code == 2
    assert "no pending change" in one_error_line(again.err)


def test_merge_and_allow_delete_together_are_refused(msoctl: Msoctl, fleet: dict[str, Switch],
                                                    want_file: Path) -> None:
    """--merge deletes nothing, --allow-delete lets a replace delete: both is a
    contradiction, refused before any switch is asked (no journal record either)."""
    result = msoctl("switch", "cc", "apply", "sw-2", "--file", str(want_file), "--merge",
                    "--allow-delete")
    assert result.code == 2
    assert "--merge and --allow-delete exclude each other" in one_error_line(result.err)
    assert xoff(fleet["sw-2"]) is None


def test_no_confirm_then_cancel_restores_running(msoctl: Msoctl, fleet: dict[str, Switch],
                                                 want_file: Path) -> None:
    assert msoctl("switch", "cc", "apply", "sw-2", "--file", str(want_file),
                  "--no-confirm").code == 0
    assert xoff(fleet["sw-2"]) == "24000000"
    cancelled = msoctl("switch", "cc", "cancel", "sw-2")
    assert cancelled.code == 0, cancelled.err
    assert "running is back" in cancelled.out
    assert xoff(fleet["sw-2"]) is None


def test_a_pending_change_the_switch_rolled_back_is_reported(
        msoctl: Msoctl, fleet: dict[str, Switch], want_file: Path) -> None:
    assert msoctl("switch", "cc", "apply", "sw-2", "--file", str(want_file), "--no-confirm",
                  "--confirm-timeout", "30").code == 0
    fleet["sw-2"].clock.advance(31)
    assert xoff(fleet["sw-2"]) is None
    late = msoctl("switch", "cc", "confirm", "sw-2")
    assert late.code == 2
    assert "rolled it back" in one_error_line(late.err)


# ---- fleets --------------------------------------------------------------------------------


def test_fleet_by_label_in_parallel(msoctl: Msoctl, fleet: dict[str, Switch],
                                    want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", "--label", "role=leaf", "--file", str(want_file),
                    "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert [(d["device"], d["status"]) for d in document["devices"]] == [
        ("sw-2", "ok"), ("sw-3", "ok")]
    assert xoff(fleet["sw-1"]) is None
    assert xoff(fleet["sw-2"]) == xoff(fleet["sw-3"]) == "24000000"


def test_one_failure_without_all_or_nothing(msoctl: Msoctl, fleet: dict[str, Switch],
                                            want_file: Path) -> None:
    with netconf(fleet["sw-3"].server.port) as other:
        other.lock(target="candidate")
        result = msoctl("switch", "cc", "apply", *NAMES, "--file", str(want_file))
    assert result.code == 1
    line = one_error_line(result.err)
    assert "sw-3" in line and "lock-denied" in line and "1 of 3" in line
    assert xoff(fleet["sw-1"]) == xoff(fleet["sw-2"]) == "24000000"
    assert xoff(fleet["sw-3"]) is None


def test_all_or_nothing_cancels_every_pending_commit(msoctl: Msoctl, fleet: dict[str, Switch],
                                                     want_file: Path, inventory: Path) -> None:
    with netconf(fleet["sw-3"].server.port) as other:
        other.lock(target="candidate")
        result = msoctl("switch", "cc", "apply", *NAMES, "--file", str(want_file),
                        "--all-or-nothing", "-o", "json")
    assert result.code == 1
    statuses = {d["device"]: d["status"] for d in json.loads(result.out)["devices"]}
    assert statuses == {"sw-1": "cancelled", "sw-2": "cancelled", "sw-3": "failed"}
    for switch in fleet.values():
        assert xoff(switch) is None
        assert switch.datastores.pending is None
    actions = [(o.action, o.status) for o in journal(inventory).operations("sw-1")]
    assert actions == [("switch.cc.apply", "pending"), ("switch.cc.cancel", "ok")]


def test_all_or_nothing_confirms_when_all_verified(msoctl: Msoctl, fleet: dict[str, Switch],
                                                   want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", *NAMES, "--file", str(want_file),
                    "--all-or-nothing", "--parallel", "2")
    assert result.code == 0, result.err
    for switch in fleet.values():
        assert xoff(switch) == "24000000" and switch.datastores.pending is None


def test_a_must_violation_is_one_line_with_its_path(msoctl: Msoctl, fleet: dict[str, Switch],
                                                    tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(want(xoff=20_000, xon=30_000)))
    result = msoctl("switch", "cc", "apply", "sw-1", "--file", str(bad))
    assert result.code == 1
    line = one_error_line(result.err)
    assert "pfc-xon-not-below-xoff" in line and "xon-bytes" in line
    assert xoff(fleet["sw-1"]) is None


# ---- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "message"), [
    ("switch:\n  fast-cnp: {enabled: maybe}\n",
     "bad.yaml:2: /switch/fast-cnp/enabled: 'maybe' is not"),
    ("switch:\n  ports: {port: [{name: E1, pfc: {xoff-bytes: -1}}]}\n", "bad.yaml:2: "),
    ("switch: [1\n", "bad.yaml:2: not valid YAML"),
    ("ports: {}\n", "one key, 'switch'"),
    ("switch:\n  buffer: {total-bytes: 1}\n", "state data"),
])
def test_bad_want_files(msoctl: Msoctl, tmp_path: Path, inventory: Path, content: str,
                        message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    result = msoctl("switch", "cc", "apply", "sw-1", "--file", str(path))
    assert result.code == 2
    assert message in one_error_line(result.err)
    assert journal(inventory).operations() == []


@pytest.mark.parametrize(("args", "message"), [
    (("switch", "cc", "apply", "--file", "x.yaml"), "name the switches"),
    (("switch", "cc", "apply", "--label", "role=none", "--file", "x.yaml"), "no switch"),
    (("switch", "cc", "apply", "--label", "role", "--file", "x.yaml"), "key=value"),
    (("switch", "cc", "show", "nope"), "no device named 'nope'"),
    (("switch", "cc", "apply", "sw-1", "sw-1", "--file", "WANT"), "named twice"),
])
def test_bad_arguments(msoctl: Msoctl, want_file: Path, args: tuple[str, ...],
                       message: str) -> None:
    args = tuple(str(want_file) if a == "WANT" else a for a in args)
    result = msoctl(*args)
    assert result.code == 2
    assert message in one_error_line(result.err)


def test_wrong_password_and_unreachable_switch(msoctl: Msoctl, fleet: dict[str, Switch],
                                               inventory: Path) -> None:
    (inventory.parent / "secrets" / "switch.password").write_text("wrong\n")
    result = msoctl("switch", "cc", "show", "sw-1")
    assert result.code == 1
    assert "authentication failed" in one_error_line(result.err)
    fleet["sw-2"].server.faults.inject(Fault("freeze"))
    frozen = msoctl("switch", "counters", "sw-2")
    assert frozen.code == 1
    fleet["sw-2"].server.faults.clear()


# ---- counters -------------------------------------------------------------------------------


def test_counters_json_contract(msoctl: Msoctl) -> None:
    result = msoctl("switch", "counters", "sw-1", "-o", "json")
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    assert document["device"] == "sw-1"
    assert document["buffer"]["total_bytes"] == 8589934592


def test_plan_reads_the_chips_lossless_pool(msoctl: Msoctl, fleet: dict[str, Switch]) -> None:
    """The emulated chip of this fixture reports no pool: the plan says so; a real one
    (the lab's) is read — tests/e2e/test_switch_lab.py."""
    result = msoctl("switch", "plan", "--port", "Ethernet1=30km@400G", "--device", "sw-1")
    assert result.code == 2
    assert "does not report its lossless pool" in one_error_line(result.err)
    both = msoctl("switch", "plan", "--port", "Ethernet1=30km@400G", "--device", "sw-1",
                  "--lossless-pool", "1GB")
    assert both.code == 2 and "not both" in both.err


def test_a_plan_saved_from_stdout_is_a_want_file(msoctl: Msoctl, tmp_path: Path) -> None:
    """The README's workflow, ``msoctl switch plan ... > want.yaml``: the summary lines
    are YAML comments however they wrap (a long one wrapped onto a line of its own that
    was not a comment, and the saved file did not load)."""
    from drivers.switch.intent import Intent
    from msoctl.ops.switch import load_want

    result = msoctl("switch", "plan", "--port", "Ethernet1=30km@400G", "--port",
                    "Ethernet12=80km@800G", "--lossless-pool", "1280MB", "--lossless", "3,4")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert any(len(line) > 60 and line.startswith("# ") for line in lines)
    head = lines[:lines.index("congestion_control:")]
    assert len(head) >= 3 and all(line.startswith("# ") for line in head), head
    assert all(len(line) <= 80 for line in lines)
    saved = tmp_path / "want.yaml"
    saved.write_text(result.out)
    want = load_want(saved)
    assert isinstance(want, Intent)
    assert want.ports["Ethernet12"].lossless_priorities == (3, 4)
    assert want.ports["Ethernet12"].speed == "800G"


def test_want_convert_rewrites_a_first_round_file_in_the_operators_words(
        msoctl: Msoctl, want_file: Path, tmp_path: Path) -> None:
    from drivers.switch.intent import from_legacy
    from msoctl.ops.switch import load_want

    converted = tmp_path / "converted.yaml"
    result = msoctl("switch", "want", "convert", str(want_file), "--file", str(converted))
    assert result.code == 0, result.err
    assert converted.read_text().startswith("congestion_control:")
    old = load_want(want_file)
    assert not isinstance(old, Mapping) or "switch" in old
    assert load_want(converted) == from_legacy(old)  # type: ignore[arg-type]
    printed = msoctl("switch", "want", "convert", str(converted))
    assert printed.code == 0 and printed.out == converted.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("congestion_control:\n  ports:\n    Ethernet1: {speed: 401G}\n")
    refused = msoctl("switch", "want", "convert", str(bad))
    assert refused.code == 2
    assert one_error_line(refused.err) == (
        f"error: {bad}:3: congestion_control.ports.Ethernet1.speed: '401G' is not one of "
        "100G, 200G, 400G, 800G")


def test_design_cc_s_recommendation_is_a_want_file_a_switch_plans(
        msoctl: Msoctl, fleet: dict[str, Switch], tmp_path: Path) -> None:
    """``msoctl design cc --recommend --file`` writes what ``switch cc plan`` takes: the
    switch's own diff holds the recommended ECN thresholds, and nothing is changed."""
    recommended = tmp_path / "recommended.yaml"
    found = msoctl("design", "cc", "--distance", "30km", "--duration", "10ms",
                   "--recommend", "--file", str(recommended))
    assert found.code == 0, found.err
    ecn = yaml.safe_load(recommended.read_text())[
        "congestion_control"]["ports"]["Ethernet1"]["queues"][3]["ecn"]
    result = msoctl("switch", "cc", "plan", "sw-1", "--file", str(recommended), "-o", "wide")
    assert result.code == 0, result.err
    assert f"min-threshold = {ecn['min_bytes']}" in result.out, result.out
    assert f"max-threshold = {ecn['max_bytes']}" in result.out, result.out
    assert xoff(fleet["sw-1"]) is None
