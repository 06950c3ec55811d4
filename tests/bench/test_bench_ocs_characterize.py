"""bench/ocs_characterize.py still runs and reports what it promises (JSON shape only)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def test_characterization_bench_json(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(bench_path("ocs_characterize.py"))
    assert bench.main(["--size", "4", "--repeat", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)  # one JSON document and nothing else
    assert document["benchmark"] == "ocs_characterize"
    assert (document["size"], document["repeat"], document["clock"]) == (4, 1, "RealClock")
    assert document["paths"] == 16 and isinstance(document["pass"], bool)
    assert document["steps"] == 4 + 3  # a permutation per step, then three crosstalk phases
    for key in ("wall_seconds", "report_seconds", "per_step_seconds",
                "ocs_switching_median_seconds", "measured_switching_median_seconds",
                "floor_seconds", "floor_sum_of_reported_seconds", "mean_log_window_seconds"):
        assert positive(document[key]), key
    assert set(document["ratios"]) == {"wall_over_floor", "measuring_over_floor"}
    assert all(positive(v) for v in document["ratios"].values())
    assert "wall / floor" in bench.render_table(document)
