"""Every OCS command against units of the family that lack the project's extensions.

The lab's OCSes here are plain units (topology ``plain: true``): no LC extension, no boot
mode, no loss-of-light alarms, the Polatis ``*IDN?`` form, as a unit found on site
answers. Each test takes ocs-a further into each combination that changes what msoctl
does: without power monitors, with ``:SYST:ERR?`` as its only error query (SCPI-99
leaves ``:ALL?`` optional), with the extensions back but still no alarms.

What a command costs is counted at the unit (the program messages it received), never
timed: a query the unit does not know would have been waited for until the timeout and
then resynchronised (``*ESE <marker>;*ESE?``), and none is. A refusal comes before
anything is changed: the unit received no change command, and its state is as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from drivers.ocs.driver import OcsDriver
from emulators.faults import Fault
from emulators.lab import Lab, load_topology
from emulators.lab.topology import default_topology_text
from emulators.ocs.model import OcsDevice
from msoctl.journal import Journal
from tests.support.cli import Msoctl, Result
from tests.support.protecting import protecting

PLAIN_UNITS = ("ocs-a", "ocs-b", "ocs-lab")

UNITS: dict[str, dict[str, bool]] = {
    "plain": {},
    "plain-no-monitors": {"power_monitors": False},
    "plain-next-error-only": {"error_extras": False},
    "plain-no-monitors-next-error-only": {"power_monitors": False, "error_extras": False},
    "extensions-no-alarms": {"extensions": True},
}
"""The combinations of ocs-a's features that change what the commands do."""

CHANGES = ("connect_add", "connect_only", "connect_subtract", "disconnect_all",
           "port_disable", "port_enable", "boot_mode_set", "reset")
RESYNC = "event_status_enable_set"
"""The key of ``*ESE n``: the session's resynchronisation probe after a timeout."""


def plain_topology(directory: Path) -> Path:
    text = default_topology_text()
    for name in PLAIN_UNITS:
        line = next(line for line in text.splitlines() if f"{{name: {name}," in line)
        text = text.replace(line, line.replace("}", ", plain: true}", 1))
    path = directory / "plain.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def module_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    directory = tmp_path_factory.mktemp("plain")
    with Lab(directory / "lab", load_topology(plain_topology(directory))) as running:
        yield running


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    return shared_lab


@pytest.fixture(params=list(UNITS))
def unit(request: pytest.FixtureRequest, lab: Lab) -> OcsDevice:
    """ocs-a as the combination asks (put back by the shared lab's reset)."""
    device = lab.ocs["ocs-a"]
    for attribute, value in UNITS[str(request.param)].items():
        setattr(device, attribute, value)
    return device


@dataclass
class Cost:
    messages: int = 0
    changes: int = 0


@contextmanager
def counted(device: OcsDevice) -> Iterator[Cost]:
    """What one command sent the unit; it never resynchronised."""
    requests = device.requests
    before, resyncs = requests.received, requests.commands[RESYNC]
    changes = sum(requests.commands[key] for key in CHANGES)
    cost = Cost()
    yield cost
    cost.messages = requests.received - before
    cost.changes = sum(requests.commands[key] for key in CHANGES) - changes
    assert requests.commands[RESYNC] == resyncs, "a reply was waited for and never came"


OPEN = OcsDriver.OPEN_MESSAGES + 1
"""What opening costs: the probe's write, and the ``*CLS`` that goes first in the next
write after an error was read one entry at a time (an undefined header's)."""


def has(device: OcsDevice, feature: str) -> bool:
    return {"power_monitors": device.power_monitors, "boot_mode": device.extensions,
            "lc_figures": device.extensions, "alarms": device.alarms_supported}[feature]


def refused(result_err: str, title: str) -> bool:
    return result_err.startswith(f"error: ocs-a: {title} not supported by this unit (") \
        and result_err.count("\n") == 1


def test_the_plain_unit_answers_as_a_polatis_unit_does(lab: Lab, msoctl: Msoctl) -> None:
    """*IDN? in the family's form (the size in the model field, as third-party Polatis
    tools read it), and the features it lacks named in ``supported``."""
    result = msoctl("ocs", "status", "ocs-b", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["identity"]["manufacturer"] == "Polatis"
    assert document["identity"]["model"] == "N-VST-64x64-HU1-DMHNV"
    assert document["size"] == [64, 64]
    assert document["supported"] == ["power_monitors"]
    assert document["boot_mode"] is None and document["alarm_port"] is None
    assert document["lc_cell_temperature_celsius"] is None
    assert document["last_switching_seconds"] is None


def test_status(unit: OcsDevice, msoctl: Msoctl) -> None:
    unit.only((1, 2), (65, 66))
    with counted(unit) as cost:
        result = msoctl("ocs", "status", "ocs-a", "-o", "json")
    assert result.code == 0, result.err
    assert cost.messages <= OPEN + 10 and cost.changes == 0
    document = json.loads(result.out)
    features = ["power_monitors", "boot_mode", "lc_figures", "alarms"]
    assert document["supported"] == [f for f in features if has(unit, f)]
    assert (document["boot_mode"] is None) is not unit.extensions
    assert (document["lc_cell_temperature_celsius"] is None) is not unit.extensions
    losses = [c["insertion_loss_db"] for c in document["connections"]]
    assert len(losses) == 2 and all((loss is None) is not unit.extensions for loss in losses)

    table = msoctl("ocs", "status", "ocs-a")
    assert table.code == 0 and table.err == ""
    lines = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
             for line in table.out.splitlines() if ":" in line}
    for field, feature in (("boot mode", "boot_mode"), ("LC cell", "lc_figures"),
                           ("alarms", "alarms"), ("power monitors", "power_monitors")):
        shown = lines[field] == "not supported by this unit"
        assert shown is not has(unit, feature), field


def test_reading_commands(unit: OcsDevice, msoctl: Msoctl) -> None:
    """power, ports, light, alarms and boot-mode: each works, or refuses in one line
    naming the feature the unit lacks, at a bounded cost."""
    unit.only((1,), (65,))
    cases = [
        (("ocs", "power", "ocs-a", "1", "65"), "power_monitors", "power monitors", 2),
        (("ocs", "light", "ocs-a"), "power_monitors", "power monitors", 8),
        (("ocs", "alarms", "ocs-a"), "alarms", "loss-of-light alarms", 8),
        (("ocs", "boot-mode", "ocs-a"), "boot_mode", "boot mode", 2),
    ]
    for args, feature, title, extra in cases:
        with counted(unit) as cost:
            result = msoctl(*args)
        if has(unit, feature):
            assert result.code == 0, (args, result.err)
        else:
            assert result.code == 2 and refused(result.err, title), (args, result.err)
        assert cost.messages <= OPEN + extra and cost.changes == 0, args
    with counted(unit) as cost:
        saved = msoctl("ocs", "map", "ocs-a")
    assert saved.code == 0 and saved.out.splitlines()[1:] == ["connections:", '  - "1:65"']
    assert cost.messages <= OPEN + 1
    with counted(unit) as cost:
        ports = msoctl("ocs", "ports", "ocs-a", "-o", "json")
    assert ports.code == 0, ports.err
    assert cost.messages <= OPEN + 4
    powers = [row["power_dbm"] for row in json.loads(ports.out)["ports"]]
    assert len(powers) == 128
    assert all(p is None for p in powers) is not unit.power_monitors


def test_changes(unit: OcsDevice, msoctl: Msoctl, tmp_path: Path) -> None:
    """connect, disconnect, apply, port disable/enable: each works on every combination
    (a unit without monitors says its light went unchecked); boot-mode refuses before
    changing anything on a unit without boot modes, and the refusal is journaled."""
    mapfile = tmp_path / "map.yaml"
    mapfile.write_text("connections: ['3:67', '4:68']\n")
    steps = [("connect", "ocs-a", "1:65", "2:66"), ("disconnect", "ocs-a", "2"),
             ("apply", "ocs-a", str(mapfile)), ("port", "disable", "ocs-a", "5"),
             ("port", "enable", "ocs-a", "5")]
    for step in steps:
        with counted(unit) as cost:
            result = msoctl("ocs", *step)
        assert result.code == 0, (step, result.err)
        assert cost.changes == 1 and cost.messages <= OPEN + 16, (step, cost)
        unchecked = "light not checked: ocs-a has no power monitors" in result.out
        assert unchecked is (step[0] != "port" and not unit.power_monitors), step
    assert unit.connection_map() == {3: 67, 4: 68}

    before = unit.boot_mode
    with counted(unit) as cost:
        result = msoctl("ocs", "boot-mode", "ocs-a", "dark")
    if unit.extensions:
        assert result.code == 0 and unit.boot_mode == "dark", result.err
        assert cost.changes == 1
    else:
        assert result.code == 2 and refused(result.err, "boot mode"), result.err
        assert cost.changes == 0 and unit.boot_mode == before
        assert cost.messages <= OPEN


def test_a_refused_boot_mode_is_journaled(lab: Lab, msoctl: Msoctl) -> None:
    device = lab.ocs["ocs-a"]
    result = msoctl("ocs", "boot-mode", "ocs-a", "dark")
    assert result.code == 2 and refused(result.err, "boot mode")
    records = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
               if r.get("action") == "ocs.boot-mode"]
    assert [r["event"] for r in records] == ["refused"]
    assert "boot mode not supported by this unit" in records[0]["reason"]
    assert device.boot_mode == "restore"


def test_protection_polls_a_unit_without_alarms_and_switches(lab: Lab) -> None:
    """No alarms to follow: the controller polls the plain units' monitors, and a cut of
    the working span still switches link-1 to its protection span."""
    assert not lab.ocs["ocs-a"].alarms_supported and not lab.alarm_servers
    with protecting(lab) as running:
        lab.inject("span-1", Fault("fiber_cut"))
        event = running.wait_for("switch")
        assert event.details["to_span"] == "span-2"
        assert running.link()["active_span"] == "span-2"


def test_protection_refuses_a_unit_without_monitors(lab: Lab, msoctl: Msoctl) -> None:
    lab.ocs["ocs-b"].power_monitors = False
    before = lab.ocs["ocs-b"].requests.commands.copy()
    result = msoctl("protect", "run")
    assert result.code == 2, result.err
    assert result.err == ("error: ocs-b: power monitors not supported by this unit "
                          "(:PMON:POW? is an undefined header on it): the protection "
                          "controller judges the light at the OCS monitors\n")
    assert all(lab.ocs["ocs-b"].requests.commands[key] == before[key] for key in CHANGES)


def test_characterize_a_plain_unit(lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """The acceptance test needs only the map of the unit under test: a plain unit is
    characterized (its factory table and LC figures are reported as not available)."""
    result = msoctl("ocs", "characterize", "ocs-lab", "--laser", "laser-1", "--meter",
                    "pm-1", "--ports", "1-2,65-66", "--repeat", "1", "--out",
                    str(tmp_path / "out"), "-o", "json")
    assert result.code in (0, 1), result.err
    document = json.loads(result.out)
    assert document["device"] == "ocs-lab" and document["paths"] == 4
    assert document["identities"]["ocs"]["manufacturer"] == "Polatis"


def _characterize(msoctl: Msoctl, device: str, out: Path, *extra: str) -> Result:
    return msoctl("ocs", "characterize", device, "--laser", "laser-1", "--meter", "pm-1",
                  "--ports", "1-2,65-66", "--repeat", "1", "--out", str(out), *extra)


def test_characterize_obeys_the_in_service_rule_and_its_bench(lab: Lab, msoctl: Msoctl,
                                                              tmp_path: Path) -> None:
    """A characterization sets whole maps: an OCS carrying an in-service link is refused
    (exit 3, journaled) before anything is changed, as every change is; and instruments
    the inventory ties to another OCS's test set are refused (exit 2)."""
    ocs_a, ocs_b = lab.ocs["ocs-a"], lab.ocs["ocs-b"]
    ocs_a.only((1, 61), (121, 65))  # link-1 on span-1, end to end: in service
    ocs_b.only((1, 61), (121, 65))
    elsewhere = _characterize(msoctl, "ocs-a", tmp_path / "a")
    assert elsewhere.code == 2 and "laser-1 belongs to the test set of ocs-lab" in elsewhere.err
    entries = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    for entry in entries["devices"]:
        if entry["name"] in ("laser-1", "pm-1"):
            entry["labels"]["bench"] = "ocs-a"
    moved = lab.state_dir / "inventory-bench-a.yaml"
    moved.write_text(yaml.safe_dump(entries))
    try:
        before = ocs_a.requests.commands["connect_only"]
        refused = _characterize(msoctl, "ocs-a", tmp_path / "b", "--inventory", str(moved))
        assert refused.code == 3, refused.err
        assert "link-1 is in service and would go down" in refused.err
        assert ocs_a.connection_map() == {1: 121, 61: 65}
        assert ocs_a.requests.commands["connect_only"] == before
    finally:
        moved.unlink()
    records = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
               if r.get("action") == "ocs.characterize"]
    assert [(r["event"], r.get("exit_code")) for r in records] == [("refused", 2),
                                                                  ("refused", 3)]


def test_a_characterization_that_fails_its_limits_is_journaled_failed(
        msoctl: Msoctl, lab: Lab, tmp_path: Path) -> None:
    result = _characterize(msoctl, "ocs-lab", tmp_path / "c", "--max-il", "0.1")
    assert result.code == 1 and "did not pass" in result.err
    [outcome] = [r for r in Journal(lab.state_dir / "journal.sqlite").records()
                 if r.get("action") == "ocs.characterize" and r["event"] == "result"]
    assert outcome["status"] == "failed" and outcome["pass"] is False
    assert any("insertion loss" in failure for failure in outcome["failures"])
