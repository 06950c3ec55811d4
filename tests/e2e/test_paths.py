"""``msoctl path show``: the link budget hop by hop, against the lab's devices."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from drivers.amp.types import AmpMonitors, AmpSettings, AmpStatus
from drivers.ocs.types import Connection
from emulators.amp.als import NORMAL
from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.fabric.cpo_power import PortPower, mean_dbm
from msoctl.fabric.lightpath import (
    TYPICAL_OCS_INSERTION_LOSS_DB,
    AmpReading,
    FabricReadings,
    OcsReading,
    SwitchReading,
    trace_link,
)
from msoctl.inventory import load_inventory
from tests.support import Msoctl, restart_amplifier, wait_until
from tests.support.inventory import INVENTORY


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _amp(gain_db: float | None, input_dbm: float, output_dbm: float) -> AmpReading:
    settings = AmpSettings(mode="gain", output_enabled=True, target_gain_db=20.0,
                           target_output_power_dbm=10.0, target_tilt_db=0.0, als_mode="auto",
                           als_los_soak_seconds=0.5, als_restart_interval_seconds=100,
                           als_restart_pulse_seconds=2.0, los_threshold_dbm=-30.0)
    monitors = AmpMonitors(input_power_dbm=input_dbm, output_power_dbm=output_dbm,
                           gain_db=gain_db, tilt_db=None, pump_currents_ma=(),
                           pump_temperature_celsius=None, back_reflection_db=None,
                           als_state="normal", conditions=())
    status = AmpStatus(module=None, identity=None, settings=settings,  # type: ignore[arg-type]
                       monitors=monitors)
    return AmpReading(status=status)


def _readings(ocs_a: dict[int, float | None], ocs_b: dict[int, float | None], *,
              a_map: dict[int, tuple[int, float | None]],
              b_map: dict[int, tuple[int, float | None]],
              amp: AmpReading, rx_b: float | None, rx_a: float | None) -> FabricReadings:
    def conns(mapping: dict[int, tuple[int, float | None]]) -> dict[int, Connection]:
        return {i: Connection(i, e, loss) for i, (e, loss) in mapping.items()}

    return FabricReadings(
        ocs={"ocs-a": OcsReading(conns(a_map), ocs_a), "ocs-b": OcsReading(conns(b_map), ocs_b)},
        amps={"amp-1": amp},
        switches={"sw-a": SwitchReading({"Ethernet1": PortPower("Ethernet1", 1, 8, 2.0, rx_a)}),
                  "sw-b": SwitchReading({"Ethernet1": PortPower("Ethernet1", 1, 8, 1.0, rx_b)})})


def test_budget_arithmetic_hop_by_hop(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    link = load_inventory(path).link("link-1")
    readings = _readings(
        {1: 1.8, 121: 0.2, 61: -7.6, 65: -9.0}, {1: 0.9, 121: -0.6, 61: 11.0, 65: 9.4},
        a_map={1: (121, 1.8), 61: (65, None)}, b_map={61: (65, 1.6), 1: (121, 1.7)},
        amp=_amp(19.5, -6.5, 13.0), rx_b=9.2, rx_a=-50.0)
    traced = trace_link(link, readings)
    assert traced.span == "working"
    a_to_b, b_to_a = traced.directions
    expected = [hop.expected_dbm for hop in a_to_b.hops]
    fiber = 30 * 0.2 + 0.6
    launch = 2.0  # sw-a's measured Tx power wins over the inventory's 1.0 dBm
    assert a_to_b.launch_dbm == launch and a_to_b.launch_source == "cpo"
    assert expected[0] == 1.0  # the inventory's launch power, to compare the Tx with
    assert expected[1:] == pytest.approx([
        launch, launch - 1.8, launch - 1.8 - fiber, launch - 1.8 - fiber + 19.5,
        launch - 1.8 - fiber + 19.5, launch - 1.8 - fiber + 19.5 - 1.6,
        launch - 1.8 - fiber + 19.5 - 1.6])
    assert [hop.status for hop in a_to_b.hops] == ["ok"] * 8
    assert a_to_b.light == "arrives" and a_to_b.lost_at is None
    # b -> a: no amplifier; ocs-a does not report 61->65's loss: the typical figure
    expected = [hop.expected_dbm for hop in b_to_a.hops]
    assert expected[1:] == pytest.approx([
        1.0, 1.0 - 1.7, 1.0 - 1.7 - fiber, 1.0 - 1.7 - fiber - TYPICAL_OCS_INSERTION_LOSS_DB,
        1.0 - 1.7 - fiber - TYPICAL_OCS_INSERTION_LOSS_DB])
    assert "typical" in (b_to_a.hops[4].step or "")
    assert b_to_a.light == "lost"
    lost = b_to_a.as_dict()["lost_at"]
    assert lost == {"hop": 6, "device": "sw-a", "point": "Ethernet1 rx", "status": "dark"}


def test_low_hop_and_span_states(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    link = load_inventory(path).link("link-1")
    # a_to_b on the protection span at ocs-a only; ocs-b port 65 not connected
    readings = _readings(
        {1: 1.0, 122: -0.7, 61: -60.0, 65: -60.0}, {1: 1.0, 62: -15.0, 65: -60.0},
        a_map={1: (122, 1.7)}, b_map={}, amp=_amp(None, -40.0, -40.0), rx_b=-100.0,
        rx_a=-100.0)
    traced = trace_link(link, readings)
    a_to_b, b_to_a = traced.directions
    assert a_to_b.span == "mixed" and a_to_b.span_name == "span-2"
    assert any("ocs-b port 65 is not connected" in note for note in a_to_b.notes)
    # span-2 has no amplifier: 62 in expects -0.7... minus 6.5 dB; -15 dBm is low, not dark
    assert [h.point for h in a_to_b.hops][3] == "port 62 in"
    assert a_to_b.hops[3].status == "low"
    assert a_to_b.as_dict()["lost_at"]["hop"] == 4
    assert b_to_a.span == "none"
    assert traced.span == "mixed"
    # an OCS that did not answer: no span state, its hops unknown, the rest still traced
    readings.ocs["ocs-b"] = OcsReading(error="no answer within 5 s")
    a_to_b = trace_link(link, readings).directions[0]
    assert a_to_b.span is None
    silent = [hop for hop in a_to_b.hops if hop.device == "ocs-b"]
    assert silent and all(h.status == "unknown" and h.measured_dbm is None
                          and h.error == "no answer within 5 s" for h in silent)


def test_without_cpo_telemetry_the_budget_starts_from_the_inventory(
        tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    link = load_inventory(path).link("link-1")
    readings = _readings(
        {1: 0.8, 121: -0.9, 61: -8.0, 65: -9.6}, {1: 0.9, 121: -0.8, 61: 11.5, 65: 9.9},
        a_map={1: (121, 1.7), 61: (65, 1.6)}, b_map={61: (65, 1.6), 1: (121, 1.7)},
        amp=_amp(20.0, -7.3, 12.7), rx_b=None, rx_a=None)
    readings.switches = {"sw-a": SwitchReading(has_telemetry=False),
                         "sw-b": SwitchReading(has_telemetry=False)}
    a_to_b, b_to_a = trace_link(link, readings).directions
    assert a_to_b.launch_dbm == 1.0 and a_to_b.launch_source == "inventory"
    assert a_to_b.hops[0].status == "unknown" and a_to_b.hops[-1].status == "unknown"
    assert a_to_b.hops[-1].expected_dbm == pytest.approx(1.0 - 1.7 - 6.6 + 20.0 - 1.6)
    # the far OCS port that feeds the receiver reads the light: it arrives
    assert a_to_b.light == "arrives" and b_to_a.light == "arrives"
    assert a_to_b.notes == ["sw-a has no snmp section in the inventory: no CPO telemetry",
                            "sw-b has no snmp section in the inventory: no CPO telemetry"]


def test_mean_dbm() -> None:
    assert mean_dbm([1.0, 2.0, None]) == 1.5
    assert mean_dbm([None]) is None
    assert mean_dbm([]) is None


# ---- against the lab -----------------------------------------------------------------------


def light_link_1(lab: Lab, role: str = "working") -> None:
    """Cross-connect link-1 at both ends onto span-1 (working) or span-2, restart the amp."""
    a_out, b_in, b_out, a_in, amp = ((121, 61, 121, 61, "amp-1") if role == "working"
                                     else (122, 62, 122, 62, "amp-2"))
    lab.ocs["ocs-a"].add((1, a_in), (a_out, 65))
    lab.ocs["ocs-b"].add((b_in, 1), (65, b_out))
    wait_until(lambda: lab.ocs["ocs-a"].pending_until() <= lab.clock.now()
               and lab.ocs["ocs-b"].pending_until() <= lab.clock.now(), "OCS switching")
    restart_amplifier(lab, amp)
    # Back to normal, not only lit: during the restart pulse the output is held at the
    # pulse's ceiling, a few dB below what the gain gives once ALS sees the input again.
    wait_until(lambda: lab.amps[amp].als_state == NORMAL
               and lab.optics.power_dbm(f"{amp}:out") > 5.0, f"{amp} output", 3.0)

    def gain_settled() -> bool:  # it climbs from 0 dB with the loop's 20 ms time constant
        before = lab.amps[amp].gain_db
        time.sleep(0.05)
        after = lab.amps[amp].gain_db
        return before is not None and after is not None and abs(after - before) < 0.05

    wait_until(gain_settled, f"{amp} gain settled", 3.0)
    # The switches' SNMP agents serve a reading up to a second old (their refresh); the
    # previous test may have left one taken while the link was dark. Bring both to now,
    # as the agents would at their next refresh.
    for switch in ("sw-a", "sw-b"):
        lab.telemetry[switch].update()


def _show(msoctl: Msoctl, *args: str) -> tuple[int, dict[str, Any], str]:
    result = msoctl("path", "show", *args, "-o", "json")
    return result.code, json.loads(result.out), result.err


def test_lit_link_within_budget_then_a_fiber_cut_names_the_hop(lab: Lab,
                                                                msoctl: Msoctl) -> None:
    light_link_1(lab)
    code, document, err = _show(msoctl, "link-1")
    assert code == 0, err
    assert document["errors"] == []
    (link,) = document["links"]
    assert link["span"] == "working" and link["span_name"] == "span-1"
    assert link["light"] == "arrives"
    for direction in link["directions"]:
        assert direction["launch_source"] == "cpo"
        for hop in direction["hops"]:
            assert hop["measured_power_dbm"] is not None, hop
            assert abs(hop["difference_db"]) < 3.0, hop
            assert hop["status"] == "ok", hop
    a_to_b = link["directions"][0]
    assert [(h["device"], h["point"]) for h in a_to_b["hops"]] == [
        ("sw-a", "Ethernet1 tx"), ("ocs-a", "port 1 in"), ("ocs-a", "port 121 out"),
        ("amp-1", "in"), ("amp-1", "out"), ("ocs-b", "port 61 in"), ("ocs-b", "port 65 out"),
        ("sw-b", "Ethernet1 rx")]
    # the OCSes report each connection's insertion loss: no typical figure is used
    assert all("typical" not in (h["budget_step"] or "") for h in a_to_b["hops"])
    assert "(ocs-a)" in a_to_b["hops"][2]["budget_step"]
    assert a_to_b["hops"][4]["budget_step"] == "amp-1 gain (measured)"

    lab.inject("span-1", Fault("fiber_cut"))
    wait_until(lambda: lab.optics.power_dbm("amp-1:out") == float("-inf"), "ALS shutdown",
               3.0)
    code, document, err = _show(msoctl, "link-1")
    assert code == 0, err
    a_to_b, b_to_a = document["links"][0]["directions"]
    assert a_to_b["light"] == "lost"
    assert a_to_b["lost_at"] == {"hop": 4, "device": "amp-1", "point": "in", "status": "dark"}
    assert b_to_a["lost_at"] == {"hop": 4, "device": "ocs-a", "point": "port 61 in",
                                 "status": "dark"}
    table = msoctl("path", "show")
    assert table.code == 0
    said = " ".join(table.out.split())  # a direction's line wraps within 80 columns
    assert "light lost at hop 4 (amp-1 in: dark)" in said
    assert "light lost at hop 4 (ocs-a port 61 in: dark)" in said


def test_protection_span_is_read_from_the_cross_connects(lab: Lab, msoctl: Msoctl) -> None:
    light_link_1(lab, "protection")
    code, document, err = _show(msoctl)
    assert code == 0, err
    (link,) = document["links"]
    assert link["span"] == "protection" and link["span_name"] == "span-2"
    assert link["light"] == "arrives", [d.get("lost_at") for d in link["directions"]]
    assert document["links"][0]["directions"][0]["hops"][3]["device"] == "amp-2"


def test_a_frozen_device_leaves_null_values_and_exit_1(lab: Lab, msoctl: Msoctl) -> None:
    light_link_1(lab)
    lab.inject("amp-1", Fault("freeze"))
    result = msoctl("path", "show", "-o", "json")
    assert result.code == 1
    assert result.err.count("\n") == 1 and result.err.startswith("error: amp-1 did not answer")
    document = json.loads(result.out)
    assert [e["device"] for e in document["errors"]] == ["amp-1"]
    a_to_b, b_to_a = document["links"][0]["directions"]
    amp_hops = [h for h in a_to_b["hops"] if h["device"] == "amp-1"]
    assert len(amp_hops) == 2
    assert all(h["measured_power_dbm"] is None and h["error"] for h in amp_hops)
    # the rest is still measured: the far OCS and the receiver see the light
    assert a_to_b["hops"][5]["measured_power_dbm"] > 5.0
    assert a_to_b["measured_rx_power_dbm"] > 5.0
    assert b_to_a["light"] == "arrives"


def test_unknown_link_is_bad_usage(lab: Lab, msoctl: Msoctl) -> None:
    result = msoctl("path", "show", "link-9")
    assert result.code == 2
    assert result.err.startswith("error: ") and "no link named 'link-9'" in result.err
