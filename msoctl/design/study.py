"""A study: architectures against each other at several scales, with what-ifs.

Every architecture is built and costed at every scale, as it is and with each
what-if (and with all of them when more than one is asked). An architecture that
cannot build a scale is a row with the reason and no figures. Cost and power are
normalized against the baseline architecture, as it is, at the same scale; at a scale
the baseline cannot build, every row keeps its own figures and has no ratios
(:func:`baseline_missing` says which scales). The baseline is always among the
architectures shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from msoctl.design.architectures import ARCHITECTURES
from msoctl.design.components import ComponentTable
from msoctl.design.cost import Costing, cost
from msoctl.design.fabric import Fabric, NotBuildable
from msoctl.design.inputs import DesignError, FabricInputs


@dataclass(frozen=True)
class Study:
    """``shape`` holds everything but the GPU count, which each of ``scales`` sets."""

    scales: tuple[int, ...]
    shape: FabricInputs
    architectures: tuple[str, ...]
    baseline: str
    what_ifs: tuple[str, ...]
    table: ComponentTable


@dataclass(frozen=True)
class Row:
    """One architecture at one scale with one set of what-ifs; ``costing`` is None and
    ``reason`` says why when it cannot be built. Ratios are None where the baseline's
    figure is zero."""

    gpus: int
    architecture: str
    what_if: tuple[str, ...]
    inputs: FabricInputs
    costing: Costing | None
    reason: str | None = None
    cost_vs_baseline: float | None = None
    power_vs_baseline: float | None = None


def variants(what_ifs: tuple[str, ...]) -> list[tuple[str, ...]]:
    """As is, each what-if alone, then all together when there are several."""
    chosen = [(), *((w,) for w in what_ifs)]
    if len(what_ifs) > 1:
        chosen.append(tuple(what_ifs))
    return chosen


def _ratio(value: float, base: float) -> float | None:
    return value / base if base > 0 else None


def run(study: Study) -> list[Row]:
    """Every row of ``study``, scale by scale. Raises :class:`DesignError` when the
    inputs are refused or a price is missing."""
    if study.baseline not in ARCHITECTURES:
        raise DesignError(f"no architecture {study.baseline!r}")
    names = list(study.architectures)
    if study.baseline not in names:
        names.insert(0, study.baseline)
    rows: list[Row] = []
    for gpus in study.scales:
        inputs = replace(study.shape, gpus=gpus)
        inputs.check()
        built: dict[str, Fabric | NotBuildable] = {}
        for name in names:
            try:
                built[name] = ARCHITECTURES[name].build(inputs, study.table)
            except NotBuildable as why:
                built[name] = why
        baseline = built[study.baseline]
        base = (cost(baseline, inputs, study.table) if isinstance(baseline, Fabric)
                else None)
        for name in names:
            fabric = built[name]
            for what_if in variants(study.what_ifs):
                if isinstance(fabric, NotBuildable):
                    rows.append(Row(gpus, name, what_if, inputs, None, str(fabric)))
                    continue
                costing = cost(fabric, inputs, study.table, frozenset(what_if))
                if base is None:
                    rows.append(Row(gpus, name, what_if, inputs, costing))
                    continue
                rows.append(Row(gpus, name, what_if, inputs, costing, None,
                                _ratio(costing.usd, base.usd),
                                _ratio(costing.watts, base.watts)))
    return rows


def baseline_missing(study: Study, rows: list[Row]) -> dict[int, str]:
    """The scales the baseline cannot build, each with the reason."""
    return {row.gpus: row.reason or "" for row in rows
            if row.architecture == study.baseline and not row.what_if and row.costing is None}
