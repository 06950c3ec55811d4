"""The amplifier's USB-serial I2C bridge (emulators/amp/bridge.py) and the lab around it.

The line protocol is exercised over both ways a host reaches the bridge, the
pty and TCP loopback, with pyserial as the client. The lab tests run the
default fabric: amp-1 sits at the campus B end of span-1's A->B fiber.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import serial
import yaml

from drivers.amp import vendor_page as vendor
from drivers.yamlfile import YamlFileError
from emulators.amp import AmplifierModule, I2cSlave
from emulators.amp.bridge import BUS_TIMEOUT_SECONDS, I2cBridge
from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.lab import Lab, load_topology
from emulators.optics.model import NO_LIGHT_DBM, OpticalModel, Source


@dataclass
class Served:
    clock: SteppedClock
    amp: AmplifierModule
    slave: I2cSlave
    bridge: I2cBridge
    run: Callable[[Coroutine[Any, Any, None]], None]


@pytest.fixture
def served() -> Iterator[Served]:
    """A bridge with one amplifier behind it, on a stepped clock, served from a loop thread."""
    clock = SteppedClock()
    optics = OpticalModel(clock)
    optics.add(Source("src", {"out": -10.0}))
    amp = AmplifierModule("amp-b", optics)
    optics.patch("src:out", "amp-b:in")
    slave = I2cSlave(amp)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, loop).result(10)

    bridge = I2cBridge("amp-b", [slave], clock=clock, faults=amp.faults)
    run(bridge.start())
    try:
        yield Served(clock, amp, slave, bridge, run)
    finally:
        run(bridge.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture(params=["tcp", "pty"])
def port(served: Served, request: pytest.FixtureRequest) -> Iterator[serial.SerialBase]:
    if request.param == "tcp":
        url = f"socket://127.0.0.1:{served.bridge.port}"
    else:
        assert served.bridge.path is not None
        url = served.bridge.path
    connection = serial.serial_for_url(url, baudrate=115200, timeout=5.0)
    try:
        yield connection
    finally:
        connection.close()


def ask(connection: serial.SerialBase, line: str, *, end: bytes = b"\n") -> str:
    connection.write(line.encode("ascii") + end)
    reply: bytes = connection.readline()
    assert reply.endswith(b"\n"), f"{line!r}: no complete reply, got {reply!r}"
    return reply[:-1].decode("ascii")


# ---- the protocol ------------------------------------------------------------------------


def test_version(port: serial.SerialBase) -> None:
    assert ask(port, "V") == "OK MSO-I2C-BRIDGE 1 400"


def test_read_returns_the_module_bytes(port: serial.SerialBase, served: Served) -> None:
    assert ask(port, "R 50 00 03") == "OK 185200"
    reply = ask(port, "R 50 80 80")  # page 00h, all of it
    assert reply.startswith("OK ") and len(reply) == 3 + 256
    assert bytes.fromhex(reply[3:]) == served.slave.read(128, 128)


def test_write_then_read_back(port: serial.SerialBase) -> None:
    assert ask(port, "W 50 7E 00B0") == "OK"
    assert ask(port, "R 50 7E 02") == "OK 00B0"
    gain = vendor.TARGET_GAIN.encode(12.34).hex().upper()
    assert ask(port, f"W 50 {vendor.TARGET_GAIN.offset:02X} {gain}") == "OK"
    assert ask(port, f"R 50 {vendor.TARGET_GAIN.offset:02X} 02") == f"OK {gain}"
    assert ask(port, "W 50 7F 00") == "OK"
    assert ask(port, "R 50 81 0C") == "OK " + b"MegaScaleOut".hex().upper()


def test_lower_case_and_cr_lf_are_accepted(port: serial.SerialBase) -> None:
    assert ask(port, "r 50 0 1", end=b"\r\n") == "OK 18"
    assert ask(port, "w 50 7f b0", end=b"\r\n") == "OK"
    assert ask(port, "v") == "OK MSO-I2C-BRIDGE 1 400"


def test_every_line_is_answered_once_in_order(port: serial.SerialBase) -> None:
    port.write(b"V\nR 50 00 01\r\nX\n\nR 51 00 01\nW 50 7F 01\nR 50 7F 01\n")
    replies = [port.readline() for _ in range(7)]
    assert replies == [b"OK MSO-I2C-BRIDGE 1 400\n", b"OK 18\n",
                       b"ERR SYNTAX unknown command 'X'\n", b"ERR SYNTAX empty line\n",
                       b"NACK\n", b"OK\n", b"OK 01\n"]


@pytest.mark.parametrize(("line", "reply"), [
    ("R 51 00 01", "NACK"),  # no device at 51h
    ("R 00 00 01", "NACK"),
    ("X", "ERR SYNTAX"),
    ("", "ERR SYNTAX"),
    ("   ", "ERR SYNTAX"),
    ("V\rV", "ERR SYNTAX"),
    ("V 1", "ERR SYNTAX"),
    ("R 50 00", "ERR SYNTAX"),
    ("R 50 00 01 02", "ERR SYNTAX"),
    ("W 50 00", "ERR SYNTAX"),
    ("R 50 0G 01", "ERR SYNTAX"),
    ("R 5O 00 01", "ERR SYNTAX"),
    ("W 50 00 ABC", "ERR SYNTAX"),
    ("W 50 00 XY", "ERR SYNTAX"),
    ("R 50 00 01 \x01", "ERR SYNTAX"),
    ("R " + "5" * 2000, "ERR SYNTAX"),
    ("R 50 00 00", "ERR RANGE"),
    ("R 50 00 81", "ERR RANGE"),
    ("R 50 F0 20", "ERR RANGE"),
    ("R 50 FF 02", "ERR RANGE"),
    ("R A0 00 01", "ERR RANGE"),
    ("R 80 00 01", "ERR RANGE"),
    ("R 050 00 01", "ERR RANGE"),
    ("R 50 100 01", "ERR RANGE"),
    ("W 50 FF 0000", "ERR RANGE"),
    ("W 50 00 " + "00" * 129, "ERR RANGE"),
])
def test_every_error_reply(port: serial.SerialBase, line: str, reply: str) -> None:
    answer = ask(port, line)
    assert answer == reply or answer.startswith(reply + " "), answer
    assert ask(port, "V") == "OK MSO-I2C-BRIDGE 1 400"  # still in step


def test_a_128_byte_write_is_one_transaction(port: serial.SerialBase, served: Served) -> None:
    before = served.slave.stats.transactions
    assert ask(port, "W 50 7F 10") == "OK"
    assert ask(port, "W 50 80 " + "00" * 128) == "OK"
    assert served.slave.stats.transactions == before + 2


def test_module_nack_and_bus_hang(port: serial.SerialBase, served: Served) -> None:
    served.amp.faults.inject(Fault("nack", count=1))
    assert ask(port, "R 50 00 01") == "NACK"
    assert ask(port, "R 50 00 01") == "OK 18"
    served.amp.faults.inject(Fault("bus_hang", count=1))
    assert ask(port, "W 50 7F 00") == "ERR BUS"
    assert ask(port, "W 50 7F 00") == "OK"


def test_each_reply_is_held_for_its_bus_time(port: serial.SerialBase, served: Served) -> None:
    clock, slave = served.clock, served.slave
    for line, seconds in [("R 50 00 80", slave.transaction_seconds("read", 128)),
                          ("W 50 7F 00", slave.transaction_seconds("write", 1)),
                          ("R 51 00 01", 11 / 400_000)]:
        start = clock.now()
        ask(port, line)
        assert clock.now() - start == pytest.approx(seconds, abs=1e-12)
    assert slave.transaction_seconds("read", 128) == pytest.approx(2.955e-3)
    served.amp.faults.inject(Fault("bus_hang", count=1))
    start = clock.now()
    assert ask(port, "R 50 00 01") == "ERR BUS"
    assert clock.now() - start == pytest.approx(BUS_TIMEOUT_SECONDS)


def test_a_module_reset_leaves_the_connection_up(port: serial.SerialBase, served: Served) -> None:
    assert ask(port, "W 50 7F B0") == "OK"
    served.amp.faults.inject(Fault("reset"))
    assert ask(port, "R 50 7F 01") == "NACK"  # resetting
    served.clock.advance(0.06)
    assert ask(port, "R 50 7F 01") == "OK 00"  # back on page 00h, same connection


def test_transport_faults(port: serial.SerialBase, served: Served) -> None:
    faults = served.amp.faults
    faults.inject(Fault("drop", count=1))
    port.write(b"R 50 00 01\n")  # read and discarded
    assert ask(port, "V") == "OK MSO-I2C-BRIDGE 1 400"
    faults.inject(Fault("garbage", count=1))
    port.write(b"V\n")
    spoiled = port.readline()
    assert spoiled.endswith(b"\n") and not spoiled.startswith(b"OK")
    faults.inject(Fault("latency", seconds=0.05, count=1))
    assert ask(port, "V") == "OK MSO-I2C-BRIDGE 1 400"
    faults.inject(Fault("freeze"))
    port.write(b"V\n")
    port.timeout = 0.3
    assert port.readline() == b""  # nothing while frozen
    faults.clear("freeze")
    port.timeout = 5.0
    assert ask(port, "V") == "OK MSO-I2C-BRIDGE 1 400"


def test_a_bridge_without_pty() -> None:
    clock = SteppedClock()
    amp = AmplifierModule("amp-n", OpticalModel(clock))
    bridge = I2cBridge("amp-n", [I2cSlave(amp)], clock=clock, faults=amp.faults,
                       serial_console=False)
    assert bridge.path is None and bridge.pty is None


# ---- the lab -------------------------------------------------------------------------------


def _wait(condition: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.02)


def _amp_entry(lab: Lab, name: str) -> dict[str, Any]:
    document = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    entries = [d for d in document["devices"] if d["name"] == name]
    assert len(entries) == 1
    entry: dict[str, Any] = entries[0]
    return entry


def test_the_lab_serves_each_amplifier_through_its_bridge(lab: Lab) -> None:
    assert set(lab.amps) == set(lab.i2c) == set(lab.bridges) == {"amp-1", "amp-2"}
    for name, span in (("amp-1", "span-1"), ("amp-2", "span-2")):
        entry = _amp_entry(lab, name)
        assert entry == {
            "name": name, "kind": "amp", "transport": "i2c-bridge",
            "address": f"socket://127.0.0.1:{lab.bridges[name].port}", "i2c_address": 80,
            "timeout_seconds": 2.0,
            "labels": {"campus": "b", "lab": "two-campus-30km", "span": span},
        }
        for url in (entry["address"], lab.bridges[name].path):
            with serial.serial_for_url(url, timeout=5.0) as connection:
                assert ask(connection, "V") == "OK MSO-I2C-BRIDGE 1 400"
                assert ask(connection, "R 50 00 01") == "OK 18"


def test_amp_1_amplifies_span_1_and_a_cut_darkens_it(lab: Lab) -> None:
    ocs_a, ocs_b = lab.ocs["ocs-a"], lab.ocs["ocs-b"]
    ocs_a.add((1,), (121,))  # sw-a tx1 into span-1
    _wait(lambda: lab.clock.now() > ocs_a.pending_until(), "ocs-a switched")
    span_out = lab.optics.power_dbm("span-1/1:out")
    assert -12.0 < span_out < -5.0  # 1 dBm, less an OCS, patches and 30 km
    with serial.serial_for_url(_amp_entry(lab, "amp-1")["address"], timeout=5.0) as bridge:
        # ALS may have shut the output while the span was dark: restart it by hand.
        assert ask(bridge, "W 50 7F B0") == "OK"
        assert ask(bridge, f"W 50 {vendor.ALS_COMMAND.offset:02X} 01") == "OK"

        def amplified() -> bool:  # by the 20 dB default gain, once the gain loop settles
            return lab.optics.power_dbm("ocs-b:61") > span_out + 19.9

        _wait(amplified, "ocs-b port 61 sees amplified light")
        reading = ocs_b.monitor_dbm(61)
        assert reading is not None and reading == pytest.approx(span_out + 20.0, abs=0.6)
        reply = ask(bridge, f"R 50 {vendor.OUTPUT_POWER.offset:02X} 02")
        output = vendor.OUTPUT_POWER.decode(bytes.fromhex(reply[3:]), vendor.OUTPUT_POWER.offset)
        assert output == pytest.approx(lab.optics.power_dbm("ocs-b:61"), abs=0.2)

        lab.inject("span-1", Fault("fiber_cut"))
        assert lab.optics.power_dbm("ocs-b:61") < -10.0  # at most the amplifier's ASE
        _wait(lambda: lab.optics.power_dbm("ocs-b:61") == NO_LIGHT_DBM, "ALS shuts amp-1")
        assert ask(bridge, f"R 50 {vendor.ALS_STATE.offset:02X} 01") == "OK 02"
        reading = ocs_b.monitor_dbm(61)
        assert reading is not None and reading < -50.0


def test_lab_faults_reach_the_amplifier(lab: Lab) -> None:
    lab.inject("amp-1", Fault("pump"))
    assert lab.amps["amp-1"].module_state == 5
    assert lab.amps["amp-2"].module_state == 3
    lab.clear("amp-1", "pump")
    lab.inject("amp-2", Fault("nack", count=1))
    with serial.serial_for_url(f"socket://127.0.0.1:{lab.bridges['amp-2'].port}",
                               timeout=5.0) as connection:
        assert ask(connection, "R 50 00 01") == "NACK"
        assert ask(connection, "R 50 00 01") == "OK 18"


def test_a_lab_without_serial_consoles_has_no_bridge_pty(tmp_path: Path) -> None:
    with Lab(tmp_path / "lab", clock=SteppedClock(), serial_consoles=False) as lab:
        assert all(bridge.path is None for bridge in lab.bridges.values())
        assert _amp_entry(lab, "amp-1")["address"].startswith("socket://127.0.0.1:")


# ---- topology ------------------------------------------------------------------------------

MINI_AMP = """\
name: mini-amp
ocs:
  - {name: ocs-x, size: 4, campus: x}
  - {name: ocs-y, size: 4, campus: y}
transceivers:
  - {name: hosts-x, count: 1, power_dbm: 0.0}
patches:
  - {from: hosts-x:tx1, to: ocs-x:1}
amplifiers:
  - {name: amp-9, campus: y, gain_min_db: 10, gain_max_db: 30, output_power_max_dbm: 17,
     serial: AMP0009}
cables:
  - name: link
    length_km: 10
    fibers:
      - {from: ocs-x:8, to: ocs-y:4, amplifier: amp-9}
"""


def test_the_default_topology_puts_an_amplifier_on_each_span() -> None:
    topology = load_topology()
    assert [a.name for a in topology.amplifiers] == ["amp-1", "amp-2"]
    placed = {f.amplifier: (f.cable, f.from_port, f.to_port)
              for f in topology.fibers() if f.amplifier}
    assert placed == {"amp-1": ("span-1", "ocs-a:121", "ocs-b:61"),
                      "amp-2": ("span-2", "ocs-a:122", "ocs-b:62")}


def test_an_amplifier_sits_between_its_fiber_and_the_far_port(tmp_path: Path) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text(MINI_AMP)
    clock = SteppedClock()
    with Lab(tmp_path / "lab", load_topology(path), clock=clock, serial_consoles=False) as lab:
        amp = lab.amps["amp-9"]
        assert amp.serial == "AMP0009"
        assert amp.design.output_power_max_dbm == 17.0
        assert lab.optics.upstream_of("amp-9:in") == "link/1:out"
        assert lab.optics.upstream_of("ocs-y:4") == "amp-9:out"
        lab.ocs["ocs-x"].add((1,), (8,))
        clock.advance(1.0)
        amp.update()
        span_out = lab.optics.power_dbm("link/1:out")
        assert lab.optics.power_dbm("ocs-y:4") == pytest.approx(span_out + 20.0, abs=0.05)


@pytest.mark.parametrize(("change", "field", "message"), [
    ("amplifier: amp-9}", "amplifier", "no amplifier 'amp-8'"),
    ("gain_min_db: 10,", "gain_max_db", "more than gain_min_db"),
    ("output_power_max_dbm: 17,", "output_power_max_dbm", "-10..30"),
    ("serial: AMP0009}", "colour", "unknown field"),
])
def test_amplifier_topology_errors_name_file_line_and_field(
        tmp_path: Path, change: str, field: str, message: str) -> None:
    replacement = {
        "amplifier: amp-9}": "amplifier: amp-8}",
        "gain_min_db: 10,": "gain_min_db: 35,",
        "output_power_max_dbm: 17,": "output_power_max_dbm: 40,",
        "serial: AMP0009}": "serial: AMP0009, colour: red}",
    }[change]
    text = MINI_AMP.replace(change, replacement)
    path = tmp_path / "topology.yaml"
    path.write_text(text)
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if replacement in row)
    with pytest.raises(YamlFileError) as caught:
        load_topology(path)
    error = str(caught.value)
    assert error.startswith(f"{path}:{line}:") or error.startswith(f"{path}:{line - 1}:")
    assert f"field '{field}'" in error and message in error


def test_an_amplifier_can_sit_on_one_fiber_only(tmp_path: Path) -> None:
    text = MINI_AMP + "      - {from: ocs-y:8, to: ocs-x:4, amplifier: amp-9}\n"
    path = tmp_path / "topology.yaml"
    path.write_text(text)
    line = len(text.splitlines())
    with pytest.raises(YamlFileError,
                       match=rf":{line}: .*field 'amplifier': amp-9 is already on"):
        load_topology(path)
