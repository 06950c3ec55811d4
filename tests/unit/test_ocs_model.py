"""OCS physics (emulators/ocs/model.py): switching time, map, losses, ports, boot, monitors.

Time is a SteppedClock that only moves when a test moves it, so timing is
checked exactly, never against the speed of the machine running the tests.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from emulators.clock import SteppedClock, arrived_at
from emulators.faults import Fault
from emulators.ocs.alarms import CLEAR_HOLD_SECONDS
from emulators.ocs.model import OcsDevice
from emulators.ocs.nvram import flush
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import NO_LIGHT_DBM, OpticalModel, Source
from emulators.scpi.parser import ScpiError, ScpiInterpreter

SIZE = 16  # ingress 1..16, egress 17..32
WARM_SWITCH_SECONDS = 3 * 0.008 + 0.006  # three LC response times at 40 degC + hologram load
JITTER = 0.05  # each reconfiguration lasts 0.95..1.05 of the nominal time
BOOT_SECONDS = 2.0


class Bench:
    """One OCS on a stepped clock, a 0 dBm laser on every ingress port."""

    def __init__(self, *, serial: str = "BENCH-0001", nvram_path: Path | None = None,
                 ambient_celsius: float = 25.0, size: int = SIZE):
        self.clock = SteppedClock()
        self.optics = OpticalModel(self.clock)
        self.device = OcsDevice("ocs", self.optics, size=size, serial=serial,
                                nvram_path=nvram_path, ambient_celsius=ambient_celsius,
                                boot_seconds=BOOT_SECONDS)
        lasers = Source("lasers", {str(p): 0.0 for p in range(1, size + 1)})
        self.optics.add(lasers)
        for port in range(1, size + 1):
            self.optics.patch(f"lasers:{port}", f"ocs:{port}")
        self.client: ScpiInterpreter | None = None

    def out(self, egress: int) -> float:
        """Power leaving an egress port now, dBm."""
        return self.optics.power_dbm(f"ocs:{egress}")

    def lit(self, egress: int) -> bool:
        # Crosstalk alone is about -50 dBm; a path carries about -2 dBm.
        return self.out(egress) > -10.0

    def scpi(self, line: str) -> str | None:
        """One program message from this bench's client (one connection, its own status)."""
        if self.client is None:
            self.client = make_interpreter(self.device)
        return asyncio.run(self.client.execute(line))


@pytest.fixture
def bench() -> Bench:
    return Bench()


def _code(error: pytest.ExceptionInfo[ScpiError]) -> int:
    return error.value.code


# ---- switching time -------------------------------------------------------------------


def test_switching_takes_about_30_ms_when_the_cell_is_at_40c(bench: Bench) -> None:
    assert bench.device.cell_temperature_celsius() == pytest.approx(40.0, abs=0.01)
    assert bench.device.switching_seconds() == pytest.approx(WARM_SWITCH_SECONDS, rel=1e-3)
    bench.device.add((1,), (17,))
    took = bench.device.pending_until()
    assert took == pytest.approx(WARM_SWITCH_SECONDS, rel=JITTER)
    assert bench.device.last_switch_seconds is None  # only a completed one is reported
    bench.clock.advance(1.0)
    assert bench.device.last_switch_seconds == pytest.approx(took)


def test_a_path_is_dark_until_the_switch_settles_then_lit(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    assert not bench.lit(17)
    bench.clock.advance(WARM_SWITCH_SECONDS * (1 - JITTER) - 0.0005)
    assert not bench.lit(17)
    bench.clock.advance(WARM_SWITCH_SECONDS * 2 * JITTER + 0.001)
    assert bench.lit(17)


def test_switching_is_slower_with_the_heater_off(bench: Bench) -> None:
    bench.device.heater_on = False
    assert bench.device.cell_temperature_celsius() == pytest.approx(25.0)
    # response doubles per 10 degC below 40: 15 degC colder is 2**1.5 slower
    expected = 3 * 0.008 * 2 ** 1.5 + 0.006
    assert bench.device.switching_seconds() == pytest.approx(expected, rel=1e-6)
    assert expected > 2 * WARM_SWITCH_SECONDS
    bench.device.add((1,), (17,))
    assert bench.device.pending_until() == pytest.approx(expected, rel=JITTER)


def test_a_colder_room_is_slower_still() -> None:
    cold = Bench(ambient_celsius=10.0).device
    cold.heater_on = False
    room = Bench(ambient_celsius=25.0).device
    room.heater_on = False
    assert cold.switching_seconds() > room.switching_seconds()
    assert cold.switching_seconds() == pytest.approx(3 * 0.008 * 2 ** 3 + 0.006)


def test_after_a_power_loss_the_cell_starts_at_ambient_and_warms(bench: Bench) -> None:
    bench.device.reboot(power_loss=True)
    bench.clock.advance(BOOT_SECONDS)
    assert bench.device.is_up()
    assert bench.device.cell_temperature_celsius() == pytest.approx(25.0, abs=0.01)
    assert bench.device.switching_seconds() > 2 * WARM_SWITCH_SECONDS
    bench.clock.advance(90.0)  # one time constant: 63 % of the way to 40 degC
    assert bench.device.cell_temperature_celsius() == pytest.approx(
        40.0 - 15.0 * math.exp(-1.0), abs=0.01)
    bench.clock.advance(900.0)
    assert bench.device.cell_temperature_celsius() == pytest.approx(40.0, abs=0.01)
    assert bench.device.switching_seconds() == pytest.approx(WARM_SWITCH_SECONDS, rel=1e-3)


def test_a_bulk_command_costs_one_reconfiguration(bench: Bench) -> None:
    ingress = tuple(range(1, 9))
    bench.device.add(ingress, tuple(p + SIZE for p in ingress))
    assert bench.device.pending_until() <= WARM_SWITCH_SECONDS * (1 + JITTER)
    bench.clock.advance(WARM_SWITCH_SECONDS * (1 + JITTER) + 0.0001)
    assert all(bench.lit(p + SIZE) for p in ingress)


def test_serial_commands_queue_behind_each_other(bench: Bench) -> None:
    for port in range(1, 9):
        bench.device.add((port,), (port + SIZE,))
    busy = bench.device.pending_until()
    assert 8 * WARM_SWITCH_SECONDS * (1 - JITTER) <= busy <= 8 * WARM_SWITCH_SECONDS * (1 + JITTER)
    bench.clock.advance(WARM_SWITCH_SECONDS * (1 + JITTER) + 0.0001)
    assert bench.lit(1 + SIZE)
    assert not any(bench.lit(p + SIZE) for p in range(2, 9))
    bench.clock.advance(busy - bench.clock.now() - 0.0001)
    assert all(bench.lit(p + SIZE) for p in range(1, 8))
    assert not bench.lit(8 + SIZE)
    bench.clock.advance(0.0002)
    assert bench.lit(8 + SIZE)


def test_a_command_after_the_engine_is_idle_starts_at_once(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    bench.device.add((2,), (18,))
    assert bench.device.pending_until() - 1.0 == pytest.approx(WARM_SWITCH_SECONDS, rel=JITTER)


def test_a_command_starts_from_when_it_reached_the_unit(bench: Bench) -> None:
    """A transport that says when the command had reached the unit (COMMAND_READY_AT) has
    it start then: the unit was not waiting for the emulator's interpreter."""
    bench.clock.advance(1.0)
    with arrived_at(0.98):
        bench.device.add((1,), (17,))
    assert bench.device.pending_until() - 0.98 == pytest.approx(WARM_SWITCH_SECONDS, rel=JITTER)
    bench.clock.advance(bench.device.pending_until() - bench.clock.now() + 0.0001)
    assert bench.lit(17)


def test_the_beams_leave_when_the_reconfiguration_begins_not_when_it_was_handled(
        bench: Bench) -> None:
    """A command that reached the unit at 0.98 s and was handled at 1.0 s: its
    reconfiguration begins at 0.98 s, when the old beam goes out, and ends a switching
    time later, when the new one lands. (The old beam went out at 1.0 s: a meter logging
    the switch timed it 20 ms short, and a command handled past its end, below zero.)"""
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    with arrived_at(0.98):
        bench.device.only((1,), (18,))
    done = bench.device.pending_until()
    assert bench.device.transition_times(0.9, 2.0) == [0.98, done]

    def light(egress: int, at: float) -> float:  # asked about the past, as a logging meter
        return bench.device.egress_power_dbm(egress, lambda port: 0.0, at)

    assert light(17, 0.979) > -10.0  # the old path, until the reconfiguration began
    assert light(17, 0.981) < -40.0 and light(18, 0.981) < -40.0  # switching
    assert light(18, done + 0.0001) > -10.0


def test_a_command_that_reached_the_unit_while_it_was_busy_queues_behind(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    busy = bench.device.pending_until()
    bench.clock.advance(0.005)
    with arrived_at(0.001):  # reached it during the first reconfiguration
        bench.device.add((2,), (18,))
    assert bench.device.pending_until() - busy == pytest.approx(WARM_SWITCH_SECONDS, rel=JITTER)


def test_only_keeps_unchanged_paths_lit_and_darkens_changed_ones(bench: Bench) -> None:
    # egress ports three apart, so no crosstalk reaches 17 before or after
    bench.device.add((1, 2, 3), (17, 20, 23))
    bench.clock.advance(1.0)
    before = bench.out(17)
    bench.device.only((1, 2, 4), (17, 26, 23))  # 1 stays, 2 moves, 3 goes, 4 is new
    assert bench.device.connection_map() == {1: 17, 2: 26, 4: 23}
    assert bench.out(17) == before  # not re-switched: no flicker
    assert not bench.lit(20)  # 2 left 20 at once
    assert not bench.lit(26) and not bench.lit(23)  # 2 and 4 are still settling
    bench.clock.advance(WARM_SWITCH_SECONDS * (1 + JITTER) + 0.0001)
    assert bench.lit(26) and bench.lit(23)
    assert bench.out(17) == before


def test_a_map_that_does_not_change_costs_nothing(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    busy = bench.device.pending_until()
    bench.device.only((1,), (17,))
    bench.device.add((1,), (17,))  # the same connection again is not an error
    assert bench.device.pending_until() == busy


# ---- insertion loss, repeatability, crosstalk --------------------------------------------


def test_factory_insertion_loss_is_within_1_5_to_2_0_db() -> None:
    device = Bench(size=64).device
    losses = [device.factory_loss_db(i, e) for i in range(1, 65) for e in range(65, 129)]
    assert min(losses) >= 1.5
    assert max(losses) <= 2.0
    assert max(losses) - min(losses) > 0.1  # a table, not one figure


def test_factory_table_is_a_function_of_the_serial_number() -> None:
    first = Bench(serial="LC00000001").device
    same = Bench(serial="LC00000001").device
    other = Bench(serial="LC00000002").device
    pairs = [(i, e) for i in range(1, SIZE + 1) for e in range(SIZE + 1, 2 * SIZE + 1)]
    table = [first.factory_loss_db(i, e) for i, e in pairs]
    assert table == [same.factory_loss_db(i, e) for i, e in pairs]
    assert table != [other.factory_loss_db(i, e) for i, e in pairs]


def test_the_default_serial_is_derived_from_the_name() -> None:
    first = OcsDevice("ocs-x", OpticalModel(SteppedClock()), size=4)
    again = OcsDevice("ocs-x", OpticalModel(SteppedClock()), size=4)
    other = OcsDevice("ocs-y", OpticalModel(SteppedClock()), size=4)
    assert first.serial == again.serial != other.serial


def test_each_connection_lands_within_0_1_db_of_the_factory_value(bench: Bench) -> None:
    factory = bench.device.factory_loss_db(5, 25)
    measured = []
    for _ in range(40):
        bench.device.add((5,), (25,))
        bench.clock.advance(1.0)
        measured.append(-bench.out(25))  # 0 dBm in, no lit neighbours
        bench.device.disconnect_all()
    assert all(abs(loss - factory) <= 0.1 + 1e-9 for loss in measured)
    assert len({round(loss, 6) for loss in measured}) > 1  # it does vary within the band


def test_crosstalk_leaks_about_50_db_below_into_neighbouring_egress_ports(bench: Bench) -> None:
    bench.device.add((3,), (20,))
    bench.clock.advance(1.0)
    main = bench.out(20)
    for neighbour in (19, 21):
        relative = bench.out(neighbour) - main
        assert -55.0 <= relative <= -50.0, (neighbour, relative)
    assert bench.out(22) == NO_LIGHT_DBM  # two ports away: nothing
    assert bench.out(18) == NO_LIGHT_DBM


def test_crosstalk_adds_to_a_neighbours_own_light(bench: Bench) -> None:
    bench.device.add((3,), (19,))
    bench.clock.advance(1.0)
    alone = bench.out(19)
    bench.device.add((4,), (20,))
    bench.clock.advance(1.0)
    with_neighbour = bench.out(19)
    assert with_neighbour > alone
    assert with_neighbour - alone < 0.001  # -50 dB adds ~0.00004 dB


# ---- ports -------------------------------------------------------------------------


@pytest.mark.parametrize("port", [1, 17])
def test_a_disabled_port_blocks_light(bench: Bench, port: int) -> None:
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    lit = bench.out(17)
    bench.device.set_enabled([port], False)
    assert bench.device.port_state(port) == "D"
    assert bench.out(17) == NO_LIGHT_DBM
    assert bench.device.connection_map() == {1: 17}  # the map itself is kept
    bench.device.set_enabled([port], True)
    assert bench.device.port_state(port) == "E"
    assert bench.out(17) == lit


@pytest.mark.parametrize("port", [1, 17])
def test_a_failed_port_blocks_light_until_the_fault_clears(bench: Bench, port: int) -> None:
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    lit = bench.out(17)
    bench.device.faults.inject(Fault("port", target=str(port)))
    assert bench.device.port_state(port) == "F"
    assert bench.out(17) == NO_LIGHT_DBM
    bench.device.faults.clear("port")
    assert bench.device.port_state(port) == "E"
    assert bench.out(17) == lit


def test_commands_naming_a_failed_port_are_refused_with_201(bench: Bench) -> None:
    bench.device.faults.inject(Fault("port", target="2"))
    with pytest.raises(ScpiError) as caught:
        bench.device.add((2,), (18,))
    assert _code(caught) == 201
    with pytest.raises(ScpiError) as caught:
        bench.device.only((2,), (20,))
    assert _code(caught) == 201
    with pytest.raises(ScpiError) as caught:
        bench.device.set_enabled([2], True)
    assert _code(caught) == 201
    assert bench.device.connection_map() == {}
    bench.device.add((1,), (17,))  # other ports still work
    assert bench.device.connection_map() == {1: 17}


def test_a_failed_port_through_scpi(bench: Bench) -> None:
    bench.device.faults.inject(Fault("port", target="18"))
    assert bench.scpi(":OXC:SWIT:CONN:ADD (@2),(@18)") is None
    reply = bench.scpi(":SYST:ERR?")
    assert reply is not None and reply.startswith('201,"Port failed')
    assert bench.scpi(":OXC:SWIT:PORT:STAT? (@17,18)") == "(E,F)"


def test_add_onto_a_port_in_use_is_refused_with_202(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    with pytest.raises(ScpiError) as caught:
        bench.device.add((2,), (17,))  # egress in use
    assert _code(caught) == 202
    with pytest.raises(ScpiError) as caught:
        bench.device.add((1,), (18,))  # ingress in use
    assert _code(caught) == 202
    with pytest.raises(ScpiError) as caught:
        bench.device.add((3, 1), (19, 20))  # all or nothing
    assert _code(caught) == 202
    assert bench.device.connection_map() == {1: 17}
    assert bench.scpi(":OXC:SWIT:CONN:ADD (@2),(@17);:SYST:ERR?") is None
    reply = bench.scpi(":SYST:ERR?")
    assert reply is not None and reply.startswith('202,"Port in use')


@pytest.mark.parametrize(("ingress", "egress", "code"), [
    ((17,), (18,), -222),  # an egress port as ingress
    ((1,), (2,), -222),  # an ingress port as egress
    ((1,), (33,), -222),  # past the last port
    ((0,), (17,), -222),
    ((1, 1), (17, 18), -221),  # a port twice
    ((1, 2), (17, 17), -221),
    ((1, 2), (17,), -109),  # lists of different length
])
def test_bad_connection_lists_are_refused(bench: Bench, ingress: tuple[int, ...],
                                          egress: tuple[int, ...], code: int) -> None:
    for operation in (bench.device.add, bench.device.only):
        with pytest.raises(ScpiError) as caught:
            operation(ingress, egress)
        assert _code(caught) == code
    assert bench.device.connection_map() == {}


def test_subtract_by_ingress_or_egress(bench: Bench) -> None:
    bench.device.add((1, 2, 3), (17, 18, 19))
    bench.device.subtract([2, 19])
    assert bench.device.connection_map() == {1: 17}
    assert bench.device.connected_to(1) == 17
    assert bench.device.connected_to(17) == 1
    assert bench.device.connected_to(2) == 0


# ---- boot modes and NVRAM -----------------------------------------------------------------


def test_power_loss_with_restore_brings_the_map_back(bench: Bench) -> None:
    bench.device.add((1, 2), (17, 18))
    bench.clock.advance(1.0)
    bench.device.reboot(power_loss=True)
    assert not bench.device.is_up()
    assert bench.out(17) == NO_LIGHT_DBM
    bench.clock.advance(BOOT_SECONDS - 0.001)
    assert not bench.device.is_up()
    assert bench.device.seconds_until_up() == pytest.approx(0.001)
    bench.clock.advance(0.001)
    assert bench.device.is_up()
    assert bench.device.connection_map() == {1: 17, 2: 18}
    # the restored hologram is written by a cold cell: slower than warm
    assert not bench.lit(17)
    restore = bench.device.pending_until() - bench.clock.now()
    assert restore > 2 * WARM_SWITCH_SECONDS
    bench.clock.advance(restore - 0.001)
    assert not bench.lit(17)
    bench.clock.advance(0.002)
    assert bench.lit(17) and bench.lit(18)
    assert bench.device.last_switch_seconds == pytest.approx(restore)


def test_the_map_is_back_when_the_boot_is_over_even_if_nobody_asked(bench: Bench) -> None:
    # Physics is evaluated against the clock when read: a device that finished
    # booting lights its restored paths whether or not anyone polled is_up().
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    bench.device.reboot(power_loss=True)
    bench.clock.advance(BOOT_SECONDS + 1.0)
    assert bench.lit(17)
    assert bench.device.connection_map() == {1: 17}


def test_power_loss_in_dark_mode_boots_empty(bench: Bench) -> None:
    bench.device.set_boot_mode("dark")
    bench.device.add((1, 2), (17, 18))
    bench.device.reboot(power_loss=True)
    bench.clock.advance(BOOT_SECONDS)
    assert bench.device.is_up()
    assert bench.device.connection_map() == {}
    bench.clock.advance(1.0)
    assert not bench.lit(17)
    assert bench.device.boot_mode == "dark"


def test_a_reboot_without_power_loss_keeps_the_map_and_the_light(bench: Bench) -> None:
    bench.device.add((1,), (17,))
    bench.clock.advance(1.0)
    lit = bench.out(17)
    bench.device.faults.inject(Fault("reboot", power_loss=False, seconds=0.5))
    assert not bench.device.is_up()
    assert bench.out(17) == lit  # the cells stay powered: a warm restart holds the light
    bench.clock.advance(0.5)
    assert bench.device.is_up()
    assert bench.device.connection_map() == {1: 17}
    assert bench.lit(17)


@pytest.mark.parametrize("power_loss", [True, False])
def test_a_reboot_leaves_each_client_as_at_power_on(bench: Bench, power_loss: bool) -> None:
    """IEEE 488.2 §11.5.1.1.2 (PON) and §10.3: after the controller restarts, a client
    that stayed attached (the console) finds its error queue empty, its enables cleared
    and PON set."""
    bench.scpi("*ESR?;*ESE 36")
    bench.scpi(":OXC:NOPE")
    assert bench.client is not None and len(bench.client.errors) == 1
    bench.device.reboot(power_loss=power_loss)
    bench.clock.advance(BOOT_SECONDS)
    assert bench.device.is_up()
    assert len(bench.client.errors) == 0
    assert bench.scpi("*ESR?;*ESE?") == "128;0"


def test_nvram_file_restores_the_map_on_a_new_instance(tmp_path: Path) -> None:
    nvram = tmp_path / "ocs.nvram.json"
    first = Bench(nvram_path=nvram)
    first.device.add((1, 2), (17, 18))
    first.device.set_enabled([5], False)
    flush(nvram)  # written in a thread of its own (emulators/ocs/nvram.py)
    assert nvram.exists()
    second = Bench(nvram_path=nvram)
    assert second.device.connection_map() == {1: 17, 2: 18}
    assert second.device.port_state(5) == "D"
    assert second.device.boot_mode == "restore"
    second.clock.advance(1.0)
    assert second.lit(17)


def test_nvram_file_in_dark_mode_starts_a_new_instance_empty(tmp_path: Path) -> None:
    nvram = tmp_path / "ocs.nvram.json"
    first = Bench(nvram_path=nvram)
    first.device.add((1,), (17,))
    first.device.set_boot_mode("dark")
    second = Bench(nvram_path=nvram)
    assert second.device.boot_mode == "dark"
    assert second.device.connection_map() == {}


@pytest.mark.parametrize("content", [
    "{not json",
    '{"boot_mode": "restore", "map": {"1": 1',  # cut short by the power loss
    "\x00\xff garbage",
    "[1, 2, 3]",
    '"a string"',
    '{"map": {"1": "seventeen"}}',
    '{"map": {"999": 17}}',
    '{"map": [1, 2]}',
    '{"boot_mode": "sideways"}',
    '{"disabled": ["x"]}',
])
def test_a_corrupt_nvram_boots_dark_without_crashing(tmp_path: Path, content: str) -> None:
    nvram = tmp_path / "ocs.nvram.json"
    nvram.write_text(content, encoding="latin-1")
    bench = Bench(nvram_path=nvram)
    assert bench.device.connection_map() == {}
    assert bench.device.boot_mode in ("restore", "dark")
    assert bench.scpi(":OXC:BOOT:MODE?") in ("REST", "DARK")
    bench.device.add((1,), (17,))  # and it works
    flush(nvram)
    assert json.loads(nvram.read_text())["map"] == {"1": 17}


def test_nvram_corrupted_while_off_boots_dark(tmp_path: Path) -> None:
    nvram = tmp_path / "ocs.nvram.json"
    bench = Bench(nvram_path=nvram)
    bench.device.add((1,), (17,))
    bench.device.reboot(power_loss=True)
    nvram.write_text("{truncated", encoding="ascii")
    bench.clock.advance(BOOT_SECONDS)
    assert bench.device.is_up()
    assert bench.device.connection_map() == {}


# ---- monitors ----------------------------------------------------------------------


def test_dark_ports_read_near_the_minus_60_dbm_floor(bench: Bench) -> None:
    for port in (17, 20, 32):
        reading = bench.device.monitor_dbm(port)
        assert reading is not None and -62.0 <= reading <= -58.0, (port, reading)


def test_lit_ports_read_within_1_db_of_the_truth(bench: Bench) -> None:
    bench.device.add((1, 2, 3), (17, 24, 32))
    bench.clock.advance(1.0)
    for port in (1, 2, 3, 17, 24, 32):
        truth = bench.optics.power_dbm(f"ocs:{port}")
        assert math.isfinite(truth)
        for _ in range(5):
            reading = bench.device.monitor_dbm(port)
            assert reading is not None and abs(reading - truth) <= 1.0, (port, reading, truth)


def test_an_ingress_monitor_sees_light_arriving_at_a_disabled_port(bench: Bench) -> None:
    bench.device.set_enabled([1], False)
    reading = bench.device.monitor_dbm(1)
    assert reading is not None and abs(reading - 0.0) <= 1.0


def test_a_failed_port_has_no_monitor_reading(bench: Bench) -> None:
    bench.device.faults.inject(Fault("port", target="3"))
    assert bench.device.monitor_dbm(3) is None
    reply = bench.scpi(":PMON:POW? (@3,20)")
    assert reply is not None
    assert reply.startswith("(") and reply.endswith(")")  # the Polatis form
    first, second = reply[1:-1].split(",")
    assert float(first) == pytest.approx(9.91e37)  # SCPI not-a-number
    assert -62.0 <= float(second) <= -58.0


def test_a_monitor_outside_the_switch_is_refused(bench: Bench) -> None:
    with pytest.raises(ScpiError) as caught:
        bench.device.monitor_dbm(2 * SIZE + 1)
    assert _code(caught) == -222


# ---- loss-of-light alarms: the clear hold -------------------------------------------------


def _armed_egress(bench: Bench) -> tuple[int, list[tuple[list[int], float]]]:
    """Egress 17 armed at -30 dBm and lost (nothing connected); the holds the unit tells."""
    holds: list[tuple[list[int], float]] = []
    bench.device.alarms.on_hold(lambda ports, due: holds.append((list(ports), due)))
    bench.device.alarms.set_enabled(True)
    bench.device.alarms.arm([17], -30.0)
    assert bench.device.alarms.states([17]) == {17: True}
    return 17, holds


def test_a_settling_beam_begins_the_hold_of_a_lost_port_without_reading_it(
        bench: Bench) -> None:
    """The beam that settles at ``done`` only adds light: the lost port is not read then;
    once the hold is over it is read and cleared, as lit from ``done``."""
    port, holds = _armed_egress(bench)
    alarms = bench.device.alarms
    bench.device.add((1,), (port,))
    done = bench.device.busy_until
    bench.clock.advance(done - bench.clock.now())
    reads = alarms.evaluations
    assert alarms.settle([port], done) == []
    assert alarms.evaluations == reads  # nothing read
    assert holds == [([port], pytest.approx(done + CLEAR_HOLD_SECONDS))]
    bench.clock.advance(CLEAR_HOLD_SECONDS / 2)
    assert alarms.recheck([port]) == []  # read: lit, but not for long enough
    bench.clock.advance(CLEAR_HOLD_SECONDS / 2)
    [cleared] = alarms.recheck([port])
    assert (cleared.port, cleared.lost) == (port, False)
    assert cleared.device_seconds == pytest.approx(done + CLEAR_HOLD_SECONDS)


def test_a_reading_between_the_settle_and_the_recheck_decides_the_hold(bench: Bench) -> None:
    """A port read after the beam settled counts as lit from that reading, not from the
    settle (a reading of it dark would have ended the hold)."""
    port, _ = _armed_egress(bench)
    alarms = bench.device.alarms
    bench.device.add((1,), (port,))
    done = bench.device.busy_until
    bench.clock.advance(done - bench.clock.now())
    alarms.settle([port], done)
    bench.clock.advance(0.02)
    assert alarms.states([port]) == {port: True}  # read now: held from here
    bench.clock.advance(CLEAR_HOLD_SECONDS - 0.02)
    assert alarms.recheck([port]) == []
    bench.clock.advance(0.02)
    [cleared] = alarms.recheck([port])
    assert cleared.device_seconds == pytest.approx(done + 0.02 + CLEAR_HOLD_SECONDS)


def test_a_settling_beam_reads_the_ports_that_are_not_lost_at_once(bench: Bench) -> None:
    """A port not lost is read when the light is announced (a boot that ended then left
    it clear, to be judged afresh): here it is dark, and raised at once."""
    alarms = bench.device.alarms
    alarms.set_enabled(True)
    alarms.arm([18], -30.0)  # dark: raised on arming
    alarms.power_on()  # as after a boot: clear again, judged at the next reading
    [raised] = alarms.settle(None, bench.clock.now())
    assert (raised.port, raised.lost) == (18, True)
