"""The CPO walk benchmark still runs and reports what it promises: the shape of its JSON
and the sanity of its figures, on a tiny switch (nothing here depends on speed)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench
from tests.support.peers import require_executable

BENCH = bench_path("cpo_walk.py")
VARIANTS = {"collector_warm", "collector_cold", "snmpbulkwalk"}
FIGURES = {"median_wall_seconds", "median_requests", "median_variables",
           "median_client_cpu_seconds", "median_agent_cpu_seconds", "samples"}


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0


def test_cpo_walk_bench_reports_every_variant_and_ratio(
        capsys: pytest.CaptureFixture[str]) -> None:
    require_executable("snmpbulkwalk", debian_package="snmp")
    bench = load_bench(BENCH)
    assert bench.main(["--ports", "2", "--lanes", "2", "--rounds", "1", "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert (document["ports"], document["lanes_per_port"], document["rounds"]) == (2, 2, 1)
    assert document["max_repetitions"] == 50
    assert set(document["variants"]) == VARIANTS
    for label, figures in document["variants"].items():
        assert set(figures) == FIGURES, label
        assert all(finite(figures[key]) for key in FIGURES - {"samples"}), label
        assert figures["median_wall_seconds"] > 0 and figures["median_requests"] >= 1
        assert len(figures["samples"]) == 1
    # Every instance of both MIBs. The agent also serves the system group (8) and its
    # sysORTable (6 modules, 3 columns), ifNumber and ifTableLastChange, ifTable (18
    # columns) and ifXTable (19) for each of the 2 ports, the snmp group (8), snmpEngine
    # (4) and usmStats (6).
    served = document["agent_instances"] - 8 - 6 * 3 - 2 - (18 + 19) * 2 - 8 - 4 - 6
    assert document["variants"]["snmpbulkwalk"]["median_variables"] == served
    assert document["variants"]["collector_warm"]["median_variables"] >= served
    assert set(document["ratios"]) == {"collector_warm", "collector_cold"}
    for ratios in document["ratios"].values():
        assert set(ratios) == {"wall_over_snmpbulkwalk", "requests_over_snmpbulkwalk",
                               "variables_over_snmpbulkwalk", "client_cpu_over_snmpbulkwalk"}
        assert all(finite(value) and value > 0 for value in ratios.values())
    assert "collector_warm / snmpbulkwalk" in bench.report(document)
