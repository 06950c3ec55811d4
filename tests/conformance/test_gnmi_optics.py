"""CPO optics over gNMI: the emulated switch's OpenConfig and SONiC faces read by
drivers/optics/gnmi.py, against the switch's CPO model itself.

One CPO model (a SwitchTelemetry on a stepped clock, so that every reading of one moment
is the same snapshot) serves two switches, one per face, for the whole module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from drivers.optics.gnmi import OpticsAccumulator, follow, read
from drivers.optics.gnmi_paths import subscription_paths
from drivers.optics.readings import NO_LIGHT_DBM, OpticsReading
from drivers.transports.gnmi import GnmiClient, GnmiTarget, StreamPath
from emulators.clock import SteppedClock
from emulators.cpo.datasheet import THRESHOLDS
from emulators.cpo.model import SwitchTelemetry, TelemetrySpec
from emulators.faults import Fault
from emulators.loopthread import LoopThread
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort

PORTS = 4
NAMES = [f"Ethernet{n}" for n in range(1, PORTS + 1)]
FACES = ("openconfig", "sonic")
RESOLUTION = {"openconfig": {"dbm": 0.005, "ma": 0.005, "celsius": 0.05, "volts": 0.005},
              "sonic": {"dbm": 0.0005, "ma": 0.0005, "celsius": 0.0005, "volts": 0.00005}}
"""Half the last digit each face writes a quantity with."""


class Rig:
    def __init__(self) -> None:
        self.clock = SteppedClock()
        spec = TelemetrySpec(ports=tuple(range(1, PORTS + 1)), optical_lanes_per_port=8,
                             electrical_lanes_per_port=8, lanes_per_engine=16,
                             lanes_per_laser=8, lasers_per_els_module=4)
        self.telemetry = SwitchTelemetry("sw-g", self.clock, spec, seed=7)
        ports = {name: PhysicalPort("400G", 100.0) for name in NAMES}
        self.devices = {face: SwitchDevice(f"sw-{face}", ports, clock=self.clock, face=face,
                                           telemetry=self.telemetry,
                                           commit_confirmed=False) for face in FACES}
        self.loop = LoopThread("gnmi-optics")
        self.loop.start()
        for device in self.devices.values():
            self.loop.call(device.start())

    def client(self, face: str, timeout: float = 5.0) -> GnmiClient:
        device = self.devices[face]
        return GnmiClient(GnmiTarget(device.name, "127.0.0.1", device.port, insecure=True,
                                     timeout_seconds=timeout))

    def close(self) -> None:
        for device in self.devices.values():
            self.loop.call(device.stop())
        self.loop.stop()


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    running = Rig()
    running.clock.advance(30.0)  # FEC counters that count
    yield running
    running.close()


@pytest.fixture(autouse=True)
def clean(rig: Rig) -> Iterator[None]:
    yield
    for device in rig.devices.values():
        device.faults.clear()
    rig.telemetry.faults.clear()


def readings(rig: Rig) -> dict[str, OpticsReading]:
    found = {}
    for face in FACES:
        with rig.client(face) as client:
            found[face] = read(client, face)
    return found


def test_both_faces_give_what_the_model_holds(rig: Rig) -> None:
    rig.clock.advance(1.5)
    found = readings(rig)
    truth = rig.telemetry.read()  # the snapshot both faces served (the clock stood still)
    engines = {engine.index: engine for engine in truth.engines}
    for face, reading in found.items():
        tolerance = RESOLUTION[face]
        assert reading.source == face and not reading.dropped
        assert [(port.port, port.port_name) for port in reading.ports] == \
            list(enumerate(NAMES, start=1))
        for port in reading.ports:
            lanes = [lane for lane in truth.optical_lanes if lane.port == port.port]
            engine = engines[lanes[0].engine]
            assert port.temperature_celsius == pytest.approx(
                engine.temperature_celsius, abs=tolerance["celsius"])
            assert port.supply_voltage_volts == pytest.approx(
                engine.supply_voltage_volts, abs=tolerance["volts"])
            assert [lane.lane for lane in port.lanes] == [lane.lane for lane in lanes]
            for got, want in zip(port.lanes, lanes, strict=True):
                assert got.tx_power_dbm == pytest.approx(want.tx_power_dbm, abs=tolerance["dbm"])
                assert got.rx_power_dbm == pytest.approx(want.rx_power_dbm, abs=tolerance["dbm"])
                assert got.tx_bias_ma == pytest.approx(want.tx_bias_ma, abs=tolerance["ma"])
            for quantity, limits in THRESHOLDS.items():
                got_levels = port.thresholds[quantity]
                for level in ("low_alarm", "low_warning", "high_warning", "high_alarm"):
                    assert getattr(got_levels, level) == pytest.approx(getattr(limits, level))
        for fec in reading.fec:
            copper = [lane for lane in truth.electrical_lanes if lane.port == fec.port]
            assert fec.corrected_total == sum(lane.fec_corrected for lane in copper)
            assert fec.uncorrectable_total == sum(lane.fec_uncorrectable for lane in copper)
            assert fec.pre_fec_ber is not None and 0 < fec.pre_fec_ber < 1e-3
            assert fec.speed_mbps == 400_000
    assert [f.port_name for f in found["openconfig"].fec] == NAMES
    histogram = found["sonic"].fec[0].codewords_total
    copper = [lane for lane in truth.electrical_lanes if lane.port == 1]
    assert histogram == tuple(sum(lane.histogram[b] for lane in copper) for b in range(17))
    assert found["openconfig"].lasers == ()
    lasers = found["sonic"].lasers
    assert {(laser.module, laser.lane) for laser in lasers} == \
        {(laser.module, laser.lane) for laser in truth.lasers}
    for laser in lasers:
        want = next(x for x in truth.lasers if (x.module, x.lane) == (laser.module, laser.lane))
        assert laser.output_power_dbm == pytest.approx(want.output_power_dbm, abs=0.0005)
        assert laser.bias_current_ma == pytest.approx(want.bias_current_ma, abs=0.0005)
        assert laser.state == "on"


def test_a_dark_laser_reads_no_light_on_sonic_and_the_floor_on_openconfig(rig: Rig) -> None:
    rig.telemetry.faults.inject(Fault("els", target="1/1"))  # laser 1/1 feeds port 1
    rig.clock.advance(0.5)
    found = readings(rig)
    sonic_port = found["sonic"].port_named("Ethernet1")
    assert sonic_port is not None and all(lane.tx_power_dbm == NO_LIGHT_DBM
                                          for lane in sonic_port.lanes)  # "-inf" in the DB
    openconfig_port = found["openconfig"].port_named("Ethernet1")
    assert openconfig_port is not None and all(lane.tx_power_dbm == -40.0
                                               for lane in openconfig_port.lanes)
    first = next(laser for laser in found["sonic"].lasers if (laser.module, laser.lane) == (1, 1))
    assert first.state == "off" and first.output_power_dbm == NO_LIGHT_DBM


def test_telemetry_leaves_come_as_scalars_decimals_as_double(rig: Rig) -> None:
    path = ("/components/component[name=transceiver-Ethernet2]/transceiver/"
            "physical-channels/channel[index=3]/state/input-power/instant")
    with rig.client("openconfig") as client:
        notification, = client.get_notifications([path])
    update, = notification.update
    assert update.val.WhichOneof("value") == "double_val"
    with rig.client("sonic") as client:
        notification, = client.get_notifications(
            ["/sonic-db:STATE_DB/localhost/TRANSCEIVER_DOM_SENSOR/Ethernet2/rx3power"])
    assert notification.update[0].val.WhichOneof("value") == "json_ietf_val"


@pytest.mark.parametrize("face", FACES)
def test_malformed_samples_are_dropped_and_counted_the_rest_stands(rig: Rig, face: str) -> None:
    rig.devices[face].faults.inject(Fault("malformed"))
    accumulator = OpticsAccumulator(rig.devices[face].name, face)
    wanted = [StreamPath(p.path, p.mode, 0.05) if p.mode == "SAMPLE" else
              StreamPath(p.path, p.mode) for p in subscription_paths(face)]
    with rig.client(face) as client:
        stream = client.subscribe_paths(wanted)
        for _ in range(3 * len(wanted)):
            accumulator.add(next(stream))
        stream.close()
    reading = accumulator.reading()
    assert reading.dropped.get("nan", 0) > 0
    assert reading.dropped.get("not a number", 0) > 0
    assert reading.dropped.get("unsubscribed", 0) > 0
    assert [port.port_name for port in reading.ports] == NAMES
    assert sum(lane.rx_power_dbm is not None for port in reading.ports
               for lane in port.lanes) >= 4 * 8 - 3  # a spoilt sample costs its own leaf


def test_a_stream_cut_and_resumed_ages_then_recovers(rig: Rig) -> None:
    device = rig.devices["sonic"]
    accumulator = OpticsAccumulator(device.name, "sonic")
    stop = threading.Event()
    client = rig.client("sonic", timeout=0.5)
    runner = threading.Thread(target=follow, args=(client, accumulator),
                              kwargs={"stop": stop, "sample_seconds": 0.05,
                                      "retry_seconds": 0.1}, daemon=True)
    runner.start()
    try:
        wait_for(lambda: (age := accumulator.reading().age_seconds) is not None and age < 0.3)
        device.faults.inject(Fault("stream_stop"))  # every stream cut, new ones too
        time.sleep(0.2)
        device.faults.inject(Fault("freeze"))  # and then nothing at all
        wait_for(lambda: (accumulator.reading().age_seconds or 0) > 0.6)
        device.faults.clear()
        wait_for(lambda: (accumulator.reading().age_seconds or 9) < 0.3)
        port = rig.devices["sonic"].port
        rig.loop.call(device.stop())  # the server goes away, and comes back
        wait_for(lambda: (accumulator.reading().age_seconds or 0) > 0.6)
        rig.loop.call(device.start(port=port))
        wait_for(lambda: (accumulator.reading().age_seconds or 9) < 0.3)
        assert [p.port_name for p in accumulator.reading().ports] == NAMES
    finally:
        stop.set()
        runner.join(5)
        client.close()


def test_a_stream_stop_fault_cuts_a_notification_and_ends_the_call(rig: Rig) -> None:
    device = rig.devices["openconfig"]
    device.faults.inject(Fault("stream_stop", count=1))
    whole = len(rig.telemetry.read().optical_lanes)
    path = ("/components/component[name=*]/transceiver/physical-channels/"
            "channel[index=*]/state/input-power/instant")
    with rig.client("openconfig") as client:
        stream = client.subscribe_paths([StreamPath(path, "SAMPLE", 0.05)])
        first = next(stream)
        assert len(first.update) == whole // 2
        with pytest.raises(Exception, match="stream stopped"):
            next(stream)


def test_state_changes_stream_on_change(rig: Rig) -> None:
    path = "/sonic-db:STATE_DB/localhost/TRANSCEIVER_ELS_STATUS"
    with rig.client("sonic") as client:
        stream = client.subscribe_paths([StreamPath(path, "ON_CHANGE")])
        initial = next(stream)
        assert initial.update
        rig.telemetry.faults.inject(Fault("els", target="1/2"))
        changed = next(stream)
        assert b'"txoutput_status2": "False"' in changed.update[0].val.json_ietf_val \
            or b'"txoutput_status2":"False"' in changed.update[0].val.json_ietf_val
        stream.close()


def wait_for(condition, seconds: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
