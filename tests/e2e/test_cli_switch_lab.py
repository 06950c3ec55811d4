"""The configuration an operator applies with ``msoctl switch cc`` decides what the lab's
switches do under congestion, read back with ``msoctl switch counters``.

- planned for the real 30 km cable, with fast CNP: ECN marks and switch-generated
  CNPs, no drop on the lossless queue;
- the same plan with fast CNP off: ECN marks, no switch-generated CNP;
- headroom planned for a 300 m cable on the 30 km link: the lossless queue
  overflows its headroom and drops.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from emulators.faults import Fault
from emulators.lab import Lab
from tests.support import Msoctl

PORT = "Ethernet1"


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def plan(msoctl: Msoctl, tmp_path: Path, name: str, *extra: str,
         distance: str = "30.01km") -> Path:
    path = tmp_path / f"{name}.yaml"
    result = msoctl("switch", "plan", "--port", f"{PORT}={distance}@400G", "--file", str(path),
                    *extra)
    assert result.code == 0, result.err
    return path


def queue_counters(msoctl: Msoctl, switch: str) -> dict[str, Any]:
    result = msoctl("switch", "counters", switch, "--port", PORT, "-o", "json")
    assert result.code == 0, result.err
    port = json.loads(result.out)["ports"][0]
    return next(q["counters"] for q in port["queues"] if q["queue_id"] == 3)


def burst(lab: Lab, msoctl: Msoctl, switch: str, seconds: float = 0.05) -> dict[str, Any]:
    before = queue_counters(msoctl, switch)
    lab.inject(switch, Fault("congestion", target=f"{PORT}@3", count=4, seconds=seconds))
    time.sleep(seconds + 0.05)  # the lab's clock is real time; the model catches up on reading
    after = queue_counters(msoctl, switch)
    lab.clear(switch, "congestion")
    return {key: after[key] - before[key] for key in after if key != "buffer_watermark_bytes"}


def test_fast_cnp_and_headroom_decide_the_counters(lab: Lab, msoctl: Msoctl,
                                                   tmp_path: Path) -> None:
    good = plan(msoctl, tmp_path, "good")
    no_fast = plan(msoctl, tmp_path, "no-fast", "--no-fast-cnp")
    short = plan(msoctl, tmp_path, "short", distance="300m")
    assert msoctl("switch", "cc", "apply", "sw-a", "--file", str(good)).code == 0
    assert msoctl("switch", "cc", "apply", "sw-b", "--file", str(no_fast)).code == 0

    fast = burst(lab, msoctl, "sw-a")
    assert fast["ecn_marked_packets"] > 0 and fast["switch_generated_cnps"] > 0
    assert fast["dropped_packets"] == 0

    slow = burst(lab, msoctl, "sw-b")
    assert slow["ecn_marked_packets"] > 0 and slow["switch_generated_cnps"] == 0
    assert slow["dropped_packets"] == 0

    applied = msoctl("switch", "cc", "apply", "sw-b", "--file", str(short))
    assert applied.code == 0, applied.err
    overflow = burst(lab, msoctl, "sw-b", seconds=0.1)
    assert overflow["pfc_pause_frames_sent"] > 0
    assert overflow["dropped_packets"] > 0


def test_a_laser_source_fault_darkens_the_far_end(lab: Lab, msoctl: Msoctl) -> None:
    """The port's launch power is its co-packaged lanes' (CPO telemetry), so an ELS fault on
    sw-b reaches sw-a's receiver 30 km away, as the OCS monitors and sw-a's CPO see it."""
    from tests.support import wait_until

    assert msoctl("ocs", "connect", "ocs-b", "1:121").code == 0
    assert msoctl("ocs", "connect", "ocs-a", "61:65").code == 0
    lit = lab.optics.power_dbm("sw-a:rx1")
    assert lit > -15
    lab.inject("sw-b", Fault("els", target="1/1"))
    wait_until(lambda: lab.optics.power_dbm("sw-a:rx1") < -40, "sw-a rx1 goes dark", 3)
    shown = json.loads(msoctl("telemetry", "cpo", "sw-a", "--port", "Ethernet1", "-o",
                              "json").out)
    assert all(lane["rx_power_dbm"] is None or lane["rx_power_dbm"] < -40
               for lane in shown["lanes"])
    lab.clear("sw-b", "els")
    wait_until(lambda: lab.optics.power_dbm("sw-a:rx1") > lit - 1, "light is back", 5)
