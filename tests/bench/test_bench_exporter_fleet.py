"""The fleet benchmark still runs and reports what it promises: a tiny run (8 emulated
targets of every kind, 2 shards under 2 real Prometheus servers scraping every second for
6 s, a small burst, one CPO/CPC comparison with an 8-port agent), its JSON shape and the
sanity of its figures; nothing here depends on how fast anything is."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from tests.support.bench import load_bench
from tests.support.paths import BENCH as BENCH_DIR
from tests.support.peers import in_ci, require_executable

BENCH = BENCH_DIR / "exporter_fleet.py"


def positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


@pytest.mark.timeout(300)  # real Prometheus servers scraping: minutes on a busy machine
def test_fleet_bench_reports_every_part() -> None:
    require_executable("prometheus", debian_package="prometheus")
    if in_ci() or shutil.which("prometheus-snmp-exporter"):
        require_executable("prometheus-snmp-exporter",
                           debian_package="prometheus-snmp-exporter")
        cpo_samples = 1
    else:
        cpo_samples = 0
    bench = load_bench(BENCH)
    result = json.loads(json.dumps(bench.measure(8, 2, 1.0, 0.1, 10, cpo_samples,
                                                 lambda _: None, cpo_ports=8)))
    fleet = result["fleet"]
    assert fleet["kinds"] == {"ocs": 5, "switch": 1, "amp": 1, "cpo": 1}
    assert fleet["targets"] == 8 and fleet["shards"] == 2
    assert fleet["scrapes_made"] > 0 and fleet["scrapes_due"] > 0
    assert fleet["missed_scrapes"] == (fleet["scrapes_not_made"] + fleet["scrapes_failed"]
                                       + fleet["devices_down"])
    assert fleet["targets_active"] == 8 and fleet["targets_never_scraped"] == 0
    for key in ("probe_p50_seconds", "probe_p99_seconds", "exporter_cpu_ms_per_target_scrape"):
        assert positive(fleet[key]), key
    by_kind = fleet["emulator_cores_by_kind"]
    assert set(by_kind) == {"ocs", "switch", "amp", "cpo"}
    assert all(cores >= 0 for cores in by_kind.values())
    assert math.isclose(sum(by_kind.values()), fleet["emulator_cores"], abs_tol=0.01)
    timeline = fleet["timeline"]  # every stored scrape since the exporters started
    assert timeline and [row["t"] for row in timeline] == sorted(row["t"] for row in timeline)
    assert sum(row["made"] for row in timeline) >= fleet["scrapes_made"]
    assert any(row["window"] for row in timeline) and not timeline[0]["window"]
    assert all(row["failed"] <= row["made"] for row in timeline)
    sampled = [row for row in timeline if row.get("host_busy_cores") is not None]
    assert sampled and all(row["host_busy_cores"] > 0 and row["host_steal_cores"] >= 0
                           for row in sampled)  # the whole machine's, beside each party's
    for kind in ("ocs", "switch", "amp", "cpo"):
        assert all(row[f"{kind}_emulators_cores"] >= 0 for row in sampled)
    burst = result["burst"]
    assert burst["probes"] == 10 and burst["up"] == 10
    assert 1 <= burst["readings"] <= 10 and burst["shared"] + burst["readings"] == 10
    assert len(burst["max_seconds_by_target"]) == 5
    assert all(positive(seconds) for seconds in burst["max_seconds_by_target"].values())
    comparison = result["cpo_cpu"]
    if cpo_samples == 0:
        assert "skipped" in comparison
        return
    for side in ("msoctl", "msoctl_pysnmp_decode", "snmp_exporter"):
        assert comparison[side]["complete"] == 1
        # an 8-port reading may take less than one clock tick (10 ms) of snmp_exporter
        assert comparison[side]["cpu_seconds_per_reading"] >= 0
    assert all(r >= 0 for r in comparison["cpu_ratio_over_snmp_exporter"].values())
