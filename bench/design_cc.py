"""``msoctl design cc``'s solver: how fast it sweeps, and what halving its step changes.

    .venv/bin/python bench/design_cc.py [--duration 0.1] [--rounds 3] [--json]

1. **Speed**: the program's case (30 km, 400G, 8 flows, both feedback modes, the
   thresholds ``msoctl switch plan`` gives) for ``--duration`` seconds of simulated time,
   solved one scenario after another in this process, ``--rounds`` times: CPU and wall
   seconds per scenario and scenarios per second. Then a sweep of 8 distances (1 to 120
   km, both modes: 16 scenarios) through ``compare_all`` on every core, side by side with
   the same 16 solved one after another here: the ratio is the sweep's speed-up.
2. **Step**: a set of cases (the program's; 120 km at 800G with 64 flows; 1 km with 2
   flows; the far bottleneck) solved at the default step and at half of it; for every
   output of :class:`msoctl.design.cc.metrics.Metrics` the relative difference (absolute
   where the default's figure is 0).

Machine load (``os.getloadavg``) is recorded at the start and end. Nothing here asserts
a timing; bench/README.md keeps the figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from msoctl.design.cc.fluid import DEFAULT_STEP_SECONDS, solve
from msoctl.design.cc.metrics import Metrics, measure
from msoctl.design.cc.scenario import FlowClass, Scenario, planned_switch
from msoctl.design.cc.study import compare_all

SWEEP_KM = (1, 18, 35, 52, 69, 86, 103, 120)


def machine_load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1m": one, "5m": five, "15m": fifteen}


def case(km: float, speed_bps: float, flows: int, duration: float, *,
         bottleneck: str = "near") -> Scenario:
    return Scenario(km * 1000, speed_bps, (FlowClass(flows),),
                    planned_switch(km * 1000, speed_bps), bottleneck=bottleneck,
                    duration_seconds=duration)


def timed_solve(scenario: Scenario, mode: str, dt: float = DEFAULT_STEP_SECONDS
                ) -> tuple[Metrics, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    metrics = measure(solve(scenario, mode, dt=dt))
    return metrics, time.process_time() - cpu, time.perf_counter() - wall


def speed(duration: float, rounds: int) -> dict[str, Any]:
    program = case(30, 400e9, 8, duration)
    cpu, wall = [], []
    for _ in range(rounds):
        for mode in ("ecn", "switch"):
            _, used, took = timed_solve(program, mode)
            cpu.append(used)
            wall.append(took)
    sweep = [case(km, 400e9, 8, duration) for km in SWEEP_KM]
    started = time.perf_counter()
    for scenario in sweep:
        for mode in ("ecn", "switch"):
            timed_solve(scenario, mode)
    one_by_one = time.perf_counter() - started
    started = time.perf_counter()
    compare_all(sweep)
    parallel = time.perf_counter() - started
    scenarios = 2 * len(sweep)
    return {
        "simulated_seconds": duration, "step_seconds": DEFAULT_STEP_SECONDS,
        "steps": round(duration / DEFAULT_STEP_SECONDS),
        "cpu_seconds_per_scenario": sorted(cpu)[len(cpu) // 2],
        "wall_seconds_per_scenario": sorted(wall)[len(wall) // 2],
        "microseconds_cpu_per_step": sorted(cpu)[len(cpu) // 2]
        / (duration / DEFAULT_STEP_SECONDS) * 1e6,
        "sweep_scenarios": scenarios,
        "sweep_one_by_one_seconds": one_by_one,
        "sweep_parallel_seconds": parallel,
        "sweep_scenarios_per_second_one_by_one": scenarios / one_by_one,
        "sweep_scenarios_per_second_parallel": scenarios / parallel,
        "sweep_speed_up": one_by_one / parallel,
        "workers": os.cpu_count(),
    }


def differences(coarse: Metrics, fine: Metrics) -> dict[str, float]:
    """Every output's relative change from the default step to half of it."""
    found: dict[str, float] = {}
    for field in dataclasses.fields(Metrics):
        if field.name == "slowdowns":
            for one, other in zip(coarse.slowdowns, fine.slowdowns, strict=True):
                for key in ("mean", "p99"):
                    a, b = getattr(one, key), getattr(other, key)
                    if a is not None and b is not None:
                        found[f"slowdown_{one.size_bytes // 1_000_000}MB_{key}"] = _change(a, b)
            continue
        found[field.name] = _change(getattr(coarse, field.name), getattr(fine, field.name))
    return found


def _change(a: float, b: float) -> float:
    return abs(b - a) / abs(a) if a else abs(b - a)


def step(duration: float) -> list[dict[str, Any]]:
    cases = {
        "30 km 400G 8 flows (the program's)": case(30, 400e9, 8, duration),
        "120 km 800G 64 flows": case(120, 800e9, 64, duration),
        "1 km 400G 2 flows": case(1, 400e9, 2, duration),
        "30 km 400G 8 flows, far bottleneck": case(30, 400e9, 8, duration, bottleneck="far"),
    }
    rows = []
    for name, scenario in cases.items():
        for mode in ("ecn", "switch"):
            coarse, _, _ = timed_solve(scenario, mode)
            fine, _, _ = timed_solve(scenario, mode, DEFAULT_STEP_SECONDS / 2)
            changes = differences(coarse, fine)
            worst = max(changes, key=lambda key: changes[key])
            rows.append({"case": name, "mode": mode, "differences": changes,
                         "largest": worst, "largest_difference": changes[worst],
                         "utilisation": coarse.utilisation})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=0.1,
                        help="simulated seconds per scenario (default 0.1)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    document: dict[str, Any] = {"load": {"start": machine_load()}}
    document["speed"] = speed(options.duration, options.rounds)
    document["step"] = step(options.duration)
    document["load"]["end"] = machine_load()
    if options.json:
        print(json.dumps(document, indent=2))
        return 0
    figures = document["speed"]
    print(f"one scenario of {figures['simulated_seconds'] * 1e3:g} ms "
          f"({figures['steps']:,} steps of {figures['step_seconds'] * 1e6:g} us): "
          f"{figures['cpu_seconds_per_scenario']:.2f} s CPU, "
          f"{figures['microseconds_cpu_per_step']:.2f} us a step")
    print(f"sweep of {figures['sweep_scenarios']} scenarios: "
          f"{figures['sweep_scenarios_per_second_one_by_one']:.2f}/s one by one, "
          f"{figures['sweep_scenarios_per_second_parallel']:.2f}/s on {figures['workers']} "
          f"cores (x{figures['sweep_speed_up']:.2f})")
    for row in document["step"]:
        print(f"{row['case']}, {row['mode']}: utilisation {row['utilisation']:.3f}; "
              f"half the step changes {row['largest']} most, by "
              f"{row['largest_difference']:.2%}")
    print(f"load {document['load']['start']['1m']:.2f} -> {document['load']['end']['1m']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
