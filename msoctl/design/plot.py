"""The study as a figure: network cost per GPU against scale, and power per GPU, one
line per architecture, read at a glance (PNG, Agg backend):

- each architecture has a colour and a marker of its own, so that lines that cross or
  run close stay apart; architectures whose figures coincide at every scale are one
  line, labelled with all their names (``rail-only = bigswitch``), not lines hidden
  under each other;
- a what-if is drawn (broken, in the architecture's colour) only where it changes the
  figures; a legend of its own says which break is which what-if, and the what-ifs
  that change nothing for an architecture are said in its label;
- the legends go under the panels, in columns, so none is cut at the figure's edge.

matplotlib is imported only here, when a figure is asked for: it takes longer to
import than the whole study takes to compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msoctl.design.inputs import speed_text
from msoctl.design.report import what_if_text
from msoctl.design.study import Row, Study, variants
from msoctl.outfile import output

_STYLES: tuple[Any, ...] = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<")
SAME = 0.001
"""Two series are one line when every point differs by less than this fraction."""

Series = dict[int, tuple[float, float]]
"""GPUs -> (cost per GPU USD, power per GPU W)."""


def _series(rows: Sequence[Row], name: str, what_if: tuple[str, ...]) -> Series:
    return {r.gpus: (r.costing.usd / r.gpus, r.costing.watts / r.gpus) for r in rows
            if r.architecture == name and r.what_if == what_if and r.costing is not None}


def _same(a: Series, b: Series) -> bool:
    if not a or a.keys() != b.keys():
        return False
    return all(abs(x - y) <= SAME * max(abs(x), abs(y), 1e-9)
               for gpus in a for x, y in zip(a[gpus], b[gpus], strict=True))


def drawn(study: Study, rows: Sequence[Row]
          ) -> list[tuple[str, list[tuple[tuple[str, ...], Series]]]]:
    """What the figure draws: per line group (architectures whose figures coincide), its
    legend label and its lines (the as-is one first, then each what-if that changes it)."""
    names = list(dict.fromkeys([study.baseline, *study.architectures]))
    base = {name: _series(rows, name, ()) for name in names}
    groups: list[list[str]] = []
    for name in names:
        if not base[name]:
            continue
        twin = next((g for g in groups if _same(base[g[0]], base[name])), None)
        if twin is None:
            groups.append([name])
        else:
            twin.append(name)
    result = []
    for group in groups:
        lines: list[tuple[tuple[str, ...], Series]] = [((), base[group[0]])]
        unchanged, alike = [], []
        for what_if in (w for w in variants(study.what_ifs) if w):
            changed = _series(rows, group[0], what_if)
            if not changed or _same(changed, base[group[0]]):
                unchanged.append(what_if_text(what_if))
                continue
            drawn_as = next((w for w, points in lines[1:] if _same(points, changed)), None)
            if drawn_as is not None:  # drawn already under another what-if
                alike.append(f"{what_if_text(what_if)} as {what_if_text(drawn_as)}")
            else:
                lines.append((what_if, changed))
        notes = ([f"{', '.join(unchanged)}: no change"] if unchanged else []) + alike
        label = " = ".join(group) + (f" ({'; '.join(notes)})" if notes else "")
        result.append((label, lines))
    return result


def write_png(path: Path, study: Study, rows: Sequence[Row]) -> None:
    """Write the two panels to ``path`` (:mod:`msoctl.outfile`)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.lines import Line2D

    what_ifs = [w for w in variants(study.what_ifs) if w]
    styles: dict[tuple[str, ...], Any] = {(): "-", **dict(zip(what_ifs, _STYLES,
                                                               strict=False))}
    figure, (cost_axes, power_axes) = pyplot.subplots(1, 2, figsize=(13, 5.6))
    colours = pyplot.get_cmap("tab10")
    handles = []
    used: set[tuple[str, ...]] = {()}
    for index, (label, lines) in enumerate(drawn(study, rows)):
        used.update(what_if for what_if, _ in lines)
        colour, marker = colours(index % 10), _MARKERS[index % len(_MARKERS)]
        for what_if, points in lines:
            scales = sorted(points)
            for column, axes in enumerate((cost_axes, power_axes)):
                axes.plot(scales, [points[g][column] for g in scales],
                          linestyle=styles.get(what_if, "--"), marker=marker, markersize=5,
                          color=colour, alpha=0.9)
        handles.append(Line2D([], [], color=colour, marker=marker, label=label))
    styles_legend = [Line2D([], [], color="black", linestyle=styles[w],
                            label=what_if_text(w) if w else "as is")
                     for w in [(), *what_ifs] if w in styles and w in used]
    shape = study.shape
    for axes, what in ((cost_axes, "network cost per GPU (USD)"),
                       (power_axes, "network power per GPU (W)")):
        axes.set_xscale("log")
        axes.set_xlabel("GPUs")
        axes.set_ylabel(what)
        axes.set_ylim(bottom=0)
        axes.grid(True, which="both", alpha=0.3)
    figure.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.01, 0.0),
                  ncol=2, fontsize="small", title="architecture")
    if len(styles_legend) > 1:
        figure.legend(handles=styles_legend, loc="lower right", bbox_to_anchor=(0.99, 0.0),
                      ncol=1, fontsize="small", title="what-if")
    figure.suptitle(
        f"{shape.gpus_per_server} GPUs per server, {shape.nics_per_gpu} x "
        f"{speed_text(shape.nic_speed_gbps)} NIC per GPU, switches {shape.radix} x "
        f"{speed_text(shape.switch_speed_gbps)}; components: {study.table.name}",
        fontsize="medium")
    rows_of_legend = max(-(-len(handles) // 2), len(styles_legend))
    figure.tight_layout(rect=(0, min(0.45, 0.06 + 0.045 * rows_of_legend), 1, 1))
    try:
        with output(path, binary=True) as handle:
            figure.savefig(handle, dpi=100, format="png")
    finally:
        pyplot.close(figure)
