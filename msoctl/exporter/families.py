"""Metric tables: every metric a collector exports is one :class:`MetricSpec` row.

A collector's ``describe()`` is its table rendered without samples; its
``collect()`` fills a :class:`Families` built from the same table, so the two
cannot drift apart (and a sample with a label the table does not list fails
at once, in tests, instead of producing a malformed exposition).

Names follow the Prometheus conventions: ``msoctl_<family>_<what>_<unit>``,
base units (``_seconds``, ``_bytes``, ``_celsius``, ``_volts``, ``_amperes``),
``_dbm`` and ``_db`` for optical power and ratios, ``_total`` on counters
only, ``_info`` for facts carried in labels. No sample has a timestamp.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)

from msoctl.exporter.exposition import COUNTER as COUNTER  # the kinds, for the tables
from msoctl.exporter.exposition import GAUGE as GAUGE
from msoctl.exporter.exposition import INFO as INFO
from msoctl.exporter.exposition import render_rows


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its full exposed name (with ``_total`` or ``_info``), type, help text
    and label names, in the order samples give them."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...] = ("device",)

    def __post_init__(self) -> None:
        if self.kind == COUNTER and not self.name.endswith("_total"):
            raise ValueError(f"counter {self.name} must end in _total")
        if self.kind != COUNTER and self.name.endswith("_total"):
            raise ValueError(f"{self.kind} {self.name} must not end in _total")
        if (self.kind == INFO) != self.name.endswith("_info"):
            raise ValueError(f"{self.name}: only info metrics end in _info")

    def family(self) -> Metric:
        """An empty family of this metric (``describe()`` yields these)."""
        if self.kind == GAUGE:
            return GaugeMetricFamily(self.name, self.help, labels=self.labels)
        if self.kind == COUNTER:
            return CounterMetricFamily(self.name, self.help, labels=self.labels)
        return InfoMetricFamily(self.name.removesuffix("_info"), self.help,
                                labels=self.labels)


_Row = tuple[list[str], "float | dict[str, str]"]
"""One sample: its label values in the table's order, and its value (an info
sample's facts)."""


class Families:
    """The families of one probe, filled sample by sample from a device's reading.

    The samples are kept as rows: :meth:`text` writes them straight into the text
    exposition (what building prometheus_client's families and writing those costs
    was most of a probe's CPU), and iterating gives the same samples as
    prometheus_client families (``describe``, tests, anything else)."""

    def __init__(self, specs: Iterable[MetricSpec]):
        self._specs = {spec.name: spec for spec in specs}
        self._rows: dict[str, list[_Row]] = {}

    def add(self, name: str, value: float | bool | None, **labels: str | int) -> None:
        """One sample; ``None`` (the device does not report it) adds nothing."""
        if value is None:
            return
        number = float(value)
        if math.isnan(number):
            return
        spec, rows = self._family(name, labels)
        rows.append(([str(labels[key]) for key in spec.labels], number))

    def info(self, name: str, facts: Mapping[str, str | int | None], **labels: str | int) -> None:
        """One ``_info`` sample (value 1) whose facts become labels; ``None`` facts are
        left out."""
        spec, rows = self._family(name, labels)
        if spec.kind != INFO:
            raise ValueError(f"{name} is not an info metric")
        rows.append(([str(labels[key]) for key in spec.labels],
                     {key: str(value) for key, value in facts.items() if value is not None}))

    def state(self, name: str, current: str | None, states: Iterable[str],
              label: str = "state", /, **labels: str | int) -> None:
        """An enumeration as one gauge per possible state, 1 for the current one and 0
        for the others (the state-set pattern), the state in label ``label``; nothing
        when the state is unknown."""
        if current is None:
            return
        for state in states:
            self.add(name, state == current, **labels, **{label: state})

    def _family(self, name: str, labels: Mapping[str, str | int]) -> tuple[MetricSpec, list[_Row]]:
        spec = self._specs[name]
        if set(labels) != set(spec.labels):
            raise ValueError(f"{name}: labels {sorted(labels)} are not {list(spec.labels)}")
        rows = self._rows.get(name)
        if rows is None:
            rows = self._rows[name] = []
        return spec, rows

    def __iter__(self) -> Iterator[Metric]:
        """The families that have samples, in table order, as prometheus_client's."""
        for name, spec in self._specs.items():
            rows = self._rows.get(name)
            if not rows:
                continue
            family = spec.family()
            for values, value in rows:
                family.add_metric(values, value)  # type: ignore[attr-defined]
            yield family

    def text(self) -> bytes:
        """The families that have samples, in table order, in the text exposition 0.0.4
        (UTF-8): byte for byte what ``generate_latest`` (and
        :func:`msoctl.exporter.exposition.render`) write of :meth:`__iter__`'s families."""
        return render_rows((spec, self._rows[name]) for name, spec in self._specs.items()
                           if self._rows.get(name))


def describe(specs: Iterable[MetricSpec]) -> Iterator[Metric]:
    return (spec.family() for spec in specs)
