"""The probes' exposition: Prometheus's text format 0.0.4, written for our families.

``prometheus_client.generate_latest`` checks and escapes every label name of every
sample (its UTF-8 name support); an OCS probe has some 500 samples of 3-4 labels, and
that checking was two thirds of the probe's CPU in the exporter. The label names of a
family's samples are the same sample after sample, so :func:`render` checks each set
of names once per family and leaves the per-sample work to escaping label values and
formatting numbers. The text is byte for byte what ``generate_latest`` writes (same
suffixes, HELP and TYPE lines, sorted labels, number format, escaping), for the
types the probes export: gauges, counters and info metrics; any other type, or a name
outside the classic character set, is handed to prometheus_client's own rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from prometheus_client.core import Metric
from prometheus_client.openmetrics.exposition import escape_label_name, escape_metric_name
from prometheus_client.utils import floatToGoString

if TYPE_CHECKING:
    from msoctl.exporter.families import MetricSpec

GAUGE, COUNTER, INFO = "gauge", "counter", "info"
"""The kinds of metric the probes write (an info metric goes out as a gauge of 1)."""

_CLASSIC_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_EXPOSED_TYPE = {"gauge": "gauge", "counter": "counter", "info": "gauge"}
_SUFFIX = {"counter": "_total", "info": "_info"}
_number = cast(Callable[[float], str], floatToGoString)  # Go's float format, as the client's
_Names = dict[tuple[str, ...], list[tuple[str, str]]]


def render(metrics: Iterable[Metric]) -> bytes:
    """The text exposition of ``metrics`` (UTF-8), as ``generate_latest`` writes it.

    Raises ValueError for a metric type the probes do not export (histograms, summaries:
    those are the exporter's own metrics, written by prometheus_client)."""
    output: list[str] = []
    sample_names: dict[str, str] = {}
    for metric in metrics:
        exposed_type = _EXPOSED_TYPE.get(metric.type)
        if exposed_type is None:
            raise ValueError(f"{metric.name}: type {metric.type} is not a probe's")
        name = escape_metric_name(metric.name + _SUFFIX.get(metric.type, ""))
        help_text = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
        output.append(f"# HELP {name} {help_text}\n# TYPE {name} {exposed_type}\n")
        created: list[str] = []
        names: _Names = {}
        for sample in metric.samples:
            exposed = sample_names.get(sample.name)
            if exposed is None:
                exposed = sample_names[sample.name] = escape_metric_name(sample.name)
            line = _sample_line(exposed, sample.labels, sample.value, sample.timestamp, names)
            (created if sample.name == metric.name + "_created" else output).append(line)
        if created:
            created_name = escape_metric_name(metric.name + "_created")
            output.append(f"# HELP {created_name} {help_text}\n"
                          f"# TYPE {created_name} gauge\n")
            output.extend(created)
    return "".join(output).encode("utf-8")


_Rows = list[tuple[list[str], float | dict[str, str]]]


def render_rows(families: Iterable[tuple[MetricSpec, _Rows]]) -> bytes:
    """The text exposition of metric tables' rows (see :class:`Families`), as
    :func:`render` writes the same samples as prometheus_client families: one HELP and
    TYPE line per family, labels sorted by name, Go's float format. ValueError for a
    label name outside the classic character set (the tables have none)."""
    output: list[str] = []
    for spec, rows in families:
        exposed_type = _EXPOSED_TYPE[spec.kind]
        help_text = spec.help.replace("\\", r"\\").replace("\n", r"\n")
        output.append(f"# HELP {spec.name} {help_text}\n# TYPE {spec.name} {exposed_type}\n")
        for key in spec.labels:
            if not _CLASSIC_LABEL.fullmatch(key):
                raise ValueError(f"{spec.name}: label name {key!r} is not a classic one")
        if spec.kind == INFO:
            for values, facts in rows:
                labels = dict(zip(spec.labels, values, strict=True))
                labels.update(cast(dict[str, str], facts))
                text = ",".join(f'{key}="{_escape_value(labels[key])}"'
                                for key in sorted(labels))
                output.append(f"{spec.name}{{{text}}} 1.0\n" if text
                              else f"{spec.name} 1.0\n")
            continue
        order = sorted(range(len(spec.labels)), key=spec.labels.__getitem__)
        keys = [spec.labels[index] for index in order]
        for values, value in rows:
            text = ",".join(f'{key}="{_escape_value(values[index])}"'
                            for key, index in zip(keys, order, strict=True))
            number = _number(cast(float, value))
            output.append(f"{spec.name}{{{text}}} {number}\n" if text
                          else f"{spec.name} {number}\n")
    return "".join(output).encode("utf-8")


def _sample_line(exposed: str, labels: dict[str, str], value: float, timestamp: object,
                 names: _Names) -> str:
    """One sample's line; ``names`` caches, per set of label names, their order and
    exposed form."""
    stamp = "" if timestamp is None else f" {int(float(timestamp) * 1000):d}"  # type: ignore[arg-type]
    if not labels:
        return f"{exposed} {_number(value)}{stamp}\n"
    keys = tuple(labels)
    order = names.get(keys)
    if order is None:  # this family's first sample with these label names
        order = names[keys] = sorted(
            (key, key if _CLASSIC_LABEL.fullmatch(key) else escape_label_name(key))
            for key in keys)
    text = ",".join(f'{exposed_key}="{_escape_value(labels[key])}"'
                    for key, exposed_key in order)
    return f"{exposed}{{{text}}} {_number(value)}{stamp}\n"


def _escape_value(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value
