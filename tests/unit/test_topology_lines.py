"""Topology errors name the file, the line and the field in every section: the amplifiers,
a cable's fibers and the links (test_topology.py covers ocs, transceivers, switches,
patches and cables)."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.yamlfile import YamlFileError
from emulators.lab.topology import default_topology_text, load_topology

# Three OCSes: span-1 joins ocs-a and ocs-b (one fiber each way), span-2 joins ocs-a
# and ocs-c, span-3 is one fiber only. sw-a's Ethernet2 is patched nowhere.
THREE = """\
name: three
ocs:
  - {name: ocs-a, size: 4}
  - {name: ocs-b, size: 4}
  - {name: ocs-c, size: 4}
switches:
  - {name: sw-a, ports: 2, cable_length_km: 10}
  - {name: sw-b, ports: 2, cable_length_km: 10}
patches:
  - {from: sw-a:tx1, to: ocs-a:1}
  - {from: ocs-a:5, to: sw-a:rx1}
  - {from: sw-b:tx1, to: ocs-b:1, count: 2}
  - {from: ocs-b:5, to: sw-b:rx1, count: 2}
cables:
  - name: span-1
    length_km: 10
    fibers:
      - {from: ocs-a:8, to: ocs-b:4}
      - {from: ocs-b:8, to: ocs-a:4}
  - name: span-2
    length_km: 10
    fibers:
      - {from: ocs-a:7, to: ocs-c:4}
      - {from: ocs-c:8, to: ocs-a:3}
  - name: span-3
    length_km: 10
    fibers:
      - {from: ocs-a:6, to: ocs-b:3}
links:
  - name: link-1
    a: "sw-a:Ethernet1"
    b: "sw-b:Ethernet1"
    working: span-1
"""


def _load(tmp_path: Path, text: str) -> str:
    path = tmp_path / "topology.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert error.startswith(f"{path}:"), error
    assert "\n" not in error
    return error.removeprefix(f"{path}:")


def _line_of(text: str, fragment: str) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if fragment in line]
    assert len(lines) == 1, f"{fragment!r} is on lines {lines}"
    return lines[0]


def test_the_three_ocs_topology_parses(tmp_path: Path) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text(THREE, encoding="utf-8")
    [link] = load_topology(path).links
    assert (link.a, link.b, link.working, link.protection) == (
        "sw-a:Ethernet1", "sw-b:Ethernet1", "span-1", None)


# (what is wrong, text replaced, its replacement, the fragment on the line named,
#  the field named, a piece of the message)
DEFAULT_BROKEN = [
    ("unknown amplifier field", "{name: amp-1, campus: b}",
     "{name: amp-1, campus: b, colour: red}", "colour: red", "colour", "unknown field"),
    ("gain range upside down", "{name: amp-1, campus: b}",
     "{name: amp-1, campus: b, gain_min_db: 30}", "gain_min_db: 30", "gain_max_db",
     "more than gain_min_db (30.0)"),
    ("gain above 40 dB", "{name: amp-1, campus: b}", "{name: amp-1, campus: b, gain_max_db: 50}",
     "gain_max_db: 50", "gain_max_db", "at most 40 dB"),
    ("output limit out of range", "{name: amp-1, campus: b}",
     "{name: amp-1, campus: b, output_power_max_dbm: 40}", "output_power_max_dbm: 40",
     "output_power_max_dbm", "-10..30 dBm"),
    ("amplifier named like a switch", "{name: amp-1, campus: b}", "{name: sw-a, campus: b}",
     "{name: sw-a, campus: b}", "name", "defined twice"),
    ("amplifier that does not exist", "amplifier: amp-1}", "amplifier: amp-9}", "amp-9",
     "amplifier", "no amplifier 'amp-9'"),
    ("amplifier on two fibers", "amplifier: amp-2}", "amplifier: amp-1}",
     "{from: ocs-a:122, to: ocs-b:62, amplifier: amp-1}", "amplifier", "already on another"),
    ("unknown cable fiber field", "{from: ocs-b:121, to: ocs-a:61}",
     "{from: ocs-b:121, to: ocs-a:61, colour: red}", "colour: red", "colour", "unknown field"),
    ("unknown link field", "protection: span-2}", "protection: span-2, colour: red}",
     "colour: red", "colour", "unknown field"),
    ("link without working", "working: span-1, ", "", "name: link-1", "working", "is required"),
    ("bad link name", "name: link-1,", "name: Link_1,", "Link_1", "name", "lower-case"),
    ("link named like a cable", "name: link-1,", "name: span-1,", "{name: span-1, a:",
     "name", "defined twice"),
    ("link end not text", 'a: "sw-a:Ethernet1"', "a: [1]", "a: [1]", "a", "must be text"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "field", "message"),
                         [case[1:] for case in DEFAULT_BROKEN],
                         ids=[case[0] for case in DEFAULT_BROKEN])
def test_amplifier_fiber_and_link_errors_name_the_line(
    tmp_path: Path, old: str, new: str, fragment: str, field: str, message: str
) -> None:
    text = default_topology_text()
    assert old in text
    changed = text.replace(old, new, 1)
    error = _load(tmp_path, changed)
    assert error.startswith(f"{_line_of(changed, fragment)}: "), error
    assert f"field '{field}'" in error
    assert message in error


LINK_BROKEN = [
    ("end not patched to an OCS", 'a: "sw-a:Ethernet1"', 'a: "sw-a:Ethernet2"', "sw-a:Ethernet2",
     "a", "not patched to an OCS both ways"),
    ("end not a switch port", 'b: "sw-b:Ethernet1"', 'b: "sw-b:Ethernet7"', "sw-b:Ethernet7",
     "b", "is not a switch port"),
    ("end on an OCS", 'b: "sw-b:Ethernet1"', 'b: "ocs-b:1"', "b: \"ocs-b:1\"", "b",
     "is not a switch port"),
    ("cable of one fiber", "working: span-1", "working: span-3", "working: span-3", "working",
     "one fiber each way between two OCSes"),
    ("cable that does not exist", "working: span-1", "working: span-9", "span-9", "working",
     "not a cable"),
    ("protection to another OCS", "working: span-1", "working: span-1\n    protection: span-2",
     "protection: span-2", "protection", "joins ocs-a and ocs-c, not the OCSes"),
    ("protection on the working cable", "working: span-1",
     "working: span-1\n    protection: span-1", "protection: span-1", "protection",
     "another cable than the working one"),
    ("unknown field", "working: span-1", "working: span-1\n    colour: red", "colour: red",
     "colour", "unknown field"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "field", "message"),
                         [case[1:] for case in LINK_BROKEN],
                         ids=[case[0] for case in LINK_BROKEN])
def test_link_errors_name_the_line_of_the_field(
    tmp_path: Path, old: str, new: str, fragment: str, field: str, message: str
) -> None:
    assert old in THREE
    changed = THREE.replace(old, new, 1)
    error = _load(tmp_path, changed)
    assert error.startswith(f"{_line_of(changed, fragment)}: "), error
    assert f"field '{field}'" in error
    assert message in error


def test_a_switch_port_on_two_links(tmp_path: Path) -> None:
    text = THREE + ('  - {name: link-2, a: "sw-a:Ethernet1", b: "sw-b:Ethernet2", '
                    "working: span-1}\n")
    error = _load(tmp_path, text)
    assert error.startswith(f"{_line_of(text, 'name: link-2')}: ")
    assert "field 'a'" in error and "on another link already" in error


@pytest.mark.parametrize(("old", "new", "fragment", "message"), [
    ("links:\n  - name: link-1\n    a: \"sw-a:Ethernet1\"\n    b: \"sw-b:Ethernet1\"\n"
     "    working: span-1\n", "links: link-1\n", "links: link-1", "must be a list"),
    ("  - name: link-1\n", "  - link-1\n  - name: link-1\n", "- link-1", "expected a mapping"),
])
def test_a_links_section_of_the_wrong_shape(tmp_path: Path, old: str, new: str, fragment: str,
                                            message: str) -> None:
    assert old in THREE
    changed = THREE.replace(old, new, 1)
    error = _load(tmp_path, changed)
    assert error.startswith(f"{_line_of(changed, fragment)}: "), error
    assert message in error
