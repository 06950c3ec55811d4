"""Lab topology files (emulators/lab/topology.py) and the Lab built from them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from drivers.yamlfile import YamlFileError
from emulators.clock import SteppedClock
from emulators.faults import Fault, FaultError
from emulators.lab import Lab, load_topology
from emulators.lab.topology import PATCH_CONNECTOR_LOSS_DB, PATCH_LENGTH_KM
from emulators.optics.model import NO_LIGHT_DBM
from tests.support import restart_amplifier, wait_until

# Two 4x4 switches (ingress 1..4, egress 5..8), two hosts each, and a 10 km
# cable with one fiber per direction between egress 8 and ingress 4.
MINI = """\
name: mini
ocs:
  - {name: ocs-x, size: 4, campus: x}
  - {name: ocs-y, size: 4, campus: y}
transceivers:
  - {name: hosts-x, count: 2, power_dbm: 0.0}
  - {name: hosts-y, count: 2, power_dbm: 0.0}
patches:
  - {from: hosts-x:tx1, to: ocs-x:1, count: 2}
  - {from: ocs-x:5, to: hosts-x:rx1, count: 2}
  - {from: hosts-y:tx1, to: ocs-y:1, count: 2}
  - {from: ocs-y:5, to: hosts-y:rx1, count: 2}
cables:
  - name: link
    role: working
    length_km: 10
    fibers:
      - {from: ocs-x:8, to: ocs-y:4}
      - {from: ocs-y:8, to: ocs-x:4}
"""

PATCH_LOSS_DB = PATCH_LENGTH_KM * 0.4 + PATCH_CONNECTOR_LOSS_DB
LINK_LOSS_DB = 10 * 0.22 + 0.5


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "topology.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(text: str, fragment: str) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if fragment in line]
    assert len(lines) == 1, f"{fragment!r} is on lines {lines}"
    return lines[0]


# ---- the default -------------------------------------------------------------------


def test_the_default_topology_is_the_two_campus_fabric() -> None:
    topology = load_topology()
    assert [o.name for o in topology.ocs] == ["ocs-a", "ocs-b", "ocs-lab"]
    assert all(o.size == 64 for o in topology.ocs)
    assert {t.name for t in topology.transceivers} == {"sw-a", "sw-b", "sw-c", "sw-d"}
    cables = {c.name: c for c in topology.cables}
    assert cables["span-1"].role == "working"
    assert cables["span-2"].role == "protection"
    for cable in cables.values():
        assert cable.length_km == 30
        assert len(cable.fibers) == 2
        forward, backward = cable.fibers
        assert forward.from_port.split(":")[0] == backward.to_port.split(":")[0]
        assert forward.to_port.split(":")[0] == backward.from_port.split(":")[0]
    # every patch and cable fiber feeds a distinct input
    ends = [f.to_port for f in topology.fibers()]
    assert len(ends) == len(set(ends))


def test_the_mini_topology_parses(tmp_path: Path) -> None:
    topology = load_topology(_write(tmp_path, MINI))
    assert topology.name == "mini"
    assert topology.source.endswith("topology.yaml")
    assert [f.name for f in topology.cables[0].fibers] == ["link/1", "link/2"]
    patches = {(f.from_port, f.to_port) for f in topology.patches}
    assert ("hosts-x:tx2", "ocs-x:2") in patches  # count: 2 expands port numbers
    assert ("ocs-y:6", "hosts-y:rx2") in patches
    assert len(topology.fibers()) == 10


# ---- invalid files ----------------------------------------------------------------------


# (what is wrong, text replaced, its replacement, the fragment on the line named,
#  the field named, a piece of the message)
BROKEN = [
    ("unknown top field", "name: mini\n", "name: mini\ncolour: red\n", "colour: red",
     "colour", "unknown field"),
    ("unknown ocs field", "campus: x}", "campus: x, colour: red}", "colour: red",
     "colour", "unknown field"),
    ("unknown cable field", "role: working", "role: working\n    colour: red", "colour: red",
     "colour", "unknown field"),
    ("port out of range", "to: ocs-y:4}", "to: ocs-y:999}", "ocs-y:999",
     "to", "ocs-y has no port 999"),
    ("an egress port fed", "to: ocs-y:4}", "to: ocs-y:6}", "to: ocs-y:6",
     "to", "ocs-y has no port 6"),
    ("count runs past the last port", "to: ocs-x:1, count: 2}", "to: ocs-x:4, count: 2}",
     "to: ocs-x:4, count", "to", "ocs-x has no port 5"),
    ("port without number", "from: ocs-x:8,", "from: ocs-x,", "from: ocs-x,",
     "from", "must be element:port"),
    ("unknown device", "from: ocs-x:8,", "from: ocs-z:8,", "ocs-z:8",
     "from", "no device 'ocs-z'"),
    ("input fed twice", "to: ocs-x:4}", "to: ocs-x:1}", "from: ocs-y:8",
     "to", "already fed"),
    ("duplicate ocs name", "name: ocs-y, size", "name: ocs-x, size", "ocs-x, size: 4, campus: y",
     "name", "defined twice"),
    ("cable named like a device", "name: link", "name: hosts-y", "- name: hosts-y",
     "name", "defined twice"),
    ("bad name", "name: ocs-y, size", "name: OCS_Y, size", "OCS_Y", "name", "lower-case"),
    ("size not an integer", "size: 4, campus: y", "size: four, campus: y", "four",
     "size", "must be an integer"),
    ("size out of range", "size: 4, campus: y", "size: 0, campus: y", "size: 0",
     "size", "1..512"),
    ("length not a number", "length_km: 10", "length_km: [10]", "length_km",
     "length_km", "must be a number"),
    ("power out of range", "count: 2, power_dbm: 0.0}\n  - {name: hosts-y",
     "count: 2, power_dbm: 99}\n  - {name: hosts-y", "power_dbm: 99", "power_dbm", "-20..20"),
    ("count as text", "count: 2}\n  - {from: ocs-x:5", "count: two}\n  - {from: ocs-x:5",
     "count: two", "count", "must be an integer"),
    ("bad role", "role: working", "role: spare-ish", "spare-ish", "role", "must be one of"),
    ("empty fiber list", "    fibers:\n      - {from: ocs-x:8, to: ocs-y:4}\n"
     "      - {from: ocs-y:8, to: ocs-x:4}\n", "    fibers: []\n", "fibers: []",
     "fibers", "at least one fiber"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "field", "message"),
                         [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_errors_name_the_file_the_line_and_the_field(
    tmp_path: Path, old: str, new: str, fragment: str, field: str, message: str
) -> None:
    assert old in MINI
    text = MINI.replace(old, new, 1)
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert f"{path}:{_line_of(text, fragment)}:" in error
    assert f"field '{field}'" in error
    assert message in error
    assert "\n" not in error


def test_a_cable_without_any_fibers_is_refused(tmp_path: Path) -> None:
    text = MINI[: MINI.index("    fibers:")]
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert f"{path}:{_line_of(text, 'name: link')}:" in error
    assert "cable 'link'" in error
    assert "at least one fiber" in error


@pytest.mark.parametrize(("text", "message"), [
    ("- ocs-a\n- ocs-b\n", "expected a mapping"),
    ("just words\n", "expected a mapping"),
    ("name: x\nocs: {name: ocs-a}\n", "must be a list"),
    ("name: x\nocs:\n  - ocs-a\n", "expected a mapping"),
    ("name: x\n", "at least one ocs"),
    ("name: x\nocs:\n  - {name: ocs-a\n", "not valid YAML"),
    ("name: x\nname: y\nocs:\n  - {name: ocs-a}\n", "duplicate key"),
    ("name: x\nocs:\n  - {size: 4}\n", "field 'name' is required"),
])
def test_other_invalid_files(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(YamlFileError, match="no such file"):
        load_topology(tmp_path / "absent.yaml")


# ---- a lab built from a topology --------------------------------------------------------


@pytest.fixture
def mini(tmp_path: Path) -> Lab:
    """The mini fabric, built (not served) on a stepped clock."""
    topology = load_topology(_write(tmp_path, MINI))
    return Lab(tmp_path / "state", topology, clock=SteppedClock(), serial_consoles=False)


def _connect_across(lab: Lab) -> tuple[float, float]:
    """hosts-x:tx1 -> ocs-x 1->8 -> link/1 -> ocs-y 4->5 -> hosts-y:rx1, and back on tx2/rx2.

    Returns the loss expected each way from the factory tables (each path lands
    within 0.1 dB of them).
    """
    x, y = lab.ocs["ocs-x"], lab.ocs["ocs-y"]
    x.add((1, 4), (8, 6))
    y.add((4, 2), (5, 8))
    assert isinstance(lab.clock, SteppedClock)
    lab.clock.advance(1.0)
    forward = 2 * PATCH_LOSS_DB + LINK_LOSS_DB + x.factory_loss_db(1, 8) + y.factory_loss_db(4, 5)
    back = 2 * PATCH_LOSS_DB + LINK_LOSS_DB + y.factory_loss_db(2, 8) + x.factory_loss_db(4, 6)
    return forward, back


def test_light_arrives_end_to_end(mini: Lab) -> None:
    assert mini.optics.power_dbm("hosts-y:rx1") == NO_LIGHT_DBM
    forward, back = _connect_across(mini)
    assert mini.optics.power_dbm("hosts-y:rx1") == pytest.approx(-forward, abs=0.2 + 1e-9)
    assert mini.optics.power_dbm("hosts-x:rx2") == pytest.approx(-back, abs=0.2 + 1e-9)
    assert mini.optics.power_dbm("hosts-y:rx2") < -45  # only crosstalk from 4->5
    # what ocs-y's ingress monitor reads agrees with what left ocs-x, less the cable
    left = mini.optics.power_dbm("ocs-x:8")
    assert mini.optics.power_dbm("ocs-y:4") == pytest.approx(left - LINK_LOSS_DB)
    reading = mini.ocs["ocs-y"].monitor_dbm(4)
    assert reading is not None and abs(reading - (left - LINK_LOSS_DB)) <= 1.0


def test_cutting_a_cable_cuts_both_its_fibers_and_clear_restores(mini: Lab) -> None:
    _connect_across(mini)
    before = (mini.optics.power_dbm("hosts-y:rx1"), mini.optics.power_dbm("hosts-x:rx2"))
    mini.inject("link", Fault("fiber_cut"))
    assert mini.fibers["link/1"].cut and mini.fibers["link/2"].cut
    assert mini.optics.power_dbm("hosts-y:rx1") == NO_LIGHT_DBM
    assert mini.optics.power_dbm("hosts-x:rx2") == NO_LIGHT_DBM
    assert mini.optics.power_dbm("ocs-x:8") > -10  # light still leaves, upstream of the cut
    mini.clear("link")
    assert not mini.fibers["link/1"].cut and not mini.fibers["link/2"].cut
    assert (mini.optics.power_dbm("hosts-y:rx1"), mini.optics.power_dbm("hosts-x:rx2")) == before


def test_cutting_one_fiber_leaves_the_other_direction_lit(mini: Lab) -> None:
    _connect_across(mini)
    mini.inject("link/1", Fault("fiber_cut"))
    assert mini.optics.power_dbm("hosts-y:rx1") == NO_LIGHT_DBM
    assert mini.optics.power_dbm("hosts-x:rx2") > -10
    mini.clear("link/1", "fiber_cut")
    assert mini.optics.power_dbm("hosts-y:rx1") > -10


def test_cutting_a_patch_fiber(mini: Lab) -> None:
    _connect_across(mini)
    mini.inject("hosts-x.tx1>ocs-x.1", Fault("fiber_cut"))
    assert mini.optics.power_dbm("hosts-y:rx1") == NO_LIGHT_DBM
    mini.clear("hosts-x.tx1>ocs-x.1")
    assert mini.optics.power_dbm("hosts-y:rx1") > -10


def test_device_faults_go_to_the_device(mini: Lab) -> None:
    _connect_across(mini)
    mini.inject("ocs-y", Fault("port", target="5"))
    assert mini.optics.power_dbm("hosts-y:rx1") == NO_LIGHT_DBM
    assert mini.ocs["ocs-y"].port_state(5) == "F"
    mini.clear("ocs-y", "port")
    assert mini.optics.power_dbm("hosts-y:rx1") > -10


def test_faults_on_unknown_targets_are_refused(mini: Lab) -> None:
    with pytest.raises(FaultError, match="no fiber or cable named 'nope'"):
        mini.inject("nope", Fault("fiber_cut"))
    with pytest.raises(FaultError, match="no device named 'nope'"):
        mini.inject("nope", Fault("port", target="1"))
    with pytest.raises(FaultError, match="pump"):
        mini.inject("ocs-x", Fault("pump"))


def _settled(lab: Lab) -> bool:
    gain = lab.amps["amp-1"].gain_db
    return gain is not None and abs(gain - 20.0) < 0.02


def test_the_running_default_lab_cuts_a_span_both_ways(lab: Lab) -> None:
    inventory = (lab.state_dir / "inventory.yaml").read_text()
    assert "ocs-a" in inventory and "ocs-b" in inventory
    a, b = lab.ocs["ocs-a"], lab.ocs["ocs-b"]
    a.add((1,), (121,))  # sw-a:tx1 -> span-1/1 -> ocs-b:61
    b.add((1,), (121,))  # sw-b:tx1 -> span-1/2 -> ocs-a:61
    # Wait for the switching to settle (device time is real time in this lab).
    settle = max(a.pending_until(), b.pending_until()) - lab.clock.now()
    time.sleep(max(0.0, settle) + 0.02)
    restart_amplifier(lab, "amp-1")  # its ALS shut it while span-1 was dark
    wait_until(lambda: _settled(lab), "amp-1 amplifies span-1 at its gain")
    arriving = (lab.optics.power_dbm("ocs-b:61"), lab.optics.power_dbm("ocs-a:61"))
    assert all(p > -15 for p in arriving), arriving
    lab.inject("span-1", Fault("fiber_cut"))
    assert lab.optics.power_dbm("ocs-a:61") == NO_LIGHT_DBM  # no amplifier on B->A
    # amp-1 passes only its own noise until ALS shuts it after the LOS soak
    assert lab.optics.power_dbm("ocs-b:61") < -10
    wait_until(lambda: lab.optics.power_dbm("ocs-b:61") == NO_LIGHT_DBM, "ALS shuts amp-1")
    assert not any(lab.fibers[f.name].cut for c in lab.topology.cables if c.name == "span-2"
                   for f in c.fibers)
    lab.clear("span-1")
    assert lab.optics.power_dbm("ocs-a:61") == arriving[1]
    restart_amplifier(lab, "amp-1")
    wait_until(lambda: _settled(lab), "amp-1 back at its gain")
    assert lab.optics.power_dbm("ocs-b:61") == pytest.approx(arriving[0], abs=0.05)


# ---- switches ------------------------------------------------------------------------------

# One 4x4 OCS and a two-port switch patched into it.
MINI_SWITCH = """\
name: mini-switch
ocs:
  - {name: ocs-x, size: 4, campus: x}
switches:
  - {name: sw-x, campus: x, ports: 2, speed: 100G, cable_length_km: 10,
     buffer_bytes: 2_000_000_000, lossless_pool_bytes: 500_000_000, power_dbm: 0.5}
patches:
  - {from: sw-x:tx1, to: ocs-x:1, count: 2}
  - {from: ocs-x:5, to: sw-x:rx1, count: 2}
"""


def test_the_default_switches() -> None:
    switches = {s.name: s for s in load_topology().switches}
    assert list(switches) == ["sw-a", "sw-b", "sw-c", "sw-d"]
    assert [(s.model, s.management) for s in switches.values()] == [
        ("msoctl", "netconf"), ("msoctl", "netconf"), ("openconfig", "gnmi"), ("sonic", "gnmi")]
    assert switches["sw-c"].augments == "arista"
    for switch, campus in zip(switches.values(), "abab", strict=True):
        assert switch.campus == campus
        assert switch.port_names == [f"Ethernet{n}" for n in range(
            1, 9 if switch.model == "msoctl" else 5)]
        assert switch.speed == "400G"
        assert switch.cable_length_km == pytest.approx(30.01)  # two patches and a span
        assert (switch.buffer_bytes, switch.lossless_pool_bytes) == (8_000_000_000,
                                                                     4_000_000_000)


def test_a_switch_is_also_its_transceiver_bank(tmp_path: Path) -> None:
    topology = load_topology(_write(tmp_path, MINI_SWITCH))
    [switch] = topology.switches
    assert (switch.ports, switch.speed, switch.cable_length_km) == (2, "100G", 10.0)
    assert (switch.buffer_bytes, switch.lossless_pool_bytes) == (2_000_000_000, 500_000_000)
    [bank] = topology.transceivers
    assert (bank.name, bank.count, bank.power_dbm, bank.campus) == ("sw-x", 2, 0.5, "x")
    assert ("sw-x:tx2", "ocs-x:2") in {(f.from_port, f.to_port) for f in topology.patches}


def test_switch_defaults(tmp_path: Path) -> None:
    text = "ocs:\n  - {name: ocs-x}\nswitches:\n  - {name: sw-x, cable_length_km: 2}\n"
    [switch] = load_topology(_write(tmp_path, text)).switches
    assert (switch.ports, switch.speed, switch.power_dbm) == (8, "400G", 1.0)
    assert (switch.buffer_bytes, switch.lossless_pool_bytes) == (8_000_000_000,
                                                                 4_000_000_000)


@pytest.mark.parametrize("entry, vendor_page, monitors", [
    ("{name: amp-x}", True, True),
    ("{name: amp-x, plain: true}", False, False),
    ("{name: amp-x, plain: true, monitors: true}", False, True),
    ("{name: amp-x, vendor_page: false}", False, True),
    ("{name: amp-x, monitors: false}", True, False),
], ids=["default", "plain", "plain-with-monitors", "no-vendor-page", "no-monitors"])
def test_amplifier_kinds(tmp_path: Path, entry: str, vendor_page: bool,
                         monitors: bool) -> None:
    """An amplifier entry says what kind of module it is, as an ocs entry does: ``plain``
    (no vendor page, another maker's identity, no monitor advertised), each of
    ``vendor_page`` and ``monitors`` given beside it winning."""
    text = f"ocs:\n  - {{name: ocs-x}}\namplifiers:\n  - {entry}\n"
    [amp] = load_topology(_write(tmp_path, text)).amplifiers
    assert (amp.vendor_page, amp.monitors) == (vendor_page, monitors)


def test_a_lab_amplifier_is_built_as_its_entry_says(tmp_path: Path) -> None:
    text = ("ocs:\n  - {name: ocs-x, size: 4}\namplifiers:\n  - {name: amp-p, plain: true}\n"
            "  - {name: amp-q, monitors: false}\n")
    with Lab(tmp_path / "lab", load_topology(_write(tmp_path, text)),
             serial_consoles=False) as lab:
        plain, quiet = lab.amps["amp-p"], lab.amps["amp-q"]
        assert 0xB0 not in plain.memory.pages and 0xB0 in quiet.memory.pages
        assert plain.identity.vendor_name != quiet.identity.vendor_name == "MegaScaleOut"
        assert (plain.monitors, quiet.monitors) == (False, False)


def test_an_amplifier_kind_must_be_a_boolean(tmp_path: Path) -> None:
    text = "ocs:\n  - {name: ocs-x}\namplifiers:\n  - {name: amp-x, plain: maybe}\n"
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError, match=f"{path}:4: .*field 'plain'"):
        load_topology(path)


SWITCH_BROKEN = [
    ("unknown switch field", "campus: x, ports", "campus: x, colour: red, ports", "colour: red",
     "colour", "unknown field"),
    ("speed the model lacks", "speed: 100G", "speed: 300G", "300G", "speed", "must be one of"),
    ("no ports", "ports: 2,", "ports: 0,", "ports: 0", "ports", "1..1024"),
    ("ports as text", "ports: 2,", "ports: two,", "ports: two", "ports", "must be an integer"),
    ("no cable length", "cable_length_km: 10,", "", "- {name: sw-x", "cable_length_km",
     "is required"),
    ("zero cable length", "cable_length_km: 10,", "cable_length_km: 0,", "cable_length_km: 0",
     "cable_length_km", "more than 0"),
    ("pool larger than the buffer", "lossless_pool_bytes: 500_000_000",
     "lossless_pool_bytes: 3_000_000_000", "lossless_pool_bytes: 3_000", "lossless_pool_bytes",
     "0..buffer_bytes (2000000000)"),
    ("buffer too small", "buffer_bytes: 2_000_000_000", "buffer_bytes: 1000", "buffer_bytes: 1000",
     "buffer_bytes", "1 MB"),
    ("switch named like the ocs", "name: sw-x", "name: ocs-x", "- {name: ocs-x, campus",
     "name", "defined twice"),
    ("a port the switch lacks", "from: ocs-x:5, to: sw-x:rx1, count: 2",
     "from: ocs-x:5, to: sw-x:rx2, count: 2", "to: sw-x:rx2", "to", "sw-x has no port rx3"),
    ("optical power out of range", "power_dbm: 0.5", "power_dbm: 30", "power_dbm: 30",
     "power_dbm", "-20..20"),
]


@pytest.mark.parametrize(("old", "new", "fragment", "field", "message"),
                         [case[1:] for case in SWITCH_BROKEN],
                         ids=[case[0] for case in SWITCH_BROKEN])
def test_switch_errors_name_the_file_the_line_and_the_field(
    tmp_path: Path, old: str, new: str, fragment: str, field: str, message: str
) -> None:
    assert old in MINI_SWITCH
    text = MINI_SWITCH.replace(old, new, 1)
    path = _write(tmp_path, text)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert f"{path}:{_line_of(text, fragment)}:" in error
    assert f"field '{field}'" in error
    assert message in error
    assert "\n" not in error


def test_a_lab_switch_is_built_from_its_topology(tmp_path: Path) -> None:
    lab = Lab(tmp_path / "state", load_topology(_write(tmp_path, MINI_SWITCH)),
              clock=SteppedClock(), serial_consoles=False)
    device = lab.switches["sw-x"]
    tree = device.model.state_tree()["switch"]
    assert tree["buffer"] == {"total-bytes": 2_000_000_000, "lossless-pool-bytes": 500_000_000}
    assert [p["name"] for p in tree["ports"]["port"]] == ["Ethernet1", "Ethernet2"]
    assert lab.optics.element("sw-x") is not None  # its optics are in the optical model
    lab.inject("sw-x", Fault("congestion", target="Ethernet2@0", seconds=0.001))
    assert isinstance(lab.clock, SteppedClock)
    lab.clock.advance(0.002)
    assert device.model.counters("Ethernet2", 0)["buffer-watermark-bytes"] > 0
    assert [f.kind for f in lab.faults("sw-x").active()] == ["congestion"]
    lab.clear("sw-x")
    assert lab.faults("sw-x").active() == []


# ---- links -----------------------------------------------------------------------------


def test_the_default_link_and_its_ports() -> None:
    topology = load_topology()
    assert [(link.name, link.a, link.b, link.working, link.protection)
            for link in topology.links] == [
        ("link-1", "sw-a:Ethernet1", "sw-b:Ethernet1", "span-1", "span-2")]
    assert topology.ocs_ports_of("sw-a:Ethernet1") == ("ocs-a:1", "ocs-a:65")
    assert topology.ocs_ports_of("sw-b:Ethernet8") == ("ocs-b:8", "ocs-b:72")


@pytest.mark.parametrize(("old", "new", "message"), [
    ('a: "sw-a:Ethernet1"', 'a: "sw-a:Ethernet9"', "field 'a': 'sw-a:Ethernet9' is not a "
                                                    "switch port"),
    ("working: span-1", "working: span-7", "field 'working': 'span-7' is not a cable"),
    ("protection: span-2", "protection: span-1", "another cable"),
    ("b: \"sw-b:Ethernet1\"", "b: \"sw-a:Ethernet1\"", "on another link already"),
])
def test_bad_links_name_the_line(tmp_path: Path, old: str, new: str, message: str) -> None:
    from emulators.lab.topology import default_topology_text

    text = default_topology_text()
    assert old in text
    changed = text.replace(old, new, 1)
    path = _write(tmp_path, changed)
    with pytest.raises(YamlFileError, match=f":{_line_of(changed, 'name: link-1')}: .*{message}"):
        load_topology(path)
