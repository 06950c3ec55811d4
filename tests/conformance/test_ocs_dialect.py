"""The OCS driver against the conventions of real Polatis-family units and their variants:
a Polatis identity, power queries split into chunks of 256 ports, units without power
monitors, and units with one error queue shared by every client.

Each test serves its own emulated OCS on a loopback TCP socket and talks to it through
the real driver (pyvisa, pyvisa-py); variants are constructor arguments of the emulator.
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drivers.errors import DeviceRejected
from drivers.ocs import OcsDriver
from drivers.ocs.connect import open_ocs
from drivers.yamlfile import YamlFileError
from emulators.clock import Clock, SteppedClock
from emulators.lab import Lab, load_topology
from emulators.loopthread import LoopThread
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel, Source
from emulators.scpi.server import ScpiTcpServer
from msoctl import access
from msoctl.inventory import Inventory, InventoryError, load_inventory

TIMEOUT_SECONDS = 2.0


@dataclass
class Unit:
    device: OcsDevice
    port: int

    def driver(self, *, shared_error_queue: bool = False) -> OcsDriver:
        return open_ocs("ocs-d", "visa", f"TCPIP::127.0.0.1::{self.port}::SOCKET",
                        timeout_seconds=TIMEOUT_SECONDS, shared_error_queue=shared_error_queue)


@contextmanager
def served(clock: Clock | None = None, **options: Any) -> Iterator[Unit]:
    """An emulated OCS (``options`` as :class:`OcsDevice` takes them) on a TCP port."""
    device = OcsDevice("ocs-d", OpticalModel(clock or SteppedClock()), **options)
    server = ScpiTcpServer(device, functools.partial(make_interpreter, device))
    runner = LoopThread("ocs-dialect")
    runner.start()
    try:
        runner.call(server.start())
        yield Unit(device, server.port)
    finally:
        runner.stop(server.stop)


@pytest.mark.parametrize("reply_form", ["polatis", "bare"])
def test_a_polatis_identity(reply_form: str) -> None:
    """IEEE 488.2 §10.14 (*IDN?: four fields); a Polatis unit names its size in the model
    field, ``-48x48-``, and answers :OXC:SWIT:SIZE? ``48,48``."""
    with served(size=48, manufacturer="Polatis", model_name="N-VST-48x48-HU1-DMHNV",
                serial="001234", firmware="6.5.2.18", reply_form=reply_form) as unit:
        driver = unit.driver()
        try:
            identity = driver.identity()
            assert (identity.manufacturer, identity.model, identity.serial,
                    identity.firmware) == ("Polatis", "N-VST-48x48-HU1-DMHNV", "001234",
                                           "6.5.2.18")
            assert driver.size == 48
            assert dict(driver.connect({2: 66})) == {2: 66}
            assert driver.connected_port(2) == 66
            assert driver.connected_port(66) == 2
            assert driver.connected_port(3) is None
            assert len(driver.power()) == 96
        finally:
            driver.close()


@pytest.mark.parametrize("reply_form", ["polatis", "bare"])
def test_power_is_asked_in_chunks_of_at_most_256_ports(reply_form: str) -> None:
    """A Polatis unit answers at most 256 ports per :PMON:POW? (more is -223 Too much
    data, SCPI-99 vol. 2 §21.8): 400 ports are asked in two queries, and every reading
    lands on its own port."""
    with served(size=200, reply_form=reply_form) as unit:
        device, driver = unit.device, unit.driver()
        # every ingress port lit, neighbours 5 dB apart, each sent to an egress port:
        # a reading landing on the wrong port is off by 5 dB or more
        levels = {str(port): -5.0 * (port % 7) for port in range(1, 201)}
        device.optics.add(Source("lasers", levels))
        for port in levels:
            device.optics.patch(f"lasers:{port}", f"ocs-d:{port}")
        try:
            driver.replace_map({port: 200 + port for port in range(1, 201)})
            readings = driver.power()
            assert sorted(readings) == list(range(1, 401))
            for port, reading in readings.items():
                expected = device.monitor_dbm(port)
                assert reading is not None and expected is not None
                assert reading == pytest.approx(expected, abs=0.2), port  # 0.02 dB noise
            assert device.errors_reported == 0
        finally:
            driver.close()


def test_a_unit_without_monitors_gives_null_powers_and_is_asked_once() -> None:
    """SCPI-99 vol. 2 §21.8 (-113 Undefined header): a unit without power monitors does
    not know :PMON:POW?. Every reading is then not available, no ProtocolError, and the
    driver does not ask again."""
    with served(power_monitors=False) as unit:
        device, driver = unit.device, unit.driver()
        try:
            assert driver.power([1, 2]) == {1: None, 2: None}
            assert device.errors_reported == 1
            assert driver.power() == dict.fromkeys(range(1, 129))
            assert device.errors_reported == 1  # known now: not asked again
            assert driver.port_states([1]) is not None
        finally:
            driver.close()


def test_a_power_query_the_unit_refuses_gives_null_powers(caplog: pytest.LogCaptureFixture) -> None:
    """Any error a power query answers (here -223 from a unit that takes fewer ports per
    query than the driver asks) gives readings that are not available and a warning, not
    a ProtocolError; the next call asks again."""
    with served(size=64) as unit:
        device = unit.device
        device.power_query_max_ports = 100
        driver = unit.driver()
        try:
            with caplog.at_level(logging.WARNING, logger="drivers.ocs.driver"):
                assert set(driver.power().values()) == {None}
            assert "-223" in caplog.text
            device.power_query_max_ports = 256
            assert None not in driver.power().values()
        finally:
            driver.close()


# ---- a unit with one error queue for every client --------------------------------------


class OtherClient:
    """Another program talking to the same unit, through its own connection."""

    def __init__(self, unit: Unit):
        self.sock = socket.create_connection(("127.0.0.1", unit.port), timeout=2.0)
        self.reader = self.sock.makefile("rb")

    def err(self) -> None:
        """Cause an error, and wait until the unit has taken it (a query behind it answers)."""
        self.sock.sendall(b":NO:SUCH:THING\n:SYST:VERS?\n")
        assert self.reader.readline() == b"1999.0\n"

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def _during_the_fence(device: OcsDevice, clock: SteppedClock, action: Callable[[], None],
                      change: Callable[[], object]) -> object:
    """Run ``change`` while ``action`` happens after the change has reached the unit and
    before its fence (``*OPC?``) returns; the clock moves only when this says so."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(change())
        except Exception as error:  # handed to the test below
            outcome.append(error)

    before = dict(device.connection_map())
    worker = threading.Thread(target=run)
    worker.start()
    for _ in range(2000):  # the change has executed when the map shows it
        if device.connection_map() != before:
            break
        threading.Event().wait(0.001)
    action()
    clock.advance(1.0)  # the reconfiguration completes; the fence answers
    worker.join(timeout=5.0)
    assert outcome, "the change did not return"
    return outcome[0]


def test_a_shared_queue_errors_queued_before_a_change_are_not_ours() -> None:
    """SCPI-99 vol. 2 §21.8 and IEEE 488.2 §10.3: a change starts with *CLS in its own
    program message, so what another client left in a shared queue is not read as the
    change's error."""
    with served(shared_status=True) as unit:
        other = OtherClient(unit)
        driver = unit.driver()
        try:
            other.err()
            assert dict(driver.connect({1: 65})) == {1: 65}
        finally:
            driver.close()
            other.close()


@pytest.mark.parametrize("told", [True, False])
def test_a_shared_queue_error_inside_the_window(told: bool,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """On a unit with one queue, another client's error can arrive while our change runs
    (between its *CLS and its error query). A driver told so reads back, finds the device
    holding what was asked, and does not take the error for its own (it warns); a driver
    not told so reports the error: the risk the documentation names."""
    clock = SteppedClock(jump_on_sleep=False)
    with served(clock, shared_status=True) as unit:
        device = unit.device
        other = OtherClient(unit)
        driver = unit.driver(shared_error_queue=told)
        try:
            with caplog.at_level(logging.WARNING, logger="drivers.ocs.driver"):
                outcome = _during_the_fence(device, clock, other.err,
                                            lambda: driver.connect({1: 65}))
            if told:
                assert outcome == {1: 65}
                assert "another client's error" in caplog.text and "-113" in caplog.text
            else:
                assert isinstance(outcome, DeviceRejected) and "-113" in str(outcome)
            assert device.connection_map() == {1: 65}
        finally:
            driver.close()
            other.close()


def test_a_shared_queue_our_own_refusal_is_still_ours() -> None:
    """A refusal of ours leaves the device short of what was asked: the read-back shows
    it, and the driver raises the device's error (202 Port in use)."""
    with served(shared_status=True) as unit:
        device, driver = unit.device, unit.driver(shared_error_queue=True)
        try:
            driver.connect({1: 65})
            with pytest.raises(DeviceRejected, match="202"):
                driver.connect({2: 65})
            assert device.connection_map() == {1: 65}
        finally:
            driver.close()


def test_a_map_change_and_its_read_back_are_one_write_and_a_refusal_stays_in_step() -> None:
    """The change, its fence, its error query and the map query leave in one write (one
    round trip); a refused change's read-back is read all the same, so the next
    exchange gets its own reply."""
    with served() as unit:
        driver = unit.driver()
        assert driver.size == 64  # asked once, before the change
        writes: list[bytes] = []
        transport = driver.session.transport
        original = transport.write

        def counting(data: bytes) -> None:
            writes.append(data)
            original(data)

        transport.write = counting  # type: ignore[method-assign]
        try:
            assert dict(driver.replace_map({1: 65, 2: 66})) == {1: 65, 2: 66}
            assert len(writes) == 1 and writes[0].count(b"\n") == 4, writes
            assert writes[0].endswith(b":OXC:SWIT:CONN:STAT?\n")
            with pytest.raises(DeviceRejected, match="202"):
                driver.connect({3: 65})  # 65 is in use
            assert dict(driver.port_map()) == {1: 65, 2: 66}
            assert driver.connected_port(2) == 66
        finally:
            driver.close()


def _inventory_of(unit: Unit, directory: Path, shared: bool | None) -> Inventory:
    """An inventory naming the served unit, with ``shared_error_queue`` as given (absent
    when None)."""
    key = "" if shared is None else f", shared_error_queue: {str(shared).lower()}"
    path = directory / "inventory.yaml"
    path.write_text("devices:\n  - {name: ocs-d, kind: ocs, transport: visa, address: "
                    f"'TCPIP::127.0.0.1::{unit.port}::SOCKET', timeout_seconds: "
                    f"{TIMEOUT_SECONDS}{key}}}\n", encoding="utf-8")
    return load_inventory(path)


@pytest.mark.parametrize("shared", [True, False, None])
def test_the_inventory_says_a_unit_shares_its_error_queue(
        shared: bool | None, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """SCPI-99 vol. 2 §21.8 (:SYSTem:ERRor, one queue on this unit): the inventory's
    ``shared_error_queue`` reaches the driver msoctl opens from the entry
    (:mod:`msoctl.access`). Told, another client's error inside our change's window is
    taken for that client's; not told (false, or the key absent: per-client queues),
    it is reported as ours."""
    clock = SteppedClock(jump_on_sleep=False)
    with served(clock, shared_status=True) as unit:
        device = unit.device
        other = OtherClient(unit)
        driver = access.open_ocs(_inventory_of(unit, tmp_path, shared).device("ocs-d", "ocs"))
        try:
            with caplog.at_level(logging.WARNING, logger="drivers.ocs.driver"):
                outcome = _during_the_fence(device, clock, other.err,
                                            lambda: driver.connect({1: 65}))
            if shared:
                assert outcome == {1: 65}
                assert "another client's error" in caplog.text
            else:
                assert isinstance(outcome, DeviceRejected) and "-113" in str(outcome)
            assert device.connection_map() == {1: 65}
        finally:
            driver.close()
            other.close()


def test_shared_error_queue_must_be_true_or_false(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("devices:\n  - {name: ocs-d, kind: ocs, transport: visa, address: x, "
                    "shared_error_queue: sometimes}\n", encoding="utf-8")
    with pytest.raises(InventoryError, match="shared_error_queue"):
        load_inventory(path)


# ---- choosing the variant in a lab topology ----------------------------------------------

_TOPOLOGY = """
name: variants
ocs:
  - {name: ocs-p, size: 8}
  - {name: ocs-v, size: 8, reply_form: bare, power_monitors: false, error_queue: shared}
"""


def test_a_topology_chooses_how_each_ocs_answers(tmp_path: Path) -> None:
    """The lab's topology keys: ``reply_form`` (polatis, the default, or bare),
    ``power_monitors`` and ``error_queue`` (per-client, the default, or shared)."""
    path = tmp_path / "topology.yaml"
    path.write_text(_TOPOLOGY, encoding="utf-8")
    lab = Lab(tmp_path / "lab", load_topology(path), clock=SteppedClock(),
              serial_consoles=False)
    plain, variant = lab.ocs["ocs-p"], lab.ocs["ocs-v"]
    assert (plain.reply_form, plain.power_monitors, plain.shared_status) == (
        "polatis", True, False)
    assert (variant.reply_form, variant.power_monitors, variant.shared_status) == (
        "bare", False, True)
    assert variant.new_client_status() is variant.new_client_status()
    assert plain.new_client_status() is not plain.new_client_status()


def test_the_lab_inventory_tells_which_ocs_shares_its_error_queue(tmp_path: Path) -> None:
    """The inventory a lab writes carries ``shared_error_queue: true`` for an OCS whose
    topology says ``error_queue: shared``, so msoctl opens it as such."""
    path = tmp_path / "topology.yaml"
    path.write_text(_TOPOLOGY, encoding="utf-8")
    with Lab(tmp_path / "lab", load_topology(path), clock=SteppedClock(),
             serial_consoles=False) as lab:
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        assert inventory.device("ocs-v", "ocs").shared_error_queue
        assert not inventory.device("ocs-p", "ocs").shared_error_queue
        driver = access.open_ocs(inventory.device("ocs-v", "ocs"))
        try:
            assert driver.shared_error_queue
        finally:
            driver.close()


@pytest.mark.parametrize(("entry", "field"), [
    ("reply_form: quoted", "reply_form"),
    ("error_queue: global", "error_queue"),
    ("power_monitors: 2", "power_monitors"),
])
def test_a_wrong_variant_names_its_field(tmp_path: Path, entry: str, field: str) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text(f"ocs:\n  - {{name: ocs-x, size: 8, {entry}}}\n", encoding="utf-8")
    with pytest.raises(YamlFileError, match=f"field '{field}'"):
        load_topology(path)
