"""IEEE 488.2 common commands and SCPI-99 status reporting of every SCPI emulator (the OCS,
the tunable laser, the power meter), over real TCP sockets and the OCS's serial console.

One rig serves the module on a stepped clock (time moves when a test moves it, or
when a command that waits jumps it); each test makes new connections, so each starts
with fresh client status, and the OCS is reset to as delivered.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import serial

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import PowerMeter
from emulators.instruments.scpi import make_laser_interpreter, make_meter_interpreter
from emulators.loopthread import LoopThread
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.device import ScpiDevice
from emulators.scpi.server import Interpreters, ScpiPtyServer, ScpiTcpServer

DEVICES = ("ocs", "laser", "meter")
BOOT_SECONDS = 1.0


class Client:
    """One raw SCPI connection: lines out with LF, replies read to LF."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
        self.reader = self.sock.makefile("rb")

    def send(self, message: str) -> None:
        self.sock.sendall(message.encode("latin-1") + b"\n")

    def ask(self, message: str) -> str:
        self.send(message)
        line = self.reader.readline()
        assert line.endswith(b"\n"), f"no reply to {message!r}"
        return line.decode("ascii").rstrip("\n")

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


class Console:
    """The OCS's serial console: the host sends CR LF, the switch answers CR."""

    def __init__(self, path: str):
        self.port = serial.serial_for_url(path, baudrate=38400, timeout=2.0)

    def send(self, message: str) -> None:
        self.port.write(message.encode("ascii") + b"\r\n")

    def ask(self, message: str) -> str:
        self.port.reset_input_buffer()
        self.send(message)
        line = self.port.read_until(b"\r")
        assert line.endswith(b"\r"), f"no reply to {message!r}"
        return line.decode("ascii").strip()


@dataclass
class Rig:
    clock: SteppedClock
    devices: dict[str, ScpiDevice]
    tcp: dict[str, ScpiTcpServer]
    console: ScpiPtyServer
    runner: LoopThread

    def client(self, name: str) -> Client:
        return Client(self.tcp[name].port)

    @property
    def ocs(self) -> OcsDevice:
        device = self.devices["ocs"]
        assert isinstance(device, OcsDevice)
        return device


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    ocs = OcsDevice("ocs-s", optics, size=8, serial="STATUS-1", boot_seconds=BOOT_SECONDS)
    devices: dict[str, ScpiDevice] = {
        "ocs": ocs,
        "shared": OcsDevice("ocs-shared", optics, size=8, shared_status=True),
        "laser": TunableLaser("laser-s", optics),
        "meter": PowerMeter("pm-s", optics, channels=2),
    }
    factories: dict[str, Interpreters] = {
        "ocs": functools.partial(make_interpreter, ocs),
        "shared": functools.partial(make_interpreter, devices["shared"]),
        "laser": functools.partial(make_laser_interpreter, devices["laser"]),
        "meter": functools.partial(make_meter_interpreter, devices["meter"]),
    }
    runner = LoopThread("status-rig")
    runner.start()
    tcp = {name: ScpiTcpServer(devices[name], factory) for name, factory in factories.items()}
    console = ScpiPtyServer(ocs, factories["ocs"])

    async def start() -> None:
        for server in tcp.values():
            await server.start()
        await console.start()

    async def stop() -> None:
        for server in tcp.values():
            await server.stop()
        await console.stop()

    runner.call(start())
    try:
        yield Rig(clock, devices, tcp, console, runner)
    finally:
        runner.stop(stop)


@pytest.fixture(autouse=True)
def fresh_ocs(rig: Rig) -> None:
    rig.ocs.factory_reset()


@pytest.mark.parametrize("name", DEVICES)
def test_every_mandatory_common_command_is_answered(rig: Rig, name: str) -> None:
    """IEEE 488.2-1992 §4.1.2.2 and ch. 10: *CLS, *ESE(?), *ESR?, *IDN?, *OPC(?), *RST,
    *SRE(?), *STB?, *TST?, *WAI; SCPI-99 vol. 1 §4.2.1."""
    client = rig.client(name)
    try:
        manufacturer, model, serial_number, firmware = client.ask("*IDN?").split(",")
        device = rig.devices[name]
        assert (manufacturer, model, serial_number, firmware) == (
            "MegaScaleOut", device.model(), device.serial, device.firmware)
        assert client.ask("*ESR?") == "128"  # §11.5.1.1.2: a new client's status as at power-on
        assert client.ask("*ESR?") == "0"  # §10.12: reading clears it
        client.send("*ESE 20")
        assert client.ask("*ESE?") == "20"
        client.send("*SRE 255")
        assert client.ask("*SRE?") == "191"  # §10.34: bit 6 is ignored
        assert client.ask("*STB?") == "0"
        assert client.ask("*TST?") == "0"  # §10.38: 0 is a pass
        assert client.ask("*OPC?") == "1"
        client.send("*OPC;*WAI")  # nothing pending: OPC at once (§12.5.2)
        assert client.ask("*ESR?") == "1"
        client.send("*RST;*CLS")
        assert client.ask(":SYST:ERR?") == '0,"No error"'  # no error from any of the above
    finally:
        client.close()


@pytest.mark.parametrize("name", DEVICES)
def test_every_required_scpi_command_is_answered(rig: Rig, name: str) -> None:
    """SCPI-99 vol. 1 §4.2.2: :SYSTem:ERRor[:NEXT]?, :SYSTem:VERSion?, the OPERation and
    QUEStionable register sets (vol. 2 §20.1, §20.3) and :STATus:PRESet (§20.2)."""
    client = rig.client(name)
    try:
        assert client.ask(":SYST:VERS?") == "1999.0"
        assert client.ask(":SYSTem:ERRor:NEXT?") == '0,"No error"'
        for node in ("OPER", "QUES"):
            assert client.ask(f":STAT:{node}:PTR?;NTR?;ENAB?") == "32767;0;0"
            client.send(f":STAT:{node}:ENAB 3;PTR 1;NTR 2")
            assert client.ask(f":STAT:{node}:ENAB?;PTR?;NTR?") == "3;1;2"
            assert client.ask(f":STAT:{node}:COND?") == "0"
            assert client.ask(f":STAT:{node}?;:STAT:{node}:EVEN?") == "0;0"
        client.send(":STAT:PRES")
        assert client.ask(":STAT:OPER:ENAB?;PTR?;NTR?;:STAT:QUES:ENAB?;PTR?;NTR?") == \
            "0;32767;0;0;32767;0"
        assert client.ask(":SYST:ERR?") == '0,"No error"'
    finally:
        client.close()


@pytest.mark.parametrize("name", DEVICES)
def test_each_class_of_error_sets_its_event_status_bit(rig: Rig, name: str) -> None:
    """IEEE 488.2 §11.5.1.1: CME (bit 5) for -100s, EXE (bit 4) for -200s, QYE (bit 2) for
    -400s; the error/event queue summary is STB bit 2 (SCPI-99 vol. 1 ch. 9) and ESB
    (bit 5) follows *ESE."""
    client = rig.client(name)
    try:
        client.send("*CLS")
        client.send(":NO:SUCH:THING")
        assert client.ask("*ESR?") == "32"
        client.send("*ESE 999")
        assert client.ask("*ESR?") == "16"
        assert client.ask("*IDN?;*STB?").count(";") == 0  # -440: *STB? is not answered
        assert client.ask("*ESR?") == "4"
        assert client.ask("*STB?") == "4"  # three errors queued
        client.send("*ESE 4;:NO:SUCH:THING")  # CME is not enabled: no ESB
        assert client.ask("*STB?") == "4"
        client.send("*IDN?;*OPC?")
        client.reader.readline()
        assert client.ask("*STB?") == "36"  # QYE is enabled: ESB
        codes = client.ask(":SYST:ERR?;:SYST:ERR?;:SYST:ERR?;:SYST:ERR?;:SYST:ERR?")
        assert [int(code) for code in re.findall(r'(?:^|;)([+-]?\d+),"', codes)] == [
            -113, -222, -440, -113, -440]
    finally:
        client.close()


def test_the_ocs_reports_settling_and_latches_it(rig: Rig) -> None:
    """SCPI-99 vol. 2 §20.1: OPERation bit 1 (SETTling) is the condition while the LC
    engine reconfigures; the event register latches the transition though it has come and
    gone before anyone looks; with ENABle it is STB bit 7; *OPC sets ESR bit 0 once it
    has ended (IEEE 488.2 §10.18)."""
    client = rig.client("ocs")
    try:
        client.send("*CLS;:STAT:OPER:ENAB 2")
        client.send(":OXC:SWIT:CONN:ADD (@1),(@9);*OPC")
        assert client.ask(":STAT:OPER:COND?") == "2"
        assert client.ask("*ESR?") == "0"  # not done yet
        rig.clock.advance(1.0)
        assert client.ask(":STAT:OPER:COND?") == "0"
        assert client.ask("*STB?") == "128"
        assert client.ask("*ESR?") == "1"
        assert client.ask(":STAT:OPER?") == "2"
        assert client.ask(":STAT:OPER?;*STB?") == "0;16"  # read clears; MAV for the reply
    finally:
        client.close()


def test_the_instruments_report_settling_and_measuring(rig: Rig) -> None:
    """SCPI-99 vol. 2 §20.1: the laser's OPERation SETTling (bit 1) while it retunes, the
    meter's MEASuring (bit 4) while a port logs; each latched in the event register."""
    laser, meter = rig.client("laser"), rig.client("meter")
    try:
        laser.send(":SOUR1:WAV 1.31E-06")
        assert laser.ask(":STAT:OPER:COND?") == "2"
        meter.send(":SENS1:CHAN1:FUNC:PAR:LOGG 100,1E-3;:SENS1:CHAN1:FUNC:STAT LOGG,STAR")
        assert meter.ask(":STAT:OPER:COND?") == "16"
        rig.clock.advance(1.0)
        assert laser.ask(":STAT:OPER:COND?;:STAT:OPER?") == "0;2"
        assert meter.ask(":STAT:OPER:COND?;:STAT:OPER?") == "0;16"
        assert laser.ask(":SYST:ERR?") == meter.ask(":SYST:ERR?") == '0,"No error"'
    finally:
        laser.close()
        meter.close()


def test_self_test_and_questionable_report_faults(rig: Rig) -> None:
    """IEEE 488.2 §10.38: *TST? is non-zero while a port has failed (1) or the LC engine
    has a fault (2); SCPI-99 vol. 2 §20.3: QUEStionable bits 9 and 10 (device-defined)."""
    client = rig.client("ocs")
    try:
        rig.ocs.faults.inject(Fault("port", target="3"))
        assert client.ask("*TST?;:STAT:QUES:COND?") == "1;512"
        rig.ocs.faults.inject(Fault("engine"))
        assert client.ask("*TST?;:STAT:QUES:COND?") == "3;1536"
        client.send(":OXC:SWIT:CONN:ADD (@1),(@9)")
        assert client.ask(":SYST:ERR?").startswith('-240,"Hardware error')
        rig.ocs.faults.clear()
        assert client.ask("*TST?;:STAT:QUES:COND?;:STAT:QUES?") == "0;0;1536"
    finally:
        client.close()


def test_each_client_has_its_own_error_queue_and_registers(rig: Rig) -> None:
    """IEEE 488.2 §11.5.1 and SCPI-99 vol. 2 §21.8 per client: two TCP connections and the
    console each keep their own error queue, ESE and event registers; the device (its map)
    is the same for all."""
    first, second = rig.client("ocs"), rig.client("ocs")
    console = Console(rig.console.path)
    try:
        for each in (first, second, console):
            each.send("*CLS")
        first.send("*ESE 4;:NO:SUCH:THING")
        second.send(":OXC:SWIT:CONN:ADD (@2),(@10)")
        console.send("*ESE 32")
        assert second.ask(":SYST:ERR?;*ESE?;*ESR?") == '0,"No error";0;0'
        assert console.ask(":SYST:ERR?;*ESE?;*ESR?") == '0,"No error";32;0'
        assert first.ask("*ESE?;*ESR?") == "4;32"
        assert first.ask(":SYST:ERR?").startswith('-113,"Undefined header')
        for each in (first, second, console):
            assert each.ask(":OXC:SWIT:CONN:STAT?") == "(@2),(@10)"
    finally:
        first.close()
        second.close()


def test_a_unit_with_one_shared_queue_shares_it(rig: Rig) -> None:
    """The variant some real units are: one error queue and one status for every client,
    so one client's error is read by another."""
    first, second = rig.client("shared"), rig.client("shared")
    try:
        first.send("*CLS;:NO:SUCH:THING")
        assert second.ask("*ESR?") == "32"
        assert second.ask(":SYST:ERR?").startswith('-113,"Undefined header')
        assert first.ask(":SYST:ERR?") == '0,"No error"'
    finally:
        first.close()
        second.close()


def test_laser_settings_are_the_devices_not_the_clients(rig: Rig) -> None:
    """Only status is per client: a setting made on one connection is what another reads."""
    first, second = rig.client("laser"), rig.client("laser")
    try:
        first.send(":SOUR1:POW:UNIT W")
        assert second.ask(":SOUR1:POW:UNIT?") == "1"
        second.send("*RST")
        assert first.ask(":SOUR1:POW:UNIT?") == "0"
    finally:
        first.close()
        second.close()


def test_power_on_sets_pon_and_empties_every_queue(rig: Rig) -> None:
    """IEEE 488.2 §11.5.1.1.2: after a power-on PON is set; the console, attached through
    the reboot, finds its queue emptied and PON set, and so does a new TCP client. The
    cell comes back cold: QUEStionable TEMPerature (bit 4, SCPI-99 vol. 2 §20.3) until it
    has warmed to within 2 degC of its set point, and the event stays latched."""
    console = Console(rig.console.path)
    # The console's status has held PON since the rig powered the unit on, until a test
    # before this one read it: cleared first, so this test stands on its own.
    console.send("*CLS")
    console.send(":NO:SUCH:THING")
    assert console.ask("*ESR?") == "32"
    rig.ocs.faults.inject(Fault("reboot", power_loss=True))
    rig.clock.advance(BOOT_SECONDS)
    assert rig.ocs.is_up()
    assert console.ask("*ESR?;:SYST:ERR?") == '128;0,"No error"'
    assert console.ask(":STAT:QUES:COND?") == "16"
    client = None
    for _ in range(200):  # the TCP listener comes back once the server has seen the boot
        try:
            client = rig.client("ocs")
            break
        except OSError:
            rig.runner.call(_yield())
    assert client is not None
    try:
        assert client.ask("*ESR?") == "128"
        rig.clock.advance(300.0)
        assert client.ask(":STAT:QUES:COND?;:STAT:QUES?") == "0;16"
    finally:
        client.close()


async def _yield() -> None:
    await asyncio.sleep(0.01)


def test_a_cr_inside_a_tcp_line_is_white_space(rig: Rig) -> None:
    """IEEE 488.2 §7.4.1.2 and §7.5: over TCP only LF ends a program message; CR and the
    other control bytes are white space."""
    client = rig.client("ocs")
    try:
        client.send(":OXC:SWIT:CONN:ADD\r(@1),\x0b(@9)\x00")
        assert client.ask(":OXC:SWIT:CONN:PORT?\r\t1\r") == '"9"'
    finally:
        client.close()
