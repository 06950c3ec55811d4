"""``msoctl switch cc`` on a switch that serves OpenConfig over NETCONF: the driver's
:class:`~drivers.switch.netconf_models.ModelNetconfSession` against the emulated switch
with ``transport="netconf"`` (emulators/netconf/openconfig.py), one device model behind
both transports.

Two switches on stepped clocks, shared by the module and put back to factory before each
test (checked): OpenConfig with Arista's augments named ``model: openconfig`` in the
inventory, and with the project's augments alone named ``model: auto`` (found from the
hello). The WANT of tests/e2e/test_switch_models_cli.py is planned in the device's own
paths, applied, shown and read back equal as intent; a change left pending with
``--no-confirm`` is cancelled, or rolled back by the switch when its clock passes the
timeout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.switch.intent import Intent, from_dict
from drivers.switch.netconf_models import ModelNetconfSession
from drivers.switch.session import open_session
from emulators.clock import SteppedClock
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort
from msoctl.access import Devices
from msoctl.inventory import load_inventory
from tests.support import Msoctl
from tests.support.netconf import PASSWORD, USER, Loop
from tests.support.switch_cli import read as read_intent
from tests.support.switch_cli import reset_and_point, write_want
from tests.support.switch_models import WANT

pytestmark = pytest.mark.e2e

PORTS = {f"Ethernet{n}": PhysicalPort("400G", 30_010.0) for n in range(1, 5)}
SWITCHES: dict[str, dict[str, Any]] = {
    "sw-ocn": {"augments": "arista"},
    "sw-ocn-m": {"augments": "msoctl"},
}
MODEL = {"sw-ocn": "openconfig", "sw-ocn-m": "auto"}

@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    loop = Loop()
    directory = tmp_path_factory.mktemp("oc-netconf")
    clocks = {name: SteppedClock(jump_on_sleep=False) for name in SWITCHES}
    devices = {name: SwitchDevice(name, PORTS, clock=clocks[name], users={USER: PASSWORD},
                                  face="openconfig", transport="netconf", **options)
               for name, options in SWITCHES.items()}
    for device in devices.values():
        loop.run(device.start())
    secret = directory / "switch.password"
    secret.write_text(PASSWORD)
    secret.chmod(0o600)
    (directory / "known_hosts").write_text(
        "".join(device.known_hosts_line() + "\n" for device in devices.values()))
    entries = [{"name": name, "kind": "switch", "transport": "netconf", "model": MODEL[name],
                "address": f"127.0.0.1:{device.port}", "username": USER,
                "password": "file:switch.password", "known_hosts": "known_hosts",
                "timeout_seconds": 5} for name, device in devices.items()]
    inventory = directory / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"journal": "journal.sqlite", "devices": entries}))
    yield {"devices": devices, "clocks": clocks, "inventory": inventory}
    for device in devices.values():
        loop.run(device.stop())
    loop.close()


def read(lab: dict[str, Any], name: str) -> Intent:
    return read_intent(lab["inventory"], name)


@pytest.fixture
def msoctl(lab: dict[str, Any], capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    return reset_and_point(lab["devices"], lab["inventory"], PORTS, capsys, monkeypatch)


@pytest.fixture
def want_file(tmp_path: Path) -> Path:
    return write_want(tmp_path)


def test_plan_is_the_servers_diff_in_openconfig_paths(msoctl: Msoctl, lab: dict[str, Any],
                                                      want_file: Path) -> None:
    devices = Devices(load_inventory(lab["inventory"]))
    for name in SWITCHES:  # named openconfig, or found from the hello (auto)
        with open_session(devices.switch_target(name)) as session:
            assert isinstance(session, ModelNetconfSession), name
            assert session.model.name == "openconfig"
    result = msoctl("switch", "cc", "plan", "sw-ocn", "--file", str(want_file), "-o", "json")
    assert result.code == 0, result.err
    plan = json.loads(result.out)
    paths = [change["path"] for change in plan["changes"]]
    assert "/openconfig-qos:qos/queue-management-profiles/queue-management-profile" \
           "[name=msoctl-Ethernet1-q3]/wred/uniform/config/min-threshold" in paths
    assert any(p.endswith("arista-qos-augments:pfc/config/priorities-no-drop") for p in paths)
    assert any("msoctl-qos-augments:headroom/config/xoff-bytes" in p for p in paths)
    assert read(lab, "sw-ocn").ports["Ethernet1"].queues == {}  # a plan changes nothing


def test_one_want_applies_and_reads_back_equal_as_intent(
        msoctl: Msoctl, lab: dict[str, Any], want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", *SWITCHES, "--file", str(want_file), "-o", "json")
    assert result.code == 0, result.err
    outcomes = {o["device"]: o["status"] for o in json.loads(result.out)["devices"]}
    assert outcomes == dict.fromkeys(SWITCHES, "ok")
    want = from_dict(WANT)
    for name in SWITCHES:
        assert read(lab, name).only(set(want.ports)).ports == want.ports, name
        chip = lab["devices"][name].model.config.port("Ethernet1")
        assert chip.lossless_priorities == frozenset({3, 4}), name
        assert chip.queue(3).wred.enable_ecn is True, name
    shown = json.loads(msoctl("switch", "cc", "show", "sw-ocn", "-o", "json").out)
    [port] = [p for p in shown["ports"] if p["name"] == "Ethernet2"]
    assert (port["pfc_xoff_bytes"], port["lossless_priorities"]) == (23_789_958, [3, 4])
    again = msoctl("switch", "cc", "apply", *SWITCHES, "--file", str(want_file), "-o", "json")
    assert {o["status"] for o in json.loads(again.out)["devices"]} == {"unchanged"}


def test_a_pending_change_is_cancelled_or_rolled_back_by_the_switch(
        msoctl: Msoctl, lab: dict[str, Any], want_file: Path) -> None:
    pending = msoctl("switch", "cc", "apply", "sw-ocn", "--file", str(want_file),
                     "--no-confirm", "--confirm-timeout", "60")
    assert pending.code == 0, pending.err
    assert "pending" in pending.out
    assert read(lab, "sw-ocn").ports["Ethernet1"].lossless_priorities == (3, 4)
    cancelled = msoctl("switch", "cc", "cancel", "sw-ocn")
    assert cancelled.code == 0, cancelled.err
    assert read(lab, "sw-ocn").ports["Ethernet1"].lossless_priorities == ()
    assert lab["devices"]["sw-ocn"].model.config.port("Ethernet1").queues == {}

    again = msoctl("switch", "cc", "apply", "sw-ocn-m", "--file", str(want_file),
                   "--no-confirm", "--confirm-timeout", "30")
    assert again.code == 0, again.err
    assert read(lab, "sw-ocn-m").ports["Ethernet1"].xoff_bytes == 23_789_958
    lab["clocks"]["sw-ocn-m"].advance(31)
    assert read(lab, "sw-ocn-m").ports["Ethernet1"].xoff_bytes is None
    late = msoctl("switch", "cc", "confirm", "sw-ocn-m")
    assert late.code != 0


def test_a_ports_speed_is_changed_through_its_identity(
        msoctl: Msoctl, lab: dict[str, Any], tmp_path: Path) -> None:
    """port-speed is an identityref: the driver writes it in the leaf's own namespace
    without a prefix (RFC 7950 9.10.3), and the switch takes it."""
    want = tmp_path / "want.yaml"
    want.write_text(yaml.safe_dump({"congestion_control": {"ports": {
        "Ethernet3": {"speed": "200G"}}}}))
    plan = json.loads(msoctl("switch", "cc", "plan", "sw-ocn", "--file", str(want),
                             "-o", "json").out)
    assert ("port-speed", "openconfig-if-ethernet:SPEED_200GB") in [
        (c["path"].rsplit("/", 1)[-1], c["after"]) for c in plan["changes"]]
    result = msoctl("switch", "cc", "apply", "sw-ocn", "--file", str(want))
    assert result.code == 0, result.err
    assert read(lab, "sw-ocn").ports["Ethernet3"].speed == "200G"
