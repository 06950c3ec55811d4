"""Spans and cables in lab topologies (emulators/lab/topology.py): a span is a fiber
pair between two OCS, a cable the spans that fail together; the older form (a
``cables:`` entry with ``fibers:``) is a span in a cable of its own. Unmanaged switches
(``management: none``) are their optics only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from drivers.yamlfile import YamlFileError
from emulators.faults import Fault, FaultError
from emulators.lab import Lab, load_topology
from emulators.lab.backend import LocalBackend
from msoctl.inventory import load_inventory

# Two 8x8 OCS; cable-a (working) holds span-1 and span-2, cable-b (protection) span-3,
# which protects both links; span-4 names no cable: a cable of its own.
CABLED = """\
name: cabled
ocs:
  - {name: ocs-x, size: 8, campus: x}
  - {name: ocs-y, size: 8, campus: y}
switches:
  - {name: sw-x, campus: x, ports: 2, cable_length_km: 20.01, management: none}
  - {name: sw-y, campus: y, ports: 2, cable_length_km: 20.01, management: none}
patches:
  - {from: sw-x:tx1, to: ocs-x:1, count: 2}
  - {from: ocs-x:9, to: sw-x:rx1, count: 2}
  - {from: sw-y:tx1, to: ocs-y:1, count: 2}
  - {from: ocs-y:9, to: sw-y:rx1, count: 2}
cables:
  - {name: cable-a, role: working, length_km: 20, loss_db_per_km: 0.25}
  - {name: cable-b, role: protection, length_km: 24}
spans:
  - name: span-1
    cable: cable-a
    fibers:
      - {from: ocs-x:16, to: ocs-y:8}
      - {from: ocs-y:16, to: ocs-x:8}
  - name: span-2
    cable: cable-a
    connector_loss_db: 0.8
    fibers:
      - {from: ocs-x:15, to: ocs-y:7}
      - {from: ocs-y:15, to: ocs-x:7}
  - name: span-3
    cable: cable-b
    fibers:
      - {from: ocs-x:14, to: ocs-y:6}
      - {from: ocs-y:14, to: ocs-x:6}
  - name: span-4
    length_km: 5
    role: spare
    fibers:
      - {from: ocs-x:13, to: ocs-y:5}
      - {from: ocs-y:13, to: ocs-x:5}
links:
  - {name: link-1, a: "sw-x:Ethernet1", b: "sw-y:Ethernet1", working: span-1, protection: span-3}
  - {name: link-2, a: "sw-x:Ethernet2", b: "sw-y:Ethernet2", working: span-2, protection: span-3}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "topology.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(text: str, fragment: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if fragment in line)


def test_spans_run_in_the_cables_they_name(tmp_path: Path) -> None:
    topology = load_topology(_write(tmp_path, CABLED))
    assert [(s.name, s.cable, s.role, s.length_km) for s in topology.spans] == [
        ("span-1", "cable-a", "working", 20.0), ("span-2", "cable-a", "working", 20.0),
        ("span-3", "cable-b", "protection", 24.0), ("span-4", "span-4", "spare", 5.0)]
    assert [(c.name, c.spans, len(c.fibers)) for c in topology.cables] == [
        ("cable-a", ("span-1", "span-2"), 4), ("cable-b", ("span-3",), 2),
        ("span-4", ("span-4",), 2)]
    one = topology.span("span-1")
    assert one is not None
    assert [(f.name, f.span, f.cable, f.loss_db_per_km) for f in one.fibers] == [
        ("span-1/1", "span-1", "cable-a", 0.25), ("span-1/2", "span-1", "cable-a", 0.25)]
    two = topology.span("span-2")
    assert two is not None and two.fibers[0].connector_loss_db == 0.8  # its own connectors
    assert [(link.working, link.protection) for link in topology.links] == [
        ("span-1", "span-3"), ("span-2", "span-3")]  # span-3 protects both


def test_the_older_form_is_a_span_in_a_cable_of_its_own() -> None:
    topology = load_topology()
    assert [(s.name, s.cable) for s in topology.spans] == [("span-1", "span-1"),
                                                            ("span-2", "span-2")]
    assert [(c.name, c.spans) for c in topology.cables] == [("span-1", ("span-1",)),
                                                             ("span-2", ("span-2",))]


# (what is wrong, text replaced, its replacement, the fragment on the line named, the field,
#  a piece of the message)
BROKEN = [
    ("unknown cable", "    cable: cable-b\n", "    cable: cable-z\n", "cable: cable-z", "cable",
     "no cable 'cable-z'"),
    ("span length in a cable", "    connector_loss_db: 0.8\n", "    length_km: 3\n",
     "length_km: 3", "length_km", "its cable's length_km"),
    ("span role in a cable", "    connector_loss_db: 0.8\n", "    role: spare\n",
     "role: spare", "role", "its cable's role"),
    ("unknown span field", "    connector_loss_db: 0.8\n", "    colour: red\n", "colour: red",
     "colour", "unknown field"),
    ("span named like a cable", "name: span-3\n", "name: cable-a\n", "- name: cable-a", "name",
     "defined twice"),
    ("protection in the working cable", "working: span-2, protection: span-3",
     "working: span-2, protection: span-1", "name: link-2", "protection",
     "span-1 is in cable-a with the working span span-2"),
    ("two links on one working span", "working: span-2, protection: span-3",
     "working: span-1, protection: span-3", "name: link-2", "working",
     "span-1 already carries link 'link-1'"),
    ("a span without its own length", "    length_km: 5\n", "", "name: span-4", None,
     "field 'length_km' is required"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "field", "message"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_errors_name_the_file_the_line_and_the_field(
        tmp_path: Path, old: str, new: str, fragment: str, field: str | None,
        message: str) -> None:
    assert old in CABLED
    text = CABLED.replace(old, new, 1)
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert error.startswith(f"{path}:{_line_of(text, fragment)}: "), error
    if field is not None:
        assert f"field '{field}'" in error
    assert message in error and "\n" not in error


def test_a_cable_no_span_runs_in_is_refused(tmp_path: Path) -> None:
    text = CABLED.replace("  - {name: cable-b, role: protection, length_km: 24}\n",
                          "  - {name: cable-b, role: protection, length_km: 24}\n"
                          "  - {name: cable-c, length_km: 24}\n")
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError, match=f":{_line_of(text, 'cable-c')}: cable 'cable-c': "
                       "no span runs in it: a cable needs at least one fiber"):
        load_topology(path)


def test_a_cable_cut_cuts_its_spans_and_nothing_else(tmp_path: Path) -> None:
    """The lab: a cable takes ``cable_cut`` and ``fiber_cut`` (every fiber of its spans,
    at once), a span ``fiber_cut`` (both its fibers); unmanaged switches are their optics:
    light reaches their receivers, nothing serves their management."""
    with Lab(tmp_path / "lab", load_topology(_write(tmp_path, CABLED)),
             serial_consoles=False) as lab:
        backend = LocalBackend(lab)
        targets = backend.fault_targets()
        assert targets["cable-a"] == ["cable_cut", "fiber_cut"]
        assert targets["span-1"] == targets["span-4"] == ["fiber_cut"]
        assert "sw-x" not in targets and not lab.switches and not lab.snmp
        injected = backend.inject("cable-a", Fault("cable_cut"))
        assert injected["fibers"] == ["span-1/1", "span-1/2", "span-2/1", "span-2/2"]
        assert {name for name, fiber in lab.fibers.items() if fiber.cut} == set(
            injected["fibers"])
        status = backend.status()
        cables = {c["name"]: c for c in status["cables"]}
        assert cables["cable-a"]["cut"] and cables["cable-a"]["spans"] == ["span-1", "span-2"]
        assert not cables["cable-b"]["cut"]
        spans = {s["name"]: s for s in status["spans"]}
        assert spans["span-2"]["cut"] and spans["span-2"]["ocs"] == ["ocs-x", "ocs-y"]
        assert not spans["span-3"]["cut"]
        assert len(backend.clear("cable-a", None)) == 4
        with pytest.raises(FaultError, match="span-3 does not support fault 'cable_cut'"):
            backend.inject("span-3", Fault("cable_cut"))
        backend.inject("span-3", Fault("fiber_cut"))
        assert {n for n, f in lab.fibers.items() if f.cut} == {"span-3/1", "span-3/2"}
        lab.clear("span-3")

        # the optics of an unmanaged switch: sw-x:tx1 -> ocs-x 1->16 -> span-1 -> ocs-y
        # 8->9 -> sw-y:rx1
        lab.ocs["ocs-x"].add((1,), (16,))
        lab.ocs["ocs-y"].add((8,), (9,))
        time.sleep(0.1)  # the lab's clock is real time: both beams settle (about 30 ms)
        assert lab.optics.power_dbm("sw-y:rx1") > -15
        switch = next(d for d in status["devices"] if d["name"] == "sw-y")
        assert switch["management"] == "none" and switch["serving"] == {}

        document = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
        entries = {d["name"]: d for d in document["devices"]}
        assert entries["sw-x"] == {"name": "sw-x", "kind": "switch", "transport": "none",
                                   "labels": {"campus": "x", "lab": "cabled", "role": "switch"}}
        assert [s["name"] for s in document["spans"]] == ["span-1", "span-2", "span-3", "span-4"]
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        assert inventory.device("sw-x").netconf is None
        assert inventory.links["link-2"].protection is not None
        assert inventory.links["link-2"].protection.name == "span-3"
