"""The emulated switch's optics over gNMI against independent peers: pygnmi subscribes
STREAM SAMPLE to the telemetry paths, and the OpenConfig JSON of a transceiver component
loads into oc-config-validate's pyangbind platform bindings (generated from
openconfig/public, not from this project).

pygnmi runs in a process of its own (its gNMI stubs cannot share one with gnmi-pb's:
tests/support/peers.py). A missing peer skips (fails with CI=true).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drivers.transports.gnmi import GnmiClient, GnmiTarget
from emulators.clock import SteppedClock
from emulators.cpo.datasheet import THRESHOLDS
from emulators.cpo.model import SwitchTelemetry, TelemetrySpec
from emulators.loopthread import LoopThread
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort
from tests.support.oc_bindings import HOW_TO_INSTALL
from tests.support.peers import require_module, separate_process_script

SCRIPT = """
import json, sys
from pygnmi.client import gNMIclient

settings = json.loads(sys.argv[1])
out = []
with gNMIclient(target=("127.0.0.1", settings["port"]), insecure=True, gnmi_timeout=10) as client:
    subscription = {"mode": "stream", "encoding": "json_ietf", "subscription": [
        {"path": path, "mode": "sample", "sample_interval": 50000000}
        for path in settings["paths"]]}
    stream = client.subscribe2(subscribe=subscription)
    for _ in range(settings["messages"]):
        message = stream.get_update(timeout=5)
        if "update" in message:
            for update in message["update"].get("update", []):
                out.append([update["path"], update.get("val")])
    stream.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def switches() -> Iterator[dict[str, SwitchDevice]]:
    clock = SteppedClock()
    spec = TelemetrySpec(ports=(1, 2), optical_lanes_per_port=8, electrical_lanes_per_port=8,
                         lanes_per_engine=16, lanes_per_laser=8, lasers_per_els_module=4)
    telemetry = SwitchTelemetry("sw-i", clock, spec, seed=11)
    clock.advance(10.0)
    ports = {f"Ethernet{n}": PhysicalPort("400G", 100.0) for n in (1, 2)}
    devices = {face: SwitchDevice(f"sw-{face}", ports, clock=clock, face=face,
                                  telemetry=telemetry, commit_confirmed=False)
               for face in ("openconfig", "sonic")}
    loop = LoopThread("gnmi-optics-interop")
    loop.start()
    for device in devices.values():
        loop.call(device.start())
    yield devices
    for device in devices.values():
        loop.call(device.stop())
    loop.stop()


def pygnmi(tmp_path: Path, port: int, paths: list[str], messages: int) -> list[Any]:
    script = separate_process_script("pygnmi", SCRIPT, tmp_path)
    settings = {"port": port, "paths": paths, "messages": messages}
    done = subprocess.run([sys.executable, str(script), json.dumps(settings)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_pygnmi_streams_openconfig_channel_powers(switches: dict[str, SwitchDevice],
                                                  tmp_path: Path) -> None:
    """The leaves come as double_val, which pygnmi 0.8 does not decode (it shows no
    ``val``: its parser knows float_val, not double_val); the containers come as
    JSON_IETF, which it does."""
    channels = ("/components/component[name=transceiver-Ethernet1]/transceiver/"
                "physical-channels/channel[index=*]/state")
    got = pygnmi(tmp_path, switches["openconfig"].port,
                 [f"{channels}/input-power/instant", f"{channels}/output-power"], messages=3)
    leaves = {path for path, _ in got if path.endswith("input-power/instant")}
    assert len(leaves) == 8, got
    containers = [value for path, value in got if path.endswith("state/output-power")]
    assert len(containers) >= 8, got
    assert all(0 < float(value["instant"]) < 3 and "avg" in value for value in containers), got


def test_pygnmi_streams_sonic_dom_sensor_rows(switches: dict[str, SwitchDevice],
                                              tmp_path: Path) -> None:
    path = "/sonic-db:STATE_DB/localhost/TRANSCEIVER_DOM_SENSOR/Ethernet2"
    got = pygnmi(tmp_path, switches["sonic"].port, [path], messages=3)
    assert got, got
    for _, row in got:
        assert float(row["rx1power"]) < 1 and float(row["tx8bias"]) > 5
        assert set(row) >= {"temperature", "voltage", *(f"tx{n}power" for n in range(1, 9))}


def test_a_transceiver_component_loads_into_the_platform_bindings(
        switches: dict[str, SwitchDevice]) -> None:
    platform = require_module("oc_config_validate.models.platform",
                              how_to_install=HOW_TO_INSTALL)
    serialise = require_module("pyangbind.lib.serialise", how_to_install=HOW_TO_INSTALL)
    device = switches["openconfig"]
    with GnmiClient(GnmiTarget(device.name, "127.0.0.1", device.port, insecure=True)) as client:
        components = client.get_json("/openconfig-platform:components")
    document = {"openconfig-platform:components": components}
    root = platform.openconfig_platform()
    serialise.pybindJSONDecoder.load_ietf_json(document, None, None, obj=root)
    loaded = root.components.component["transceiver-Ethernet1"]
    channel = loaded.transceiver.physical_channels.channel[3]
    assert -5 < float(channel.state.input_power.instant) < 1
    assert float(loaded.state.temperature.instant) > 40
    critical = loaded.transceiver.thresholds.threshold["openconfig-alarm-types:CRITICAL"]
    assert float(critical.state.output_power_upper) == \
        THRESHOLDS["tx_power_dbm"].high_alarm  # the datasheet's, as the switch holds it
    port = root.components.component["Ethernet1"]
    assert list(port.subcomponents.subcomponent) == ["transceiver-Ethernet1"]
    bad = json.loads(json.dumps(document))
    bad["openconfig-platform:components"]["component"][1]["state"]["warp"] = 1
    with pytest.raises(AttributeError, match="warp"):  # they refuse what the model lacks
        serialise.pybindJSONDecoder.load_ietf_json(bad, None, None,
                                                   obj=platform.openconfig_platform())
