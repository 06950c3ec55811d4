"""The switch's congestion model: the configuration decides how the counters move."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from emulators.clock import SteppedClock
from emulators.faults import Fault, FaultError
from emulators.switch.config import ConfigError
from emulators.switch.model import COUNTER_NAMES, PhysicalPort, SwitchModel
from emulators.switch.physics import in_flight_after_pause_bytes
from msoctl.ops.switch_plan import PortLink, derive

PORT = "Ethernet1/1"
LOSSLESS = 3


def planned(distance: str = "30km", *, fast_cnp: bool = True) -> dict[str, Any]:
    return derive([PortLink(PORT, distance, "400G")], fast_cnp=fast_cnp).config


def queue_node(config: dict[str, Any], queue_id: int = LOSSLESS) -> dict[str, Any]:
    port = config["switch"]["ports"]["port"][0]
    node: dict[str, Any] = next(q for q in port["queues"]["queue"] if q["queue-id"] == queue_id)
    return node


def without_ecn(config: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(config)
    queue_node(config)["wred"]["enable-ecn"] = False
    return config


def switch(config: dict[str, Any] | None = None, *, cable_m: float = 30_000,
           **chip: int) -> tuple[SwitchModel, SteppedClock]:
    clock = SteppedClock()
    model = SwitchModel(clock, {PORT: PhysicalPort("400G", cable_m),
                                "Ethernet1/2": PhysicalPort("400G", 5)}, **chip)
    if config is not None:
        model.apply_config(config)
    return model, clock


def run(model: SwitchModel, clock: SteppedClock, milliseconds: int,
        queue: int = LOSSLESS) -> list[dict[str, int]]:
    """Advance in 1 ms steps; the counters after each."""
    seen = []
    for _ in range(milliseconds):
        clock.advance(1e-3)
        seen.append(model.counters(PORT, queue))
    return seen


def test_fast_cnp_off_the_switch_sends_no_cnps() -> None:
    model, clock = switch(planned(fast_cnp=False))
    model.incast(PORT, LOSSLESS, 4)
    counters = run(model, clock, 10)[-1]
    assert counters["switch-generated-cnps"] == 0
    assert counters["ecn-marked-packets"] > 0


def test_fast_cnp_on_the_switch_sends_cnps() -> None:
    model, clock = switch(planned(fast_cnp=True))
    model.incast(PORT, LOSSLESS, 4)
    first, last = run(model, clock, 10)[0::9]
    assert 0 < first["switch-generated-cnps"] < last["switch-generated-cnps"]


def test_fast_cnp_on_the_queue_alone_is_not_enough() -> None:
    config = planned(fast_cnp=True)
    config["switch"]["fast-cnp"]["enabled"] = False
    model, clock = switch(config)
    model.incast(PORT, LOSSLESS, 4)
    assert run(model, clock, 5)[-1]["switch-generated-cnps"] == 0


def test_cnps_are_limited_per_flow_by_the_minimum_interval() -> None:
    config = planned()
    config["switch"]["fast-cnp"]["min-interval-microseconds"] = 1000
    model, clock = switch(without_ecn(config))
    model.incast(PORT, LOSSLESS, 4, flows=8)
    # at most one CNP per flow per millisecond
    assert run(model, clock, 10)[-1]["switch-generated-cnps"] <= 8 * 10


def ecn_config(*, enable_ecn: bool) -> dict[str, Any]:
    return {"switch": {"ports": {"port": [{"name": PORT, "queues": {"queue": [{
        "queue-id": 0,
        "wred": {"min-threshold": 1_000_000, "max-threshold": 3_000_000,
                 "max-drop-probability-percent": 20, "enable-ecn": enable_ecn},
    }]}}]}}}


def test_ecn_marks_only_above_min_threshold() -> None:
    model, clock = switch(ecn_config(enable_ecn=True))
    # 5 Gb/s more than drains: 625 kB per ms, so 1 ms stays under the 1 MB minimum
    model.set_load(PORT, 0, 100, drain_gbps=95, flows=1)
    clock.advance(1e-3)
    assert model.counters(PORT, 0)["ecn-marked-packets"] == 0
    assert 0 < model.queue_depth_bytes(PORT, 0) < 1_000_000
    clock.advance(1e-3)  # 1.25 MB; the senders hear of it one and a half RTT later
    assert model.queue_depth_bytes(PORT, 0) > 1_000_000
    assert model.counters(PORT, 0)["ecn-marked-packets"] > 0


def test_ecn_marks_every_packet_above_max_threshold() -> None:
    # without feedback (no ECN-capable senders' reaction counted) the queue stays deep
    config = ecn_config(enable_ecn=True)
    model, clock = switch(config)
    model.set_load(PORT, 0, 400, drain_gbps=100)
    clock.advance(0.2e-3)
    marked_before = model.counters(PORT, 0)["ecn-marked-packets"]
    assert model.queue_depth_bytes(PORT, 0) > 3_000_000  # 300 Gb/s excess: 7.5 MB
    clock.advance(10e-6)
    marked = model.counters(PORT, 0)["ecn-marked-packets"] - marked_before
    arrived = 400e9 * 10e-6 / 8 / 4096
    assert marked == pytest.approx(arrived, abs=2)


def test_no_ecn_marks_without_enable_ecn() -> None:
    model, clock = switch(ecn_config(enable_ecn=False))
    model.set_load(PORT, 0, 400, drain_gbps=100)
    counters = run(model, clock, 3, queue=0)[-1]
    assert counters["ecn-marked-packets"] == 0
    assert counters["dropped-packets"] > 0  # a lossy queue without ECN drops by WRED


def test_no_marks_without_congestion() -> None:
    model, clock = switch(planned())
    model.set_load(PORT, LOSSLESS, 300)
    counters = run(model, clock, 5)[-1]
    assert all(counters[name] == 0 for name in COUNTER_NAMES)


def test_pfc_pauses_above_xoff() -> None:
    config = without_ecn(planned(fast_cnp=False))
    xoff = config["switch"]["ports"]["port"][0]["pfc"]["xoff-bytes"]
    model, clock = switch(config)
    model.incast(PORT, LOSSLESS, 4)
    clock.advance(0.5e-3)  # 300 Gb/s excess fills 18.75 MB: under xoff (about 24 MB)
    assert model.queue_depth_bytes(PORT, LOSSLESS) < xoff
    assert model.counters(PORT, LOSSLESS)["pfc-pause-frames-sent"] == 0
    clock.advance(0.5e-3)
    assert model.counters(PORT, LOSSLESS)["pfc-pause-frames-sent"] >= 1
    before = model.counters(PORT, LOSSLESS)["pfc-pause-frames-sent"]
    clock.advance(1e-3)
    # refreshed about every 41.9 us while paused
    assert model.counters(PORT, LOSSLESS)["pfc-pause-frames-sent"] > before + 5


def test_planner_headroom_holds_a_30km_incast_without_drops() -> None:
    for config in (planned(), planned(fast_cnp=False), without_ecn(planned(fast_cnp=False))):
        model, clock = switch(config)
        model.incast(PORT, LOSSLESS, 8)
        counters = run(model, clock, 30)[-1]
        assert counters["dropped-packets"] == 0
    assert counters["pfc-pause-frames-sent"] > 0  # without ECN, PFC alone held it


def test_headroom_for_300m_on_a_30km_cable_drops_lossless_packets() -> None:
    # the configuration says 300 m, the fiber is 30 km
    model, clock = switch(planned("300m"))
    xoff = planned("300m")["switch"]["ports"]["port"][0]["pfc"]["xoff-bytes"]
    assert xoff < in_flight_after_pause_bytes(30_000, 400e9)
    model.incast(PORT, LOSSLESS, 8)
    counters = run(model, clock, 10)[-1]
    assert counters["dropped-packets"] > 0
    assert counters["pfc-pause-frames-sent"] > 0


def test_headroom_for_300m_on_a_300m_cable_holds() -> None:
    model, clock = switch(without_ecn(planned("300m")), cable_m=300)
    model.incast(PORT, LOSSLESS, 8)
    counters = run(model, clock, 10)[-1]
    assert counters["dropped-packets"] == 0
    assert counters["pfc-pause-frames-sent"] > 0


def test_lossy_queue_drops_when_the_buffer_is_exhausted() -> None:
    model, clock = switch(planned(), total_bytes=200_000_000, lossless_pool_bytes=100_000_000)
    model.incast(PORT, 0, 4)  # queue 0 is lossy, no WRED: nothing slows the senders
    clock.advance(2e-3)  # 300 Gb/s excess: 75 MB, under the 100 MB lossy part
    assert model.counters(PORT, 0)["dropped-packets"] == 0
    clock.advance(2e-3)
    counters = model.counters(PORT, 0)
    assert counters["dropped-packets"] > 0
    assert model.queue_depth_bytes(PORT, 0) == pytest.approx(100_000_000, rel=1e-6)
    assert counters["buffer-watermark-bytes"] == pytest.approx(100_000_000, rel=1e-6)


def test_watermark_is_the_highest_depth_and_never_falls() -> None:
    model, clock = switch(without_ecn(planned(fast_cnp=False)))
    model.incast(PORT, LOSSLESS, 4)
    peaks = [c["buffer-watermark-bytes"] for c in run(model, clock, 5)]
    model.set_load(PORT, LOSSLESS, 0)
    peaks += [c["buffer-watermark-bytes"] for c in run(model, clock, 5)]
    assert peaks == sorted(peaks)
    assert model.queue_depth_bytes(PORT, LOSSLESS) == 0
    assert peaks[-1] > 20_000_000
    port_counters = model.counters(PORT)
    assert port_counters["buffer-watermark-bytes"] >= peaks[-1]


def test_fast_cnp_peaks_lower_than_receiver_cnps_on_30km() -> None:
    peaks = {}
    for fast in (True, False):
        model, clock = switch(planned(fast_cnp=fast))
        model.incast(PORT, LOSSLESS, 2)
        peaks[fast] = run(model, clock, 10)[-1]["buffer-watermark-bytes"]
    # half an RTT sooner (about 152 us at 30 km): 200 Gb/s excess for it is 3.8 MB
    assert peaks[True] < peaks[False] - 2_000_000


def test_counters_never_decrease() -> None:
    model, clock = switch(planned())
    model.incast(PORT, LOSSLESS, 4)
    seen = run(model, clock, 5)
    model.apply_config(planned("300m", fast_cnp=False))
    seen += run(model, clock, 5)
    model.set_load(PORT, LOSSLESS, 0)
    seen += run(model, clock, 5)
    for name in COUNTER_NAMES:
        values = [c[name] for c in seen]
        assert values == sorted(values), name


def test_config_replaced_mid_run_takes_effect() -> None:
    model, clock = switch(without_ecn(planned(fast_cnp=False)))
    model.incast(PORT, LOSSLESS, 4)
    run(model, clock, 3)
    assert model.counters(PORT, LOSSLESS)["switch-generated-cnps"] == 0
    model.apply_config(without_ecn(planned(fast_cnp=True)))
    cnps = run(model, clock, 3)[-1]["switch-generated-cnps"]
    assert cnps > 0
    model.apply_config(without_ecn(planned(fast_cnp=False)))
    assert run(model, clock, 3)[-1]["switch-generated-cnps"] == cnps


def test_config_names_a_port_the_chip_does_not_have() -> None:
    model, _ = switch()
    config = planned()
    config["switch"]["ports"]["port"][0]["name"] = "Ethernet9/9"
    with pytest.raises(ConfigError, match="Ethernet9/9"):
        model.apply_config(config)


def test_config_accepts_the_strings_of_the_xml_encoding() -> None:
    model, clock = switch({"switch": {"fast-cnp": {"enabled": "true"}, "ports": {"port": {
        "name": PORT, "lossless-priorities": ["3"],
        "pfc": {"xoff-bytes": "24000000", "xon-bytes": "20480"},
        "queues": {"queue": {"queue-id": "3", "fast-cnp": {"enabled": "true"},
                             "wred": {"min-threshold": "3000000", "max-threshold": "30000000",
                                      "max-drop-probability-percent": "20",
                                      "enable-ecn": "true"}}}}}}})
    model.incast(PORT, LOSSLESS, 4)
    assert run(model, clock, 3)[-1]["switch-generated-cnps"] > 0


def test_state_tree_in_yang_names() -> None:
    model, clock = switch(planned(), total_bytes=8_000_000_000)
    model.incast(PORT, LOSSLESS, 4)
    clock.advance(2e-3)
    tree = model.state_tree()["switch"]
    assert tree["buffer"] == {"total-bytes": 8_000_000_000,
                              "lossless-pool-bytes": 4_000_000_000}
    port = next(p for p in tree["ports"]["port"] if p["name"] == PORT)
    queue = next(q for q in port["queues"]["queue"] if q["queue-id"] == LOSSLESS)
    assert set(queue["counters"]) == set(COUNTER_NAMES)
    assert queue["counters"] == model.counters(PORT, LOSSLESS)
    assert port["counters"]["switch-generated-cnps"] == queue["counters"]["switch-generated-cnps"]
    assert all(isinstance(v, int) for v in port["counters"].values())


def test_congestion_fault_is_a_burst_that_ends() -> None:
    model, clock = switch(planned())
    model.faults.inject(Fault("congestion", target=PORT, seconds=2e-3, count=4))
    clock.advance(2e-3)
    assert model.counters(PORT, LOSSLESS)["ecn-marked-packets"] > 0
    run(model, clock, 20)
    assert model.queue_depth_bytes(PORT, LOSSLESS) == 0


def test_pfc_storm_fills_the_queue_until_the_watchdog_drops() -> None:
    config = planned()
    config["switch"]["ports"]["port"][0]["pfc"]["watchdog"]["detection-time-ms"] = 5
    model, clock = switch(config)
    model.set_load(PORT, LOSSLESS, 100)
    model.faults.inject(Fault("pfc_storm", target=f"{PORT}@{LOSSLESS}"))
    clock.advance(1e-3)
    assert model.counters(PORT, LOSSLESS)["pfc-pause-frames-received"] > 20  # 1 per 41.9 us
    assert model.queue_depth_bytes(PORT, LOSSLESS) > 5_000_000
    assert model.counters(PORT, LOSSLESS)["dropped-packets"] == 0
    clock.advance(5e-3)
    assert model.counters(PORT, LOSSLESS)["dropped-packets"] > 0  # the watchdog acted
    model.faults.clear("pfc_storm")
    received = model.counters(PORT, LOSSLESS)["pfc-pause-frames-received"]
    clock.advance(0.3)
    assert model.counters(PORT, LOSSLESS)["pfc-pause-frames-received"] == received


def test_faults_need_a_port_of_the_chip() -> None:
    model, _ = switch()
    with pytest.raises(FaultError):
        model.faults.inject(Fault("pfc_storm", target="Ethernet9/9"))
    assert "congestion" in model.faults.kinds() and "pfc_storm" in model.faults.kinds()


# ---- steady states taken in closed form ---------------------------------------------------


def _stepped_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SwitchModel, "_skip_steady", lambda *args: None)


def _storm_and_burst(model: SwitchModel, clock: SteppedClock) -> list[dict[str, int]]:
    """A storm on the lossless priority, a burst into it, the watchdog, the storm's end."""
    model.faults.inject(Fault("pfc_storm", target=PORT))
    seen = []
    for tenth in range(8):
        if tenth == 1:
            model.faults.inject(Fault("congestion", target=PORT, seconds=0.3))
        if tenth == 5:
            model.faults.clear("pfc_storm")
        clock.advance(0.1)
        seen.append(model.counters(PORT, LOSSLESS))
    return seen


def test_steady_states_skipped_match_steps_taken_one_by_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model, clock = switch(planned())
    skipped = _storm_and_burst(model, clock)
    _stepped_only(monkeypatch)
    model, clock = switch(planned())
    stepped = _storm_and_burst(model, clock)
    assert stepped[-1]["dropped-packets"] > 0 and stepped[-1]["pfc-pause-frames-received"] > 0
    for fast, slow in zip(skipped, stepped, strict=True):
        for name in COUNTER_NAMES:
            # rounding may move a threshold met on a step boundary by one 5 us step:
            # at most one step of line-rate arrivals (62 packets of 4096 B at 400G)
            assert abs(fast[name] - slow[name]) <= 62, (name, fast, slow)


def test_a_full_lossy_queue_and_a_storm_cost_little_cpu_per_device_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU is counted in integration steps taken (about 10 us each per busy queue), not
    timed: a loaded machine stretches a CPU clock too."""
    steps = 0
    step = SwitchModel._step

    def counted(self: SwitchModel, *args: Any) -> None:
        nonlocal steps
        steps += 1
        step(self, *args)

    monkeypatch.setattr(SwitchModel, "_step", counted)
    model, clock = switch({"switch": {"ports": {"port": [{"name": PORT, "speed": "400G"}]}}})
    model.faults.inject(Fault("pfc_storm", target=f"{PORT}@5"))
    model.incast(PORT, 0, 4)
    clock.advance(10.0)  # stepped one by one: 2 million steps of 5 us, tens of seconds
    counters = model.counters(PORT, 0)
    # the steady states in closed form: at least 95 % of those steps not taken (about
    # 21,000 are, a fraction of a second)
    assert 0 < steps < 100_000, steps
    # 300 Gb/s more than the queue drains, for 10 s less the ~0.1 s it took to fill
    assert counters["dropped-packets"] == pytest.approx(300e9 / 8 * 9.89 / 4096, rel=0.01)
    assert model.counters(PORT, 5)["pfc-pause-frames-received"] == \
        pytest.approx(10.0 / 41.94e-6, rel=1e-3)
