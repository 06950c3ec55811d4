"""A study's rows for people (a table per scale), for scripts (one JSON document) and
for spreadsheets (CSV, one line per row).

JSON keys are snake_case with units in their names (``cost_usd_per_gpu``,
``power_watts_per_gpu``, ``latency_ns_max``); a figure that is not available (an
architecture that cannot build the scale, a ratio against zero) is ``null``.
"""

from __future__ import annotations

import csv
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msoctl.design.cost import Costing
from msoctl.design.inputs import speed_text
from msoctl.design.study import Row, Study, baseline_missing
from msoctl.outfile import output

CSV_FIELDS = (
    "gpus", "architecture", "what_if", "buildable", "reason", "servers", "endpoint_ports",
    "planes", "tiers", "switch_hops_max", "chip_hops_max", "latency_ns_max",
    "oversubscription", "switches", "switch_chips", "ocs_ports", "links", "switch_links",
    "transceivers", "cables", "cost_usd", "cost_usd_per_gpu", "cost_usd_per_endpoint_port",
    "power_watts", "power_watts_per_gpu", "power_watts_per_endpoint_port",
    "cost_vs_baseline", "power_vs_baseline",
)
WHAT_IF_LEGEND = {"aec": "AEC in place of optics up to its reach",
                  "lpo": "LPO in place of DSP modules"}


def what_if_text(what_if: Sequence[str]) -> str:
    return "+".join(what_if) if what_if else "-"


def _figures(costing: Costing, row: Row) -> dict[str, Any]:
    fabric = costing.fabric
    inputs = row.inputs
    return {
        "planes": fabric.planes,
        "tiers": len(fabric.tiers),
        "switch_hops_max": fabric.switch_hops_max,
        "chip_hops_max": fabric.chip_hops_max,
        "latency_ns_max": round(costing.latency_ns, 1),
        "oversubscription": round(fabric.oversubscription, 3),
        "switches": fabric.switches,
        "switch_chips": fabric.switch_chips,
        "ocs_ports": fabric.ocs_ports,
        "links": fabric.links_total,
        "switch_links": fabric.switch_links,
        "transceivers": costing.transceivers,
        "cables": costing.cables,
        "cost_usd": round(costing.usd, 2),
        "cost_usd_per_gpu": round(costing.usd / inputs.gpus, 2),
        "cost_usd_per_endpoint_port": round(costing.usd / inputs.endpoint_ports, 2),
        "power_watts": round(costing.watts, 2),
        "power_watts_per_gpu": round(costing.watts / inputs.gpus, 3),
        "power_watts_per_endpoint_port": round(costing.watts / inputs.endpoint_ports, 3),
        "cost_vs_baseline": None if row.cost_vs_baseline is None
        else round(row.cost_vs_baseline, 4),
        "power_vs_baseline": None if row.power_vs_baseline is None
        else round(row.power_vs_baseline, 4),
    }


def row_document(row: Row) -> dict[str, Any]:
    """One row as JSON: the figures, and the detail per tier and per link group."""
    document: dict[str, Any] = {
        "gpus": row.gpus, "architecture": row.architecture, "what_if": list(row.what_if),
        "buildable": row.costing is not None, "reason": row.reason,
        "servers": row.inputs.servers, "endpoint_ports": row.inputs.endpoint_ports,
    }
    costing = row.costing
    if costing is None:
        document.update({key: None for key in CSV_FIELDS if key not in document})
        document.update({"cost_breakdown_usd": None, "tier_detail": [], "link_detail": [],
                         "notes": []})
        return document
    document.update(_figures(costing, row))
    document["cost_breakdown_usd"] = {"switching": round(costing.switching_usd, 2),
                                      "links": round(costing.links_usd, 2)}
    document["tier_detail"] = [{
        "name": t.tier.name, "kind": t.tier.kind, "count": t.tier.count,
        "ports_each": t.tier.ports_each, "ports_used": t.tier.ports_used,
        "chips_each": t.tier.chips_each, "internal_links_each": t.tier.internal_links_each,
        "cost_usd": round(t.usd, 2), "power_watts": round(t.watts, 2),
    } for t in costing.tiers]
    document["link_detail"] = [{
        "role": g.role, "count": g.count, "speed_gbps": g.speed_gbps,
        "reach_class": g.span.reach_class, "length_m": g.span.length_m,
        "distance_m": g.span.distance_m,
        "loss_db": None if g.span.loss_db is None else round(g.span.loss_db, 2),
        "medium": None if g.medium is None else g.medium.name,
        "kind": None if g.medium is None else g.medium.kind,
        "units": g.units, "cost_usd": round(g.usd, 2), "power_watts": round(g.watts, 2),
    } for g in costing.links]
    document["notes"] = list(costing.fabric.notes)
    return document


def document(study: Study, rows: Sequence[Row],
             files: dict[str, str] | None = None) -> dict[str, Any]:
    """The whole study as one JSON document."""
    shape = study.shape
    names = list(dict.fromkeys([study.baseline, *study.architectures]))
    return {
        "inputs": {
            "gpus": list(study.scales), "gpus_per_server": shape.gpus_per_server,
            "nics_per_gpu": shape.nics_per_gpu, "nic_speed_gbps": shape.nic_speed_gbps,
            "radix": shape.radix, "switch_speed_gbps": shape.switch_speed_gbps,
            "link_radix": shape.link_radix, "oversubscription": shape.oversubscription,
            "planes": shape.planes, "architectures": names, "baseline": study.baseline,
            "what_if": list(study.what_ifs), "components": study.table.name,
            "endpoint_links_costed": study.table.endpoint_links,
        },
        "results": [row_document(r) for r in rows],
        "notes": [_no_ratios(study, gpus) for gpus in baseline_missing(study, list(rows))],
        "files": files or {},
    }


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """One line per row, CSV_FIELDS in order; empty cells where a figure is missing.
    Written as msoctl writes every output (:mod:`msoctl.outfile`): a file in full or not
    at all, a device or FIFO written into."""
    with output(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            values = row_document(row)
            values["what_if"] = what_if_text(row.what_if)
            writer.writerow({k: "" if values.get(k) is None else values[k] for k in CSV_FIELDS})


_WIDTH, _WIDE = 80, 100
_WIDE_ONLY = ("tiers", "oversub")  # hops tell the tiers; oversub is mostly the input's
_HEADERS = ("arch", "what-if", "tiers", "hops", "switches", "modules", "usd/gpu", "w/gpu",
            "cost", "power", "oversub")
_NUMERIC = (False, False, True, True, True, True, True, True, True, True, False)


def _ratio_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _cells(row: Row) -> list[str]:
    costing = row.costing
    assert costing is not None
    fabric = costing.fabric
    hops = str(fabric.switch_hops_max) if fabric.chip_hops_max == fabric.switch_hops_max \
        else f"{fabric.switch_hops_max}/{fabric.chip_hops_max}"
    return [row.architecture, what_if_text(row.what_if), str(len(fabric.tiers)), hops,
            f"{fabric.switches:,}", f"{costing.transceivers:,}",
            f"{costing.usd / row.gpus:,.0f}", f"{costing.watts / row.gpus:.1f}",
            _ratio_text(row.cost_vs_baseline), _ratio_text(row.power_vs_baseline),
            f"{fabric.oversubscription:.3g}:1"]


def _render(rows: list[list[str]], wide: bool) -> list[str]:
    keep = [i for i, h in enumerate(_HEADERS) if wide or h not in _WIDE_ONLY]
    widths = {i: max(len(_HEADERS[i]), *(len(r[i]) for r in rows)) for i in keep}

    def line(values: Sequence[str]) -> str:
        return "  ".join(values[i].rjust(widths[i]) if _NUMERIC[i] else
                         values[i].ljust(widths[i]) for i in keep).rstrip()

    return [line([h.upper() for h in _HEADERS]), *(line(r) for r in rows)]


def _no_ratios(study: Study, gpus: int) -> str:
    return (f"{gpus:,} GPUs: no cost or power ratios: the baseline {study.baseline} cannot "
            "build this scale (choose another --baseline to compare against)")


def table_text(study: Study, rows: Sequence[Row], *, wide: bool = False) -> str:
    """One table per scale, the architectures that cannot build it listed under it;
    within 80 columns, or every column within 100 when ``wide``."""
    shape = study.shape
    out: list[str] = []
    for gpus in study.scales:
        at_scale = [r for r in rows if r.gpus == gpus]
        inputs = at_scale[0].inputs
        out.extend(textwrap.wrap(
            f"{gpus:,} GPUs, {inputs.servers:,} servers of {shape.gpus_per_server}, "
            f"{shape.nics_per_gpu} x {speed_text(shape.nic_speed_gbps)} NIC per GPU; "
            f"switches {shape.radix} x {speed_text(shape.switch_speed_gbps)}"
            + (f" = {shape.link_radix} x {speed_text(shape.nic_speed_gbps)}"
               if shape.breakout > 1 else ""),
            width=_WIDE if wide else _WIDTH, subsequent_indent="  "))
        built = [_cells(r) for r in at_scale if r.costing is not None]
        out.extend(_render(built, wide) if built else [])
        notes = [f"not built: {row.reason}" for row in at_scale
                 if row.costing is None and not row.what_if]
        if gpus in baseline_missing(study, at_scale):
            notes.append(_no_ratios(study, gpus))
        for note in notes:
            out.extend(textwrap.wrap(note, width=_WIDE if wide else _WIDTH,
                                     initial_indent="  ", subsequent_indent="    "))
        out.append("")
    legend = [f"cost, power: against {study.baseline} as it is, at the same scale",
              "hops: switches crossed (/ chips crossed, inside big switches)"]
    legend.extend(f"what-if {name}: {WHAT_IF_LEGEND[name]}" for name in study.what_ifs)
    legend.append(f"components: {study.table.name}"
                  + ("" if study.table.endpoint_links else " (NIC links not costed)"))
    return "\n".join(out + legend)
