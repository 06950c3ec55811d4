"""Both feedback modes side by side, sweeps, and recommended thresholds.

Every scenario is solved in a process of a pool (one per core by default), so a sweep
takes the machine's cores; a single comparison solves its two modes in two processes.
"""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass

from drivers.errors import ValidationError
from msoctl.design.cc.fluid import DEFAULT_STEP_SECONDS, solve
from msoctl.design.cc.metrics import Metrics, measure
from msoctl.design.cc.scenario import DEFAULT_FLOW_SIZES, FlowClass, Scenario, planned_switch
from msoctl.design.cc.texts import MAX_SWEEP_POINTS

SWEEPABLE = ("distance", "flows", "kmin", "kmax", "pmax")


@dataclass(frozen=True)
class Comparison:
    """One scenario under end-to-end ECN and under switch-generated CNPs."""

    scenario: Scenario
    ecn: Metrics
    switch: Metrics

    @property
    def utilisation_gain(self) -> float:
        """Switch-generated CNP's utilisation over end-to-end ECN's, minus 1."""
        return self.switch.utilisation / self.ecn.utilisation - 1

    def slowdown_gain(self, index: int) -> float | None:
        """ECN's mean slowdown over switch CNP's, minus 1, for the mix's ``index``-th size."""
        ecn, switch = self.ecn.slowdowns[index].mean, self.switch.slowdowns[index].mean
        if ecn is None or switch is None:
            return None
        return ecn / switch - 1


@dataclass(frozen=True)
class _Job:
    scenario: Scenario
    mode: str
    dt: float
    flow_sizes: tuple[int, ...]


def _run(job: _Job) -> Metrics:
    return measure(solve(job.scenario, job.mode, dt=job.dt), job.flow_sizes)


def _pool(jobs: int, workers: int | None) -> Executor:
    count = max(1, min(jobs, workers or os.cpu_count() or 1))
    return ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork"))


def compare_all(scenarios: Sequence[Scenario], *, dt: float = DEFAULT_STEP_SECONDS,
                flow_sizes: Sequence[int] = DEFAULT_FLOW_SIZES,
                workers: int | None = None) -> list[Comparison]:
    """Each scenario under both modes, solved in parallel processes."""
    for scenario in scenarios:
        scenario.check()
    jobs = [_Job(scenario, mode, dt, tuple(flow_sizes))
            for scenario in scenarios for mode in ("ecn", "switch")]
    with _pool(len(jobs), workers) as pool:
        results = list(pool.map(_run, jobs))
    return [Comparison(scenario, results[2 * i], results[2 * i + 1])
            for i, scenario in enumerate(scenarios)]


# ---- sweeps --------------------------------------------------------------------------------

def swept(base: Scenario, parameter: str, values: Sequence[float], *,
          replan: bool) -> list[Scenario]:
    """``base`` with ``parameter`` set to each value. ``replan``: the switch's thresholds
    were worked out for the link (no WANT file), so a new distance gets its own plan, as
    ``msoctl switch plan`` would give it."""
    if parameter not in SWEEPABLE:
        raise ValidationError(f"--sweep {parameter}: one of {', '.join(SWEEPABLE)}")
    if not 2 <= len(values) <= MAX_SWEEP_POINTS:
        raise ValidationError(f"--sweep takes 2..{MAX_SWEEP_POINTS} values")
    change: Callable[[float], Scenario]
    if parameter == "distance":
        def change(value: float) -> Scenario:
            switch = (planned_switch(value, base.speed_bps,
                                     buffer_bytes=base.switch.buffer_bytes,
                                     fast_cnp_interval_seconds=base.switch
                                     .fast_cnp_interval_seconds,
                                     latency_seconds=base.switch.latency_seconds)
                      if replan else base.switch)
            return dataclasses.replace(base, distance_m=value, switch=switch)
    elif parameter == "flows":
        def change(value: float) -> Scenario:
            return dataclasses.replace(base, classes=(FlowClass(int(value)),))
    else:
        def change(value: float) -> Scenario:
            switch = base.switch
            if parameter == "kmin":
                switch = dataclasses.replace(switch, ecn_min_bytes=round(value))
            elif parameter == "kmax":
                switch = dataclasses.replace(switch, ecn_max_bytes=round(value))
            else:
                switch = dataclasses.replace(switch, ecn_max_probability=value)
            return dataclasses.replace(base, switch=switch)
    scenarios = [change(value) for value in values]
    for scenario in scenarios:
        scenario.check()
    return scenarios


# ---- recommended thresholds -----------------------------------------------------------------

KMIN_BDP = (0.05, 0.1, 0.25, 0.5)
KMAX_BDP = (0.5, 1.0, 2.0, 3.0)
PMAX = (0.01, 0.05, 0.2, 0.5)


@dataclass(frozen=True)
class Recommendation:
    mode: str
    scenario: Scenario
    metrics: Metrics
    candidates: int
    refused: int  # candidates that paused, lost, or did not fit the buffer


def recommend(base: Scenario, mode: str, *, dt: float = DEFAULT_STEP_SECONDS,
              workers: int | None = None) -> Recommendation:
    """The ECN thresholds and probability (out of a grid in multiples of the link's
    bandwidth-delay product) that give ``mode`` the most utilisation with no PAUSE and no
    loss; ties go to the lower 99th-percentile queue."""
    bdp = base.speed_bps * base.rtt_seconds / 8
    candidates = []
    for low, high, probability in itertools.product(KMIN_BDP, KMAX_BDP, PMAX):
        if low >= high or high * bdp > base.switch.pause_at_bytes:
            continue
        candidates.append(dataclasses.replace(base, switch=dataclasses.replace(
            base.switch, ecn_min_bytes=round(low * bdp), ecn_max_bytes=round(high * bdp),
            ecn_max_probability=probability)))
    if not candidates:
        raise ValidationError("no ECN threshold of the grid fits below the pause threshold "
                              f"({base.switch.pause_at_bytes:,} B): give a larger --buffer")
    jobs = [_Job(scenario, mode, dt, (DEFAULT_FLOW_SIZES[0],)) for scenario in candidates]
    with _pool(len(jobs), workers) as pool:
        results = list(pool.map(_run, jobs))
    clean = [(metrics, scenario) for metrics, scenario in zip(results, candidates, strict=True)
             if metrics.pause_frames == 0 and metrics.lost_bytes == 0]
    if not clean:
        raise ValidationError(f"every candidate of the grid ({len(candidates)}) paused or "
                              "lost traffic: fewer flows, a larger --buffer, or another mode")
    metrics, scenario = max(clean, key=lambda item: (round(item[0].utilisation, 4),
                                                     -item[0].queue_p99_bytes))
    return Recommendation(mode, scenario, metrics, len(candidates),
                          len(candidates) - len(clean))
