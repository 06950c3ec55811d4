"""What learning a unit's features costs: opening an OCS driver, and ``ocs status``,
on a unit with the project's extensions and on a plain unit of the family.

Two emulated 64x64 OCSes are served on loopback TCP (``emulators.ocs``, stepped clock:
nothing waits for a switch), one with every feature and one plain (no LC figures, no
boot mode, no alarms, ``:SYST:ERR?`` as its only error query). Each round, in an order
reversed every other round, times through the real driver (pyvisa-py):

- ``open_clear``: the baseline, what opening sent before the driver learnt features:
  connect, ``*CLS`` and one ``*OPC?`` round trip (so that the write is known to be in);
- ``open_probe_full`` / ``open_probe_plain``: ``OcsDriver.open()`` on a new session,
  whose one write asks the size and every optional feature;
- ``status_full`` / ``status_plain``: what ``msoctl ocs status`` asks of a unit with
  three connections, after the open.

The program messages each unit received per operation are counted at the unit. Figures
are medians; the ratios are against ``open_clear``. Nothing is asserted about them.

Run: ``.venv/bin/python bench/ocs_open.py [--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from drivers.ocs.connect import ocs_session
from drivers.ocs.driver import OcsDriver
from emulators.clock import SteppedClock
from emulators.loopthread import LoopThread
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.server import ScpiTcpServer

DEFAULT_ROUNDS = 200
TIMEOUT_SECONDS = 5.0


@contextmanager
def served(runner: LoopThread, **options: Any) -> Iterator[tuple[OcsDevice, str]]:
    device = OcsDevice("ocs-bench", OpticalModel(SteppedClock()), **options)
    device.only((1, 2, 3), (65, 66, 67))
    server = ScpiTcpServer(device, functools.partial(make_interpreter, device))
    runner.call(server.start())
    try:
        yield device, f"TCPIP::127.0.0.1::{server.port}::SOCKET"
    finally:
        runner.call(server.stop())


def open_clear(address: str) -> None:
    session = ocs_session("ocs-bench", "visa", address, timeout_seconds=TIMEOUT_SECONDS)
    session.open()
    try:
        session.write("*CLS")
        session.fence()
    finally:
        session.close()


def open_probe(address: str) -> None:
    session = ocs_session("ocs-bench", "visa", address, timeout_seconds=TIMEOUT_SECONDS)
    OcsDriver(session).open().close()


def status(driver: OcsDriver) -> None:
    """What ``msoctl ocs status`` asks, in its order."""
    features = driver.features()
    driver.identity()
    driver.connections()
    driver.lc_status()
    if features.has("boot_mode"):
        driver.boot_mode()
    if features.has("alarms"):
        driver.alarm_port()


def measure(rounds: int) -> dict[str, Any]:
    runner = LoopThread("bench-ocs-open")
    runner.start()
    try:
        with served(runner) as (full, full_address), served(
                runner, extensions=False, alarms=False, identity_form="polatis",
                error_extras=False) as (plain, plain_address):
            drivers = {
                "full": OcsDriver(ocs_session("ocs-bench", "visa", full_address,
                                              timeout_seconds=TIMEOUT_SECONDS)).open(),
                "plain": OcsDriver(ocs_session("ocs-bench", "visa", plain_address,
                                               timeout_seconds=TIMEOUT_SECONDS)).open(),
            }
            units = {"full": full, "plain": plain}
            variants: dict[str, tuple[str, Callable[[], None]]] = {
                "open_clear": ("full", lambda: open_clear(full_address)),
                "open_probe_full": ("full", lambda: open_probe(full_address)),
                "open_probe_plain": ("plain", lambda: open_probe(plain_address)),
                "status_full": ("full", lambda: status(drivers["full"])),
                "status_plain": ("plain", lambda: status(drivers["plain"])),
            }
            seconds: dict[str, list[float]] = {name: [] for name in variants}
            messages: dict[str, int] = {}
            for index in range(rounds):
                order = list(variants) if index % 2 == 0 else list(reversed(variants))
                for name in order:
                    unit, action = variants[name]
                    before = units[unit].requests.received
                    started = time.perf_counter()
                    action()
                    seconds[name].append(time.perf_counter() - started)
                    messages[name] = units[unit].requests.received - before
            for driver in drivers.values():
                driver.close()
    finally:
        runner.stop()
    baseline = statistics.median(seconds["open_clear"])
    return {"rounds": rounds, "variants": {
        name: {"median_seconds": statistics.median(values),
               "over_open_clear": statistics.median(values) / baseline,
               "messages": messages[name]}
        for name, values in seconds.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args(argv)
    result = {"benchmark": "ocs_open", **measure(max(1, args.rounds))}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'variant':<18} {'median ms':>10} {'x open_clear':>13} {'messages':>9}")
    for name, figures in result["variants"].items():
        print(f"{name:<18} {figures['median_seconds'] * 1000:>10.3f} "
              f"{figures['over_open_clear']:>13.2f} {figures['messages']:>9}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
