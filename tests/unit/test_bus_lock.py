"""Two processes at one module: the page select is taken in turns (drivers/transports/buslock).

A read far into a page checks the select bytes in a transaction of its own, then reads.
Another process's select between the two would make this one return another page's bytes
(seen in the lab: two exporters at one amplifier, a shard's features() cached from page 02h).
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from drivers.cmis.fields import LOWER
from drivers.cmis.io import NoLock, PagedIo, PageLock
from drivers.errors import DeviceTimeout, DeviceUnreachable
from drivers.transports.buslock import BusLock, lock_path
from tests.support.cmis_doubles import ModuleBus

PAGES = {LOWER: bytes(128), **{page: bytes([page]) * 128 for page in (0x00, 0x01, 0x02)}}
ADDRESS = "socket://127.0.0.1:7001@0x50"


class InterleavingBus(ModuleBus):
    """At this host's separate check of the select bytes, the other host reads page 02h:
    its thread runs, and this one waits for it a while (as a busy bus would let it in)."""

    def __init__(self) -> None:
        super().__init__(PAGES)
        self.other: PagedIo | None = None
        self.others: list[threading.Thread] = []

    def read(self, offset: int, length: int) -> bytes:
        data = super().read(offset, length)
        other = self.other
        if other is not None and (offset, length) == (126, 2):
            self.other = None
            thread = threading.Thread(target=other.read, args=(0x02, 200, 4))
            thread.start()
            thread.join(0.3)
            self.others.append(thread)
        return data


def two_hosts(lock: PageLock, other_lock: PageLock) -> tuple[InterleavingBus, PagedIo]:
    bus = InterleavingBus()
    mine = PagedIo(bus, latched=frozenset(), lock=lock)
    bus.other = PagedIo(bus, latched=frozenset(), lock=other_lock)
    return bus, mine


def test_another_process_waits_while_this_one_reads_under_its_page(tmp_path: Path) -> None:
    bus, mine = two_hosts(BusLock(ADDRESS, directory=tmp_path),
                          BusLock(ADDRESS, directory=tmp_path))
    assert mine.read(0x01, 200, 4) == b"\x01" * 4
    for thread in bus.others:
        thread.join(2)
    # the other host read after this one let go, under its own page
    assert [op.selected for op in bus.ops if op.offset == 200] == [(0, 0x01), (0, 0x02)]


def test_without_the_lock_another_page_would_be_read() -> None:
    """What the lock prevents, shown on the same double: the check passes, the page moves."""
    _bus, mine = two_hosts(NoLock(), NoLock())
    assert mine.read(0x01, 200, 4) == b"\x02" * 4


def test_a_process_that_holds_the_lock_too_long_is_a_timeout(tmp_path: Path) -> None:
    bus = ModuleBus(PAGES)
    bus.timeout_seconds = 0.05
    io = PagedIo(bus, latched=frozenset(), lock=BusLock(ADDRESS, directory=tmp_path))
    holder = os.open(lock_path(ADDRESS, tmp_path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another process, stopped mid-read
        with pytest.raises(DeviceTimeout, match="held the module's page select for over"):
            io.read(0x01, 200, 4)
        assert not bus.ops  # nothing reached the module
    finally:
        os.close(holder)
    assert io.read(0x01, 200, 4) == b"\x01" * 4
    io.close()


def test_lower_memory_takes_no_lock(tmp_path: Path) -> None:
    bus = ModuleBus(PAGES)
    lock = BusLock(ADDRESS, directory=tmp_path / "never")
    io = PagedIo(bus, latched=frozenset(), lock=lock)
    io.read(LOWER, 0, 4)
    io.write(LOWER, 26, b"\x00")
    assert not (tmp_path / "never").exists()


def test_the_lock_file_is_private_and_never_a_symlink_followed(tmp_path: Path) -> None:
    directory = tmp_path / "locks"
    lock = BusLock(ADDRESS, directory=directory)
    with lock.held(1):
        pass
    assert directory.stat().st_mode & 0o777 == 0o700
    assert lock.path.stat().st_mode & 0o777 == 0o600
    lock.close()
    lock.path.unlink()
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    lock.path.symlink_to(target)
    with pytest.raises(DeviceUnreachable, match="cannot make the lock"), lock.held(1):
        pass
    assert target.read_text() == "keep"


def test_each_address_has_its_own_lock_file(tmp_path: Path) -> None:
    names = {lock_path(address, tmp_path).name for address in (
        ADDRESS, "socket://127.0.0.1:7002@0x50", "/dev/i2c-3@0x50", "/dev/i2c-3@0x51")}
    assert len(names) == 4
