"""``msoctl telemetry cpo|cpc`` against the lab's switches, and net-snmp through the lab's
inventory credentials.

One lab for the module (the lab's clock is real time); each test clears what it injects.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from drivers.snmp import mibs
from emulators.faults import Fault, FaultError
from emulators.lab import Lab
from msoctl.inventory import load_inventory
from tests.support import Msoctl, Result, in_process
from tests.support.peers import require_executable

LANE_KEYS = {"port", "lane", "snr_db", "pre_fec_ber", "fec_corrected_total",
             "fec_uncorrectable_total"}
RATE_KEYS = {"fec_corrected_per_second", "fec_uncorrectable_per_second", "codewords",
             "counted_seconds", "fec_histogram", "codeword_error_ratio", "frame_loss_ratio",
             "cer_basis", "no_rates_reason"}


@pytest.fixture(scope="module")
def telemetry_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("telemetry") / "lab") as running:
        yield running


@pytest.fixture
def msoctl(telemetry_lab: Lab, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[Msoctl]:
    monkeypatch.setenv("MSOCTL_INVENTORY", str(telemetry_lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    yield in_process(capsys)
    telemetry_lab.clear("sw-a")
    telemetry_lab.clear("sw-a/snmp")


def _json(msoctl: Msoctl, *args: str) -> dict[str, Any]:
    result = msoctl("telemetry", *args, "-o", "json")
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    return document


def test_cpo_json_has_engines_lasers_and_lanes(msoctl: Msoctl) -> None:
    document = _json(msoctl, "cpo", "sw-a")
    assert document["device"] == "sw-a" and document["uptime_seconds"] > 0
    # 12 ports (8 toward the OCS, 4 for servers' NICs) of 8 lanes, 16 lanes an engine
    assert [engine["index"] for engine in document["engines"]] == [1, 2, 3, 4, 5, 6]
    for engine in document["engines"]:
        assert set(engine) == {"index", "name", "lane_count", "temperature_celsius",
                               "temperature_high_celsius", "supply_voltage_volts", "status"}
        assert 40 < engine["temperature_celsius"] < 85 and engine["status"] == "normal"
    assert [(laser["module"], laser["lane"]) for laser in document["lasers"]] == [
        (module, lane) for module in (1, 2, 3) for lane in range(1, 5)]
    for laser in document["lasers"]:
        assert laser["state"] == "on" and laser["faults"] == []
        assert 17.5 < laser["output_power_dbm"] < 18.5 and laser["bias_current_ma"] > 100
    assert len(document["lanes"]) == 12 * 8
    assert document["lanes"][0]["port_name"] == "Ethernet1"
    assert all(lane["tx_power_dbm"] > 0 for lane in document["lanes"])
    # Nothing is patched through the OCS yet: every receiver toward it is dark
    # (MsoPowerDbm's floor); a server port receives what its NIC launches, less its cable.
    fabric = [lane for lane in document["lanes"] if lane["port"] <= 8]
    assert all(lane["rx_power_dbm"] == -100.0 for lane in fabric)
    hosts = [lane for lane in document["lanes"] if lane["port"] > 8]
    assert len(hosts) == 32 and all(-1.0 < lane["rx_power_dbm"] < 2.0 for lane in hosts)


def test_an_els_fault_on_the_switch_shows_in_telemetry_cpo(telemetry_lab: Lab,
                                                          msoctl: Msoctl) -> None:
    telemetry_lab.inject("sw-a", Fault("els", target="1/1"))
    assert [f.kind for f in telemetry_lab.faults("sw-a/snmp").active()] == ["els"]
    document = _json(msoctl, "cpo", "sw-a")
    laser = document["lasers"][0]
    assert (laser["module"], laser["lane"], laser["state"]) == (1, 1, "off")
    assert laser["faults"] == ["coolerFault", "overTemperature"]
    dark = [lane for lane in document["lanes"] if lane["tx_power_dbm"] == -100.0]
    assert {(lane["port"], lane["els_module"], lane["els_lane"]) for lane in dark} == {
        (1, 1, 1)}  # laser 1/1 feeds port 1's eight lanes
    assert len(dark) == 8
    table = msoctl("telemetry", "cpo", "sw-a")
    assert table.code == 0, table.err
    assert re.search(r"^1/1\s+off\s+dark\s.*coolerFault,overTemperature$", table.out,
                     re.MULTILINE)
    assert re.search(r"^Ethernet1\s+1\s+dark\s", table.out, re.MULTILINE)
    telemetry_lab.clear("sw-a", "els")
    assert telemetry_lab.faults("sw-a/snmp").active() == []
    assert _json(msoctl, "cpo", "sw-a")["lasers"][0]["state"] in ("ramping", "on")


def test_cpc_json_lists_every_lane_with_its_fec_counters(msoctl: Msoctl) -> None:
    document = _json(msoctl, "cpc", "sw-a")
    assert document["fec_degrade_threshold_ber"] == pytest.approx(1e-4)
    assert document["interval_seconds"] is None
    lanes = document["lanes"]
    assert [(lane["port"], lane["lane"]) for lane in lanes] == [
        (port, lane) for port in range(1, 13) for lane in range(1, 9)]
    for lane in lanes:
        assert set(lane) >= LANE_KEYS and not RATE_KEYS & set(lane)
        assert 15 < lane["snr_db"] < 25 and 1e-12 < lane["pre_fec_ber"] < 1e-4
        assert isinstance(lane["fec_corrected_total"], int)
        assert lane["fec_uncorrectable_total"] == 0
        assert len(lane["fec_histogram_total"]) == 17


def test_cpc_with_an_interval_shows_rates_cer_and_flr(msoctl: Msoctl) -> None:
    # 3 s: the agent refreshes its counters when a request finds them a second old, and
    # the interval counts from the first walk's start; a loaded machine stretched a first
    # walk so far that, 1.5 s apart, both walks read every lane from one snapshot (no
    # rate for any). 3 s keeps them apart unless the first walk alone takes 2 s.
    document = _json(msoctl, "cpc", "sw-a", "--interval", "3")
    # the agent's own time between the readings (sysUpTime): the 3 s asked, give or take
    # its tick; how much longer a loaded machine makes it is not judged here
    assert document["interval_seconds"] > 2.0
    lanes = document["lanes"]
    assert all(set(lane) >= LANE_KEYS | RATE_KEYS for lane in lanes)
    rated = [lane for lane in lanes if lane["no_rates_reason"] is None]
    assert len(rated) >= len(lanes) // 2, Counter(lane["no_rates_reason"] for lane in lanes)
    assert any(lane["fec_corrected_per_second"] > 0 for lane in rated)
    for lane in rated:
        assert lane["fec_corrected_per_second"] >= 0
        assert lane["codeword_error_ratio"] == 0 and lane["frame_loss_ratio"] == 0
        assert lane["cer_basis"] == "histogram"
        assert lane["codewords"] == sum(lane["fec_histogram"])
        assert lane["counted_seconds"] == pytest.approx(lane["codewords"] / 39_062_500)


def test_rising_ber_shows_in_pre_fec_ber_cer_and_flr(telemetry_lab: Lab,
                                                     msoctl: Msoctl) -> None:
    telemetry_lab.inject("sw-a", Fault("rising_ber", target="2", seconds=0))
    # 3 s, as in test_cpc_with_an_interval_shows_rates_cer_and_flr: two readings closer
    # together may meet one snapshot and give Ethernet2 no rate at all
    result = msoctl("telemetry", "cpc", "sw-a", "--interval", "3", "-o", "wide")
    assert result.code == 0, result.err
    assert "CORRECTED/S" in result.out and "CER" in result.out and "FLR" in result.out
    rows = [line.split() for line in result.out.splitlines() if line.startswith("Ethernet")]
    assert len(rows) == 12 * 8
    for row in rows:
        ber = float(row[3])
        if row[0] == "Ethernet2":
            assert ber > 1e-3  # 8 dB less SNR: every codeword is lost
        else:
            assert ber < 1e-4
    lost = [row for row in rows if row[0] == "Ethernet2" and row[8] != "-"]
    assert lost and all(float(row[8]) > 0.5 and float(row[9]) > 0.5 for row in lost), result.out
    assert all(row[10] == "16+" for row in lost)  # the most symbol errors in a codeword


def test_snmp_faults_go_to_the_agent_and_netconf_faults_stay_with_netconf(
        telemetry_lab: Lab, msoctl: Msoctl) -> None:
    telemetry_lab.inject("sw-a/snmp", Fault("freeze"))
    assert telemetry_lab.faults("sw-a").active() == []
    result = msoctl("telemetry", "cpo", "sw-a", "--budget", "1")
    assert result.code == 1
    assert result.err.startswith("error: sw-a: ") and result.err.count("\n") == 1
    # what ended the wait: the 1 s budget, or the request's own tries (not a wall-clock
    # bound, which a loaded machine stretches: the budget is what the command obeyed)
    assert re.search(r"within the 1 s budget|no answer from \S+ \(\d+ tr(y|ies) of [\d.]+ s\)",
                     result.err), result.err
    assert _json(msoctl, "cpo", "sw-b")["device"] == "sw-b"  # sw-b is not frozen
    telemetry_lab.clear("sw-a/snmp", "freeze")
    assert _json(msoctl, "cpo", "sw-a")["device"] == "sw-a"
    telemetry_lab.inject("sw-a", Fault("latency", seconds=0.01))  # NETCONF's, not SNMP's
    assert telemetry_lab.faults("sw-a/snmp").active() == []
    with pytest.raises(FaultError, match="<switch>/snmp"):
        telemetry_lab.inject("sw-a/ssh", Fault("drop"))


def _with_auth_key(lab: Lab, msoctl: Msoctl, passphrase: str) -> tuple[Result, int]:
    """``telemetry cpc sw-b`` with sw-b's SNMP auth secret set to ``passphrase`` (put back
    after): its result, and how many messages sw-b's agent heard meanwhile."""
    secret = lab.state_dir / "secrets" / "sw-b.snmp-auth"
    kept = secret.read_text()
    secret.write_text(passphrase + "\n")
    received = lab.snmp["sw-b"].requests_received
    try:
        result = msoctl("telemetry", "cpc", "sw-b")
    finally:
        secret.write_text(kept)
    return result, lab.snmp["sw-b"].requests_received - received


def test_a_wrong_passphrase_is_one_line_at_once(telemetry_lab: Lab, msoctl: Msoctl) -> None:
    result, heard = _with_auth_key(telemetry_lab, msoctl, "not-the-passphrase")
    assert result.code == 1
    # a USM report, not a timeout ("no answer from ... (2 tries of 2 s)"): the agent's
    # report is what names the authentication failure
    assert result.err == ("error: sw-b: SNMPv3 authentication failed for user 'msoctl': "
                          "wrong auth_key, or the agent does not use SHA256\n")
    # and at once: the agent heard the USM discovery and the request's two tries
    # (retries: 1), nothing more (counted, not timed: a loaded machine stretches a clock)
    assert heard == 3


def test_a_passphrase_too_short_for_usm_is_refused_before_anything_is_sent(
        telemetry_lab: Lab, msoctl: Msoctl) -> None:
    """RFC 3414 (11.2) makes a USM key only from 8 characters or more: a shorter secret
    was an internal error (pysnmp's WrongValueError); it is bad input, named."""
    result, heard = _with_auth_key(telemetry_lab, msoctl, "short")
    assert result.code == 2, result.err
    assert result.err == ("error: sw-b: the SNMPv3 auth_key is shorter than 8 characters, "
                          "the least a USM passphrase may be (RFC 3414, 11.2); no agent "
                          "accepts keys made from it\n")
    assert heard == 0


def test_a_device_without_snmp_is_refused_before_anything_is_sent(
        telemetry_lab: Lab, msoctl: Msoctl) -> None:
    result = msoctl("telemetry", "cpo", "ocs-a")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("error: ocs-a has no snmp section in the inventory")
    document = yaml.safe_load((telemetry_lab.state_dir / "inventory.yaml").read_text())
    for device in document["devices"]:
        device.pop("snmp", None)
    bare = telemetry_lab.state_dir / "without-snmp.yaml"  # beside it: its secrets resolve
    bare.write_text(yaml.safe_dump(document))
    result = msoctl("--inventory", str(bare), "telemetry", "cpc", "sw-a", "--interval", "1")
    assert result.code == 2 and result.err.count("\n") == 1
    assert result.err.startswith("error: sw-a has no snmp section in the inventory")


# ---- interop: Debian's net-snmp with the lab's inventory credentials ---------------------------


def test_net_snmp_reads_every_object_of_both_mibs_with_the_lab_credentials(
        telemetry_lab: Lab) -> None:
    executable = require_executable("snmpbulkwalk", debian_package="snmp")
    access = load_inventory(telemetry_lab.state_dir / "inventory.yaml").device("sw-b").snmp
    assert access is not None and access.auth_key is not None and access.priv_key is not None
    assert (access.auth_protocol, access.priv_protocol) == ("sha256", "aes128")
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MIBS", "MIBDIRS", "SNMPCONFPATH")}
    completed = subprocess.run(
        [str(executable), "-v3", "-l", "authPriv", "-u", str(access.user),
         "-a", "SHA-256", "-A", access.auth_key.resolve(),
         "-x", "AES", "-X", access.priv_key.resolve(),
         "-M", f"+{mibs.source_directory()}", "-m", "ALL", "-Cr50",
         f"{access.host}:{access.port}", mibs.mib_object("MSO-SMI", "msoMibs").qualified_name],
        capture_output=True, text=True, timeout=60, env=environment, check=False)
    assert completed.returncode == 0, completed.stderr
    readable = {node.qualified_name for module in ("MSO-CPO-MIB", "MSO-CPC-MIB")
                for node in mibs.load().objects(module)
                if node.kind in ("column", "scalar") and node.max_access == "read-only"}
    assert len(readable) == 30
    names = set(re.findall(r"^(MSO-C[PO][OC]-MIB::\w+)\.", completed.stdout, re.MULTILINE))
    assert names == readable
    assert "MSO-CPO-MIB::msoCpoEngineName.1 = STRING: OE1" in completed.stdout
    assert re.search(r"^MSO-CPC-MIB::msoCpcLaneSnr\.8\.8 = INTEGER: \d+\.\d\d dB$",
                     completed.stdout, re.MULTILINE)


def test_port_filter(msoctl: Msoctl) -> None:
    cpo = _json(msoctl, "cpo", "sw-a", "--port", "Ethernet2")
    assert {lane["port_name"] for lane in cpo["lanes"]} == {"Ethernet2"}
    assert len(cpo["lanes"]) == 8 and cpo["engines"] and cpo["lasers"]
    cpc = _json(msoctl, "cpc", "sw-a", "--port", "Ethernet1", "--port", "Ethernet3")
    assert {lane["port_name"] for lane in cpc["lanes"]} == {"Ethernet1", "Ethernet3"}
    wrong = msoctl("telemetry", "cpc", "sw-a", "--port", "Ethernet99")
    assert wrong.code == 2
    assert wrong.err.strip() == "error: sw-a has no port Ethernet99"
