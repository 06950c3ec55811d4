"""The exporter benchmark still runs and reports what it promises: a tiny run (three
emulated OCS targets, one probe per lab device), its JSON shape and the sanity of its
figures; nothing here depends on how fast anything is."""

from __future__ import annotations

import json
import math
import shutil

from tests.support.bench import bench_path, load_bench
from tests.support.peers import in_ci, require_executable

BENCH = bench_path("exporter_probe.py")
KIND_KEYS = {"probes", "down", "readings", "p50_seconds", "p99_seconds",
             "exporter_cpu_seconds_per_probe", "of_which_snmp_worker_seconds"}


def positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


def test_exporter_bench_reports_every_part() -> None:
    if in_ci() or shutil.which("prometheus-snmp-exporter"):
        require_executable("prometheus-snmp-exporter",
                           debian_package="prometheus-snmp-exporter")
        snmp_samples = 1
    else:
        snmp_samples = 0
    bench = load_bench(BENCH)
    result = json.loads(json.dumps(bench.measure(1, 3, 2, 1, snmp_samples, lambda _: None)))
    assert set(result["per_kind"]) == {"ocs", "amp", "switch", "cpo"}
    for figures in result["per_kind"].values():
        assert set(figures) == KIND_KEYS and figures["down"] == 0
        # every probe measured is a reading of its own, none answered from a shared one
        assert figures["readings"] == figures["probes"]
        assert positive(figures["p50_seconds"]) and figures["p99_seconds"] >= 0
    fleet = result["fleet"]
    assert fleet["probes"] == 3 and fleet["down"] == 0 and fleet["clients"] == 2
    for key in ("wall_seconds", "probes_per_second", "p50_seconds", "p99_seconds"):
        assert positive(fleet[key]), key
    comparison = result["snmp_exporter"]
    if snmp_samples == 0:
        assert "skipped" in comparison
        return
    for side in ("msoctl", "snmp_exporter"):
        assert positive(comparison[side]["p50_seconds"])
        assert comparison[side]["series"] > 1000  # every table, both ways
    ratios = comparison["ratios_msoctl_over_snmp_exporter"]
    assert all(positive(ratios[key]) for key in ("p50_seconds", "cpu_seconds_per_scrape",
                                                 "series"))
