"""Page selection (PagedIo) against a bus double that models a module's page
register, and the amplifier driver's writes, checks and polls on a module image.

Nothing above the I/O seam is mocked: PagedIo talks to
:class:`tests.cmis_doubles.ModuleBus` (an I2C device with bytes 126/127 as the
bank and page select, clear-on-read latched bytes and a reset), and the
driver runs on :class:`drivers.cmis.image.ImageIo` or on PagedIo over that bus.
The module images come from the golden vectors (tests/vectors/cmis_amp.txt).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis.fields import LOWER
from drivers.cmis.image import ImageIo
from drivers.cmis.io import OTHER_HOST_ATTEMPTS, PagedIo, latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_FIELDS, lower
from drivers.errors import (
    DeviceRejected,
    DeviceTimeout,
    ValidationError,
    VerificationFailed,
)
from msoctl.journal import Journal
from msoctl.ops.amp import set_tx
from tests.support.cmis_doubles import (
    ModuleBus,
    Op,
    RecordingImageIo,
    StickyImageIo,
    lower_bytes_read,
    pages_asked_for,
    pages_read,
    plain_module_pages,
)
from tests.support.cmis_vectors import load_vectors
from tests.support.paths import VECTORS as VECTOR_DIR

VECTORS = VECTOR_DIR / "cmis_amp.txt"
LATCHED = latched_bytes((*STANDARD_FIELDS, *vp.FIELDS))
B0 = vp.PAGE


def amp_image(name: str = "amp-running-constant-gain") -> dict[int, bytes]:
    """A whole amplifier module (lower, 00h, 01h, 02h, B0h) from the golden vectors:
    target gain 35.75 dB, gain range 15.00-40.00 dB, output power max 23.00 dBm,
    tilt -3.00..3.00 dB, durations: power down < 100 ms, power up < 500 ms."""
    vector = next(v for v in load_vectors(VECTORS) if v.name == name)
    return {page: bytes(data) for page, data in vector.pages.items()}


def distinct_pages() -> dict[int, bytes]:
    """Pages whose every byte tells which page it came from."""
    pages = {LOWER: bytes(range(128))}
    for page in (0x00, 0x01, 0x02, 0x11, B0):
        pages[page] = bytes((page * 7 + i * 3 + 1) % 256 for i in range(128))
    return pages


def upper(pages: dict[int, bytes], page: int, address: int, length: int) -> bytes:
    return pages[page][address - 128:address - 128 + length]


def paged(pages: dict[int, bytes], latched: frozenset[tuple[int, int]] = LATCHED
          ) -> tuple[ModuleBus, PagedIo]:
    bus = ModuleBus(pages, latched=latched)
    return bus, PagedIo(bus, latched=latched)


def select_writes(bus: ModuleBus) -> list[Op]:
    return [op for op in bus.ops if op.kind == "write" and op.offset <= 127 < op.offset + op.length]


# ---- PagedIo: page select ------------------------------------------------------------------------


def test_page_select_is_one_write_of_both_bytes_and_is_not_repeated() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    assert io.read(0x00, 129, 16) == upper(pages, 0x00, 129, 16)
    assert io.read(0x00, 148, 16) == upper(pages, 0x00, 148, 16)
    assert io.read(0x00, 128, 1) == upper(pages, 0x00, 128, 1)
    assert [(op.offset, op.data) for op in select_writes(bus)] == [(126, b"\x00\x00")]

    assert io.read(0x01, 130, 2) == upper(pages, 0x01, 130, 2)
    assert io.read(LOWER, 0, 4) == pages[LOWER][0:4]  # lower memory needs no select
    assert io.read(0x01, 167, 1) == upper(pages, 0x01, 167, 1)
    assert [(op.offset, op.data) for op in select_writes(bus)] == [
        (126, b"\x00\x00"), (126, b"\x00\x01")]


def test_read_from_128_starts_at_126_in_one_transaction() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    io.read(0x02, 128, 8)  # first time: select, then the read
    bus.ops.clear()
    before = bus.stats.transactions
    assert io.read(0x02, 128, 8) == upper(pages, 0x02, 128, 8)
    assert bus.stats.transactions - before == 1
    assert bus.ops == [Op("read", 126, 10, (0, 0x02))]


def test_read_a_few_bytes_in_starts_early_when_no_latched_byte_is_crossed() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    io.read(0x00, 128, 1)
    bus.ops.clear()
    assert io.read(0x00, 129, 16) == upper(pages, 0x00, 129, 16)
    assert bus.ops == [Op("read", 126, 19, (0, 0x00))]


def test_read_deeper_into_a_page_verifies_with_a_separate_two_byte_read() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    io.read(B0, 128, 4)
    bus.ops.clear()
    assert io.read(B0, 176, 13) == upper(pages, B0, 176, 13)
    assert bus.ops == [Op("read", 126, 2, (0, B0)), Op("read", 176, 13, (0, B0))]


def test_early_start_never_reads_through_latched_bytes() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)  # page 11h 134-153 are latched lane flags
    io.read(0x11, 128, 1)
    bus.ops.clear()
    bus.latched_reads.clear()
    assert io.read(0x11, 136, 1) == upper(pages, 0x11, 136, 1)  # Tx LOS flags only
    assert bus.ops == [Op("read", 126, 2, (0, 0x11)), Op("read", 136, 1, (0, 0x11))]
    assert bus.latched_reads == {(0x11, 136)}
    assert bus.pages[0x11][134 - 128] == pages[0x11][134 - 128]  # 134, 135 not consumed
    assert bus.pages[0x11][135 - 128] == pages[0x11][135 - 128]


def test_without_the_latched_list_the_same_read_would_consume_flags() -> None:
    """Why PagedIo must be given the latched bytes: the early start would read 134-135."""
    pages = distinct_pages()
    bus = ModuleBus(pages, latched=LATCHED)
    io = PagedIo(bus, latched=frozenset())  # an empty latched list
    io.read(0x11, 136, 1)
    assert {(0x11, 134), (0x11, 135)} <= bus.latched_reads


def test_a_reset_behind_the_drivers_back_is_noticed_on_the_next_read() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    assert io.read(0x01, 128, 16) == upper(pages, 0x01, 128, 16)
    bus.reset()  # the module fell back to page 00h
    got = io.read(0x01, 128, 16)
    assert got == upper(pages, 0x01, 128, 16)
    assert got != upper(pages, 0x00, 128, 16)
    assert [op.data for op in select_writes(bus)] == [b"\x00\x01", b"\x00\x01"]
    assert bus.selected == (0, 0x01)


def test_a_reset_is_noticed_by_a_deep_read_too() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    assert io.read(0x01, 200, 8) == upper(pages, 0x01, 200, 8)
    bus.reset()
    bus.ops.clear()
    assert io.read(0x01, 200, 8) == upper(pages, 0x01, 200, 8)
    assert [op.offset for op in bus.ops] == [126, 126, 126, 200]  # check, select, check, read
    assert all(op.selected == (0, 0x01) for op in bus.ops if op.offset == 200)


@pytest.mark.parametrize("offset, length", [(128, 128), (128, 4), (130, 6), (160, 20),
                                            (255, 1)])
def test_reads_after_every_reset_never_return_page_00h_bytes(offset: int, length: int) -> None:
    pages = distinct_pages()
    bus = ModuleBus(pages, latched=LATCHED, clear_on_read=False)  # 128-255 includes B0h 224
    io = PagedIo(bus, latched=LATCHED)
    for _round in range(3):
        for page in (0x01, 0x02, B0):
            bus.reset()
            assert io.read(page, offset, length) == upper(pages, page, offset, length)
            data_reads = [op for op in bus.ops if op.kind == "read" and op.offset >= 128]
            assert all(op.selected != (0, 0x00) for op in data_reads)


def test_a_module_that_never_keeps_the_page_has_refused_it() -> None:
    """CMIS 5.x Page Mapping: a module that does not take a selection shows other select
    bytes; selected twice in vain, the page is refused (DeviceRejected) and no byte of the
    page that is there instead is returned or written."""
    pages = distinct_pages()
    bus, io = paged(pages)
    bus.ignore_select = True
    with pytest.raises(DeviceRejected, match="does not select page 01h bank 0"):
        io.read(0x01, 128, 4)
    with pytest.raises(DeviceRejected, match="read back bank 0 page 00h"):
        io.read(0x01, 200, 4)
    with pytest.raises(DeviceRejected):
        io.write(B0, 147, b"\x0f\xa0")
    assert bus.page_bytes(0x00) == pages[0x00]  # nothing written to the wrong page


def test_another_hosts_select_between_ours_and_the_read_is_selected_again() -> None:
    """A shared two-wire bus has no arbitration above the transaction (the page select is
    the module's one register): another host's select of a page the module has (B0h)
    lands between this host's select and its read. The select bytes read with the data
    show it; this host selects again, and returns only bytes read under its own page.
    Past OTHER_HOST_ATTEMPTS such selects the error names another host, not the page."""
    pages = distinct_pages()
    bus, io = paged(pages)
    bus.other_host = [(0, B0)] * (OTHER_HOST_ATTEMPTS - 1)
    assert io.read(0x01, 128, 4) == upper(pages, 0x01, 128, 4)
    assert not bus.other_host
    bus.other_host = [(0, B0)] * (OTHER_HOST_ATTEMPTS - 1)
    io.write(0x02, 200, b"\x07")
    assert bus.page_bytes(0x02)[200 - 128] == 7 and bus.page_bytes(B0) == pages[B0]
    bus.other_host = [(0, B0)] * OTHER_HOST_ATTEMPTS
    with pytest.raises(DeviceRejected, match="another host is using the bus"):
        io.read(0x01, 200, 4)
    assert bus.page_bytes(B0) == pages[B0]


def test_writes_verify_the_page_before_writing() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    io.write(B0, 147, b"\x0f\xa0")
    assert [(op.kind, op.offset) for op in bus.ops] == [("write", 126), ("read", 126),
                                                        ("write", 147)]
    assert bus.ops[-1].selected == (0, B0)
    assert bus.page_bytes(B0)[147 - 128:149 - 128] == b"\x0f\xa0"

    bus.reset()
    bus.ops.clear()
    io.write(B0, 149, b"\x06\xa4")
    assert [(op.kind, op.offset) for op in bus.ops] == [
        ("read", 126), ("write", 126), ("read", 126), ("write", 149)]
    assert bus.page_bytes(B0)[149 - 128:151 - 128] == b"\x06\xa4"
    assert bus.page_bytes(0x00) == pages[0x00]


def test_a_raw_write_of_the_select_bytes_makes_the_next_read_select_again() -> None:
    pages = distinct_pages()
    bus, io = paged(pages)
    io.read(0x01, 128, 2)
    io.write(LOWER, 126, b"\x00\x02")  # someone moved the page by hand
    assert bus.selected == (0, 0x02)
    assert io.read(0x01, 128, 2) == upper(pages, 0x01, 128, 2)
    assert bus.selected == (0, 0x01)


# ---- the amplifier: targets are checked before anything is written -------------------------------


def amp_on_image(pages: dict[int, bytes] | None = None) -> tuple[AmpDriver, ImageIo]:
    io = ImageIo(pages or amp_image())
    module = CmisModule(io, name="amp-1", extra_fields=vp.FIELDS, sleep=lambda _s: None)
    return AmpDriver(module), io


@pytest.mark.parametrize("call", [
    lambda amp: amp.set_gain(14.99),
    lambda amp: amp.set_gain(40.01),
    lambda amp: amp.set_gain(-1.0),
    lambda amp: amp.set_gain(math.nan),
    lambda amp: amp.set_gain(math.inf),
    lambda amp: amp.set_output_power(23.01),
    lambda amp: amp.set_output_power(math.nan),
    lambda amp: amp.set_tilt(3.01),
    lambda amp: amp.set_tilt(-3.01),
    lambda amp: amp.check_targets(gain_db=40.5),
    lambda amp: amp.check_targets(output_power_dbm=30.0),
], ids=["gain-below-min", "gain-above-max", "gain-negative", "gain-nan", "gain-inf",
        "power-above-max", "power-nan", "tilt-above-max", "tilt-below-min",
        "check-gain", "check-power"])
def test_targets_outside_the_module_range_are_refused_before_any_write(
        call: Callable[[AmpDriver], object]) -> None:
    amp, io = amp_on_image()
    before = {page: bytes(data) for page, data in io.pages.items()}
    with pytest.raises(ValidationError):
        call(amp)
    assert io.stats.bytes_written == 0
    assert {page: bytes(data) for page, data in io.pages.items()} == before


def test_targets_on_the_limits_are_accepted() -> None:
    amp, _io = amp_on_image()
    amp.check_targets(gain_db=15.0, output_power_dbm=23.0, tilt_db=-3.0)
    amp.check_targets(gain_db=40.0, output_power_dbm=-10.0, tilt_db=3.0)


def test_an_output_power_the_register_cannot_hold_is_a_validation_error() -> None:
    """Below max but under -327.68 dBm: refused as bad input, not a crash (ValueError)."""
    amp, io = amp_on_image()
    with pytest.raises(ValidationError):
        amp.set_output_power(-400.0)
    assert io.stats.bytes_written == 0


# ---- the amplifier: gain ramps -------------------------------------------------------------------


def ramp_setup() -> tuple[AmpDriver, RecordingImageIo, list[tuple[str, object]]]:
    events: list[tuple[str, object]] = []
    io = RecordingImageIo(amp_image(), events)
    module = CmisModule(io, name="amp-1", extra_fields=vp.FIELDS,
                        sleep=lambda seconds: events.append(("sleep", seconds)))
    return AmpDriver(module), io, events


def written_gains(events: list[tuple[str, object]]) -> list[float]:
    gains = []
    for kind, what in events:
        if kind == "write":
            assert isinstance(what, tuple)
            page, offset, data = what
            assert (page, offset, len(data)) == (B0, 147, 2)  # only the target gain
            gains.append(int.from_bytes(data, "big") / 100)
    return gains


@pytest.mark.parametrize("target, max_step", [(38.0, 0.5), (33.0, 0.5), (40.0, 1.0),
                                              (15.0, 3.0), (35.8, 0.5), (36.75, 0.25)])
def test_set_gain_ramps_in_steps_with_sleeps_between(target: float, max_step: float) -> None:
    amp, io, events = ramp_setup()
    steps = amp.set_gain(target, max_step_db=max_step, slew_db_per_second=10.0)
    gains = written_gains(events)
    assert gains == steps
    assert gains[-1] == target
    previous = 35.75  # the image's target gain
    for gain in gains:
        assert abs(gain - previous) <= max_step + 1e-9
        previous = gain
    # write, sleep, write, sleep, ..., write: a sleep between every two steps, none after
    assert [kind for kind, _ in events] == ["write", "sleep"] * (len(gains) - 1) + ["write"]
    sleeps = [seconds for kind, seconds in events if kind == "sleep"
              if isinstance(seconds, float) and seconds > 0]
    assert len(sleeps) == len(gains) - 1  # every sleep a positive number of seconds
    assert math.isclose(sum(sleeps), abs(target - gains[0]) / 10.0, abs_tol=1e-6)
    assert io.pages[B0][147 - 128:149 - 128] == round(target * 100).to_bytes(2, "big")


def test_set_gain_to_the_current_target_writes_once_and_never_sleeps() -> None:
    amp, _io, events = ramp_setup()
    assert amp.set_gain(35.75) == [35.75]
    assert [kind for kind, _ in events] == ["write"]


def test_ramp_steps_are_even_and_end_on_the_target() -> None:
    amp, _io = amp_on_image()
    assert amp.ramp_steps(20.0, 22.0, 0.5) == [20.5, 21.0, 21.5, 22.0]
    assert amp.ramp_steps(22.0, 20.0, 0.5) == [21.5, 21.0, 20.5, 20.0]
    assert amp.ramp_steps(20.0, 20.0, 0.5) == [20.0]
    assert amp.ramp_steps(20.0, 20.3, 0.5) == [20.3]
    assert amp.ramp_steps(0.0, 1.01, 0.337) == [0.25, 0.5, 0.75, 1.01]  # none over 0.337
    with pytest.raises(ValidationError):
        amp.ramp_steps(20.0, 21.0, 0.0)
    with pytest.raises(ValidationError):
        amp.ramp_steps(20.0, 21.0, 0.001)  # finer than the register's 0.01 dB


def test_set_gain_refuses_a_bad_slew_before_writing() -> None:
    amp, io, _events = ramp_setup()
    with pytest.raises(ValidationError):
        amp.set_gain(36.0, slew_db_per_second=0.0)
    assert io.stats.bytes_written == 0


# ---- the amplifier: every write is read back -----------------------------------------------------


@pytest.mark.parametrize("ignored, call", [
    ({(B0, 150)}, lambda amp: amp.set_output_power(10.0)),
    ({(B0, 147), (B0, 148)}, lambda amp: amp.set_gain(36.0)),
    ({(B0, 148)}, lambda amp: amp.set_gain(35.0, max_step_db=5.0)),
    ({(B0, 151), (B0, 152)}, lambda amp: amp.set_tilt(1.0)),
    ({(B0, 153)}, lambda amp: amp.set_als_mode("manual")),
    ({(B0, 146)}, lambda amp: amp.set_mode("power")),
    ({(B0, 146)}, lambda amp: amp.set_output_enabled(False)),
    ({(B0, 156)}, lambda amp: amp.set_als_timings(los_soak_seconds=0.05)),
], ids=["output-power", "gain", "gain-low-byte", "tilt", "als-mode", "mode", "enable",
        "als-soak"])
def test_a_write_that_does_not_stick_is_a_verification_failure(
        ignored: set[tuple[int, int]], call: Callable[[AmpDriver], object]) -> None:
    io = StickyImageIo(amp_image(), ignored=ignored)
    amp = AmpDriver(CmisModule(io, name="amp-1", extra_fields=vp.FIELDS,
                               sleep=lambda _s: None))
    with pytest.raises(VerificationFailed):
        call(amp)
    assert io.stats.bytes_written > 0  # it was written, then read back


def test_writes_that_stick_are_read_back_and_pass() -> None:
    amp, io = amp_on_image()
    amp.set_output_power(10.0)
    amp.set_tilt(-1.25)
    amp.set_als_mode("manual")
    amp.set_mode("power")
    amp.set_output_enabled(False)
    amp.set_als_timings(los_soak_seconds=0.05, restart_interval_seconds=200,
                        restart_pulse_seconds=1.5)
    settings = amp.settings()
    assert settings.target_output_power_dbm == 10.0
    assert settings.target_tilt_db == -1.25
    assert settings.als_mode == "manual"
    assert settings.mode == "power"
    assert settings.output_enabled is False
    assert settings.als_los_soak_seconds == 0.05
    assert settings.als_restart_interval_seconds == 200
    assert settings.als_restart_pulse_seconds == 1.5
    # the raw bytes, as the vendor page's spec table lays them out
    b0 = io.pages[B0]
    assert b0[149 - 128:151 - 128] == (1000).to_bytes(2, "big")  # 10.00 dBm
    assert b0[151 - 128:153 - 128] == (-125).to_bytes(2, "big", signed=True)
    assert b0[146 - 128] == 0b010  # output disabled, mode 1 in bits 2-1
    assert b0[153 - 128] == 2
    assert b0[155 - 128:161 - 128] == bytes((0, 50, 0, 200, 0x05, 0xDC))


def test_restart_writes_the_self_clearing_command_bit() -> None:
    amp, io = amp_on_image()
    amp.restart()
    assert io.pages[B0][154 - 128] == 0x01


# ---- the amplifier over PagedIo: flags and the status poll ---------------------------------------


def amp_on_bus(pages: dict[int, bytes]) -> tuple[AmpDriver, ModuleBus]:
    bus, io = paged(pages)
    return AmpDriver(CmisModule(io, name="amp-1", extra_fields=vp.FIELDS,
                                sleep=lambda _s: None)), bus


def test_read_and_clear_flags_names_the_set_flags_and_polls_do_not_consume_them() -> None:
    pages = amp_image()
    lower = bytearray(pages[LOWER])
    lower[8], lower[9] = 0x01, 0x10  # state changed; Vcc high alarm
    b0 = bytearray(pages[B0])
    b0[224 - 128] = 0x05  # input LOS, gain out of range
    pages[LOWER], pages[B0] = bytes(lower), bytes(b0)
    amp, bus = amp_on_bus(pages)
    for _poll in range(3):
        amp.status()
        amp.settings()
        amp.capabilities()
    assert not bus.latched_reads, "a poll read latched flags"
    flags = amp.read_and_clear_flags()
    assert {name for name, on in flags.items() if on} == {
        "module_state_changed", "vcc_high_alarm", "input_los", "gain_out_of_range"}
    assert set(flags) >= {"temperature_high_alarm", "pump_over_current",
                          "back_reflection_high", "module_firmware_error"}
    assert not any(amp.read_and_clear_flags().values())  # cleared by the read


def test_the_amplifier_status_poll_is_three_transactions_in_steady_state() -> None:
    amp, bus = amp_on_bus(amp_image())
    first = amp.status()  # identity and capabilities are read once, then kept
    bus.ops.clear()
    before = bus.stats.transactions
    second = amp.status()
    assert bus.stats.transactions - before == 3
    assert [(op.kind, op.offset) for op in bus.ops] == [
        ("read", 3), ("read", 14), ("read", 126)]
    assert bus.ops[1].length == 4  # temperature and Vcc, 14-17
    assert bus.ops[2].length >= 2 + 35  # select bytes + monitors and controls, 128-162
    assert second == first
    assert second.monitors.input_power_dbm == -18.5


def test_a_status_poll_after_a_reset_reselects_and_reads_the_right_page() -> None:
    amp, bus = amp_on_bus(amp_image())
    expected = amp.status()
    bus.reset()
    assert amp.status() == expected
    assert bus.selected == (0, B0)


# ---- the module state machine waits through the injected clock -----------------------------------


class StateMachineImage(ImageIo):
    """An image whose module enters ModuleLowPwr a few polls after LowPwrRequestSW is set."""

    def __init__(self, pages: dict[int, bytes], polls_to_change: int | None):
        super().__init__(pages)
        self.polls_to_change = polls_to_change
        self.countdown: int | None = None

    def write(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        super().write(page, offset, data, bank=bank)
        if page == LOWER and offset == 26 and data[0] & 0x10:
            self.countdown = self.polls_to_change

    def read(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        if page == LOWER and offset <= 3 < offset + length and self.countdown is not None:
            if self.countdown == 0:
                self.pages[LOWER][3] = 0x03  # ModuleLowPwr, IntL deasserted
            self.countdown -= 1
        return super().read(page, offset, length, bank=bank)


def test_set_low_power_waits_through_the_injected_sleep() -> None:
    io = StateMachineImage(amp_image(), polls_to_change=3)
    sleeps: list[float] = []
    module = CmisModule(io, name="amp-1", extra_fields=vp.FIELDS, sleep=sleeps.append,
                        monotonic=lambda: 0.0)
    assert module.set_low_power(True) == "ModuleLowPwr"
    assert io.pages[LOWER][26] & 0x10
    assert sleeps == [pytest.approx(0.01)] * 3  # a tenth of the advertised 100 ms, per poll


def test_a_module_that_never_changes_state_times_out_on_the_advertised_duration() -> None:
    io = StateMachineImage(amp_image(), polls_to_change=None)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    module = CmisModule(io, name="amp-1", extra_fields=vp.FIELDS, sleep=sleep,
                        monotonic=lambda: now[0])
    with pytest.raises(DeviceTimeout):
        module.set_low_power(True)
    assert 0.1 <= now[0] <= 0.1 * 1.5 + 0.05 + 0.011  # advertised 100 ms, plus the margin


# ---- pages the module does not have ----------------------------------------------------------


def test_a_flat_memory_module_is_asked_for_no_upper_page_but_00h() -> None:
    """CMIS 5.2 section 8.2 (lower byte 2 bit 7, flat memory): a flat module has page 00h
    only, so the driver reads no other page -- not even page 01h to look for more -- and
    says so before a byte goes out."""
    pages = amp_image()
    flat_lower = bytearray(pages[LOWER])
    flat_lower[2] |= 0x80
    events: list[tuple[str, object]] = []
    io = RecordingImageIo({**pages, LOWER: bytes(flat_lower)}, events)
    module = CmisModule(io, name="amp-1", extra_fields=vp.FIELDS)
    before = io.stats.transactions
    for page in (0x01, 0x02, 0x11, B0):
        with pytest.raises(ValidationError, match="flat memory: 00h"):
            module.read_raw(page, 128, 4)
    assert io.stats.transactions - before == 1  # lower byte 2, once
    assert module.read_raw(0x00, 129, 4) == pages[0x00][1:5]
    assert events == []


# ---- features the module does not have: absent, never read; refusals before any write -----------
#
# CMIS 5.2 section 8.4: page 01h byte 155 bit 1 (Tx disable), byte 159 (module monitors: bit 0
# temperature, bit 1 Vcc), byte 160 (lane monitors: bit 0 Tx bias, 1 Tx power, 2 Rx power).
# The vendor page B0h is the project's own; CMIS advertises no custom page, so it exists only
# on a module page 00h names as one that carries it (vendor_page.CARRIERS).


def plain_on_bus(**image: object) -> tuple[AmpDriver, ModuleBus]:
    pages = plain_module_pages(**image)  # type: ignore[arg-type]
    return amp_on_bus(pages)


def test_a_plain_cmis_module_is_read_through_its_standard_pages_only() -> None:
    amp, bus = plain_on_bus()
    status = amp.status()
    assert status.amplifier_page is False
    assert (status.identity.vendor, status.identity.part_number) == ("NorthLight",
                                                                    "NL-EDFA-QDD-C17")
    assert status.module.state == "ModuleReady"
    assert set(dataclasses.astuple(status.settings)) == {None}
    assert status.monitors.pump_currents_ma == () and status.monitors.conditions == ()
    assert {v for v in dataclasses.astuple(status.monitors) if v != ()} == {None}
    assert set(dataclasses.astuple(amp.capabilities())) == {None}
    assert set(dataclasses.astuple(amp.settings())) == {None}
    assert amp.supported() == ("tx_disable",)
    assert not amp.has_amplifier_page()
    assert set(amp.read_and_clear_flags()) == {*lower.MODULE_FLAG_BITS.values(),
                                               *lower.TEMP_VCC_FLAG_BITS.values()}
    assert amp.optical_path().data_path_state == "DPActivated"
    assert amp.module.advertisement().pages == (0x00, 0x01, 0x02, 0x10, 0x11)
    assert B0 not in pages_read(bus) and B0 not in pages_asked_for(bus)
    assert all(op.kind == "read" or op.offset == 126 for op in bus.ops)  # selects only
    with pytest.raises(ValidationError, match="custom page that this module does not carry"):
        amp.dump(B0)
    assert B0 not in pages_asked_for(bus)


def test_another_makers_page_b0h_is_never_read() -> None:
    """A module with a page at B0h that page 00h does not name as a carrier: what it holds
    there is not the project's page, so the driver never selects it."""
    amp, bus = plain_on_bus(page_b0=amp_image()[B0], module_monitors=0x03)
    assert amp.status().amplifier_page is False
    assert amp.status().settings.target_gain_db is None
    amp.read_and_clear_flags()
    assert B0 not in pages_asked_for(bus)
    assert (B0, 224) not in bus.latched_reads


def test_monitors_that_are_not_advertised_are_none_and_never_read() -> None:
    amp, bus = plain_on_bus()  # the registers hold 25.0 degC, 3.3 V and lane readings
    status = amp.module.status()
    assert (status.temperature_celsius, status.vcc_volts) == (None, None)
    assert amp.module.thresholds() == {}
    lane = amp.module.lane_monitors()
    assert (lane.tx_bias_milliamperes, lane.tx_power_milliwatts,
            lane.rx_power_milliwatts) == (None, None, None)
    assert not lower_bytes_read(bus) & set(range(14, 18))
    assert 0x02 not in pages_read(bus) and 0x11 not in pages_read(bus)


@pytest.mark.parametrize("module_monitors, lane_monitors, temperature, vcc, groups, read", [
    (0x01, 0x00, 25.0, None, {"temperature"}, {14, 15}),
    (0x02, 0x04, None, 3.3, {"vcc", "rx_power"}, {16, 17}),
    (0x03, 0x07, 25.0, 3.3, {"temperature", "vcc", "tx_bias", "tx_power", "rx_power"},
     {14, 15, 16, 17}),
], ids=["temperature-only", "vcc-and-rx-power", "all"])
def test_only_the_advertised_monitors_are_read_with_their_thresholds(
        module_monitors: int, lane_monitors: int, temperature: float | None,
        vcc: float | None, groups: set[str], read: set[int]) -> None:
    amp, bus = plain_on_bus(module_monitors=module_monitors, lane_monitors=lane_monitors)
    status = amp.module.status()
    assert (status.temperature_celsius, status.vcc_volts) == (temperature, vcc)
    assert lower_bytes_read(bus) & set(range(14, 18)) == read
    limits = amp.module.thresholds()
    assert set(limits) == groups
    assert all(None not in dataclasses.astuple(t) for t in limits.values())
    lane = amp.module.lane_monitors()
    assert (lane.rx_power_milliwatts is not None) == bool(lane_monitors & 0x04)
    assert (lane.tx_power_milliwatts is not None) == bool(lane_monitors & 0x02)
    assert (lane.tx_bias_milliamperes is not None) == bool(lane_monitors & 0x01)
    if lane_monitors & 0x04:
        assert lane.rx_power_milliwatts == pytest.approx(0.1)
    if lane_monitors & 0x01:
        assert lane.tx_bias_milliamperes == pytest.approx(50.0)


def test_the_tx_bias_is_scaled_as_byte_160_says() -> None:
    """Page 01h byte 160 bits 4-3: the Tx bias monitor's 2 uA step times 1, 2 or 4."""
    amp, _bus = plain_on_bus(lane_monitors=0x01 | 0x10)  # bits 4-3 = 10b: times 4
    assert amp.module.lane_monitors().tx_bias_milliamperes == pytest.approx(200.0)


def test_the_status_poll_of_a_plain_module_is_one_read_of_the_state() -> None:
    """A module that implements no monitor: the amplifier status poll is two reads of lower
    memory or fewer, and never page 02h."""
    amp, bus = plain_on_bus()
    amp.status()
    bus.ops.clear()
    amp.status()
    assert [(op.kind, op.offset, op.length) for op in bus.ops] == [("read", 3, 1)]


REFUSED = [
    ("setting the gain", lambda amp: amp.set_gain(15.0)),
    ("setting the output power", lambda amp: amp.set_output_power(10.0)),
    ("setting the tilt", lambda amp: amp.set_tilt(0.5)),
    ("setting the mode", lambda amp: amp.set_mode("power")),
    ("output enable", lambda amp: amp.set_output_enabled(False)),
    ("setting the ALS mode", lambda amp: amp.set_als_mode("manual")),
    ("setting the ALS timings", lambda amp: amp.set_als_timings(los_soak_seconds=0.2)),
    ("an ALS restart", lambda amp: amp.restart()),
    ("setting the gain", lambda amp: amp.check_targets(gain_db=10.0)),
]


@pytest.mark.parametrize("what, call", REFUSED, ids=[
    "gain", "output-power", "tilt", "mode", "output-enable", "als-mode", "als-timings",
    "restart", "check-targets"])
def test_every_change_that_needs_the_amplifier_page_is_refused_before_a_write(
        what: str, call: Callable[[AmpDriver], object]) -> None:
    amp, bus = plain_on_bus(page_b0=amp_image()[B0])
    before = {page: bus.page_bytes(page) for page in (LOWER, 0x00, 0x01, 0x10, 0x11, B0)}
    with pytest.raises(ValidationError) as refused:
        call(amp)
    message = str(refused.value)
    assert what in message and "amplifier page (B0h)" in message and "\n" not in message
    assert "NorthLight NL-EDFA-QDD-C17" in message
    assert [op for op in bus.ops if op.kind == "write" and op.offset != 126] == []
    assert B0 not in pages_asked_for(bus)
    after = {page: bus.page_bytes(page) for page in before}
    assert {p: b for p, b in after.items() if p != LOWER} == \
        {p: b for p, b in before.items() if p != LOWER}
    assert after[LOWER][:126] == before[LOWER][:126]


def test_tx_disable_stays_a_cmis_control_on_a_plain_module() -> None:
    """Page 10h byte 130 is CMIS: it works without the vendor page, checked against page
    01h byte 155 before it is written."""
    amp, bus = plain_on_bus()
    assert amp.set_tx_disabled(True).tx_disabled is True
    assert bus.page_bytes(0x10)[130 - 128] == 0x01
    assert B0 not in pages_asked_for(bus)


def test_the_carrier_is_known_by_vendor_name_and_part_number() -> None:
    """vendor_page.CARRIERS: the vendor name exactly, the part number by its start."""
    vendor, prefix = vp.CARRIERS[0]
    assert vp.carried_by(vendor, prefix + "C20")
    assert not vp.carried_by(vendor, "OTHER-" + prefix)
    assert not vp.carried_by(vendor.upper(), prefix + "C20")
    assert not vp.carried_by(None, prefix) and not vp.carried_by(vendor, None)
    amp, bus = plain_on_bus(vendor=vendor, part_number=prefix + "C20",
                            page_b0=amp_image()[B0], module_monitors=0x03)
    assert amp.has_amplifier_page() and amp.status().settings.target_gain_db == 35.75
    assert B0 in pages_read(bus)


def test_tx_disable_not_advertised_is_a_journaled_refusal_before_the_intent(
        tmp_path: Path) -> None:
    """msoctl/ops/amp.py set_tx: page 01h byte 155 bit 1 clear, so ``amp tx`` is refused
    (journaled, exit 2) before any intent or write."""
    pages = plain_module_pages()
    page01 = bytearray(pages[0x01])
    page01[155 - 128] = 0x00
    amp, bus = amp_on_bus({**pages, 0x01: bytes(page01)})
    journal = Journal(tmp_path / "journal.sqlite")
    with pytest.raises(ValidationError, match="does not advertise Tx disable"):
        set_tx(journal, "amp-1", amp, disabled=True)
    (record,) = journal.records()
    assert (record["event"], record["action"], record["exit_code"]) == ("refused", "amp.tx", 2)
    assert [op for op in bus.ops if op.kind == "write" and op.offset != 126] == []
