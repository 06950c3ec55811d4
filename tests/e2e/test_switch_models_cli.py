"""``msoctl switch cc`` on switches of every model: OpenConfig over gNMI (Arista's
augments, or the project's alone without the Commit extension), SONiC's CONFIG_DB over
gNMI, and the msoctl module over NETCONF.

Four emulated switches (emulators/switch/device.py, one face each) on stepped clocks,
shared by the module and put back to factory before each test (checked), with an
inventory that names each one's transport and model. One WANT in the operator's
words goes to all of them and reads back equal as intent; confirmed changes over gNMI
are confirmed, cancelled, or rolled back by the switch when their time passes; a
fleet of mixed models is all-or-nothing; what a switch refuses comes back as one
``error:`` line with the device's own path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.switch.intent import Intent, from_dict
from drivers.transports.gnmi import GnmiClient, GnmiRejected
from emulators.clock import SteppedClock
from emulators.gnmi.server import GnmiTls
from emulators.lab.pki import Authority
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort
from msoctl.access import Devices
from msoctl.inventory import load_inventory
from tests.support import Msoctl
from tests.support.netconf import PASSWORD, USER, Loop
from tests.support.switch_cli import read as read_intent
from tests.support.switch_cli import reset_and_point, write_want
from tests.support.switch_models import FAST, WANT

pytestmark = pytest.mark.e2e

PORTS = {f"Ethernet{n}": PhysicalPort("400G", 30_010.0) for n in range(1, 5)}
SWITCHES: dict[str, dict[str, Any]] = {
    "sw-oc": {"face": "openconfig", "augments": "arista"},
    "sw-ocm": {"face": "openconfig", "augments": "msoctl", "commit_confirmed": False},
    "sw-sonic": {"face": "sonic"},
    "sw-nc": {"face": "msoctl"},
}
GNMI = ("sw-oc", "sw-ocm", "sw-sonic")
MODEL = {"sw-oc": "openconfig", "sw-ocm": "auto", "sw-sonic": "sonic", "sw-nc": "msoctl"}

@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    loop = Loop()
    authority = Authority("test CA")
    server = authority.issue("switch", server=True)
    directory = tmp_path_factory.mktemp("switches")
    (directory / "ca.pem").write_bytes(authority.cert_pem)
    clocks = {name: SteppedClock(jump_on_sleep=False) for name in SWITCHES}
    devices = {name: SwitchDevice(name, PORTS, clock=clocks[name], users={USER: PASSWORD},
                                  gnmi_tls=GnmiTls(server.cert_pem, server.key_pem)
                                  if name == "sw-oc" else None, **options)
               for name, options in SWITCHES.items()}
    for device in devices.values():
        loop.run(device.start())
    secret = directory / "switch.password"
    secret.write_text(PASSWORD)
    secret.chmod(0o600)
    (directory / "known_hosts").write_text(devices["sw-nc"].known_hosts_line() + "\n")
    entries = []
    for name, device in devices.items():
        entry: dict[str, Any] = {"name": name, "kind": "switch", "address":
                                 f"127.0.0.1:{device.port}", "username": USER,
                                 "password": "file:switch.password", "model": MODEL[name],
                                 "timeout_seconds": 5, "labels": {"fleet": "mixed"}}
        if name in GNMI:
            entry["transport"] = "gnmi"
            entry.update({"tls": {"ca_file": "ca.pem"}} if name == "sw-oc"
                         else {"insecure": True})
        else:
            entry.update({"transport": "netconf", "known_hosts": "known_hosts"})
        entries.append(entry)
    inventory = directory / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"journal": "journal.sqlite", "devices": entries}))
    yield {"devices": devices, "clocks": clocks, "inventory": inventory}
    for device in devices.values():
        loop.run(device.stop())
    loop.close()


@pytest.fixture
def msoctl(lab: dict[str, Any], capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    return reset_and_point(lab["devices"], lab["inventory"], PORTS, capsys, monkeypatch)


@pytest.fixture
def want_file(tmp_path: Path) -> Path:
    return write_want(tmp_path)


def read(lab: dict[str, Any], name: str) -> Intent:
    return read_intent(lab["inventory"], name)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_one_want_reads_back_equal_as_intent_on_every_model(
        msoctl: Msoctl, lab: dict[str, Any], want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", *SWITCHES, "--file", str(want_file), "-o", "json")
    assert result.code == 0, result.err
    outcomes = {o["device"]: o for o in json.loads(result.out)["devices"]}
    assert {name: o["status"] for name, o in outcomes.items()} == dict.fromkeys(SWITCHES, "ok")
    want = from_dict(WANT)
    for name in SWITCHES:
        assert read(lab, name).only(set(want.ports)).ports == want.ports, name
    again = msoctl("switch", "cc", "apply", *SWITCHES, "--file", str(want_file), "-o", "json")
    assert {o["status"] for o in json.loads(again.out)["devices"]} == {"unchanged"}


def test_plans_are_in_each_devices_own_paths(msoctl: Msoctl, want_file: Path) -> None:
    shown = {name: json.loads(msoctl("switch", "cc", "plan", name, "--file", str(want_file),
                                     "-o", "json").out) for name in SWITCHES}
    paths = {name: [c["path"] for c in plan["changes"]] for name, plan in shown.items()}
    assert "/openconfig-qos:qos/queue-management-profiles/queue-management-profile" \
           "[name=msoctl-Ethernet1-q3]/wred/uniform/config/min-threshold" in paths["sw-oc"]
    assert any(p.endswith("arista-qos-augments:pfc/config/priorities-no-drop")
               for p in paths["sw-oc"])
    assert any("msoctl-qos-augments:pfc/config/lossless-priorities" in p
               for p in paths["sw-ocm"])
    assert "/sonic-db:CONFIG_DB/localhost/PORT_QOS_MAP/Ethernet1/pfc_enable" in paths["sw-sonic"]
    assert any(p.startswith("/switch/ports/port[name='Ethernet1']") for p in paths["sw-nc"])
    impacts = {name: plan["impact"] for name, plan in shown.items()}
    assert all(found == [] for found in impacts.values())  # no links in this inventory


def test_confirmed_change_over_gnmi_confirm_and_cancel(msoctl: Msoctl, lab: dict[str, Any],
                                                       want_file: Path) -> None:
    pending = msoctl("switch", "cc", "apply", "sw-oc", "--file", str(want_file),
                     "--no-confirm", "--confirm-timeout", "60")
    assert pending.code == 0, pending.err
    assert "pending" in pending.out
    assert read(lab, "sw-oc").ports["Ethernet1"].lossless_priorities == (3, 4)
    confirmed = msoctl("switch", "cc", "confirm", "sw-oc")
    assert confirmed.code == 0, confirmed.err
    lab["clocks"]["sw-oc"].advance(120)  # long past the timeout: confirmed, it stays
    assert read(lab, "sw-oc").ports["Ethernet1"].lossless_priorities == (3, 4)

    lab["devices"]["sw-oc"].factory_reset()
    msoctl("switch", "cc", "apply", "sw-oc", "--file", str(want_file), "--no-confirm")
    cancelled = msoctl("switch", "cc", "cancel", "sw-oc")
    assert cancelled.code == 0, cancelled.err
    assert read(lab, "sw-oc").ports["Ethernet1"].lossless_priorities == ()


def test_the_switch_rolls_back_an_unconfirmed_change_when_its_time_passes(
        msoctl: Msoctl, lab: dict[str, Any], want_file: Path) -> None:
    pending = msoctl("switch", "cc", "apply", "sw-oc", "--file", str(want_file),
                     "--no-confirm", "--confirm-timeout", "30")
    assert pending.code == 0, pending.err
    lab["clocks"]["sw-oc"].advance(31)
    assert read(lab, "sw-oc").ports["Ethernet1"].lossless_priorities == ()
    late = msoctl("switch", "cc", "confirm", "sw-oc")
    assert late.code != 0
    assert one_error_line(late.err).startswith("error: sw-oc: ")


def test_without_the_commit_extension_the_change_is_read_back_on_a_new_channel(
        msoctl: Msoctl, lab: dict[str, Any], want_file: Path) -> None:
    result = msoctl("switch", "cc", "apply", "sw-ocm", "--file", str(want_file), "-o", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["devices"][0]["status"] == "ok"
    assert read(lab, "sw-ocm").ports["Ethernet2"].xoff_bytes == 23_789_958
    refused = msoctl("switch", "cc", "confirm", "sw-ocm", "--persist-id", "msoctl-x")
    assert refused.code == 2
    assert "Commit extension" in one_error_line(refused.err)


def test_a_mixed_fleet_is_all_or_nothing(msoctl: Msoctl, lab: dict[str, Any],
                                         tmp_path: Path) -> None:
    fast = tmp_path / "fast.yaml"
    fast.write_text(yaml.safe_dump(FAST))
    result = msoctl("switch", "cc", "apply", "sw-oc", "sw-ocm", "sw-nc", "sw-sonic", "--file",
                    str(fast), "--all-or-nothing", "-o", "json")
    assert result.code != 0
    outcomes = {o["device"]: o for o in json.loads(result.out)["devices"]}
    assert outcomes["sw-sonic"]["status"] == "failed"
    assert "SONiC CONFIG_DB on this switch has no place for: fast_cnp" in \
        outcomes["sw-sonic"]["error"]
    # sw-ocm has no Commit extension: its change was applied, and is put back
    assert {n: outcomes[n]["status"] for n in ("sw-oc", "sw-ocm", "sw-nc")} == dict.fromkeys(
        ("sw-oc", "sw-ocm", "sw-nc"), "cancelled"), outcomes
    for name in ("sw-oc", "sw-ocm", "sw-nc", "sw-sonic"):  # as they were
        found = read(lab, name)
        assert found.fast_cnp is None or not found.fast_cnp.enabled, name
        assert not any(p.lossless_priorities or p.queues for p in found.ports.values()), name
    both = msoctl("switch", "cc", "apply", "sw-oc", "sw-nc", "--file", str(fast),
                  "--all-or-nothing")
    assert both.code == 0, both.err
    assert read(lab, "sw-oc").fast_cnp is not None and read(lab, "sw-oc").fast_cnp.enabled
    assert read(lab, "sw-nc").ports["Ethernet1"].queues[3].fast_cnp is True


def test_a_port_the_switch_lacks_is_refused_before_anything_is_sent(
        msoctl: Msoctl, tmp_path: Path) -> None:
    want = tmp_path / "want.yaml"
    want.write_text("congestion_control:\n  ports:\n    Ethernet9: {speed: 400G}\n")
    for name in GNMI:
        result = msoctl("switch", "cc", "apply", name, "--file", str(want))
        assert result.code != 0
        assert "has no port Ethernet9" in result.out + result.err, name


@pytest.mark.parametrize(("name", "where", "value", "path"), [
    ("sw-oc", "/openconfig-qos:qos/queue-management-profiles/queue-management-profile"
     "[name=p]", {"name": "p", "config": {"name": "p"}, "wred": {"uniform": {"config": {
         "min-threshold": "many"}}}}, "min-threshold"),
    ("sw-oc", "/openconfig-qos:qos/queues/queue[name=queue3]/config",
     {"name": "queue3", "queue-id": 3, "colour": "red"}, "colour"),
    ("sw-sonic", "/sonic-db:CONFIG_DB/localhost/WRED_PROFILE/p",
     {"green_min_threshold": "1", "bogus_field": "2"}, "bogus_field"),
])
def test_bad_documents_are_refused_with_the_devices_path(
        lab: dict[str, Any], msoctl: Msoctl, name: str, where: str, value: Any,
        path: str) -> None:
    target = Devices(load_inventory(lab["inventory"])).switch_target(name)
    before = read(lab, name)
    with GnmiClient(target.gnmi) as client:  # type: ignore[union-attr]
        with pytest.raises(GnmiRejected) as refused:
            client.set(replace=[(where, value)])
        try:
            held = json.dumps(client.get_json(where, data_type="CONFIG"))
        except GnmiRejected as missing:
            assert missing.code == "NOT_FOUND"
            held = ""
    assert refused.value.code == "INVALID_ARGUMENT"
    assert path in refused.value.details
    assert path not in held and "many" not in held
    assert read(lab, name) == before


@pytest.mark.parametrize(("change", "expected"), [
    (lambda entry, d: entry.update(password="file:wrong.password"), "authentication"),
    (lambda entry, d: entry.update(tls={"ca_file": "other-ca.pem"}), "cannot reach"),
    (lambda entry, d: entry.update(address="127.0.0.1:1"), "cannot reach"),
    (lambda entry, d: entry.update(model="sonic"), "announces none of sonic-db"),
])
def test_a_switch_that_cannot_be_used_is_one_error_line_and_nothing_changes(
        lab: dict[str, Any], msoctl: Msoctl, want_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, change: Any, expected: str) -> None:
    document = yaml.safe_load(lab["inventory"].read_text())
    entry = next(d for d in document["devices"] if d["name"] == "sw-oc")
    change(entry, document)
    (tmp_path / "wrong.password").write_text("not the password")
    (tmp_path / "wrong.password").chmod(0o600)
    (tmp_path / "other-ca.pem").write_bytes(Authority("another CA").cert_pem)
    for name in ("ca.pem", "switch.password", "known_hosts"):
        (tmp_path / name).write_bytes((lab["inventory"].parent / name).read_bytes())
    (tmp_path / "switch.password").chmod(0o600)
    document["journal"] = str(tmp_path / "journal.sqlite")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(document))
    monkeypatch.setenv("MSOCTL_INVENTORY", str(inventory))
    result = msoctl("switch", "cc", "apply", "sw-oc", "--file", str(want_file))
    assert result.code != 0
    line = one_error_line(result.err)
    assert line.startswith("error: sw-oc") and expected in line, line
    assert read(lab, "sw-oc").ports["Ethernet1"].lossless_priorities == ()


def test_counters_come_back_in_each_models_state(msoctl: Msoctl, lab: dict[str, Any],
                                                 want_file: Path) -> None:
    from emulators.faults import Fault

    assert msoctl("switch", "cc", "apply", *SWITCHES, "--file", str(want_file)).code == 0
    for name in SWITCHES:
        lab["devices"][name].faults.inject(Fault("congestion", target="Ethernet1@3",
                                                 seconds=0.05))
        lab["clocks"][name].advance(0.06)
    marked = {}
    for name in SWITCHES:
        result = msoctl("switch", "counters", name, "--port", "Ethernet1", "-o", "json")
        assert result.code == 0, result.err
        [port] = json.loads(result.out)["ports"]
        queue = next(q for q in port["queues"] if q["queue_id"] == 3)
        marked[name] = queue["counters"]["ecn_marked_packets"]
        assert port["counters"]["ecn_marked_packets"] >= marked[name]
        assert queue["counters"]["dropped_packets"] == 0, name  # the headroom holds
    assert all(count > 0 for count in marked.values()), marked
