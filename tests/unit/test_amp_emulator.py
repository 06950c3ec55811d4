"""The amplifier module emulator (emulators/amp): CMIS memory, state machine, ALS, physics, faults.

Everything runs on a stepped clock and goes through the I2C slave, decoded
with the declarative field tables, as a host would see it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.amp import vendor_page as vendor
from drivers.cmis.codes import DURATION_SECONDS
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.pages import lower, page00, page01, page02, page10, page11
from emulators.amp import AmplifierModule, I2cBusHang, I2cNack, I2cSlave
from emulators.amp.memory import PagedMemory
from emulators.amp.registers import FIELDS, PAGES
from emulators.clock import SteppedClock
from emulators.faults import Fault, FaultError
from emulators.optics.model import NO_LIGHT_DBM, OpticalModel, Receiver, Source

LOS, ALS_SHUT, GAIN_RANGE, OVER_CURRENT, OVER_TEMP, REFLECTION, PUMP_FAILURE = (
    1 << n for n in range(7))
NORMAL, SOAK, SHUTDOWN, PULSE, DISABLED = range(5)


class Bench:
    """A light source -> the amplifier -> a receiver, on a stepped clock, with the bus."""

    def __init__(self, input_dbm: float = -10.0, **options: object):
        self.clock = SteppedClock()
        self.optics = OpticalModel(self.clock)
        self.source = Source("src", {"out": input_dbm})
        self.optics.add(self.source)
        self.amp = AmplifierModule("amp-t", self.optics, **options)  # type: ignore[arg-type]
        self.optics.add(Receiver("rx", ["in"]))
        self.optics.patch("src:out", "amp-t:in")
        self.optics.patch("amp-t:out", "rx:in")
        self.bus = I2cSlave(self.amp)
        self.amp.update()

    # light and time
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.amp.update()

    def light(self, dbm: float | None) -> None:
        """Set the input light (``None``: dark) from now on."""
        if dbm is None:
            self.source.set_enabled("out", False)
        else:
            self.source.set_enabled("out", True)
            self.source.set_power("out", dbm)
        self.amp.update()

    def out(self) -> float:
        return self.optics.power_dbm("rx:in")

    # the bus, through the field tables
    def select(self, page: int) -> None:
        self.bus.write(127, bytes((page,)))

    def raw(self, f: Field) -> bytes:
        if f.page != LOWER:
            self.select(f.page)
        return self.bus.read(f.offset, f.size)

    def read(self, f: Field) -> float | int | str | None:
        return f.decode(self.raw(f), f.offset)

    def number(self, f: Field) -> float:
        value = self.read(f)
        assert isinstance(value, int | float), f"{f.name} = {value!r}"
        return float(value)

    def write(self, f: Field, value: float) -> None:
        if f.page != LOWER:
            self.select(f.page)
        if f.kind == "bits":  # read-modify-write: other fields share the byte
            old = self.bus.read(f.offset, 1)[0]
            data = bytes(((old & ~f.mask) | (int(value) << f.shift) & f.mask,))
        else:
            data = f.encode(value)
        self.bus.write(f.offset, data)

    def state(self) -> int:
        return int(self.number(lower.MODULE_STATE))

    def als(self) -> int:
        return int(self.number(vendor.ALS_STATE))

    def clear_flags(self) -> None:
        self.bus.read(8, 4)
        self.raw(vendor.AMP_FLAGS)
        self.raw(page11.LANE_FLAGS)

    def until(self, done: Callable[[], bool], *, step: float = 0.001, limit: float = 5.0) -> float:
        """Device seconds (in ``step``s) until ``done()``."""
        waited = 0.0
        while not done():
            assert waited < limit, "condition never met"
            self.advance(step)
            waited += step
        return waited


@pytest.fixture
def bench() -> Bench:
    b = Bench()
    b.advance(1.0)  # the gain loop settles after power-on
    b.clear_flags()
    return b


# ---- identity -------------------------------------------------------------------------


def test_identity_is_a_paged_cmis_5_2_qsfp_dd_from_megascaleout(bench: Bench) -> None:
    assert bench.read(lower.IDENTIFIER) == 0x18
    assert bench.raw(lower.REVISION_MAJOR) == b"\x52"
    assert bench.read(lower.FLAT_MEMORY) == 0
    assert bench.read(page00.VENDOR_NAME) == "MegaScaleOut"
    assert bench.read(page00.PART_NUMBER) == "MSO-EDFA-C20"
    assert bench.read(page00.SERIAL) == bench.amp.serial
    assert isinstance(bench.read(page00.DATE_CODE), str)
    assert (bench.read(lower.FIRMWARE_MAJOR), bench.read(lower.FIRMWARE_MINOR)) == (1, 3)
    assert bench.read(page01.PWR_UP_DURATION) == 0x5
    assert bench.read(page01.PWR_DN_DURATION) == 0x4
    assert bench.read(page01.SUPPORTED_PAGES) == 0x00  # bank 0 only
    assert bench.number(page02.TEMPERATURE[0]) == 75.0
    assert bench.number(page02.VCC[1]) == pytest.approx(2.97)
    assert bench.number(vendor.GAIN_MIN) == 5.0
    assert bench.number(vendor.GAIN_MAX) == 25.0
    assert bench.number(vendor.OUTPUT_POWER_MAX) == 20.0
    assert bench.number(vendor.PUMP_COUNT) == 2


def test_monitors_temperature_and_vcc_drift_a_little(bench: Bench) -> None:
    readings = []
    for _ in range(20):
        bench.advance(60.0)
        readings.append((bench.number(lower.TEMPERATURE), bench.number(lower.VCC)))
    temperatures = [t for t, _ in readings]
    volts = [v for _, v in readings]
    assert min(temperatures) > 30 and max(temperatures) < 45
    assert 0.05 < max(temperatures) - min(temperatures) < 1.5
    assert min(volts) > 3.28 and max(volts) < 3.32 and max(volts) > min(volts)


# ---- memory access rules ---------------------------------------------------------------


def test_read_only_bytes_ignore_host_writes(bench: Bench) -> None:
    bench.bus.write(0, b"\x11\x22")
    assert bench.bus.read(0, 2) == b"\x18\x52"
    bench.select(0x00)
    name = bench.bus.read(129, 16)
    bench.bus.write(129, b"X" * 16)
    assert bench.bus.read(129, 16) == name
    before = bench.number(vendor.GAIN_MAX)
    bench.bus.write(vendor.GAIN_MAX.offset, b"\x27\x10")  # 100 dB: refused, ro
    assert bench.number(vendor.GAIN_MAX) == before


def test_reserved_bytes_read_zero_and_ignore_writes(bench: Bench) -> None:
    bench.bus.write(50, b"\xff\xff")
    assert bench.bus.read(50, 2) == b"\x00\x00"
    bench.select(vendor.PAGE)
    bench.bus.write(200, b"\xab")
    assert bench.bus.read(200, 1) == b"\x00"


def test_rw_bytes_are_stored_and_wo_bytes_read_zero(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 12.5)
    assert bench.number(vendor.TARGET_GAIN) == 12.5
    bench.write(vendor.ALS_COMMAND, 1)
    assert bench.read(vendor.ALS_COMMAND) == 0


def test_an_unsupported_page_or_bank_select_falls_back_to_page_00h(bench: Bench) -> None:
    """CMIS 5.x Page Mapping (section 8.2.15 of CMIS 5.3): bank and page are written in one
    write, the bank is acted on with the page. A selection the module does not have is not
    accepted: both select bytes fall back to bank 0, page 00h, and upper memory shows page
    00h -- never the page asked for, never the one selected before."""
    bench.select(0x00)
    page_00h = bench.bus.read(128, 128)  # identity: no latched and no live byte
    for write in (b"\x03", b"\x20", b"\x9f", b"\xff"):  # pages the module lacks
        bench.select(0x11)
        bench.bus.write(127, write)
        assert bench.bus.read(126, 2) == b"\x00\x00"
        assert bench.bus.read(128, 128) == page_00h
    bench.select(0x11)
    bench.bus.write(126, b"\x01\x10")  # bank 1 of page 10h: the module has bank 0 only
    assert bench.bus.read(126, 2) == b"\x00\x00"
    bench.bus.write(126, b"\x01")  # a bank alone waits for the page select ...
    assert bench.bus.read(126, 2) == b"\x01\x00"
    bench.bus.write(127, b"\x11")  # ... and is refused with it
    assert bench.bus.read(126, 2) == b"\x00\x00"
    for page in PAGES:
        bench.bus.write(126, bytes((0, page)))
        assert bench.bus.read(126, 2) == bytes((0, page))


def test_reads_run_from_lower_into_the_selected_page_and_wrap_past_255(bench: Bench) -> None:
    bench.select(0x00)
    whole = bench.bus.read(0, 128) + bench.bus.read(128, 128)
    assert bench.bus.read(120, 16)[:6] == whole[120:126]  # 126-127 are the selects
    assert bench.bus.read(120, 16)[8:] == whole[128:136]
    assert bench.bus.read(250, 10) == whole[250:256] + whole[128:132]


def test_a_page_select_takes_effect_when_the_write_ends(bench: Bench) -> None:
    bench.select(vendor.PAGE)
    gain = vendor.TARGET_GAIN
    # One write: bank, page 10h, then bytes 128.. that still land in page B0h.
    data = b"\x00\x10" + bytes(gain.offset - 128) + gain.encode(7.0)
    bench.bus.write(126, data)
    assert bench.bus.read(127, 1) == b"\x10"
    assert bench.number(gain) == 7.0


def test_latched_flags_clear_when_read(bench: Bench) -> None:
    bench.write(lower.MODULE_CONTROL, lower.LOW_POWER_REQUEST_SW)
    assert bench.bus.read(8, 1) == b"\x01"
    assert bench.bus.read(8, 1) == b"\x00"


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(0, 255), data=st.binary(min_size=1, max_size=128))
def test_host_writes_never_change_read_only_or_reserved_bytes(offset: int, data: bytes) -> None:
    memory = PagedMemory(FIELDS, PAGES)
    for page in (LOWER, *PAGES):
        low = 0 if page == LOWER else 128
        memory.poke(page, low, bytes(range(1, 129)))
    before = {page: memory.peek(page, 0 if page == LOWER else 128, 128) for page in PAGES}
    before[LOWER] = memory.peek(LOWER, 0, 128)
    memory.host_write(126, b"\x00\xb0")
    memory.host_write(offset, data)
    for (page, byte), access in memory.access.items():
        if access.kind in ("ro", "cor"):
            low = 0 if page == LOWER else 128
            assert memory.peek(page, byte)[0] == before[page][byte - low]
    assert memory.selected_page in PAGES and memory.selected_bank == 0


# ---- module state machine ---------------------------------------------------------------


def test_boots_ready_with_default_controls() -> None:
    b = Bench()
    assert b.state() == 3
    assert b.read(lower.MODULE_CONTROL) == 0
    assert b.bus.read(8, 1) == b"\x01"  # it did become ready


def test_low_power_request_goes_through_the_advertised_durations(bench: Bench) -> None:
    dn_code = int(bench.number(page01.PWR_DN_DURATION))
    up_code = int(bench.number(page01.PWR_UP_DURATION))
    bench.bus.read(8, 1)
    bench.write(lower.MODULE_CONTROL, lower.LOW_POWER_REQUEST_SW)
    assert bench.state() == 4  # ModulePwrDn
    assert bench.bus.read(8, 1) == b"\x01"
    assert bench.out() == NO_LIGHT_DBM
    power_down = bench.until(lambda: bench.state() == 1)
    assert DURATION_SECONDS[dn_code - 1] < power_down <= DURATION_SECONDS[dn_code]
    assert bench.bus.read(8, 1) == b"\x01"
    assert bench.als() == DISABLED
    bench.advance(5.0)
    assert bench.state() == 1 and bench.out() == NO_LIGHT_DBM
    assert bench.bus.read(8, 1) == b"\x00"

    bench.write(lower.MODULE_CONTROL, 0)
    assert bench.state() == 2  # ModulePwrUp
    assert bench.bus.read(8, 1) == b"\x01"
    power_up = bench.until(lambda: bench.state() == 3)
    assert DURATION_SECONDS[up_code - 1] < power_up <= DURATION_SECONDS[up_code]
    assert bench.bus.read(8, 1) == b"\x01"
    bench.advance(0.2)
    assert bench.out() == pytest.approx(10.0, abs=0.05)


def test_software_reset_restores_defaults_selects_page_0_and_nacks_briefly(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 11.0)
    bench.select(0x11)
    bench.bus.write(26, bytes((lower.SOFTWARE_RESET,)))
    with pytest.raises(I2cNack):
        bench.bus.read(0, 1)
    bench.clock.advance(0.049)
    with pytest.raises(I2cNack):
        bench.bus.read(0, 1)
    bench.clock.advance(0.002)
    assert bench.bus.read(126, 2) == b"\x00\x00"
    assert bench.read(lower.MODULE_CONTROL) == 0  # self-clearing
    assert bench.state() == 2  # through ModuleLowPwr into ModulePwrUp
    assert bench.bus.read(8, 1) == b"\x01"
    assert bench.number(vendor.TARGET_GAIN) == 20.0
    bench.until(lambda: bench.state() == 3)
    bench.advance(0.2)
    assert bench.out() == pytest.approx(10.0, abs=0.05)


def test_interrupt_bit_follows_unmasked_latched_flags(bench: Bench) -> None:
    assert bench.number(lower.INTERRUPT_DEASSERTED) == 1
    bench.amp.ambient_celsius = 75.0
    bench.bus.read(3, 1)  # the flag latches before this transaction
    assert bench.number(lower.INTERRUPT_DEASSERTED) == 0
    bench.bus.write(32, b"\xff")  # mask byte 9
    assert bench.number(lower.INTERRUPT_DEASSERTED) == 1


# ---- flags -------------------------------------------------------------------------------


def test_temperature_and_vcc_flags_latch_against_page_02h(bench: Bench) -> None:
    assert bench.bus.read(9, 1) == b"\x00"
    bench.amp.ambient_celsius = 75.0  # the module runs about 7 degC above ambient
    assert bench.bus.read(9, 1)[0] & 0x05 == 0x05  # high alarm, high warning
    assert bench.bus.read(9, 1)[0] & 0x05 == 0x05  # still hot: latched again
    bench.amp.ambient_celsius = 30.0
    bench.bus.read(9, 1)
    assert bench.bus.read(9, 1) == b"\x00"
    bench.amp.supply_volts = 2.9
    assert bench.bus.read(9, 1)[0] == 0xA0  # Vcc low alarm and low warning


def test_rx_power_flags_latch_against_the_page_02h_thresholds(bench: Bench) -> None:
    """CMIS 5.2 page 11h bytes 149-152 (lane 1 Rx power high/low alarm and warning, latched)
    against the page 02h Rx power thresholds (bytes 192-199): a dark input is below the low
    alarm; -10 dBm is within every limit, so the flags stay clear once read."""
    bench.light(None)
    bench.advance(0.01)
    assert bench.raw(page11.FLAGS_RX_POWER_LOW_ALARM) == b"\x01"
    assert bench.raw(page11.FLAGS_RX_POWER_LOW_WARNING) == b"\x01"
    assert bench.raw(page11.FLAGS_RX_POWER_HIGH_ALARM) == b"\x00"
    bench.light(-10.0)
    bench.clear_flags()
    bench.advance(0.01)
    for flag in (page11.FLAGS_RX_POWER_LOW_ALARM, page11.FLAGS_RX_POWER_LOW_WARNING,
                 page11.FLAGS_RX_POWER_HIGH_ALARM, page11.FLAGS_RX_POWER_HIGH_WARNING):
        assert bench.raw(flag) == b"\x00", flag.name
    bench.light(5.0)  # above the +3 dBm high alarm
    bench.advance(0.01)
    assert bench.raw(page11.FLAGS_RX_POWER_HIGH_ALARM) == b"\x01"


def test_vendor_flags_latch_clear_on_read_and_relatch_while_the_condition_lasts(
        bench: Bench) -> None:
    assert bench.read(vendor.AMP_FLAGS) == 0
    bench.light(None)
    assert int(bench.number(vendor.AMP_STATUS)) & LOS
    assert int(bench.number(vendor.AMP_FLAGS)) & LOS
    assert int(bench.number(vendor.AMP_FLAGS)) & LOS  # still dark: seen again
    bench.light(-10.0)
    assert bench.read(vendor.AMP_FLAGS) == 0
    # A loss that came and went between two polls is still latched.
    bench.light(None)
    bench.advance(0.1)
    bench.light(-10.0)
    assert int(bench.number(vendor.AMP_STATUS)) & LOS == 0
    assert int(bench.number(vendor.AMP_FLAGS)) & LOS
    assert bench.read(vendor.AMP_FLAGS) == 0
    assert bench.raw(page11.FLAGS_RX_LOS) == b"\x01"  # the lane flag latched too
    assert bench.raw(page11.FLAGS_RX_LOS) == b"\x00"


# ---- ALS ----------------------------------------------------------------------------------


def test_als_shuts_the_output_within_the_soak(bench: Bench) -> None:
    assert bench.als() == NORMAL
    bench.light(None)
    bench.advance(0.49)
    assert bench.als() == SOAK
    assert -20.0 < bench.out() < -10.0  # pumped, no signal: ASE
    bench.advance(0.02)
    assert bench.als() == SHUTDOWN
    assert bench.out() == NO_LIGHT_DBM
    assert bench.number(vendor.OUTPUT_POWER) == -40.0  # the monitor floor, not -inf
    assert bench.number(vendor.INPUT_POWER) == -40.0
    assert bench.read(vendor.ACTUAL_GAIN) is None
    assert bench.number(vendor.PUMP1_CURRENT) == 0.0
    assert int(bench.number(vendor.AMP_FLAGS)) & (LOS | ALS_SHUT) == LOS | ALS_SHUT


def test_automatic_restart_pulses_at_the_interval_for_the_pulse_length(bench: Bench) -> None:
    bench.write(vendor.ALS_RESTART_INTERVAL, 30)
    bench.write(vendor.ALS_RESTART_PULSE, 0.5)
    bench.light(None)  # t = 0 from here; shutdown at 0.5
    bench.advance(0.51)
    assert bench.als() == SHUTDOWN
    # pulses start at 30.5 and 60.5 s and last 0.5 s
    timeline = [(29.98, SHUTDOWN), (0.02, PULSE), (0.47, PULSE), (0.04, SHUTDOWN),
                (29.47, SHUTDOWN), (0.02, PULSE)]
    for step, expected in timeline:
        bench.advance(step)
        assert bench.als() == expected
        if expected == PULSE:
            assert -40.0 < bench.out() <= 10.0  # reduced power
        else:
            assert bench.out() == NO_LIGHT_DBM


def test_default_restart_cycle_is_a_2_s_pulse_every_100_s(bench: Bench) -> None:
    bench.light(None)
    bench.advance(0.5 + 100.0 - 0.01)
    assert bench.als() == SHUTDOWN
    bench.advance(0.02)
    assert bench.als() == PULSE
    bench.advance(1.98)
    assert bench.als() == PULSE
    bench.advance(0.02)
    assert bench.als() == SHUTDOWN


def test_auto_mode_restores_the_gain_after_light_returns(bench: Bench) -> None:
    bench.light(None)
    bench.advance(50.0)
    bench.light(-10.0)  # back, but the output stays shut until the next pulse
    assert bench.als() == SHUTDOWN
    assert bench.out() == NO_LIGHT_DBM
    bench.advance(50.49)
    assert bench.als() == SHUTDOWN
    bench.advance(0.02)  # the pulse at 100.5 s finds the input: normal again
    assert bench.als() == NORMAL
    assert bench.number(vendor.ACTUAL_GAIN) < 19.0  # the gain loop is still ramping
    bench.advance(0.2)
    assert bench.number(vendor.ACTUAL_GAIN) == pytest.approx(20.0, abs=0.05)
    assert bench.out() == pytest.approx(10.0, abs=0.05)


def test_manual_mode_waits_for_the_restart_command(bench: Bench) -> None:
    bench.write(vendor.ALS_MODE, 2)
    bench.light(None)
    bench.advance(1000.0)
    assert bench.als() == SHUTDOWN
    bench.write(vendor.ALS_COMMAND, vendor.ALS_RESTART_NOW)  # no input: one pulse only
    assert bench.als() == PULSE
    bench.advance(2.01)
    assert bench.als() == SHUTDOWN
    bench.advance(1000.0)
    assert bench.als() == SHUTDOWN
    bench.light(-10.0)
    bench.advance(10.0)
    assert bench.als() == SHUTDOWN and bench.out() == NO_LIGHT_DBM
    bench.write(vendor.ALS_COMMAND, vendor.ALS_RESTART_NOW)
    assert bench.als() == NORMAL
    bench.advance(0.2)
    assert bench.out() == pytest.approx(10.0, abs=0.05)


def test_disabled_mode_never_shuts_the_output(bench: Bench) -> None:
    bench.write(vendor.ALS_MODE, 0)
    bench.light(None)
    bench.advance(1000.0)
    assert bench.als() == NORMAL
    assert bench.out() == pytest.approx(-15.0, abs=0.1)  # ASE at 20 dB, still pumped
    assert int(bench.number(vendor.AMP_STATUS)) == LOS


def test_output_disable_shows_als_state_4(bench: Bench) -> None:
    bench.write(vendor.OUTPUT_ENABLE, 0)
    assert bench.als() == DISABLED and bench.out() == NO_LIGHT_DBM
    bench.write(vendor.OUTPUT_ENABLE, 1)
    bench.advance(0.2)
    assert bench.als() == NORMAL and bench.out() == pytest.approx(10.0, abs=0.05)
    bench.write(page10.TX_DISABLE, 1)  # lane 1's Tx disable is the same switch
    assert bench.als() == DISABLED and bench.out() == NO_LIGHT_DBM


# ---- EDFA physics ---------------------------------------------------------------------------


def test_constant_gain(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 15.0)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(5.0, abs=0.02)
    assert bench.number(vendor.ACTUAL_GAIN) == pytest.approx(15.0, abs=0.05)
    assert bench.number(vendor.OUTPUT_POWER) == pytest.approx(5.0, abs=0.15)
    assert bench.number(vendor.INPUT_POWER) == pytest.approx(-10.0, abs=0.15)
    assert int(bench.number(vendor.AMP_STATUS)) == 0


def test_constant_output_power(bench: Bench) -> None:
    bench.write(vendor.TARGET_OUTPUT_POWER, 12.0)
    bench.write(vendor.MODE, 1)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(12.0, abs=0.02)
    bench.light(-3.0)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(12.0, abs=0.02)
    assert bench.number(vendor.ACTUAL_GAIN) == pytest.approx(15.0, abs=0.05)
    bench.light(-15.0)  # needs 27 dB: more than gain_max
    bench.advance(0.3)
    assert bench.amp.gain_db == pytest.approx(25.0)
    assert bench.out() == pytest.approx(10.04, abs=0.01)  # 10 dBm plus ASE of -10 dBm
    assert int(bench.number(vendor.AMP_STATUS)) & GAIN_RANGE


def test_output_never_exceeds_output_power_max(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 25.0)
    bench.light(0.0)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(20.0, abs=1e-6)
    status = int(bench.number(vendor.AMP_STATUS))
    assert status & GAIN_RANGE and not status & OVER_CURRENT
    pump = bench.number(vendor.PUMP1_CURRENT)
    assert 250.0 < pump < 350.0
    assert bench.number(vendor.PUMP2_CURRENT) == pump
    assert bench.number(vendor.PUMP_TEMPERATURE) == pytest.approx(25.0, abs=0.2)


def test_pump_current_grows_with_output_power(bench: Bench) -> None:
    currents = []
    for gain in (10.0, 15.0, 20.0, 25.0):
        bench.write(vendor.TARGET_GAIN, gain)
        bench.advance(0.3)
        currents.append(bench.number(vendor.PUMP1_CURRENT))
    assert currents == sorted(currents) and currents[0] < currents[-1]


def test_the_gain_loop_settles_with_a_20_ms_time_constant(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 10.0)
    bench.advance(0.5)
    bench.write(vendor.TARGET_GAIN, 20.0)
    assert bench.amp.gain_db == pytest.approx(10.0, abs=1e-6)
    bench.advance(0.020)
    assert bench.amp.gain_db == pytest.approx(20.0 - 10.0 / math.e, abs=1e-6)
    bench.advance(0.020)
    assert bench.amp.gain_db == pytest.approx(20.0 - 10.0 * math.exp(-2), abs=1e-6)
    bench.advance(0.2)
    assert bench.amp.gain_db == pytest.approx(20.0, abs=1e-3)


def test_settling_is_the_same_however_the_time_is_stepped() -> None:
    coarse, fine = Bench(), Bench()
    coarse.advance(0.05)
    for _ in range(50):
        fine.advance(0.001)
    assert coarse.amp.gain_db == pytest.approx(fine.amp.gain_db, abs=1e-9)


def test_tilt_follows_its_target_within_the_range(bench: Bench) -> None:
    bench.write(vendor.TARGET_TILT, 1.5)
    bench.advance(0.3)
    assert bench.number(vendor.ACTUAL_TILT) == pytest.approx(1.5, abs=0.01)
    bench.write(vendor.TARGET_TILT, 5.0)
    bench.advance(0.3)
    assert bench.number(vendor.ACTUAL_TILT) == pytest.approx(3.0, abs=0.01)


def test_a_target_gain_outside_the_range_is_clamped_and_flagged(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 2.0)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(-5.0, abs=0.02)
    assert int(bench.number(vendor.AMP_STATUS)) & GAIN_RANGE


def test_invalid_modes_are_refused(bench: Bench) -> None:
    bench.write(vendor.MODE, 3)
    assert bench.read(vendor.MODE) == 0
    bench.write(vendor.ALS_MODE, 7)
    assert bench.read(vendor.ALS_MODE) == 1
    bench.write(vendor.ALS_RESTART_INTERVAL, 0)
    assert bench.read(vendor.ALS_RESTART_INTERVAL) == 100


def test_dark_input_reads_the_floor_and_the_pumped_output_is_ase() -> None:
    b = Bench(input_dbm=-10.0)
    b.write(vendor.ALS_MODE, 0)
    b.light(None)
    b.advance(0.5)
    assert b.number(vendor.INPUT_POWER) == -40.0
    assert b.number(vendor.OUTPUT_POWER) == pytest.approx(-15.0, abs=0.15)
    assert b.number(vendor.BACK_REFLECTION) == pytest.approx(-40.0, abs=0.3)


# ---- the bus ---------------------------------------------------------------------------------


def test_bus_time_of_one_transaction(bench: Bench) -> None:
    bus = bench.bus
    assert bus.transaction_seconds("read", 128) == pytest.approx((30 + 9 * 128) / 400_000)
    assert bus.transaction_seconds("read", 128) == pytest.approx(2.955e-3)
    assert bus.transaction_seconds("write", 1) == pytest.approx(29 / 400_000)
    with pytest.raises(ValueError):
        bus.transaction_seconds("erase", 1)


def test_bus_stats_count_every_transaction(bench: Bench) -> None:
    bus = I2cSlave(bench.amp)
    bus.read(0, 128)
    bus.write(127, b"\x00")
    bench.amp.faults.inject(Fault("nack", count=1))
    with pytest.raises(I2cNack):
        bus.read(0, 1)
    stats = bus.stats
    assert (stats.transactions, stats.bytes_read, stats.bytes_written) == (3, 128, 1)
    assert stats.seconds == pytest.approx((30 + 9 * 128 + 20 + 9 + 11) / 400_000)


def test_transaction_arguments_are_checked(bench: Bench) -> None:
    for offset, length in ((0, 0), (0, 129), (256, 1), (-1, 1)):
        with pytest.raises(ValueError):
            bench.bus.read(offset, length)
    with pytest.raises(ValueError):
        bench.bus.write(0, b"")


# ---- faults ------------------------------------------------------------------------------------


def test_nack_fault_count_limited_or_until_cleared(bench: Bench) -> None:
    faults = bench.amp.faults
    faults.inject(Fault("nack", count=2))
    for _ in range(2):
        with pytest.raises(I2cNack):
            bench.bus.read(0, 1)
    assert bench.bus.read(0, 1) == b"\x18"
    faults.inject(Fault("nack"))
    for _ in range(5):
        with pytest.raises(I2cNack):
            bench.bus.write(127, b"\x00")
    faults.clear("nack")
    assert bench.bus.read(0, 1) == b"\x18"


def test_bus_hang_fault(bench: Bench) -> None:
    bench.amp.faults.inject(Fault("bus_hang", count=1))
    with pytest.raises(I2cBusHang):
        bench.bus.read(0, 1)
    assert bench.bus.read(0, 1) == b"\x18"


def test_reset_fault_is_a_software_reset(bench: Bench) -> None:
    bench.select(vendor.PAGE)
    bench.amp.faults.inject(Fault("reset"))
    with pytest.raises(I2cNack):
        bench.bus.read(127, 1)
    assert bench.amp.faults.active() == []  # an event, not a state
    bench.clock.advance(0.06)
    assert bench.bus.read(127, 1) == b"\x00"
    assert bench.state() == 2


def test_reboot_fault_nacks_for_its_seconds(bench: Bench) -> None:
    bench.amp.faults.inject(Fault("reboot", seconds=2.0))
    bench.clock.advance(1.99)
    with pytest.raises(I2cNack):
        bench.bus.read(0, 1)
    bench.clock.advance(0.02)
    assert bench.state() == 2


def test_corrupt_flips_one_bit_of_the_next_read(bench: Bench) -> None:
    bench.select(0x00)
    clean = bench.bus.read(128, 64)
    bench.amp.faults.inject(Fault("corrupt"))
    spoiled = bench.bus.read(128, 64)
    difference = [a ^ b for a, b in zip(clean, spoiled, strict=True) if a != b]
    assert len(difference) == 1 and bin(difference[0]).count("1") == 1
    assert bench.bus.read(128, 64) == clean
    bench.amp.faults.inject(Fault("corrupt", count=2))
    assert bench.bus.read(128, 64) != clean
    assert bench.bus.read(128, 64) != clean
    assert bench.bus.read(128, 64) == clean


def test_pump_failure_faults_the_module_until_a_reset(bench: Bench) -> None:
    bench.amp.faults.inject(Fault("pump"))
    assert bench.state() == 5
    assert bench.read(lower.FAULT_CAUSE) == 32
    assert bench.bus.read(8, 1) == b"\x01"
    assert bench.out() == NO_LIGHT_DBM
    assert bench.number(vendor.PUMP1_CURRENT) == 0.0
    assert bench.number(vendor.PUMP2_CURRENT) == 0.0
    assert int(bench.number(vendor.AMP_FLAGS)) & (GAIN_RANGE | PUMP_FAILURE) == \
        GAIN_RANGE | PUMP_FAILURE
    assert bench.raw(page11.FLAGS_TX_FAULT) == b"\x01"
    bench.amp.faults.clear("pump")
    bench.advance(1.0)
    assert bench.state() == 5  # ModuleFault is left only by a reset
    bench.bus.write(26, bytes((lower.SOFTWARE_RESET,)))
    bench.clock.advance(0.4)
    assert bench.state() == 3
    assert bench.read(lower.FAULT_CAUSE) == 0


def test_a_pump_failure_and_its_repair_are_notified_at_once(bench: Bench) -> None:
    """The output falls the moment the pumps fail: the optical model is told then (an OCS
    behind the amplifier raises its loss-of-light alarm on it), not at the next step of
    whoever drives the module's clock."""
    told: list[str] = []
    bench.optics.watch(lambda name, at, reached: told.append(name))
    bench.amp.faults.inject(Fault("pump"))
    assert told == ["amp-t"] and bench.out() == NO_LIGHT_DBM
    bench.amp.faults.clear("pump")
    assert told == ["amp-t", "amp-t"]


def test_one_failed_pump_saturates_the_other(bench: Bench) -> None:
    bench.write(vendor.TARGET_GAIN, 20.0)
    bench.light(0.0)
    bench.advance(0.3)
    assert bench.out() == pytest.approx(20.0, abs=1e-6)
    bench.amp.faults.inject(Fault("pump", target="2"))
    bench.advance(0.3)
    assert bench.state() == 3
    assert bench.out() == pytest.approx(18.37, abs=0.05)  # one pump's capacity
    assert bench.number(vendor.PUMP2_CURRENT) == 0.0
    assert bench.number(vendor.PUMP1_CURRENT) == pytest.approx(400.0, abs=0.1)
    status = int(bench.number(vendor.AMP_STATUS))
    wanted = GAIN_RANGE | OVER_CURRENT | OVER_TEMP | PUMP_FAILURE
    assert status & wanted == wanted
    assert bench.number(vendor.PUMP_TEMPERATURE) == pytest.approx(40.0, abs=0.2)
    bench.amp.faults.clear("pump")
    bench.advance(0.3)
    assert bench.out() == pytest.approx(20.0, abs=1e-6)
    assert not int(bench.number(vendor.AMP_STATUS)) & PUMP_FAILURE


def test_back_reflection_fault(bench: Bench) -> None:
    assert int(bench.number(vendor.AMP_STATUS)) & REFLECTION == 0
    bench.amp.faults.inject(Fault("back_reflection"))
    assert bench.number(vendor.BACK_REFLECTION) == pytest.approx(-15.0, abs=0.3)
    assert int(bench.number(vendor.AMP_FLAGS)) & REFLECTION
    bench.amp.faults.clear("back_reflection")
    bench.amp.faults.inject(Fault("back_reflection", target="-20.5"))
    assert bench.number(vendor.BACK_REFLECTION) == pytest.approx(-20.5, abs=0.3)
    bench.amp.faults.clear("back_reflection")
    assert bench.number(vendor.BACK_REFLECTION) == pytest.approx(-40.0, abs=0.3)
    assert int(bench.number(vendor.AMP_STATUS)) & REFLECTION == 0


@pytest.mark.parametrize("fault", [
    Fault("pump", target="3"), Fault("pump", target="x"), Fault("nack", target="1"),
    Fault("back_reflection", target="abc"), Fault("back_reflection", target="5"),
    Fault("reboot", seconds=-1.0), Fault("port", target="1"), Fault("fiber_cut"),
])
def test_bad_faults_are_refused(bench: Bench, fault: Fault) -> None:
    with pytest.raises(FaultError):
        bench.amp.faults.inject(fault)
    assert bench.amp.faults.active() == []
    assert bench.state() == 3


def test_the_model_refuses_impossible_designs() -> None:
    with pytest.raises(ValueError):
        Bench(gain_min_db=20.0, gain_max_db=10.0)
    with pytest.raises(ValueError):
        Bench(pump_count=3)
