"""The amplifier's CMIS registers: identity, advertisement, thresholds, controls, live values.

Everything is written through the declarative field tables (drivers/cmis/pages
and drivers/amp/vendor_page), so an offset lives in exactly one place. This
module maps the model's typed values to and from bytes; it holds no state.

What the module advertises, and why (CMIS 5.2 sections 8.2-8.4, SFF-8024 rev 4.x
for the codes). Every identity and advertising byte is taken from what the module
is: a C-band EDFA in a QSFP-DD shell, one single-mode fiber in and one out on an
LC duplex receptacle, no high-speed electrical lane in use.

- Lower byte 85, MediaType 02h: optical single-mode fiber (both ports are SMF).
- One application (bytes 86-89). SFF-8024 has no host electrical interface code
  for a module without a host electrical data path, and no media interface code
  for an amplifier; 00h ("Undefined") would be true, but host readers take it for
  the end of the list (SONiC's sonic_xcvr, for one) and read no application while
  the module has one in use. So both IDs are from the range SFF-8024 leaves to the
  vendor, C0h-FEh: host C0h, the project's "optical amplifier, no host electrical
  data path", and media C0h, its "C-band EDFA, one amplified single-mode fiber";
  one host lane and one media lane, lane 1 the only start (host lane assignment
  01h, page 01h byte 176 01h). Every other descriptor has HostInterfaceID FFh:
  the list ends there. A host reader decodes one custom application and, matching
  it to no port speed, leaves the module alone; the lane-1 data path comes up by
  itself (the active control set, page 11h byte 206, shows AppSel 1 on lane 1;
  lanes 2-8 are in no data path and stay DPDeactivated).
- Page 00h: connector 07h, LC (byte 203, SFF-8024 Table 4-3); link length 00h
  (byte 202: the fiber is not part of the module); media lanes 2-8 not supported
  (byte 210 FEh); media interface technology 08h, "others" (byte 212: the one
  laser is the pump, no code names an amplifier; 00h would say 850 nm VCSEL, 10h a
  tunable laser source); no registered OUI (000000h, "unspecified"); the page
  checksum (byte 222) over bytes 128-221.
- Page 01h: bank 0 only, no optional page (byte 142 00h; the vendor page B0h
  is in the custom range, which byte 142 does not cover); a cooled transmitter
  (byte 145 bit 7: the pump laser is held at 25 degC by its TEC); the input
  monitor is a PIN photodiode measuring average power, and loss of signal is
  judged on average power (byte 151 bits 4 and 3); Tx output disable
  implemented (byte 155 bit 1); Tx fault and Rx LOS flags (157 bit 0, 158 bit
  1); temperature and Vcc monitors (159, no aux monitor: the pump figures are
  on the vendor page); lane 1 Rx power (160 bit 2) -- the input light, which
  fits the 0.1 uW register up to +8.2 dBm. The output is not advertised as a
  Tx power monitor: an amplifier's +20 dBm does not fit that register
  (6.5535 mW at most), and a saturated reading would lie. No nominal wavelength
  (bytes 138-139 are for single-wavelength transmitters). Data path durations
  (bytes 144 and 168) are the bands that hold the model's times.
- Page 02h thresholds for exactly the advertised monitors: temperature, Vcc,
  Rx power. The other groups read 0.

A plain CMIS module (``vendor_page=False``, ``monitors=False`` in
:func:`new_memory` and :func:`write_identity`) has no page B0h at all (a select of
it falls back to page 00h, as for any page the module lacks), identifies as
another maker's part, and advertises no module or lane monitor: bytes 14-17 and
the page 11h monitors stay 0 and no threshold is set. Its amplifier runs on the
default controls, which no host can change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from drivers.amp import vendor_page as vendor
from drivers.cmis.codes import DURATION_SECONDS, END_OF_APPLICATIONS, LANES
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.pages import lower, page00, page01, page02, page10, page11
from emulators.amp.datapath import DEACTIVATED, DataPathTimes
from emulators.amp.edfa import EdfaDesign
from emulators.amp.memory import PagedMemory

STANDARD_FIELDS: tuple[Field, ...] = (*lower.FIELDS, *page00.FIELDS, *page01.FIELDS,
                                      *page02.FIELDS, *page10.FIELDS, *page11.FIELDS)
FIELDS: tuple[Field, ...] = (*STANDARD_FIELDS, *vendor.FIELDS)
STANDARD_PAGES = (0x00, 0x01, 0x02, 0x10, 0x11)
PAGES = (*STANDARD_PAGES, vendor.PAGE)

MONITOR_FLOOR_DBM = -40.0
MONITOR_CEILING_DBM = 30.0
FAULT_CAUSE_PUMP = 32
"""Lower byte 41, first code of the custom range: the pump failed."""

STATUS_INPUT_LOS = 0x01
STATUS_ALS_SHUTDOWN = 0x02
STATUS_GAIN_OUT_OF_RANGE = 0x04
STATUS_PUMP_OVER_CURRENT = 0x08
STATUS_PUMP_OVER_TEMPERATURE = 0x10
STATUS_BACK_REFLECTION_HIGH = 0x20
STATUS_PUMP_FAILURE = 0x40


def duration_code(seconds: float) -> int:
    """The smallest page 01h duration code whose band holds ``seconds``."""
    for code, bound in sorted(DURATION_SECONDS.items()):
        if seconds <= bound:
            return code
    return 0xD


def new_memory(*, vendor_page: bool = True) -> PagedMemory:
    """The module's memory; without ``vendor_page``, the standard pages alone."""
    if vendor_page:
        return PagedMemory(FIELDS, PAGES)
    return PagedMemory(STANDARD_FIELDS, STANDARD_PAGES)


def has_vendor_page(memory: PagedMemory) -> bool:
    return vendor.PAGE in memory.pages


def module_monitors(memory: PagedMemory) -> bool:
    """Whether the module advertises its temperature and Vcc monitors (page 01h byte 159)."""
    return bool(memory.raw(page01.MODULE_MONITOR_SUPPORT) & MODULE_MONITORS)


def rx_power_monitor(memory: PagedMemory) -> bool:
    """Whether it advertises the lane 1 Rx power monitor (page 01h byte 160 bit 2)."""
    return bool(memory.raw(page01.LANE_MONITOR_SUPPORT) & LANE_RX_POWER)


@dataclass(frozen=True)
class Identity:
    serial: str
    vendor_name: str = "MegaScaleOut"
    part_number: str = "MSO-EDFA-C20"
    """vendor_page.CARRIERS names this maker and part: the driver reads B0h on it."""
    revision: str = "A1"
    date_code: str = "25011501"  # YYMMDD and a two-character lot
    firmware: tuple[int, int] = (1, 3)
    hardware: tuple[int, int] = (1, 0)
    max_power_watts: float = 4.0


@dataclass(frozen=True)
class Thresholds:
    """Page 02h: (high alarm, low alarm, high warning, low warning)."""

    temperature_celsius: tuple[float, float, float, float] = (75.0, -5.0, 70.0, 0.0)
    vcc_volts: tuple[float, float, float, float] = (3.63, 2.97, 3.465, 3.135)
    rx_power_milliwatts: tuple[float, float, float, float] = (1.9953, 0.001, 1.0, 0.002)
    """Input light: +3 dBm, -30 dBm (the default LOS threshold), 0 dBm, -27 dBm."""


PLAIN_VENDOR = "NorthLight"
PLAIN_PART_NUMBER = "NL-EDFA-QDD-C17"
"""What a plain CMIS module (no vendor page) identifies as: another maker's part, which
vendor_page.CARRIERS does not name."""

MEDIA_TYPE_SMF = 0x02
EDFA_HOST_INTERFACE = 0xC0
"""SFF-8024 Table 4-5, custom range (C0h-FEh): "optical amplifier, no host electrical data
path", the project's code. 00h ("Undefined") ends the list for host readers."""
EDFA_MEDIA_INTERFACE = 0xC0
"""SFF-8024 Table 4-7 (MediaType 02h, SMF), custom range: "C-band EDFA, one amplified
single-mode fiber", the project's code."""
APPLICATION = bytes((EDFA_HOST_INTERFACE, EDFA_MEDIA_INTERFACE, 0x11, 0x01))
"""Descriptor 1: the EDFA's host and media interface, 1 host lane and 1 media lane, lane 1."""
UNUSED_APPLICATION = bytes((END_OF_APPLICATIONS, 0, 0, 0))
CONNECTOR_LC = 0x07
"""Page 00h byte 203: SFF-8024 Table 4-3, LC."""
MEDIA_TECHNOLOGY_OTHERS = 0x08
"""Page 00h byte 212: CMIS 5.2 Media Interface Technology 08h, "Others"."""
MEDIA_LANE_1_ONLY = 0xFE
"""Page 00h byte 210: media lanes 2-8 not supported (bit n: lane n+1 unsupported)."""
MODULE_MONITORS = 0x03
"""Page 01h byte 159: temperature (bit 0) and Vcc (bit 1)."""
LANE_RX_POWER = 0x04
"""Page 01h byte 160 bit 2: Rx optical power, lane 1 (the input)."""
RX_AVERAGE_POWER = page01.RX_POWER_AVERAGE | page01.RX_LOS_AVERAGE
"""Page 01h byte 151: a PIN detector (bit 7 clear) whose reading and LOS are on average
power (bits 4 and 3)."""
LANE_1_ONLY = 0x01
ACTIVE_CONTROL_LANE_1 = 0x10
"""Page 11h byte 206: AppSel 1 (bits 7-4), DataPathID 0 (lane 1 is its first lane)."""


def write_identity(memory: PagedMemory, identity: Identity, design: EdfaDesign,
                   pwr_up_seconds: float, pwr_dn_seconds: float,
                   dp_times: DataPathTimes | None = None, *, monitors: bool = True) -> None:
    """Lower memory's identity and advertising bytes, pages 00h and 01h, and the vendor
    page's ranges where the module has it; ``monitors`` false advertises no monitor."""
    m = memory
    dp = dp_times or DataPathTimes()
    m.set_field(lower.IDENTIFIER, 0x18)  # QSFP-DD
    m.set_field(lower.REVISION_MAJOR, 5)
    m.set_field(lower.REVISION_MINOR, 2)
    m.set_field(lower.FLAT_MEMORY, 0)
    m.set_field(lower.FIRMWARE_MAJOR, identity.firmware[0])
    m.set_field(lower.FIRMWARE_MINOR, identity.firmware[1])
    m.set_field(page00.IDENTIFIER_COPY, 0x18)
    m.set_field(page00.VENDOR_NAME, identity.vendor_name)
    m.poke(0x00, page00.VENDOR_OUI.offset, bytes(3))  # no registered OUI
    m.set_field(page00.PART_NUMBER, identity.part_number)
    m.set_field(page00.REVISION, identity.revision)
    m.set_field(page00.SERIAL, identity.serial)
    m.set_field(page00.DATE_CODE, identity.date_code)
    m.set_field(page00.CLEI, "")
    power_class = next((c for c, w in enumerate((1.5, 3.5, 7.0, 8.0, 10.0, 12.0, 14.0))
                        if identity.max_power_watts <= w), 7)
    m.set_field(page00.POWER_CLASS, power_class)
    m.set_field(page00.MAX_POWER, identity.max_power_watts)
    m.set_field(page00.LINK_LENGTH, 0)  # not a cable assembly: the fiber is separable
    m.set_field(page00.CONNECTOR_TYPE, CONNECTOR_LC)
    m.set_field(page00.MEDIA_LANE_INFO, MEDIA_LANE_1_ONLY)
    m.set_field(page00.MEDIA_INTERFACE_TECHNOLOGY, MEDIA_TECHNOLOGY_OTHERS)
    m.set_field(page01.INACTIVE_FIRMWARE_MAJOR, identity.firmware[0])
    m.set_field(page01.INACTIVE_FIRMWARE_MINOR, identity.firmware[1])
    m.set_field(page01.HARDWARE_MAJOR, identity.hardware[0])
    m.set_field(page01.HARDWARE_MINOR, identity.hardware[1])
    m.set_field(lower.MEDIA_TYPE, MEDIA_TYPE_SMF)
    descriptors = APPLICATION + UNUSED_APPLICATION * (lower.APPLICATIONS.size // 4 - 1)
    m.poke(LOWER, lower.APPLICATIONS.offset, descriptors)
    m.set_field(page01.SUPPORTED_PAGES, 0x00)  # bank 0 only, no page 03h, no VDM
    m.set_field(page01.CONTROLS_SUPPORT, page01.TX_DISABLE_IMPLEMENTED)
    m.set_field(page01.TX_FLAGS_SUPPORT, page01.TX_FAULT_FLAG_SUPPORTED)
    m.set_field(page01.RX_FLAGS_SUPPORT, page01.RX_LOS_FLAG_SUPPORTED)
    m.set_field(page01.MODULE_CHARACTERISTICS, page01.COOLING_IMPLEMENTED)
    m.set_field(page01.RX_CHARACTERISTICS, RX_AVERAGE_POWER)
    m.set_field(page01.MODULE_MONITOR_SUPPORT, MODULE_MONITORS if monitors else 0)
    m.set_field(page01.LANE_MONITOR_SUPPORT, LANE_RX_POWER if monitors else 0)
    m.set_field(page01.PWR_UP_DURATION, duration_code(pwr_up_seconds))
    m.set_field(page01.PWR_DN_DURATION, duration_code(pwr_dn_seconds))
    m.set_field(page01.DP_INIT_DURATION, duration_code(dp.init_seconds))
    m.set_field(page01.DP_DEINIT_DURATION, duration_code(dp.deinit_seconds))
    m.set_field(page01.DP_TX_TURN_ON_DURATION, duration_code(dp.tx_turn_on_seconds))
    m.set_field(page01.DP_TX_TURN_OFF_DURATION, duration_code(dp.tx_turn_off_seconds))
    assignment = page01.MEDIA_LANE_ASSIGNMENT
    m.poke(assignment.page, assignment.offset,
           bytes((LANE_1_ONLY,)) + bytes(assignment.size - 1))
    active = page11.ACTIVE_CONTROL_SET
    m.poke(active.page, active.offset, bytes((ACTIVE_CONTROL_LANE_1,)) + bytes(active.size - 1))
    covered = page00.CHECKSUMMED
    m.set_field(page00.PAGE_CHECKSUM,
                page00.checksum(m.peek(covered.page, covered.offset, covered.size)))
    if not has_vendor_page(m):
        return
    m.set_field(vendor.GAIN_MIN, design.gain_min_db)
    m.set_field(vendor.GAIN_MAX, design.gain_max_db)
    m.set_field(vendor.OUTPUT_POWER_MAX, design.output_power_max_dbm)
    m.set_field(vendor.TILT_MIN, design.tilt_min_db)
    m.set_field(vendor.TILT_MAX, design.tilt_max_db)
    m.set_field(vendor.PUMP_COUNT, design.pump_count)
    m.set_field(vendor.PUMP_CURRENT_MAX, design.pump_current_max_ma)


def write_thresholds(memory: PagedMemory, thresholds: Thresholds) -> None:
    """Page 02h for the monitors the module advertises (none: nothing is set)."""
    if not module_monitors(memory):
        return
    for fields, values in ((page02.TEMPERATURE, thresholds.temperature_celsius),
                           (page02.VCC, thresholds.vcc_volts),
                           (page02.RX_POWER, thresholds.rx_power_milliwatts)):
        for f, value in zip(fields, values, strict=True):
            memory.set_field(f, value)


@dataclass
class Controls:
    """What the host has asked for, decoded from the rw bytes."""

    low_power_request: bool = False
    output_enable: bool = True
    constant_power: bool = False
    target_gain_db: float = 20.0
    target_output_dbm: float = 10.0
    target_tilt_db: float = 0.0
    als_mode: int = 1
    als_los_soak_seconds: float = 0.5
    als_restart_interval_seconds: float = 100.0
    als_restart_pulse_seconds: float = 2.0
    los_threshold_dbm: float = -30.0
    pump_current_limit_ma: float = 350.0
    pump_temperature_limit_celsius: float = 35.0
    back_reflection_limit_db: float = -25.0
    tx_disable: bool = False
    data_path_deinit: bool = False


DEFAULTS = Controls()

_NUMERIC = (
    (vendor.TARGET_GAIN, "target_gain_db"),
    (vendor.TARGET_OUTPUT_POWER, "target_output_dbm"),
    (vendor.TARGET_TILT, "target_tilt_db"),
    (vendor.ALS_MODE, "als_mode"),
    (vendor.ALS_LOS_SOAK, "als_los_soak_seconds"),
    (vendor.ALS_RESTART_INTERVAL, "als_restart_interval_seconds"),
    (vendor.ALS_RESTART_PULSE, "als_restart_pulse_seconds"),
    (vendor.LOS_THRESHOLD, "los_threshold_dbm"),
    (vendor.PUMP_CURRENT_LIMIT, "pump_current_limit_ma"),
    (vendor.PUMP_TEMPERATURE_LIMIT, "pump_temperature_limit_celsius"),
    (vendor.BACK_REFLECTION_LIMIT, "back_reflection_limit_db"),
)


def write_controls(memory: PagedMemory, controls: Controls) -> None:
    """Put ``controls`` in the rw bytes (at power-up and reset: the defaults)."""
    m = memory
    m.poke(LOWER, lower.MODULE_CONTROL.offset,
           bytes((lower.LOW_POWER_REQUEST_SW if controls.low_power_request else 0,)))
    m.poke(LOWER, lower.MASKS.offset, bytes(lower.MASKS.size))
    m.select_page_00h()
    m.set_field(page10.DATA_PATH_DEINIT, int(controls.data_path_deinit))
    m.set_field(page10.TX_DISABLE, int(controls.tx_disable))
    if not has_vendor_page(m):
        return
    m.set_field(vendor.OUTPUT_ENABLE, int(controls.output_enable))
    m.set_field(vendor.MODE, int(controls.constant_power))
    for f, name in _NUMERIC:
        m.set_field(f, getattr(controls, name))
    m.set_field(vendor.AMP_FLAG_MASK, 0)


def _value(memory: PagedMemory, f: Field) -> float:
    return memory.raw(f) * f.scale


def read_controls(memory: PagedMemory) -> Controls:
    """The controls as the host has set them; without the vendor page, the amplifier's own
    are the defaults, which no host can change."""
    m = memory
    controls = Controls(
        low_power_request=bool(m.raw(lower.MODULE_CONTROL) & lower.LOW_POWER_REQUEST_SW),
        tx_disable=bool(m.raw(page10.TX_DISABLE) & 0x01),
        data_path_deinit=bool(m.raw(page10.DATA_PATH_DEINIT) & 0x01),
    )
    if not has_vendor_page(m):
        return controls
    controls.output_enable = bool(m.raw(vendor.OUTPUT_ENABLE))
    controls.constant_power = m.raw(vendor.MODE) == 1
    for f, name in _NUMERIC:
        setattr(controls, name, _value(m, f))
    controls.als_mode = int(controls.als_mode)
    return controls


def refuse_invalid(memory: PagedMemory, previous: Controls) -> None:
    """Put back controls the host set to a value the module does not implement.

    The amplifier mode has two values (bits 2-1 = 2 or 3 are refused), ALS
    three modes, and a restart interval or pulse of 0 is refused. Targets
    outside the module's range are accepted as written: the module does its
    best and flags gain_out_of_range, as CMIS amplifiers do.
    """
    m = memory
    if not has_vendor_page(m):
        return
    if m.raw(vendor.MODE) not in vendor.MODES:
        m.set_field(vendor.MODE, int(previous.constant_power))
    if m.raw(vendor.ALS_MODE) not in vendor.ALS_MODES:
        m.set_field(vendor.ALS_MODE, previous.als_mode)
    if m.raw(vendor.ALS_RESTART_INTERVAL) == 0:
        m.set_field(vendor.ALS_RESTART_INTERVAL, previous.als_restart_interval_seconds)
    if m.raw(vendor.ALS_RESTART_PULSE) == 0:
        m.set_field(vendor.ALS_RESTART_PULSE, previous.als_restart_pulse_seconds)


@dataclass(frozen=True)
class Snapshot:
    """The live values the module shows at one instant."""

    module_state: int
    interrupt: bool
    fault_cause: int
    temperature_celsius: float
    vcc_volts: float
    input_dbm: float
    output_dbm: float
    gain_db: float | None
    tilt_db: float | None
    pump_currents_ma: tuple[float, float]
    pump_temperature_celsius: float | None
    back_reflection_db: float | None
    als_state: int
    status: int
    data_path_state: int  # lane 1


def _clamped(f: Field, value: float) -> float:
    limit = (1 << (8 * f.size)) - 1
    low, high = ((-(limit + 1) // 2 + 1) * f.scale, (limit // 2) * f.scale) if f.kind == "s16" \
        else (0.0, limit * f.scale)
    return min(max(value, low), high)


def _set_reading(memory: PagedMemory, f: Field, value: float | None) -> None:
    if value is None or math.isnan(value):
        memory.poke(f.page, f.offset, (vendor.NO_READING & 0xFFFF).to_bytes(2, "big"))
    else:
        memory.set_field(f, _clamped(f, value))


def _milliwatts(dbm: float) -> float:
    return 0.0 if dbm == -math.inf else 10.0 ** (dbm / 10.0)


def write_snapshot(memory: PagedMemory, snap: Snapshot) -> None:
    m = memory
    m.set_field(lower.MODULE_STATE, snap.module_state)
    m.set_field(lower.INTERRUPT_DEASSERTED, 0 if snap.interrupt else 1)
    m.set_field(lower.FAULT_CAUSE, snap.fault_cause)
    if module_monitors(m):
        m.set_field(lower.TEMPERATURE, _clamped(lower.TEMPERATURE, snap.temperature_celsius))
        m.set_field(lower.VCC, _clamped(lower.VCC, snap.vcc_volts))
    control = m.raw(lower.MODULE_CONTROL)
    m.poke(LOWER, lower.MODULE_CONTROL.offset,
           bytes((control & ~lower.SOFTWARE_RESET,)))  # self-clearing
    # Lane 1 of pages 10h/11h stands for the amplifier's one optical path; lanes 2-8 are
    # in no data path (nibbles: lane 1 in bits 3-0 of byte 128).
    states = [snap.data_path_state] + [DEACTIVATED] * (LANES - 1)
    m.poke(page11.P, page11.DATA_PATH_STATES.offset,
           bytes(states[i] | states[i + 1] << 4 for i in range(0, LANES, 2)))
    if rx_power_monitor(m):
        m.set_field(page11.RX_POWER_LANE1, rx_power_milliwatts(snap.input_dbm))
    if not has_vendor_page(m):
        return
    _set_reading(m, vendor.INPUT_POWER, snap.input_dbm)
    _set_reading(m, vendor.OUTPUT_POWER, snap.output_dbm)
    _set_reading(m, vendor.ACTUAL_GAIN, snap.gain_db)
    _set_reading(m, vendor.ACTUAL_TILT, snap.tilt_db)
    m.set_field(vendor.PUMP1_CURRENT, _clamped(vendor.PUMP1_CURRENT, snap.pump_currents_ma[0]))
    m.set_field(vendor.PUMP2_CURRENT, _clamped(vendor.PUMP2_CURRENT, snap.pump_currents_ma[1]))
    _set_reading(m, vendor.PUMP_TEMPERATURE, snap.pump_temperature_celsius)
    _set_reading(m, vendor.BACK_REFLECTION, snap.back_reflection_db)
    m.set_field(vendor.ALS_STATE, snap.als_state)
    m.set_field(vendor.AMP_STATUS, snap.status)


def rx_power_milliwatts(input_dbm: float) -> float:
    """The lane 1 Rx power reading of this input, clamped to what the register holds."""
    return _clamped(page11.RX_POWER_LANE1, _milliwatts(input_dbm))


def flags_rx_power(memory: PagedMemory, milliwatts: float) -> tuple[int, int, int, int]:
    """Lane 1 bits of page 11h bytes 149-152 (Rx power high alarm, low alarm, high
    warning, low warning) for this reading against the page 02h Rx power thresholds."""
    high_alarm, low_alarm, high_warning, low_warning = (_value(memory, f)
                                                        for f in page02.RX_POWER)
    return (int(milliwatts > high_alarm), int(milliwatts < low_alarm),
            int(milliwatts > high_warning), int(milliwatts < low_warning))


def flags_temperature_vcc(memory: PagedMemory, temperature: float, vcc: float) -> int:
    """Byte 9 bits for these readings against the page 02h thresholds."""
    bits = 0
    for base, fields, value in ((0, page02.TEMPERATURE, temperature), (4, page02.VCC, vcc)):
        high_alarm, low_alarm, high_warning, low_warning = (_value(memory, f) for f in fields)
        bits |= (value > high_alarm) << base
        bits |= (value < low_alarm) << (base + 1)
        bits |= (value > high_warning) << (base + 2)
        bits |= (value < low_warning) << (base + 3)
    return bits


def interrupt_asserted(memory: PagedMemory) -> bool:
    """Whether any latched flag is set and not masked (byte 3 bit 0 is its inverse)."""
    m = memory
    masks = m.peek(LOWER, lower.MASKS.offset, 4)
    module_flags = m.peek(LOWER, lower.FLAGS_MODULE.offset, 4)
    if any(flag & ~mask for flag, mask in zip(module_flags, masks, strict=True)):
        return True
    if has_vendor_page(m) and m.raw(vendor.AMP_FLAGS) & ~m.raw(vendor.AMP_FLAG_MASK):
        return True
    lane = page11.LANE_FLAGS
    return any(m.peek(lane.page, lane.offset, lane.size))
