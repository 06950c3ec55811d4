"""The protection controller (msoctl/protect/controller.py) against the emulated fabric, one fault
kind per test, with short timers: what it decided, how fast, and what the journal says.

The lab starts with an empty map: each test connects link-1 on its working span (as an
operator's ``ocs connect`` would) and lets the controller do the rest (ALS restarts of
the amplifiers the empty map left shut, a probe parked on the protection span)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from drivers.errors import DeviceRejected
from drivers.scpi.session import Pending
from emulators.amp.registers import read_controls
from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.inventory import load_inventory
from msoctl.journal import DeviceBusy, Journal
from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber
from msoctl.protect.budget import QueryBudget
from msoctl.protect.controller import ProtectionController
from msoctl.protect.light import (
    LevelDetector,
    LightJudge,
    Move,
    MoveConflict,
    link_role,
    plan_moves,
)
from msoctl.protect.watch import OcsWatch
from tests.support import Msoctl, dead_pid, subprocess_env, wait_until
from tests.support.generated_fabric import last_order, told_ready
from tests.support.protecting import Running, connect_working, protecting

# The controller's switching, hold-off and wait-to-restore are timed in real time, and so
# is the emulated LC engine: alone on the machine (make test's second pass).
pytestmark = pytest.mark.serial

SWITCH_MARGIN_SECONDS = 0.25
"""Cut -> light verified may take the OCS switching time plus this (a loaded 2-core test
host; bench/protection.py measures the real figures)."""


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def rx_power(lab: Lab, switch: str) -> float:
    return lab.optics.power_dbm(f"{switch}:rx1")


def journal_switches(running: Running) -> int:
    """Switches made. A refusal journaled at start-up is not one: the spans may still be
    dark then (the amplifiers' ALS shut while they were), until the controller has
    restarted them."""
    return len([o for o in running.protection_ops("protection.switch") if o.status == "ok"])


# ---- fiber cut, revertive ----------------------------------------------------------------


def test_fiber_cut_switches_within_the_switching_time_and_reverts_after_wtr(
        lab: Lab, msoctl: Msoctl) -> None:
    with protecting(lab, wait_to_restore_seconds=0.5) as running:
        cut = time.monotonic()
        lab.inject("span-1", Fault("fiber_cut"))
        event = running.wait_for("switch")
        assert event.details["to_span"] == "span-2"
        durations = event.durations_ms
        switching_ms = max(v for v in event.details["switching_ms"].values() if v)
        assert 20 < switching_ms < 80  # the emulated LC engine, warm
        assert durations["device"] is not None and durations["device"] >= switching_ms * 0.9
        assert all(durations[k] is not None for k in ("control_plane", "device",
                                                      "verification", "total"))
        verified_at = event.details["detected"] + durations["total"] / 1000
        assert verified_at - cut < switching_ms / 1000 + SWITCH_MARGIN_SECONDS
        assert rx_power(lab, "sw-b") > -10 and rx_power(lab, "sw-a") > -15
        assert running.link()["active_span"] == "span-2"

        history = msoctl("history", "--kind", "protection", "-o", "json")
        assert history.code == 0
        switch = [o for o in json.loads(history.out)["operations"]
                  if o["action"] == "protection.switch"][-1]
        assert switch["status"] == "ok" and switch["device"] == "link-1"
        result = switch["records"][-1]
        stages = ["detected", "decided", "journaled", "commands_sent", "devices_done",
                  "light_verified"]
        times = [result["timeline"][s] for s in stages]
        assert all(times) and times == sorted(times)
        assert set(result["ocs"]) == {"ocs-a", "ocs-b"}
        # the probe that lit span-2 now lights span-1, so its repair can be seen
        assert "+1:122" in result["ocs"]["ocs-a"]["changes"]
        assert any(c.endswith(":121") and c.startswith("+") and c != "+1:121"
                   for c in result["ocs"]["ocs-a"]["changes"])

        cleared = time.monotonic()
        lab.clear("span-1")
        revert = running.wait_for("revert", seconds=8)
        assert revert.at - cleared >= 0.5  # not before the wait-to-restore
        assert running.link()["active_span"] == "span-1"
        assert rx_power(lab, "sw-b") > -10
        assert journal_switches(running) == 1
        assert len(running.protection_ops("protection.revert")) == 1


def test_non_revertive_stays_on_protection_and_switches_back_on_its_loss(lab: Lab) -> None:
    with protecting(lab, revertive=False, wait_to_restore_seconds=0.1) as running:
        lab.inject("span-1", Fault("fiber_cut"))
        running.wait_for("switch")
        lab.clear("span-1")
        # span-1 is repaired (its probe shows light again), but the link stays
        wait_until(lambda: running.link()["working"]["light"] == "lit", "span-1 lit again",
                   seconds=5)
        time.sleep(0.5)
        assert running.link()["active_span"] == "span-2"
        assert not running.kinds("revert")
        # losing the protection span now moves the link back: span-1 is lit and verified
        lab.inject("span-2", Fault("fiber_cut"))
        back = running.wait_for("switch", after=1)
        assert back.details["to_span"] == "span-1"
        assert running.link()["active_span"] == "span-1"


def test_ready_is_both_spans_lit_with_every_amplifier_steady(lab: Lab) -> None:
    """A controller is ready (what the demo and these tests start from) once the start's
    outage is over and the amplifiers ALS had shut are restarted and at their gain: a
    cut before that measured an amplifier settling, not the switch."""
    with protecting(lab) as running:
        assert "amp-2" in {o.device for o in running.protection_ops("protection.als_restart")}
        for name, module in lab.amps.items():
            gain, target = module.gain_db, read_controls(module.memory).target_gain_db
            assert gain is not None and abs(gain - target) < 0.5, (name, gain, running.told())
        link = running.link()
        assert link["hold_off_running_ms"] is None and link["unavailable"] is None
        # and it says so once (``protect run`` prints it: what a script waits for)
        told = running.wait_for("ready")
        assert told.message.startswith("1 link on a span with both spans lit, "), told.message
        assert running.controller.ready()
        lab.inject("span-1", Fault("fiber_cut"))
        running.wait_for("switch")
        assert not running.controller.ready()  # the working span is dark
        assert len(running.kinds("ready")) == 1, running.told()


# ---- hold-off, dark protection, hysteresis --------------------------------------------------


def test_a_dip_shorter_than_the_hold_off_does_not_switch(lab: Lab) -> None:
    with protecting(lab, hold_off_seconds=0.2) as running:
        dips = len(running.kinds("dip"))  # the start's, a span dark until its amp restarted
        lab.inject("span-1", Fault("fiber_cut"))
        time.sleep(0.03)
        lab.clear("span-1")
        dip = running.wait_for("dip", after=dips)
        assert dip.details["lasted_ms"] < 200, running.told()
        time.sleep(0.3)
        assert not running.kinds("switch") and journal_switches(running) == 0
        assert running.link()["active_span"] == "span-1"
        # a loss that outlasts the hold-off does switch, after it
        lab.inject("span-1", Fault("fiber_cut"))
        event = running.wait_for("switch")
        assert event.durations_ms["hold_off"] is not None
        assert event.durations_ms["hold_off"] >= 200


def test_a_dark_protection_span_is_never_switched_onto(lab: Lab) -> None:
    with protecting(lab) as running:
        lab.inject("span-2", Fault("fiber_cut"))
        wait_until(lambda: running.link()["protection"]["light"] == "lost", "span-2 seen dark")
        since, outages = last_order(running.journal), len(running.kinds("unavailable"))
        lab.inject("span-1", Fault("fiber_cut"))
        refused = running.wait_for("unavailable", after=outages)
        assert "span-2" in refused.message
        time.sleep(0.3)
        assert not running.kinds("switch")
        assert running.link()["active_span"] == "span-1"
        refusals = [o for o in running.protection_ops("protection.switch") if o.order > since]
        assert [o.status for o in refusals] == ["refused"], (  # once per outage, not per poll
            [(o.order, o.status, o.intent.get("reason")) for o in
             running.protection_ops("protection.switch")], since, running.told())
        assert "protection unavailable" in refusals[0].intent["reason"]
        # once span-2 is repaired (its amplifier restarted: ALS shut it), the link moves
        lab.clear("span-2")
        event = running.wait_for("switch", seconds=8)
        assert event.details["to_span"] == "span-2"
        assert rx_power(lab, "sw-b") > -10


def test_an_outage_goes_on_through_a_silent_ocs_and_its_end_is_told(lab: Lab) -> None:
    """An OCS silent for a while (no map to judge from) does not end an outage unseen:
    the light that came back meanwhile is told restored once the OCS answers, and the
    next loss is a new outage, journaled again."""
    with protecting(lab, device_timeout_seconds=0.3) as running:
        lab.inject("span-2", Fault("fiber_cut"))
        wait_until(lambda: running.link()["protection"]["light"] == "lost", "span-2 seen dark")
        since, outages = last_order(running.journal), len(running.kinds("unavailable"))
        lab.inject("span-1", Fault("fiber_cut"))
        running.wait_for("unavailable", after=outages)
        told = len(running.kinds("restored"))
        lab.inject("ocs-b", Fault("freeze"))
        running.wait_for("device_down")
        lab.clear("span-1")  # amp-1, shut by ALS, is restarted meanwhile
        wait_until(lambda: rx_power(lab, "sw-b") > -10, "span-1 lit again", seconds=8)
        lab.clear("ocs-b", "freeze")
        running.wait_for("device_up")
        restored = running.wait_for("restored", after=told)
        assert "span-1" in restored.message, running.told()
        outages = len(running.kinds("unavailable"))
        lab.inject("span-1", Fault("fiber_cut"))
        running.wait_for("unavailable", after=outages)
        time.sleep(0.1)
        refusals = [o for o in running.protection_ops("protection.switch") if o.order > since]
        assert [o.status for o in refusals] == ["refused", "refused"], running.told()


def test_a_level_wandering_around_the_threshold_does_not_flap(lab: Lab) -> None:
    fiber = lab.fibers["span-1/2"]  # b->a, no amplifier: ocs-a:61 follows its loss
    base_loss = fiber.connector_loss_db
    connect_working(load_inventory(lab.state_dir / "inventory.yaml"))
    time.sleep(0.1)  # the cross-connects settle
    baseline = lab.ocs["ocs-a"].monitor_dbm(61)
    assert baseline is not None and baseline > -15
    with protecting(lab, threshold_dbm=baseline - 5.0, hysteresis_db=3.0,
                    wait_to_restore_seconds=0.2) as running:
        # the span alternates between 1 dB under the threshold and 1 dB over it (short
        # of threshold + hysteresis) every 40 ms, for 1.2 s
        deadline = time.monotonic() + 1.2
        low = True
        while time.monotonic() < deadline:
            fiber.connector_loss_db = base_loss + (6.0 if low else 4.0)
            low = not low
            time.sleep(0.04)
        assert len(running.kinds("switch")) == 1, [  # the first dip under the threshold
            e.message for e in running.events if e.kind != "probe"]
        assert not running.kinds("revert")  # never back above threshold + hysteresis
        fiber.connector_loss_db = base_loss
        running.wait_for("revert", seconds=5)
        time.sleep(0.3)
        assert len(running.kinds("switch")) == 1 and len(running.kinds("revert")) == 1


# ---- amplifier and OCS faults ------------------------------------------------------------


def test_a_loss_an_alarm_reports_is_judged_before_its_confirming_poll_answers(
        lab: Lab) -> None:
    """docs/dialects/ocs.md, "Loss-of-light alarms" (an ``EVENT`` line carries the
    detector's reading that decided it): the controller judges the loss on the event's
    own reading, without waiting for the poll the event triggers. Every SCPI reply of
    both OCSes is held back 1 s (the ``latency`` fault), the alarm connection is not:
    the loss is seen long before any poll made after the cut could answer."""
    with protecting(lab, device_timeout_seconds=3.0) as running:
        try:
            for name in ("ocs-a", "ocs-b"):
                lab.inject(name, Fault("latency", seconds=1.0))
            time.sleep(0.1)
            cut = time.monotonic()
            lab.inject("span-1", Fault("fiber_cut"))
            wait_until(lambda: running.link()["hold_off_running_ms"] is not None,
                       "the loss seen", seconds=5)
            seen = time.monotonic()
            assert seen - cut < 0.8, seen - cut  # a poll after the cut answers after 1 s
        finally:
            for name in ("ocs-a", "ocs-b"):
                lab.clear(name, "latency")
        event = running.wait_for("switch", seconds=10)
        assert event.details["to_span"] == "span-2"
        assert event.details["detected"] - cut < 0.8


def test_the_ports_behind_an_amplifier_are_armed_at_the_threshold_raised_by_its_gain(
        lab: Lab) -> None:
    """docs/dialects/ocs.md, "Loss-of-light alarms": the arrival port behind an amplifier
    is armed once the amplifier's gain is known, however soon that is after the start
    (before the unit's alarm stream is open, too): without it, a loss there would be
    seen only at the once-a-second reconciliation."""
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    behind = [fiber for span in inventory.spans.values()
              for fiber in (span.a_to_b, span.b_to_a) if fiber.amplifier]
    assert behind
    with protecting(lab) as running:
        config = running.controller.config

        def armed() -> bool:
            for fiber in behind:
                reading = running.controller._amp_watches[fiber.amplifier].sample
                gain = running.controller.judge.amp_gain_db(fiber.amplifier, reading)
                threshold = lab.ocs[fiber.end.ocs].alarms.threshold_dbm(fiber.end.port)
                if gain is None or threshold is None \
                        or abs(threshold - (config.threshold_dbm + gain)) > 0.5:
                    return False
            return True

        wait_until(armed, "every port behind an amplifier armed", seconds=5)
        assert all(lab.ocs[f.end.ocs].alarms.threshold_dbm(f.end.port) > config.threshold_dbm
                   for f in behind)


def test_an_amplifier_pump_failure_is_a_loss_of_light(lab: Lab) -> None:
    with protecting(lab, wait_to_restore_seconds=0.2) as running:
        lab.inject("amp-1", Fault("pump"))
        event = running.wait_for("switch")
        assert event.details["to_span"] == "span-2"
        assert "span-1 a->b" in event.message
        assert rx_power(lab, "sw-b") > -10
        # amp-1 stays in ModuleFault (it needs a reset): no restart request, no revert
        time.sleep(0.6)
        assert running.link()["working"]["light"] == "lost"
        assert not running.kinds("revert")
        assert not [e for e in running.kinds("als_restart") if "amp-1" in e.message
                    and e.at > event.at]


def test_an_ocs_that_freezes_or_reboots_is_reported_and_the_controller_recovers(
        lab: Lab) -> None:
    with protecting(lab, device_timeout_seconds=0.3) as running:
        lab.inject("ocs-b", Fault("freeze"))
        down = running.wait_for("device_down")
        assert "ocs-b" in down.message
        lab.clear("ocs-b", "freeze")
        up = running.wait_for("device_up")
        assert "ocs-b" in up.message
        assert running.controller.status()[0]["active_span"] == "span-1"

        lab.inject("ocs-a", Fault("reboot", seconds=1.0))  # power loss: all its light stops
        wait_until(lambda: any("ocs-a" in e.message for e in running.kinds("device_down")),
                   "ocs-a reported")
        # back up, its map restored from NVRAM; the amplifiers whose input was dark for
        # longer than the ALS soak are restarted, and both spans are lit again
        wait_until(lambda: any("ocs-a" in e.message for e in running.kinds("device_up")),
                   "ocs-a back", seconds=6)
        wait_until(lambda: running.link()["working"]["light"] == "lit"
                   and running.link()["protection"]["light"] == "lit",
                   "both spans lit again", seconds=6)
        assert running.link()["active_span"] == "span-1"
        assert not running.kinds("switch", "error")
        assert {m for e in running.kinds("als_restart") for m in ("amp-1", "amp-2")
                if m in e.message} == {"amp-1", "amp-2"}
        assert rx_power(lab, "sw-b") > -10


# ---- the commands ---------------------------------------------------------------------------


def test_protect_run_and_status_through_the_cli(lab: Lab, msoctl: Msoctl,
                                                tmp_path: Path) -> None:
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    connect_working(inventory)
    log = tmp_path / "protect.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "msoctl", "protect", "run",
         "--poll-ms", "5",
         "--wait-to-restore-s", "0.2"],
        env=subprocess_env(lab), stdout=log.open("w"), stderr=subprocess.PIPE, text=True)
    try:
        def both_lit() -> bool:
            result = msoctl("protect", "status", "-o", "json")
            assert result.code == 0, result.err
            spans = json.loads(result.out)["links"][0]["spans"]
            return all(spans[r]["light"] == "lit" for r in ("working", "protection"))

        wait_until(both_lit, "both spans lit under the controller", seconds=15)
        # what a script waits for before it measures a cut: the controller's word
        wait_until(lambda: told_ready(log), "the controller says it is ready", seconds=15)
        lab.inject("span-1", Fault("fiber_cut"))
        wait_until(lambda: json.loads(msoctl("protect", "status", "-o", "json").out)
                   ["links"][0]["active_span"] == "span-2", "switched", seconds=5)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    out = log.read_text()
    assert "protecting link-1" in out and "switch " in out and "stopped:" in out
    document = json.loads(msoctl("protect", "status", "-o", "json").out)
    link = document["links"][0]
    assert link["active_role"] == "protection" and link["carried_by"] == "span-2"
    assert link["controller"]["state"] == "stopped (ok)"
    assert link["last_event"]["action"] == "protection.switch", link["last_event"]
    assert link["last_event"]["durations_ms"]["device"] > 0, link["last_event"]
    assert [d["state"] for d in link["spans"]["working"]["directions"]] == ["lost", "lost"]
    table = msoctl("protect", "status")
    assert table.code == 0 and "span-2" in table.out and "lost" in table.out
    history = msoctl("history", "--kind", "protection")
    assert "protection.switch" in history.out and "light verified" in history.out


def test_protect_run_refuses_bad_settings(lab: Lab, msoctl: Msoctl) -> None:
    assert msoctl("protect", "run", "--probe", "ocs-a").code == 2
    assert msoctl("protect", "run", "--probe", "ocs-a:3", "--no-probe").code == 2
    assert msoctl("protect", "run", "--link", "nope").code == 2
    assert msoctl("protect", "run", "--hysteresis-db", "-1").code == 2


def test_one_controller_per_link_and_a_killed_ones_switch_is_closed(lab: Lab) -> None:
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    assert inventory.journal_path is not None
    journal = Journal(inventory.journal_path)
    journal.append({"op": "deadbeef0001", "event": "intent", "device": "link-1",
                    "action": "protection.switch", "host": socket.gethostname(),
                    "pid": dead_pid(), "from_span": "span-1", "to_span": "span-2"})
    # and, on the link's devices rather than the link, a probe it was parking and an ALS
    # restart it was sending
    journal.append({"op": "deadbeef0002", "event": "intent", "device": "ocs-a",
                    "action": "protection.probe", "host": socket.gethostname(),
                    "pid": dead_pid(), "spans": ["span-2"], "connections": ["9:122"]})
    journal.append({"op": "deadbeef0003", "event": "intent", "device": "amp-1",
                    "action": "protection.als_restart", "host": socket.gethostname(),
                    "pid": dead_pid()})
    first = ProtectionController(inventory, journal)
    stop = threading.Event()
    thread = threading.Thread(target=first.run, args=(stop,), daemon=True)
    thread.start()
    try:
        def closed() -> dict[str, Any] | None:
            found = next(o for o in journal.operations() if o.op == "deadbeef0001")
            return found.result

        wait_until(lambda: closed() is not None, "the interrupted switch closed")
        result = closed()
        assert result is not None and result["status"] == "interrupted"
        assert result["found"] == "not connected on either span"
        wait_until(lambda: not {"deadbeef0002", "deadbeef0003"} & {
            o.op for o in journal.operations(open_only=True)}, "the probe and restart closed")
        probe, restart = (next(o for o in journal.operations() if o.op == op)
                          for op in ("deadbeef0002", "deadbeef0003"))
        assert probe.result is not None and probe.result["status"] == "interrupted"
        assert probe.result["found"] == "probe connections in place: none"
        assert restart.result is not None and restart.result["status"] == "interrupted"
        with pytest.raises(DeviceBusy, match="already protected"):
            ProtectionController(inventory, journal).run(threading.Event())
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive(), "the controller did not stop"


# ---- the pieces, without a lab ---------------------------------------------------------------


def test_hysteresis_keeps_a_wandering_level_from_flapping() -> None:
    levels = [-10, -21, -19, -21, -19, -18.5, -21, -17.9, -19, -20.5]
    with_hysteresis, without = LevelDetector(2.0), LevelDetector(0.0)
    flips = {"with": 0, "without": 0}
    last = {"with": True, "without": True}
    for level in levels:
        for key, detector in (("with", with_hysteresis), ("without", without)):
            lit = detector.update(level, -20.0)
            flips[key] += lit != last[key]
            last[key] = lit
    assert flips == {"with": 3, "without": 7}
    assert LevelDetector(2.0).update(None, -20.0) is False


def test_each_state_of_a_span_direction_is_told_in_words() -> None:
    """The words of a direction's state (put into words only when asked) for each state:
    lit, lost, a dark source, nothing feeding it, an OCS not answering."""
    link = _link()
    judge = LightJudge(-20.0, 1.0)
    maps = {"ocs-a": {1: 121}, "ocs-b": {1: 121}}

    def said(powers: dict[str, Any], port_map: dict[str, Any] = maps) -> list[tuple[str, str]]:
        return [(d.state, d.reason)
                for d in judge.span(link.working, powers=powers, maps=port_map, amps={})]

    powers = {"ocs-a": {1: -2.0, 61: -9.96}, "ocs-b": {1: -3.0, 61: -10.04}}
    assert said(powers) == [("lit", "ocs-b:61 -10.0 dBm"), ("lit", "ocs-a:61 -10.0 dBm")]
    powers = {"ocs-a": {1: -2.0, 61: -35.0}, "ocs-b": {1: -31.0, 61: None}}
    assert said(powers) == [("lost", "ocs-b:61 no reading < -20.0 dBm"),
                            ("unlit", "its source ocs-b:1 is dark (-31.0 dBm)")]
    assert said(powers, {"ocs-a": {}, "ocs-b": {1: 121}})[0] == ("unlit",
                                                                  "nothing feeds ocs-a:121")
    assert said({"ocs-a": None, "ocs-b": {}}) == [("unknown", "ocs-a is not answering")] * 2
    assert said(powers, {"ocs-a": {1: 121}, "ocs-b": None})[1] == (
        "unknown", "ocs-b is not answering")


def _many_links(count: int) -> list[Link]:
    """``count`` links between ocs-a and ocs-b of 64x64: link-N's transmitters and
    receivers on ports N and 64+N, its working span w-N on ports 20+N (and 84+N), its
    protection span p-N on 40+N (and 104+N)."""

    def span(name: str, a_port: int, b_port: int) -> Span:
        return Span(name, 30, 0.2, 0.5,
                    SpanFiber(OcsPort("ocs-a", a_port + 64), OcsPort("ocs-b", b_port)),
                    SpanFiber(OcsPort("ocs-b", b_port + 64), OcsPort("ocs-a", a_port)))

    return [Link(f"link-{n}",
                 LinkEnd("sw-a", f"Ethernet{n}", OcsPort("ocs-a", n), OcsPort("ocs-a", 64 + n)),
                 LinkEnd("sw-b", f"Ethernet{n}", OcsPort("ocs-b", n), OcsPort("ocs-b", 64 + n)),
                 span(f"w-{n}", 20 + n, 20 + n), span(f"p-{n}", 40 + n, 40 + n))
            for n in range(1, count + 1)]


def test_a_link_is_judged_again_whenever_a_reading_it_is_judged_from_has_changed() -> None:
    """Random readings and maps of two OCSes carrying many links: after any change to
    one OCS's readings and cross-connects, a link that :func:`touched_links` leaves out
    reads, in every direction of both its spans, what it read before, and is on the
    span it was on; and leaving out a port a link is judged from is caught (the check
    can fail)."""
    import random

    from msoctl.protect.light import link_ports, touched_links

    links = _many_links(8)
    links_at: dict[str, dict[int, set[str]]] = {"ocs-a": {}, "ocs-b": {}}
    for link in links:
        for ocs, ports in link_ports(link).items():
            for port in ports:
                links_at[ocs].setdefault(port, set()).add(link.name)
    judge = LightJudge(-20.0, 1.0)
    rng = random.Random(4)

    def seen(link: Link, powers: dict[str, Any], maps: dict[str, Any]) -> list[object]:
        return [link_role(link, maps), *((d.feeder, d.source_dbm, d.far_end_dbm)
                                         for span in (link.working, link.protection)
                                         for d in judge.span(span, powers=powers, maps=maps,
                                                             amps={}))]

    def random_map(ocs: str) -> dict[int, int]:
        port_map: dict[int, int] = {}
        for link in links:  # some links connected, on either span
            if rng.random() < 0.6:
                role = rng.choice(["working", "protection"])
                port_map.update(link.connections(role).get(ocs, []))
        ingress = rng.sample(sorted(set(range(1, 64)) - set(port_map)), 12)  # probes...
        egress = rng.sample(sorted(set(range(65, 129)) - set(port_map.values())), 12)
        return {**port_map, **dict(zip(ingress, egress, strict=True))}

    def reading() -> float | None:
        return rng.choice([None, round(rng.uniform(-40.0, 0.0), 2)])

    def rewired(port_map: dict[int, int]) -> dict[int, int]:
        changed = dict(port_map)
        for ingress in rng.sample(sorted(changed), rng.randint(0, 3)):
            del changed[ingress]
        for _ in range(rng.randint(0, 3)):
            free = sorted(set(range(65, 129)) - set(changed.values()))
            changed[rng.randint(1, 63)] = rng.choice(free)  # a new or re-pointed beam
        return changed

    missed = 0
    for _ in range(400):
        maps = {"ocs-a": random_map("ocs-a"), "ocs-b": random_map("ocs-b")}
        powers = {name: {p: reading() for p in rng.sample(range(1, 129), 80)}
                  for name in maps}
        name = rng.choice(sorted(maps))
        after = dict(powers[name])
        for port in rng.sample(range(1, 129), rng.randint(0, 6)):
            if rng.random() < 0.2:
                after.pop(port, None)
            else:
                after[port] = reading()
        new_map = rewired(maps[name]) if rng.random() < 0.5 else maps[name]
        changed, new_maps = {**powers, name: after}, {**maps, name: new_map}
        touched = touched_links(links_at[name], powers[name], after, maps[name], new_map)
        for link in links:
            if link.name not in touched:
                assert seen(link, changed, new_maps) == seen(link, powers, maps), link.name
        # without the egress fed by a changed ingress (a probe's source), one is missed
        narrow = {n for p in {p for p, _ in after.items() ^ powers[name].items()}
                  for n in links_at[name].get(p, ())}
        missed += new_map is maps[name] and any(
            seen(link, changed, maps) != seen(link, powers, maps)
            for link in links if link.name not in narrow)
    assert missed > 0


def test_the_moves_of_many_links_planned_together_are_those_planned_one_by_one() -> None:
    """A cable cut moves many links on one OCS: planned in one pass (one copy of the map,
    its reverse kept beside it) they give the map that planning them one after the
    other gives, probes swapped, whichever way each link goes; and a link whose new span
    is fed by another link's transmitter is refused, named."""
    import random

    links = _many_links(10)
    tx_owner = {n: f"link-{n}" for n in range(1, 11)}
    rng = random.Random(2)
    for _ in range(50):
        port_map: dict[int, int] = {}
        moves = []
        for n, link in enumerate(links, start=1):
            role = rng.choice(["working", "protection"])
            port_map.update(link.connections(role).get("ocs-a", []))
            other = "protection" if role == "working" else "working"
            if rng.random() < 0.7:  # a probe parked on the other span
                port_map[50 + n] = 64 + (40 if other == "protection" else 20) + n
            if rng.random() < 0.6:
                moves.append(Move(link, role, other))
        rng.shuffle(moves)
        one_by_one = dict(port_map)
        for move in moves:
            one_by_one = dict(plan_moves([move], "ocs-a", one_by_one, 64, tx_owner=tx_owner))
        assert dict(plan_moves(moves, "ocs-a", port_map, 64, tx_owner=tx_owner)) == one_by_one
        for move in moves:
            assert link_role(move.link, {"ocs-a": one_by_one, "ocs-b": {
                i: e for i, e in move.link.connections(move.to_role)["ocs-b"]}}) == move.to_role
            n = int(move.link.name.split("-")[1])
            if 50 + n in port_map:  # its probe, now on the span it left
                left = 64 + (20 if move.from_role == "working" else 40) + n
                assert one_by_one.get(50 + n) == left, (move, one_by_one)
    link = links[0]
    taken = {**dict(link.connections("working")["ocs-a"]), 2: 64 + 41}  # link-2's tx on p-1
    with pytest.raises(MoveConflict, match="p-1 carries another link"):
        plan_moves([Move(link, "working", "protection")], "ocs-a", taken, 64,
                   tx_owner=tx_owner)


def test_a_link_whose_change_ended_waits_for_readings_taken_once_both_ends_were_done(
        lab: Lab, tmp_path: Path) -> None:
    """A reading taken while a change's beams switched shows its links dark: after the
    change, a link is left alone until each of its OCSes has been read since the later
    of the two was done (the light at one end comes through the other), then judged
    afresh; an OCS that does not answer does not hold it back (its links are judged
    unknown)."""
    from msoctl.protect.watch import OcsSample

    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    controller = ProtectionController(inventory, Journal(tmp_path / "journal.db"))
    link = inventory.link("link-1")
    first, second = link.ocs_names
    watches = {name: SimpleNamespace(sample=OcsSample(1.0, {}, {}, 1.0, asked=1.0),
                                     down_since=None, reads=1)
               for name in controller._ports}
    controller._watches = watches  # type: ignore[assignment]
    controller._map_valid_after = {first: 5.0, second: 6.0}
    controller._settling = {link.name}
    views: tuple[dict[str, Any], dict[str, Any]] = (
        {name: {} for name in watches}, {name: {} for name in watches})
    controller._judged_views = (*views, {})
    controller._judged_all, controller._judge_all = 100.0, False

    def judged() -> dict[str, bool]:
        to_judge, settled = controller._to_judge(100.5, *views, {})
        controller._settling -= settled  # as the evaluation does once it has judged them
        return {state.link.name: changed for state, changed in to_judge}

    assert link.name not in judged()
    watches[first].sample = OcsSample(7.0, {}, {}, 1.0, asked=5.5)  # after its own done
    watches[second].sample = OcsSample(7.0, {}, {}, 1.0, asked=6.5)
    assert link.name not in judged()  # the first was read before the second was done
    watches[first].sample = OcsSample(8.0, {}, {}, 1.0, asked=6.2)
    assert judged().get(link.name) is True
    assert link.name not in controller._settling
    controller._settling = {link.name}
    controller._map_valid_after = {first: 9.0, second: 9.0}
    watches[second].down_since = 8.5
    assert link.name not in judged()  # the first is still to be read
    watches[first].down_since = 8.5
    assert judged().get(link.name) is True


class _FakeOcs:
    """What an OCS watch asks of its driver, with each power query's ports kept; a
    hook runs while a query is on its way."""

    size = 16

    def __init__(self) -> None:
        self.session = SimpleNamespace(transport=None)
        self.port_map = lambda: {1: 9, 5: 12}
        self.asked: list[list[int]] = []
        self.during: Callable[[], None] = lambda: None

    def power(self, ports: list[int]) -> dict[int, float | None]:
        self.asked.append(list(ports))
        self.during()
        return dict.fromkeys(ports, -3.0)


def test_an_alarm_has_its_links_ports_read_and_a_request_made_meanwhile_is_kept() -> None:
    """An event's port is read with the other ports of its links at that OCS and what
    feeds them (one query for the events that came meanwhile), not every watched port;
    a request made while a read is on its way is neither lost nor read without the
    budget's reserve: the next read has it, and until then a read is still pending."""
    from msoctl.protect.budget import QueryBudget
    from msoctl.protect.watch import OcsWatch

    fake = _FakeOcs()
    watch = OcsWatch("ocs-a", lambda name: fake, [2, 9, 10, 12, 13],  # type: ignore[arg-type]
                     budget=QueryBudget(50), poll_seconds=0.05, notify=lambda: None,
                     related={9: {9, 10}, 10: {9, 10}, 12: {12, 13}, 13: {12, 13}})
    watch.poll(fake)  # type: ignore[arg-type]
    assert fake.asked == [[1, 2, 5, 9, 10, 12, 13]]  # everything, and what feeds 9 and 12
    watch.confirm([10])
    watch.confirm([9])
    assert watch.poll_pending
    fake.during = lambda: watch.confirm([13])  # an event while the read is on its way
    watch.poll(fake)  # type: ignore[arg-type]
    assert fake.asked[-1] == [1, 9, 10]
    assert watch.poll_pending  # 13's read is still to come
    fake.during = lambda: None
    watch.poll(fake)  # type: ignore[arg-type]
    assert fake.asked[-1] == [5, 12, 13]
    assert not watch.poll_pending
    assert watch.sample is not None and set(watch.sample.powers) == {1, 2, 5, 9, 10, 12, 13}
    watch.poll_now()  # a whole read when asked for one
    watch.poll(fake)  # type: ignore[arg-type]
    assert fake.asked[-1] == [1, 2, 5, 9, 10, 12, 13]


def test_the_whole_polls_of_an_instances_ocses_keep_apart() -> None:
    """Each watch's reconciliation polls fall on its own phase of the interval, whenever
    the last one was made: the polls every OCS of a change gets at once do not put them
    back in step, and none comes sooner than half an interval after the last. A watch
    polling to detect keeps its interval."""
    from msoctl.protect.budget import QueryBudget
    from msoctl.protect.watch import OcsWatch

    watches = [OcsWatch(f"ocs-{n}", lambda name: _FakeOcs(), [2],  # type: ignore[arg-type]
                        budget=QueryBudget(50), poll_seconds=0.05, notify=lambda: None,
                        phase=n / 4) for n in range(4)]
    for watch in watches:
        watch.set_alarms_live(True)  # a reconciliation every second
        assert watch.interval() == 1.0
    now = 1000.37  # every OCS polled at this moment (a change asked for it)
    slots = [watch._next_slot(now) for watch in watches]
    assert sorted(round(slot % 1.0, 6) for slot in slots) == [0.0, 0.25, 0.5, 0.75]
    assert all(now + 0.5 <= slot <= now + 1.5 for slot in slots)
    # on its grid, a watch polls once an interval
    assert watches[1]._next_slot(slots[1]) == pytest.approx(slots[1] + 1.0)
    assert watches[1]._next_slot(slots[1] + 0.1) == pytest.approx(slots[1] + 1.0)
    # polling to detect (no alarms): the next poll one interval on, whatever the phase
    watches[2].set_alarms_live(False)
    assert watches[2]._next_slot(now) == pytest.approx(now + watches[2].interval())


def _alarmed_watch(fake: _FakeOcs, changing: list[bool]) -> OcsWatch:
    """An OCS watch of ports 2 and 9 on ``fake``, its alarm stream live, a change of
    the controller's in flight on it while ``changing[0]``."""
    watch = OcsWatch("ocs-a", lambda name: fake, [2, 9],  # type: ignore[arg-type]
                     budget=QueryBudget(50), poll_seconds=0.05, notify=lambda: None,
                     changing=lambda: changing[0])
    watch.set_alarms_live(True)
    return watch


def test_a_reconciliation_due_during_a_change_waits_for_its_end() -> None:
    """With the OCS's alarms live, a reconciliation that falls due while a change of the
    controller's is in flight on the OCS reads nothing and says nothing (the change reads
    what it needs, then asks for a whole read); one asked for is read all the same, and
    the held one is made once the change is over."""
    from msoctl.protect.watch import HELD_SECONDS

    fake = _FakeOcs()
    changing = [False]
    watch = _alarmed_watch(fake, changing)
    assert watch.poll(fake) is True  # type: ignore[arg-type]  # the first: asked for
    watch._next_whole = time.monotonic() - 0.1  # a reconciliation due
    changing[0] = True
    asked = len(fake.asked)
    assert watch.poll(fake) is False  # type: ignore[arg-type]
    assert len(fake.asked) == asked
    assert watch._next_whole > time.monotonic()  # looks again within HELD_SECONDS
    assert watch._next_whole <= time.monotonic() + HELD_SECONDS
    watch.confirm([9])  # an alarm's port: read at once, change or not
    assert watch.poll(fake) is True  # type: ignore[arg-type]
    assert fake.asked[-1] == [1, 9]
    watch._next_whole = time.monotonic() - 0.1
    changing[0] = False  # the change is over: the reconciliation is made
    assert watch.poll(fake) is True  # type: ignore[arg-type]
    assert fake.asked[-1] == [1, 2, 9]
    watch.set_alarms_live(False)  # detecting by polls: never held
    changing[0] = True
    watch._next_whole = time.monotonic() - 0.1
    assert watch.poll(fake) is True  # type: ignore[arg-type]


def test_an_announced_map_is_read_only_when_it_is_not_the_watchs_copy() -> None:
    """The map the unit announces on its alarm stream (a CRC, docs/dialects/ocs.md) is
    compared with the watch's copy: the same, nothing is read and a change may plan on
    the copy; another (changed elsewhere), the map is read at once -- unless a change
    of the controller's is in flight on the OCS, which reads back and adopts the map it
    leaves (planned on again once it is read after the change). A standby's watch
    reads it with its next reconciliation."""
    from drivers.ocs.alarms import map_digest

    fake = _FakeOcs()
    changing = [False]
    watch = _alarmed_watch(fake, changing)
    held = {1: 9, 5: 12}  # the unit's map
    reads: list[dict[int, int]] = []

    def port_map() -> dict[int, int]:
        reads.append(dict(held))
        return dict(held)

    fake.port_map = port_map
    watch.poll(fake)  # type: ignore[arg-type]
    assert len(reads) == 1
    same, other = map_digest({1: 9, 5: 12}), map_digest({1: 9, 5: 12, 3: 14})
    assert watch.map_if(same) == ({1: 9, 5: 12}, 16)
    assert watch.map_if(other) is None
    watch.note_map(same)
    assert not watch.poll_pending  # the copy is the unit's: nothing to read
    changing[0] = True
    watch.note_map(other)  # a change of ours is in flight: it will adopt what it leaves
    assert not watch.poll_pending
    watch.adopt_map({1: 9, 5: 12, 3: 14}, time.monotonic())
    assert not watch.poll_pending  # nothing read on the change's way...
    assert watch.map_if(other) is None  # ...nor its CRC worked out: not planned on yet
    changing[0] = False
    watch.refresh_map()  # as the controller asks once the change is over
    held = {1: 9, 5: 12, 3: 14}
    watch.poll(fake)  # type: ignore[arg-type]
    assert watch.map_if(other) == (held, 16)
    elsewhere = map_digest({1: 9})
    watch.note_map(elsewhere)  # changed by someone else: read at once
    assert watch.poll_pending
    held = {1: 9}
    watch.poll(fake)  # type: ignore[arg-type]
    assert reads[-1] == {1: 9} and watch.map_if(elsewhere) == ({1: 9}, 16)
    assert not watch.poll_pending
    # a standby's watch: the map is read with its next reconciliation, not at once
    watch.set_fast(False)
    held = {1: 9, 2: 10}
    watch.note_map(map_digest(held))
    assert not watch.poll_pending
    watch._next_whole = time.monotonic() - 0.1  # the reconciliation falls due
    watch.poll(fake)  # type: ignore[arg-type]
    assert reads[-1] == {1: 9, 2: 10} and watch.map_if(map_digest(held)) == (held, 16)


class _SwitchingOcs:
    """An OCS that takes ``seconds`` to carry out a whole-map change, or refuses it;
    its monitors read ``power`` on every port, and the moments it was read are kept."""

    def __init__(self, seconds: float, *, refuses: bool = False, power: float = -3.0):
        self.seconds, self.refuses, self.reading = seconds, refuses, power
        self.read_at: list[float] = []

    def start_replace_map(self, wanted: dict[int, int]) -> Pending[dict[int, int]]:
        def finish() -> dict[int, int]:
            time.sleep(self.seconds)  # switching: the command left, its completion awaited
            if self.refuses:
                raise DeviceRejected("-222,\"Data out of range\"", device="refusing")
            return dict(wanted)

        return Pending(finish, lambda: None)

    def start_power(self, ports: list[int]) -> Pending[dict[int, float | None]]:
        self.read_at.append(time.monotonic())
        return Pending(lambda: dict.fromkeys(ports, self.reading), lambda: None)


class _Actions:
    """OcsActions over fake units: requests started in the caller's thread, finished and
    submitted in a worker each."""

    def __init__(self, units: dict[str, _SwitchingOcs]):
        self.units = units
        self.pool = ThreadPoolExecutor(max_workers=len(units))

    def submit(self, name: str, action: Callable[[Any], Any]) -> Any:
        return self.pool.submit(action, self.units[name])

    def start(self, name: str, begin: Callable[[Any], Pending[Any]]) -> Pending[Any]:
        return begin(self.units[name])

    def finish(self, pending: Pending[Any]) -> Any:
        return self.pool.submit(pending.finish)

    def __enter__(self) -> _Actions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True)


def _maps(units: dict[str, _SwitchingOcs]) -> dict[str, dict[int, int]]:
    return {name: {1: 65} for name in units}


def _points(*pairs: tuple[str, str]) -> dict[str, Any]:
    from msoctl.protect.moves import LightPoint

    return {f"link-{n}": {a: {61: LightPoint("far end", -20.0)},
                          b: {61: LightPoint("far end", -20.0)}}
            for n, (a, b) in enumerate(pairs, 1)}


def test_a_link_is_verified_once_its_own_ocses_are_done_not_the_slowest() -> None:
    """The light check of each OCS begins once it and the OCSes at its links' other
    ends are done: link-1 (two quick units) is verified while link-2's units still
    switch; the commands-done hook runs once, after the last."""
    from msoctl.protect.moves import apply_and_verify

    units = {"a1": _SwitchingOcs(0.01), "b1": _SwitchingOcs(0.01),
             "a2": _SwitchingOcs(0.3), "b2": _SwitchingOcs(0.3)}
    told: list[float] = []
    with _Actions(units) as actions:
        applied, verified = apply_and_verify(
            actions, _maps(units),  # type: ignore[arg-type]
            _points(("a1", "b1"), ("a2", "b2")), check=lambda: None,
            applied=lambda results: told.append(time.monotonic()),
            timeout_seconds=1.0, pause_seconds=0.01)
    last_done = max(a.done for a in applied.values())
    assert len(told) == 1 and told[0] >= last_done
    first, second = verified["link-1"][0], verified["link-2"][0]
    assert first is not None and second is not None
    assert first < applied["a2"].done and first < applied["b2"].done
    assert second >= max(applied["a2"].done, applied["b2"].done)
    assert all(t >= max(applied["a1"].done, applied["b1"].done)
               for t in units["a1"].read_at + units["b1"].read_at)


def test_a_dark_link_is_read_again_until_its_timeout() -> None:
    from msoctl.protect.moves import apply_and_verify

    dark = {"a1": _SwitchingOcs(0.01, power=-40.0), "b1": _SwitchingOcs(0.01)}
    with _Actions(dark) as actions:
        _, verified = apply_and_verify(
            actions, _maps(dark),  # type: ignore[arg-type]
            _points(("a1", "b1")), check=lambda: None, applied=lambda results: None,
            timeout_seconds=0.1, pause_seconds=0.02)
    assert verified["link-1"][0] is None  # never lit: given up after the timeout
    assert 2 <= len(dark["a1"].read_at) <= 10  # read again every pause meanwhile


def test_a_change_sends_from_its_own_thread_and_awaits_in_workers() -> None:
    """Every command of a change leaves from the thread that carries the change out, one
    after the other, and only then are they handed to the workers (a worker woken
    between two sends would take the interpreter from the next one); each OCS's
    completion is awaited in a worker."""
    from msoctl.protect.moves import apply_and_verify

    caller = threading.get_ident()
    sent_from: list[int] = []
    finished_in: list[int] = []
    order: list[str] = []

    class Recording(_SwitchingOcs):
        def start_replace_map(self, wanted: dict[int, int]) -> Pending[dict[int, int]]:
            sent_from.append(threading.get_ident())
            order.append("sent")
            started = super().start_replace_map(wanted)

            def finish() -> dict[int, int]:
                finished_in.append(threading.get_ident())
                return started.finish()

            return Pending(finish, started.abandon)

    class Handing(_Actions):
        def finish(self, pending: Pending[Any]) -> Any:
            order.append("handed")
            return super().finish(pending)

    units: dict[str, _SwitchingOcs] = {name: Recording(0.02) for name in ("a1", "b1", "a2", "b2")}
    with Handing(units) as actions:
        apply_and_verify(actions, _maps(units),  # type: ignore[arg-type]
                         _points(("a1", "b1"), ("a2", "b2")), check=lambda: None,
                         applied=lambda results: None, timeout_seconds=1.0,
                         pause_seconds=0.01)
    assert sent_from == [caller] * 4
    assert order[:8] == ["sent"] * 4 + ["handed"] * 4
    assert len(finished_in) == 4 and caller not in finished_in


class _Unsendable(_SwitchingOcs):
    def start_replace_map(self, wanted: dict[int, int]) -> Pending[dict[int, int]]:
        from drivers.errors import DeviceUnreachable

        raise DeviceUnreachable("connection refused", device="a1")


@pytest.mark.parametrize("failing", ["refused", "not sent"])
def test_a_failed_command_fails_the_change_once_the_others_end(failing: str) -> None:
    """A command the OCS refused, or one that could not be sent at all, is raised once
    every other command of the change has ended; no light is checked then."""
    from drivers.errors import DeviceError
    from msoctl.protect.moves import apply_and_verify

    first = (_SwitchingOcs(0.01, refuses=True) if failing == "refused"
             else _Unsendable(0.0))
    units = {"a1": first, "b1": _SwitchingOcs(0.2)}
    started = time.monotonic()
    with _Actions(units) as actions, pytest.raises(DeviceError):
        apply_and_verify(actions, _maps(units),  # type: ignore[arg-type]
                         _points(("a1", "b1")), check=lambda: None,
                         applied=lambda results: pytest.fail("the change failed"),
                         timeout_seconds=1.0, pause_seconds=0.01)
    assert time.monotonic() - started >= 0.2  # raised once b1's command had ended too
    assert units["b1"].read_at == []  # nothing checked on a failed change


class _Unit:
    """A driver whose requests fail as told: ``fail_send`` / ``fail_read`` count down."""

    opened = 0

    def __init__(self, fail_send: list[int], fail_read: list[int]):
        _Unit.opened += 1
        self.fail_send, self.fail_read = fail_send, fail_read

    def start_port_map(self) -> Pending[dict[int, int]]:
        from drivers.errors import DeviceUnreachable

        if self.fail_send[0] > 0:
            self.fail_send[0] -= 1
            raise DeviceUnreachable("connection reset", device="ocs-x")

        def finish() -> dict[int, int]:
            if self.fail_read[0] > 0:
                self.fail_read[0] -= 1
                raise DeviceUnreachable("connection reset", device="ocs-x")
            return {1: 65}

        return Pending(finish, lambda: None)

    def close(self) -> None:
        pass


@pytest.mark.parametrize(("fail_send", "fail_read", "outcome", "opened"), [
    (0, 0, {1: 65}, 1),
    (1, 0, {1: 65}, 2),  # sending failed: once more at once, on a fresh connection
    (0, 1, {1: 65}, 2),  # reading failed: the whole request once more, on a fresh one
    (1, 1, "raised", 2),  # the once more failed too
    (0, 2, "raised", 2),
    (2, 0, "raised", 2),
])
def test_a_two_step_request_is_made_once_more_on_a_fresh_connection(
        fail_send: int, fail_read: int, outcome: object, opened: int) -> None:
    from drivers.errors import DeviceUnreachable
    from msoctl.protect.watch import OcsControl

    _Unit.opened = 0
    sends, reads = [fail_send], [fail_read]
    control = OcsControl("ocs-x", lambda name: _Unit(sends, reads))  # type: ignore[arg-type,return-value]
    try:
        found: object = control.start(lambda driver: driver.start_port_map()).finish()
    except DeviceUnreachable:
        found = "raised"
    assert found == outcome and _Unit.opened == opened
    assert control.lock.acquire(blocking=False)  # let go whatever happened
    control.lock.release()
    abandoned = control.start(lambda driver: driver.start_port_map())
    assert control.lock.locked()
    abandoned.abandon()
    assert not control.lock.locked()


def test_map_reads_of_many_ocses_are_all_read_before_a_failure_is_raised() -> None:
    from drivers.errors import DeviceUnreachable
    from msoctl.protect.moves import finish_all, start_each

    read: list[str] = []

    def pending(name: str) -> Pending[str]:
        def finish() -> str:
            read.append(name)
            if name == "b":
                raise DeviceUnreachable("gone", device=name)
            return name.upper()

        return Pending(finish, lambda: None)

    actions = SimpleNamespace(start=lambda name, begin: pending(name))
    started = start_each(actions, ["a", "b", "c"], lambda driver: driver)  # type: ignore[arg-type]
    with pytest.raises(DeviceUnreachable):
        finish_all(started)
    assert read == ["a", "b", "c"]
    given_up: list[str] = []

    def start(name: str, begin: object) -> Pending[str]:
        if name == "c":
            raise DeviceUnreachable("refused", device=name)
        return Pending(lambda: name, lambda: given_up.append(name))

    with pytest.raises(DeviceUnreachable):
        start_each(SimpleNamespace(start=start), ["a", "b", "c"],  # type: ignore[arg-type]
                   lambda driver: driver)
    assert given_up == ["a", "b"]  # what was sent is given up: its sessions resynchronise


def _link() -> Any:
    from msoctl.links import Link

    def span(name: str, a_port: int, b_port: int) -> Span:
        return Span(name, 30, 0.2, 0.5,
                    SpanFiber(OcsPort("ocs-a", a_port + 60), OcsPort("ocs-b", b_port)),
                    SpanFiber(OcsPort("ocs-b", b_port + 60), OcsPort("ocs-a", a_port)))

    return Link("link-1",
                LinkEnd("sw-a", "Ethernet1", OcsPort("ocs-a", 1), OcsPort("ocs-a", 65)),
                LinkEnd("sw-b", "Ethernet1", OcsPort("ocs-b", 1), OcsPort("ocs-b", 65)),
                span("span-1", 61, 61), span("span-2", 62, 62))


def test_a_move_swaps_the_probe_onto_the_span_the_link_leaves() -> None:
    link = _link()
    working_a = {1: 121, 61: 65, 8: 122}  # 8: the probe on span-2
    moved = plan_moves([Move(link, "working", "protection")], "ocs-a", working_a, 64)
    assert dict(moved) == {1: 122, 62: 65, 8: 121}
    back = plan_moves([Move(link, "protection", "working")], "ocs-a", dict(moved), 64)
    assert dict(back) == working_a
    # doing it twice changes nothing (a retry after a half-done move)
    assert dict(plan_moves([Move(link, "working", "protection")], "ocs-a", dict(moved), 64)) \
        == dict(moved)
    assert link_role(link, {"ocs-a": moved, "ocs-b": {1: 122, 62: 65}}) == "protection"
    assert link_role(link, {"ocs-a": moved, "ocs-b": {1: 121, 61: 65}}) is None
    with pytest.raises(MoveConflict, match="carries another link"):
        plan_moves([Move(link, "working", "protection")], "ocs-a", {1: 121, 61: 65, 2: 122},
                   64, tx_owner={1: "link-1", 2: "link-2"})



@pytest.mark.parametrize("fails", ["nothing", "before the commands", "after the intent"])
def test_an_intent_written_meanwhile_always_gets_its_result(tmp_path: Path, fails: str) -> None:
    """A change's intent is written in a worker while its maps are read and planned
    (acting.py); the change then ends with one result whatever happened: ok, failed
    before any command (a map read), or failed afterwards."""
    from msoctl.protect.acting import _close_when_written, _closing, _written

    journal = Journal(tmp_path / "journal.sqlite")
    intent = journal.change(device="ocs-a,ocs-b", action="protection.switch",
                            links=["link-1"])
    with ThreadPoolExecutor(max_workers=1) as pool:
        writing = pool.submit(_written, intent)
        try:
            try:
                if fails == "before the commands":
                    raise DeviceRejected("map read refused", device="ocs-a")
            except BaseException:
                _close_when_written(writing, intent)
                raise
            change, journaled = writing.result()
            assert journaled <= time.monotonic()
            with _closing(intent):
                change.outcome["done"] = True
                if fails == "after the intent":
                    raise DeviceRejected("replace map refused", device="ocs-b")
        except DeviceRejected:
            assert fails != "nothing"
    (op,) = journal.operations()
    assert not op.is_open and op.intent["links"] == ["link-1"]
    assert op.status == ("ok" if fails == "nothing" else "failed")
    if fails != "nothing":
        assert "refused" in op.result["error"]
    assert op.result.get("done") is (None if fails == "before the commands" else True)
