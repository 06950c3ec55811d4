"""Spans and links in the inventory (msoctl/links.py): parsed, checked against the devices,
every error naming the line; and the OCS cross-connects a link needs on each span."""

from __future__ import annotations

from pathlib import Path

import pytest

from msoctl.inventory import InventoryError, load_inventory

DEVICES = """\
devices:
  - {name: ocs-a, kind: ocs, transport: visa, address: "TCPIP::h::5025::SOCKET"}
  - {name: ocs-b, kind: ocs, transport: visa, address: "TCPIP::h2::5025::SOCKET"}
  - {name: amp-1, kind: amp, transport: i2c-bridge, address: "socket://h:1"}
  - {name: amp-2, kind: amp, transport: i2c-bridge, address: "socket://h:2"}
  - {name: sw-a, kind: switch, transport: netconf, address: h, username: u, password: "env:P"}
  - {name: sw-b, kind: switch, transport: netconf, address: h, username: u, password: "env:P"}
"""
SPANS = """\
spans:
  - name: span-1
    length_km: 30
    a_to_b: {from: "ocs-a:121", to: "ocs-b:61", amplifier: amp-1}
    b_to_a: {from: "ocs-b:121", to: "ocs-a:61"}
  - name: span-2
    length_km: 30.5
    loss_db_per_km: 0.25
    connector_loss_db: 1.0
    a_to_b: {from: "ocs-a:122", to: "ocs-b:62", amplifier: amp-2}
    b_to_a: {from: "ocs-b:122", to: "ocs-a:62"}
"""
LINKS = """\
links:
  - name: link-1
    a: {switch: sw-a, port: Ethernet1, tx: "ocs-a:1", rx: "ocs-a:65"}
    b: {switch: sw-b, port: Ethernet1, tx: "ocs-b:1", rx: "ocs-b:65"}
    working: span-1
    protection: span-2
    tx_power_dbm: 1.0
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return path


def test_spans_links_and_their_cross_connects(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, DEVICES + SPANS + LINKS))
    link = inventory.link("link-1")
    assert link.working.name == "span-1" and link.protection is not None
    assert link.working.fiber_loss_db == pytest.approx(30 * 0.2 + 0.5)
    assert inventory.spans["span-2"].fiber_loss_db == pytest.approx(30.5 * 0.25 + 1.0)
    assert link.working.a_to_b.amplifier == "amp-1"
    assert link.connections("working") == {"ocs-a": [(1, 121), (61, 65)],
                                           "ocs-b": [(61, 65), (1, 121)]}
    assert link.connections("protection") == {"ocs-a": [(1, 122), (62, 65)],
                                              "ocs-b": [(62, 65), (1, 122)]}
    with pytest.raises(InventoryError, match="no link named 'nope'"):
        inventory.link("nope")


def test_an_inventory_without_links_has_none(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, DEVICES))
    assert inventory.links == {} and inventory.spans == {}


@pytest.mark.parametrize(("old", "new", "message"), [
    ('to: "ocs-b:61", amplifier: amp-1', 'to: "ocs-b:61", amplifier: sw-a',
     ":11: span 'span-1' a_to_b: field 'amplifier': 'sw-a' is a switch, not an amp"),
    ('from: "ocs-b:121", to: "ocs-a:61"}\n  - name: span-2',
     'from: "ocs-b:121", to: "ocs-b:61"}\n  - name: span-2', "two different OCSes"),
    ("length_km: 30\n", "length_km: -3\n", "span 'span-1': field 'length_km'"),
    ('from: "ocs-a:121"', 'from: "ocs-a-121"', "write OCS:PORT"),
    ("working: span-1", "working: span-9", "no span named 'span-9'"),
    ("protection: span-2", "protection: span-1", "another span"),
    ('rx: "ocs-a:65"', 'rx: "ocs-b:65"', "same OCS as tx"),
    ('b: {switch: sw-b, port: Ethernet1, tx: "ocs-b:1", rx: "ocs-b:65"',
     'b: {switch: sw-b, port: Ethernet1, tx: "ocs-a:1", rx: "ocs-a:66"',
     "ocs-a:1 is already used by link"),
    ("switch: sw-b,", "switch: ocs-b,", "'ocs-b' is an ocs, not a switch"),
    ("tx_power_dbm: 1.0", "tx_power_dbm: 99", "-30..30 dBm"),
    ("    working: span-1\n", "", "field 'working' is required"),
    ("    length_km: 30\n", "    length_km: 30\n    cable: cable 1\n",
     "span 'span-1': field 'cable': must be letters"),
])
def test_bad_spans_and_links_name_the_line(tmp_path: Path, old: str, new: str,
                                           message: str) -> None:
    text = DEVICES + SPANS + LINKS
    assert old in text
    with pytest.raises(InventoryError, match=message):
        load_inventory(write(tmp_path, text.replace(old, new, 1)))


def test_two_links_on_one_working_span_are_refused(tmp_path: Path) -> None:
    second = LINKS.replace("link-1", "link-2").replace("Ethernet1", "Ethernet2") \
        .replace('"ocs-a:1"', '"ocs-a:2"').replace('"ocs-a:65"', '"ocs-a:66"') \
        .replace('"ocs-b:1"', '"ocs-b:2"').replace('"ocs-b:65"', '"ocs-b:66"') \
        .replace("links:\n", "")
    with pytest.raises(InventoryError, match="already carries link 'link-1'"):
        load_inventory(write(tmp_path, DEVICES + SPANS + LINKS + second))


def test_a_span_names_its_cable_and_protection_is_never_in_the_working_cable(
        tmp_path: Path) -> None:
    """A span's ``cable`` is the risk it shares with the spans of that cable (one cut
    darkens them all): a protection span in its working span's cable protects nothing
    from a cut, and the inventory says so at the protection's line."""
    cabled = SPANS.replace("    length_km: 30\n", "    length_km: 30\n    cable: east\n") \
        .replace("    length_km: 30.5\n", "    length_km: 30.5\n    cable: west\n")
    inventory = load_inventory(write(tmp_path, DEVICES + cabled + LINKS))
    assert inventory.spans["span-1"].cable == "east"
    assert inventory.spans["span-2"].cable == "west"
    assert load_inventory(write(tmp_path, DEVICES + SPANS + LINKS)).spans["span-1"].cable is None
    same = cabled.replace("cable: west", "cable: east")
    with pytest.raises(InventoryError, match=r":\d+: link 'link-1': field 'protection': span "
                       "span-2 is in cable east, as the working span span-1 is: one cut "
                       "would darken both"):
        load_inventory(write(tmp_path, DEVICES + same + LINKS))
