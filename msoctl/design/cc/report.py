"""``msoctl design cc``'s outputs: the side-by-side table's rows, the sweep's, JSON, CSV and
the plots."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msoctl.design.cc.metrics import Metrics
from msoctl.design.cc.scenario import Scenario
from msoctl.design.cc.study import Comparison
from msoctl.outfile import output, write_output

# ---- one comparison ---------------------------------------------------------------------------

def describe(scenario: Scenario) -> str:
    switch = scenario.switch
    interval = switch.fast_cnp_interval_seconds or scenario.nic.cnp_interval_seconds
    return (f"{scenario.distance_m / 1000:g} km at {scenario.speed_bps / 1e9:g}G, "
            f"{scenario.flows} flow{'' if scenario.flows == 1 else 's'}, "
            f"bottleneck {scenario.bottleneck}, "
            f"{scenario.duration_seconds * 1e3:g} ms; RTT {scenario.rtt_seconds * 1e6:.0f} us; "
            f"ECN {switch.ecn_min_bytes / 1e6:.2f}..{switch.ecn_max_bytes / 1e6:.2f} MB "
            f"up to {switch.ecn_max_probability * 100:g}%, pause at "
            f"{switch.pause_at_bytes / 1e6:.1f} MB, fast CNP every {interval * 1e6:g} us")


def comparison_rows(comparison: Comparison) -> list[list[str]]:
    ecn, switch = comparison.ecn, comparison.switch
    rows = [
        ["utilisation", f"{ecn.utilisation:.1%}", f"{switch.utilisation:.1%}",
         f"{comparison.utilisation_gain:+.1%}"],
        ["queue mean", _mb(ecn.queue_mean_bytes), _mb(switch.queue_mean_bytes), ""],
        ["queue p99", _mb(ecn.queue_p99_bytes), _mb(switch.queue_p99_bytes), ""],
        ["queue max", _mb(ecn.queue_max_bytes), _mb(switch.queue_max_bytes), ""],
        ["PFC paused", f"{ecn.pause_fraction:.2%}", f"{switch.pause_fraction:.2%}", ""],
        ["PAUSE frames", f"{ecn.pause_frames:,}", f"{switch.pause_frames:,}", ""],
        ["lost", _mb(ecn.lost_bytes), _mb(switch.lost_bytes), ""],
        ["marked per second", f"{ecn.marked_per_second:,.0f}",
         f"{switch.marked_per_second:,.0f}", ""],
        ["CNPs per second", f"{ecn.cnps_per_second:,.0f}", f"{switch.cnps_per_second:,.0f}", ""],
    ]
    for index, (one, other) in enumerate(zip(ecn.slowdowns, switch.slowdowns, strict=True)):
        gain = comparison.slowdown_gain(index)
        rows.append([f"FCT slowdown {_size(one.size_bytes)} (mean/p99)", _slow(one.mean, one.p99),
                     _slow(other.mean, other.p99), "" if gain is None else f"{gain:+.1%}"])
    return rows


COMPARISON_HEADERS = ["", "end-to-end ECN", "switch CNP", "gain"]


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    return {"scenario": scenario_document(comparison.scenario),
            "ecn": comparison.ecn.as_dict(), "switch": comparison.switch.as_dict(),
            "utilisation_gain": comparison.utilisation_gain,
            "slowdown_gain": [comparison.slowdown_gain(i)
                              for i in range(len(comparison.ecn.slowdowns))]}


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    switch = scenario.switch
    return {"distance_m": scenario.distance_m, "speed_bps": scenario.speed_bps,
            "flows": scenario.flows, "bottleneck": scenario.bottleneck,
            "duration_seconds": scenario.duration_seconds, "rtt_seconds": scenario.rtt_seconds,
            "ecn_min_bytes": switch.ecn_min_bytes, "ecn_max_bytes": switch.ecn_max_bytes,
            "ecn_max_probability": switch.ecn_max_probability,
            "xoff_bytes": switch.xoff_bytes, "xon_bytes": switch.xon_bytes,
            "buffer_bytes": switch.buffer_bytes,
            "fast_cnp_interval_seconds": switch.fast_cnp_interval_seconds
            or scenario.nic.cnp_interval_seconds}


# ---- sweeps -------------------------------------------------------------------------------------

def swept_value(parameter: str, scenario: Scenario) -> str:
    switch = scenario.switch
    return {"distance": lambda: f"{scenario.distance_m / 1000:g} km",
            "flows": lambda: str(scenario.flows),
            "kmin": lambda: _mb(switch.ecn_min_bytes),
            "kmax": lambda: _mb(switch.ecn_max_bytes),
            "pmax": lambda: f"{switch.ecn_max_probability * 100:g}%"}[parameter]()


def sweep_rows(parameter: str, comparisons: Sequence[Comparison]) -> list[list[str]]:
    return [[swept_value(parameter, c.scenario), f"{c.ecn.utilisation:.1%}",
             f"{c.switch.utilisation:.1%}", f"{c.utilisation_gain:+.1%}",
             _mb(c.ecn.queue_p99_bytes), _mb(c.switch.queue_p99_bytes),
             f"{c.ecn.pause_fraction:.1%}", f"{c.switch.pause_fraction:.1%}"]
            for c in comparisons]


SWEEP_HEADERS = ["", "ECN util", "switch util", "gain", "ECN q p99", "switch q p99",
                 "ECN paused", "switch paused"]
SWEEP_WIDE_ONLY = ("ECN paused", "switch paused")


def write_csv(path: Path, parameter: str | None, comparisons: Sequence[Comparison]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["swept", "value", "mode", "distance_m", "speed_bps", "flows", "bottleneck",
                     "ecn_min_bytes", "ecn_max_bytes", "ecn_max_probability", "utilisation",
                     "queue_mean_bytes", "queue_p99_bytes", "queue_max_bytes",
                     "pause_fraction", "pause_frames", "lost_bytes", "cnps_per_second",
                     "marked_per_second"])
    for comparison in comparisons:
        scenario, switch = comparison.scenario, comparison.scenario.switch
        value = "" if parameter is None else swept_value(parameter, scenario)
        for mode, metrics in (("ecn", comparison.ecn), ("switch", comparison.switch)):
            writer.writerow([parameter or "", value, mode, scenario.distance_m,
                             scenario.speed_bps, scenario.flows, scenario.bottleneck,
                             switch.ecn_min_bytes, switch.ecn_max_bytes,
                             switch.ecn_max_probability, *_metric_cells(metrics)])
    write_output(path, buffer.getvalue())


def _metric_cells(metrics: Metrics) -> list[float | int]:
    return [metrics.utilisation, metrics.queue_mean_bytes, metrics.queue_p99_bytes,
            metrics.queue_max_bytes, metrics.pause_fraction, metrics.pause_frames,
            metrics.lost_bytes, metrics.cnps_per_second, metrics.marked_per_second]


def write_png(path: Path, parameter: str | None, comparisons: Sequence[Comparison]) -> None:
    """A sweep: utilisation of both modes and the gain against the swept value. One
    comparison: nothing to plot against, so its two utilisations as bars."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, (left, right) = pyplot.subplots(1, 2, figsize=(10, 4))
    if parameter is None:
        comparison = comparisons[0]
        left.bar(["end-to-end ECN", "switch CNP"],
                 [comparison.ecn.utilisation * 100, comparison.switch.utilisation * 100])
        left.set_ylabel("utilisation, %")
        right.bar(["end-to-end ECN", "switch CNP"],
                  [comparison.ecn.queue_p99_bytes / 1e6, comparison.switch.queue_p99_bytes / 1e6])
        right.set_ylabel("queue p99, MB")
    else:
        xs = [_axis_value(parameter, c.scenario) for c in comparisons]
        left.plot(xs, [c.ecn.utilisation * 100 for c in comparisons], marker="o",
                  label="end-to-end ECN")
        left.plot(xs, [c.switch.utilisation * 100 for c in comparisons], marker="o",
                  label="switch CNP")
        left.set_ylabel("utilisation, %")
        left.legend()
        right.plot(xs, [c.utilisation_gain * 100 for c in comparisons], marker="o")
        right.axhline(0, color="grey", linewidth=0.5)
        right.set_ylabel("gain of switch CNP, %")
        for axes in (left, right):
            axes.set_xlabel(_AXIS_LABELS[parameter])
    title = describe(comparisons[0].scenario)
    if parameter is not None:
        title = f"sweep of {parameter}; first point: {title}"
    figure.suptitle(title, fontsize=7)
    figure.tight_layout()
    try:
        with output(path, binary=True) as handle:
            figure.savefig(handle, dpi=100, format="png")
    finally:
        pyplot.close(figure)


_AXIS_LABELS = {"distance": "distance, km", "flows": "flows", "kmin": "Kmin, MB",
                "kmax": "Kmax, MB", "pmax": "Pmax, %"}


def _axis_value(parameter: str, scenario: Scenario) -> float:
    switch = scenario.switch
    return {"distance": scenario.distance_m / 1000, "flows": float(scenario.flows),
            "kmin": switch.ecn_min_bytes / 1e6, "kmax": switch.ecn_max_bytes / 1e6,
            "pmax": switch.ecn_max_probability * 100}[parameter]


def _mb(value: float) -> str:
    return f"{value / 1e6:.2f} MB"


def _size(value: int) -> str:
    return f"{value / 1e6:g} MB"


def _slow(mean: float | None, p99: float | None) -> str:
    if mean is None or p99 is None:
        return "unfinished"
    return f"{mean:.2f} / {p99:.2f}"
