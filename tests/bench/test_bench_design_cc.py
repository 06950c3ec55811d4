"""The design cc benchmark still runs and reports what it promises: the shape of its JSON
and the sanity of its figures, on a few milliseconds of simulated time (nothing here
depends on speed)."""

from __future__ import annotations

import json

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("design_cc.py")


def test_design_cc_bench_reports_speed_and_step(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(BENCH)
    assert bench.main(["--duration", "0.002", "--rounds", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == {"load", "speed", "step"}
    speed = document["speed"]
    assert speed["steps"] == 4000 and speed["sweep_scenarios"] == 16
    for key in ("cpu_seconds_per_scenario", "microseconds_cpu_per_step",
                "sweep_scenarios_per_second_parallel", "sweep_speed_up"):
        assert positive(speed[key]), key
    assert len(document["step"]) == 8
    for row in document["step"]:
        assert row["mode"] in ("ecn", "switch")
        assert {"utilisation", "queue_p99_bytes", "cnps_per_second"} <= set(row["differences"])
        assert all(value >= 0 for value in row["differences"].values())
        assert row["largest_difference"] == max(row["differences"].values())
