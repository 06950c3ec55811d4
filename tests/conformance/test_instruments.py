"""Lab instruments: the drivers against the emulated laser and power meter.

The emulators are reached at the lowest seam, TCP through pyvisa (pyvisa-py),
so the drivers' SCPI and the emulators' parser both run. The clock is a
SteppedClock: the OCS's and the meter's waits jump it instead of sleeping.

Every test runs over the full units and the plain ones (a laser without range
queries, a meter without all-ports reading or logging, both with ``:SYST:ERR?``
only): what a plain unit lacks is reported, refused before anything is sent, or
done the standard way instead. No exchange waits out a timeout: after each test
(but those that cause one on purpose, asking for ``resyncs``) neither instrument
received a resynchronisation probe.
"""

from __future__ import annotations

import asyncio
import math
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from drivers.errors import (
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    Unsupported,
    ValidationError,
)
from drivers.instruments import LaserDriver, MeterDriver, open_laser, open_meter
from drivers.instruments.commands import LASER_COMMANDS, METER_COMMANDS
from drivers.ocs import OcsDriver
from drivers.ocs.connect import open_ocs
from drivers.scpi.block import parse_blocks
from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.instruments.acceptancelab import AcceptanceLab
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import ACCURACY_DB, NOISE_DB, PowerMeter
from emulators.instruments.scpi import make_meter_interpreter
from emulators.instruments.testset import FULL, PLAIN, InstrumentKinds
from emulators.optics.model import OpticalModel, Source

SIZE = 8


@pytest.fixture(params=[FULL, PLAIN], ids=["full", "plain"])
def kinds(request: pytest.FixtureRequest) -> InstrumentKinds:
    kind: InstrumentKinds = request.param
    return kind


@pytest.fixture
def resyncs() -> bool:
    """Asked for by a test that makes a session resynchronise on purpose."""
    return True


@pytest.fixture
def lab(tmp_path: Path, kinds: InstrumentKinds,
        request: pytest.FixtureRequest) -> Iterator[AcceptanceLab]:
    with AcceptanceLab(tmp_path / "test-set", size=SIZE, clock=SteppedClock(),
                       instruments=kinds) as running:
        yield running
        if "resyncs" not in request.fixturenames:
            for device in (running.laser, running.meter):
                assert device.requests.resync_probes() == [], device.name


def _changes(device: TunableLaser | PowerMeter) -> list[str]:
    """The setting commands (and resets) that reached ``device``, by key."""
    return sorted(key for key, count in device.requests.commands.items()
                  if count and (key.endswith("_set") or key == "reset"))


def _address(lab: AcceptanceLab, name: str) -> str:
    inventory = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    return next(d["address"] for d in inventory["devices"] if d["name"] == name)


@pytest.fixture
def laser(lab: AcceptanceLab) -> Iterator[LaserDriver]:
    driver = open_laser("laser-1", "visa", _address(lab, "laser-1"), timeout_seconds=2.0)
    yield driver
    driver.close()


@pytest.fixture
def meter(lab: AcceptanceLab) -> Iterator[MeterDriver]:
    driver = open_meter("pm-1", "visa", _address(lab, "pm-1"), channels=SIZE,
                        timeout_seconds=2.0)
    yield driver
    driver.close()


@pytest.fixture
def ocs(lab: AcceptanceLab) -> Iterator[OcsDriver]:
    driver = open_ocs("ocs-dut", "visa", _address(lab, "ocs-dut"), timeout_seconds=2.0)
    yield driver
    driver.close()


# ---- the laser ---------------------------------------------------------------------------------


def test_laser_identity_range_and_settings(laser: LaserDriver, lab: AcceptanceLab,
                                          kinds: InstrumentKinds) -> None:
    identity = laser.identity()
    assert (identity.manufacturer, identity.serial) == ("MegaScaleOut", lab.laser.serial)
    assert laser.features().has("range") is kinds.laser_range
    if kinds.laser_range:
        limits = laser.range()
        assert (limits.wavelength_min_nm, limits.wavelength_max_nm) == (1260.0, 1640.0)
        assert (limits.power_min_dbm, limits.power_max_dbm) == (-10.0, 13.0)
    else:
        sent = lab.laser.requests.received
        with pytest.raises(Unsupported) as caught:
            laser.range()
        assert str(caught.value) == ("laser-1: range queries (MIN/MAX) not supported by this "
                                     "unit (:SOUR1:WAV? MIN is refused, -108 Parameter not "
                                     "allowed)")
        assert lab.laser.requests.received == sent  # its answer when it opened
    laser.set_wavelength_nm(1310.5)
    laser.set_power_dbm(7.25)
    laser.set_output(True)
    settings = laser.settings()
    assert (settings.wavelength_nm, settings.power_dbm, settings.output_on) == (1310.5, 7.25, True)
    assert lab.laser.wavelength_nm == pytest.approx(1310.5)
    # *OPC? waited for the turn-on: the light is out now, at the set power and its error.
    emitted = lab.optics.power_dbm("laser-1:out")
    assert emitted == pytest.approx(7.25 + lab.laser.offset_db)
    assert abs(lab.laser.offset_db) <= 0.05
    laser.set_output(False)
    assert lab.optics.power_dbm("laser-1:out") == -math.inf


def test_laser_refuses_out_of_range_before_sending(laser: LaserDriver, lab: AcceptanceLab,
                                                   kinds: InstrumentKinds) -> None:
    if kinds.laser_range:
        with pytest.raises(ValidationError, match="outside the laser's range"):
            laser.set_wavelength_nm(1700.0)
        with pytest.raises(ValidationError):
            laser.set_power_dbm(20.0)
        assert lab.laser.errors_reported == 0  # nothing reached the laser
        assert _changes(lab.laser) == []
        return
    # Without range queries the laser's own check refuses, and nothing changes.
    with pytest.raises(DeviceRejected, match="-222"):
        laser.set_wavelength_nm(1700.0)
    with pytest.raises(DeviceRejected, match="-222"):
        laser.set_power_dbm(20.0)
    assert (lab.laser.wavelength_nm, lab.laser.power_dbm) == (1550.0, 0.0)
    assert laser.settings().wavelength_nm == 1550.0


def test_laser_rejection_is_typed(laser: LaserDriver) -> None:
    # Sent anyway (as another tool might): the laser's error queue answers.
    with pytest.raises(DeviceRejected) as caught:
        laser.session.change(":SOUR1:WAV 2.0E-06", "set wavelength")
    assert caught.value.errors and caught.value.errors[0].startswith("-222")
    with pytest.raises(DeviceRejected):
        laser.session.change(":SOUR2:WAV 1.55E-06", "set wavelength")  # no slot 2


def test_laser_long_forms_and_units(laser: LaserDriver, lab: AcceptanceLab) -> None:
    laser.session.change(":SOURCE1:POWER:UNIT W", "unit")
    laser.session.change(":source1:power 1.0E-03", "power")  # 1 mW
    assert lab.laser.power_dbm == pytest.approx(0.0)
    assert float(laser.session.query(":SOUR1:POW?")) == pytest.approx(1e-3)
    assert laser.power_dbm() == pytest.approx(0.0)  # read with the unit it is answered in
    laser.set_power_dbm(-3.0)  # sent with its unit
    assert lab.laser.power_unit == 0 and lab.laser.power_dbm == pytest.approx(-3.0)
    laser.session.change(":SOUR1:POW:UNIT DBM", "unit")
    assert float(laser.session.query(":SOUR1:POW?")) == pytest.approx(-3.0)


# ---- the meter ---------------------------------------------------------------------------------


def _light_everything(lab: AcceptanceLab, laser: LaserDriver, ocs: OcsDriver) -> dict[int, int]:
    laser.set_power_dbm(10.0)
    laser.set_output(True)
    paths = {i: SIZE + i for i in range(1, SIZE + 1)}
    ocs.replace_map(paths)
    return paths


def test_meter_reads_what_arrives_within_its_accuracy(
        lab: AcceptanceLab, laser: LaserDriver, meter: MeterDriver, ocs: OcsDriver,
        kinds: InstrumentKinds) -> None:
    _light_everything(lab, laser, ocs)
    meter.set_averaging_seconds(0.01)
    readings = meter.read_all_dbm()
    # All at once where the meter can; else port by port (never the query it lacks).
    assert lab.meter.requests.commands["read_all"] == (1 if kinds.meter_all_ports else 0)
    assert lab.meter.requests.commands["read"] == (0 if kinds.meter_all_ports else SIZE)
    for port in range(1, SIZE + 1):
        true = lab.optics.power_dbm(f"pm-1:{port}")
        reading = readings[port]
        assert reading is not None
        assert abs(reading - true) <= ACCURACY_DB + 5 * NOISE_DB
        # The calibration error is the same every time: averaged, it is what is left.
        mean = sum(v for v in (meter.read_dbm(port) for _ in range(20)) if v is not None) / 20
        assert mean - true == pytest.approx(lab.meter.offset_db[port - 1], abs=0.01)
    assert meter.fetch_all_dbm() != {}


def test_meter_calibration_is_fixed_per_serial() -> None:
    optics = OpticalModel(SteppedClock())
    first = PowerMeter("pm-a", optics, channels=4, serial="SN-1")
    again = PowerMeter("pm-b", optics, channels=4, serial="SN-1")
    other = PowerMeter("pm-c", optics, channels=4, serial="SN-2")
    assert first.offset_db == again.offset_db != other.offset_db
    assert all(abs(o) <= ACCURACY_DB for o in first.offset_db + other.offset_db)


def test_dark_port_reads_the_floor_not_nothing(lab: AcceptanceLab, meter: MeterDriver) -> None:
    reading = meter.read_dbm(1)
    assert reading is not None and -95.0 < reading < -75.0


def test_meter_settings_per_port(meter: MeterDriver, lab: AcceptanceLab) -> None:
    meter.set_wavelength_nm(1310.0, [2])
    meter.set_averaging_seconds(0.5, [3])
    assert meter.wavelength_nm(2) == 1310.0
    assert meter.wavelength_nm(1) == 1550.0
    assert meter.averaging_seconds(3) == pytest.approx(0.5)
    with pytest.raises(ValidationError):
        meter.read_dbm(SIZE + 1)
    with pytest.raises(ValidationError):
        meter.set_averaging_seconds(20.0)
    with pytest.raises(DeviceRejected):  # a port the meter does not have
        meter.session.change(":SENS99:CHAN1:POW:ATIM 0.1", "averaging")


def _refused_without_logging(lab: AcceptanceLab, meter: MeterDriver) -> None:
    """On a meter without logging: every logging request refused, naming the feature and
    the probe that found it missing, before anything is sent; none to stop."""
    sent, commands = lab.meter.requests.received, dict(lab.meter.requests.commands)
    refusal = (r"^pm-1: power logging not supported by this unit "
               r"\(:SENS1:CHAN1:FUNC:STAT\? is an undefined header on it\)$")
    for request in (lambda: meter.configure_logging(100, 1e-3, [1]),
                    lambda: meter.start_logging([1]), lambda: meter.wait_logging([1]),
                    lambda: meter.logging_results([1])):
        with pytest.raises(Unsupported, match=refusal):
            request()
    meter.stop_logging([1])
    assert lab.meter.requests.received == sent and lab.meter.requests.commands == commands
    assert lab.meter.requests.commands["function_state"] == 1  # the probe, when it opened
    assert "function_set" not in lab.meter.requests.commands
    assert lab.meter.logging_state(1) == "NONE,COMPLETE"


def test_logging_shows_the_switching_transient(
        lab: AcceptanceLab, laser: LaserDriver, meter: MeterDriver, ocs: OcsDriver,
        kinds: InstrumentKinds) -> None:
    paths = _light_everything(lab, laser, ocs)
    if not kinds.meter_logging:
        _refused_without_logging(lab, meter)
        return
    interval = 1e-4
    meter.configure_logging(600, interval)
    meter.start_logging()
    moved = {i: SIZE + (i % SIZE) + 1 for i in paths}
    ocs.replace_map(moved)
    emulated = lab.ocs.last_switch_seconds
    assert emulated is not None
    meter.wait_logging()
    traces = meter.logging_results()
    assert set(traces) == set(range(1, SIZE + 1))
    for trace in traces.values():
        assert len(trace.powers_dbm) == 600 and trace.interval_seconds == interval
        lit = [k for k, v in enumerate(trace.powers_dbm) if v is not None and v > -20.0]
        dark = [k for k, v in enumerate(trace.powers_dbm) if v is None or v < -60.0]
        # Dark from the command (the stepped clock starts the logging with it), lit
        # from the end of the reconfiguration on, to the sample.
        assert dark[0] == 0 and lit[0] == pytest.approx(emulated / interval, abs=1.01)
        assert all(k >= lit[0] for k in lit) and max(dark) < lit[0]


def test_logging_refuses_settings_while_running_and_results_before(
        lab: AcceptanceLab, meter: MeterDriver, kinds: InstrumentKinds) -> None:
    if not kinds.meter_logging:
        _refused_without_logging(lab, meter)
        return
    with pytest.raises(DeviceRejected, match="-221"):
        meter.session.change(":SENS1:CHAN1:FUNC:RES?", "results")  # no logging yet
    meter.configure_logging(100, 1e-3, [1])
    meter.start_logging([1])
    with pytest.raises(DeviceRejected, match="-221"):
        meter.set_averaging_seconds(0.1, [1])
    meter.wait_logging([1])
    assert len(meter.logging_results([1])[1].powers_dbm) == 100
    meter.stop_logging([1])
    assert meter.session.query(":SENS1:CHAN1:FUNC:STAT?") == "NONE,COMPLETE"


def test_logging_must_fit_the_timeout(meter: MeterDriver, kinds: InstrumentKinds) -> None:
    # 10 s against a 2 s timeout; on a meter without logging, that comes first.
    with pytest.raises(ValidationError, match="outlast" if kinds.meter_logging
                       else "power logging not supported") as caught:
        meter.configure_logging(100_000, 1e-4)
    assert isinstance(caught.value, Unsupported) is not kinds.meter_logging


# ---- errors through the one hierarchy --------------------------------------------------------


def test_garbled_reply_is_a_protocol_error(meter: MeterDriver, lab: AcceptanceLab,
                                           resyncs: bool) -> None:
    lab.meter.faults.inject(Fault("garbage", count=1))
    with pytest.raises(ProtocolError):
        meter.identity()
    assert meter.identity().serial == lab.meter.serial  # resynchronised


def test_silence_is_a_timeout(lab: AcceptanceLab, resyncs: bool) -> None:
    laser = open_laser("laser-1", "visa", _address(lab, "laser-1"), timeout_seconds=0.3)
    try:
        lab.laser.faults.inject(Fault("freeze"))
        with pytest.raises(DeviceTimeout) as caught:
            laser.identity()
        assert caught.value.device == "laser-1"
        lab.laser.faults.clear("freeze")
        assert laser.identity().serial == lab.laser.serial
    finally:
        laser.close()


def test_nothing_listening_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DeviceUnreachable):
        open_meter("pm-x", "visa", f"TCPIP::127.0.0.1::{port}::SOCKET", channels=4,
                   timeout_seconds=1.0)


def test_serial_transport_reaches_the_meter(lab: AcceptanceLab, kinds: InstrumentKinds) -> None:
    port = _address(lab, "pm-1").split("::")[2]
    meter = open_meter("pm-1", "serial", f"socket://127.0.0.1:{port}", channels=SIZE,
                       timeout_seconds=2.0)
    try:
        readings = meter.read_all_dbm([1, 2])
        assert list(readings) == [1, 2] and all(v is not None for v in readings.values())
        if not kinds.meter_logging:
            _refused_without_logging(lab, meter)
            return
        meter.configure_logging(300, 1e-4, [1, 2])
        meter.start_logging([1, 2])
        meter.wait_logging([1, 2])
        traces = meter.logging_results([1, 2])  # binary blocks through pyserial
        assert [len(t.powers_dbm) for t in traces.values()] == [300, 300]
    finally:
        meter.close()


# ---- the SCPI pieces ---------------------------------------------------------------------------


def test_tables_parse_and_render_suffixes() -> None:
    assert METER_COMMANDS["read"].short_with({"READ": 3, "CHANnel": 1}) == ":READ3:CHAN1:POW?"
    assert LASER_COMMANDS["output_set"].short_with({"OUTPut": 2}) == ":OUTP2:STAT"
    with pytest.raises(ValueError):
        LASER_COMMANDS["output_set"].short_with({"SENSe": 1})


def test_compound_messages_keep_the_branch_suffix() -> None:
    optics = OpticalModel(SteppedClock())
    meter = PowerMeter("pm", optics, channels=4)
    interpreter = make_meter_interpreter(meter)
    run = asyncio.run
    run(interpreter.execute(":SENS3:CHAN1:POW:WAV 1.31E-06;ATIM 0.25"))
    assert meter.port(3).wavelength_m == pytest.approx(1.31e-6)
    assert meter.port(3).averaging_seconds == 0.25  # relative header, still port 3
    assert meter.port(1).averaging_seconds != 0.25
    assert len(interpreter.errors) == 0


def test_binary_block_replies_and_their_parsing() -> None:
    optics = OpticalModel(SteppedClock())
    source = Source("src", {"1": -3.0})
    optics.add(source)
    meter = PowerMeter("pm", optics, channels=2)
    optics.patch("src:1", "pm:1")
    interpreter = make_meter_interpreter(meter)
    asyncio.run(interpreter.execute(":SENS1:CHAN1:FUNC:PAR:LOGG 50,1E-3;"
                                    ":SENS1:CHAN1:FUNC:STAT LOGG,STAR"))
    reply = asyncio.run(interpreter.execute(":SENS1:CHAN1:FUNC:RES?;:SENS1:CHAN1:FUNC:RES?"))
    assert isinstance(reply, bytes) and reply.startswith(b"#3200")
    blocks = parse_blocks(reply + b"\n", 2, b"\n")
    assert blocks is not None and blocks[0] == blocks[1]
    watts = struct.unpack("<50f", blocks[0])
    assert all(abs(10 * math.log10(w * 1000) + 3.0) < ACCURACY_DB + 0.1 for w in watts)


@pytest.mark.parametrize("data", [b"X12\n", b"#0abc\n", b"#2a5hello\n", b"#15hello!\n",
                                  b"#15hello,#15hello\n"])
def test_malformed_blocks_are_protocol_errors(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse_blocks(data, 2 if b"," in data else 1, b"\n")


def test_partial_blocks_ask_for_more() -> None:
    assert parse_blocks(b"#15he", 1, b"\n") is None
    assert parse_blocks(b"#16hel\nl", 1, b"\n") is None  # the payload holds a LF
    assert parse_blocks(b"#16hel\nlo\n", 1, b"\n") == [b"hel\nlo"]
