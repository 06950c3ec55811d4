"""The CMIS module API: identity, status, thresholds, flags, the module state machine.

Everything goes through one :class:`~drivers.cmis.io.CmisIo`. Reads are
grouped (:mod:`.reads`); latched flags are read only by
:meth:`CmisModule.read_and_clear_flags`. Waiting for a state change uses the
duration the module advertises on page 01h, polling the state byte — never
a fixed sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from drivers.cmis import codes
from drivers.cmis.advertisement import (
    ALWAYS_PAGED,
    Advertisement,
    PageSet,
    bit_names,
    decode_applications,
    duration_seconds,
    media_type_name,
    page_set,
)
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.io import CmisIo, latched_bytes
from drivers.cmis.pages import STANDARD_FIELDS, lower, page00, page01, page02, page10, page11
from drivers.cmis.reads import plan_reads
from drivers.errors import (
    DeviceError,
    DeviceTimeout,
    ProtocolError,
    Unsupported,
    ValidationError,
    VerificationFailed,
)

STATE_POLL_FRACTION = 0.1
"""Poll the state this often, as a fraction of the advertised duration."""

MIN_POLL_SECONDS = 0.001


@dataclass(frozen=True)
class ModuleIdentity:
    identifier: str | None
    cmis_revision: str | None
    vendor: str | None
    vendor_oui: str | None
    part_number: str | None
    vendor_revision: str | None  # page 00h 164-165, the vendor's revision of the part number
    hardware_revision: str | None
    serial: str | None
    date_code: str | None
    clei: str | None
    firmware: str | None
    power_class: int | None
    max_power_watts: float | None
    connector: str | None  # page 00h 203, SFF-8024 Table 4-3: "LC", ...
    media_interface_technology: str | None  # page 00h 212: "others", "1550 nm DFB", ...
    checksum_valid: bool | None  # page 00h 222 against bytes 128-221; None: unreadable


@dataclass(frozen=True)
class ModuleStatus:
    state: str | None  # CMIS name, e.g. "ModuleReady"
    temperature_celsius: float | None
    vcc_volts: float | None
    interrupt: bool | None
    fault_cause: str | None


@dataclass(frozen=True)
class Threshold:
    high_alarm: float | None
    low_alarm: float | None
    high_warning: float | None
    low_warning: float | None

    def evaluate(self, value: float | None) -> str | None:
        """``"high alarm"``, ..., or ``None`` when ``value`` is within every limit."""
        if value is None:
            return None
        for name, limit, above in (("high alarm", self.high_alarm, True),
                                   ("low alarm", self.low_alarm, False),
                                   ("high warning", self.high_warning, True),
                                   ("low warning", self.low_warning, False)):
            if limit is not None and (value > limit if above else value < limit):
                return name
        return None


@dataclass(frozen=True)
class Features:
    """What page 01h bytes 155-160 advertise that decides what the driver reads and writes:
    Tx disable, and which module and lane monitors are implemented (CMIS 5.2 section 8.4).
    A flat-memory module has no page 01h and advertises none of them."""

    tx_disable: bool
    module_monitors: tuple[str, ...]  # page01.MODULE_MONITOR_BITS names
    lane_monitors: tuple[str, ...]  # page01.LANE_MONITOR_BITS names
    tx_bias_multiplier: int | None  # byte 160 bits 4-3: the Tx bias step is 2 uA times this


NO_FEATURES = Features(False, (), (), None)


@dataclass(frozen=True)
class LaneMonitors:
    """Lane 1's monitors (page 11h); ``None`` for a monitor the module does not implement
    (page 01h byte 160), which is then not read."""

    tx_bias_milliamperes: float | None
    tx_power_milliwatts: float | None
    rx_power_milliwatts: float | None


@dataclass(frozen=True)
class Durations:
    power_up_seconds: float
    power_down_seconds: float


@dataclass(frozen=True)
class LaneStatus:
    """Pages 10h and 11h of bank 0, lanes 1-8 (index 0 is lane 1)."""

    data_path_states: tuple[str | None, ...]  # codes.DATA_PATH_STATES names
    tx_disabled: tuple[bool | None, ...]  # page 10h byte 130, as the host set it
    active_applications: tuple[int | None, ...]  # AppSel code in use, 0: in no data path


def _nibbles(raw: Any) -> tuple[int | None, ...]:
    data = bytes.fromhex(raw) if isinstance(raw, str) else b""
    if 2 * len(data) != codes.LANES:
        return (None,) * codes.LANES
    return tuple(data[lane // 2] >> (4 * (lane % 2)) & 0x0F for lane in range(codes.LANES))


def _lane_bits(raw: Any) -> tuple[bool | None, ...]:
    if not isinstance(raw, int):
        return (None,) * codes.LANES
    return tuple(bool(raw >> lane & 1) for lane in range(codes.LANES))



class CmisModule:
    """One CMIS module behind ``io``.

    ``sleep`` and ``monotonic`` are how the host waits; tests that run the
    module emulator on a stepped clock pass functions that step it.
    """

    def __init__(
        self,
        io: CmisIo,
        *,
        name: str,
        extra_fields: Iterable[Field] = (),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.io = io
        self.name = name
        self.fields = (*STANDARD_FIELDS, *extra_fields)
        self.latched = latched_bytes(self.fields)
        self.sleep = sleep
        self.monotonic = monotonic
        self._identity: ModuleIdentity | None = None
        self._features: Features | None = None
        self._durations: Durations | None = None
        self._pages: PageSet | None = None
        self._flat: bool | None = None
        self.extra_pages = frozenset(f.page for f in extra_fields if f.page != LOWER)
        """The custom pages of ``extra_fields``."""
        self.extra_pages_if: Callable[[ModuleIdentity], bool] | None = None
        """Custom pages (those of ``extra_fields``) are not advertised by CMIS: when this is
        set, the module has them only if its identity (page 00h) passes it; unset, it is
        taken to have them (a caller that knows the module)."""

    def has_extra_pages(self) -> bool:
        """Whether the module has the pages of ``extra_fields``: paged memory, and an
        identity that ``extra_pages_if`` accepts (reads page 00h once, if it is set)."""
        if not self.extra_pages or self._flat_memory():
            return False
        return self.extra_pages_if is None or self.extra_pages_if(self.identity())

    def close(self) -> None:
        self.io.close()

    # ---- reading ---------------------------------------------------------------------

    def read_fields(self, fields: Iterable[Field]) -> dict[str, Any]:
        """Decoded values of ``fields`` by name, in as few transactions as allowed.

        Latched fields may be named here only by the read-and-clear path.
        """
        values: dict[str, Any] = {}
        for block in plan_reads(fields, self.latched):
            self.check_page(block.page)
            with self._named():
                data = self.io.read(block.page, block.start, block.length)
            if len(data) != block.length:
                raise ProtocolError(f"asked for {block.length} bytes, got {len(data)}",
                                    device=self.name)
            for item in block.fields:
                values[item.name] = item.decode(data, block.start)
        return values

    def read_raw(self, page: int, offset: int, length: int, *, bank: int = 0) -> bytes:
        self.check_page(page, bank)
        with self._named():
            return self.io.read(page, offset, length, bank=bank)

    def write_raw(self, page: int, offset: int, data: bytes, *, bank: int = 0) -> None:
        self.check_page(page, bank)
        with self._named():
            self.io.write(page, offset, data, bank=bank)

    # ---- which pages exist ------------------------------------------------------------

    def pages(self) -> PageSet:
        """The pages the module has: lower byte 2 (flat or paged), then page 01h byte 142
        (CMIS 5.2 section 8.4), plus the pages of ``extra_fields``. Read once, kept until a
        reset."""
        if self._pages is None:
            flat = self._flat_memory()
            supported = None
            if not flat:
                with self._named():
                    supported = self.io.read(page01.P, page01.SUPPORTED_PAGES.offset, 1)[0]
            extra = self.extra_pages if not flat and self.has_extra_pages() else frozenset()
            self._pages = page_set(flat=flat, supported_pages=supported, extra=extra)
        return self._pages

    def _flat_memory(self) -> bool:
        if self._flat is None:
            with self._named():
                byte = self.io.read(LOWER, lower.FLAT_MEMORY.offset, 1)[0]
            self._flat = bool(byte & lower.FLAT_MEMORY.mask)
        return self._flat

    def check_page(self, page: int, bank: int = 0) -> None:
        """Raise ValidationError, before any byte of it is read or written, for a page (or
        bank) the module does not have.

        A transport cannot always tell another page's bytes from the requested ones: optoe
        selects pages in the kernel and does not check what the module selected, and a
        module shows page 00h in place of a page it refuses. So the driver asks for no page
        the module does not advertise. Lower memory and page 00h always exist; the pages
        every paged module has and the pages of ``extra_fields`` need only lower byte 2
        (paged memory); any other page or bank is looked up on page 01h byte 142.
        """
        if page == LOWER or (page == 0x00 and bank == 0):
            return
        if not self._flat_memory() and bank == 0 and page in ALWAYS_PAGED:
            return
        if page in self.extra_pages and bank == 0 and not self._flat_memory():
            if self.has_extra_pages():
                return
            identity = self.identity()
            raise ValidationError(
                f"page {page:02X}h is a custom page that this module does not carry: CMIS "
                f"does not advertise custom pages, and the module identifies as "
                f"{identity.vendor or '?'} {identity.part_number or '?'}, not as one that "
                f"has it", device=self.name)
        known = self.pages()
        if not known.has(page, bank):
            listed = ", ".join(f"{p:02X}h" for p in sorted(known.pages))
            raise ValidationError(
                f"page {page:02X}h bank {bank} is not one this module has "
                f"({'flat memory' if known.flat else 'paged'}: {listed}; "
                f"{known.banks} bank{'s' if known.banks > 1 else ''})", device=self.name)

    @contextmanager
    def _named(self) -> Iterator[None]:
        """Errors from below carry this module's name."""
        try:
            yield
        except DeviceError as error:
            if error.device is None:
                error.device = self.name
            raise

    # ---- identity and status -------------------------------------------------------------

    def identity(self) -> ModuleIdentity:
        if self._identity is None:
            hardware = [] if self._flat_memory() else [page01.HARDWARE_MAJOR,
                                                       page01.HARDWARE_MINOR]
            v = self.read_fields([lower.IDENTIFIER, lower.REVISION_MAJOR, lower.REVISION_MINOR,
                                  lower.FIRMWARE_MAJOR, lower.FIRMWARE_MINOR, *page00.FIELDS,
                                  *hardware])
            major, minor = v["revision_major"], v["revision_minor"]
            power_class = v["power_class"]
            covered, stated = v["checksummed"], v["page_checksum"]
            valid = None if covered is None or stated is None else \
                page00.checksum(bytes.fromhex(covered)) == stated
            self._identity = ModuleIdentity(
                identifier=codes.name_of(codes.IDENTIFIERS, v["identifier"]),
                cmis_revision=None if major is None else f"{major}.{minor}",
                vendor=v["vendor_name"] or None,
                vendor_oui=v["vendor_oui"],
                part_number=v["part_number"] or None,
                vendor_revision=v["revision"] or None,
                hardware_revision=None if not hardware else
                f"{v['hardware_major']}.{v['hardware_minor']}",
                serial=v["serial"] or None,
                date_code=v["date_code"] or None,
                clei=v["clei"] or None,
                firmware=f"{v['firmware_major']}.{v['firmware_minor']}",
                power_class=None if power_class is None else int(power_class) + 1,
                max_power_watts=v["max_power"],
                connector=codes.connector_name(v["connector_type"]),
                media_interface_technology=codes.name_of(codes.MEDIA_INTERFACE_TECHNOLOGIES,
                                                         v["media_interface_technology"]),
                checksum_valid=valid,
            )
        return self._identity

    STATUS_FIELDS = (lower.MODULE_STATE, lower.INTERRUPT_DEASSERTED, lower.TEMPERATURE,
                     lower.VCC)
    """Every field a status may read; :meth:`status_fields` leaves out the monitors the
    module does not implement."""

    MODULE_MONITOR_FIELDS: ClassVar[dict[str, Field]] = {"temperature": lower.TEMPERATURE,
                                                         "vcc": lower.VCC}

    def status_fields(self) -> tuple[Field, ...]:
        """The fields of a status read: the module state, and temperature and Vcc only where
        page 01h byte 159 says the module implements them (a monitor it does not implement
        reads as whatever the module leaves there: it is not read, and is ``None``)."""
        implemented = self.features().module_monitors
        return (lower.MODULE_STATE, lower.INTERRUPT_DEASSERTED,
                *(f for name, f in self.MODULE_MONITOR_FIELDS.items() if name in implemented))

    def status_from(self, values: dict[str, Any]) -> ModuleStatus:
        state = codes.name_of(codes.MODULE_STATES, values.get("module_state"))
        fault = None
        if state == "ModuleFault":
            cause = self.read_fields([lower.FAULT_CAUSE])["fault_cause"]
            fault = codes.fault_cause_name(cause) if isinstance(cause, int) else None
        deasserted = values.get("interrupt_deasserted")
        return ModuleStatus(
            state=state,
            temperature_celsius=values.get("temperature"),
            vcc_volts=values.get("vcc"),
            interrupt=None if deasserted is None else not deasserted,
            fault_cause=fault,
        )

    def status(self) -> ModuleStatus:
        return self.status_from(self.read_fields(self.status_fields()))

    def state(self) -> str | None:
        state: str | None = codes.name_of(codes.MODULE_STATES,
                                          self.read_fields([lower.MODULE_STATE])["module_state"])
        return state

    # ---- thresholds and flags ------------------------------------------------------------

    def thresholds(self) -> dict[str, Threshold]:
        """The page 02h thresholds of the monitors the module implements (page 01h bytes
        159-160), by group; page 02h is not read at all when it implements none."""
        features = self.features()
        implemented = {*features.module_monitors, *features.lane_monitors}
        groups = {group: fields for group, fields in page02.GROUPS.items()
                  if group in implemented}
        values = self.read_fields([f for fields in groups.values() for f in fields]) \
            if groups else {}
        return {group: Threshold(*(values[f.name] for f in fields))
                for group, fields in groups.items()}

    def read_and_clear_flags(self, extra: Iterable[tuple[Field, dict[int, str]]] = ()) -> \
            dict[str, bool]:
        """Read the latched flags, which clears them in the module. Names -> set."""
        groups = [(lower.FLAGS_MODULE, lower.MODULE_FLAG_BITS),
                  (lower.FLAGS_TEMP_VCC, lower.TEMP_VCC_FLAG_BITS), *extra]
        values = self.read_fields([f for f, _ in groups])
        flags: dict[str, bool] = {}
        for item, bits in groups:
            raw = values[item.name]
            for bit, flag in bits.items():
                flags[flag] = bool(isinstance(raw, int) and raw >> bit & 1)
        return flags

    # ---- advertisement and lanes -----------------------------------------------------------

    ADVERTISEMENT_FIELDS = (lower.MEDIA_TYPE, lower.APPLICATIONS, page00.MEDIA_LANE_INFO,
                            page01.SUPPORTED_PAGES, page01.MODULE_CHARACTERISTICS,
                            page01.RX_CHARACTERISTICS,
                            page01.DP_INIT_DURATION, page01.DP_DEINIT_DURATION,
                            page01.CONTROLS_SUPPORT, page01.TX_FLAGS_SUPPORT,
                            page01.RX_FLAGS_SUPPORT, page01.MODULE_MONITOR_SUPPORT,
                            page01.LANE_MONITOR_SUPPORT, page01.DP_TX_TURN_ON_DURATION,
                            page01.DP_TX_TURN_OFF_DURATION, page01.MEDIA_LANE_ASSIGNMENT)

    def advertisement(self) -> Advertisement:
        """What a host's CMIS state machine reads first: MediaType, the application
        descriptors, the media lane assignment, supported pages, controls, flags, monitors
        and the data path durations (CMIS 5.2 sections 8.2 and 8.4)."""
        v = self.read_fields(self.ADVERTISEMENT_FIELDS)
        known = self.pages()
        descriptors = bytes.fromhex(v["applications"]) if v["applications"] else b""
        lanes = bytes.fromhex(v["media_lane_assignment"]) if v["media_lane_assignment"] else b""
        controls, tx_flags, rx_flags = (v["controls_support"], v["tx_flags_support"],
                                        v["rx_flags_support"])
        unsupported, characteristics, rx = (v["media_lane_info"], v["module_characteristics"],
                                            v["rx_characteristics"])
        return Advertisement(
            media_type=media_type_name(v["media_type"]),
            applications=decode_applications(descriptors, lanes),
            pages=tuple(sorted(known.pages)),
            banks=known.banks,
            tx_disable_implemented=bool(isinstance(controls, int)
                                        and controls & page01.TX_DISABLE_IMPLEMENTED),
            tx_fault_flag=bool(isinstance(tx_flags, int)
                               and tx_flags & page01.TX_FAULT_FLAG_SUPPORTED),
            rx_los_flag=bool(isinstance(rx_flags, int)
                             and rx_flags & page01.RX_LOS_FLAG_SUPPORTED),
            module_monitors=bit_names(v["module_monitor_support"], page01.MODULE_MONITOR_BITS),
            lane_monitors=bit_names(v["lane_monitor_support"], page01.LANE_MONITOR_BITS),
            dp_init_seconds=duration_seconds(v["dp_init_duration"]),
            dp_deinit_seconds=duration_seconds(v["dp_deinit_duration"]),
            dp_tx_turn_on_seconds=duration_seconds(v["dp_tx_turn_on_duration"]),
            dp_tx_turn_off_seconds=duration_seconds(v["dp_tx_turn_off_duration"]),
            media_lanes=() if not isinstance(unsupported, int) else tuple(
                lane + 1 for lane in range(codes.LANES) if not unsupported >> lane & 1),
            cooled=None if not isinstance(characteristics, int)
            else bool(characteristics & page01.COOLING_IMPLEMENTED),
            rx_power_measurement=None if not isinstance(rx, int)
            else "average power" if rx & page01.RX_POWER_AVERAGE else "OMA",
            rx_los_measurement=None if not isinstance(rx, int)
            else "average power" if rx & page01.RX_LOS_AVERAGE else "OMA",
        )

    LANE_FIELDS = (page11.DATA_PATH_STATES, page11.ACTIVE_CONTROL_SET, page10.TX_DISABLE)

    def lanes(self) -> LaneStatus:
        """Data path state, Tx disable and active application of lanes 1-8 (bank 0).
        Reads no latched lane flag."""
        v = self.read_fields(self.LANE_FIELDS)
        active = bytes.fromhex(v["active_control_set"]) if v["active_control_set"] else b""
        return LaneStatus(
            data_path_states=tuple(None if code is None else
                                   codes.name_of(codes.DATA_PATH_STATES, code)
                                   for code in _nibbles(v["data_path_states"])),
            tx_disabled=_lane_bits(v["tx_disable"]),
            active_applications=tuple(active[lane] >> 4 if lane < len(active) else None
                                      for lane in range(codes.LANES)),
        )

    def set_tx_disabled(self, lanes: Iterable[int], disabled: bool) -> LaneStatus:
        """Set (or clear) Tx output disable, page 10h byte 130, of ``lanes`` (1-8), leaving
        the other lanes' bits alone; read back. CMIS 5.2 page 10h: Tx disable turns the
        lane's output off without changing its data path state.

        Raises ValidationError, before writing, for a lane outside 1-8, and Unsupported
        when page 01h byte 155 does not advertise Tx disable; VerificationFailed when the
        bits do not read back as written.
        """
        chosen = sorted(set(lanes))
        if not chosen or any(not 1 <= lane <= codes.LANES for lane in chosen):
            raise ValidationError(f"lanes must be 1..{codes.LANES}, got {chosen}",
                                  device=self.name)
        controls = self.read_fields([page01.CONTROLS_SUPPORT])["controls_support"]
        if not (isinstance(controls, int) and controls & page01.TX_DISABLE_IMPLEMENTED):
            raise Unsupported("the module does not advertise Tx disable (page 01h byte "
                                  "155 bit 1)", device=self.name)
        current = self.read_fields([page10.TX_DISABLE])["tx_disable"]
        if not isinstance(current, int):
            raise ProtocolError("Tx disable byte unreadable", device=self.name)
        mask = sum(1 << (lane - 1) for lane in chosen)
        wanted = current | mask if disabled else current & ~mask
        self.write_raw(page10.P, page10.TX_DISABLE.offset, bytes((wanted & 0xFF,)))
        after = self.lanes()
        got = after.tx_disabled
        if any(got[lane - 1] is not disabled for lane in chosen):
            raise VerificationFailed(f"Tx disable of lanes {chosen} reads back "
                                     f"{[got[lane - 1] for lane in chosen]}, wrote {disabled}",
                                     device=self.name)
        return after

    FEATURE_FIELDS = (page01.CONTROLS_SUPPORT, page01.MODULE_MONITOR_SUPPORT,
                      page01.LANE_MONITOR_SUPPORT)

    def features(self) -> Features:
        """Tx disable and the module and lane monitors page 01h advertises (bytes 155-160,
        one read), kept until a reset; a flat-memory module has none and is not asked."""
        if self._features is None:
            if self._flat_memory():
                self._features = NO_FEATURES
            else:
                v = self.read_fields(self.FEATURE_FIELDS)
                controls, lanes = v["controls_support"], v["lane_monitor_support"]
                self._features = Features(
                    tx_disable=bool(isinstance(controls, int)
                                    and controls & page01.TX_DISABLE_IMPLEMENTED),
                    module_monitors=bit_names(v["module_monitor_support"],
                                              page01.MODULE_MONITOR_BITS),
                    lane_monitors=bit_names(lanes, page01.LANE_MONITOR_BITS),
                    tx_bias_multiplier=page01.TX_BIAS_MULTIPLIERS.get(
                        lanes >> page01.TX_BIAS_SCALING_SHIFT & 0x03)
                    if isinstance(lanes, int) else None,
                )
        return self._features

    LANE_MONITOR_FIELDS: ClassVar[dict[str, Field]] = {
        "tx_bias": page11.TX_BIAS_LANE1, "tx_power": page11.TX_POWER_LANE1,
        "rx_power": page11.RX_POWER_LANE1}

    def lane_monitors(self) -> LaneMonitors:
        """Lane 1's Tx bias, Tx power and Rx power (page 11h), each read only where page 01h
        byte 160 says the module implements it, else ``None``; page 11h is not read at all
        when it implements none. The Tx bias is scaled by byte 160 bits 4-3."""
        features = self.features()
        wanted = {name: f for name, f in self.LANE_MONITOR_FIELDS.items()
                  if name in features.lane_monitors}
        v = self.read_fields(wanted.values()) if wanted else {}
        bias = v.get(page11.TX_BIAS_LANE1.name)
        multiplier = features.tx_bias_multiplier
        return LaneMonitors(
            tx_bias_milliamperes=None if bias is None or multiplier is None
            else round(bias * multiplier, 6),
            tx_power_milliwatts=v.get(page11.TX_POWER_LANE1.name),
            rx_power_milliwatts=v.get(page11.RX_POWER_LANE1.name),
        )

    # ---- state machine ---------------------------------------------------------------------

    def durations(self) -> Durations:
        if self._durations is None:
            v = self.read_fields([page01.PWR_UP_DURATION, page01.PWR_DN_DURATION])
            self._durations = Durations(duration_seconds(v["module_pwr_up_duration"]),
                                        duration_seconds(v["module_pwr_dn_duration"]))
        return self._durations

    def set_low_power(self, low: bool) -> str:
        """Request low or high power and wait, as long as the module advertises, for it."""
        control = self.read_fields([lower.MODULE_CONTROL])["module_control"]
        if not isinstance(control, int):
            raise ProtocolError("module control byte unreadable", device=self.name)
        # Never write back a reset bit that a glitch on the bus may have set in our read.
        control &= ~lower.SOFTWARE_RESET
        wanted = control | lower.LOW_POWER_REQUEST_SW if low else \
            control & ~lower.LOW_POWER_REQUEST_SW
        self.write_raw(LOWER, lower.MODULE_CONTROL.offset, bytes((wanted & 0xFF,)))
        durations = self.durations()
        if low:
            return self.wait_for_state({"ModuleLowPwr"}, durations.power_down_seconds)
        return self.wait_for_state({"ModuleReady"}, durations.power_up_seconds)

    def reset(self) -> str:
        """Software reset; wait for the module to come back and reach a steady state."""
        control = self.read_fields([lower.MODULE_CONTROL])["module_control"]
        base = control if isinstance(control, int) else 0
        durations = self.durations()  # now: the module does not answer while it resets
        self.write_raw(LOWER, lower.MODULE_CONTROL.offset,
                       bytes(((base | lower.SOFTWARE_RESET) & 0xFF,)))
        forget = getattr(self.io, "forget_page", None)
        if callable(forget):
            forget()
        self._identity = None
        self._features = None
        self._pages = self._flat = None
        return self.wait_for_state({"ModuleReady", "ModuleLowPwr", "ModuleFault"},
                                   durations.power_down_seconds + durations.power_up_seconds,
                                   tolerate_errors=True)

    def wait_for_state(self, wanted: set[str], advertised_seconds: float, *,
                       tolerate_errors: bool = False) -> str:
        """Poll the state until it is in ``wanted``; give up after the advertised time
        (plus a margin for the bus)."""
        deadline = self.monotonic() + advertised_seconds * 1.5 + 0.05
        interval = max(MIN_POLL_SECONDS, advertised_seconds * STATE_POLL_FRACTION)
        last: str | None = None
        while True:
            try:
                last = self.state()
            except DeviceError:
                if not tolerate_errors:
                    raise
            if last in wanted:
                return last
            if last == "ModuleFault":
                raise DeviceTimeout(f"module went to ModuleFault instead of {sorted(wanted)}",
                                    device=self.name)
            if self.monotonic() >= deadline:
                raise DeviceTimeout(
                    f"module still {last or 'unresponsive'} after the advertised "
                    f"{advertised_seconds:g} s; expected {' or '.join(sorted(wanted))}",
                    device=self.name)
            self.sleep(interval)

    def dump(self, page: int) -> bytes:
        """The raw 128 bytes of ``page`` (LOWER for 0-127), latched bytes included."""
        start = 0 if page == LOWER else 128
        return self.read_raw(page, start, 128)
