"""The probes' own text writer (msoctl/exporter/exposition.py) against prometheus_client's
``generate_latest``, the reference for the text format 0.0.4 (Prometheus's exposition
formats, "Text format details": HELP and TYPE lines, label value escaping of backslash,
double quote and line feed, Go's float format): byte for byte the same on what is hard
to get right, and refusing the types probes do not export."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)

from msoctl.exporter.exposition import render
from msoctl.exporter.families import COUNTER, GAUGE, INFO, Families, MetricSpec


class _Fixed:
    def __init__(self, metrics: list[Metric]):
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self.metrics


def reference(metrics: list[Metric]) -> bytes:
    registry = CollectorRegistry()
    registry.register(_Fixed(metrics))
    return generate_latest(registry)


def awkward() -> list[Metric]:
    gauge = GaugeMetricFamily("msoctl_test_power_dbm", 'Power\\ in "dBm"\nsecond line',
                              labels=["device", "port", "direction"])
    gauge.add_metric(["ocs \\ a", '1"2', "in\ngress"], -3.25)
    gauge.add_metric(["ocs-a", "2", "ingress"], math.inf)
    gauge.add_metric(["ocs-a", "3", "ingress"], -math.inf)
    gauge.add_metric(["ocs-a", "4", "ingress"], math.nan)
    gauge.add_metric(["ocs-a", "5", "ingress"], 1.5e-12)
    gauge.add_metric(["ocs-a", "6", "ingress"], 123456789.0)  # Go writes 1.23456789e+08
    gauge.add_metric(["ocs-a", "7", "ingress"], 0.0)
    counter = CounterMetricFamily("msoctl_test_frames", "Frames.", labels=["device"])
    counter.add_metric(["sw-a"], 2**53, created=1700000000.5)
    info = InfoMetricFamily("msoctl_test", "Identity.", labels=["device"])
    info.add_metric(["ocs-a"], {"serial": "A-1", "zeta": "z", "alpha": "é"})
    odd = GaugeMetricFamily("msoctl_test_odd", "A label name outside the classic set.",
                            labels=["port.name", "device"])
    odd.add_metric(["p1", "ocs-a"], 1.0)
    plain = GaugeMetricFamily("msoctl_test_ports", "No labels.", value=128)
    return [gauge, counter, info, odd, plain, GaugeMetricFamily("msoctl_empty", "None.")]


def test_the_same_bytes_as_generate_latest() -> None:
    metrics = awkward()
    written = render(metrics)
    assert written == reference(awkward())
    assert b'device="ocs \\\\ a",direction="in\\ngress",port="1\\"2"' in written


def test_label_names_sorted_per_sample_whatever_the_order_given() -> None:
    first = GaugeMetricFamily("msoctl_test_a", "A.", labels=["zone", "device"])
    first.add_metric(["z1", "d1"], 1)
    second = GaugeMetricFamily("msoctl_test_a", "A.", labels=["device", "zone"])
    second.add_metric(["d2", "z2"], 2)
    assert render([first, second]) == reference([first, second])
    assert b'msoctl_test_a{device="d2",zone="z2"} 2.0' in render([second])


def test_a_histogram_is_not_a_probes_type() -> None:
    histogram = HistogramMetricFamily("msoctl_test_seconds", "H.",
                                      buckets=[("1.0", 1), ("+Inf", 2)], sum_value=3)
    with pytest.raises(ValueError, match="histogram"):
        render([histogram])


def test_a_probes_rows_written_directly_are_the_same_bytes_as_generate_latest() -> None:
    """:meth:`Families.text` (what a probe answers) against ``generate_latest`` of the same
    families built as prometheus_client's: every kind of sample the tables make (gauges
    with labels given in any order, a state set, info facts with one left out, a
    counter), escaped label values, Go's float format for the extremes, an unreported
    value (``None``, NaN) left out, and a table's family without samples left out."""
    specs = (MetricSpec("msoctl_test_info", INFO, "Identity \\ of\nthe unit.", ("device",)),
             MetricSpec("msoctl_test_power_dbm", GAUGE, "Power.", ("port", "device", "dir")),
             MetricSpec("msoctl_test_state", GAUGE, "State.", ("device", "port", "state")),
             MetricSpec("msoctl_test_errors_total", COUNTER, "Errors.", ("device",)),
             MetricSpec("msoctl_test_unused", GAUGE, "Never filled."),
             MetricSpec("msoctl_test_ports", GAUGE, "Ports.", ()))
    families = Families(specs)
    families.info("msoctl_test_info", {"serial": 'S"1', "model": None, "firmware": "1.0\\2"},
                  device="ocs \\ a")
    for port, dbm in ((1, -3.25), (2, None), (3, math.nan), (10, 1e22), (11, -math.inf),
                      (12, 123456789.0), (13, 5e-324)):
        families.add("msoctl_test_power_dbm", dbm, dir="in\ngress", device="ocs-a", port=port)
    families.state("msoctl_test_state", "failed", ("enabled", "disabled", "failed"),
                   device="ocs-a", port=1)
    families.state("msoctl_test_state", None, ("enabled",), device="ocs-a", port=2)
    families.add("msoctl_test_errors_total", 12, device="ocs-a")
    families.add("msoctl_test_ports", True)
    written = families.text()
    assert written == reference(list(families))
    assert written == render(list(families))
    assert b"msoctl_test_unused" not in written and b'port="2"' not in written
