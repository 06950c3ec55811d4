"""The lab's acceptance test set: laser-1 and pm-1 cabled around ocs-lab, in the inventory with
the test set's reference file, and ``msoctl ocs characterize`` measuring ocs-lab through them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers.yamlfile import YamlFileError
from emulators.faults import Fault
from emulators.lab import Lab, load_topology
from tests.support import Msoctl


def test_the_test_set_is_in_the_inventory(lab: Lab) -> None:
    """Its instruments carry the label ``bench`` (the test set's first name) naming the
    OCS they test."""
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


_TEST_SET = """
ocs:
  - {name: ocs-x, size: 8}
%s:
  - {ocs: ocs-x, laser: laser-9, meter: pm-9}
"""


def test_a_topology_names_its_test_sets_under_either_name(tmp_path: Path) -> None:
    """``test_sets:`` is the section's name; ``bench:``, its first one, is still read."""
    for key in ("test_sets", "bench"):
        path = tmp_path / f"{key}.yaml"
        path.write_text(_TEST_SET % key, encoding="utf-8")
        (spec,) = load_topology(path).test_sets
        assert (spec.ocs, spec.laser, spec.meter) == ("ocs-x", "laser-9", "pm-9")


def test_a_topology_with_both_names_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(_TEST_SET % "test_sets" + "bench: []\n", encoding="utf-8")
    with pytest.raises(YamlFileError, match=r"'bench'.*old name of test_sets"):
        load_topology(path)
