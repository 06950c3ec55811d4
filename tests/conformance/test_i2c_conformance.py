"""The I2C transport conformance suite: one set of tests that every CMIS transport passes.

| rig        | host side                              | device side                              |
|------------|----------------------------------------|------------------------------------------|
| optoe      | OptoeIo on a file                      | the emulated module's memory, laid out   |
|            |                                        | in the file as optoe3 lays it out        |
| i2c-dev    | PagedIo over SmbusBus, bus injected    | the emulator's I2cSlave behind           |
|            |                                        | SlaveOnWire (I2C_RDWR as the kernel does)|
| bridge-pty | open_cmis_io("i2c-bridge", pty path)   | the emulator's bridge board on a pty     |
| bridge-tcp | open_cmis_io("i2c-bridge", socket://…) | the same board on TCP loopback           |

The emulator is plugged in at the lowest seam each transport has (a file, the
I2C_RDWR call, a serial line), so the transports' own framing and error
mapping run. Tests of page selection run over the three raw buses (optoe
selects pages in the kernel); a few tests at the end are specific to one
transport (the optoe file layout, i2c-dev transfers, the bridge's resync),
and the last opens every amplifier of the lab the way its inventory says.
"""

from __future__ import annotations

import asyncio
import errno
import os
import random
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import astuple
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from smbus2 import i2c_msg
from smbus2.smbus2 import I2C_M_RD

from drivers.amp import vendor_page as vendor
from drivers.cmis.fields import LOWER
from drivers.cmis.io import CmisIo, I2cBus, IoStats, PagedIo, latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import lower, page00
from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    ValidationError,
)
from drivers.transports.i2c import open_cmis_io
from drivers.transports.i2c_bridge import BridgeBus
from drivers.transports.i2c_optoe import OptoeIo
from drivers.transports.i2c_smbus import SmbusBus
from emulators.amp.bridge import I2cBridge
from emulators.amp.i2c import I2cSlave
from emulators.amp.i2c_dev import EmulatedAdapter
from emulators.amp.model import AmplifierModule
from emulators.amp.registers import FIELDS, PAGES
from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.lab import Lab
from emulators.optics.model import OpticalModel

RIGS = ("optoe", "i2c-dev", "bridge-pty", "bridge-tcp")
PAGED = ("i2c-dev", "bridge-pty", "bridge-tcp")
BRIDGES = ("bridge-pty", "bridge-tcp")

TIMEOUT_SECONDS = 2.0
SHORT_TIMEOUT_SECONDS = 0.3
LATCHED = latched_bytes(FIELDS)
PAGE_SIZE = 128
OPTOE_PAGES = 256  # optoe3 maps all 256 pages after lower memory


# ---- the device side of each transport ---------------------------------------------------


def optoe_layout(lower_memory: bytes, page_of: Callable[[int], bytes]) -> bytes:
    """A whole optoe3 file, written byte by byte from the layout optoe documents:
    file offset n < 128 is lower memory byte n; n >= 128 is page n // 128 - 1,
    byte 128 + n % 128 (``page_of(p)`` is bytes 128..255 of page p)."""
    image = bytearray()
    pages: dict[int, bytes] = {}  # each page asked for once, not once per byte
    for n in range((OPTOE_PAGES + 1) * PAGE_SIZE):
        if n < PAGE_SIZE:
            image.append(lower_memory[n])
        else:
            page, byte = n // PAGE_SIZE - 1, PAGE_SIZE + n % PAGE_SIZE
            if page not in pages:
                pages[page] = page_of(page)
            image.append(pages[page][byte - PAGE_SIZE])
    return bytes(image)


def spec_offset(page: int, byte: int) -> int:
    """Where byte ``byte`` of ``page`` lies in the file, by the same documented layout."""
    return byte if page == LOWER else PAGE_SIZE * (page + 1) + (byte - PAGE_SIZE)


class SlaveOnWire(EmulatedAdapter):
    """The emulated adapter, recording each transfer and able to hold the next one back,
    as a slow adapter would."""

    def __init__(self, slave: I2cSlave):
        super().__init__(slave)
        self.slave = slave
        self.delay_next = 0.0
        self.calls: list[list[tuple[int, bool, int]]] = []  # (address, read?, length) per message

    def i2c_rdwr(self, *msgs: i2c_msg) -> None:
        self.calls.append([(m.addr, bool(m.flags & I2C_M_RD), m.len) for m in msgs])
        if self.delay_next:
            seconds, self.delay_next = self.delay_next, 0.0
            time.sleep(seconds)
        super().i2c_rdwr(*msgs)


class LoopThread:
    """An asyncio loop in a thread, for the emulator's servers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class Rig(ABC):
    """One transport to one emulated module, with the device-side levers the tests pull."""

    transport: str
    io: CmisIo
    bus: I2cBus | None = None

    @abstractmethod
    def holds(self, page: int, offset: int, length: int) -> bytes:
        """What the device holds now at these bytes (no access rules applied)."""

    @abstractmethod
    def device_counts(self) -> tuple[int, int, int]:
        """(transactions, bytes read, bytes written) as the device side counted them."""

    @abstractmethod
    def nack_next(self) -> None: ...

    @abstractmethod
    def hang_next(self) -> None: ...

    @abstractmethod
    def answer_late(self, seconds: float) -> None:
        """The next transaction's answer comes ``seconds`` late."""

    @abstractmethod
    def set_timeout(self, seconds: float) -> None: ...

    def close(self) -> None:
        self.io.close()


class ModuleRig(Rig):
    """PagedIo over a raw bus with the emulated module (and its I2cSlave) on the far end."""

    def __init__(self, transport: str, io: PagedIo, module: AmplifierModule, slave: I2cSlave,
                 clock: SteppedClock, wire: SlaveOnWire | None = None):
        self.transport = transport
        self.io = self.paged = io
        self.bus = io.bus
        self.module = module
        self.slave = slave
        self.clock = clock
        self.wire = wire

    def holds(self, page: int, offset: int, length: int) -> bytes:
        return self.module.memory.peek(page, offset, length)

    def device_counts(self) -> tuple[int, int, int]:
        stats = self.slave.stats
        return stats.transactions, stats.bytes_read, stats.bytes_written

    def nack_next(self) -> None:
        self.module.faults.inject(Fault("nack", count=1))

    def hang_next(self) -> None:
        self.module.faults.inject(Fault("bus_hang", count=1))

    def answer_late(self, seconds: float) -> None:
        if self.wire is not None:
            self.wire.delay_next = seconds
        else:
            self.module.faults.inject(Fault("latency", seconds=seconds, count=1))

    def set_timeout(self, seconds: float) -> None:
        assert self.bus is not None
        self.bus.timeout_seconds = seconds


class OptoeRig(Rig):
    """OptoeIo on a file holding the module's memory in optoe3's layout.

    The file's accesses go through a watch on os.pread/os.pwrite, which counts
    what the kernel would put on the bus (one transaction per 128-byte chunk)
    and carries out the errors the kernel returns (EIO for a NACK, ETIMEDOUT).
    """

    def __init__(self, path: Path, module: AmplifierModule, monkeypatch: pytest.MonkeyPatch):
        memory = module.memory

        def page_of(page: int) -> bytes:
            return memory.peek(page, PAGE_SIZE, PAGE_SIZE) if page in PAGES else bytes(PAGE_SIZE)

        path.write_bytes(optoe_layout(memory.peek(LOWER, 0, PAGE_SIZE), page_of))
        self.path = path
        self.transport = "optoe"
        self.inode = path.stat().st_ino
        self.counts = [0, 0, 0]
        self.pending: list[Callable[[], None]] = []
        real_pread, real_pwrite = os.pread, os.pwrite

        def pread(fd: int, length: int, offset: int) -> bytes:
            if not self._ours(fd):
                return real_pread(fd, length, offset)
            self._bus(offset, length)
            data = real_pread(fd, length, offset)
            self.counts[1] += len(data)
            return data

        def pwrite(fd: int, data: bytes, offset: int) -> int:
            if not self._ours(fd):
                return real_pwrite(fd, data, offset)
            self._bus(offset, len(data))
            written = real_pwrite(fd, data, offset)
            self.counts[2] += written
            return written

        monkeypatch.setattr(os, "pread", pread)
        monkeypatch.setattr(os, "pwrite", pwrite)
        self.io = open_cmis_io("optoe", str(path), timeout_seconds=TIMEOUT_SECONDS)

    def _ours(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == self.inode
        except OSError:
            return False

    def _bus(self, offset: int, length: int) -> None:
        chunks = {n // PAGE_SIZE for n in range(offset, offset + length)}
        self.counts[0] += len(chunks)
        if self.pending:
            self.pending.pop(0)()

    def holds(self, page: int, offset: int, length: int) -> bytes:
        with self.path.open("rb") as file:
            file.seek(spec_offset(page, offset))
            return file.read(length)

    def device_counts(self) -> tuple[int, int, int]:
        return self.counts[0], self.counts[1], self.counts[2]

    def _fail(self, code: int) -> Callable[[], None]:
        def fail() -> None:
            raise OSError(code, os.strerror(code))
        return fail

    def nack_next(self) -> None:
        self.pending.append(self._fail(errno.EIO))

    def hang_next(self) -> None:
        self.pending.append(self._fail(errno.ETIMEDOUT))

    def answer_late(self, seconds: float) -> None:
        self.pending.append(lambda: time.sleep(seconds))

    def set_timeout(self, seconds: float) -> None:
        assert isinstance(self.io, OptoeIo)
        self.io.timeout_seconds = seconds


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def clock() -> SteppedClock:
    return SteppedClock()


@pytest.fixture
def module(clock: SteppedClock) -> AmplifierModule:
    return AmplifierModule("amp-t", OpticalModel(clock))


@pytest.fixture
def slave(module: AmplifierModule) -> I2cSlave:
    return I2cSlave(module)


@pytest.fixture
def bridge(module: AmplifierModule, slave: I2cSlave, clock: SteppedClock) -> Iterator[I2cBridge]:
    loop = LoopThread()
    board = I2cBridge("bridge-t", [slave], clock=clock, faults=module.faults)
    loop.run(board.start())
    try:
        yield board
    finally:
        loop.run(board.stop())
        loop.stop()


def bridge_url(board: I2cBridge, transport: str) -> str:
    if transport == "bridge-pty":
        assert board.path is not None
        return board.path
    return f"socket://127.0.0.1:{board.port}"


def make_rig(transport: str, request: pytest.FixtureRequest) -> Rig:
    module: AmplifierModule = request.getfixturevalue("module")
    if transport == "optoe":
        tmp_path: Path = request.getfixturevalue("tmp_path")
        return OptoeRig(tmp_path / "eeprom", module, request.getfixturevalue("monkeypatch"))
    slave: I2cSlave = request.getfixturevalue("slave")
    clock: SteppedClock = request.getfixturevalue("clock")
    if transport == "i2c-dev":
        wire = SlaveOnWire(slave)
        bus = SmbusBus("/dev/i2c-7", smbus=wire, timeout_seconds=TIMEOUT_SECONDS)
        return ModuleRig(transport, PagedIo(bus, latched=LATCHED), module, slave, clock, wire)
    board: I2cBridge = request.getfixturevalue("bridge")
    io = open_cmis_io("i2c-bridge", bridge_url(board, transport),
                      timeout_seconds=TIMEOUT_SECONDS, latched=LATCHED)
    assert isinstance(io, PagedIo)
    return ModuleRig(transport, io, module, slave, clock)


@pytest.fixture(params=RIGS)
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    made = make_rig(request.param, request)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(params=PAGED)
def paged(request: pytest.FixtureRequest) -> Iterator[ModuleRig]:
    made = make_rig(request.param, request)
    assert isinstance(made, ModuleRig)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(params=BRIDGES)
def bridged(request: pytest.FixtureRequest) -> Iterator[ModuleRig]:
    made = make_rig(request.param, request)
    assert isinstance(made, ModuleRig)
    try:
        yield made
    finally:
        made.close()


def delta(after: tuple[int, ...], before: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(a - b for a, b in zip(after, before, strict=True))


def host_counts(stats: IoStats) -> tuple[int, int, int]:
    return stats.transactions, stats.bytes_read, stats.bytes_written


def unlatched(page: int, offset: int, data: bytes) -> list[tuple[int, int]]:
    """(byte, value) of ``data`` without the clear-on-read bytes, which a read changes."""
    return [(offset + i, value) for i, value in enumerate(data)
            if (page, offset + i) not in LATCHED]


# ---- every transport ---------------------------------------------------------------------


def test_lower_memory_in_one_128_byte_transaction(rig: Rig) -> None:
    host, device = host_counts(rig.io.stats), rig.device_counts()
    data = rig.io.read(LOWER, 0, 128)
    assert delta(host_counts(rig.io.stats), host) == (1, 128, 0)
    assert delta(rig.device_counts(), device) == (1, 128, 0)
    assert data[0] == 0x18  # QSFP-DD
    assert unlatched(LOWER, 0, data) == unlatched(LOWER, 0, rig.holds(LOWER, 0, 128))


@pytest.mark.parametrize("page", [0x00, 0x01, 0x02, vendor.PAGE])
def test_upper_pages_decode_the_right_page(rig: Rig, page: int) -> None:
    data = rig.io.read(page, 128, 128)
    held = rig.holds(page, 128, 128)
    start = 176 if page == vendor.PAGE else 128  # B0h 128-175: live monitors and status
    assert unlatched(page, start, data[start - 128:]) == unlatched(page, start,
                                                                    held[start - 128:])
    if page == 0x00:
        assert data[129 - 128:145 - 128] == b"MegaScaleOut    "
    # A read further into the page, and a short one at its end.
    assert rig.io.read(page, 200, 20) == rig.holds(page, 200, 20)
    assert rig.io.read(page, 255, 1) == rig.holds(page, 255, 1)


def test_a_whole_upper_page_costs_the_page_and_at_most_a_page_check(rig: Rig) -> None:
    rig.io.read(0x01, 128, 1)  # page 01h selected, where a transport selects pages
    host, device = host_counts(rig.io.stats), rig.device_counts()
    rig.io.read(0x01, 128, 128)
    transactions = delta(host_counts(rig.io.stats), host)[0]
    assert transactions == (1 if rig.transport == "optoe" else 2)  # 2: the select bytes too
    assert delta(rig.device_counts(), device)[0] == transactions


def test_rw_bytes_written_are_read_back(rig: Rig) -> None:
    gain = (1725).to_bytes(2, "big")  # 17.25 dB
    rig.io.write(vendor.PAGE, vendor.TARGET_GAIN.offset, gain)
    assert rig.io.read(vendor.PAGE, vendor.TARGET_GAIN.offset, 2) == gain
    assert rig.holds(vendor.PAGE, vendor.TARGET_GAIN.offset, 2) == gain
    masks = bytes((0x01, 0x02, 0x04, 0x08, 0x10, 0x20))
    rig.io.write(LOWER, lower.MASKS.offset, masks)
    assert rig.io.read(LOWER, lower.MASKS.offset, 6) == masks
    assert rig.holds(LOWER, lower.MASKS.offset, 6) == masks
    # Nothing else moved: the page-00h identity is intact.
    assert rig.io.read(0x00, 129, 16) == b"MegaScaleOut    "


def test_stats_count_transactions_and_bytes_as_the_device_does(rig: Rig) -> None:
    assert astuple(rig.io.stats) == (0, 0, 0)  # opening (the bridge's V) moves nothing
    host, device = host_counts(rig.io.stats), rig.device_counts()
    rig.io.read(LOWER, 0, 3)
    rig.io.read(0x02, 128, 16)
    rig.io.read(0x02, 200, 8)
    rig.io.write(vendor.PAGE, vendor.TARGET_GAIN.offset, (1500).to_bytes(2, "big"))
    rig.nack_next()
    with pytest.raises(DeviceRejected):
        rig.io.read(LOWER, 0, 1)
    moved = delta(host_counts(rig.io.stats), host)
    assert moved == delta(rig.device_counts(), device)
    if rig.transport == "optoe":
        assert moved == (5, 3 + 16 + 8, 2)


def test_nack_is_rejected_and_the_next_access_works(rig: Rig) -> None:
    rig.nack_next()
    with pytest.raises(DeviceRejected):
        rig.io.read(0x00, 129, 16)
    assert rig.io.read(0x00, 129, 16) == b"MegaScaleOut    "
    rig.nack_next()
    with pytest.raises(DeviceRejected):
        rig.io.write(LOWER, lower.MASKS.offset, b"\x01")


def test_hung_bus_is_a_timeout_and_the_next_access_works(rig: Rig) -> None:
    rig.hang_next()
    with pytest.raises(DeviceTimeout):
        rig.io.read(LOWER, 0, 2)
    assert rig.io.read(LOWER, 0, 1) == b"\x18"


def test_no_answer_within_the_timeout(rig: Rig) -> None:
    rig.set_timeout(SHORT_TIMEOUT_SECONDS)
    rig.io.read(0x00, 129, 16)  # page selected, line in sync
    rig.answer_late(SHORT_TIMEOUT_SECONDS + 0.8)
    # before the answer, told by what ended the read (not by a clock, which a loaded
    # machine stretches): the 0.3 s timeout, with no answer there yet (a raw bus's
    # transfer still under way; a bridge's reply line not come, or it would have been read)
    with pytest.raises(DeviceTimeout, match=rf"no (answer|reply) within "
                                            rf"{SHORT_TIMEOUT_SECONDS:g} s$") as late:
        rig.io.read(LOWER, 0, 1)
    if rig.transport not in BRIDGES:
        assert late.value.detail is not None
        assert late.value.detail.endswith("started but not finished"), late.value.detail
    time.sleep(1.0)  # the late answer has come (or the call returned) by now
    # The late answer (byte 0, 0x18) is never taken for the answer to this read.
    assert rig.io.read(0x00, 129, 16) == b"MegaScaleOut    "
    assert rig.io.read(LOWER, 1, 1) == rig.holds(LOWER, 1, 1)


def test_a_range_outside_one_page_is_refused_before_sending(rig: Rig) -> None:
    device = rig.device_counts()
    for page, offset, length in [(LOWER, 120, 16), (0x00, 127, 2), (0x00, 250, 8),
                                 (0x00, 128, 0), (0x100, 128, 1)]:
        with pytest.raises(ValidationError):
            rig.io.read(page, offset, length)
    with pytest.raises(ValidationError):
        rig.io.write(0x00, 255, b"\x00\x00")
    assert rig.device_counts() == device


def test_a_page_or_bank_the_module_lacks_is_refused_before_the_bus(rig: Rig) -> None:
    """CMIS 5.2 section 8.4 (page 01h byte 142, supported pages and banks) and 5.x Page
    Mapping: the driver asks for no page the module does not advertise, so on no transport
    -- optoe, which selects pages in the kernel without checking, included -- does another
    page's data come back under the requested page's name."""
    module = CmisModule(rig.io, name="amp-t", extra_fields=vendor.FIELDS)
    assert module.pages().pages == frozenset({0x00, 0x01, 0x02, 0x10, 0x11, vendor.PAGE})
    device = rig.device_counts()
    for page, bank in ((0x03, 0), (0x20, 0), (0x9F, 0), (0x11, 1), (0x10, 3)):
        with pytest.raises(ValidationError, match=f"page {page:02X}h bank {bank} is not"):
            module.read_raw(page, 128, 16, bank=bank)
        with pytest.raises(ValidationError):
            module.write_raw(page, 130, b"\x01", bank=bank)
    assert rig.device_counts() == device  # refused before anything reached the module
    assert module.read_raw(0x00, 129, 16) == b"MegaScaleOut    "


def test_a_bank_the_module_lacks_is_never_read_as_bank_0(rig: Rig) -> None:
    """Below the driver: optoe reaches bank 0 only (ValidationError); a raw bus selects the
    bank, sees the module fall back to bank 0 page 00h and reports the page refused."""
    expected: type[DeviceError] = ValidationError if rig.transport == "optoe" else DeviceRejected
    with pytest.raises(expected):
        rig.io.read(0x11, 128, 4, bank=1)
    with pytest.raises(expected):
        rig.io.write(0x10, 130, b"\x01", bank=1)
    assert rig.io.read(0x00, 129, 16) == b"MegaScaleOut    "


def test_a_missing_device_is_unreachable(rig: Rig, tmp_path: Path) -> None:
    if rig.transport == "optoe":
        address = str(tmp_path / "no-such-eeprom")
        transport = "optoe"
    elif rig.transport == "i2c-dev":
        address, transport = "/dev/i2c-250", "i2c-dev"
    elif rig.transport == "bridge-pty":
        address, transport = "/dev/pts/99999", "i2c-bridge"
    else:
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        address, transport = f"socket://127.0.0.1:{port}", "i2c-bridge"
    with pytest.raises(DeviceUnreachable):
        open_cmis_io(transport, address, timeout_seconds=TIMEOUT_SECONDS)


# ---- page selection, over the raw buses -----------------------------------------------------


def test_page_select_is_one_write_then_tracked(paged: ModuleRig) -> None:
    memory = paged.module.memory
    device = paged.device_counts()
    assert paged.io.read(0x02, 128, 8) == memory.peek(0x02, 128, 8)
    # bank and page in one two-byte write, then one read that starts at 126.
    assert delta(paged.device_counts(), device) == (2, 10, 2)
    assert (memory.selected_bank, memory.selected_page) == (0, 0x02)
    device = paged.device_counts()
    paged.io.read(0x02, 136, 8)  # 8 bytes in: still starts early, one transaction
    paged.io.read(0x02, 200, 8)  # far in: a two-byte check, then the bytes
    assert delta(paged.device_counts(), device) == (3, 18 + 2 + 8, 0)  # no select written
    paged.io.read(0x01, 128, 4)
    assert memory.selected_page == 0x01


def test_after_a_software_reset_no_page_00h_bytes_pass_for_another_page(paged: ModuleRig) -> None:
    memory = paged.module.memory
    thresholds = memory.peek(0x02, 128, 16)
    assert thresholds != memory.peek(0x00, 128, 16)
    for offset in (128, 176):  # starting early at the select bytes, and a separate check
        assert paged.io.read(0x02, offset, 8) == memory.peek(0x02, offset, 8)
        # SoftwareReset through the bus: the module goes back to page 00h on its own.
        paged.io.write(LOWER, lower.MODULE_CONTROL.offset, bytes((lower.SOFTWARE_RESET,)))
        assert memory.selected_page == 0x00
        with pytest.raises(DeviceRejected):  # no acknowledge while it resets
            paged.io.read(LOWER, 0, 1)
        paged.clock.advance(0.1)
        device = paged.device_counts()
        assert paged.io.read(0x02, offset, 8) == memory.peek(0x02, offset, 8)
        assert memory.selected_page == 0x02
        assert delta(paged.device_counts(), device)[2] == 2  # selected again, once


def test_after_a_reset_a_write_still_lands_on_its_page(paged: ModuleRig) -> None:
    memory = paged.module.memory
    paged.io.read(vendor.PAGE, vendor.TARGET_GAIN.offset, 2)
    paged.module.faults.inject(Fault("reset"))
    paged.clock.advance(0.1)
    before = memory.peek(0x00, 128, 128)
    gain = (1900).to_bytes(2, "big")
    paged.io.write(vendor.PAGE, vendor.TARGET_GAIN.offset, gain)
    assert memory.peek(vendor.PAGE, vendor.TARGET_GAIN.offset, 2) == gain
    assert memory.peek(0x00, 128, 128) == before


def test_a_page_the_module_refuses_is_never_read(paged: ModuleRig) -> None:
    """CMIS 5.x Page Mapping: the module does not accept page 20h (not implemented) and
    falls back to bank 0 page 00h. PagedIo sees it in the select bytes it reads with the
    data, selects once more, and reports the page refused (DeviceRejected): no byte of
    page 00h comes back as page 20h, none is written there."""
    memory = paged.module.memory
    before = memory.peek(0x00, 128, 128)
    paged.io.read(0x02, 128, 8)  # another page selected before: it is left too
    for offset in (128, 200):  # early start at the select bytes, and a separate check
        with pytest.raises(DeviceRejected, match="does not select page 20h"):
            paged.io.read(0x20, offset, 16)
        assert (memory.selected_bank, memory.selected_page) == (0, 0x00)
    with pytest.raises(DeviceRejected):
        paged.io.write(0x20, 128, b"\x01")
    assert memory.peek(0x00, 128, 128) == before
    # the next access selects its page again and works
    assert paged.io.read(0x02, 128, 8) == memory.peek(0x02, 128, 8)


def test_nobody_at_the_device_address_is_a_nack(paged: ModuleRig) -> None:
    bus = paged.bus
    assert isinstance(bus, SmbusBus | BridgeBus)
    bus.device_address = 0x51
    with pytest.raises(DeviceRejected, match="NACK"):
        bus.read(0, 1)
    bus.device_address = 0x50
    assert bus.read(0, 1) == b"\x18"


def test_a_raw_bus_moves_128_bytes_in_one_transaction(paged: ModuleRig) -> None:
    assert paged.bus is not None
    paged.io.read(0x00, 128, 1)
    device = paged.device_counts()
    data = paged.bus.read(128, 128)
    assert data == paged.module.memory.peek(0x00, 128, 128)
    assert delta(paged.device_counts(), device) == (1, 128, 0)
    paged.bus.write(128 + 2, b"\x00")  # an ro byte: acknowledged, not stored
    assert delta(paged.device_counts(), device) == (2, 128, 1)


# ---- optoe: the file layout --------------------------------------------------------------------


def marker(page: int, byte: int) -> int:
    """A byte value that tells neighbouring pages and neighbouring bytes apart."""
    return byte if page == LOWER else (page * 37 + byte * 3 + 11) % 256


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec-eeprom"
    path.write_bytes(optoe_layout(
        bytes(marker(LOWER, b) for b in range(128)),
        lambda page: bytes(marker(page, b) for b in range(128, 256))))
    return path


pages = st.integers(0, 255)
spans = st.integers(128, 255).flatmap(lambda o: st.tuples(st.just(o), st.integers(1, 256 - o)))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=pages, span=spans)
def test_optoe_reads_follow_the_documented_layout(spec_file: Path, page: int,
                                                  span: tuple[int, int]) -> None:
    offset, length = span
    io = OptoeIo(str(spec_file))
    try:
        assert io.read(page, offset, length) == bytes(
            marker(page, b) for b in range(offset, offset + length))
        assert io.read(LOWER, offset - 128, 1) == bytes((offset - 128,))
        assert io.stats.transactions == 2
    finally:
        io.close()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=pages, span=spans, seed=st.integers(0, 2**32 - 1))
def test_optoe_writes_land_at_the_documented_offset(spec_file: Path, page: int,
                                                    span: tuple[int, int], seed: int) -> None:
    offset, length = span
    original = spec_file.read_bytes()
    data = random.Random(seed).randbytes(length)
    io = OptoeIo(str(spec_file))
    try:
        io.write(page, offset, data)
    finally:
        io.close()
    written = spec_file.read_bytes()
    spec_file.write_bytes(original)
    # Walk the file from its own side: every file offset decoded by the layout.
    for n, value in enumerate(written):
        where = (LOWER, n) if n < 128 else (n // 128 - 1, 128 + n % 128)
        if where[0] == page and offset <= where[1] < offset + length:
            assert value == data[where[1] - offset], n
        else:
            assert value == original[n], n


def test_optoe_short_read_is_a_protocol_error(tmp_path: Path) -> None:
    path = tmp_path / "flat-eeprom"
    path.write_bytes(bytes(2 * PAGE_SIZE))  # lower memory and page 00h only
    io = OptoeIo(str(path))
    try:
        assert io.read(0x00, 128, 128) == bytes(128)
        with pytest.raises(ProtocolError, match="returned 0"):
            io.read(0x11, 128, 4)
    finally:
        io.close()


@pytest.mark.parametrize(("code", "raised"), [
    (errno.ENXIO, DeviceRejected), (errno.EREMOTEIO, DeviceRejected),
    (errno.EIO, DeviceRejected), (errno.ETIMEDOUT, DeviceTimeout),
    (errno.ENODEV, DeviceUnreachable),
])
def test_optoe_kernel_errors_map_to_the_device_errors(
        spec_file: Path, monkeypatch: pytest.MonkeyPatch, code: int,
        raised: type[DeviceError]) -> None:
    def failing(fd: int, length: int, offset: int) -> bytes:
        raise OSError(code, os.strerror(code))

    io = OptoeIo(str(spec_file))
    try:
        io.read(LOWER, 0, 1)
        monkeypatch.setattr(os, "pread", failing)
        with pytest.raises(raised):
            io.read(LOWER, 0, 1)
    finally:
        io.close()


# ---- i2c-dev ---------------------------------------------------------------------------------


def test_i2c_dev_read_is_one_combined_transfer(slave: I2cSlave) -> None:
    wire = SlaveOnWire(slave)
    bus = SmbusBus(7, smbus=wire)
    try:
        assert bus.address == "/dev/i2c-7@0x50"
        bus.read(0, 128)
        bus.write(126, b"\x00\x02")
        assert wire.calls == [[(0x50, False, 1), (0x50, True, 128)], [(0x50, False, 3)]]
    finally:
        bus.close()


@pytest.mark.parametrize(("code", "raised"), [
    (errno.ENXIO, DeviceRejected), (errno.EREMOTEIO, DeviceRejected),
    (errno.EIO, DeviceRejected), (errno.ETIMEDOUT, DeviceTimeout),
    (errno.EAGAIN, DeviceTimeout), (errno.ENODEV, DeviceUnreachable),
])
def test_i2c_dev_errors_map_to_the_device_errors(code: int, raised: type[DeviceError]) -> None:
    class FailingAdapter:
        def i2c_rdwr(self, *msgs: i2c_msg) -> None:
            raise OSError(code, os.strerror(code))

    bus = SmbusBus("/dev/i2c-7", smbus=FailingAdapter())
    try:
        with pytest.raises(raised):
            bus.read(0, 1)
        with pytest.raises(raised):
            bus.write(26, b"\x00")
        assert bus.stats == IoStats(transactions=2)
    finally:
        bus.close()


def test_i2c_dev_a_device_that_is_no_i2c_bus_is_unreachable() -> None:
    with pytest.raises(DeviceUnreachable, match="/dev/null"):
        open_cmis_io("i2c-dev", "/dev/null")


# ---- the bridge: resynchronisation after a bad reply --------------------------------------------


def test_bridge_reports_its_bus_speed(bridged: ModuleRig) -> None:
    assert isinstance(bridged.bus, BridgeBus)
    assert bridged.bus.bus_khz == 400


@pytest.mark.parametrize("fault", ["garbage", "truncate", "drop"])
def test_bridge_resyncs_after_a_spoiled_reply(bridged: ModuleRig, fault: str) -> None:
    bridged.set_timeout(SHORT_TIMEOUT_SECONDS)
    bridged.io.read(LOWER, 0, 1)  # opened again, at the new timeout
    bridged.module.faults.inject(Fault(fault, count=1))
    with pytest.raises(ProtocolError if fault == "garbage" else DeviceTimeout):
        bridged.io.read(LOWER, 0, 2)
    assert bridged.io.read(0x00, 129, 16) == b"MegaScaleOut    "
    assert bridged.io.read(LOWER, 0, 1) == b"\x18"


def test_bridge_late_reply_is_not_taken_for_the_next_answer(bridged: ModuleRig) -> None:
    bridged.set_timeout(SHORT_TIMEOUT_SECONDS)
    bridged.io.read(0x00, 129, 16)
    # The reply comes 0.15 s after the host gave up: while it waits for its V.
    bridged.module.faults.inject(Fault("latency", seconds=SHORT_TIMEOUT_SECONDS + 0.15, count=1))
    with pytest.raises(DeviceTimeout):
        bridged.io.read(LOWER, 0, 2)  # its late reply, OK 1852, is skipped by the resync
    assert bridged.io.read(0x00, 129, 16) == b"MegaScaleOut    "


class ScriptedBridge:
    """A TCP peer that answers every line through ``answer``: a board that misbehaves."""

    def __init__(self, answer: Callable[[str], str | None]):
        self.answer = answer
        self.lines: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"socket://127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            connection, _ = self.server.accept()
        except OSError:
            return
        with connection:
            pending = b""
            while True:
                try:
                    data = connection.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                pending += data
                while b"\n" in pending:
                    raw, pending = pending.split(b"\n", 1)
                    line = raw.decode().strip()
                    self.lines.append(line)
                    reply = self.answer(line)
                    if reply is not None:
                        connection.sendall(reply.encode() + b"\n")

    def close(self) -> None:
        self.server.close()


def test_bridge_of_another_protocol_version_is_refused() -> None:
    peer = ScriptedBridge(lambda line: "OK MSO-I2C-BRIDGE 2 1000")
    try:
        with pytest.raises(ProtocolError, match="version 2"):
            open_cmis_io("i2c-bridge", peer.url, timeout_seconds=TIMEOUT_SECONDS)
    finally:
        peer.close()


def test_bridge_refusals_keep_the_line_in_step_and_wrong_lengths_resync() -> None:
    replies = {"R 50 00 01": "ERR RANGE count", "R 50 01 01": "ERR SYNTAX what",
               "R 50 02 01": "OK 1852", "R 50 03 01": "OK 07"}

    def answer(line: str) -> str:
        return "OK MSO-I2C-BRIDGE 1 400" if line == "V" else replies[line]

    peer = ScriptedBridge(answer)
    bus = BridgeBus(peer.url, timeout_seconds=TIMEOUT_SECONDS)
    try:
        with pytest.raises(ProtocolError, match="ERR RANGE"):
            bus.read(0, 1)
        with pytest.raises(ProtocolError, match="ERR SYNTAX"):
            bus.read(1, 1)
        with pytest.raises(ProtocolError, match="2 hex digits"):
            bus.read(2, 1)  # a reply of the wrong length: the line may be off by one
        assert bus.read(3, 1) == b"\x07"
        assert peer.lines == ["V", "R 50 00 01", "R 50 01 01", "R 50 02 01", "V", "R 50 03 01"]
        assert bus.stats == IoStats(transactions=4, bytes_read=1)
    finally:
        bus.close()
        peer.close()


# ---- the lab: what its inventory says opens ----------------------------------------------------


def test_the_lab_inventory_opens_every_amplifier_over_both_bridge_lines(lab: Lab) -> None:
    document = yaml.safe_load((lab.state_dir / "inventory.yaml").read_text())
    amps = [d for d in document["devices"] if d["kind"] == "amp"]
    assert {d["name"] for d in amps} == set(lab.amps)
    for entry in amps:
        name = entry["name"]
        pty = lab.bridges[name].path
        assert pty is not None
        for address in (entry["address"], pty):
            io = open_cmis_io(entry["transport"], address, device_address=entry["i2c_address"],
                              timeout_seconds=entry["timeout_seconds"], latched=LATCHED)
            try:
                serial = io.read(page00.SERIAL.page, page00.SERIAL.offset, page00.SERIAL.size)
                assert serial.decode().strip() == lab.amps[name].serial
            finally:
                io.close()
