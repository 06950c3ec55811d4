"""One full amplifier status poll on the I2C bus: what it costs, against its floor.

Everything runs side by side in one process against the amplifier emulator,
through the real host stack (AmpDriver -> CmisModule -> PagedIo -> the i2c-dev
transport over smbus2) onto an emulated adapter whose module accounts bus time
at 400 kHz, 9 bit-times a byte plus start, address, offset, repeated start and
stop per transaction. Three figures:

- the poll ``AmpDriver.status()`` makes, in steady state (identity and
  capabilities known, page B0h selected);
- the physical lower bound for the registers that poll needs: exactly those
  bytes, in the fewest transactions the memory map allows (latched flag bytes
  may not be read through; a gap is bridged only where that is cheaper than a
  new transaction); page selection costs nothing because it is already done;
- the same registers read field by field, one transaction per field, as code
  that walks a field list would.

Usage: python bench/amp_poll.py [--json] [--polls N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from drivers.amp import vendor_page as vp
from drivers.amp.driver import AmpDriver
from drivers.cmis.fields import Field
from drivers.cmis.io import PagedIo, latched_bytes
from drivers.cmis.module import CmisModule
from drivers.cmis.pages import STANDARD_FIELDS
from drivers.transports.i2c_smbus import SmbusBus
from emulators.amp.i2c import BusStats, I2cSlave
from emulators.amp.i2c_dev import EmulatedAdapter
from emulators.amp.model import AmplifierModule
from emulators.clock import SteppedClock
from emulators.optics.model import OpticalModel, Source

POLL_FIELDS: tuple[Field, ...] = (*CmisModule.STATUS_FIELDS, *vp.MONITORS,
                                  *AmpDriver.SETTINGS_FIELDS)


@dataclass
class Cost:
    transactions: int
    bytes_moved: int
    bus_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"transactions": self.transactions, "bytes": self.bytes_moved,
                "bus_seconds": self.bus_seconds}


def build() -> tuple[AmpDriver, I2cSlave, SteppedClock]:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    module = AmplifierModule("amp-bench", optics)
    optics.add(Source("span", {"out": -9.0}))
    optics.patch("span:out", "amp-bench:in")
    slave = I2cSlave(module)
    bus = SmbusBus(0, smbus=EmulatedAdapter(slave))
    io = PagedIo(bus, latched=latched_bytes((*STANDARD_FIELDS, *vp.FIELDS)))
    cmis = CmisModule(io, name="amp-bench", extra_fields=vp.FIELDS, sleep=clock.advance,
                      monotonic=clock.now)
    return AmpDriver(cmis), slave, clock


def measure(slave: I2cSlave, action: Any) -> Cost:
    slave.stats = BusStats()
    action()
    stats = slave.stats
    return Cost(stats.transactions, stats.bytes_read + stats.bytes_written, stats.seconds)


def lower_bound(slave: I2cSlave, fields: tuple[Field, ...],
                latched: frozenset[tuple[int, int]]) -> Cost:
    """Fewest-bus-time reads of exactly the bytes ``fields`` occupy."""
    needed: dict[int, set[int]] = {}
    for item in fields:
        if item.access == "wo":
            continue
        needed.setdefault(item.page, set()).update(range(item.offset, item.end))
    total = Cost(0, 0, 0.0)
    for page, wanted in needed.items():
        for segment in _segments(sorted(wanted), page, latched):
            cost = _cheapest(slave, segment)
            total = Cost(total.transactions + cost.transactions,
                         total.bytes_moved + cost.bytes_moved,
                         total.bus_seconds + cost.bus_seconds)
    return total


def _segments(offsets: list[int], page: int,
              latched: frozenset[tuple[int, int]]) -> list[list[int]]:
    """Split where a latched byte lies between two wanted bytes: no read may cross it."""
    segments: list[list[int]] = [[offsets[0]]]
    for previous, offset in itertools.pairwise(offsets):
        if any((page, byte) in latched for byte in range(previous + 1, offset)):
            segments.append([])
        segments[-1].append(offset)
    return segments


def _cheapest(slave: I2cSlave, offsets: list[int]) -> Cost:
    """Dynamic programming over where to start a new transaction inside one segment."""
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and runs[-1][1] == offset:
            runs[-1] = (runs[-1][0], offset + 1)
        else:
            runs.append((offset, offset + 1))
    best: list[Cost] = [Cost(0, 0, 0.0)]
    for end in range(1, len(runs) + 1):
        options = []
        for start in range(end):
            length = runs[end - 1][1] - runs[start][0]
            if length > 128:
                continue
            seconds = slave.transaction_seconds("read", length)
            prior = best[start]
            options.append(Cost(prior.transactions + 1, prior.bytes_moved + length,
                                prior.bus_seconds + seconds))
        best.append(min(options, key=lambda c: c.bus_seconds))
    return best[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--polls", type=int, default=200, help="polls for the host CPU figure")
    args = parser.parse_args(argv)

    driver, slave, clock = build()
    driver.status()  # identity, capabilities and the page select, once
    clock.advance(1.0)
    poll = measure(slave, driver.status)
    latched = driver.module.latched
    floor = lower_bound(slave, POLL_FIELDS, latched)

    def field_by_field() -> None:
        for item in POLL_FIELDS:
            if item.access != "wo":
                driver.module.read_raw(item.page, item.offset, item.size)

    naive = measure(slave, field_by_field)
    started = time.perf_counter()
    for _ in range(args.polls):
        driver.status()
    host_seconds = (time.perf_counter() - started) / args.polls

    document = {
        "bus_hz": slave.bus_hz,
        "fields": len(POLL_FIELDS),
        "poll": poll.as_dict(),
        "lower_bound": floor.as_dict(),
        "field_by_field": naive.as_dict(),
        "ratios": {
            "poll_over_lower_bound": poll.bus_seconds / floor.bus_seconds,
            "field_by_field_over_poll": naive.bus_seconds / poll.bus_seconds,
        },
        "host_cpu_seconds_per_poll": host_seconds,
    }
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    print(f"amplifier status poll, {len(POLL_FIELDS)} fields, I2C at "
          f"{slave.bus_hz // 1000} kHz (bus time from the emulator's accounting)")
    print(f"{'':22}{'transactions':>13}{'bytes':>8}{'bus ms':>10}")
    for label, cost in (("poll (AmpDriver)", poll), ("lower bound", floor),
                        ("field by field", naive)):
        print(f"{label:22}{cost.transactions:>13}{cost.bytes_moved:>8}"
              f"{cost.bus_seconds * 1000:>10.3f}")
    ratios = document["ratios"]
    print(f"poll / lower bound          {ratios['poll_over_lower_bound']:.3f}x (goal <= 1.25x)")
    print(f"field by field / poll       {ratios['field_by_field_over_poll']:.2f}x")
    print(f"host CPU per poll           {host_seconds * 1000:.3f} ms "
          f"(Python driver stack, {args.polls} polls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
