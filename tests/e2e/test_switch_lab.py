"""The lab's switches: NETCONF over SSH on loopback, reached the way the inventory says
(a generated password in a 0600 file, host keys in the lab's known_hosts), with a real
ncclient client; configuration committed over NETCONF drives the congestion model; faults
on one switch stay on that switch."""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from lxml import etree
from ncclient import NCClientError
from ncclient.manager import Manager
from ncclient.operations.errors import TimeoutExpiredError
from ncclient.operations.rpc import RPCError
from ncclient.transport.errors import AuthenticationError, SSHUnknownHostError

from drivers.switch.schema import NAMESPACE
from drivers.switch.tree import to_xml
from emulators.faults import Fault, FaultError
from emulators.lab import Lab
from emulators.netconf import NetconfServer
from emulators.switch.device import DEFAULT_CONGESTION_SECONDS, MAX_CONGESTION_SECONDS
from msoctl.ops.switch_plan import PortLink, derive
from tests.support import wait_until
from tests.support.netconf import lab_session as netconf
from tests.support.netconf import switch_entry

PORTS = [f"Ethernet{n}" for n in range(1, 13)]  # 8 toward the OCS, 4 for servers' NICs
LOSSLESS = 3
HELD_SECONDS = 600.0  # a latency fault's hold: far past pytest's per-test timeout (120 s)


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def q(*steps: str) -> str:
    return "/".join(f"{{{NAMESPACE}}}{step}" for step in steps)


def running_ports(session: Manager) -> list[dict[str, str]]:
    data = session.get_config(source="running").data
    return [{etree.QName(leaf).localname: leaf.text or "" for leaf in port}
            for port in data.findall(q("switch", "ports", "port"))]


def queue_counters(session: Manager, port: str, queue: int) -> dict[str, int]:
    """The counters of one queue, read with <get> and a subtree filter."""
    subtree = (f'<switch xmlns="{NAMESPACE}"><ports><port><name>{port}</name><queues><queue>'
               f"<queue-id>{queue}</queue-id><counters/></queue></queues></port></ports>"
               "</switch>")
    data = session.get(filter=("subtree", subtree)).data
    found = data.find(q("switch", "ports", "port", "queues", "queue", "counters"))
    assert found is not None, etree.tostring(data)
    return {etree.QName(leaf).localname: int(leaf.text or "") for leaf in found}


def commit(session: Manager, tree: dict[str, Any]) -> None:
    with session.locked("candidate"):
        session.discard_changes()
        session.edit_config(target="candidate", config=to_xml(
            tree, replace=[("switch", "ports", "port")]))
        session.commit()


def planned(*, fast_cnp: bool) -> dict[str, Any]:
    return derive([PortLink(port, "30km", "400G") for port in PORTS], fast_cnp=fast_cnp).config


def burst(lab: Lab, name: str, port: str) -> None:
    """A congestion burst on the port's lossless queue; wait (real time) until it is over."""
    lab.inject(name, Fault("congestion", target=f"{port}@{LOSSLESS}"))
    time.sleep(DEFAULT_CONGESTION_SECONDS + 0.02)


# ---- the inventory and the way in ------------------------------------------------------


def test_the_inventory_lists_each_switch_with_its_model_transport_and_secrets(
        lab: Lab) -> None:
    document = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    entries = {d["name"]: d for d in document["devices"] if d["kind"] == "switch"}
    assert list(entries) == ["sw-a", "sw-b", "sw-c", "sw-d"]
    for name, model, campus in (("sw-c", "openconfig", "a"), ("sw-d", "sonic", "b")):
        assert entries[name] == {
            "name": name, "kind": "switch", "transport": "gnmi", "model": model,
            "address": f"127.0.0.1:{lab.switches[name].port}", "username": "msoctl",
            "password": f"file:secrets/{name}.password",
            "tls": {"ca_file": f"pki/{name}-ca.pem"}, "timeout_seconds": 10.0,
            "labels": {"campus": campus, "lab": "two-campus-30km", "role": "switch"}}
        device = switch_entry(lab, name)
        assert device.gnmi is not None and device.gnmi.ca_file == lab.state_dir / "pki" / \
            f"{name}-ca.pem" and not device.gnmi.insecure and device.model == model
        assert "BEGIN CERTIFICATE" in (lab.state_dir / "pki" / f"{name}-ca.pem").read_text()
    for name, campus in (("sw-a", "a"), ("sw-b", "b")):
        assert entries[name] == {
            "name": name, "kind": "switch", "transport": "netconf", "model": "msoctl",
            "address": f"127.0.0.1:{lab.switches[name].port}", "username": "msoctl",
            "password": f"file:secrets/{name}.password", "known_hosts": "known_hosts",
            "timeout_seconds": 10.0,
            "labels": {"campus": campus, "lab": "two-campus-30km", "role": "switch"},
            "snmp": {"address": f"127.0.0.1:{lab.snmp[name].port}", "user": "msoctl",
                     "auth_key": f"file:secrets/{name}.snmp-auth",
                     "priv_key": f"file:secrets/{name}.snmp-priv",
                     "timeout_seconds": 2.0, "retries": 1},
        }
        device = switch_entry(lab, name)  # msoctl reads it
        assert device.netconf is not None and device.netconf.port == lab.switches[name].port
        assert device.netconf.known_hosts == lab.state_dir / "known_hosts"
        assert not device.netconf.accept_unknown_host_keys
    secrets = lab.state_dir / "secrets"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o700
    for name in entries:
        for filename in (f"{name}.password", f"{name}.snmp-auth", f"{name}.snmp-priv")[
                :3 if name in ("sw-a", "sw-b") else 1]:
            path = secrets / filename
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert len(path.read_text().strip()) >= 32
            assert path.read_text().strip() not in (
                lab.state_dir / "inventory.yaml").read_text()
    lines = (lab.state_dir / "known_hosts").read_text().splitlines()
    assert lines == [lab.switches["sw-a"].known_hosts_line(),
                     lab.switches["sw-b"].known_hosts_line()]
    assert lines[0].startswith(f"[127.0.0.1]:{lab.switches['sw-a'].port} ssh-ed25519 ")
    assert not list(lab.state_dir.rglob(".*.tmp"))


def test_each_start_makes_new_passwords_and_host_keys(tmp_path: Path) -> None:
    seen = []
    for _ in range(2):
        with Lab(tmp_path, serial_consoles=False) as lab:
            seen.append(((lab.state_dir / "secrets" / "sw-a.password").read_text(),
                         lab.switches["sw-a"].known_hosts_line().split()[-1]))
            with netconf(lab, "sw-a") as session:
                assert session.connected
    assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1]


def test_host_keys_are_verified_against_the_labs_known_hosts(lab: Lab) -> None:
    with netconf(lab, "sw-a") as session:
        assert ":candidate" in session.server_capabilities
    port = lab.switches["sw-a"].port
    wrong = lab.state_dir / "wrong_known_hosts"
    for key in (NetconfServer().host_public_key,  # an unknown key
                lab.switches["sw-b"].known_hosts_line().split(maxsplit=1)[1]):  # sw-b's
        wrong.write_text(f"[127.0.0.1]:{port} {key}\n")
        with pytest.raises(SSHUnknownHostError), netconf(lab, "sw-a", known_hosts=wrong):
            pass
    wrong.write_text("")  # not listed at all
    with pytest.raises(SSHUnknownHostError), netconf(lab, "sw-a", known_hosts=wrong):
        pass


def test_a_wrong_password_is_refused(lab: Lab) -> None:
    with pytest.raises(AuthenticationError), netconf(lab, "sw-a", password="not-it"):
        pass
    sw_b_password = switch_entry(lab, "sw-b").secrets["password"].resolve()
    with pytest.raises(AuthenticationError), netconf(lab, "sw-a", password=sw_b_password):
        pass


# ---- configuration and the model --------------------------------------------------------


def test_factory_configuration_lists_every_port_with_its_speed_only(lab: Lab) -> None:
    with netconf(lab, "sw-b") as session:
        assert running_ports(session) == [{"name": port, "speed": "400G"} for port in PORTS]
        state = session.get().data
    buffer = state.find(q("switch", "buffer"))
    assert buffer is not None
    assert buffer.findtext(q("total-bytes")) == "8000000000"
    assert buffer.findtext(q("lossless-pool-bytes")) == "4000000000"
    assert len(state.findall(q("switch", "ports", "port", "queues", "queue", "counters"))) == \
        8 * len(PORTS)


def test_switch_generated_cnps_move_only_with_fast_cnp_committed(lab: Lab) -> None:
    model = lab.switches["sw-a"].model
    with netconf(lab, "sw-a") as session:
        commit(session, planned(fast_cnp=False))
        assert model.config.port("Ethernet1").lossless_priorities == {LOSSLESS}
        assert not model.config.fast_cnp.enabled
        burst(lab, "sw-a", "Ethernet1")
        without = queue_counters(session, "Ethernet1", LOSSLESS)
        assert without["ecn-marked-packets"] > 0
        assert without["switch-generated-cnps"] == 0
        assert without["dropped-packets"] == 0  # the planner's headroom holds 30.01 km

        commit(session, planned(fast_cnp=True))
        assert model.config.fast_cnp.enabled
        burst(lab, "sw-a", "Ethernet2")
        with_fast_cnp = queue_counters(session, "Ethernet2", LOSSLESS)
        assert with_fast_cnp["switch-generated-cnps"] > 0
        assert with_fast_cnp["ecn-marked-packets"] > 0
        assert with_fast_cnp["dropped-packets"] == 0
        # the first burst's queue kept its counters
        assert queue_counters(session, "Ethernet1", LOSSLESS) == without
    with netconf(lab, "sw-b") as session:  # sw-b was neither configured nor congested
        assert running_ports(session)[0] == {"name": "Ethernet1", "speed": "400G"}
        assert all(value == 0 for value in queue_counters(session, "Ethernet1",
                                                          LOSSLESS).values())


def test_the_factory_configuration_neither_pauses_nor_marks(lab: Lab) -> None:
    burst(lab, "sw-a", "Ethernet3")
    with netconf(lab, "sw-a") as session:
        counters = queue_counters(session, "Ethernet3", LOSSLESS)
    assert counters["pfc-pause-frames-sent"] == 0 and counters["ecn-marked-packets"] == 0
    assert counters["buffer-watermark-bytes"] > 0


def test_a_port_the_chip_lacks_is_refused_and_running_stays(lab: Lab) -> None:
    tree = planned(fast_cnp=True)
    tree["switch"]["ports"]["port"].append({"name": "Ethernet13", "speed": "400G"})
    with netconf(lab, "sw-a") as session:
        before = session.get_config(source="running").data_xml
        with session.locked("candidate"):
            session.edit_config(target="candidate", config=to_xml(tree))
            with pytest.raises(RPCError) as refused:
                session.commit()
            session.discard_changes()
        assert refused.value.tag == "operation-failed"
        assert "Ethernet13" in str(refused.value)
        assert session.get_config(source="running").data_xml == before
    assert not lab.switches["sw-a"].model.config.fast_cnp.enabled


# ---- faults -------------------------------------------------------------------------------


def test_latency_on_sw_a_slows_sw_a_only(lab: Lab) -> None:
    """Told by what each client got, not by its clock (a loaded machine stretches a fast
    reply past any bound): the latency outlasts pytest's per-test timeout, so a reply it
    held back never comes within the clients' timeouts."""
    lab.inject("sw-a", Fault("latency", seconds=HELD_SECONDS))
    assert [f.kind for f in lab.faults("sw-a").active()] == ["latency"]
    assert lab.faults("sw-b").active() == []
    with netconf(lab, "sw-a", timeout=1) as slow, netconf(lab, "sw-b") as fast:
        assert fast.get_config(source="running").ok  # sw-b's reply is not held back
        with pytest.raises(TimeoutExpiredError):  # sw-a's is
            slow.get_config(source="running")
        lab.clear("sw-a", "latency")
        with netconf(lab, "sw-a") as cleared:  # the held reply still sleeps in slow's session
            assert cleared.get_config(source="running").ok  # cleared: not held back
            assert cleared.kill_session(slow.session_id).ok  # ends the held reply's session
    assert int(slow.session_id) not in lab.switches["sw-a"].server.sessions  # type: ignore[union-attr]


def test_drop_on_sw_a_ends_sw_a_sessions_only(lab: Lab) -> None:
    with netconf(lab, "sw-a", timeout=3) as dropped, netconf(lab, "sw-b") as kept:
        lab.inject("sw-a", Fault("drop", count=1))
        with pytest.raises(NCClientError):
            dropped.get_config(source="running")
        assert kept.get_config(source="running").ok
        wait_until(lambda: not lab.switches["sw-a"].server.sessions,  # type: ignore[union-attr]
                   "sw-a's session to end")
    assert lab.faults("sw-a").active() == []  # one use, spent
    with netconf(lab, "sw-a") as again:
        assert again.get_config(source="running").ok


def test_model_faults_go_to_the_model_and_transport_faults_to_the_server(lab: Lab) -> None:
    device = lab.switches["sw-a"]
    lab.inject("sw-a", Fault("congestion", target="Ethernet1"))
    lab.inject("sw-a", Fault("pfc_storm", target="Ethernet4@3"))
    lab.inject("sw-a", Fault("latency", seconds=0.01))
    assert sorted(f.kind for f in lab.faults("sw-a").active()) == [
        "congestion", "latency", "pfc_storm"]
    modelled = {f.kind: f for f in device.model.faults.active()}
    assert set(modelled) == {"congestion", "pfc_storm"}  # latency is the server's
    assert modelled["congestion"].seconds == DEFAULT_CONGESTION_SECONDS  # a finite burst
    time.sleep(0.1)
    with netconf(lab, "sw-a") as session:
        assert queue_counters(session, "Ethernet4", 3)["pfc-pause-frames-received"] > 1000
    lab.clear("sw-a", "pfc_storm")
    assert {f.kind for f in device.model.faults.active()} == {"congestion"}
    lab.clear("sw-a")
    assert device.model.faults.active() == [] and lab.faults("sw-a").active() == []
    assert lab.switches["sw-b"].model.faults.active() == []


def test_congestion_longer_than_the_lab_can_model_is_refused(lab: Lab) -> None:
    with pytest.raises(FaultError, match="at most"):
        lab.inject("sw-a", Fault("congestion", target="Ethernet1",
                                 seconds=MAX_CONGESTION_SECONDS * 2))
    with pytest.raises(FaultError, match="PORT"):
        lab.inject("sw-a", Fault("congestion", target="Ethernet99"))
    with pytest.raises(FaultError, match="does not support"):
        lab.inject("sw-a", Fault("pump"))
    assert lab.faults("sw-a").active() == []
