"""The telemetry surfaces benchmark still runs and reports what it promises: the shape of
its JSON and the sanity of its figures, on one tiny switch per surface and a handful of
targets at scale (nothing here depends on speed)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("telemetry_surfaces.py")
SNMP = {"entity_sensor", "mso_cpo", "mso_cpo_cpc"}
GNMI = {"gnmi_openconfig", "gnmi_sonic"}
PER_SAMPLE = ("client_cpu_seconds_per_sample", "agent_cpu_seconds_per_sample",
              "wall_seconds_per_sample")
TARGETS, INTERVALS = 3, 2


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value >= 0


def check_load(load: Any) -> None:
    assert set(load) == {"start", "end"}
    for moment in load.values():
        assert set(moment) == {"1m", "5m", "15m"} and all(finite(v) for v in moment.values())


def test_telemetry_surfaces_bench_reports_both_parts(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(BENCH)
    assert bench.main([
        "--ports", "1", "--lanes", "2", "--samples", "2", "--rounds", "1",
        "--sample-seconds", "0.5", "--idle-seconds", "0.5", "--targets", str(TARGETS),
        "--fleet-processes", "2", "--scale-ports", "1", "--interval", "1",
        "--intervals", str(INTERVALS),
        "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert document["cpus"] >= 1 and document["date"]
    check_load(document["load"])

    surfaces = document["surfaces"]
    assert (surfaces["ports"], surfaces["lanes_per_port"], surfaces["samples"],
            surfaces["rounds"]) == (1, 2, 2, 1)
    assert surfaces["entity_layout"] == "sonic" and surfaces["on_change_poll_seconds"] == 0.5
    check_load(surfaces["load"])
    assert set(surfaces["variants"]) == SNMP | GNMI
    for label, figures in surfaces["variants"].items():
        assert all(positive(figures[key]) for key in PER_SAMPLE), label
        assert figures["samples"] == 2 and len(figures["rounds"]) == 1, label
        # every surface read the one port's two lanes
        assert (figures["ports"], figures["lanes"]) == (1, 2), label
    for label in GNMI:
        figures = surfaces["variants"][label]
        assert 1 <= figures["intervals_with_notifications"] <= 2, label
        assert figures["notifications_per_sample"] > 0, label
        assert finite(figures["reading_cpu_seconds_per_sample"]), label
        assert set(figures["idle"]) == {"client_cpu_per_second", "agent_cpu_per_second"}
        assert all(finite(value) for value in figures["idle"].values()), label
    assert surfaces["ratios_to"] == "mso_cpo" and set(surfaces["ratios"]) == SNMP | GNMI
    assert surfaces["ratios"]["mso_cpo"] == {"client_cpu": 1.0, "agent_cpu": 1.0, "wall": 1.0}
    for ratios in surfaces["ratios"].values():
        assert set(ratios) == {"client_cpu", "agent_cpu", "wall"}
        assert all(positive(value) for value in ratios.values())

    gnmi, snmp = document["scale"]["gnmi"], document["scale"]["snmp"]
    for part in (gnmi, snmp):
        assert (part["targets"], part["intervals"], part["interval_seconds"]) == \
            (TARGETS, INTERVALS, 1.0)
        assert part["fleet_processes"] == 2 and (part["ports"], part["lanes_per_port"]) == (1, 2)
        check_load(part["load"])
        assert positive(part["client_cpu_per_target_per_second"])
        assert finite(part["fleet_cpu_per_target_per_second"])
        assert part["process_peak"]["threads"] >= 1
    assert gnmi["model"] == "openconfig" and gnmi["start"]["synced"] == TARGETS
    assert gnmi["checks"] == TARGETS * INTERVALS
    missed = gnmi["missed_checks"]
    assert set(missed) == {"stale", "failed"}
    assert 0 <= missed["stale"] + missed["failed"] <= gnmi["checks"]
    assert 0 <= gnmi["intervals_without_notifications"] <= TARGETS * INTERVALS
    assert finite(gnmi["streams_cpu_per_target_per_second"])
    # the streams live on one event loop: no thread per stream
    assert 1 <= gnmi["process_peak"]["python_threads"] < TARGETS + 16
    assert snmp["surface"] == "entity-sensor" and snmp["polls_due"] == TARGETS * INTERVALS
    assert sum(snmp["polls"].values()) == snmp["polls_due"]
    assert snmp["missed_polls"] == snmp["polls"]["failed"] + snmp["polls"]["skipped"]
    ratios = document["scale"]["ratio_gnmi_over_snmp"]
    assert positive(ratios["client_cpu_per_target_per_second"])

    text = bench.report(document)
    assert "part 1" in text and "part 2" in text and "gNMI / SNMP" in text
    for label in SNMP | GNMI:
        assert label in text
