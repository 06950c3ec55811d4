"""Properties of the CMIS layer and the amplifier driver, over any bytes (hypothesis).

- Any module image decodes: the getters return typed values, ``None`` or
  ``reserved (0x..)`` names for what the bytes cannot mean, and raise nothing but
  a DeviceError.
- Numeric fields round-trip between raw bytes and engineering units.
- The read planner covers what is asked, stays inside one page and one
  transaction, and never reads a latched byte that was not asked for.
- PagedIo returns exactly the selected page's bytes, whatever resets happen.
- A gain ramp ends on the target and never steps further than allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis import codes
from drivers.cmis.fields import LOWER, Field
from drivers.cmis.image import ImageIo
from drivers.cmis.io import MAX_TRANSFER, PagedIo, latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_FIELDS, lower
from drivers.cmis.reads import plan_reads
from drivers.errors import DeviceError
from tests.support.cmis_doubles import ModuleBus

ALL_FIELDS: tuple[Field, ...] = (*STANDARD_FIELDS, *vp.FIELDS)
ALL_LATCHED = latched_bytes(ALL_FIELDS)
UPPER_PAGES = (0x00, 0x01, 0x02, 0x10, 0x11, vp.PAGE)

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

page_bytes = st.binary(min_size=128, max_size=128)


def _named_carrier(pages: dict[int, bytes], carrier: bool) -> dict[int, bytes]:
    """Half the images name, on page 00h, a module that carries the vendor page, so that
    the driver decodes random bytes of B0h too (vendor_page.CARRIERS)."""
    if not carrier:
        return pages
    vendor, prefix = vp.CARRIERS[0]
    page00 = bytearray(pages[0x00])
    page00[129 - 128:145 - 128] = vendor.encode().ljust(16)
    page00[148 - 128:164 - 128] = (prefix + "X").encode().ljust(16)
    return {**pages, 0x00: bytes(page00)}


images = st.builds(_named_carrier,
                   st.fixed_dictionaries({page: page_bytes for page in (LOWER, *UPPER_PAGES)}),
                   st.booleans())


def _state_names() -> set[str]:
    return set(codes.MODULE_STATES.values())


def _is_reserved_name(text: Any) -> bool:
    return isinstance(text, str) and len(text) == len("reserved (0x00)") \
        and text.startswith("reserved (0x") and text.endswith(")")


def _check_typed(value: Any, path: str = "") -> None:
    """No NaN, no infinity, no unprintable text anywhere in a getter's result."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _check_typed(getattr(value, item.name), f"{path}.{item.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_typed(item, f"{path}[{key}]")
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            _check_typed(item, f"{path}[{index}]")
    elif isinstance(value, float):
        assert math.isfinite(value), path
    elif isinstance(value, str):
        assert value and value.isprintable(), f"{path}: {value!r}"
    else:
        assert value is None or isinstance(value, bool | int), f"{path}: {value!r}"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _json(value: Any) -> str:
    """What `-o json` would print: must work, without NaN."""
    return json.dumps(_plain(value), allow_nan=False)


# ---- any image decodes ---------------------------------------------------------------------------


@FAST
@given(images)
def test_any_image_decodes_without_crashing(pages: dict[int, bytes]) -> None:
    module = CmisModule(ImageIo(pages), name="fuzz", extra_fields=vp.FIELDS,
                        sleep=lambda _s: None)
    amp = AmpDriver(module)
    results: dict[str, Any] = {}
    for name, getter in (("identity", module.identity), ("status", module.status),
                         ("thresholds", module.thresholds), ("durations", module.durations),
                         ("flags", module.read_and_clear_flags), ("amp_status", amp.status),
                         ("capabilities", amp.capabilities), ("settings", amp.settings),
                         ("amp_flags", amp.read_and_clear_flags)):
        try:
            results[name] = getter()
        except DeviceError:
            continue  # the only kind of error a getter may raise on bad bytes
        _check_typed(results[name], name)
        _json(results[name])

    if "identity" in results:
        identity = results["identity"]
        assert identity.power_class is None or 1 <= identity.power_class <= 8
        assert identity.identifier in set(codes.IDENTIFIERS.values()) \
            or _is_reserved_name(identity.identifier)
    if "status" in results:
        status = results["status"]
        assert status.state in _state_names() or _is_reserved_name(status.state)
        assert (status.fault_cause is not None) == (status.state == "ModuleFault")
    if "durations" in results:
        durations = results["durations"]
        for seconds in (durations.power_up_seconds, durations.power_down_seconds):
            assert seconds in set(codes.DURATION_SECONDS.values())
    if "amp_status" in results:
        amp_status = results["amp_status"]
        assert amp_status.settings.mode in (None, *vp.MODES.values())
        assert amp_status.settings.als_mode in (None, *vp.ALS_MODES.values())
        assert amp_status.monitors.als_state in (None, *vp.ALS_STATES.values())
        assert set(amp_status.monitors.conditions) <= set(vp.FLAG_BITS.values())
        if amp_status.amplifier_page:
            assert 1 <= len(amp_status.monitors.pump_currents_ma) <= 2
        else:  # nothing of B0h was decoded
            assert amp_status.monitors.pump_currents_ma == () == amp_status.monitors.conditions
            assert set(dataclasses.astuple(amp_status.settings)) == {None}
    if "amp_flags" in results:
        flags = results["amp_flags"]
        standard = {*lower.MODULE_FLAG_BITS.values(), *lower.TEMP_VCC_FLAG_BITS.values()}
        assert set(flags) in (standard, {*standard, *vp.FLAG_BITS.values()})
        assert all(isinstance(v, bool) for v in flags.values())


@FAST
@given(images, st.sets(st.sampled_from((LOWER, *UPPER_PAGES)), min_size=1, max_size=6))
def test_missing_pages_raise_device_errors_only(pages: dict[int, bytes],
                                                drop: set[int]) -> None:
    io = ImageIo(pages)
    for page in drop:
        del io.pages[page]
    module = CmisModule(io, name="fuzz", extra_fields=vp.FIELDS, sleep=lambda _s: None)
    amp = AmpDriver(module)
    for getter in (module.identity, module.status, module.thresholds, module.durations,
                   module.read_and_clear_flags, amp.status, amp.capabilities, amp.settings,
                   amp.read_and_clear_flags):
        try:
            _check_typed(getter())
        except DeviceError as error:
            assert error.device == "fuzz"  # errors from below carry the module's name


# ---- numeric fields round-trip -------------------------------------------------------------------

NUMERIC = [f for f in ALL_FIELDS if f.kind in ("u8", "u16", "s16", "u32")]


def _raw_range(item: Field) -> tuple[int, int]:
    limit = 1 << (8 * item.size)
    return (-(limit >> 1), (limit >> 1) - 1) if item.kind == "s16" else (0, limit - 1)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_numeric_fields_round_trip_raw_to_value(data: st.DataObject) -> None:
    item = data.draw(st.sampled_from(NUMERIC))
    low, high = _raw_range(item)
    raw = data.draw(st.integers(low, high))
    block = raw.to_bytes(item.size, "big", signed=item.kind == "s16")
    value = item.decode(block, item.offset)
    if raw == item.none_raw:
        assert value is None
        return
    assert isinstance(value, int | float) and math.isfinite(value)
    assert item.encode(value) == block, (item.name, raw, value)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_numeric_fields_round_trip_value_to_raw(data: st.DataObject) -> None:
    item = data.draw(st.sampled_from(NUMERIC))
    low, high = _raw_range(item)
    value = data.draw(st.floats(low * item.scale, high * item.scale,
                                allow_nan=False, allow_infinity=False))
    encoded = item.encode(value)
    assert len(encoded) == item.size
    back = item.decode(encoded, item.offset)
    if back is None:  # the "no reading" code is the nearest raw value
        assert round(value / item.scale) == item.none_raw
        return
    assert isinstance(back, int | float)
    assert abs(back - value) <= item.scale / 2 + 1e-6, (item.name, value, back)


@given(st.sampled_from(NUMERIC), st.sampled_from([-1, 1]))
def test_numeric_fields_refuse_values_out_of_range(item: Field, side: int) -> None:
    low, high = _raw_range(item)
    value = (high + 1) * item.scale if side > 0 else (low - 1) * item.scale
    try:
        item.encode(value)
    except ValueError:
        return
    raise AssertionError(f"{item.name} encoded {value}, outside its range")


# ---- read planning -------------------------------------------------------------------------------


def _check_plan(asked: list[Field], latched: frozenset[tuple[int, int]]) -> None:
    blocks = plan_reads(asked, latched)
    covered: dict[Field, int] = {}
    for block in blocks:
        base = 0 if block.page == LOWER else 128
        assert 1 <= block.length <= MAX_TRANSFER
        assert base <= block.start and block.end <= base + 128, block
        for item in block.fields:
            assert item.page == block.page, (item, block)
            assert block.start <= item.offset and item.end <= block.end, (item, block)
            covered[item] = covered.get(item, 0) + 1
        for byte in range(block.start, block.end):
            if (block.page, byte) in latched:
                asked_for = [f for f in block.fields
                             if f.access == "cor" and f.offset <= byte < f.end]
                assert asked_for, f"block {block} reads latched byte {byte} nobody asked for"
    assert set(covered) == set(asked), "every field asked for is read"
    assert all(count == 1 for count in covered.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(ALL_FIELDS), max_size=40))
def test_plan_reads_on_the_real_tables(asked: list[Field]) -> None:
    _check_plan(asked, ALL_LATCHED)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([f for f in ALL_FIELDS if f.access != "cor"]), max_size=40))
def test_plan_reads_for_polls_never_touch_latched_bytes(asked: list[Field]) -> None:
    for block in plan_reads(asked, ALL_LATCHED):
        assert not any((block.page, b) in ALL_LATCHED for b in range(block.start, block.end))


@st.composite
def synthetic_tables(draw: st.DrawFn) -> tuple[list[Field], frozenset[tuple[int, int]]]:
    """Random fields on a few pages; latched bytes belong to latched fields only."""
    pages = draw(st.lists(st.sampled_from([LOWER, 0x00, 0x11]), min_size=1, max_size=3,
                          unique=True))
    latched: set[tuple[int, int]] = set()
    for page in pages:
        base = 0 if page == LOWER else 128
        latched |= {(page, base + b) for b in draw(st.sets(st.integers(0, 127), max_size=20))}
    fields: list[Field] = []
    for index in range(draw(st.integers(1, 30))):
        page = draw(st.sampled_from(pages))
        base = 0 if page == LOWER else 128
        size = draw(st.sampled_from([1, 1, 2, 2, 4, 8, 16, 20]))
        offset = base + draw(st.integers(0, 128 - size))
        span = {(page, b) for b in range(offset, offset + size)}
        if span <= latched:
            access = "cor"
        elif span & latched:
            continue  # a field is all latched or not latched at all, as in CMIS
        else:
            access = draw(st.sampled_from(["ro", "rw"]))
        fields.append(Field(f"f{index}", page, offset, size=size, kind="bytes", access=access))
    return fields, frozenset(latched)


@settings(max_examples=400, deadline=None)
@given(synthetic_tables())
def test_plan_reads_on_random_tables(table: tuple[list[Field], frozenset[tuple[int, int]]]
                                     ) -> None:
    fields, latched = table
    _check_plan(fields, latched)


# ---- PagedIo over a module that resets behind its back -------------------------------------------

read_ops = st.tuples(st.sampled_from((*UPPER_PAGES, LOWER)), st.integers(0, 127),
                     st.integers(1, 128), st.booleans())


@settings(max_examples=200, deadline=None)
@given(images, st.lists(read_ops, min_size=1, max_size=12))
def test_paged_reads_always_return_the_selected_pages_bytes(
        pages: dict[int, bytes], ops: list[tuple[int, int, int, bool]]) -> None:
    # latched bytes are not cleared here (clear_on_read=False): only page identity matters
    bus = ModuleBus(pages, latched=ALL_LATCHED, clear_on_read=False)
    io = PagedIo(bus, latched=ALL_LATCHED)
    for page, start, length, reset_first in ops:
        if reset_first:
            bus.reset()
        base = 0 if page == LOWER else 128
        length = min(length, 128 - start)
        got = io.read(page, base + start, length)
        expected = bytearray(pages[page])
        if page == LOWER:  # bytes 126-127 are the select bytes, whatever the image said
            expected[126:128] = bytes(bus.selected)
        assert got == expected[start:start + length], (page, base + start, length)


@settings(max_examples=200, deadline=None)
@given(images, st.lists(read_ops, min_size=1, max_size=12))
def test_paged_reads_never_touch_latched_bytes_outside_the_request(
        pages: dict[int, bytes], ops: list[tuple[int, int, int, bool]]) -> None:
    bus = ModuleBus(pages, latched=ALL_LATCHED, clear_on_read=False)
    io = PagedIo(bus, latched=ALL_LATCHED)
    for page, start, length, reset_first in ops:
        if reset_first:
            bus.reset()
        base = 0 if page == LOWER else 128
        length = min(length, 128 - start)
        bus.latched_reads.clear()
        io.read(page, base + start, length)
        wanted = {(page, b) for b in range(base + start, base + start + length)}
        assert bus.latched_reads <= wanted, sorted(bus.latched_reads - wanted)


# ---- the gain ramp -------------------------------------------------------------------------------

centi_db = st.integers(0, 6000).map(lambda c: c / 100)  # the register's 0.01 dB grid
max_steps = st.one_of(st.integers(1, 500).map(lambda c: c / 100),
                      st.floats(0.01, 10.0, allow_nan=False))


@settings(max_examples=500, deadline=None)
@given(centi_db, centi_db, max_steps)
def test_gain_ramp_ends_on_target_in_small_steps(start: float, target: float,
                                                 max_step: float) -> None:
    amp = AmpDriver(CmisModule(ImageIo({LOWER: bytes(128)}), name="ramp"))
    steps = amp.ramp_steps(start, target, max_step)
    assert steps[-1] == target
    previous = start
    for point in steps:
        assert abs(point - previous) <= max_step + 1e-9, (start, target, max_step, steps)
        assert round(point, 2) == point  # the register holds 0.01 dB
        assert min(start, target) <= point <= max(start, target)  # never overshoots
        previous = point
    # no more steps than the 0.01 dB grid needs
    grid_step = math.floor(max_step * 100 + 1e-9)
    assert len(steps) == max(1, math.ceil(round(abs(target - start) * 100) / grid_step))


# (not smaller positive steps than 1e-6: a ramp that accepted them would build a huge list)
@given(st.one_of(st.floats(max_value=0.0), st.floats(1e-6, 0.0099), st.just(math.nan),
                 st.just(math.inf)))
def test_gain_ramp_refuses_steps_finer_than_the_register(max_step: float) -> None:
    amp = AmpDriver(CmisModule(ImageIo({LOWER: bytes(128)}), name="ramp"))
    try:
        amp.ramp_steps(10.0, 11.0, max_step)
    except DeviceError:
        return
    raise AssertionError(f"max step {max_step} accepted")
