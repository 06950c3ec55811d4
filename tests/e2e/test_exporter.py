"""``msoctl exporter`` against the emulated lab: what each collector exports, that it
passes promtool's lint, budgets and failures, HTTP errors, TLS, SIGTERM, file_sd."""

from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.exporter.probe import COLLECTORS, Prober
from msoctl.exporter.sd import label_name
from msoctl.inventory import Device, load_inventory
from tests.support import Msoctl, restart_amplifier, subprocess_env, wait_until
from tests.support.exporter import Response, fetch, samples, serve_exporter, value
from tests.support.peers import require_executable

LAB_KINDS = (("ocs-a", "ocs"), ("ocs-b", "ocs"), ("amp-1", "amp"), ("amp-2", "amp"),
             ("sw-a", "switch"), ("sw-b", "switch"))
LAB_DEVICES = tuple(name for name, _ in LAB_KINDS)
MODULES = ("ocs", "amp", "switch", "cpo")


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def described_families(device: Device, module: str) -> set[str]:
    """The families a collector's describe() announces (what registration sees)."""
    collector = COLLECTORS[(device.kind, module)](device, timeout_seconds=1.0)
    # named as the text format's parser names them: info families end in _info there
    return {family.name + ("_info" if family.type == "info" else "")
            for family in collector.describe()}


def exposed_families(text: str) -> set[str]:
    from prometheus_client.parser import text_string_to_metric_families

    return {family.name for family in text_string_to_metric_families(text)}


def inventory(lab: Lab) -> Path:
    return lab.state_dir / "inventory.yaml"


def probe(url: str, target: str, *, scrape_timeout: float | None = 5.0,
          module: str | None = None) -> Response:
    query = f"target={target}" + (f"&module={module}" if module else "")
    return fetch(f"{url}/probe?{query}", scrape_timeout=scrape_timeout)


def promtool_lint(promtool: Path, text: str) -> str:
    """promtool's complaints about an exposition (empty when it is clean)."""
    checked = subprocess.run([str(promtool), "check", "metrics"], input=text, text=True,
                             capture_output=True, timeout=30)
    return (checked.stdout + checked.stderr).strip() + ("" if checked.returncode == 0 else
                                                        f" (exit {checked.returncode})")


def test_every_device_kind_passes_promtool_check_metrics(lab: Lab) -> None:
    promtool = require_executable("promtool", debian_package="prometheus")
    with serve_exporter(inventory(lab)) as server:
        for name, module in (*((name, None) for name in LAB_DEVICES), ("sw-b", "cpo")):
            reply = probe(server.url, name, module=module, scrape_timeout=10)
            assert reply.status == 200 and reply.content_type.startswith("text/plain")
            assert value(reply.body, "msoctl_up", device=name) == 1.0, reply.body[-400:]
            assert value(reply.body, "msoctl_probe_duration_seconds", device=name) > 0
            assert promtool_lint(promtool, reply.body) == "", (name, module)
            device = load_inventory(inventory(lab)).device(name)
            assert exposed_families(reply.body) <= described_families(
                device, module or device.kind), (name, module)
        own = fetch(f"{server.url}/metrics")
        assert promtool_lint(promtool, own.body) == ""
    names = samples(own.body)
    assert "process_cpu_seconds_total" in names
    for kind in ("ocs", "amp", "switch"):
        assert value(own.body, "msoctl_exporter_probes_total", kind=kind) == 2.0
        assert value(own.body, "msoctl_exporter_probe_duration_seconds_count", kind=kind) == 2.0
    assert value(own.body, "msoctl_exporter_probes_total", kind="cpo") == 1.0
    assert value(own.body, "msoctl_exporter_snmp_worker_cpu_seconds_total") > 0
    assert value(own.body, "msoctl_exporter_inventory_devices", kind="amp") == 2.0
    assert not any(name.startswith(("msoctl_up", "msoctl_ocs", "msoctl_amp_"))
                   for name in names), "device metrics leaked into /metrics"


def test_ocs_probe_ports_connections_and_lc_engine(lab: Lab, msoctl: Msoctl) -> None:
    assert msoctl("ocs", "connect", "ocs-a", "1:121").code == 0
    with serve_exporter(inventory(lab)) as server:
        body = probe(server.url, "ocs-a").body
    assert value(body, "msoctl_ocs_ports", device="ocs-a") == 128
    assert value(body, "msoctl_ocs_connections", device="ocs-a") == 1
    assert value(body, "msoctl_ocs_connection_info", ingress="1", egress="121") == 1
    loss = value(body, "msoctl_ocs_connection_insertion_loss_db", ingress="1", egress="121")
    assert loss is not None and 1.0 < loss < 3.0
    lit = value(body, "msoctl_ocs_port_power_dbm", port="121", direction="egress")
    dark = value(body, "msoctl_ocs_port_power_dbm", port="122", direction="egress")
    assert lit is not None and dark is not None and lit > dark + 30  # sw-a tx1 through 1->121
    assert value(body, "msoctl_ocs_port_state", port="5", state="enabled") == 1
    assert value(body, "msoctl_ocs_port_state", port="5", state="failed") == 0
    assert value(body, "msoctl_ocs_lc_cell_temperature_celsius") is not None
    switching = value(body, "msoctl_ocs_last_switching_duration_seconds")
    assert switching is not None and 0 < switching < 1
    assert value(body, "msoctl_ocs_info", model="LCOCS-64x64") == 1


def test_ocs_probe_of_a_plain_unit_says_what_it_lacks(lab: Lab, msoctl: Msoctl) -> None:
    """A unit without the project's extensions and alarms: the probe succeeds, the LC
    figures are absent (not 0), and the feature gauges say which features it has; its
    extension queries were asked once, by the probe of the features, never again."""
    device = lab.ocs["ocs-a"]
    device.extensions = device.alarms_supported = False
    assert msoctl("ocs", "connect", "ocs-a", "1:121").code == 0
    asked = device.requests.commands["lc_temperature"]
    with serve_exporter(inventory(lab)) as server:
        bodies = [probe(server.url, "ocs-a").body for _ in range(2)]
    for body in bodies:
        assert value(body, "msoctl_up", device="ocs-a") == 1
        assert value(body, "msoctl_ocs_connections", device="ocs-a") == 1
        assert value(body, "msoctl_ocs_lc_cell_temperature_celsius") is None
        assert value(body, "msoctl_ocs_last_switching_duration_seconds") is None
        assert value(body, "msoctl_ocs_connection_insertion_loss_db", ingress="1") is None
        supported = {feature: value(body, "msoctl_ocs_feature_supported", feature=feature)
                     for feature in ("power_monitors", "boot_mode", "lc_figures", "alarms")}
        assert supported == {"power_monitors": 1, "boot_mode": 0, "lc_figures": 0,
                             "alarms": 0}
    assert device.requests.commands["lc_temperature"] == asked + 1  # one held connection


def test_amplifier_probe_never_consumes_latched_flags(lab: Lab, msoctl: Msoctl) -> None:
    """The dark span at lab start latched input LOS. Light comes back; the live condition
    clears; probes run; the latched flag must still be there for ``msoctl amp flags``."""
    lab.ocs["ocs-a"].add((1,), (121,))
    # The LC cell takes its switching time: restart only once light reaches the input, or
    # the restart pulse finds the span still dark and ALS waits for its next cycle.
    module = lab.amps["amp-1"]
    wait_until(lambda: module.input_dbm is not None and module.input_dbm > -20,
               "light at amp-1's input", seconds=5)
    restart_amplifier(lab, "amp-1")
    with serve_exporter(inventory(lab)) as server:

        def live_los() -> float | None:
            return value(probe(server.url, "amp-1").body, "msoctl_amp_condition",
                         condition="input_los")

        wait_until(lambda: live_los() == 0.0, "amp-1 input back", seconds=10)
        # The restart pulse ends and ALS goes back to normal on the module's own time:
        # probe (read-only, every time) until it has.
        wait_until(lambda: value(probe(server.url, "amp-1").body, "msoctl_amp_als_state",
                                 state="normal") == 1, "amp-1 ALS normal", seconds=10)
        for _ in range(3):
            body = probe(server.url, "amp-1").body
        assert value(body, "msoctl_amp_als_state", state="normal") == 1
    output = value(body, "msoctl_amp_output_power_dbm")
    input_power = value(body, "msoctl_amp_input_power_dbm")
    assert output is not None and input_power is not None and output > input_power
    assert value(body, "msoctl_amp_mode", mode="gain") == 1
    assert value(body, "msoctl_amp_pump_current_amperes", pump="1") > 0.001  # amperes, not mA
    assert value(body, "msoctl_amp_module_state", state="ModuleReady") == 1
    first = json.loads(msoctl("amp", "flags", "amp-1", "-o", "json").out)
    assert "input_los" in first["set"], first
    second = json.loads(msoctl("amp", "flags", "amp-1", "-o", "json").out)
    assert "input_los" not in second["set"], "the condition is gone; only the latch held it"


def test_switch_probe_counters_and_configured_thresholds(lab: Lab, msoctl: Msoctl,
                                                          tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    assert msoctl("switch", "plan", "--port", "Ethernet1=30.01km@400G", "--file",
                  str(plan)).code == 0
    assert msoctl("switch", "cc", "apply", "sw-a", "--file", str(plan)).code == 0
    lab.inject("sw-a", Fault("congestion", target="Ethernet1@3", count=4, seconds=0.05))
    time.sleep(0.1)
    with serve_exporter(inventory(lab)) as server:
        body = probe(server.url, "sw-a").body
    lab.clear("sw-a", "congestion")
    port = {"port": "Ethernet1"}
    queue = {"port": "Ethernet1", "queue": "3"}
    assert value(body, "msoctl_switch_ecn_marked_packets_total", **port) > 0
    assert value(body, "msoctl_switch_generated_cnps_total", **port) > 0
    assert value(body, "msoctl_switch_queue_ecn_marked_packets_total", **queue) > 0
    assert value(body, "msoctl_switch_queue_dropped_packets_total", **queue) == 0
    assert value(body, "msoctl_switch_pfc_pause_frames_sent_total", **port) is not None
    assert value(body, "msoctl_switch_buffer_watermark_bytes", **port) > 0
    assert value(body, "msoctl_switch_buffer_size_bytes") == 8_000_000_000
    assert value(body, "msoctl_switch_fast_cnp_enabled") == 1
    assert value(body, "msoctl_switch_pfc_xoff_bytes", **port) > 1e6  # 30 km of headroom
    assert value(body, "msoctl_switch_pfc_lossless_priority", priority="3", **port) == 1
    low = value(body, "msoctl_switch_wred_min_threshold_bytes", **queue)
    high = value(body, "msoctl_switch_wred_max_threshold_bytes", **queue)
    assert low is not None and high is not None and 0 < low < high
    assert value(body, "msoctl_switch_ecn_enabled", **queue) == 1
    assert value(body, "msoctl_switch_port_cable_length_meters", **port) == 30010


@pytest.mark.parametrize("switch", ["sw-c", "sw-d"])
def test_a_gnmi_switch_probe_has_its_configuration_and_its_models_counters(
        lab: Lab, msoctl: Msoctl, tmp_path: Path, switch: str) -> None:
    plan = tmp_path / "plan.yaml"
    assert msoctl("switch", "plan", "--port", "Ethernet1=30.01km@400G", "--no-fast-cnp",
                  "--file", str(plan)).code == 0
    applied = msoctl("switch", "cc", "apply", switch, "--file", str(plan))
    assert applied.code == 0, applied.err
    lab.inject(switch, Fault("congestion", target="Ethernet1@3", count=4, seconds=0.05))
    time.sleep(0.1)
    with serve_exporter(inventory(lab)) as server:
        body = probe(server.url, switch).body
    lab.clear(switch, "congestion")
    port = {"port": "Ethernet1"}
    queue = {"port": "Ethernet1", "queue": "3"}
    assert value(body, "msoctl_up") == 1
    assert value(body, "msoctl_switch_queue_ecn_marked_packets_total", **queue) > 0
    assert value(body, "msoctl_switch_queue_dropped_packets_total", **queue) == 0
    assert value(body, "msoctl_switch_pfc_xoff_bytes", **port) > 1e6
    assert value(body, "msoctl_switch_pfc_lossless_priority", priority="3", **port) == 1
    assert value(body, "msoctl_switch_ecn_enabled", **queue) == 1


def test_cpo_probe_lanes_lasers_and_fec(lab: Lab) -> None:
    lab.inject("sw-a", Fault("els", target="1/2:overTemperature"))
    with serve_exporter(inventory(lab)) as server:
        body = probe(server.url, "sw-a", module="cpo", scrape_timeout=10).body
    assert value(body, "msoctl_up") == 1.0, body[-300:]
    found = samples(body)
    lanes = found["msoctl_cpc_lane_snr_db"]
    assert lanes and len(found["msoctl_cpc_fec_codewords_total"]) == 17 * len(lanes)
    lane = dict(next(iter(lanes)))
    at = {"port": lane["port"], "lane": lane["lane"]}
    assert lane["port"].startswith("Ethernet")  # ifName, as the switch collector names ports
    corrected = value(body, "msoctl_cpc_fec_corrected_codewords_total", **at)
    bins = [value(body, "msoctl_cpc_fec_codewords_total", **at, bin=str(n)) for n in range(17)]
    assert corrected is not None and all(b is not None for b in bins)
    assert 0 < value(body, "msoctl_cpc_lane_pre_fec_bit_error_ratio", **at) < 1
    assert value(body, "msoctl_cpo_els_fault", module="1", lane="2",
                 fault="overTemperature") == 1
    assert value(body, "msoctl_cpo_els_fault", module="1", lane="1",
                 fault="overTemperature") == 0
    assert value(body, "msoctl_cpo_els_state", module="1", lane="2", state="off") == 1
    assert value(body, "msoctl_cpo_els_state", module="1", lane="1", state="on") == 1
    assert value(body, "msoctl_cpo_engine_status", engine="1", state="normal") == 1
    rx = found["msoctl_cpo_lane_rx_power_dbm"]
    assert rx and all(-100 <= dbm < 10 for dbm in rx.values())
    assert value(body, "msoctl_cpc_fec_degrade_threshold_bit_error_ratio") == \
        pytest.approx(1e-4, rel=0.01)


def test_cpo_probe_reads_the_most_standard_surface_with_its_source(lab: Lab) -> None:
    """sw-a's agent serves SONiC's ENTITY-SENSOR-MIB and sw-b's Arista's with H3C's DOM
    MIB, besides the project's: the lanes' optics come from ENTITY-SENSOR-MIB, named so,
    and what only MSO-CPO-MIB carries (engines, lasers) still comes."""
    with serve_exporter(inventory(lab)) as server:
        first = probe(server.url, "sw-a", module="cpo", scrape_timeout=10).body
        second = probe(server.url, "sw-b", module="cpo", scrape_timeout=10).body
    for body in (first, second):
        assert value(body, "msoctl_up") == 1.0, body[-300:]
        rx = samples(body)["msoctl_cpo_lane_rx_power_dbm"]
        assert rx and {dict(labels)["source"] for labels in rx} == {"entity-sensor"}
        assert value(body, "msoctl_telemetry_surface_info", surface="mso-cpo",
                     optics="false") == 1
        assert samples(body)["msoctl_cpo_engine_temperature_celsius"]
    assert value(second, "msoctl_telemetry_surface_info", surface="hh3c", optics="false") == 1
    # Arista's threshold table: the engine's datasheet, in the sensors' own encoding
    assert value(second, "msoctl_cpo_threshold", port="Ethernet1", quantity="tx_power_dbm",
                 level="high_alarm", source="entity-sensor") == pytest.approx(10.0, abs=0.01)
    assert "msoctl_cpo_threshold" not in samples(first)  # SONiC's agent serves none


def test_gnmi_switches_stream_their_optics_and_a_silent_stream_is_down(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """sw-c (OpenConfig) and sw-d (SONiC) stream; a probe answers from the last values
    with their age. A target that goes silent (frozen): the probe is up 0 once the values
    are three intervals old, and up 1 again once the stream brings values again."""
    from msoctl.exporter import cpo
    from msoctl.exporter.streams import OpticsStreams

    monkeypatch.setattr(cpo, "STREAMS", OpticsStreams(sample_seconds=0.5))
    with serve_exporter(inventory(lab)) as server:
        for name, source in (("sw-c", "openconfig"), ("sw-d", "sonic")):
            body = probe(server.url, name, module="cpo").body
            assert value(body, "msoctl_up") == 1.0, body[-300:]
            assert value(body, "msoctl_telemetry_age_seconds", source=source) < 1.5
            model = lab.gnmi_telemetry[name].read()
            lane = next(lane for lane in model.optical_lanes if (lane.port, lane.lane) == (1, 1))
            assert value(body, "msoctl_cpo_lane_tx_power_dbm", port="Ethernet1", lane="1",
                         source=source) == pytest.approx(lane.tx_power_dbm, abs=0.2)
            assert samples(body)["msoctl_cpc_port_fec_corrected_codewords_total"]
            if source == "sonic":  # COUNTERS_DB's bins S0..S16; OpenConfig has none
                assert samples(body)["msoctl_cpc_port_fec_codewords_total"]

        def up() -> float | None:
            return value(probe(server.url, "sw-c", module="cpo").body, "msoctl_up")

        def dropped() -> float:
            body = probe(server.url, "sw-c", module="cpo").body
            return sum(samples(body).get("msoctl_telemetry_dropped_samples_total",
                                         {}).values())

        lab.inject("sw-c", Fault("malformed"))  # a NaN, a string, an unsubscribed path
        try:
            wait_until(lambda: dropped() >= 3, "sw-c's malformed samples counted", 10)
            assert up() == 1.0  # the rest of its reading stands
        finally:
            lab.clear("sw-c", "malformed")

        lab.inject("sw-c", Fault("freeze"))  # the target sends nothing more
        try:
            wait_until(lambda: up() == 0.0, "sw-c's silent stream reported up 0", 15)
        finally:
            lab.clear("sw-c", "freeze")
        wait_until(lambda: up() == 1.0, "sw-c's stream back", 30)


def test_a_switch_whose_gnmi_gives_nothing_falls_back_to_snmp(lab: Lab,
                                                              tmp_path: Path) -> None:
    """telemetry: auto on a switch with both: its gNMI cannot be reached, its SNMP agent
    (sw-a's) can, and the probe reads that."""
    document = yaml.safe_load(inventory(lab).read_text())
    sw_a = next(device for device in document["devices"] if device["name"] == "sw-a")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    both = {"name": "sw-x", "kind": "switch", "transport": "gnmi", "insecure": True,
            "address": f"127.0.0.1:{port}", "model": "openconfig", "snmp": sw_a["snmp"]}
    for key in ("auth_key", "priv_key"):
        both["snmp"][key] = both["snmp"][key].replace(
            "file:", f"file:{lab.state_dir}/", 1)
    written = tmp_path / "inventory.yaml"
    written.write_text(yaml.safe_dump({"devices": [both]}))
    with serve_exporter(written) as server:
        body = probe(server.url, "sw-x", module="cpo", scrape_timeout=10).body
    assert value(body, "msoctl_up") == 1.0, body[-300:]
    assert {dict(labels)["source"]
            for labels in samples(body)["msoctl_cpo_lane_tx_power_dbm"]} == {"entity-sensor"}


def test_requests_that_name_nothing_probeable(lab: Lab) -> None:
    with serve_exporter(inventory(lab)) as server:
        missing = fetch(f"{server.url}/probe")
        unknown = probe(server.url, "ocs-z")
        wrong_module = probe(server.url, "ocs-a", module="switch")
        not_a_switch = probe(server.url, "ocs-a", module="cpo")
        instrument = probe(server.url, "laser-1")
        twice = fetch(f"{server.url}/probe?target=ocs-a&target=ocs-b")
        two_modules = fetch(f"{server.url}/probe?target=ocs-a&module=ocs&module=switch")
        nowhere = fetch(f"{server.url}/nowhere")
        index = fetch(f"{server.url}/")
        healthy = fetch(f"{server.url}/-/healthy")
    assert missing.status == 400 and "missing parameter: target" in missing.body
    assert unknown.status == 404 and "unknown target 'ocs-z'" in unknown.body
    assert "ocs-a, ocs-b" in unknown.body and unknown.content_type.startswith("text/plain")
    assert wrong_module.status == 400 and "modules: ocs" in wrong_module.body
    assert not_a_switch.status == 400 and "module 'cpo' does not apply" in not_a_switch.body
    assert instrument.status == 400 and "no collector" in instrument.body
    # one device and one module per probe: several are refused, not the first taken
    assert twice.status == 400 and "target given 2 times" in twice.body
    assert two_modules.status == 400 and "module given 2 times" in two_modules.body
    assert nowhere.status == 404
    assert index.status == 200 and "/probe?target=NAME" in index.body
    assert healthy.status == 200


FROZEN_SCRAPE_TIMEOUT = 3.0
"""The frozen device's probe waits its budget, 2.75 s: room for the other probes,
answered while it waits, on a loaded machine."""


def cut_by(caplog: pytest.LogCaptureFixture, device: str) -> list[str]:
    """What the exporter logged as ending a probe of ``device`` without an answer: its
    budget (``no answer within the budget of B s``) or the device's own timeout, which
    the collector was given as the budget (``probe failed: ... within B s``)."""
    return [record.getMessage() for record in caplog.records
            if record.getMessage().startswith(f"{device}: ")
            and " within " in record.getMessage()]


def test_a_frozen_device_is_down_within_its_budget_and_delays_nobody(
        lab: Lab, caplog: pytest.LogCaptureFixture) -> None:
    """Told without a clock (a loaded machine stretches one): the others are answered
    while the frozen device's probe still waits, and what ended that probe says it was
    the budget, the scrape timeout less 0.25 s."""
    caplog.set_level(logging.INFO, logger="msoctl.exporter")
    lab.inject("ocs-b", Fault("freeze"))
    frozen: list[Response] = []
    with serve_exporter(inventory(lab)) as server:
        waiting = threading.Thread(target=lambda: frozen.append(
            probe(server.url, "ocs-b", scrape_timeout=FROZEN_SCRAPE_TIMEOUT)))
        waiting.start()
        time.sleep(0.05)
        others = [probe(server.url, name, scrape_timeout=FROZEN_SCRAPE_TIMEOUT)
                  for name in ("ocs-a", "amp-1")]
        assert waiting.is_alive(), "the frozen device's probe ended too early"
        waiting.join(timeout=30)
        own = fetch(f"{server.url}/metrics").body
    for reply in others:  # answered while ocs-b's probe waited: nobody waited for it
        assert value(reply.body, "msoctl_up") == 1.0
    reply = frozen[0]
    assert reply.status == 200
    assert value(reply.body, "msoctl_up", device="ocs-b") == 0.0
    ended = cut_by(caplog, "ocs-b")  # budget: 3.0 s less 0.25 s
    assert any(re.search(r" within (the budget of )?2\.75 s$", line) for line in ended), ended
    assert not any(name.startswith("msoctl_ocs_") for name in samples(reply.body))
    failures = sum(value(own, "msoctl_exporter_probe_failures_total", kind="ocs",
                         reason=reason) or 0 for reason in ("budget", "timeout"))
    assert failures == 1


def test_an_unreachable_device_is_down_at_once(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"devices": [
        {"name": "ocs-gone", "kind": "ocs", "transport": "visa",
         "address": "TCPIP::127.0.0.1::1::SOCKET"}]}))
    with serve_exporter(path) as server:
        reply = probe(server.url, "ocs-gone")
        own = fetch(f"{server.url}/metrics").body
    assert value(reply.body, "msoctl_up") == 0.0
    # at once: refused (reason unreachable), not waited out (timeout, budget); told by
    # the reason, not a clock
    assert value(own, "msoctl_exporter_probe_failures_total", kind="ocs",
                 reason="unreachable") == 1
    assert not any(value(own, "msoctl_exporter_probe_failures_total", kind="ocs", reason=reason)
                   for reason in ("timeout", "budget"))


def closed_port(kind: int = socket.SOCK_STREAM) -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, kind) as taken:
        taken.bind(("127.0.0.1", 0))
        return int(taken.getsockname()[1])


@pytest.mark.parametrize(("target", "module"), [("ocs-a", None), ("amp-1", None),
                                                ("sw-a", None), ("sw-a", "cpo")])
def test_every_collector_turns_an_unreachable_device_into_up_0(
        lab: Lab, caplog: pytest.LogCaptureFixture, target: str, module: str | None) -> None:
    """The same contract for every family: nothing listening is msoctl_up 0 within the
    budget, no family of the device, and the failure counted under the device's kind."""
    caplog.set_level(logging.INFO, logger="msoctl.exporter")
    document = yaml.safe_load(inventory(lab).read_text())
    for device in document["devices"]:
        if device["name"] == "ocs-a":
            device["address"] = f"TCPIP::127.0.0.1::{closed_port()}::SOCKET"
        elif device["name"] == "amp-1":
            device["address"] = f"socket://127.0.0.1:{closed_port()}"
        elif device["name"] == "sw-a":
            device["address"] = f"127.0.0.1:{closed_port()}"
            device["snmp"]["address"] = f"127.0.0.1:{closed_port(socket.SOCK_DGRAM)}"
    path = lab.state_dir / "unreachable.yaml"
    path.write_text(yaml.safe_dump(document))
    with serve_exporter(path) as server:
        reply = probe(server.url, target, module=module, scrape_timeout=1.5)
        own = fetch(f"{server.url}/metrics").body
    assert reply.status == 200 and value(reply.body, "msoctl_up", device=target) == 0.0
    assert exposed_families(reply.body) == {"msoctl_up", "msoctl_probe_duration_seconds"}
    kind = module or dict(LAB_KINDS)[target]
    reasons = {reason: value(own, "msoctl_exporter_probe_failures_total", kind=kind,
                             reason=reason) or 0 for reason in ("unreachable", "timeout", "budget")}
    assert sum(reasons.values()) == 1, reasons
    # within the budget (the 1.5 s scrape timeout less 0.25 s), told without a clock: refused
    # at once, or ended by the budget or by the device's timeout, which is the budget
    if not reasons["unreachable"]:
        ended = cut_by(caplog, target)
        assert any(re.search(r" within (the budget of )?1\.25 s", line) for line in ended), ended


def test_budget_follows_the_scrape_timeout_header(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("devices: []\n")
    prober = Prober(path)
    assert prober.budget("10") == pytest.approx(9.75)
    assert prober.budget("1") == pytest.approx(0.75)
    assert prober.budget("0.2") == pytest.approx(0.1)  # never less than half the timeout
    assert prober.budget(None) == pytest.approx(9.75)  # Prometheus's default 10 s
    assert prober.budget("soon") == pytest.approx(9.75)
    assert prober.budget("-3") == pytest.approx(9.75)


def test_inventory_changes_are_picked_up(lab: Lab) -> None:
    path = lab.state_dir / "exporter-inventory.yaml"  # beside the lab's: its secrets resolve
    document = yaml.safe_load(inventory(lab).read_text())
    path.write_text(yaml.safe_dump(document))
    # budgets far beyond a reading's: the subject is the reload (the first CPO/CPC
    # reading of a loaded machine once took 4.8 s, out of the 5 s the helper gives)
    roomy = 60.0
    with serve_exporter(path) as server:
        assert probe(server.url, "ocs-c").status == 404
        assert value(probe(server.url, "sw-b", module="cpo", scrape_timeout=roomy).body,
                     "msoctl_up") == 1.0
        ocs_a = next(d for d in document["devices"] if d["name"] == "ocs-a")
        document["devices"].append({**ocs_a, "name": "ocs-c"})  # a second way to ocs-a
        next(d for d in document["devices"] if d["name"] == "sw-b").pop("snmp")
        path.write_text(yaml.safe_dump(document) + "\n# changed\n")
        assert value(probe(server.url, "ocs-c", scrape_timeout=roomy).body, "msoctl_up",
                     device="ocs-c") == 1.0
        no_snmp = probe(server.url, "sw-b", module="cpo")
        assert no_snmp.status == 400 and "neither an snmp section nor gNMI" in no_snmp.body
        path.write_text("devices: [{name: broken}]\n")  # a bad file keeps the last good one
        assert probe(server.url, "ocs-c").status == 200
        own = fetch(f"{server.url}/metrics").body
    assert value(own, "msoctl_exporter_inventory_reloads_total", result="success") == 1
    assert value(own, "msoctl_exporter_inventory_reloads_total", result="failure") == 1


def test_inventory_sd_lists_every_device_with_its_labels(lab: Lab, msoctl: Msoctl,
                                                         tmp_path: Path) -> None:
    printed = msoctl("inventory", "sd")
    assert printed.code == 0, printed.err
    groups = json.loads(printed.out)
    exported = [(d["name"], d["kind"]) for d in yaml.safe_load(inventory(lab).read_text())[
        "devices"] if d["kind"] in ("ocs", "amp", "switch")]
    assert [(g["targets"][0], g["labels"]["kind"]) for g in groups] == [
        row for name, kind in exported
        for row in ([(name, kind), (name, "cpo")] if kind == "switch" and name in ("sw-a", "sw-b")
                    else [(name, kind)])]
    assert {name for name, _ in exported} >= set(LAB_DEVICES)
    telemetry = next(g for g in groups if g["labels"]["kind"] == "cpo")
    assert telemetry["labels"]["__param_module"] == "cpo"
    amp = next(g for g in groups if g["targets"] == ["amp-1"])
    assert amp["labels"] == {"campus": "b", "lab": "two-campus-30km", "span": "span-1",
                             "kind": "amp"}
    out = tmp_path / "targets.json"
    written = msoctl("inventory", "sd", "--out", str(out))
    assert written.code == 0 and json.loads(out.read_text()) == groups
    assert label_name("rack-row") == "rack_row"
    assert label_name("kind") == "inventory_kind"
    assert label_name("__meta") == "inventory_meta"
    assert label_name("9th") == "_9th"


def _certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=1))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName(
                       [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(key, hashes.SHA256()))
    cert, key_file = directory / "exporter.crt", directory / "exporter.key"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert, key_file


def test_tls(lab: Lab, tmp_path: Path, msoctl: Msoctl) -> None:
    from msoctl.exporter.server import tls_context

    cert, key = _certificate(tmp_path)
    client = ssl.create_default_context(cafile=str(cert))
    with serve_exporter(inventory(lab), tls=tls_context(cert, key)) as server:
        assert server.url.startswith("https://")
        reply = fetch(f"{server.url}/probe?target=amp-1", context=client)
        assert reply.status == 200 and value(reply.body, "msoctl_up") == 1.0
        with pytest.raises(OSError):  # a client that does not trust the certificate
            fetch(f"{server.url}/metrics", context=ssl.create_default_context())
        assert fetch(f"{server.url}/-/healthy", context=client).status == 200  # still serving
    half = msoctl("exporter", "--tls-cert", str(cert))
    assert half.code == 2 and "go together" in half.err
    bad = msoctl("exporter", "--tls-cert", str(key), "--tls-key", str(cert))
    assert bad.code == 2 and bad.err.startswith("error: cannot use TLS certificate")
    # a FIFO is refused unread (the start waited on it for ever)
    fifo = tmp_path / "cert.pipe"
    os.mkfifo(fifo)
    for args in (["--tls-cert", str(fifo), "--tls-key", str(key)],
                 ["--tls-cert", str(cert), "--tls-key", str(fifo)]):
        piped = msoctl("exporter", "--listen", "127.0.0.1:0", *args)
        assert piped.code == 2 and piped.err.count("\n") == 1, piped
        assert "TLS " in piped.err and "not a regular file" in piped.err, piped.err


def test_the_command_serves_until_sigterm_and_finishes_probes_in_flight(
        lab: Lab, tmp_path: Path) -> None:
    log = tmp_path / "exporter.log"
    msoctl_bin = Path(sys.executable).with_name("msoctl")
    with log.open("w") as stderr:
        process = subprocess.Popen([str(msoctl_bin), "exporter", "--listen", "127.0.0.1:0"],
                                   env=subprocess_env(lab), stdout=subprocess.DEVNULL,
                                   stderr=stderr)
    try:
        wait_until(lambda: "listening on" in log.read_text(), "exporter listening", seconds=20)
        url = log.read_text().split("listening on ")[1].split()[0]
        assert probe(url, "amp-1").status == 200
        lab.inject("ocs-b", Fault("freeze"))
        in_flight: list[Response] = []
        waiting = threading.Thread(
            target=lambda: in_flight.append(probe(url, "ocs-b", scrape_timeout=2.0)))
        waiting.start()
        time.sleep(0.3)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        waiting.join(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert in_flight and in_flight[0].status == 200, "the probe in flight was cut off"
    assert value(in_flight[0].body, "msoctl_up") == 0.0
    assert "msoctl exporter stopped" in log.read_text()


def test_ctrl_c_in_a_terminal_reaches_the_exporter_not_its_snmp_worker(
        lab: Lab, tmp_path: Path) -> None:
    """A terminal's Ctrl-C goes to its job's process group. The SNMP worker has a group of
    its own, so it is stopped by the exporter, never by the Ctrl-C: one that landed
    while the worker was still importing printed a traceback of the worker's."""
    log = tmp_path / "exporter.log"
    msoctl_bin = Path(sys.executable).with_name("msoctl")
    with log.open("w") as stderr:  # a job of its own, as a shell starts it
        process = subprocess.Popen([str(msoctl_bin), "exporter", "--listen", "127.0.0.1:0"],
                                   env=subprocess_env(lab), stdout=subprocess.DEVNULL,
                                   stderr=stderr, process_group=0)
    try:
        wait_until(lambda: "listening on" in log.read_text(), "exporter listening", seconds=20)
        url = log.read_text().split("listening on ")[1].split()[0]
        assert probe(url, "sw-a", module="cpo", scrape_timeout=60).status == 200
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        (worker,) = [int(pid) for pid in children]
        assert os.getpgid(worker) != os.getpgid(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C, as the terminal sends it
        assert process.wait(timeout=15) == 0
        wait_until(lambda: not Path(f"/proc/{worker}").exists(),
                   "the worker stopped by the exporter", seconds=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in log.read_text(), log.read_text()


def test_listen_address_errors(msoctl: Msoctl) -> None:
    assert msoctl("exporter", "--listen", "nowhere").code == 2
    taken = msoctl("exporter", "--listen", "256.1.1.1:80")
    assert taken.code == 2 and taken.err.startswith("error: cannot listen on")


def test_half_sent_requests_are_cut_off_and_connections_bounded(lab: Lab) -> None:
    """Clients that open a connection and send half a request (a byte now and then, to
    keep each read waiting) are cut off when the header time is up, however they
    trickle; past the connection bound one more is answered 503 at once without a
    thread; a scrape is served meanwhile and after. (300 half-sent requests held 304
    threads of the exporter for ever.)"""
    # a header time roomy enough that the 60 connections are all open before the first
    # ones are cut off, on a loaded machine too (at 0.6 s one run saw none refused)
    options = {"header_timeout_seconds": 1.5, "max_connections": 40}
    with serve_exporter(inventory(lab), server_options=options) as server:
        host, port = server.server_address[:2]
        threads_before = threading.active_count()
        stalled = [socket.create_connection((str(host), port), timeout=5) for _ in range(60)]
        try:
            for client in stalled:
                client.sendall(b"GET /probe?target=ocs-a HTTP/1.1\r\nHost: x\r\n")
            # the accepting thread takes them in its own time (a loaded machine's)
            wait_until(lambda: server.refused_busy >= 20, "20 connections refused busy", 5)
            assert threading.active_count() - threads_before <= 40 + 5  # their timers too
            for client in stalled[:40]:
                client.sendall(b"X")  # a trickle: each read is fed in time
            # the bound holds a scrape out while every slot is held ...
            busy = fetch(f"{server.url}/-/healthy")
            assert busy.status == 503
            time.sleep(1.7)
            # ... and the header time cut every held connection off
            for client in stalled[:40]:
                client.settimeout(2)
                reply = client.recv(4096)
                assert reply == b"" or reply.startswith(b"HTTP/1.0 408"), reply[:80]
            healthy = fetch(f"{server.url}/-/healthy")
            assert healthy.status == 200
            assert probe(server.url, "ocs-a").status == 200
        finally:
            for client in stalled:
                client.close()
