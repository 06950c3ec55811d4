"""The lab's control endpoint (emulators/lab/control.py) and ``msoctl lab status|fault``."""

from __future__ import annotations

import http.client
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulators.lab import Lab
from emulators.lab.constants import DEADLINE_HEADER, ENDPOINT_FILE, PROTOCOL, TOKEN_FILE
from tests.support import Msoctl, in_process

MSOCTL = [sys.executable, "-m", "msoctl"]


def _port(document: dict[str, Any], device: str, port: int) -> dict[str, Any]:
    found = next(d for d in document["devices"] if d["name"] == device)
    return next(p for p in found["ports"] if p["port"] == port)


def _fibers(document: dict[str, Any], cable: str) -> list[dict[str, Any]]:
    return [f for f in document["fibers"] if f["cable"] == cable]


def _device(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(d for d in document["devices"] if d["name"] == name)


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---- against `msoctl lab up` in a subprocess -----------------------------------------------


def test_lab_up_status_and_a_fiber_cut_through_the_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    process = subprocess.Popen([*MSOCTL, "lab", "up", "--state-dir", str(state)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    msoctl = in_process(capsys)
    try:
        deadline = time.monotonic() + 30
        while not (state / ENDPOINT_FILE).exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no lab.json written"
            time.sleep(0.05)
        endpoint = json.loads((state / ENDPOINT_FILE).read_text())
        assert endpoint["protocol"] == PROTOCOL and endpoint["host"] == "127.0.0.1"
        assert endpoint["pid"] == process.pid
        token = state / endpoint["token_file"]
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        assert (state / "inventory.yaml").exists()  # written before lab.json

        shown = subprocess.run([*MSOCTL, "lab", "status", "--state-dir", str(state), "-o",
                                "json"], capture_output=True, text=True, timeout=30)
        assert shown.returncode == 0, shown.stderr
        document = json.loads(shown.stdout)
        assert [d["name"] for d in document["devices"]] == [
            "ocs-a", "ocs-b", "ocs-lab", "amp-1", "amp-2", "sw-a", "sw-b", "sw-c", "sw-d",
            "laser-1", "pm-1", "gpu-a1", "gpu-a2", "gpu-b1", "gpu-b2"]
        assert not any(f["cut"] for f in document["fibers"])

        # sw-b:tx1 -> ocs-b 1->121 -> span-1/2 -> ocs-a:61 (no amplifier on B->A)
        inventory = str(state / "inventory.yaml")
        assert msoctl("-i", inventory, "ocs", "connect", "ocs-b", "1:121").code == 0
        status = msoctl("-i", inventory, "lab", "status", "-o", "json")  # found by inventory
        assert status.code == 0, status.err
        lit = _port(json.loads(status.out), "ocs-a", 61)
        assert not lit["dark"] and lit["monitor_dbm"] > -15 and lit["fiber"] == "span-1/2"

        cut = msoctl("lab", "fault", "fiber_cut", "span-1", "--state-dir", str(state))
        assert cut.code == 0, cut.err
        assert "span-1/1, span-1/2" in cut.out
        document = json.loads(msoctl("lab", "status", "--state-dir", str(state), "-o",
                                     "json").out)
        assert [f["cut"] for f in _fibers(document, "span-1")] == [True, True]
        assert [f["cut"] for f in _fibers(document, "span-2")] == [False, False]
        dark = _port(document, "ocs-a", 61)
        assert dark["dark"] and dark["power_dbm"] is None and dark["monitor_dbm"] < -40
        table = msoctl("lab", "status", "--state-dir", str(state))
        assert table.code == 0
        assert any(line.split()[:1] == ["span-1/2"] and "yes" in line.split()
                   for line in table.out.splitlines())

        restored = msoctl("lab", "fault", "fiber_cut", "span-1", "--clear", "--state-dir",
                          str(state))
        assert restored.code == 0 and "cleared" in restored.out
        document = json.loads(msoctl("lab", "status", "--state-dir", str(state), "-o",
                                     "json").out)
        assert not any(f["cut"] for f in document["fibers"])
        again = _port(document, "ocs-a", 61)
        assert not again["dark"] and again["monitor_dbm"] == pytest.approx(
            lit["monitor_dbm"], abs=0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert f"control  http://127.0.0.1:{endpoint['port']}" in out  # lab up prints it
    assert TOKEN_FILE in out
    assert not (state / ENDPOINT_FILE).exists(), "a stopped lab removes lab.json"
    gone = msoctl("lab", "status", "--state-dir", str(state))
    assert gone.code == 1
    assert "no lab is running" in _one_error_line(gone.err)


# ---- against an in-process lab ---------------------------------------------------------------


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("control") / "lab", serial_consoles=False) as lab:
        yield lab


@pytest.fixture
def lab(running: Lab) -> Iterator[Lab]:
    """The module's lab, every fault and cut cleared after each test."""
    yield running
    for name in [*running.ocs, *running.amps, *running.switches]:
        running.clear(name)
    for name in running.telemetry:
        running.clear(f"{name}/snmp")
    for fiber in running.fibers.values():
        fiber.cut = False


@pytest.fixture
def msoctl(lab: Lab, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    return in_process(capsys)


def _request(lab: Lab, method: str, path: str, body: Any = None, *,
             token: str | None = None, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
    endpoint = json.loads((lab.state_dir / ENDPOINT_FILE).read_text())
    if token is None:
        token = (lab.state_dir / endpoint["token_file"]).read_text().strip()
    connection = http.client.HTTPConnection(endpoint["host"], endpoint["port"], timeout=10)
    payload = raw if raw is not None else None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_fault_kinds_come_from_the_devices(lab: Lab) -> None:
    status, answer = _request(lab, "GET", "/v1/faults/kinds")
    assert status == 200
    targets = answer["targets"]
    for name in ["ocs-a", "amp-1", "sw-a", "sw-a/snmp"]:
        assert targets[name] == lab.faults(name).kinds()
    assert targets["span-1"] == targets["span-1/1"] == ["fiber_cut"]
    assert "pump" in targets["amp-1"] and "port" in targets["ocs-a"]
    assert {"congestion", "pfc_storm", "els", "rising_ber"} <= set(targets["sw-a"])
    assert "reboot" in targets["sw-a/snmp"]


def test_an_unknown_kind_is_one_line_listing_what_the_target_takes(msoctl: Msoctl,
                                                                   lab: Lab) -> None:
    result = msoctl("lab", "fault", "pump", "ocs-a")
    assert result.code == 2
    line = _one_error_line(result.err)
    assert "ocs-a does not support fault 'pump'" in line
    assert line.endswith(f"supported: {', '.join(lab.faults('ocs-a').kinds())}")
    assert lab.faults("ocs-a").active() == []
    cable = msoctl("lab", "fault", "pump", "span-1")
    assert cable.code == 2 and "supported: fiber_cut" in _one_error_line(cable.err)
    device = msoctl("lab", "fault", "fiber_cut", "amp-1")
    assert device.code == 2 and "amp-1 does not support fault 'fiber_cut'" in device.err


def test_an_unknown_target_is_one_line_listing_the_targets(msoctl: Msoctl) -> None:
    result = msoctl("lab", "fault", "fiber_cut", "span-9")
    assert result.code == 2
    line = _one_error_line(result.err)
    assert "no device, cable or fiber named 'span-9'" in line
    assert ("ocs-a, ocs-b, ocs-lab, amp-1, amp-2, sw-a, sw-b, sw-c, sw-d, laser-1, pm-1, "
            "gpu-a1, gpu-a2, gpu-b1, gpu-b2, sw-a/snmp, sw-b/snmp, span-1, span-2") in line
    cleared = msoctl("lab", "fault", "pump", "amp-9", "--clear")
    assert cleared.code == 2 and "amp-9" in _one_error_line(cleared.err)


def test_pump_failure_shows_in_status_and_clears(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("lab", "fault", "pump", "amp-1").code == 0
    assert [f.kind for f in lab.faults("amp-1").active()] == ["pump"]
    document = json.loads(msoctl("lab", "status", "-o", "json").out)
    amp = _device(document, "amp-1")
    assert amp["faults"] == [{"kind": "pump", "target": None, "seconds": None, "count": None}]
    assert amp["module_state"] == "ModuleFault" and amp["up"] is False
    table = msoctl("lab", "status").out
    assert any(line.startswith("amp-1 ") and line.rstrip().endswith("pump")
               for line in table.splitlines())
    cleared = msoctl("lab", "fault", "pump", "amp-1", "--clear")
    assert cleared.code == 0 and cleared.out.strip() == "cleared pump on amp-1"
    assert lab.faults("amp-1").active() == []
    nothing = msoctl("lab", "fault", "pump", "amp-1", "--clear")
    assert nothing.code == 0 and "nothing to clear" in nothing.out


def test_ocs_port_failure_with_port(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("lab", "fault", "port", "ocs-b", "--port", "61").code == 0
    assert lab.ocs["ocs-b"].port_state(61) == "F"
    port = _port(json.loads(msoctl("lab", "status", "-o", "json").out), "ocs-b", 61)
    assert port["state"] == "failed" and port["monitor_dbm"] is None
    assert msoctl("lab", "fault", "port", "ocs-b", "--clear").code == 0
    assert lab.ocs["ocs-b"].port_state(61) == "E"
    refused = msoctl("lab", "fault", "port", "ocs-b", "--port", "999")
    assert refused.code == 2 and refused.err.startswith("error: ")


def test_clear_with_port_clears_only_that_part_of_the_target(msoctl: Msoctl, lab: Lab) -> None:
    """Two failed ports of one OCS, two NICs down on one server: ``--clear --port`` clears
    the one named and leaves the other; a cut has no port."""
    for port in ("61", "62"):
        assert msoctl("lab", "fault", "port", "ocs-b", "--port", port).code == 0
    one = msoctl("lab", "fault", "port", "ocs-b", "--clear", "--port", "61")
    assert one.code == 0, one
    assert (lab.ocs["ocs-b"].port_state(61), lab.ocs["ocs-b"].port_state(62)) == ("E", "F")
    for nic in ("mlx5_0", "mlx5_1"):
        assert msoctl("lab", "fault", "nic_down", "gpu-a1", "--port", nic).code == 0
    assert msoctl("lab", "fault", "nic_down", "gpu-a1", "--clear", "--port", "mlx5_1").code == 0
    assert [(f.kind, f.target) for f in lab.faults("gpu-a1").active()] == [
        ("nic_down", "mlx5_0")]
    cut = msoctl("lab", "fault", "fiber_cut", "span-1", "--clear", "--port", "1")
    assert "a cut has no port" in _one_error_line(cut.err)
    assert msoctl("lab", "fault", "all", "ocs-b", "--clear").code == 0
    assert msoctl("lab", "fault", "all", "gpu-a1", "--clear").code == 0


def test_reboot_without_power_loss_keeps_the_map(msoctl: Msoctl, lab: Lab) -> None:
    device = lab.ocs["ocs-a"]
    device.add((2,), (122,))
    result = msoctl("lab", "fault", "reboot", "ocs-a", "--no-power-loss", "--seconds", "0.3",
                    "-o", "json")
    assert result.code == 0
    assert json.loads(result.out)["injected"]["power_loss"] is False
    assert _device(json.loads(msoctl("lab", "status", "-o", "json").out), "ocs-a")["up"] is False
    deadline = time.monotonic() + 5
    while not device.is_up():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert device.connection_map()[2] == 122
    device.disconnect_all()


def test_switch_faults_with_port_queue_seconds_and_count(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("lab", "fault", "pfc_storm", "sw-a", "--port", "Ethernet2", "--queue",
                  "3").code == 0
    assert msoctl("lab", "fault", "latency", "sw-a", "--seconds", "0.01", "--count",
                  "2").code == 0
    assert msoctl("lab", "fault", "rising_ber", "sw-a", "--port", "1").code == 0
    assert msoctl("lab", "fault", "reboot", "sw-a/snmp", "--seconds", "2").code == 0
    document = json.loads(msoctl("lab", "status", "-o", "json").out)
    switch = _device(document, "sw-a")
    assert [(f["kind"], f["target"]) for f in switch["faults"]] == [
        ("pfc_storm", "Ethernet2@3"), ("latency", None), ("rising_ber", "1")]
    assert switch["faults"][1]["count"] == 2
    assert switch["snmp"]["up"] is False  # restarting; listed once, on the switch
    assert switch["snmp"]["faults"] == []
    assert "pfc_storm Ethernet2@3" in msoctl("lab", "status").out
    cleared = msoctl("lab", "fault", "all", "sw-a", "--clear")
    assert cleared.code == 0 and "pfc_storm" in cleared.out and "latency" in cleared.out
    assert lab.faults("sw-a").active() == []
    assert msoctl("lab", "fault", "congestion", "sw-a", "--queue", "3").code == 2  # no --port


def test_cutting_one_fiber(msoctl: Msoctl, lab: Lab) -> None:
    assert msoctl("lab", "fault", "fiber_cut", "span-2/1").code == 0
    assert lab.fibers["span-2/1"].cut and not lab.fibers["span-2/2"].cut
    refused = msoctl("lab", "fault", "fiber_cut", "span-2", "--seconds", "1")
    assert refused.code == 2 and "takes no port" in refused.err
    assert msoctl("lab", "fault", "fiber_cut", "span-2/1", "--clear").code == 0
    assert not lab.fibers["span-2/1"].cut


def test_a_wrong_token_is_refused_and_nothing_is_done(msoctl: Msoctl, lab: Lab) -> None:
    for token in ("not-the-token", ""):
        status, answer = _request(lab, "POST", "/v1/faults",
                                  {"kind": "fiber_cut", "target": "span-1"}, token=token)
        assert status == 401 and "refused" in answer["error"]
    assert not lab.fibers["span-1/1"].cut
    token_file = lab.state_dir / "secrets" / TOKEN_FILE
    saved = token_file.read_text()
    try:
        token_file.write_text("forged\n")
        result = msoctl("lab", "fault", "fiber_cut", "span-1")
        assert result.code == 1
        assert "refused" in _one_error_line(result.err)
    finally:
        token_file.write_text(saved)
    assert not lab.fibers["span-1/1"].cut


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), [
    ("GET", "/v1/nothing", None, 404, "no such resource"),
    ("GET", "/v1/faults", None, 405, "takes POST"),
    ("POST", "/v1/faults", b"{not json", 400, "not JSON"),
    ("POST", "/v1/faults", b"[1]", 400, "JSON object"),
    ("POST", "/v1/faults", b'{"kind": "pump"}', 400, "target is required"),
    ("POST", "/v1/faults", b'{"kind": "pump", "target": "amp-1", "colour": 1}', 400,
     "unknown field colour"),
    ("POST", "/v1/faults", b'{"kind": "latency", "target": "sw-a", "seconds": -1}', 400,
     "seconds must be a number >= 0"),
    ("POST", "/v1/faults", b'{"kind": "latency", "target": "sw-a", "count": 0}', 400,
     "count must be an integer >= 1"),
    ("POST", "/v1/faults", b'{"kind": "latency", "target": "sw-a"}', 400, "needs seconds"),
])
def test_bad_requests_get_clear_errors(lab: Lab, method: str, path: str, body: bytes | None,
                                       status: int, message: str) -> None:
    got, answer = _request(lab, method, path, raw=body)
    assert got == status
    assert message in answer["error"]
    assert lab.faults("sw-a").active() == [] and lab.faults("amp-1").active() == []


def test_no_lab_running(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    msoctl = in_process(capsys)
    monkeypatch.delenv("MSOCTL_INVENTORY", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./inventory.yaml: the default lab-state
    result = msoctl("lab", "status")
    assert result.code == 1
    assert "no lab is running in lab-state" in _one_error_line(result.err)
    # A lab.json left by a killed lab: nothing listens on its port.
    state = tmp_path / "stale"
    (state / "secrets").mkdir(parents=True)
    (state / "secrets" / TOKEN_FILE).write_text("t\n")
    (state / ENDPOINT_FILE).write_text(json.dumps({
        "protocol": PROTOCOL, "host": "127.0.0.1", "port": _closed_port(),
        "token_file": f"secrets/{TOKEN_FILE}", "pid": os.getpid()}))
    stale = msoctl("lab", "fault", "fiber_cut", "span-1", "--state-dir", str(state))
    assert stale.code == 1
    assert "nothing listens" in _one_error_line(stale.err)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_request_the_lab_takes_up_after_its_deadline_does_nothing(
        lab: Lab, msoctl: Msoctl, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab that cannot act (stopped with SIGSTOP, or busy: here its request lock is
    held) is waited for a bounded time, the request reported failed, and when the lab
    takes the request up later it does nothing with it: a fault reported failed never
    takes effect. A deadline already past is answered 408 at once."""
    from msoctl.lab import client

    monkeypatch.setattr(client, "TIMEOUT_SECONDS", 0.5)
    assert lab.control is not None
    busy = lab.control._lock
    busy.acquire()
    try:
        result = msoctl("lab", "fault", "fiber_cut", "span-1")
        assert result.code == 1
        assert "no answer" in _one_error_line(result.err) and "will not take effect" \
            in result.err
    finally:
        busy.release()
    time.sleep(0.3)  # the lab takes the queued request up now, past its deadline
    assert not lab.fibers["span-1/1"].cut
    assert msoctl("lab", "status").code == 0  # and it goes on serving
    endpoint = json.loads((lab.state_dir / ENDPOINT_FILE).read_text())
    token = (lab.state_dir / endpoint["token_file"]).read_text().strip()
    connection = http.client.HTTPConnection(endpoint["host"], endpoint["port"], timeout=10)
    try:
        connection.request("POST", "/v1/faults",
                           body=json.dumps({"kind": "fiber_cut", "target": "span-1"}),
                           headers={"Authorization": f"Bearer {token}",
                                    DEADLINE_HEADER: f"{time.time() - 1:.3f}"})
        response = connection.getresponse()
        assert response.status == 408 and b"nothing was done" in response.read()
    finally:
        connection.close()
    assert not lab.fibers["span-1/1"].cut
