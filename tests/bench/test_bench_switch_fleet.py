"""The switch fleet benchmark still runs and reports what it promises (shape and sanity of
its figures; nothing here depends on how fast anything is)."""

from __future__ import annotations

import math

from tests.support.bench import bench_path, load_bench

BENCH = bench_path("switch_fleet.py")


def test_fleet_bench_reports_every_variant() -> None:
    bench = load_bench(BENCH)
    result = bench.measure(3, 1.0, 2, 1, lambda _: None)
    assert set(result["variants"]) == {"sequential", "parallel_2", "parallel_3"}
    for figures in result["variants"].values():
        assert figures["rpcs_per_switch"] >= 8  # lock .. commit, then verify and confirm
        for key in ("median_wall_seconds", "median_cpu_seconds", "median_server_cpu_seconds",
                    "floor_seconds", "wall_over_floor", "sequential_over_this"):
            assert math.isfinite(figures[key]) and figures[key] > 0, key
    assert result["variants"]["sequential"]["sequential_over_this"] == 1.0
