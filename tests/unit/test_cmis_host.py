"""The amplifier as a host's CMIS state machine meets it: advertisement, data paths, Tx disable.

The host side is the real driver (CmisModule, AmpDriver) over PagedIo and the i2c-dev
transport (SmbusBus), whose I2C_RDWR transfers the emulator's adapter carries out against
the module's two-wire slave; light goes through the optical model to a receiver. Time is a
stepped clock: the driver's sleeps step it, so the advertised durations are waited in
device time, not real time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis.advertisement import Application
from drivers.cmis.codes import DATA_PATH_STATES, LANES
from drivers.cmis.fields import LOWER
from drivers.cmis.io import PagedIo, latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_FIELDS, lower, page02, page10
from drivers.transports.i2c_smbus import SmbusBus
from emulators.amp import AmplifierModule, I2cSlave
from emulators.amp.i2c_dev import EmulatedAdapter
from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.optics.model import NO_LIGHT_DBM, OpticalModel, Receiver, Source

INPUT_DBM = -10.0
VALID_STATES = frozenset(DATA_PATH_STATES.values())


@dataclass
class Host:
    clock: SteppedClock
    amp: AmplifierModule
    optics: OpticalModel
    module: CmisModule
    driver: AmpDriver

    def received_dbm(self) -> float:
        return self.optics.power_dbm("rx:in")

    def step(self, seconds: float) -> None:
        self.clock.advance(seconds)
        self.amp.update()

    def lane_1(self) -> str | None:
        states = self.module.lanes().data_path_states
        assert set(states) <= VALID_STATES, states  # never a reserved code, on any lane
        return states[0]

    def until_lane_1(self, state: str, *, limit_seconds: float) -> float:
        """Device seconds, in 0.5 ms steps, until lane 1 is in ``state``."""
        waited = 0.0
        while self.lane_1() != state:
            assert waited <= limit_seconds, f"lane 1 not {state} after {waited:.4f} s"
            self.step(0.0005)
            waited += 0.0005
        return waited


@pytest.fixture
def host() -> Iterator[Host]:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    optics.add(Source("src", {"out": INPUT_DBM}))
    amp = AmplifierModule("amp-h", optics)
    optics.add(Receiver("rx", ["in"]))
    optics.patch("src:out", "amp-h:in")
    optics.patch("amp-h:out", "rx:in")
    latched = latched_bytes((*STANDARD_FIELDS, *vp.FIELDS))
    bus = SmbusBus("/dev/i2c-7", smbus=EmulatedAdapter(I2cSlave(amp)))
    module = CmisModule(PagedIo(bus, latched=latched), name="amp-h", extra_fields=vp.FIELDS,
                        sleep=clock.advance, monotonic=clock.now)
    made = Host(clock, amp, optics, module, AmpDriver(module))
    made.step(1.0)  # the gain loop settles
    try:
        yield made
    finally:
        module.close()


def test_the_application_advertisement_is_consistent_and_decodable(host: Host) -> None:
    """CMIS 5.2 section 8.2 (MediaType, byte 85; application descriptors, bytes 86-117,
    ended by HostInterfaceID FFh) and 8.4 (page 01h: media lane assignment from byte 176,
    supported pages byte 142), page 11h active control set (byte 206): one application,
    lane 1, which the active control set shows in use; its lanes, and only they, have a
    data path. Nothing a host's state machine reads contradicts another byte."""
    adv = host.module.advertisement()
    assert adv.media_type == "optical SMF"
    assert adv.applications == (Application(
        code=1, host_interface_id=0xC0, media_interface_id=0xC0, host_lane_count=1,
        media_lane_count=1, host_lane_assignment=0x01, media_lane_assignment=0x01),)
    assert adv.pages == (0x00, 0x01, 0x02, 0x10, 0x11, vp.PAGE) and adv.banks == 1
    lanes = host.module.lanes()
    for app in adv.applications:
        starts = [lane for lane in range(LANES) if app.host_lane_assignment >> lane & 1]
        assert starts and all(start + app.host_lane_count <= LANES for start in starts)
        assert app.media_lane_assignment and app.media_lane_count >= 1
        in_use = [lane for lane in range(LANES) if lanes.active_applications[lane] == app.code]
        assert in_use == list(range(starts[0], starts[0] + app.host_lane_count))
    assert lanes.active_applications == (1, 0, 0, 0, 0, 0, 0, 0)
    assert lanes.data_path_states == ("DPActivated",) + ("DPDeactivated",) * 7
    assert lanes.tx_disabled == (False,) * 8


def host_reader_applications(descriptors: bytes) -> dict[int, tuple[int, int, int, int, int]]:
    """The application list as host readers decode it (SONiC's sonic_xcvr CmisApi, for
    one), written here apart from the driver: descriptors from lower byte 86, four bytes
    each, up to HostInterfaceID FFh, where CMIS 5.2 section 8.2 ends the list, or 00h,
    SFF-8024's "Undefined", which such readers take for the end as well. AppSel code (the
    descriptor's number) -> (host ID, media ID, host lanes, media lanes, host lane
    assignment)."""
    found = {}
    for number in range(1, len(descriptors) // 4 + 1):
        host_id, media_id, counts, assignment = descriptors[4 * number - 4:4 * number]
        if host_id in (0xFF, 0x00):
            break
        found[number] = (host_id, media_id, counts >> 4, counts & 0x0F, assignment)
    return found


def test_a_host_reader_decodes_the_application_the_module_has_in_use(host: Host) -> None:
    """CMIS 5.2 section 8.2 (application descriptors, lower bytes 86-117) and page 11h
    bytes 206-213 (active control set, AppSel in bits 7-4 of each lane's byte): what a
    host reader decodes is what the module runs: AppSel 1, on lane 1 and no other lane,
    its host lane count and start lane those of descriptor 1. Its IDs are in SFF-8024's
    custom range (C0h-FEh): neither the end of the list (FFh) nor "Undefined" (00h)."""
    assert host_reader_applications(bytes((0x00, 0x00, 0x11, 0x01)) + b"\xff" * 28) == {}, \
        "the reader must end the list at an undefined host ID, as host readers do"
    descriptors = host.module.read_raw(LOWER, 86, 32)
    applications = host_reader_applications(descriptors)
    active = host.module.read_raw(0x11, 206, 8)
    in_use = {lane + 1: active[lane] >> 4 for lane in range(LANES) if active[lane] >> 4}
    assert in_use == {1: 1}
    assert applications == {1: (0xC0, 0xC0, 1, 1, 0x01)}
    for appsel in set(in_use.values()):
        _host, _media, host_lanes, _media_lanes, starts = applications[appsel]
        lanes = sorted(lane for lane, code in in_use.items() if code == appsel)
        assert starts >> (lanes[0] - 1) & 1 and len(lanes) == host_lanes
    assert 0xC0 <= descriptors[0] <= 0xFE and 0xC0 <= descriptors[1] <= 0xFE
    assert descriptors[4] == 0xFF  # descriptor 2: the end of the list
    own = {a.code: (a.host_interface_id, a.media_interface_id, a.host_lane_count,
                    a.media_lane_count, a.host_lane_assignment)
           for a in host.module.advertisement().applications}
    assert own == applications


def test_the_identity_bytes_tell_an_lc_connected_c_band_edfa(host: Host) -> None:
    """Every identity and advertising byte from what the module is, checked against the
    standards' code tables, byte by byte (not through the driver's tables)."""
    head = host.module.read_raw(LOWER, 0, 3)
    assert head[0] == 0x18  # SFF-8024 Table 4-1: QSFP-DD
    assert head[1] == 0x52  # CMIS 5.2
    assert head[2] & 0x80 == 0  # CMIS 5.2 section 8.2.1: paged memory
    assert head[2] & 0x0C == 0  # bits 3-2: management interface up to 400 kHz
    assert host.module.read_raw(LOWER, 85, 1) == b"\x02"  # MediaType 02h: optical SMF
    admin = host.module.read_raw(0x00, 128, 128)

    def at(address: int) -> int:
        return admin[address - 128]

    assert at(128) == 0x18  # the identifier again
    assert admin[1:17].decode().strip() == "MegaScaleOut"
    assert admin[20:36].decode().strip().startswith("MSO-EDFA-")
    assert at(202) == 0x00  # CMIS 5.2 section 8.3: no cable assembly length, separable
    assert at(203) == 0x07  # SFF-8024 Table 4-3: 07h, LC (00h would be "unknown")
    assert at(210) == 0xFE  # CMIS 5.2 section 8.3: media lanes 2-8 not supported
    # CMIS 5.2 section 8.3, Media Interface Technology: 08h "Others"; not 00h (850 nm
    # VCSEL) nor 10h (C-band tunable laser): the module's one laser is its pump
    assert at(212) == 0x08
    assert at(222) == sum(admin[:94]) & 0xFF  # page checksum over bytes 128-221
    adv = host.module.read_raw(0x01, 138, 23)  # bytes 138-160

    def at01(address: int) -> int:
        return adv[address - 138]

    assert (at01(138), at01(139)) == (0, 0)  # no nominal wavelength: not a transmitter
    assert at01(142) == 0x00  # bank 0, no optional page
    assert at01(145) & 0x80  # CoolingImplemented: the pump is held by its TEC
    assert at01(151) == 0x18  # PIN detector; Rx power and Rx LOS on average power
    assert at01(155) & 0x02  # Tx disable implemented
    assert at01(159) == 0x03  # temperature and Vcc monitors
    assert at01(160) == 0x04  # lane Rx power monitor, the 2 uA bias step unscaled


def test_the_data_path_follows_the_module_state_within_the_advertised_durations(
        host: Host) -> None:
    """CMIS 5.2 section 6.3.3 (data path state machine) and page 01h bytes 144 and 168
    (MaxDurationDPInit, DPDeinit, DPTxTurnOn, DPTxTurnOff): every lane's nibble on page 11h
    bytes 128-131 is a valid state at every step; lane 1 is DPDeactivated in low power,
    passes DPInit and DPTxTurnOn to DPActivated when the module is ready, and goes through
    DPTxTurnOff and DPDeinit to DPDeactivated when the host sets DataPathDeinit. Light
    leaves the amplifier only in DPActivated."""
    adv = host.module.advertisement()
    assert host.module.set_low_power(True) == "ModuleLowPwr"
    assert host.lane_1() == "DPDeactivated" and host.received_dbm() == NO_LIGHT_DBM
    host.module.write_raw(LOWER, lower.MODULE_CONTROL.offset, b"\x00")  # high power
    while host.module.state() != "ModuleReady":
        assert host.lane_1() == "DPDeactivated"  # through ModulePwrUp
        host.step(0.0005)
    seen = [host.lane_1()]
    up = 0.0
    while seen[-1] != "DPActivated":
        assert host.received_dbm() == NO_LIGHT_DBM
        host.step(0.0005)
        up += 0.0005
        if host.lane_1() != seen[-1]:
            seen.append(host.lane_1())
    # DPInitialized lasts no time on the way up: the host asks for no pause there
    assert [s for s in seen if s != "DPDeactivated"] == ["DPInit", "DPTxTurnOn", "DPActivated"]
    assert up <= adv.dp_init_seconds + adv.dp_tx_turn_on_seconds + 0.001
    host.step(0.2)
    assert host.received_dbm() > 0.0

    host.module.write_raw(page10.P, page10.DATA_PATH_DEINIT.offset, b"\x01")
    assert host.lane_1() in ("DPTxTurnOff", "DPInitialized", "DPDeinit", "DPDeactivated")
    assert host.received_dbm() == NO_LIGHT_DBM  # dark from the first step down
    down = host.until_lane_1("DPDeactivated", limit_seconds=1.0)
    assert down <= adv.dp_tx_turn_off_seconds + adv.dp_deinit_seconds + 0.001
    host.step(1.0)
    assert host.lane_1() == "DPDeactivated" and host.received_dbm() == NO_LIGHT_DBM
    host.module.write_raw(page10.P, page10.DATA_PATH_DEINIT.offset, b"\x00")
    host.until_lane_1("DPActivated", limit_seconds=adv.dp_init_seconds
                      + adv.dp_tx_turn_on_seconds + 0.001)
    host.step(0.2)
    assert host.received_dbm() > 0.0


def test_a_reset_or_a_fault_deactivates_the_data_path(host: Host) -> None:
    """CMIS 5.2 section 6.3.3: the data path state machine runs in ModuleReady only; a reset
    and ModuleFault leave every data path DPDeactivated (and never a reserved code)."""
    host.module.write_raw(LOWER, lower.MODULE_CONTROL.offset, bytes((lower.SOFTWARE_RESET,)))
    host.step(host.amp.reset_seconds + 0.001)  # answering again, in ModulePwrUp
    assert host.module.state() == "ModulePwrUp"
    assert host.lane_1() == "DPDeactivated"
    host.until_lane_1("DPActivated", limit_seconds=host.amp.pwr_up_seconds + 0.1)
    host.amp.faults.inject(Fault("pump"))
    assert host.module.state() == "ModuleFault"
    assert host.lane_1() == "DPDeactivated"


def test_tx_disable_darkens_the_output_and_leaves_the_data_path(host: Host) -> None:
    """CMIS 5.2 page 10h byte 130 (Tx output disable, lane 1 in bit 0), advertised by page
    01h byte 155 bit 1: a host that disables Tx expects no light. The output goes dark at
    once -- downstream sees no light -- while the data path stays DPActivated (Tx disable
    is not a data path transition); enabling it brings the light back."""
    assert host.module.advertisement().tx_disable_implemented
    lit = host.received_dbm()
    assert lit > 0.0
    path = host.driver.set_tx_disabled(True)
    assert (path.tx_disabled, path.data_path_state) == (True, "DPActivated")
    assert host.received_dbm() == NO_LIGHT_DBM
    host.step(5.0)
    assert host.received_dbm() == NO_LIGHT_DBM
    assert host.driver.optical_path().data_path_state == "DPActivated"
    assert host.driver.status().monitors.als_state == "output-disabled"
    path = host.driver.set_tx_disabled(False)
    assert (path.tx_disabled, path.data_path_state) == (False, "DPActivated")
    host.step(0.2)
    assert host.received_dbm() == pytest.approx(lit, abs=0.05)


def test_page_02h_holds_thresholds_for_every_advertised_monitor(host: Host) -> None:
    """CMIS 5.2 section 8.4 (page 01h bytes 159-160, implemented monitors) and page 02h
    (thresholds): each advertised monitor has four thresholds, high above low, and the
    driver gives exactly those; a group of a monitor not advertised is all zero on the
    page; no aux monitor is advertised and the aux monitor bytes (lower 18-23) read 0."""
    adv = host.module.advertisement()
    assert adv.module_monitors == ("temperature", "vcc")
    assert adv.lane_monitors == ("rx_power",)
    limits = host.module.thresholds()
    assert set(limits) == {"temperature", "vcc", "rx_power"}
    for group, limit in limits.items():
        assert limit.high_alarm > limit.high_warning > limit.low_warning > limit.low_alarm, \
            group
    for group in set(page02.GROUPS) - set(limits):
        first = page02.GROUPS[group][0].offset
        assert host.module.read_raw(0x02, first, 8) == bytes(8), group
    aux = host.module.read_fields([lower.AUX1, lower.AUX2, lower.AUX3])
    assert set(aux.values()) == {0}
    assert host.module.read_raw(LOWER, lower.AUX1.offset, 6) == bytes(6)
