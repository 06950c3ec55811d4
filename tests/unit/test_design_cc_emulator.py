"""``msoctl design cc``'s fluid model and the lab's switch emulator agree on the direction
of every effect both model.

They are two descriptions of one switch written apart (emulators/switch/model.py steps
its own queue with a simpler sender; msoctl/design/cc/fluid.py solves DCQCN's fluid
model), so their figures differ; what must not differ is which way a change moves them:

- more load (flows into one port) marks more packets per second;
- an ECN ramp above the point where the switch pauses (PAUSE before marking) sends PAUSE
  frames, a ramp below it none;
- switch-generated CNPs keep the queue's peak lower than the receiver's CNPs on 30 km.

Both run 20 ms of a 400G port on 30 km with the thresholds ``msoctl switch plan`` gives.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from emulators.clock import SteppedClock
from emulators.switch.model import PhysicalPort, SwitchModel
from msoctl.design.cc.fluid import solve
from msoctl.design.cc.metrics import measure
from msoctl.design.cc.scenario import FlowClass, Scenario, planned_switch
from msoctl.ops.switch_plan import PortLink, derive

PORT = "Ethernet1"
LOSSLESS = 3
MILLISECONDS = 20


def planned_config(*, fast_cnp: bool) -> dict[str, Any]:
    return derive([PortLink(PORT, "30km", "400G")], fast_cnp=fast_cnp).config


def emulated(config: dict[str, Any], senders: int) -> dict[str, int]:
    clock = SteppedClock()
    model = SwitchModel(clock, {PORT: PhysicalPort("400G", 30_000)})
    model.apply_config(config)
    model.incast(PORT, LOSSLESS, senders)
    clock.advance(MILLISECONDS / 1000)
    return model.counters(PORT, LOSSLESS)


def modelled(flows: int, mode: str, **switch: int) -> Any:
    settings = dataclasses.replace(planned_switch(30_000.0, 400e9), **switch)
    scenario = Scenario(30_000.0, 400e9, (FlowClass(flows),), settings,
                        duration_seconds=MILLISECONDS / 1000)
    return measure(solve(scenario, mode), (1_000_000,))


def test_more_load_marks_more_packets_in_both() -> None:
    config = planned_config(fast_cnp=False)
    light, heavy = (emulated(config, senders)["ecn-marked-packets"] for senders in (2, 8))
    assert heavy > light > 0
    light_model, heavy_model = (modelled(flows, "ecn").marked_per_second for flows in (2, 8))
    assert heavy_model > light_model > 0


def with_ramp(config: dict[str, Any], low: int, high: int) -> dict[str, Any]:
    config = copy.deepcopy(config)
    queue = next(q for q in config["switch"]["ports"]["port"][0]["queues"]["queue"]
                 if q["queue-id"] == LOSSLESS)
    queue["wred"]["min-threshold"], queue["wred"]["max-threshold"] = low, high
    return config


def test_a_ramp_above_the_pause_point_pauses_in_both() -> None:
    """The emulator pauses at ``xoff-bytes`` of depth; the model at its buffer less the
    headroom. Each is given ECN thresholds below its own pause point, then above it. The
    emulator's incast is of 2 senders: 8 starting together at line rate on 30 km fill its
    ``xoff-bytes`` within one feedback loop whatever the thresholds (what the headroom
    is for), so they pause in both cases there."""
    config = planned_config(fast_cnp=False)
    xoff = config["switch"]["ports"]["port"][0]["pfc"]["xoff-bytes"]
    assert emulated(with_ramp(config, xoff // 8, xoff // 2), 2)["pfc-pause-frames-sent"] == 0
    assert emulated(with_ramp(config, 2 * xoff, 3 * xoff), 2)["pfc-pause-frames-sent"] > 0

    planned = planned_switch(30_000.0, 400e9)
    assert modelled(8, "ecn").pause_frames == 0
    high = modelled(8, "ecn", buffer_bytes=planned.ecn_max_bytes + planned.xoff_bytes // 4,
                    ecn_min_bytes=planned.ecn_max_bytes - planned.xoff_bytes // 8)
    assert high.pause_frames > 0 and high.pause_fraction > 0


def test_switch_cnps_keep_the_queue_lower_in_both() -> None:
    receiver = emulated(planned_config(fast_cnp=False), 8)["buffer-watermark-bytes"]
    switch = emulated(planned_config(fast_cnp=True), 8)["buffer-watermark-bytes"]
    assert switch < receiver
    assert modelled(8, "switch").queue_max_bytes < modelled(8, "ecn").queue_max_bytes
