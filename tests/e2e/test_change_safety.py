"""Changes on a live fabric: which links a change darkens, moves or disturbs; in-service links
are not taken down without a drain or --force; switch replaces delete nothing silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from drivers.switch.tree import Change
from emulators.lab import Lab
from msoctl import impact
from msoctl.inventory import load_inventory
from msoctl.journal import Journal
from tests.support import Msoctl, restart_amplifier, wait_until
from tests.support.inventory import INVENTORY

WORKING_A = {1: 121, 61: 65}
WORKING_B = {1: 121, 61: 65}
PROTECTION_A = {1: 122, 62: 65}
PROTECTION_B = {1: 122, 62: 65}


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


@pytest.fixture
def inventory(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    return load_inventory(path)


# ---- the impact of each kind of change, worked out from the maps ---------------------------


def test_an_ocs_change_darkens_moves_or_restores_the_links_through_it(inventory) -> None:  # type: ignore[no-untyped-def]
    maps = {"ocs-a": WORKING_A, "ocs-b": WORKING_B}
    [down] = impact.ocs_map(inventory, "ocs-a", WORKING_A, {61: 65}, read_map=maps.get)
    assert (down.link, down.effect, down.span) == ("link-1", "down", "span-1")
    assert "1:121" in down.reason and not down.drained
    # One end moved while the other stays on span-1: dark end to end, not "moved"
    [one_end] = impact.ocs_map(inventory, "ocs-a", WORKING_A, PROTECTION_A, read_map=maps.get)
    assert (one_end.effect, one_end.span) == ("down", "span-1")
    assert "ocs-b stays off protection" in one_end.reason
    # Both ends moved (the other's map after the change, as a fabric plan gives it)
    after = {"ocs-a": PROTECTION_A, "ocs-b": PROTECTION_B}
    [moved] = impact.ocs_map(inventory, "ocs-a", WORKING_A, PROTECTION_A, read_map=maps.get,
                             read_after=after.get)
    assert (moved.effect, moved.span, moved.to_span) == ("moved", "span-1", "span-2")
    [back] = impact.ocs_map(inventory, "ocs-a", {}, WORKING_A, read_map=maps.get)
    assert back.effect == "restored"
    # Made at ocs-a with the far OCS unconnected: the light does not arrive end to end
    far_dark = {"ocs-a": {}, "ocs-b": {}}
    [half] = impact.ocs_map(inventory, "ocs-a", {}, WORKING_A, read_map=far_dark.get)
    assert half.effect == "still dark" and "ocs-b does not carry working" in half.reason
    # Drained, the same change is shown, marked drained, and blocks nothing.
    [drained] = impact.ocs_map(inventory, "ocs-a", WORKING_A, {}, ["link-1"], read_map=maps.get)
    assert drained.drained and drained.service == "drained"
    # Already dark at its other end: nothing is taken down.
    dark_b = {"ocs-a": WORKING_A, "ocs-b": {}}
    assert impact.ocs_map(inventory, "ocs-a", WORKING_A, {}, read_map=dark_b.get) == []
    # The other end unreadable: the worst is assumed, and said.
    [assumed] = impact.ocs_map(inventory, "ocs-a", WORKING_A, {}, read_map=lambda n: None)
    assert assumed.effect == "down" and assumed.assumed


def test_disabling_a_port_of_a_lit_path_takes_its_link_down(inventory) -> None:  # type: ignore[no-untyped-def]
    [down] = impact.ocs_ports_disabled(inventory, "ocs-a", [65], WORKING_A)
    assert down.effect == "down" and "65" in down.reason
    assert impact.ocs_ports_disabled(inventory, "ocs-a", [2, 66], WORKING_A) == []
    [risk] = impact.ocs_boot_mode(inventory, "ocs-a", "dark", WORKING_A)
    assert risk.effect == "at risk"
    assert impact.ocs_boot_mode(inventory, "ocs-a", "restore", WORKING_A) == []


def test_an_amplifier_change_reaches_the_links_on_its_span(inventory) -> None:  # type: ignore[no-untyped-def]
    on_working = {"ocs-a": WORKING_A, "ocs-b": WORKING_B}
    [down] = impact.amplifier(inventory, "amp-1", "down", "low power", on_working.get)
    assert (down.effect, down.span) == ("down", "span-1")
    on_protection = {"ocs-a": PROTECTION_A, "ocs-b": {2: 121, 62: 65}}
    # amp-1 amplifies span-1: with link-1 on span-2 it only loses its protection path.
    [standby] = impact.amplifier(inventory, "amp-1", "down", "low power", on_protection.get)
    assert (standby.effect, standby.span) == ("unprotected", "span-1")
    assert impact.amplifier(inventory, "amp-1", "disturbed", "gain", on_protection.get) == []


def test_a_switch_speed_change_retrains_a_lit_link_and_others_disturb_it(inventory) -> None:  # type: ignore[no-untyped-def]
    lit = {"ocs-a": WORKING_A, "ocs-b": WORKING_B}
    speed = Change("/switch/ports/port[name='Ethernet1']/speed", "400G", None)
    cable = Change("/switch/ports/port[name='Ethernet1']/cable-length-meters", 30000, 30010)
    global_change = Change("/switch/fast-cnp/cnp-dscp", 48, 46)
    other_port = Change("/switch/ports/port[name='Ethernet9']/speed", "400G", "800G")
    [down] = impact.switch_config(inventory, "sw-a", [speed], read_map=lit.get)
    assert down.effect == "down" and "retrains" in down.reason
    unlit = {"ocs-a": {}, "ocs-b": {}}
    [dark] = impact.switch_config(inventory, "sw-a", [speed], read_map=unlit.get)
    assert dark.effect == "disturbed"  # not lit: a speed change darkens nothing
    assert [i.effect for i in impact.switch_config(inventory, "sw-b", [cable],
                                                   read_map=lit.get)] == ["disturbed"]
    assert [i.effect for i in impact.switch_config(inventory, "sw-a", [global_change],
                                                   read_map=lit.get)] == ["disturbed"]
    assert impact.switch_config(inventory, "sw-a", [other_port], read_map=lit.get) == []


# ---- through the command line, against the lab -----------------------------------------------


def _light_link_1(lab: Lab) -> None:
    lab.ocs["ocs-a"].add((1, 61), (121, 65))
    lab.ocs["ocs-b"].add((1, 61), (121, 65))
    restart_amplifier(lab, "amp-1")


def _refusals(lab: Lab, action: str) -> list[dict[str, object]]:
    journal = Journal(lab.state_dir / "journal.sqlite")
    return [o.intent for o in journal.operations() if o.action == action
            and o.status == "refused"]


def test_a_dry_run_refuses_a_lit_port_as_the_run_does(lab: Lab, msoctl: Msoctl) -> None:
    """The lit-port interlock: a port carrying more than the inventory's
    max_switch_power_dbm is not switched without --force, and a dry run says so too."""
    import yaml

    lab.ocs["ocs-a"].add((1,), (70,))  # sw-a's tx1 lights ingress 1 (no inventory link)
    entries = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    for entry in entries["devices"]:
        if entry["name"] == "ocs-a":
            entry["max_switch_power_dbm"] = -10
    low = lab.state_dir / "inventory-low-limit.yaml"
    low.write_text(yaml.safe_dump(entries))
    try:
        for dry in (("--dry-run",), ()):
            result = msoctl("--inventory", str(low), "ocs", "disconnect", "ocs-a", "1", *dry)
            assert result.code == 3, result.err
            assert "port 1 carries" in result.err and "switching limit" in result.err
        assert lab.ocs["ocs-a"].connection_map() == {1: 70}
        assert msoctl("--inventory", str(low), "ocs", "disconnect", "ocs-a", "1",
                      "--dry-run", "--force").code == 0
    finally:
        low.unlink()


def test_disconnecting_a_live_link_is_refused_until_it_is_drained(lab: Lab,
                                                                   msoctl: Msoctl) -> None:
    _light_link_1(lab)
    dry = msoctl("ocs", "disconnect", "ocs-a", "1", "--dry-run", "-o", "json")
    assert dry.code == 3  # a dry run refuses what the run would refuse ...
    assert dry.err.count("\n") == 1 and "the change would be refused: link-1 is in " \
        "service" in dry.err
    document = json.loads(dry.out)  # ... after showing the plan and its impact
    assert document["dry_run"] is True
    assert [(i["link"], i["effect"], i["service"]) for i in document["impact"]] == [
        ("link-1", "down", "in service")]
    assert _refusals(lab, "ocs.disconnect") == []  # a dry run journals nothing
    assert msoctl("ocs", "disconnect", "ocs-a", "1", "--dry-run", "--force").code == 0
    for args in (("port", "disable", "ocs-a", "1"), ("port", "disable", "ocs-a", "1", "--force")):
        assert msoctl("ocs", *args, "--dry-run").code == (0 if "--force" in args else 3)
    refused = msoctl("ocs", "disconnect", "ocs-a", "1")
    assert refused.code == 3
    assert refused.err.count("\n") == 1 and refused.err.startswith("error: ")
    assert "link-1 is in service and would go down" in refused.err
    assert "msoctl link drain link-1" in refused.err
    assert lab.ocs["ocs-a"].connection_map() == WORKING_A  # nothing was sent
    [refusal] = _refusals(lab, "ocs.disconnect")
    assert refusal["rule"] == "link-in-service" and refusal["exit_code"] == 3

    assert msoctl("link", "drain", "link-1", "--reason", "span-1 repair").code == 0
    listed = json.loads(msoctl("link", "list", "-o", "json").out)["links"]
    assert listed[0]["service"] == "drained" and listed[0]["carried_by"] == "span-1"
    assert listed[0]["drained"]["reason"] == "span-1 repair"
    done = msoctl("ocs", "disconnect", "ocs-a", "1")
    assert done.code == 0, done.err
    assert "drained" in done.out
    assert lab.ocs["ocs-a"].connection_map() == {61: 65}
    assert msoctl("link", "undrain", "link-1").code == 0
    again = msoctl("ocs", "connect", "ocs-a", "1:121", "-o", "json")
    assert json.loads(again.out)["impact"][0]["effect"] == "restored"

    journal = Journal(lab.state_dir / "journal.sqlite")
    actions = [(o.device, o.action, o.status) for o in journal.operations("link-1")]
    assert actions == [("link-1", "link.drain", "ok"), ("link-1", "link.undrain", "ok")]


def test_force_overrides_and_the_override_is_journaled(lab: Lab, msoctl: Msoctl) -> None:
    _light_link_1(lab)
    result = msoctl("ocs", "apply", "ocs-a", str(_map(lab, {61: 65})), "--force", "-o", "json")
    assert result.code == 0, result.err
    journal = Journal(lab.state_dir / "journal.sqlite")
    [operation] = [o for o in journal.operations("ocs-a") if o.action == "ocs.apply"]
    overrides = [r for r in operation.records if r["event"] == "override"]
    assert [r["rule"] for r in overrides] == ["link-in-service"]
    assert operation.intent["impact"][0]["effect"] == "down"


def _map(lab: Lab, mapping: dict[int, int]) -> Path:
    path = lab.state_dir / "map.yaml"
    path.write_text(yaml.safe_dump({"connections": [f"{i}:{e}" for i, e in mapping.items()]}))
    return path


def test_low_power_on_the_working_amplifier_is_refused_while_the_link_is_up(
        lab: Lab, msoctl: Msoctl) -> None:
    _light_link_1(lab)
    wait_until(lambda: lab.amps["amp-1"].output_dbm > 0, "amp-1 lit")
    refused = msoctl("amp", "power-mode", "amp-1", "low")
    assert refused.code == 3
    assert refused.err.startswith("error: ") and refused.err.count("\n") == 1
    assert "link-1 is in service and would go down (amp-1: low power" in refused.err
    assert lab.amps["amp-1"].output_dbm > 0
    assert _refusals(lab, "amp.power-mode")
    # The standby span's amplifier: the link stays up and loses its protection; allowed.
    standby = msoctl("amp", "power-mode", "amp-2", "low")
    assert standby.code == 0, standby.err
    assert "unprotected" in standby.out
    tx = msoctl("amp", "tx", "amp-1", "off", "--dry-run")
    assert tx.code == 0 and "down" in tx.out


def test_protection_leaves_a_drained_link_alone_and_status_says_so(lab: Lab,
                                                                   msoctl: Msoctl) -> None:
    from msoctl.protect.controller import ProtectConfig, ProtectionController

    _light_link_1(lab)
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    assert inventory.journal_path is not None
    journal = Journal(inventory.journal_path)
    assert msoctl("link", "drain", "link-1").code == 0
    controller = ProtectionController(inventory, journal, config=ProtectConfig(
        poll_seconds=0.005, hold_off_seconds=0.0, use_probes=False))
    with controller.background():
        wait_until(lambda: controller.status()[0]["drained"], "the controller sees the drain")
        lab.ocs["ocs-a"].subtract([1])  # the work on the drained link darkens it
        wait_until(lambda: controller.status()[0]["role"] is None, "the link is dark")
        import time

        time.sleep(0.3)  # several polls: a protected link would have been switched by now
        assert controller.counts["switch"] == 0
        assert not any(e.kind == "switch" for e in controller.events)
        assert any(e.kind == "drained" for e in controller.events)
    document = json.loads(msoctl("protect", "status", "-o", "json").out)
    assert document["links"][0]["service"] == "drained"
    assert "drained: left alone" in msoctl("protect", "status").out


WANT_SPEED = {"switch": {"ports": {"port": [{"name": "Ethernet1", "speed": "400G",
                                            "cable-length-meters": 30010}]}}}
WANT_LENGTH_ONLY = {"switch": {"ports": {"port": [{"name": "Ethernet1",
                                                  "cable-length-meters": 30020}]}}}


def _want(lab: Lab, name: str, tree: dict[str, object]) -> Path:
    path = lab.state_dir / name
    path.write_text(yaml.safe_dump(tree))
    return path


def test_a_switch_replace_never_deletes_configuration_silently(lab: Lab, msoctl: Msoctl) -> None:
    speed = _want(lab, "speed.yaml", WANT_SPEED)
    assert msoctl("switch", "cc", "apply", "sw-a", "--file", str(speed)).code == 0
    length_only = _want(lab, "length.yaml", WANT_LENGTH_ONLY)
    plan = json.loads(msoctl("switch", "cc", "plan", "sw-a", "--file", str(length_only),
                             "-o", "json").out)
    assert [c["path"] for c in plan["deletions"]] == [
        "/switch/ports/port[name='Ethernet1']/speed"]
    assert [c["path"] for c in plan["changes"]] == [
        "/switch/ports/port[name='Ethernet1']/cable-length-meters"]
    table = msoctl("switch", "cc", "plan", "sw-a", "--file", str(length_only)).out
    assert "1 change, 1 deletion" in table and "deletions (" in table

    refused = msoctl("switch", "cc", "apply", "sw-a", "--file", str(length_only))
    assert refused.code == 3
    assert refused.err.count("\n") == 1 and "--allow-delete" in refused.err
    assert "speed" in refused.err
    running = json.loads(msoctl("switch", "cc", "show", "sw-a", "-o", "json").out)
    port = next(p for p in running["ports"] if p["name"] == "Ethernet1")
    assert port["speed"] == "400G" and port["cable_length_meters"] == 30010
    journal = Journal(lab.state_dir / "journal.sqlite")
    assert journal.operations("sw-a")[-1].status == "refused"

    merged = msoctl("switch", "cc", "apply", "sw-a", "--file", str(length_only), "--merge",
                    "-o", "json")
    assert merged.code == 0, merged.err
    assert json.loads(merged.out)["devices"][0]["deletions"] == []
    running = json.loads(msoctl("switch", "cc", "show", "sw-a", "-o", "json").out)
    port = next(p for p in running["ports"] if p["name"] == "Ethernet1")
    assert port["speed"] == "400G" and port["cable_length_meters"] == 30020

    allowed = msoctl("switch", "cc", "apply", "sw-a", "--file", str(length_only),
                     "--allow-delete", "-o", "json")
    assert allowed.code == 0, allowed.err
    assert len(json.loads(allowed.out)["devices"][0]["deletions"]) == 1
    running = json.loads(msoctl("switch", "cc", "show", "sw-a", "-o", "json").out)
    port = next(p for p in running["ports"] if p["name"] == "Ethernet1")
    assert port.get("speed") is None
    assert any(r["event"] == "deletions" for r in journal.operations("sw-a")[-1].records)


def test_fabric_apply_refuses_to_take_a_live_link_down_before_any_step(
        lab: Lab, msoctl: Msoctl) -> None:
    _light_link_1(lab)
    intent = lab.state_dir / "down.yaml"
    intent.write_text(yaml.safe_dump({"links": {"link-1": {"state": "down"}}}))
    plan = json.loads(msoctl("fabric", "plan", str(intent), "-o", "json").out)
    assert {(i["link"], i["effect"]) for i in plan["impact"]} == {("link-1", "down")}
    refused = msoctl("fabric", "apply", str(intent))
    assert refused.code == 3 and "msoctl link drain link-1" in refused.err
    assert lab.ocs["ocs-a"].connection_map() == WORKING_A
    journal = Journal(lab.state_dir / "journal.sqlite")
    [fabric_op] = journal.operations("fabric")
    assert fabric_op.status == "refused" and fabric_op.result is not None
    assert "link-1" in fabric_op.result["reason"]
    assert [o for o in journal.operations() if o.device != "fabric"] == []
    assert msoctl("link", "drain", "link-1").code == 0
    done = msoctl("fabric", "apply", str(intent))
    assert done.code == 0, done.err
    assert lab.ocs["ocs-a"].connection_map() == {}
