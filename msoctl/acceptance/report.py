"""The characterization's results: report.json, measurements.csv, figures, the summary.

Everything here is computed from ``steps.jsonl`` and the settings, so a
report can be written again (other limits, a lost file) without measuring.

Figures, per measured quantity:

- insertion loss: the mean over the rounds of ``launch - received`` per path,
  where ``launch`` is the laser's set power less the reference's launch loss;
- repeatability: per path, half the spread between its rounds, a +- figure
  as datasheets give it (needs two rounds or more);
- crosstalk: what an unconnected egress port receives from its one lit
  neighbour, relative to the power launched into that neighbour's ingress
  port; a reading within 10 dB of the meter's floor is an upper bound;
- switching time: every port's, every step (see :mod:`msoctl.acceptance.characterize`).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from msoctl.acceptance.characterize import Limits, Settings, iter_rows
from msoctl.words import counted

REPORT_FILE = "report.json"
CSV_FILE = "measurements.csv"
HISTOGRAM_FILE = "switching_histogram.png"
CSV_FIELDS = (
    "step", "kind", "round", "wavelength_nm", "ingress", "egress", "meter_port", "launch_dbm",
    "received_dbm", "insertion_loss_db", "factory_insertion_loss_db", "switching_seconds",
    "crosstalk_db", "aggressor_ingress", "aggressor_egress", "at_meter_floor",
)


def heatmap_file(wavelength_nm: float) -> str:
    return f"insertion_loss_{wavelength_nm:g}nm.png"


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _wavelength_section(settings: Settings, wavelength: float, rows: list[dict[str, Any]],
                        limits: Limits) -> tuple[dict[str, Any], list[str]]:
    failures: list[str] = []
    losses: dict[tuple[int, int], list[float | None]] = defaultdict(list)
    factory: dict[tuple[int, int], float] = {}
    for row in rows:
        if row["kind"] != "insertion_loss" or row["ingress"] is None:
            continue
        key = (row["ingress"], row["egress"])
        losses[key].append(row["insertion_loss_db"])
        if row["factory_insertion_loss_db"] is not None:
            factory[key] = row["factory_insertion_loss_db"]
    expected = {(i, e) for i in settings.ingress for e in settings.egress}
    dark = sorted(k for k in expected if k not in losses or None in losses[k])
    means = {k: statistics.fmean(v for v in values if v is not None)
             for k, values in losses.items() if k not in dark}
    matrix = [[_r(means.get((i, e)), 3) for e in settings.egress] for i in settings.ingress]
    il: dict[str, Any] = {"paths": len(means), "paths_without_light": len(dark)}
    if means:
        worst = max(means, key=lambda k: means[k])
        il.update({"min_db": _r(min(means.values())), "mean_db": _r(statistics.fmean(
            means.values())), "max_db": _r(means[worst]),
            "worst_path": {"ingress": worst[0], "egress": worst[1]}})
        deltas = [means[k] - factory[k] for k in means if k in factory]
        il["measured_minus_factory_db"] = None if not deltas else {
            "mean": _r(statistics.fmean(deltas)), "max_abs": _r(max(map(abs, deltas)))}
    il["pass"] = bool(means) and not dark and il["max_db"] <= limits.max_insertion_loss_db
    if dark:
        failures.append(f"{wavelength:g} nm: {counted(len(dark), 'path')} without light, e.g. "
                        + ", ".join(f"{i}:{e}" for i, e in dark[:4]))
    elif means and not il["pass"]:
        failures.append(f"{wavelength:g} nm: insertion loss {il['max_db']:.2f} dB on "
                        f"{worst[0]}:{worst[1]} above {limits.max_insertion_loss_db:g} dB")
    il["matrix_db"] = {"ingress": list(settings.ingress), "egress": list(settings.egress),
                       "values": matrix}

    spread = {k: (max(v for v in losses[k] if v is not None)
                  - min(v for v in losses[k] if v is not None)) / 2
              for k in means if len(losses[k]) >= 2}
    repeatability: dict[str, Any] = {"rounds": settings.repeat, "paths": len(spread)}
    if spread:
        worst_r = max(spread, key=lambda k: spread[k])
        repeatability.update({"max_half_range_db": _r(spread[worst_r]),
                              "worst_path": {"ingress": worst_r[0], "egress": worst_r[1]},
                              "pass": spread[worst_r] <= limits.max_repeatability_db})
        if not repeatability["pass"]:
            failures.append(f"{wavelength:g} nm: repeatability +-{spread[worst_r]:.3f} dB on "
                            f"{worst_r[0]}:{worst_r[1]} beyond +-"
                            f"{limits.max_repeatability_db:g} dB")
    else:
        repeatability.update({"max_half_range_db": None, "worst_path": None, "pass": None})

    crosstalk_rows = [r for r in rows if r["kind"] == "crosstalk" and r["aggressor_ingress"]]
    crosstalk: dict[str, Any] = {"measurements": len(crosstalk_rows),
                                 "at_meter_floor": sum(1 for r in crosstalk_rows
                                                       if r["at_meter_floor"])}
    valued = [r for r in crosstalk_rows if r["crosstalk_db"] is not None]
    if valued:
        worst_x = max(valued, key=lambda r: r["crosstalk_db"])
        crosstalk.update({
            "max_db": worst_x["crosstalk_db"],
            "median_db": _r(statistics.median(r["crosstalk_db"] for r in valued), 3),
            "worst": {"aggressor_ingress": worst_x["aggressor_ingress"],
                      "aggressor_egress": worst_x["aggressor_egress"],
                      "victim_egress": worst_x["egress"]},
            "pass": worst_x["crosstalk_db"] <= limits.max_crosstalk_db})
        if not crosstalk["pass"]:
            failures.append(f"{wavelength:g} nm: crosstalk {worst_x['crosstalk_db']:.1f} dB "
                            f"from {worst_x['aggressor_ingress']}:{worst_x['aggressor_egress']} "
                            f"into {worst_x['egress']} above {limits.max_crosstalk_db:g} dB")
    else:
        crosstalk.update({"max_db": None, "median_db": None, "worst": None,
                          "pass": None if not crosstalk_rows else True})
    section = {"wavelength_nm": wavelength, "insertion_loss": il,
               "repeatability": repeatability, "crosstalk": crosstalk}
    return section, failures


def _switching_section(records: Sequence[Mapping[str, Any]],
                       limits: Limits) -> tuple[dict[str, Any], list[str], list[float]]:
    times: list[float] = []
    unsettled = 0
    for record in records:
        for value in record["switching_seconds"].values():
            if value is None:
                unsettled += 1
            else:
                times.append(float(value))
    reported = [float(r["ocs_switching_seconds"]) for r in records
                if r.get("ocs_switching_seconds") is not None]
    section: dict[str, Any] = {"samples": len(times), "unsettled": unsettled,
                               "steps_remeasured": sum(1 for r in records if r.get("remeasured"))}
    failures: list[str] = []
    if times:
        ordered = sorted(times)
        section.update({
            "min_seconds": _r(ordered[0], 5), "median_seconds": _r(statistics.median(ordered), 5),
            "p95_seconds": _r(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)],
                              5),
            "max_seconds": _r(ordered[-1], 5), "mean_seconds": _r(statistics.fmean(ordered), 5),
            "pass": ordered[-1] <= limits.max_switching_seconds and not unsettled,
        })
        if ordered[-1] > limits.max_switching_seconds:
            failures.append(f"switching time {ordered[-1] * 1000:.1f} ms above "
                            f"{limits.max_switching_seconds * 1000:g} ms")
    else:
        section.update({"min_seconds": None, "median_seconds": None, "p95_seconds": None,
                        "max_seconds": None, "mean_seconds": None, "pass": None})
    if unsettled:
        section["pass"] = False
        failures.append(f"{counted(unsettled, 'switching')} not settled within the logging window")
    section["ocs_reported"] = {
        "steps": len(reported),
        "median_seconds": _r(statistics.median(reported), 5) if reported else None,
        "max_seconds": _r(max(reported), 5) if reported else None}
    return section, failures, times


def analyse(settings: Settings, records: Sequence[Mapping[str, Any]], limits: Limits,
            extra: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                             list[float]]:
    """The report document, the CSV rows, and every switching time (seconds)."""
    rows = list(iter_rows(settings, records))
    failures: list[str] = []
    sections = []
    for wavelength in settings.wavelengths_nm:
        section, problems = _wavelength_section(
            settings, wavelength, [r for r in rows if r["wavelength_nm"] == wavelength], limits)
        sections.append(section)
        failures.extend(problems)
    switching, problems, times = _switching_section(records, limits)
    failures.extend(problems)
    verdicts = [s[k]["pass"] for s in sections for k in ("insertion_loss", "repeatability",
                                                           "crosstalk")]
    verdicts.append(switching["pass"])
    document: dict[str, Any] = {
        "device": settings.device,
        **(dict(extra) if extra else {}),
        "settings": {k: v for k, v in settings.as_dict().items() if k != "test_set"},
        "limits": asdict(limits),
        "paths": len(settings.ingress) * len(settings.egress),
        "steps": len(records),
        "wavelengths": sections,
        "switching": switching,
        "pass": not failures and all(v is not False for v in verdicts),
        "failures": failures,
    }
    return document, rows, times


def write_csv(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if row.get(k) is None else row[k] for k in CSV_FIELDS})
    tmp.replace(path)


def write_figures(directory: Path, document: Mapping[str, Any],
                  times: list[float]) -> dict[str, Any]:
    """The insertion-loss heatmaps and the switching-time histogram (PNG).

    Drawn on figures of their own, not pyplot's (no global state, no GUI backend), with
    fixed margins: laying the text out to fit (``tight_layout``) was half of a figure's
    cost, for labels that are the same every time.
    """
    from matplotlib.figure import Figure

    files: dict[str, Any] = {"insertion_loss_heatmaps": [], "switching_histogram": None}
    device = document["device"]
    for section in document["wavelengths"]:
        matrix = section["insertion_loss"]["matrix_db"]
        values = [[math.nan if v is None else v for v in row] for row in matrix["values"]]
        figure = Figure(figsize=(7.5, 6.5))
        axes = figure.add_subplot()
        image = axes.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
        figure.colorbar(image, ax=axes, label="insertion loss (dB)")
        for ports, setter in ((matrix["egress"], axes.set_xticks),
                              (matrix["ingress"], axes.set_yticks)):
            every = max(1, len(ports) // 16)
            setter(range(0, len(ports), every), [str(p) for p in ports[::every]])
        axes.set_xlabel("egress port")
        axes.set_ylabel("ingress port")
        axes.set_title(f"{device}: insertion loss at {section['wavelength_nm']:g} nm")
        name = heatmap_file(section["wavelength_nm"])
        figure.subplots_adjust(left=0.1, right=0.97, bottom=0.09, top=0.94)
        figure.savefig(directory / name, dpi=100)
        files["insertion_loss_heatmaps"].append(name)
    figure = Figure(figsize=(7.5, 4.5))
    axes = figure.add_subplot()
    if times:
        millis = [t * 1000 for t in times]
        width = max(0.1, (max(millis) - min(millis)) / 40)
        count = max(1, math.ceil((max(millis) - min(millis)) / width))
        edges = [min(millis) - width / 2 + k * width for k in range(count + 2)]
        axes.hist(millis, bins=edges, color="tab:blue")
    limit = document["limits"]["max_switching_seconds"] * 1000
    axes.axvline(limit, color="tab:red", linestyle="--", label=f"limit {limit:g} ms")
    axes.set_xlabel("switching time (ms)")
    axes.set_ylabel("port switchings")
    axes.set_title(f"{device}: switching time, {len(times)} port switchings")
    axes.legend()
    figure.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.91)
    figure.savefig(directory / HISTOGRAM_FILE, dpi=100)
    files["switching_histogram"] = HISTOGRAM_FILE
    return files


def write_report(directory: Path, settings: Settings, records: Sequence[Mapping[str, Any]],
                 limits: Limits, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write report.json, measurements.csv and the figures; return the report."""
    document, rows, times = analyse(settings, records, limits, extra)
    write_csv(directory / CSV_FILE, rows)
    document["files"] = {"report": REPORT_FILE, "measurements": CSV_FILE,
                         **write_figures(directory, document, times)}
    tmp = directory / f".{REPORT_FILE}.tmp"
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(directory / REPORT_FILE)
    return document


def _verdict(value: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "-"}[value]


def summary_rows(document: Mapping[str, Any]) -> list[list[Any]]:
    """Rows for the summary table: what, wavelength, measured, limit, verdict."""
    limits = document["limits"]
    rows: list[list[Any]] = []
    for section in document["wavelengths"]:
        wl = f"{section['wavelength_nm']:g} nm"
        il = section["insertion_loss"]
        if il.get("max_db") is not None:
            rows.append(["insertion loss", wl,
                         f"{il['min_db']:.2f}..{il['max_db']:.2f} dB, mean {il['mean_db']:.2f}",
                         f"<= {limits['max_insertion_loss_db']:g} dB", _verdict(il["pass"])])
        if il["paths_without_light"]:
            rows.append(["paths without light", wl, il["paths_without_light"], "0", "FAIL"])
        rep = section["repeatability"]
        rows.append(["repeatability", wl, "-" if rep["max_half_range_db"] is None
                     else f"+-{rep['max_half_range_db']:.3f} dB over {rep['rounds']} rounds",
                     f"+-{limits['max_repeatability_db']:g} dB", _verdict(rep["pass"])])
        xt = section["crosstalk"]
        rows.append(["crosstalk", wl, "-" if xt["max_db"] is None
                     else f"{xt['max_db']:.1f} dB worst, {xt['measurements']} ports",
                     f"<= {limits['max_crosstalk_db']:g} dB", _verdict(xt["pass"])])
    sw = document["switching"]
    measured = "-" if sw["max_seconds"] is None else (
        f"{sw['median_seconds'] * 1000:.1f} ms median, {sw['max_seconds'] * 1000:.1f} ms max")
    rows.append(["switching time", "", measured,
                 f"<= {limits['max_switching_seconds'] * 1000:g} ms", _verdict(sw["pass"])])
    return rows
