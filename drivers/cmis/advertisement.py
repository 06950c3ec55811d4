"""What a module advertises: its applications, pages, controls and monitors.

Decoding only (bytes in, typed values out); :class:`~drivers.cmis.module.CmisModule`
reads the bytes. Sources: CMIS 5.2 section 8.2 (lower memory: MediaType, byte 85,
and the application descriptors, bytes 86-117), section 8.3 (page 00h: the media
lanes a module has, byte 210) and section 8.4 (page 01h: supported pages, byte
142; module characteristics, 145; Rx characteristics, 151; controls, 155; flags,
157-158; monitors, 159-160; media lane assignment, 176-183).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from drivers.cmis import codes
from drivers.cmis.pages import page01

ALWAYS_PAGED = frozenset({0x00, 0x01, 0x02, 0x10, 0x11})
"""Pages every module with paged memory has (CMIS 5.2 section 8.1)."""

BANKED_PAGES = range(0x10, 0x40)
"""Lane pages (10h-3Fh) repeat per bank of 8 lanes; other pages exist in bank 0 only."""


@dataclass(frozen=True)
class Application:
    """One application descriptor: what the module can run on which lanes."""

    code: int  # AppSel code: 1 for the first descriptor
    host_interface_id: int  # SFF-8024 host electrical interface code
    media_interface_id: int  # SFF-8024 code from the table MediaType names
    host_lane_count: int  # 0: as the interface ID defines it
    media_lane_count: int
    host_lane_assignment: int  # bit n: the host lanes may start at lane n+1
    media_lane_assignment: int | None  # page 01h; None when page 01h was not read


def decode_applications(descriptors: bytes, media_lane_assignment: bytes = b""
                        ) -> tuple[Application, ...]:
    """Descriptors (4 bytes each) up to the first HostInterfaceID FFh.

    ``media_lane_assignment`` is page 01h bytes 176.. (one byte per application);
    an application beyond it gets ``None`` there.
    """
    found = []
    for index in range(len(descriptors) // 4):
        host, media, counts, assignment = descriptors[4 * index:4 * index + 4]
        if host == codes.END_OF_APPLICATIONS:
            break
        found.append(Application(
            code=index + 1, host_interface_id=host, media_interface_id=media,
            host_lane_count=counts >> 4, media_lane_count=counts & 0x0F,
            host_lane_assignment=assignment,
            media_lane_assignment=media_lane_assignment[index]
            if index < len(media_lane_assignment) else None))
    return tuple(found)


@dataclass(frozen=True)
class PageSet:
    """The pages (and banks) a module has, as it advertises them."""

    flat: bool
    pages: frozenset[int]
    banks: int  # number of banks of the lane pages, 1..4

    def has(self, page: int, bank: int = 0) -> bool:
        if page not in self.pages:
            return False
        if bank == 0:
            return True
        return page in BANKED_PAGES and 0 <= bank < self.banks


def page_set(*, flat: bool, supported_pages: int | None, extra: Iterable[int] = ()) -> PageSet:
    """The pages of a module: page 00h alone for flat memory; otherwise the pages every
    paged module has, those page 01h byte 142 advertises, and ``extra`` (custom pages the
    caller knows the module by, such as a vendor page)."""
    if flat:
        return PageSet(True, frozenset({0x00}), 1)
    advertised = supported_pages or 0
    pages = set(ALWAYS_PAGED) | set(extra)
    if advertised & page01.PAGE_03H_SUPPORTED:
        pages.add(0x03)
    if advertised & page01.DIAGNOSTIC_PAGES_SUPPORTED:
        pages |= {0x13, 0x14}
    if advertised & page01.VDM_PAGES_SUPPORTED:
        pages |= set(range(0x20, 0x30))
    banks = {0: 1, 1: 2, 2: 4}.get(advertised & page01.BANKS_SUPPORTED_MASK, 1)  # 3: reserved
    return PageSet(False, frozenset(pages), banks)


def bit_names(raw: int | None, names: dict[int, str]) -> tuple[str, ...]:
    if raw is None:
        return ()
    return tuple(name for bit, name in names.items() if raw >> bit & 1)


@dataclass(frozen=True)
class Advertisement:
    media_type: str | None  # codes.MEDIA_TYPES name, "reserved (0x..)" or "custom (0x..)"
    applications: tuple[Application, ...]
    pages: tuple[int, ...]
    banks: int
    tx_disable_implemented: bool
    tx_fault_flag: bool
    rx_los_flag: bool
    module_monitors: tuple[str, ...]  # page 01h byte 159: "temperature", "vcc", "aux1", ...
    lane_monitors: tuple[str, ...]  # byte 160: "tx_bias", "tx_power", "rx_power"
    dp_init_seconds: float
    dp_deinit_seconds: float
    dp_tx_turn_on_seconds: float
    dp_tx_turn_off_seconds: float
    media_lanes: tuple[int, ...]  # page 00h byte 210: the media lanes (1-8) the module has
    cooled: bool | None  # page 01h byte 145 bit 7: a cooled (TEC-held) transmitter
    rx_power_measurement: str | None  # 01h:151 bit 4: "average power" or "OMA"
    rx_los_measurement: str | None  # 01h:151 bit 3: what Rx LOS responds to, likewise


def media_type_name(raw: int | None) -> str | None:
    if raw is not None and 0x40 <= raw <= 0x8F:
        return f"custom (0x{raw:02x})"
    return codes.name_of(codes.MEDIA_TYPES, raw)


def duration_seconds(code: object) -> float:
    """A duration code's upper bound; the longest bounded band for 50 min+ or reserved."""
    if not isinstance(code, int) or code not in codes.DURATION_SECONDS:
        return max(codes.DURATION_SECONDS.values())
    return codes.DURATION_SECONDS[code]
