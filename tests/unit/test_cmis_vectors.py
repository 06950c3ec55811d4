"""Golden CMIS vectors (tests/vectors/cmis_*.txt) and an independent field list.

Every spec table is checked against vectors written from the
specification itself. The module images in tests/vectors/ are written byte by
byte from CMIS 5.x (OIF-CMIS-05.2) and the vendor page's docstring table, put behind
:class:`drivers.cmis.image.ImageIo` and decoded by the real planning, reading
and decoding of :class:`CmisModule` and :class:`AmpDriver` -- no decoded read is
mocked. The file format is described at the top of
tests/vectors/cmis_module.txt.

:data:`SPEC_FIELDS` restates, from the same sources and not from the tables,
where every field lives; each Field of the project's tables must match it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from drivers.amp import types as amp_types
from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis import advertisement as cmis_advertisement
from drivers.cmis import module as cmis_module
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.image import ImageIo
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_PAGES
from drivers.errors import DeviceError
from tests.support.cmis_vectors import (
    Vector,
    VectorFormatError,
    load_vectors,
)
from tests.support.paths import VECTORS

VECTOR_DIR = VECTORS
VECTOR_FILES = sorted(VECTOR_DIR.glob("cmis_*.txt"))
TOLERANCE = 1e-6


ALL_VECTORS = [vector for path in VECTOR_FILES for vector in load_vectors(path)]


# ---- evaluating a vector -------------------------------------------------------------------------


def build(vector: Vector) -> tuple[CmisModule, AmpDriver, ImageIo]:
    pages = {page: bytes(data) for page, data in vector.pages.items()}
    io = ImageIo({LOWER: bytes(128), **pages}, address=f"vector {vector.name}")
    if LOWER not in vector.pages:
        # ImageIo insists on lower memory; a vector without it must not read it at all.
        del io.pages[LOWER]
    module = CmisModule(io, name=vector.name, extra_fields=vp.FIELDS,
                        sleep=lambda _s: None)
    return module, AmpDriver(module), io


def roots(module: CmisModule, amp: AmpDriver) -> dict[str, Callable[[], Any]]:
    """What each PATH root of the vector format means (a fresh call every time)."""
    return {
        "identity": module.identity,
        "status": module.status,
        "durations": module.durations,
        "thresholds": module.thresholds,
        "flags": module.read_and_clear_flags,
        "advertisement": module.advertisement,
        "lanes": module.lanes,
        "amp.path": amp.optical_path,
        "amp.status": amp.status,
        "amp.capabilities": amp.capabilities,
        "amp.settings": amp.settings,
        "amp.flags": amp.read_and_clear_flags,
    }


def resolve(path: str, getters: dict[str, Callable[[], Any]]) -> Any:
    head, _, tail = path.partition(".")
    if head == "amp":
        second, _, tail = tail.partition(".")
        head = f"amp.{second}"
    if head not in getters or not tail:
        raise KeyError(f"unknown path {path!r}")
    value = getters[head]()
    for part in tail.split("."):
        if isinstance(value, dict):
            if part not in value:
                raise KeyError(f"{path}: no key {part!r} in {sorted(value)}")
            value = value[part]
        elif dataclasses.is_dataclass(value) and part in {f.name for f in
                                                          dataclasses.fields(value)}:
            value = getattr(value, part)
        elif isinstance(value, tuple) and part.isdigit():
            if int(part) >= len(value):
                raise KeyError(f"{path}: no item {part} in {len(value)}")
            value = value[int(part)]
        else:
            raise KeyError(f"{path}: {type(value).__name__} has no field {part!r}")
    return value


def same(got: Any, want: Any) -> bool:
    if want is None or isinstance(want, bool):
        return got is want
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    if isinstance(want, int | float):
        return (isinstance(got, int | float) and not isinstance(got, bool)
                and math.isfinite(got) and abs(got - want) <= TOLERANCE)
    if isinstance(want, tuple):
        return (isinstance(got, tuple) and len(got) == len(want)
                and all(same(g, w) for g, w in zip(got, want, strict=True)))
    raise TypeError(f"cannot compare with {want!r}")


@pytest.mark.parametrize("vector", ALL_VECTORS, ids=[v.name for v in ALL_VECTORS])
def test_vector_decodes_to_spec_values(vector: Vector) -> None:
    module, amp, _io = build(vector)
    getters = roots(module, amp)
    failures = []
    for expect in vector.expects:
        try:
            got = resolve(expect.path, getters)
        except (DeviceError, KeyError) as error:
            failures.append(f"{vector.source}:{expect.line} {expect.path}: {error!r}")
            continue
        if not same(got, expect.value):
            failures.append(f"{vector.source}:{expect.line} {expect.path}: got {got!r}, "
                            f"spec says {expect.value!r}")
    assert not failures, "\n".join(failures)


# ---- the vector files themselves -----------------------------------------------------------------

WHOLE_MODULE = {LOWER, 0x00, 0x01, 0x02, vp.PAGE}


def test_vector_files_are_present_and_every_vector_checks_something() -> None:
    assert {p.name for p in VECTOR_FILES} >= {"cmis_module.txt", "cmis_amp.txt"}
    names = [v.name for v in ALL_VECTORS]
    assert len(names) == len(set(names)), "vector names must be unique across files"
    for vector in ALL_VECTORS:
        assert vector.expects, f"{vector.source}:{vector.line} {vector.name} expects nothing"


def test_several_whole_module_vectors_decode_through_amp_status() -> None:
    whole = [v for v in ALL_VECTORS if set(v.pages) >= WHOLE_MODULE
             and any(e.path.startswith("amp.status.") for e in v.expects)]
    assert len(whole) >= 3, [v.name for v in whole]


def test_vectors_cover_every_decoded_getter() -> None:
    paths = {e.path for v in ALL_VECTORS for e in v.expects}
    for root in ("identity.", "status.", "durations.", "thresholds.", "flags.",
                 "advertisement.", "lanes.", "amp.path.",
                 "amp.status.module.", "amp.status.identity.", "amp.status.settings.",
                 "amp.status.monitors.", "amp.capabilities.", "amp.settings.", "amp.flags."):
        assert any(p.startswith(root) for p in paths), root
    # every field of every getter's result appears in some vector
    for prefix, cls in (("identity.", "ModuleIdentity"), ("status.", "ModuleStatus"),
                        ("amp.status.settings.", "AmpSettings"),
                        ("amp.status.monitors.", "AmpMonitors"),
                        ("amp.capabilities.", "AmpCapabilities"),
                        ("advertisement.", "Advertisement"), ("lanes.", "LaneStatus"),
                        ("amp.path.", "AmpPath"),
                        ("advertisement.applications.0.", "Application")):
        kind = (getattr(cmis_module, cls, None) or getattr(cmis_advertisement, cls, None)
                or getattr(amp_types, cls))
        missing = {f.name for f in dataclasses.fields(kind)} - {
            p[len(prefix):] for p in paths if p.startswith(prefix)}
        assert not missing, f"{cls} fields no vector checks: {sorted(missing)}"


@pytest.mark.parametrize("bad, message", [
    ("vector a\npage lower\n3: 07\n3: 06\n", "written twice"),
    ("vector a\npage lower\n127: 00 00\n", "outside the page"),
    ("vector a\npage 00h\n127: 00\n", "outside the page"),
    ("vector a\npage lower\n0: 1\n", "cannot read bytes"),
    ("vector a\npage zz\n", "page"),
    ("vector a\n3: 07\n", "before any `page`"),
    ("vector a\nbase nothing\n", "base NAME"),
])
def test_vector_format_errors_are_reported_with_their_line(tmp_path: Path, bad: str,
                                                           message: str) -> None:
    path = tmp_path / "cmis_bad.txt"
    path.write_text(bad)
    with pytest.raises(VectorFormatError, match=message):
        load_vectors(path)


def test_vector_format_reads_text_hex_comments_and_bases(tmp_path: Path) -> None:
    path = tmp_path / "cmis_ok.txt"
    path.write_text('vector a\npage 00h\n129: "A#B" 41 42   # comment "quoted"\n'
                    "expect identity.vendor = \"A#BAB\"\n"
                    "vector b\nbase a\npage 00h\n129: 5A\nexpect status.state = None\n")
    first, second = load_vectors(path)
    assert bytes(first.pages[0x00][1:6]) == b"A#BAB"
    assert bytes(second.pages[0x00][1:6]) == b"Z#BAB"
    assert first.expects[0].value == "A#BAB"


# ---- every field of the project's tables, restated from the specification ------------------------

B0 = vp.PAGE

SPEC_FIELDS: tuple[tuple[str, int, int, int], ...] = (
    # lower memory (CMIS 5.2 section 8.2): name, page, first byte, size
    ("identifier", LOWER, 0, 1),
    ("revision_major", LOWER, 1, 1),
    ("revision_minor", LOWER, 1, 1),
    ("flat_memory", LOWER, 2, 1),
    ("module_state", LOWER, 3, 1),
    ("interrupt_deasserted", LOWER, 3, 1),
    ("flags_module", LOWER, 8, 1),
    ("flags_temp_vcc", LOWER, 9, 1),
    ("flags_aux12", LOWER, 10, 1),
    ("flags_aux3_custom", LOWER, 11, 1),
    ("temperature", LOWER, 14, 2),
    ("vcc", LOWER, 16, 2),
    ("aux1", LOWER, 18, 2),
    ("aux2", LOWER, 20, 2),
    ("aux3", LOWER, 22, 2),
    ("custom_monitor", LOWER, 24, 2),
    ("module_control", LOWER, 26, 1),
    ("masks", LOWER, 31, 6),
    ("firmware_major", LOWER, 39, 1),
    ("firmware_minor", LOWER, 40, 1),
    ("fault_cause", LOWER, 41, 1),
    ("media_type", LOWER, 85, 1),
    ("applications", LOWER, 86, 32),  # descriptors 1-8, 4 bytes each
    ("bank_select", LOWER, 126, 1),
    ("page_select", LOWER, 127, 1),
    # page 00h
    ("identifier_copy", 0x00, 128, 1),
    ("vendor_name", 0x00, 129, 16),
    ("vendor_oui", 0x00, 145, 3),
    ("part_number", 0x00, 148, 16),
    ("revision", 0x00, 164, 2),
    ("serial", 0x00, 166, 16),
    ("date_code", 0x00, 182, 8),
    ("clei", 0x00, 190, 10),
    ("power_class", 0x00, 200, 1),
    ("max_power", 0x00, 201, 1),
    ("link_length", 0x00, 202, 1),  # cable assembly length; 0: the media is separable
    ("connector_type", 0x00, 203, 1),  # SFF-8024 Table 4-3
    ("media_lane_info", 0x00, 210, 1),  # bit n: media lane n+1 not supported
    ("media_interface_technology", 0x00, 212, 1),
    ("checksummed", 0x00, 128, 94),  # bytes 128-221, which the page checksum covers
    ("page_checksum", 0x00, 222, 1),
    # page 01h
    ("inactive_firmware_major", 0x01, 128, 1),
    ("inactive_firmware_minor", 0x01, 129, 1),
    ("hardware_major", 0x01, 130, 1),
    ("hardware_minor", 0x01, 131, 1),
    ("supported_pages", 0x01, 142, 1),
    ("module_characteristics", 0x01, 145, 1),  # bit 7 cooled transmitter
    ("dp_deinit_duration", 0x01, 144, 1),
    ("dp_init_duration", 0x01, 144, 1),
    ("rx_characteristics", 0x01, 151, 1),  # detector, Rx power and LOS measurement
    ("controls_support", 0x01, 155, 1),
    ("tx_flags_support", 0x01, 157, 1),
    ("rx_flags_support", 0x01, 158, 1),
    ("module_monitor_support", 0x01, 159, 1),
    ("lane_monitor_support", 0x01, 160, 1),
    ("module_pwr_dn_duration", 0x01, 167, 1),
    ("module_pwr_up_duration", 0x01, 167, 1),
    ("dp_tx_turn_off_duration", 0x01, 168, 1),
    ("dp_tx_turn_on_duration", 0x01, 168, 1),
    ("media_lane_assignment", 0x01, 176, 8),  # applications 1-8
    # page 02h: each group high alarm, low alarm, high warning, low warning, 2 bytes each
    *((f"{group}_{level}", 0x02, start + 2 * index, 2)
      for group, start in (("temperature", 128), ("vcc", 136), ("tx_power", 176),
                           ("tx_bias", 184), ("rx_power", 192))
      for index, level in enumerate(("high_alarm", "low_alarm", "high_warning",
                                     "low_warning"))),
    # page 10h
    ("data_path_deinit", 0x10, 128, 1),
    ("tx_disable", 0x10, 130, 1),
    ("apply_dp_init", 0x10, 143, 1),
    # page 11h
    ("data_path_state_lane1", 0x11, 128, 1),
    ("data_path_states", 0x11, 128, 4),
    ("lane_flags", 0x11, 134, 20),
    ("flags_tx_fault", 0x11, 135, 1),
    ("flags_tx_los", 0x11, 136, 1),
    ("flags_rx_los", 0x11, 147, 1),
    ("flags_rx_power_high_alarm", 0x11, 149, 1),
    ("flags_rx_power_low_alarm", 0x11, 150, 1),
    ("flags_rx_power_high_warning", 0x11, 151, 1),
    ("flags_rx_power_low_warning", 0x11, 152, 1),
    ("tx_power_lane1", 0x11, 154, 2),
    ("tx_bias_lane1", 0x11, 170, 2),
    ("rx_power_lane1", 0x11, 186, 2),
    ("active_control_set", 0x11, 206, 8),  # lanes 1-8
    # vendor page B0h (the docstring table of drivers/amp/vendor_page.py)
    ("input_power", B0, 128, 2),
    ("output_power", B0, 130, 2),
    ("actual_gain", B0, 132, 2),
    ("actual_tilt", B0, 134, 2),
    ("pump1_current", B0, 136, 2),
    ("pump2_current", B0, 138, 2),
    ("pump_temperature", B0, 140, 2),
    ("back_reflection", B0, 142, 2),
    ("als_state", B0, 144, 1),
    ("amp_status", B0, 145, 1),
    ("amp_control", B0, 146, 1),
    ("output_enable", B0, 146, 1),
    ("mode", B0, 146, 1),
    ("target_gain", B0, 147, 2),
    ("target_output_power", B0, 149, 2),
    ("target_tilt", B0, 151, 2),
    ("als_mode", B0, 153, 1),
    ("als_command", B0, 154, 1),
    ("als_los_soak", B0, 155, 2),
    ("als_restart_interval", B0, 157, 2),
    ("als_restart_pulse", B0, 159, 2),
    ("los_threshold", B0, 161, 2),
    ("pump_current_limit", B0, 163, 2),
    ("pump_temperature_limit", B0, 165, 2),
    ("back_reflection_limit", B0, 167, 2),
    ("gain_min", B0, 176, 2),
    ("gain_max", B0, 178, 2),
    ("output_power_max", B0, 180, 2),
    ("tilt_min", B0, 182, 2),
    ("tilt_max", B0, 184, 2),
    ("pump_count", B0, 186, 1),
    ("pump_current_max", B0, 187, 2),
    ("amp_flags", B0, 224, 1),
    ("amp_flag_mask", B0, 225, 1),
)

SPEC_BIT_MASKS = {
    "revision_major": 0xF0, "revision_minor": 0x0F, "flat_memory": 0x80,
    "module_state": 0x0E, "interrupt_deasserted": 0x01, "power_class": 0xE0,
    "module_pwr_dn_duration": 0xF0, "module_pwr_up_duration": 0x0F,
    "data_path_state_lane1": 0x0F, "output_enable": 0x01, "mode": 0x06,
    "dp_deinit_duration": 0xF0, "dp_init_duration": 0x0F,
    "dp_tx_turn_off_duration": 0xF0, "dp_tx_turn_on_duration": 0x0F,
}
"""Fields that are part of a byte: which bits (spec: 'bits 7-4', ...)."""

SPEC_LATCHED = {"flags_module", "flags_temp_vcc", "flags_aux12", "flags_aux3_custom",
                "lane_flags", "flags_tx_fault", "flags_tx_los", "flags_rx_los",
                "flags_rx_power_high_alarm", "flags_rx_power_low_alarm",
                "flags_rx_power_high_warning", "flags_rx_power_low_warning", "amp_flags"}
"""Latched, clear-on-read fields: bytes 8-11, page 11h 134-153, B0h 224."""

SPEC_WRITABLE = {"module_control", "masks", "bank_select", "page_select", "data_path_deinit",
                 "tx_disable", "apply_dp_init", "amp_control", "output_enable", "mode",
                 "target_gain", "target_output_power", "target_tilt", "als_mode",
                 "als_command", "als_los_soak", "als_restart_interval", "als_restart_pulse",
                 "los_threshold", "pump_current_limit", "pump_temperature_limit",
                 "back_reflection_limit", "amp_flag_mask"}

SPEC_NUMBERS: dict[str, tuple[str, float]] = {
    # name: (encoding, one raw step in the field's unit) for every scaled field
    "temperature": ("s16", 1 / 256), "vcc": ("u16", 0.0001), "max_power": ("u8", 0.25),
    **{f"temperature_{lv}": ("s16", 1 / 256) for lv in ("high_alarm", "low_alarm",
                                                        "high_warning", "low_warning")},
    **{f"vcc_{lv}": ("u16", 0.0001) for lv in ("high_alarm", "low_alarm", "high_warning",
                                               "low_warning")},
    **{f"{g}_{lv}": ("u16", step) for g, step in (("tx_power", 0.0001), ("tx_bias", 0.002),
                                                  ("rx_power", 0.0001))
       for lv in ("high_alarm", "low_alarm", "high_warning", "low_warning")},
    "tx_power_lane1": ("u16", 0.0001), "tx_bias_lane1": ("u16", 0.002),
    "rx_power_lane1": ("u16", 0.0001),
    "input_power": ("s16", 0.01), "output_power": ("s16", 0.01), "actual_gain": ("s16", 0.01),
    "actual_tilt": ("s16", 0.01), "pump1_current": ("u16", 0.1), "pump2_current": ("u16", 0.1),
    "pump_temperature": ("s16", 1 / 256), "back_reflection": ("s16", 0.01),
    "target_gain": ("u16", 0.01), "target_output_power": ("s16", 0.01),
    "target_tilt": ("s16", 0.01), "als_los_soak": ("u16", 0.001),
    "als_restart_interval": ("u16", 1.0), "als_restart_pulse": ("u16", 0.001),
    "los_threshold": ("s16", 0.01), "pump_current_limit": ("u16", 0.1),
    "pump_temperature_limit": ("s16", 1 / 256), "back_reflection_limit": ("s16", 0.01),
    "gain_min": ("u16", 0.01), "gain_max": ("u16", 0.01), "output_power_max": ("s16", 0.01),
    "tilt_min": ("s16", 0.01), "tilt_max": ("s16", 0.01), "pump_current_max": ("u16", 0.1),
}


def project_fields() -> Iterator[tuple[str, Field]]:
    for page in STANDARD_PAGES:
        for item in page.FIELDS:
            yield page.__name__.rsplit(".", 1)[-1], item
    for item in vp.FIELDS:
        yield "vendor_page", item


PROJECT_FIELDS = list(project_fields())
SPEC_BY_NAME = {name: (page, offset, size) for name, page, offset, size in SPEC_FIELDS}


def test_spec_list_has_no_duplicates() -> None:
    assert len(SPEC_BY_NAME) == len(SPEC_FIELDS)


@pytest.mark.parametrize("table, item", PROJECT_FIELDS,
                         ids=[f"{t}.{f.name}" for t, f in PROJECT_FIELDS])
def test_table_field_is_where_the_spec_puts_it(table: str, item: Field) -> None:
    assert item.name in SPEC_BY_NAME, f"{table}.{item.name} is not in the spec list"
    assert (item.page, item.offset, item.size) == SPEC_BY_NAME[item.name], (
        f"{table}.{item.name}: table says page {item.page} bytes {item.offset}+{item.size}, "
        f"spec says {SPEC_BY_NAME[item.name]}")
    if item.name in SPEC_BIT_MASKS:
        assert item.kind == "bits" and item.mask == SPEC_BIT_MASKS[item.name]
    else:
        assert item.kind != "bits" and item.mask == 0xFF
    assert (item.access == "cor") == (item.name in SPEC_LATCHED), item.access
    assert (item.access in ("rw", "wo")) == (item.name in SPEC_WRITABLE), item.access
    if item.name in SPEC_NUMBERS:
        kind, step = SPEC_NUMBERS[item.name]
        assert item.kind == kind and math.isclose(item.scale, step), (item.kind, item.scale)
    elif item.kind not in ("str", "bytes"):
        assert item.scale == 1.0, f"{item.name}: scale {item.scale} not in the spec list"


def test_every_spec_field_is_in_a_table() -> None:
    names = {item.name for _, item in PROJECT_FIELDS}
    assert not set(SPEC_BY_NAME) - names, sorted(set(SPEC_BY_NAME) - names)


def test_no_powers_without_the_no_reading_code() -> None:
    """Spec (vendor page): a power of 8000h means no reading."""
    for item in (vp.INPUT_POWER, vp.OUTPUT_POWER):
        assert item.none_raw == -32768
        assert item.decode(b"\x80\x00", item.offset) is None
