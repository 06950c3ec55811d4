"""What a laser or a meter has: each optional feature found once, at open, with no wait.

The drivers against emulated units that lack one optional feature each, or all of
them: the probe write that opens a driver is the only thing it sends, it changes
nothing, each absence is reported alone, and what the driver does without a feature
(the ports read one by one) is counted message by message on the emulated instrument
(``requests``). An absent feature's header is answered as a real unit answers it, by
an error and no reply.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from drivers.instruments import LaserDriver, MeterDriver, open_laser, open_meter
from drivers.scpi.session import ALL_ERRORS_QUERY, NEXT_ERROR_QUERY
from emulators.clock import SteppedClock
from emulators.instruments.acceptancelab import AcceptanceLab
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import PowerMeter
from emulators.instruments.scpi import make_laser_interpreter, make_meter_interpreter
from emulators.instruments.testset import FULL, PLAIN, InstrumentKinds
from emulators.optics.model import OpticalModel
from emulators.scpi.parser import ScpiInterpreter

SIZE = 8
TIMEOUT_SECONDS = 2.0
ONE_ABSENT = {
    "laser range": (InstrumentKinds(laser_range=False), "laser", "range"),
    "meter all ports": (InstrumentKinds(meter_all_ports=False), "meter", "all_ports"),
    "meter logging": (InstrumentKinds(meter_logging=False), "meter", "logging"),
}


def _lab(directory: Path, kinds: InstrumentKinds) -> AcceptanceLab:
    return AcceptanceLab(directory, size=SIZE, clock=SteppedClock(), instruments=kinds)


def _address(lab: AcceptanceLab, name: str) -> str:
    inventory = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    return str(next(d["address"] for d in inventory["devices"] if d["name"] == name))


def _opened(lab: AcceptanceLab) -> tuple[LaserDriver, MeterDriver]:
    laser = open_laser("laser-1", "visa", _address(lab, "laser-1"),
                       timeout_seconds=TIMEOUT_SECONDS)
    meter = open_meter("pm-1", "visa", _address(lab, "pm-1"), channels=SIZE,
                       timeout_seconds=TIMEOUT_SECONDS)
    return laser, meter


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[tuple[AcceptanceLab, LaserDriver, MeterDriver]]:
    with _lab(tmp_path / "test-set", PLAIN) as lab:
        laser, meter = _opened(lab)
        try:
            yield lab, laser, meter
        finally:
            laser.close()
            meter.close()
        for device in (lab.laser, lab.meter):
            assert device.requests.resync_probes() == [], device.name


def _changes(device: TunableLaser | PowerMeter) -> list[str]:
    return sorted(key for key, count in device.requests.commands.items()
                  if count and (key.endswith("_set") or key == "reset"))


# ---- what opening sends --------------------------------------------------------------------


@pytest.mark.parametrize("kinds", [FULL, PLAIN], ids=["full", "plain"])
def test_opening_asks_once_in_one_write_and_changes_nothing(
        tmp_path: Path, kinds: InstrumentKinds) -> None:
    with _lab(tmp_path / "test-set", kinds) as lab:
        laser, meter = _opened(lab)
        try:
            full = kinds == FULL
            assert laser.features().supported == (["range"] if full else [])
            assert meter.features().supported == (["all_ports", "logging"] if full else [])
            assert laser.session.all_errors is meter.session.all_errors is full
            # *CLS, :SYST:ERR:ALL?, :SYST:ERR?, then each probe with :SYST:ERR? behind it:
            # the laser's four range queries and its power unit, the meter's two.
            assert lab.laser.requests.received == 3 + 2 * 5
            assert lab.meter.requests.received == 3 + 2 * 2
            lines = list(lab.meter.requests.messages)
            assert lines == ["*CLS", ALL_ERRORS_QUERY, NEXT_ERROR_QUERY,
                             ":FETC:POW:ALL:CSV?", NEXT_ERROR_QUERY,
                             ":SENS1:CHAN1:FUNC:STAT?", NEXT_ERROR_QUERY]
            # Asked again: answered from the session, nothing sent.
            laser.features(), meter.features()
            assert (lab.laser.requests.received, lab.meter.requests.received) == (13, 7)
            assert _changes(lab.laser) == _changes(lab.meter) == []
            assert (lab.laser.power_unit, lab.laser.output_on) == (0, False)
            assert all(port.unit == 0 for port in lab.meter.ports)  # not yet in watts
        finally:
            laser.close()
            meter.close()


@pytest.mark.parametrize("case", list(ONE_ABSENT), ids=list(ONE_ABSENT))
def test_each_absence_is_reported_alone(tmp_path: Path, case: str) -> None:
    kinds, instrument, key = ONE_ABSENT[case]
    with _lab(tmp_path / "test-set", kinds) as lab:
        laser, meter = _opened(lab)
        try:
            missing = {"laser": laser.features().missing, "meter": meter.features().missing}
            assert missing == {"laser": [], "meter": [], instrument: [key]}
            for device in (lab.laser, lab.meter):
                assert device.requests.resync_probes() == []
        finally:
            laser.close()
            meter.close()


# ---- the meter without the all-ports query ---------------------------------------------------


_READ = re.compile(r":READ(\d+):CHAN1:POW\?")


def _read_messages(meter: PowerMeter) -> list[list[int]]:
    """The ports each message of reads named, in order."""
    return [[int(n) for n in _READ.findall(line)] for line in meter.requests.messages
            if _READ.match(line)]


def test_ports_are_read_one_by_one_in_one_message(
        plain: tuple[AcceptanceLab, LaserDriver, MeterDriver]) -> None:
    lab, _, meter = plain
    opened = lab.meter.requests.received
    first = meter.read_all_dbm()
    assert list(first) == list(range(1, SIZE + 1))
    assert all(value is not None and value < -70.0 for value in first.values())  # dark
    # The set-up (ports idle and in watts: change, *OPC?, error query; the change's own
    # *CLS clears what the probes' errors, read one at a time, may have left), the
    # averaging times not known yet (one message and its error query), the reads (the
    # same).
    assert lab.meter.requests.received - opened == 3 + 2 + 2
    assert all(port.unit == 1 for port in lab.meter.ports)
    again = lab.meter.requests.received
    latest = meter.read_all_dbm([2, 5])
    assert lab.meter.requests.received - again == 2
    assert _read_messages(lab.meter) == [list(range(1, SIZE + 1)), [2, 5]]
    assert lab.meter.requests.commands["read_all"] == 0
    fetched = lab.meter.requests.received
    assert meter.fetch_all_dbm([2, 5]) == latest  # the last readings, not new ones
    assert lab.meter.requests.received - fetched == 2
    assert lab.meter.requests.messages[-2] == ":FETC2:CHAN1:POW?;:FETC5:CHAN1:POW?"
    assert lab.meter.requests.commands["fetch_all"] == 1  # the probe alone


def test_reads_of_long_averaging_are_split_to_fit_the_timeout(
        plain: tuple[AcceptanceLab, LaserDriver, MeterDriver]) -> None:
    lab, _, meter = plain
    meter.set_averaging_seconds(0.5)  # 8 ports one after another: 4 s, twice the timeout
    start = lab.clock.now()
    meter.read_all_dbm()
    # Half the 2 s timeout per message: two ports each, the averaging times known.
    assert _read_messages(lab.meter) == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert lab.meter.requests.commands["averaging"] == 0
    assert lab.clock.now() - start == pytest.approx(SIZE * 0.5)


def test_a_read_the_meter_refuses_is_answered_at_once(
        plain: tuple[AcceptanceLab, LaserDriver, MeterDriver]) -> None:
    """Ports read one by one: a port the meter has not (an inventory that gives it more
    than it has) is refused in the reply's error query, not found by a timeout."""
    from drivers.errors import DeviceRejected

    lab, _, meter = plain
    meter.read_all_dbm([1])
    meter.channels = SIZE + 1  # the inventory's mistake
    # The queries and the error query; after an error read with :SYST:ERR?, which
    # reads one entry at a time, a *CLS first.
    for request, messages in ((lambda: meter.fetch_all_dbm([1, SIZE + 1]), 2),
                              (lambda: meter.read_all_dbm([SIZE + 1]), 3)):
        sent = lab.meter.requests.received
        with pytest.raises(DeviceRejected, match=f"-222.*port {SIZE + 1} not in"):
            request()
        assert lab.meter.requests.received - sent == messages


# ---- the emulators' answers -------------------------------------------------------------------


def _run(interpreter: ScpiInterpreter, line: str) -> tuple[str | bytes | None, list[int]]:
    """The reply to ``line`` and the codes it queued."""
    reply = asyncio.run(interpreter.execute(line))
    codes = []
    while len(interpreter.errors):
        codes.append(interpreter.errors.pop()[0])
    return reply, codes


def test_an_absent_feature_is_an_error_and_no_reply() -> None:
    optics = OpticalModel(SteppedClock())
    laser = TunableLaser("tl", optics, range_queries=False, error_extras=False)
    meter = PowerMeter("pm", optics, channels=2, all_ports=False, logging=False,
                       error_extras=False)
    to_laser, to_meter = make_laser_interpreter(laser), make_meter_interpreter(meter)
    for interpreter, line, code in [
            (to_laser, ":SOUR1:WAV? MIN", -108), (to_laser, ":SOUR1:POW? MAX", -108),
            (to_laser, ":SYST:ERR:ALL?", -113), (to_meter, ":READ:POW:ALL:CSV?", -113),
            (to_meter, ":FETC:POW:ALL:CSV?", -113), (to_meter, ":SENS1:CHAN1:FUNC:STAT?", -113),
            (to_meter, ":SENS1:CHAN1:FUNC:PAR:LOGG 10,1E-3", -113),
            (to_meter, ":SENS2:CHAN1:FUNC:STAT LOGG,STAR", -113),
            (to_meter, ":SENS1:CHAN1:FUNC:RES?", -113), (to_meter, ":SYST:ERR:COUN?", -113)]:
        assert _run(interpreter, line) == (None, [code]), line
    # What they have answers as before; the unit forgets nothing it was not asked.
    assert _run(to_laser, ":SOUR1:WAV?") == ("+1.55000000000E-06", [])
    assert _run(to_meter, ":FETC2:CHAN1:POW?")[1] == []
    assert meter.port(2).log_start is None
    # Counted at arrival, known to the unit or not; a message a line.
    assert meter.requests.commands["function_set"] == 1
    assert laser.requests.received == 4 and meter.requests.received == 8
    # Switched on while it runs: the same headers answer.
    laser.range_queries, meter.all_ports, meter.logging_supported = True, True, True
    assert _run(to_laser, ":SOUR1:WAV? MIN") == ("+1.26000000000E-06", [])
    assert _run(to_meter, ":SENS1:CHAN1:FUNC:STAT?") == ("NONE,COMPLETE", [])
    reply, codes = _run(to_meter, ":FETC:POW:ALL:CSV?")
    assert codes == [] and isinstance(reply, str) and len(reply.split(",")) == 2
