"""A whole OCS characterization against its floor: switch steps times switching time.

Serves an emulated acceptance test set (``emulators.instruments.acceptancelab``: an
NxN OCS, ``laser-1`` through a 1xN fan-out on every ingress port, ``pm-1``
with a port on every egress port) on the real clock, and runs
``msoctl ocs characterize`` in this process, as an operator would, through
pyvisa on loopback.

The floor is what no characterization with this schedule can beat: one
reconfiguration per switch step, each taking the OCS's switching time (what
the device itself reports after each step, ``:OXC:LC:STIM?``). The ratio
``wall / floor`` is what the measuring costs on top: the meter's logging
window (longer than the switching it must see whole), a single reading per
step (its averaging time), the SCPI round trips, the emulators' own work and
the report (CSV and two PNG figures), which is also timed on its own.

Run: ``.venv/bin/python bench/ocs_characterize.py [--size N] [--repeat N] [--json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emulators.clock import RealClock
from emulators.instruments.acceptancelab import AcceptanceLab
from msoctl.acceptance.characterize import Limits, RunState, Settings, TestSet
from msoctl.acceptance.report import write_report
from msoctl.cli import run

DEFAULT_SIZE = 64
DEFAULT_REPEAT = 3


def _settings(stored: dict[str, Any]) -> Settings:
    test_set = TestSet(
        {int(k): v for k, v in stored["test_set"]["launch_loss_db"].items()},
        {int(k): v for k, v in stored["test_set"]["meter_ports"].items()})
    return Settings(**{**stored, "ingress": tuple(stored["ingress"]),
                       "egress": tuple(stored["egress"]),
                       "wavelengths_nm": tuple(stored["wavelengths_nm"]), "test_set": test_set})


def run_benchmark(*, size: int, repeat: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-characterize-") as scratch, \
            AcceptanceLab(Path(scratch) / "test-set", size=size, clock=RealClock()) as lab:
        out = Path(scratch) / "out"
        inventory = str(lab.state_dir / "inventory.yaml")
        captured = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(captured):
            code = run(["-i", inventory, "ocs", "characterize", "ocs-dut", "--laser", "laser-1",
                        "--meter", "pm-1", "--out", str(out), "--repeat", str(repeat),
                        "-o", "json"])
        wall = time.perf_counter() - started
        if code not in (0, 1):
            raise RuntimeError(f"msoctl ocs characterize exited {code}")
        report = json.loads(captured.getvalue())
        state = RunState(out)
        records = state.records()
        settings = _settings(state.load()["settings"])
        started = time.perf_counter()
        write_report(out, settings, records, Limits())
        report_seconds = time.perf_counter() - started
    reported = [r["ocs_switching_seconds"] for r in records
                if r.get("ocs_switching_seconds") is not None]
    switching = statistics.median(reported)
    steps = len(records)
    floor = steps * switching
    return {
        "benchmark": "ocs_characterize",
        "size": size,
        "repeat": repeat,
        "clock": "RealClock",
        "paths": report["paths"],
        "steps": steps,
        "pass": report["pass"],
        "wall_seconds": round(wall, 3),
        "report_seconds": round(report_seconds, 3),
        "per_step_seconds": round((wall - report_seconds) / steps, 5),
        "ocs_switching_median_seconds": round(switching, 5),
        "measured_switching_median_seconds": report["switching"]["median_seconds"],
        "floor_seconds": round(floor, 3),
        "floor_sum_of_reported_seconds": round(sum(reported), 3),
        "mean_log_window_seconds": round(statistics.fmean(r["window_seconds"]
                                                          for r in records), 5),
        "steps_remeasured": sum(1 for r in records if r.get("remeasured")),
        "ratios": {
            "wall_over_floor": round(wall / floor, 3),
            "measuring_over_floor": round((wall - report_seconds) / floor, 3),
        },
    }


def render_table(doc: dict[str, Any]) -> str:
    ratios = doc["ratios"]
    lines = [
        f"OCS characterization, {doc['size']}x{doc['size']} ({doc['paths']} paths), "
        f"{doc['repeat']} round(s), {doc['steps']} switch steps, {doc['clock']}",
        f"  wall time                 {doc['wall_seconds']:9.2f} s",
        f"  of which report (CSV+PNG) {doc['report_seconds']:9.2f} s",
        f"  per switch step           {doc['per_step_seconds'] * 1000:9.1f} ms "
        f"(mean logging window {doc['mean_log_window_seconds'] * 1000:.1f} ms)",
        f"  OCS switching (reported)  {doc['ocs_switching_median_seconds'] * 1000:9.1f} ms "
        f"median; measured by the meter {doc['measured_switching_median_seconds'] * 1000:.1f} ms",
        f"  floor = steps x switching {doc['floor_seconds']:9.2f} s",
        f"  wall / floor              {ratios['wall_over_floor']:9.2f}",
        f"  measuring / floor         {ratios['measuring_over_floor']:9.2f}  (without the report)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE,
                        help=f"OCS size N (NxN), 2..64 (default {DEFAULT_SIZE})")
    parser.add_argument("--repeat", type=int, default=DEFAULT_REPEAT,
                        help=f"rounds, as msoctl's --repeat (default {DEFAULT_REPEAT})")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if not 2 <= args.size <= 64:
        parser.error("--size must be 2..64")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    doc = run_benchmark(size=args.size, repeat=args.repeat)
    print(json.dumps(doc, indent=2) if args.json else render_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
