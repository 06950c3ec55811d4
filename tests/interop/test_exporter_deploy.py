"""deploy/ against Debian's Prometheus: promtool checks the configuration and the rules
and runs their unit tests; a real Prometheus server, configured with
deploy/prometheus.yml (rendered with this test's addresses), scrapes the emulated lab
through the exporter, loads the alert rules, answers every dashboard query, and shows
a frozen device as ``msoctl_up 0`` while the others stay 1."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.faults import Fault
from emulators.lab import Lab
from tests.support import Msoctl, subprocess_env, wait_until
from tests.support.exporter import exporter_process
from tests.support.paths import DEPLOY as DEPLOY_DIR
from tests.support.peers import require_executable
from tests.support.prometheus import Prometheus
from tests.support.prometheus import prometheus as start_prometheus

DEPLOY = DEPLOY_DIR
EXPORTED_KINDS = ("ocs", "amp", "switch")  # lab instruments have no collector


def expected_targets(lab: Lab) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """The lab's devices the exporter probes (name -> kind), and every (instance, kind)
    Prometheus scrapes: those, and each switch's CPO/CPC telemetry."""
    devices = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())["devices"]
    kinds = {d["name"]: d["kind"] for d in devices if d["kind"] in EXPORTED_KINDS}
    assert {"ocs-a", "ocs-b", "amp-1", "amp-2", "sw-a", "sw-b"} <= kinds.keys()
    cpo = {(d["name"], "cpo") for d in devices if d["kind"] == "switch" and "snmp" in d}
    return kinds, {*kinds.items(), *cpo}


def promtool() -> Path:
    return require_executable("promtool", debian_package="prometheus")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=60, cwd=DEPLOY)


def test_promtool_checks_the_rules_and_runs_their_unit_tests() -> None:
    tool = str(promtool())
    checked = run(tool, "check", "rules", "msoctl-alerts.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 13 rules found" in checked.stdout
    tested = run(tool, "test", "rules", "tests/msoctl-alerts.test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_promtool_checks_the_scrape_configuration() -> None:
    checked = run(str(promtool()), "check", "config", "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def dashboard_queries() -> list[str]:
    document = json.loads((DEPLOY / "grafana-msoctl-fabric.json").read_text())
    return [target["expr"] for panel in document["panels"]
            for target in panel.get("targets", [])]


def test_the_dashboard_is_well_formed() -> None:
    document = json.loads((DEPLOY / "grafana-msoctl-fabric.json").read_text())
    assert document["uid"] == "msoctl-fabric"
    ids = [panel["id"] for panel in document["panels"]]
    assert len(ids) == len(set(ids))
    for panel in document["panels"]:
        box = panel["gridPos"]
        assert box["x"] + box["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"]
    families = {"msoctl_up", "msoctl_amp_", "msoctl_ocs_", "msoctl_switch_", "msoctl_cpc_",
                "msoctl_cpo_"}
    assert all(any(f in query for query in dashboard_queries()) for f in families)


# ---- a real Prometheus ------------------------------------------------------------------

def render_config(exporter: str, targets: Path) -> dict[str, Any]:
    """deploy/prometheus.yml with this test's exporter, target file and rules, devices
    scraped every 4 s, CPO/CPC telemetry every 6 s (the lab's emulators and agents share
    this machine's two cores with the exporter, Prometheus and the rest of the suite: with
    3 s, a probe's budget of 2.75 s was outrun under eight workers, and the test took that
    for a stall behind the frozen device)."""
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"].update(scrape_interval="4s", scrape_timeout="4s", evaluation_interval="1s")
    config["rule_files"] = [str(DEPLOY / name) for name in config["rule_files"]]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    jobs["msoctl-cpo"].update(scrape_interval="6s", scrape_timeout="6s")
    for name in ("msoctl", "msoctl-cpo"):
        jobs[name]["file_sd_configs"][0].update(files=[str(targets)], refresh_interval="1s")
        address = next(rule for rule in jobs[name]["relabel_configs"]
                       if rule.get("target_label") == "__address__")
        address["replacement"] = exporter
    for name in ("msoctl-jobs", "msoctl-exporter"):
        jobs[name]["static_configs"][0]["targets"] = [exporter]
    return config


class PrometheusServer(Prometheus):
    """The server of this module's tests, with the exporter's log beside it."""

    def __init__(self, running: Prometheus, exporter_log: Path, exporter_address: str):
        super().__init__(running.url, running.log)
        self.exporter_log = exporter_log
        self.exporter_address = exporter_address  # HOST:PORT, the instance of its own job

    def values(self, expression: str) -> dict[str, float]:
        """instance -> value of an instant vector."""
        return {series["metric"].get("instance", ""): float(series["value"][1])
                for series in self.query(expression)}

    def by_target(self, expression: str) -> dict[tuple[str, str], float]:
        """(instance, kind) -> value of an instant vector."""
        return {(series["metric"]["instance"], series["metric"]["kind"]):
                float(series["value"][1]) for series in self.query(expression)}


@pytest.fixture
def prometheus(lab: Lab, msoctl: Msoctl, tmp_path: Path) -> Iterator[PrometheusServer]:
    targets = tmp_path / "msoctl-targets.json"
    written = msoctl("inventory", "sd", "--out", str(targets))
    assert written.code == 0, written.err
    exporter_log = tmp_path / "exporter.log"
    with exporter_process(subprocess_env(lab), exporter_log) as exporter:
        address = exporter.removeprefix("http://")
        config = render_config(address, targets)
        with start_prometheus(config, tmp_path / "prometheus") as running:
            yield PrometheusServer(running, exporter_log, address)


def test_prometheus_scrapes_the_lab_and_sees_a_frozen_device_down(
        lab: Lab, prometheus: PrometheusServer) -> None:
    kinds, targets = expected_targets(lab)
    wait_until(lambda: prometheus.by_target("msoctl_up") == dict.fromkeys(targets, 1.0),
               "every lab device and telemetry agent up in Prometheus", seconds=60)
    up = prometheus.query("msoctl_up")
    assert {series["metric"]["job"] for series in up} == {"msoctl", "msoctl-cpo"}
    assert all(series["metric"]["lab"] == "two-campus-30km" for series in up)
    wait_until(lambda: prometheus.values('msoctl_jobs_up{job="msoctl-jobs"}') ==
               {prometheus.exporter_address: 1.0}, "the kept jobs read", seconds=30)
    # last_over_time: the latest sample of each series, should the very last scrape of a
    # device have failed on this busy machine
    assert len(prometheus.query(
        'last_over_time(msoctl_ocs_port_power_dbm{instance="ocs-a"}[30s])')) == 128
    assert prometheus.values("last_over_time(msoctl_amp_input_power_dbm[30s])").keys() == {
        name for name, kind in kinds.items() if kind == "amp"}
    assert len(prometheus.query('last_over_time(msoctl_switch_queue_ecn_marked_packets_total'
                                '{instance="sw-b"}[30s])')) == 8 * 12  # queues x ports
    lanes = len(prometheus.query('last_over_time(msoctl_cpc_lane_snr_db{instance="sw-a"}[30s])'))
    assert lanes > 0 and len(prometheus.query(
        'last_over_time(msoctl_cpc_fec_codewords_total{instance="sw-a"}[30s])')) == 17 * lanes
    assert prometheus.values(
        "last_over_time(msoctl_cpo_lane_rx_power_dbm[30s])").keys() == {
        name for name, kind in targets if kind == "cpo"}
    # the exporter's own job is scraped on its own schedule, which may come after the devices'
    wait_until(lambda: prometheus.values('up{job="msoctl-exporter"}') == {
        prometheus.exporter_address: 1.0}, "the exporter's own metrics scraped", seconds=30)
    assert prometheus.query("msoctl_exporter_probes_total")

    for query in dashboard_queries():  # every query of the dashboard parses and runs
        prometheus.query(re.sub(r"\$__rate_interval", "1m", query.replace("$instance", ".*")))

    def rule_health() -> set[str]:
        return {rule["health"] for group in prometheus.api("rules")["groups"]
                for rule in group["rules"]}

    def alerting(name: str) -> set[str]:
        """Instances with alert ``name`` pending or firing."""
        return {alert["labels"]["instance"] for alert in prometheus.api("alerts")["alerts"]
                if alert["labels"]["alertname"] == name}

    wait_until(lambda: rule_health() == {"ok"}, "alert rules evaluated", seconds=10)
    dark = {instance for instance, lost in prometheus.values(
        'last_over_time(msoctl_amp_condition{condition="input_los"}[30s])').items() if lost}
    assert dark, "no span of the lab is dark: the rule is not exercised"
    wait_until(lambda: alerting("AmplifierLossOfSignal") == dark, "LOS alerts", seconds=10)

    lab.inject("ocs-b", Fault("freeze"))
    frozen_at = time.monotonic()
    wait_until(lambda: prometheus.values('msoctl_up{instance="ocs-b"}') == {"ocs-b": 0.0},
               "ocs-b down in Prometheus", seconds=20)
    time.sleep(4.5)  # another scrape of everybody
    window = f"{int(time.monotonic() - frozen_at) + 1}s"
    # Every other device kept answering while ocs-b was frozen: up in each scrape since
    # the freeze but at most one. A frozen device that held the exporter up would take
    # the others down in every scrape; a loaded machine can stretch one probe of
    # another device past its budget (amp-2's, once, over the I2C bridge), which says
    # nothing of ocs-b.
    selector = f'msoctl_up{{job="msoctl", instance!="ocs-b"}}[{window}]'
    scrapes = prometheus.by_target(f"count_over_time({selector})")
    answered = prometheus.by_target(f"sum_over_time({selector})")
    failures = [line for line in prometheus.exporter_log.read_text().splitlines()
                if "msoctl.exporter" in line and "ocs-b" not in line]
    assert set(scrapes) == {(name, kind) for name, kind in kinds.items() if name != "ocs-b"}
    assert all(count >= 2 for count in scrapes.values()), scrapes
    assert all(scrapes[target] - answered[target] <= 1 for target in scrapes), \
        (scrapes, answered, failures)
    assert prometheus.values('msoctl_up{instance="ocs-b"}') == {"ocs-b": 0.0}
    # the scrape of the frozen device itself succeeded: only the device is down
    assert prometheus.by_target('up{job=~"msoctl|msoctl-cpo"}') == dict.fromkeys(targets, 1.0)
    wait_until(lambda: alerting("MsoctlTargetDown") == {"ocs-b"}, "target down pending",
               seconds=5)
