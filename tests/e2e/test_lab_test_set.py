"""The lab's acceptance test set: laser-1 and pm-1 cabled around ocs-lab, in the inventory with
the test set's reference file, and ``msoctl ocs characterize`` measuring ocs-lab through them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers.yamlfile import YamlFileError
from emulators.clock import SteppedClock
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


_KINDS = """
ocs:
  - {name: ocs-x, size: 4}
  - {name: ocs-y, size: 4}
  - {name: ocs-z, size: 4}
  - {name: ocs-w, size: 4}
test_sets:
  - {ocs: ocs-x, laser: laser-x, meter: pm-x}
  - {ocs: ocs-y, laser: laser-y, meter: pm-y, plain: true}
  - {ocs: ocs-z, laser: laser-z, meter: pm-z, plain: true, meter_all_ports: true,
     error_queries: all}
  - {ocs: ocs-w, laser: laser-w, meter: pm-w, meter_logging: false}
"""


def test_a_test_set_says_what_its_instruments_lack(tmp_path: Path) -> None:
    """``plain: true`` is a laser and a meter without any optional feature; each key
    given beside it wins; the lab builds the instruments so."""
    path = tmp_path / "kinds.yaml"
    path.write_text(_KINDS, encoding="utf-8")
    topology = load_topology(path)
    kinds = {spec.ocs: (spec.laser_range, spec.meter_all_ports, spec.meter_logging,
                        spec.error_queries) for spec in topology.test_sets}
    assert kinds == {"ocs-x": (True, True, True, "all"), "ocs-y": (False, False, False, "next"),
                     "ocs-z": (False, True, False, "all"), "ocs-w": (True, True, False, "all")}
    lab = Lab(tmp_path / "state", topology, clock=SteppedClock(), serial_consoles=False)
    try:
        built = {spec.ocs: lab.test_sets[spec.ocs] for spec in topology.test_sets}
        assert {name: (t.laser.range_queries, t.meter.all_ports, t.meter.logging_supported,
                       t.laser.error_extras and t.meter.error_extras)
                for name, t in built.items()} == {
            name: (*kind[:3], kind[3] == "all") for name, kind in kinds.items()}
    finally:
        lab.stop()


@pytest.mark.parametrize("entry, message", [
    ("{ocs: ocs-x, laser: laser-x, meter: pm-x, plain: yes-please}", "plain"),
    ("{ocs: ocs-x, laser: laser-x, meter: pm-x, error_queries: some}", "error_queries"),
    ("{ocs: ocs-x, laser: laser-x, meter: pm-x, meter_range: false}", "meter_range"),
])
def test_a_wrong_instrument_kind_names_its_field(tmp_path: Path, entry: str,
                                                 message: str) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(f"ocs:\n  - {{name: ocs-x, size: 4}}\ntest_sets:\n  - {entry}\n",
                    encoding="utf-8")
    with pytest.raises(YamlFileError, match=message):
        load_topology(path)
