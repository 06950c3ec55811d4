"""Remapping an OCS: one bulk command against one command per connection.

Serves the default lab (``emulators.lab.Lab``, real clock) and drives its OCS
``ocs-a`` through the real driver (``drivers.ocs.connect.open_ocs``), over the
pyvisa TCP socket transport and, unless ``--no-serial``, the serial pty
console. Every round draws a start map and a target map that differ on every
one of ``--ports`` connections, and each variant goes from the same start map
to the same target map:

- ``bulk_tcp``: one ``OcsDriver.replace_map`` (``:OXC:SWIT:CONN:ONLY``), which
  the driver follows with ``*OPC?``, an error-queue check and a read-back.
- ``per_connection_move_tcp``: each connection re-pointed on its own with
  ``disconnect([ingress])`` then ``connect({ingress: egress})``, ordered along
  the permutation's cycles so the egress port wanted is always free: two
  driver calls, two reconfigurations per connection, the rest stay lit.
- ``per_connection_clear_tcp``: ``disconnect_all()`` then one
  ``connect({ingress: egress})`` per connection: the fewest single-connection
  changes, but every path goes dark on the way.
- ``bulk_serial``: the bulk remap over the serial console (a pty: it does not
  throttle to 38400 baud, so the line time a real console adds is estimated
  from the bytes exchanged).
- ``bulk_tcp_nodelay``: diagnostic, not what the driver does: the bulk remap
  with TCP_NODELAY set on pyvisa-py's socket, to show what Nagle's algorithm
  costs the command-then-``*OPC?`` pattern.

Switching time is what the device itself reports after each change
(``OcsDriver.lc_status().last_switching_seconds``); it is read after the timed
call, while the engine is idle, and is not counted in the wall time. The order
of the variants is reversed every other round. Figures are medians over the
rounds; nothing is asserted about them.

Run: ``.venv/bin/python bench/ocs_remap.py [--rounds N] [--ports N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from drivers.errors import DeviceError
from drivers.ocs.connect import CONSOLE_BAUD, open_ocs
from drivers.ocs.driver import OcsDriver
from drivers.transports.base import StreamTransport
from emulators.clock import RealClock
from emulators.lab import Lab

DEVICE = "ocs-a"
DEFAULT_ROUNDS = 3
DEFAULT_PORTS = 64
TIMEOUT_SECONDS = 5.0
BITS_PER_BYTE_8N1 = 10  # start bit, 8 data bits, stop bit


class UsageError(Exception):
    """Arguments the lab cannot satisfy (exit code 2)."""


# ---- measuring -------------------------------------------------------------------------


class CountingTransport:
    """Wraps a transport and counts the bytes that cross it."""

    def __init__(self, inner: StreamTransport):
        self.inner = inner
        self.timeout_seconds = inner.timeout_seconds
        self.bytes_sent = 0
        self.bytes_received = 0

    @property
    def address(self) -> str:
        return self.inner.address

    def open(self) -> None:
        self.inner.open()

    def close(self) -> None:
        self.inner.close()

    def write(self, data: bytes) -> None:
        self.inner.write(data)
        self.bytes_sent += len(data)

    def read_until(self, terminator: bytes) -> bytes:
        data = self.inner.read_until(terminator)
        self.bytes_received += len(data)
        return data

    def discard_input(self) -> None:
        self.inner.discard_input()


@dataclass
class Link:
    """One driver connection to the OCS, with its byte counter."""

    transport: str  # "visa-tcp", "serial-pty"
    driver: OcsDriver
    counter: CountingTransport


@dataclass(frozen=True)
class Sample:
    """One variant's remap in one round.

    ``wall_seconds`` sums the timed driver calls only; ``switching_seconds``
    sums what the device reported after each (``None`` if it reports nothing).
    """

    wall_seconds: float
    switching_seconds: float | None
    driver_calls: int
    bytes_sent: int
    bytes_received: int


Call = Callable[[], object]


def timed_calls(link: Link, calls: Sequence[Call]) -> Sample:
    """Time each driver call; after each, read the device's switching time, untimed."""
    wall = 0.0
    switching: float | None = 0.0
    sent = received = 0
    for call in calls:
        sent_before, received_before = link.counter.bytes_sent, link.counter.bytes_received
        start = time.perf_counter()
        call()
        wall += time.perf_counter() - start
        sent += link.counter.bytes_sent - sent_before
        received += link.counter.bytes_received - received_before
        # Every call changed the map and its *OPC? fence has returned, so the
        # engine is idle and this is the reconfiguration that call caused.
        reported = link.driver.lc_status().last_switching_seconds
        switching = None if switching is None or reported is None else switching + reported
    return Sample(wall, switching, len(calls), sent, received)


# ---- the remaps ------------------------------------------------------------------------


def random_maps(rng: random.Random, ports: int, size: int) -> tuple[dict[int, int], dict[int, int]]:
    """A start and a target map of ingress 1..ports onto as many egress ports.

    The target sends every ingress port somewhere else than the start does, so
    every connection changes.
    """
    if ports < 2:
        raise ValueError("a remap that changes every connection needs at least 2 ports")
    egress_pool = list(range(size + 1, size + ports + 1))
    start_egress = rng.sample(egress_pool, ports)
    while True:
        target_egress = rng.sample(egress_pool, ports)
        if all(a != b for a, b in zip(start_egress, target_egress, strict=True)):
            break
    ingress = range(1, ports + 1)
    return dict(zip(ingress, start_egress, strict=True)), dict(zip(ingress, target_egress,
                                                                    strict=True))


def move_plan(start: Mapping[int, int], target: Mapping[int, int]) -> list[tuple[str, int]]:
    """``("disconnect", ingress)`` / ``("connect", ingress)`` steps, one of each per connection.

    Follows each cycle of the permutation backwards so that the egress port an
    ingress is re-pointed to has just been freed: in a cycle i1 -> i2 -> ... -> ik
    (where ``target[i_m] == start[i_m+1]``) disconnect i1, re-point ik, ..., i2,
    then connect i1.
    """
    if set(start) != set(target) or set(start.values()) != set(target.values()):
        raise ValueError("start and target must connect the same ports")
    holder = {egress: ingress for ingress, egress in start.items()}
    steps: list[tuple[str, int]] = []
    seen: set[int] = set()
    for first in sorted(start):
        if first in seen:
            continue
        cycle = [first]
        seen.add(first)
        following = holder[target[first]]
        while following != first:
            cycle.append(following)
            seen.add(following)
            following = holder[target[following]]
        steps.append(("disconnect", first))
        for ingress in reversed(cycle[1:]):
            steps += [("disconnect", ingress), ("connect", ingress)]
        steps.append(("connect", first))
    return steps


def run_bulk(link: Link, start: Mapping[int, int], target: Mapping[int, int]) -> Sample:
    return timed_calls(link, [lambda: link.driver.replace_map(target)])


def run_per_connection_move(link: Link, start: Mapping[int, int],
                            target: Mapping[int, int]) -> Sample:
    calls = [_disconnect(link.driver, ingress) if action == "disconnect"
             else _connect(link.driver, ingress, target[ingress])
             for action, ingress in move_plan(start, target)]
    return timed_calls(link, calls)


def run_per_connection_clear(link: Link, start: Mapping[int, int],
                             target: Mapping[int, int]) -> Sample:
    calls: list[Call] = [link.driver.disconnect_all]
    calls += [_connect(link.driver, ingress, target[ingress]) for ingress in sorted(target)]
    return timed_calls(link, calls)


def _disconnect(driver: OcsDriver, ingress: int) -> Call:
    return lambda: driver.disconnect([ingress])


def _connect(driver: OcsDriver, ingress: int, egress: int) -> Call:
    return lambda: driver.connect({ingress: egress})


Runner = Callable[[Link, Mapping[int, int], Mapping[int, int]], Sample]


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    link: Link
    run: Runner
    diagnostic: bool = False


# ---- connections -------------------------------------------------------------------------


def open_link(transport: str, kind: str, address: str) -> Link:
    driver = open_ocs(DEVICE, kind, address, timeout_seconds=TIMEOUT_SECONDS)
    counter = CountingTransport(driver.session.transport)
    driver.session.transport = counter
    return Link(transport, driver, counter)


def set_tcp_nodelay(link: Link) -> bool:
    """Set TCP_NODELAY on pyvisa-py's socket under the driver; ``False`` if not reachable.

    pyvisa-py 0.8 refuses ``VI_ATTR_TCPIP_NODELAY`` through ``set_visa_attribute``
    (UnknownAttribute), so this reaches into its session for the socket. Diagnostic
    only: it depends on pyvisa-py internals.
    """
    resource: Any = getattr(link.counter.inner, "_resource", None)
    try:
        sock = resource.visalib.sessions[resource.session].interface
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, KeyError, TypeError, OSError):
        return False
    return True


# ---- the run -------------------------------------------------------------------------------


def run_benchmark(*, rounds: int, ports: int, serial: bool, seed: int) -> dict[str, Any]:
    """Serve a lab, run every variant ``rounds`` times, return the JSON document."""
    with tempfile.TemporaryDirectory(prefix="ocs-remap-") as state_dir, \
            Lab(Path(state_dir), clock=RealClock(), serial_consoles=serial) as lab:
        tcp_address = f"TCPIP::127.0.0.1::{lab.tcp[DEVICE].port}::SOCKET"
        console_path = lab.consoles[DEVICE].path if serial else None
        links: list[Link] = []
        try:
            tcp = open_link("visa-tcp", "visa", tcp_address)
            links.append(tcp)
            size = tcp.driver.size
            if not 2 <= ports <= size:
                raise UsageError(f"--ports must be 2..{size} for {DEVICE}")
            variants = [
                Variant("bulk_tcp", "bulk CONN:ONLY", tcp, run_bulk),
                Variant("per_connection_move_tcp", "per-connection disconnect+connect", tcp,
                        run_per_connection_move),
                Variant("per_connection_clear_tcp", "per-connection after DISC:ALL", tcp,
                        run_per_connection_clear),
            ]
            if console_path is not None:
                console = open_link("serial-pty", "serial", console_path)
                links.append(console)
                variants.append(Variant("bulk_serial", "bulk CONN:ONLY", console, run_bulk))
            nodelay = open_link("visa-tcp", "visa", tcp_address)
            links.append(nodelay)
            if set_tcp_nodelay(nodelay):
                variants.append(Variant("bulk_tcp_nodelay", "bulk, TCP_NODELAY (diagnostic)",
                                        nodelay, run_bulk, diagnostic=True))
            identity = tcp.driver.identity()
            lc = tcp.driver.lc_status()
            samples = measure(variants, rounds=rounds, ports=ports, size=size, seed=seed)
        finally:
            for link in links:
                link.driver.close()
    return {
        "benchmark": "ocs_remap",
        "device": {
            "name": DEVICE,
            "model": identity.model,
            "firmware": identity.firmware,
            "size": size,
            "cell_temperature_celsius": lc.cell_temperature_celsius,
        },
        "clock": "RealClock",
        "ports": ports,
        "rounds": rounds,
        "seed": seed,
        "transports": {"visa_tcp": tcp_address, "serial_pty": console_path},
        "variants": {v.key: summarise(v, samples[v.key]) for v in variants},
        "ratios": ratios(samples),
    }


def measure(variants: Sequence[Variant], *, rounds: int, ports: int, size: int,
            seed: int) -> dict[str, list[Sample]]:
    rng = random.Random(seed)
    samples: dict[str, list[Sample]] = {v.key: [] for v in variants}
    for round_index in range(rounds):
        start, target = random_maps(rng, ports, size)
        order = variants if round_index % 2 == 0 else list(reversed(variants))
        for variant in order:
            driver = variant.link.driver
            driver.replace_map(start)  # untimed; fenced, so the engine is idle after it
            samples[variant.key].append(variant.run(variant.link, start, target))
            final = dict(driver.port_map())
            if final != dict(target):
                raise RuntimeError(f"{variant.key} ended in a different map than the target")
    return samples


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known and len(known) == len(values) else None


def summarise(variant: Variant, samples: Sequence[Sample]) -> dict[str, Any]:
    walls = [s.wall_seconds for s in samples]
    overheads = [None if s.switching_seconds is None else s.wall_seconds - s.switching_seconds
                 for s in samples]
    line_bytes = [s.bytes_sent + s.bytes_received for s in samples]
    return {
        "label": variant.label,
        "transport": variant.link.transport,
        "diagnostic": variant.diagnostic,
        "driver_calls": samples[0].driver_calls,
        "median_wall_seconds": statistics.median(walls),
        "min_wall_seconds": min(walls),
        "max_wall_seconds": max(walls),
        "median_wall_per_call_seconds": statistics.median(
            s.wall_seconds / s.driver_calls for s in samples),
        "median_switching_seconds": _median([s.switching_seconds for s in samples]),
        "median_overhead_seconds": _median(overheads),
        "median_overhead_per_call_seconds": _median(
            [None if o is None else o / s.driver_calls for o, s in zip(overheads, samples,
                                                                       strict=True)]),
        "median_overhead_over_switching": _median(
            [None if o is None or not s.switching_seconds else o / s.switching_seconds
             for o, s in zip(overheads, samples, strict=True)]),
        "median_wall_over_switching": _median(
            [None if not s.switching_seconds else s.wall_seconds / s.switching_seconds
             for s in samples]),
        "median_bytes_sent": statistics.median(s.bytes_sent for s in samples),
        "median_bytes_received": statistics.median(s.bytes_received for s in samples),
        "console_line_seconds_at_38400_baud": statistics.median(line_bytes)
        * BITS_PER_BYTE_8N1 / CONSOLE_BAUD,
        "samples": [asdict(s) for s in samples],
    }


def ratios(samples: Mapping[str, Sequence[Sample]]) -> dict[str, float | None]:
    def over(numerator: str, denominator: str) -> float | None:
        if numerator not in samples or denominator not in samples:
            return None
        return (statistics.median(s.wall_seconds for s in samples[numerator])
                / statistics.median(s.wall_seconds for s in samples[denominator]))

    return {
        "per_connection_move_over_bulk": over("per_connection_move_tcp", "bulk_tcp"),
        "per_connection_clear_over_bulk": over("per_connection_clear_tcp", "bulk_tcp"),
        "bulk_serial_over_bulk_tcp": over("bulk_serial", "bulk_tcp"),
        "bulk_tcp_nodelay_over_bulk_tcp": over("bulk_tcp_nodelay", "bulk_tcp"),
    }


# ---- output ----------------------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.1f}"


def _x(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def render_table(doc: Mapping[str, Any]) -> str:
    device = doc["device"]
    lines = [
        f"OCS remap: {device['name']} ({device['model']}, firmware {device['firmware']}), "
        f"{doc['ports']} connections changed, {doc['rounds']} round(s), "
        f"LC cell {device['cell_temperature_celsius']} degC, real clock",
        "medians over rounds; switch = reconfiguration time the device reports "
        "(:OXC:LC:STIMe?), summed over calls",
        "",
        f"{'variant':<36}{'transport':<12}{'calls':>6}{'wall ms':>10}{'switch ms':>11}"
        f"{'ovh ms':>9}{'ovh/call':>9}{'ovh/sw':>8}{'wall/sw':>8}{'bytes':>8}{'@38400 ms':>11}",
    ]
    for variant in doc["variants"].values():
        line_bytes = variant["median_bytes_sent"] + variant["median_bytes_received"]
        lines.append(
            f"{variant['label']:<36}{variant['transport']:<12}{variant['driver_calls']:>6}"
            f"{_ms(variant['median_wall_seconds']):>10}"
            f"{_ms(variant['median_switching_seconds']):>11}"
            f"{_ms(variant['median_overhead_seconds']):>9}"
            f"{_ms(variant['median_overhead_per_call_seconds']):>9}"
            f"{_x(variant['median_overhead_over_switching']):>8}"
            f"{_x(variant['median_wall_over_switching']):>8}"
            f"{line_bytes:>8.0f}"
            f"{_ms(variant['console_line_seconds_at_38400_baud']):>11}"
        )
    names = {
        "per_connection_move_over_bulk": "per-connection disconnect+connect / bulk",
        "per_connection_clear_over_bulk": "per-connection after DISC:ALL / bulk",
        "bulk_serial_over_bulk_tcp": "bulk serial-pty / bulk visa-tcp",
        "bulk_tcp_nodelay_over_bulk_tcp": "bulk TCP_NODELAY / bulk visa-tcp (diagnostic)",
    }
    lines += ["", "ratios of median wall time"]
    for key, value in doc["ratios"].items():
        if value is not None:
            lines.append(f"  {names[key]:<48}{value:>8.2f}x")
    lines += [
        "",
        "ovh = wall - switch (protocol, fence, error check, read-back, transport); "
        "@38400 ms = line time the bytes would take on a real 38400 8N1 console "
        "(the pty does not throttle)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="OCS remap: one bulk command vs one command per connection, "
                    "against the emulated lab through the real driver.")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help=f"rounds per variant, medians reported (default {DEFAULT_ROUNDS})")
    parser.add_argument("--ports", type=int, default=DEFAULT_PORTS,
                        help=f"connections to remap, 2..64 (default {DEFAULT_PORTS})")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--no-serial", action="store_true",
                        help="skip the bulk remap over the serial pty console")
    parser.add_argument("--seed", type=int, default=1, help="seed for the random maps")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.ports < 2:
        parser.error("--ports must be at least 2")
    try:
        doc = run_benchmark(rounds=args.rounds, ports=args.ports, serial=not args.no_serial,
                            seed=args.seed)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except DeviceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2) if args.json else render_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
