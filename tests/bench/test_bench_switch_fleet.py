"""The switch fleet benchmark still runs and reports what it promises (shape and sanity of
its figures; nothing here depends on how fast anything is)."""

from __future__ import annotations

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("switch_fleet.py")
FIGURES = ("median_wall_seconds", "wall_per_switch_seconds", "client_cpu_per_switch_seconds",
           "server_cpu_per_switch_seconds", "floor_seconds", "wall_over_floor")
# Per switch, what each transport's apply sends (NETCONF: lock .. commit, then a new
# session's read back and confirm; gNMI: a Set that commits, and one that confirms
# where the Commit extension is offered).
SETS = {"oc_commit": 2, "oc_set": 1, "sonic": 2}


def test_fleet_bench_reports_every_variant_side_by_side(
        capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(BENCH)
    result = bench.measure(3, 1.0, 2, 1, lambda _: None, sweep=True)
    assert set(result["variants"]) == {"netconf", "oc_commit", "oc_set", "sonic",
                                       "netconf_seq", "netconf_all"}
    assert result["ratios_to"] == "netconf" and set(result["ratios"]) == set(result["variants"])
    for label, figures in result["variants"].items():
        for key in FIGURES:
            assert positive(figures[key]), (label, key)
        assert all(positive(value) for value in result["ratios"][label].values()), label
        operations = figures["rpcs_per_switch_by_operation"]
        assert sum(operations.values()) == figures["rpcs_per_switch"], label
        if figures["transport"] == "netconf":
            assert figures["rpcs_per_switch"] >= 8, label
            assert operations["commit (confirmed)"] == operations["commit (confirming)"] == 1
        else:
            assert set(operations) == {"Capabilities", "Get", "Set"}, label
            assert operations["Set"] == SETS[label], label
    assert result["ratios"]["netconf"] == {"wall": 1.0, "client_cpu": 1.0, "server_cpu": 1.0,
                                           "rpcs": 1.0}
    widths = {label: f["parallel"] for label, f in result["variants"].items()}
    assert widths == {"netconf": 2, "oc_commit": 2, "oc_set": 2, "sonic": 2,
                      "netconf_seq": 1, "netconf_all": 3}
    assert not result["variants"]["oc_set"]["commit_confirmed"]
    bench.report(result)
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    for label in result["variants"]:  # the figures, the ratios, the RPCs
        assert rows.count(label) == 3, label
