"""The lab-scale benchmark still runs and reports what it promises (no timing checked)."""

from __future__ import annotations

import contextlib
import io
import json

from tests.support.bench import load_bench, positive
from tests.support.paths import BENCH as BENCH_DIR

BENCH = BENCH_DIR / "lab_scale.py"


def test_lab_scale_benchmark_reports_both_variants() -> None:
    """A small fabric (8 links over 4 OCS, cables of 4) in one process and over two."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(BENCH).main([
            "--links", "8", "--ocs-per-campus", "2", "--ocs-size", "16", "--spans-per-cable",
            "4", "--idle-seconds", "0.3", "--poll-seconds", "0.3", "--cuts", "1", "--json"])
    assert code == 0
    document = json.loads(out.getvalue())
    assert document["benchmark"] == "lab_scale"
    assert document["fabric"] == {"links": 8, "ocs": 4, "ocs_size": 16, "spans_per_cable": 4}
    one, spread = document["variants"]
    assert one["processes"] == ["lab"]
    assert spread["processes"] == ["control", "worker", "worker"]
    for variant in (one, spread):
        assert positive(variant["start_seconds"]) and positive(variant["rss_mb"])
        assert variant["idle_cpu_percent"] >= 0 and positive(variant["remap_seconds"])
        assert positive(variant["polling"]["polls_per_second"])
        assert positive(variant["flat_out"]["polls_per_second"])
        assert variant["flat_out"]["asked_polls_per_second"] is None
        alarms = variant["alarms"]
        assert alarms["cuts"] == 1 and alarms["events_per_cut"] == 8  # 4 spans, 2 ends each
        for key in ("seen_p50_ms", "seen_p99_ms", "device_p50_ms", "device_p99_ms",
                    "all_known_p50_ms"):
            assert positive(alarms[key]), key
    assert spread["rss_mb"] > one["rss_mb"]  # three processes hold more than one
