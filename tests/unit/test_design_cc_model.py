"""The fluid model of ``msoctl design cc`` against the published DCQCN analyses.

The published cases are the DCQCN papers' own: a 40 Gb/s bottleneck, 1 KB packets, the
parameters of Zhu et al. (SIGCOMM 2015) as "ECN or Delay" (Zhu, Ghobadi, Misra, Padhye,
CoNEXT 2016) lists them: B = 10 MB, T = 55 us, F = 5, R_AI = 40 Mb/s, g = 1/256,
tau = 50 us, tau' = 55 us, Kmin/Kmax/Pmax = 5 KB/200 KB/1 %, R_T set to R_C on every
decrease, no hyper increase, flows starting at line rate. "ECN or Delay" takes one
feedback delay tau*; here the scenario is laid out so that the loop (sender, queue,
sender) is exactly tau*: no host links, no switch latency, no NIC turnaround, the
span's two crossings making up tau*.

A run is *stable* when the flows' total rate moves by less than 2 % of the line rate over
its second half (the first carries the start at line rate), *unstable* when it keeps
swinging by more than 10 %.
"""

from __future__ import annotations

import dataclasses
from array import array

import numpy as np
import pytest

from drivers.switch.link import FIBER_VELOCITY_M_PER_S
from msoctl.design.cc.fluid import solve
from msoctl.design.cc.nic import nic
from msoctl.design.cc.scenario import FlowClass, Scenario, SwitchSettings

LINE_BPS = 40e9
PAPER_NIC = {"rpg_time_reset": 55, "rpg_byte_reset": 10e6, "rpg_threshold": 5,
             "rpg_ai_rate": 40, "rpg_hai_rate": 40, "dce_tcp_g": 1020, "dce_tcp_rtt": 55,
             "min_time_between_cnps": 50, "rate_reduce_monitor_period": 50,
             "clamp_tgt_rate": 1}
STEP = 1e-6
STABLE, UNSTABLE = 0.02, 0.10


def paper(flows: int, feedback_seconds: float, *, kmax_bytes: int = 200_000,
          pmax: float = 0.01, ai_mbps: float = 40, duration: float = 0.2,
          classes: tuple[FlowClass, ...] | None = None) -> Scenario:
    switch = SwitchSettings(ecn_min_bytes=5_000, ecn_max_bytes=kmax_bytes,
                            ecn_max_probability=pmax, xoff_bytes=1_000_000, xon_bytes=10_000,
                            buffer_bytes=10**9, latency_seconds=0.0)
    return Scenario(distance_m=feedback_seconds / 2 * FIBER_VELOCITY_M_PER_S,
                    speed_bps=LINE_BPS, classes=classes or (FlowClass(flows),),
                    switch=switch,
                    nic=nic({**PAPER_NIC, "rpg_ai_rate": ai_mbps, "rpg_hai_rate": ai_mbps}),
                    duration_seconds=duration, packet_bytes=1000, host_link_m=0.0,
                    nic_turnaround_seconds=0.0)


def second_half(trace: array[float]) -> np.ndarray:
    values = np.frombuffer(trace)
    return values[len(values) // 2:]


def swing(scenario: Scenario) -> float:
    """How far the flows' total rate moves over the run's second half, against the line."""
    solution = solve(scenario, "ecn", dt=STEP)
    total = second_half(solution.rate_bps[0]) * scenario.flows
    return float((total.max() - total.min()) / LINE_BPS)


def test_the_loop_is_the_feedback_delay_the_paper_takes() -> None:
    scenario = paper(10, 85e-6)
    assert scenario.rtt_seconds == pytest.approx(85e-6)


@pytest.mark.parametrize("flows", [2, 10])
def test_the_queue_settles_where_the_published_fixed_point_puts_it(flows: int) -> None:
    """"ECN or Delay" §3.3 (Stability), the fixed point: p* is approximately
    cbrt(R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2) (rates in packets per second), and the
    queue sits where RED marks with p*: q* = p*/Pmax (Kmax - Kmin) + Kmin. At a 4 us
    feedback delay (stable), the queue over the second half of 200 ms is within 25 % of
    q* (the approximation drops the O(p^4) term), and more flows hold a longer queue."""
    scenario = paper(flows, 4e-6)
    solution = solve(scenario, "ecn", dt=STEP)
    packets_per_second = LINE_BPS / 8000
    ai = 40e6 / 8000
    byte_counter = 10e6 * 8 / 8000
    p_star = (ai * flows**2 / (55e-6 * packets_per_second**2)
              * (1 / byte_counter + flows / (55e-6 * packets_per_second)) ** 2) ** (1 / 3)
    q_star = p_star / 0.01 * (200_000 - 5_000) + 5_000
    queue = float(second_half(solution.queue_bytes).mean())
    assert queue == pytest.approx(q_star, rel=0.25), (queue, q_star)
    assert float(np.frombuffer(solution.delivered_bps)[-1]) == pytest.approx(LINE_BPS)


@pytest.mark.parametrize(("feedback_us", "flows", "stable"), [
    (4, 2, True), (4, 10, True), (4, 64, True),
    (85, 2, True), (85, 10, False), (85, 64, True),
])
def test_stability_against_feedback_delay_and_flows(feedback_us: int, flows: int,
                                                    stable: bool) -> None:
    """"ECN or Delay" §3.3, Figure 4 ("Impact of delay and number of flows on DCQCN
    stability"): at a 4 us feedback delay the rates and the queue settle whatever the
    number of flows; at 85 us DCQCN is unstable with 10 flows and stable with 2 and 64.
    The figure's runs use the authors' fluid-model script (fluidmodel/dcqcn/dcqcn2.m in
    their published repository), which sets Kmax = 2,000 KB and Pmax = 10 %: at the
    paper's 200 KB and 1 %, 64 flows need a marking probability above Pmax, where the
    queue rides the step at Kmax and no fixed point exists for the analysis to linearise.
    Tolerance: stable below a 2 % swing, unstable above 10 %."""
    measured = swing(paper(flows, feedback_us * 1e-6, kmax_bytes=2_000_000, pmax=0.1))
    if stable:
        assert measured < STABLE, measured
    else:
        assert measured > UNSTABLE, measured


@pytest.mark.parametrize("flows", [2, 10])
def test_a_gentler_increase_and_a_wider_ramp_restore_stability(flows: int) -> None:
    """"ECN or Delay" §3.3, Figure 3(c): with R_AI = 10 Mb/s and Kmax = 1,000 KB DCQCN
    is stable even at a 100 us feedback delay ("the propagation delay of a 30 km
    cable"), where the defaults of Figure 3(a) are not with 10 flows. Tolerance as
    above; the defaults' case is checked to swing, so the test can fail."""
    assert swing(paper(flows, 100e-6, kmax_bytes=1_000_000, ai_mbps=10)) < STABLE
    if flows == 10:
        assert swing(paper(flows, 100e-6)) > UNSTABLE


def test_a_late_flow_converges_to_the_fair_share() -> None:
    """"ECN or Delay" §3.4 (Convergence), the theorem: under DCQCN the rate difference of
    any two flows decreases exponentially over time, to the fair share of the fixed point
    (§3.3). One flow at line rate, a second joining 20 ms later at line rate: the gap
    halves at least every 40 ms, and at 300 ms each flow is within 5 % of C/2."""
    scenario = paper(2, 4e-6, duration=0.3,
                     classes=(FlowClass(1, 0.0), FlowClass(1, 0.02)))
    solution = solve(scenario, "ecn", dt=STEP)
    first, second = (np.frombuffer(trace) for trace in solution.rate_bps)
    steps = {ms: round(ms * 1e-3 / STEP) - 1 for ms in (60, 100, 140, 300)}
    gaps = {ms: abs(first[k] - second[k]) for ms, k in steps.items()}
    assert gaps[100] < gaps[60] / 2 and gaps[140] < gaps[100] / 2, gaps
    for rate in (first[steps[300]], second[steps[300]]):
        assert rate == pytest.approx(LINE_BPS / 2, rel=0.05)


def test_halving_the_step_changes_nothing_that_matters() -> None:
    """The solver's own check at 400G over 30 km with ConnectX's defaults: every output at
    half the default step within 2 % of the default step's."""
    from msoctl.design.cc.metrics import measure
    from msoctl.design.cc.scenario import planned_switch

    scenario = Scenario(30_000.0, 400e9, (FlowClass(8),), planned_switch(30_000.0, 400e9),
                        duration_seconds=0.02)
    for mode in ("ecn", "switch"):
        coarse = measure(solve(scenario, mode), (1_000_000,))
        fine = measure(solve(scenario, mode, dt=0.25e-6), (1_000_000,))
        for name in ("utilisation", "queue_mean_bytes", "queue_p99_bytes", "cnps_per_second"):
            assert getattr(fine, name) == pytest.approx(getattr(coarse, name), rel=0.02), name


def test_pfc_pauses_when_the_marking_sits_above_the_pause_threshold() -> None:
    """With most of the ECN ramp above where the switch pauses (a buffer no larger than
    Kmax, so that PAUSE goes out at Kmax less the headroom), the queue reaches the pause
    threshold before marking slows the senders: PAUSE frames go out and the upstream is
    held; with the planned thresholds well below it, none."""
    from msoctl.design.cc.scenario import planned_switch

    planned = planned_switch(30_000.0, 400e9)
    base = Scenario(30_000.0, 400e9, (FlowClass(8),), planned, duration_seconds=0.02)
    assert solve(base, "ecn").pause_frames == 0
    tight = dataclasses.replace(base, switch=dataclasses.replace(
        planned, buffer_bytes=planned.ecn_max_bytes))
    assert planned.ecn_min_bytes < tight.switch.pause_at_bytes < planned.ecn_max_bytes
    paused = solve(tight, "ecn")
    assert paused.pause_frames > 0 and paused.paused_seconds > 0
    assert paused.lost_bytes == 0  # the planned headroom holds what arrives after PAUSE


@pytest.mark.parametrize("flows", [4, 8])
def test_flows_joining_one_by_one_share_the_link_equally(flows: int) -> None:
    """DCQCN (SIGCOMM 2015) and "ECN or Delay" §3.3-3.4: the unique fixed point shares
    the bottleneck equally, and every flow converges to it. N flows at 4 us, one joining
    every 20 ms at line rate: 160 ms after the last joined, each is within 5 % of C/N."""
    scenario = paper(flows, 4e-6, duration=0.02 * (flows - 1) + 0.16,
                     classes=tuple(FlowClass(1, 0.02 * i) for i in range(flows)))
    solution = solve(scenario, "ecn", dt=STEP)
    for trace in solution.rate_bps:
        assert np.frombuffer(trace)[-1] == pytest.approx(LINE_BPS / flows, rel=0.05)
