"""What every collector reads from the emulated lab, written by the probes' own text writer
(msoctl/exporter/exposition.py) and by prometheus_client's ``generate_latest``: the same
bytes for every device kind and module (Prometheus's text format 0.0.4), so the faster
writer changes nothing that Prometheus, promtool or the dashboards see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric

from emulators.lab import Lab
from msoctl.exporter.exposition import render
from msoctl.exporter.probe import COLLECTORS
from msoctl.inventory import load_inventory

PROBES = (("ocs-a", "ocs"), ("amp-1", "amp"), ("sw-a", "switch"), ("sw-b", "cpo"))


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    return shared_lab


class _Fixed:
    def __init__(self, metrics: list[Metric]):
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self.metrics


@pytest.mark.parametrize(("name", "module"), PROBES)
def test_a_probe_of_every_kind_writes_what_generate_latest_writes(lab: Lab, name: str,
                                                                  module: str) -> None:
    device = load_inventory(lab.state_dir / "inventory.yaml").device(name)
    collector = COLLECTORS[(device.kind, module)](device, timeout_seconds=10.0)
    metrics = list(collector.collect())  # one reading, written both ways
    collector.run_cleanups()
    assert collector.error is None, collector.error
    registry = CollectorRegistry()
    registry.register(_Fixed(metrics))
    expected = generate_latest(registry)
    assert render(metrics) == expected
    assert expected.count(b"\n") > 20  # a whole reading, not an empty one
