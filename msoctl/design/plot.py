"""The study as a figure: network cost per GPU against scale, and power per GPU, one
line per architecture (solid as it is, broken for each what-if). PNG, Agg backend.

matplotlib is imported only here, when a figure is asked for: it takes longer to
import than the whole study takes to compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from msoctl.design.inputs import speed_text
from msoctl.design.report import what_if_text
from msoctl.design.study import Row, Study, variants
from msoctl.outfile import output

_STYLES = ("-", "--", ":", "-.")


def write_png(path: Path, study: Study, rows: Sequence[Row]) -> None:
    """Write the two panels to ``path`` (a temporary file renamed into place)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, (cost_axes, power_axes) = pyplot.subplots(1, 2, figsize=(13, 5.2))
    names = list(dict.fromkeys([study.baseline, *study.architectures]))
    colours = pyplot.get_cmap("tab10")
    for index, name in enumerate(names):
        for style, what_if in zip(_STYLES, variants(study.what_ifs), strict=False):
            points = [r for r in rows if r.architecture == name and r.what_if == what_if
                      and r.costing is not None]
            if not points:
                continue
            label = name if not what_if else f"{name} {what_if_text(what_if)}"
            scales = [r.gpus for r in points]
            for axes, values in (
                    (cost_axes, [r.costing.usd / r.gpus for r in points if r.costing]),
                    (power_axes, [r.costing.watts / r.gpus for r in points if r.costing])):
                axes.plot(scales, values, style, marker="o", markersize=4,
                          color=colours(index % 10), label=label)
    shape = study.shape
    for axes, what in ((cost_axes, "network cost per GPU (USD)"),
                       (power_axes, "network power per GPU (W)")):
        axes.set_xscale("log")
        axes.set_xlabel("GPUs")
        axes.set_ylabel(what)
        axes.set_ylim(bottom=0)
        axes.grid(True, which="both", alpha=0.3)
    power_axes.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    figure.suptitle(
        f"{shape.gpus_per_server} GPUs per server, {shape.nics_per_gpu} x "
        f"{speed_text(shape.nic_speed_gbps)} NIC per GPU, switches {shape.radix} x "
        f"{speed_text(shape.switch_speed_gbps)}; components: {study.table.name}",
        fontsize="medium")
    figure.tight_layout()
    try:
        with output(path, binary=True) as handle:
            figure.savefig(handle, dpi=100, format="png")
    finally:
        pyplot.close(figure)
