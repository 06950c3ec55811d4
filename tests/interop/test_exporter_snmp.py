"""CPO/CPC through Debian's snmp_exporter (0.21): ``msoctl exporter snmp-config``, the
recording rules, and what Prometheus records against ``msoctl telemetry -o json``.

The agent is the emulator's (RFC 3414 USM, SHA-256 authentication RFC 7860, AES-128
privacy RFC 3826) on a stepped clock, so that it serves the same values to every
reader: snmp_exporter's walks (RFC 3416 GETBULK) and msoctl's collector. The values
Prometheus records must equal msoctl's within the MIB's resolution (one unit of
each column's DISPLAY-HINT ``d-N``, MSO-TC).
"""

from __future__ import annotations

import json
import math
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from msoctl.exporter import snmpconfig
from tests.support.exporter import fetch
from tests.support.lab import wait_until
from tests.support.paths import DEPLOY
from tests.support.peers import require_executable
from tests.support.ports import free_port
from tests.support.prometheus import prometheus
from tests.support.snmp_agents import CREDENTIALS, AgentUnderTest

MSOCTL = str(Path(sys.executable).with_name("msoctl"))


@pytest.fixture(scope="module")
def agent_inventory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The emulated agent ``sw-t`` and an inventory naming it (secrets in 0600 files)."""
    directory = tmp_path_factory.mktemp("snmp-exporter")
    harness = AgentUnderTest(entity_layout="sonic")
    secrets = directory / "secrets"
    secrets.mkdir()
    for name, secret in (("auth", CREDENTIALS.auth_key), ("priv", CREDENTIALS.priv_key),
                         ("password", "unused")):
        (secrets / name).write_text(secret)
        (secrets / name).chmod(0o600)
    inventory = directory / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"devices": [{
        "name": "sw-t", "kind": "switch", "transport": "netconf", "address": "127.0.0.1:1",
        "username": "msoctl", "password": "file:secrets/password",
        "labels": {"campus": "t"},
        "snmp": {"address": f"127.0.0.1:{harness.agent.port}", "user": CREDENTIALS.user,
                 "auth_key": "file:secrets/auth", "priv_key": "file:secrets/priv",
                 "timeout_seconds": 2.0, "retries": 1}}]}))
    try:
        yield {"directory": directory, "inventory": inventory, "harness": harness}
    finally:
        harness.close()


def msoctl(inventory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MSOCTL, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MSOCTL_INVENTORY": str(inventory)})


def snmp_exporter_binary() -> Path:
    return require_executable("prometheus-snmp-exporter",
                              debian_package="prometheus-snmp-exporter")


def test_the_recording_rules_in_deploy_are_the_generated_ones() -> None:
    """deploy/msoctl-cpo-recording.yml is what ``python -m msoctl.exporter.snmpconfig
    --rules`` prints (so it follows the MIBs and msoctl's metric table); promtool checks
    it and runs its unit tests (promtool ``test rules``)."""
    assert (DEPLOY / "msoctl-cpo-recording.yml").read_text() == snmpconfig.render_rules()
    promtool = str(require_executable("promtool", debian_package="prometheus"))
    for args in (("check", "rules", "msoctl-cpo-recording.yml"),
                 ("test", "rules", "tests/msoctl-cpo-recording.test.yml"),
                 ("check", "config", "prometheus-snmp.yml"),
                 ("check", "config", "prometheus-sharded.yml")):
        done = subprocess.run([promtool, *args], capture_output=True, text=True, timeout=60,
                              cwd=DEPLOY)
        assert done.returncode == 0, (args, done.stdout, done.stderr)


def test_snmp_config_keeps_secrets_out_of_stdout_and_writes_them_0600(
        agent_inventory: dict[str, Any]) -> None:
    inventory, directory = agent_inventory["inventory"], agent_inventory["directory"]
    printed = msoctl(inventory, "exporter", "snmp-config")
    assert printed.returncode == 0, printed.stderr
    assert CREDENTIALS.auth_key not in printed.stdout
    assert CREDENTIALS.priv_key not in printed.stdout
    document = yaml.safe_load(printed.stdout)
    assert sorted(document) == ["ENTITY-SENSOR-MIB", "MSO-CPC-MIB", "MSO-CPO-MIB"]
    auth = document["MSO-CPO-MIB"]["auth"]
    assert auth["password"] == "REDACTED(file:secrets/auth)"
    assert auth["auth_protocol"] == "SHA256" and auth["priv_protocol"] == "AES"

    out = directory / "snmp.yml"
    os.umask(0o022)
    written = msoctl(inventory, "exporter", "snmp-config", "--out", str(out))
    assert written.returncode == 0, written.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert yaml.safe_load(out.read_text())["MSO-CPC-MIB"]["auth"]["priv_password"] == \
        CREDENTIALS.priv_key
    shown = msoctl(inventory, "exporter", "snmp-config", "--show-secrets")
    assert CREDENTIALS.auth_key in shown.stdout
    checked = subprocess.run([str(snmp_exporter_binary()), f"--config.file={out}",
                              "--dry-run"], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr

    bad = directory / "aes256.yaml"
    bad.write_text(inventory.read_text().replace("retries: 1", "retries: 1\n    "
                                                 "priv_protocol: aes256"))
    refused = msoctl(bad, "exporter", "snmp-config")
    assert refused.returncode == 2 and refused.stderr.startswith("error:"), refused.stderr
    assert "aes128" in refused.stderr and "Traceback" not in refused.stderr


def _close(ours: float, theirs: float, resolution: float) -> bool:
    return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=resolution / 2 + 1e-12)


def test_prometheus_records_what_msoctl_telemetry_reads(
        agent_inventory: dict[str, Any]) -> None:
    inventory, directory = agent_inventory["inventory"], agent_inventory["directory"]
    config = directory / "snmp-run.yml"
    assert msoctl(inventory, "exporter", "snmp-config", "--out", str(config)).returncode == 0
    targets = directory / "snmp-targets.json"
    assert msoctl(inventory, "inventory", "sd", "--snmp-exporter", "--out",
                  str(targets)).returncode == 0
    ours = {kind: json.loads(msoctl(inventory, "telemetry", kind, "sw-t", "-o", "json").stdout)
            for kind in ("cpo", "cpc", "optics")}
    assert ours["optics"]["source"] == "entity-sensor"

    address = f"127.0.0.1:{free_port()}"
    log = directory / "snmp_exporter.log"
    with log.open("w") as output:
        exporter = subprocess.Popen([str(snmp_exporter_binary()), f"--config.file={config}",
                                     f"--web.listen-address={address}"],
                                    stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: _answers(f"http://{address}/"), "snmp_exporter", seconds=20)
        setup = yaml.safe_load((DEPLOY / "prometheus-snmp.yml").read_text())
        setup["global"].update(scrape_interval="2s", scrape_timeout="2s",
                               evaluation_interval="1s")
        setup["rule_files"] = [str(DEPLOY / "msoctl-cpo-recording.yml")]
        for job in setup["scrape_configs"]:
            job.update(scrape_interval="2s", scrape_timeout="2s")
            job["file_sd_configs"][0].update(files=[str(targets)], refresh_interval="1s")
            job["relabel_configs"][-1]["replacement"] = address
        with prometheus(setup, directory / "prometheus") as server:
            wait_until(lambda: len(server.query("msoctl_cpc_fec_codewords_total")) > 0 and
                       len(server.query("msoctl_cpo_lane_tx_power_dbm")) > 0 and
                       len(server.query("msoctl_entity_sensor_value")) > 0,
                       "recorded series", seconds=60)
            _compare(server, ours["cpo"], ours["cpc"])
            _compare_sensors(server, ours["optics"])
    finally:
        exporter.terminate()
        exporter.wait(timeout=10)


def _compare(server: Any, cpo: dict[str, Any], cpc: dict[str, Any]) -> None:
    def recorded(name: str, *keys: str) -> dict[tuple[str, ...], float]:
        return {tuple(series["metric"][key] for key in keys): float(series["value"][1])
                for series in server.query(f'{name}{{instance="sw-t", device="sw-t"}}')}

    checked = 0

    def same(name: str, keys: tuple[str, ...], rows: list[dict[str, Any]],
             row_keys: tuple[str, ...], field: str, resolution: float,
             convert: Any = None) -> None:
        nonlocal checked
        found = recorded(name, *keys)
        expected = {tuple(str(row[key]) for key in row_keys):
                    (row[field] if convert is None else convert(row[field]))
                    for row in rows if row[field] is not None}
        assert found.keys() == expected.keys(), (name, sorted(found)[:3], sorted(expected)[:3])
        for key, value in expected.items():
            assert _close(found[key], value, resolution), (name, key, found[key], value)
            checked += 1

    lane, lane_row = ("port", "lane"), ("port_name", "lane")
    engine = ("engine",)
    laser, laser_row = ("module", "lane"), ("module", "lane")
    same("msoctl_cpo_engine_temperature_celsius", engine, cpo["engines"], ("index",),
         "temperature_celsius", 0.01)
    same("msoctl_cpo_engine_supply_voltage_volts", engine, cpo["engines"], ("index",),
         "supply_voltage_volts", 0.001)
    same("msoctl_cpo_lane_tx_power_dbm", lane, cpo["lanes"], lane_row, "tx_power_dbm", 0.01)
    same("msoctl_cpo_lane_rx_power_dbm", lane, cpo["lanes"], lane_row, "rx_power_dbm", 0.01)
    same("msoctl_cpo_lane_tx_bias_amperes", lane, cpo["lanes"], lane_row, "tx_bias_ma",
         1e-6, lambda ma: ma / 1000)
    same("msoctl_cpo_els_output_power_dbm", laser, cpo["lasers"], laser_row,
         "output_power_dbm", 0.01)
    same("msoctl_cpo_els_bias_current_amperes", laser, cpo["lasers"], laser_row,
         "bias_current_ma", 1e-6, lambda ma: ma / 1000)
    same("msoctl_cpo_els_temperature_celsius", laser, cpo["lasers"], laser_row,
         "temperature_celsius", 0.01)
    same("msoctl_cpc_lane_snr_db", lane, cpc["lanes"], lane_row, "snr_db", 0.01)
    same("msoctl_cpc_lane_insertion_loss_db", lane, cpc["lanes"], lane_row,
         "insertion_loss_db", 0.01)
    same("msoctl_cpc_lane_eye_height_volts", lane, cpc["lanes"], lane_row, "eye_height_mv",
         1e-6, lambda mv: mv / 1000)
    same("msoctl_cpc_lane_eye_width_unit_intervals", lane, cpc["lanes"], lane_row,
         "eye_width_ui", 0.001)
    same("msoctl_cpc_fec_corrected_codewords_total", lane, cpc["lanes"], lane_row,
         "fec_corrected_total", 0.0)
    same("msoctl_cpc_fec_uncorrectable_codewords_total", lane, cpc["lanes"], lane_row,
         "fec_uncorrectable_total", 0.0)
    # BER: one thousandth of a decade is the MIB's resolution, a ratio of 10^0.001
    found = recorded("msoctl_cpc_lane_pre_fec_bit_error_ratio", *lane)
    for row in cpc["lanes"]:
        ratio = found[(row["port_name"], str(row["lane"]))] / row["pre_fec_ber"]
        assert abs(math.log10(ratio)) <= 0.0005 + 1e-9, (row, ratio)
        checked += 1
    bins = recorded("msoctl_cpc_fec_codewords_total", "port", "lane", "bin")
    for row in cpc["lanes"]:
        for number, codewords in enumerate(row["fec_histogram_total"]):
            assert bins[(row["port_name"], str(row["lane"]), str(number))] == codewords
            checked += 1
    states = recorded("msoctl_cpo_els_state", "module", "lane", "state")
    for row in cpo["lasers"]:
        assert states[(str(row["module"]), str(row["lane"]), row["state"])] == 1.0
    statuses = recorded("msoctl_cpo_engine_status", "engine", "state")
    for row in cpo["engines"]:
        assert statuses[(str(row["index"]), row["status"])] == 1.0
    threshold = recorded("msoctl_cpc_fec_degrade_threshold_bit_error_ratio")
    assert abs(math.log10(threshold[()] / cpc["fec_degrade_threshold_ber"])) <= 0.0005
    assert checked > 500, checked


def _answers(url: str) -> bool:
    try:
        return fetch(url, timeout=1).status == 200
    except OSError:
        return False


def _compare_sensors(server: Any, optics: dict[str, Any]) -> None:
    """snmp_exporter's ENTITY-SENSOR-MIB module and the recording rule give each sensor's
    value in its unit (watts, amperes, degrees, volts) under the name its agent gives it;
    msoctl's reading of the same sensors, joined to ports, agrees within the encoding's
    resolution (SONiC's: 0.0001 mW, 0.001 mA, 0.000001 degree, 0.0001 V)."""
    recorded = {series["metric"]["name"]: float(series["value"][1])
                for series in server.query('msoctl_entity_sensor_value{instance="sw-t"}')}
    checked = 0
    for port in optics["ports"]:
        name = port["port_name"]
        assert _close(recorded[f"DOM Temperature Sensor for {name}"],
                      port["temperature_celsius"], 1e-6)
        assert _close(recorded[f"DOM Voltage Sensor for {name}"],
                      port["supply_voltage_volts"], 1e-4)
        for lane in port["lanes"]:
            where = f"{name}/{lane['lane']}"
            for words, field in (("TX Power", "tx_power_dbm"), ("RX Power", "rx_power_dbm")):
                watts = recorded[f"DOM {words} Sensor for {where}"]
                assert _close(10 * math.log10(watts * 1000), lane[field], 0.001), (where, field)
            assert _close(recorded[f"DOM TX Bias Sensor for {where}"] * 1000,
                          lane["tx_bias_ma"], 0.001)
            checked += 3
    assert checked >= 3 * 8 * 4, checked
