"""The lab's acceptance bench: laser-1 and pm-1 cabled around ocs-lab, in the inventory with
the bench's reference file, and ``msoctl ocs characterize`` measuring ocs-lab through them."""

from __future__ import annotations

import json
from pathlib import Path

from emulators.faults import Fault
from emulators.lab import Lab
from tests.conftest import Msoctl


def test_the_bench_is_in_the_inventory(lab: Lab) -> None:
    from msoctl.inventory import load_inventory

    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    laser, meter = inventory.device("laser-1", "laser"), inventory.device("pm-1", "meter")
    assert laser.labels["bench"] == meter.labels["bench"] == "ocs-lab"
    assert (lab.state_dir / "laser-1.reference.yaml").exists()
    assert "laser-1" in lab.faults("laser-1").owner


def test_characterize_ocs_lab_in_the_lab(lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    out = tmp_path / "char"
    result = msoctl("ocs", "characterize", "ocs-lab", "--laser", "laser-1", "--meter", "pm-1",
                    "--ports", "1-4", "--repeat", "1", "--out", str(out), "-o", "json")
    assert result.code == 0, result.err
    report = json.loads((out / "report.json").read_text())
    assert report["device"] == "ocs-lab" or report.get("ocs") == "ocs-lab"
    shown = msoctl("ocs", "report", str(out))
    assert shown.code == 0 and "PASS" in shown.out
    lab.inject("pm-1", Fault("freeze"))
    frozen = msoctl("ocs", "characterize", "ocs-lab", "--laser", "laser-1", "--meter", "pm-1",
                    "--ports", "1-2", "--repeat", "1", "--out", str(tmp_path / "again"))
    assert frozen.code == 1
    assert frozen.err.startswith("error: ") and len(frozen.err.strip().splitlines()) == 1
