"""The telemetry surfaces msoctl reads a switch's port optics from: SNMP polling of
ENTITY-SENSOR-MIB and of MSO-CPO-MIB against a gNMI STREAM subscription (OpenConfig and
SONiC), per sample for one switch, and then 2,000 switches on gNMI streams in the
exporter against as many SNMP switches polled.

Every emulated switch runs in a process of its own (emulators/fleetprocess.py), so that
its CPU is its own: ``time.process_time`` in that process, sent back over a pipe. The
client side (the collector, the exporter's streams) is this process.

1. **Surfaces** (``--parts surfaces``): one switch of ``--ports`` x ``--lanes`` lanes,
   three times over, each in its own process: a CPO agent serving ENTITY-SENSOR-MIB in
   SONiC's numbering as well as MSO-CPO-MIB and MSO-CPC-MIB (emulators/cpo/fleet.py,
   ``entity_layout="sonic"``), and two emulated gNMI switches with that CPO model
   (emulators/switch/fleet.py with telemetry), one OpenConfig and one SONiC. Variants:

   - ``entity_sensor``: ``surfaces.collect(target, surfaces=("entity-sensor",))`` (the
     exporter's SNMP worker's call: ENTITY-MIB and ENTITY-SENSOR-MIB walked, joined,
     thresholds), one reading a sample;
   - ``mso_cpo`` (the baseline): ``TelemetryCollector(target).cpo()`` then
     ``surfaces.from_mso_cpo``;
   - ``mso_cpo_cpc``: the whole MSO-CPO+CPC collection (``collect()``, the FEC histogram
     and eye included), for reference: what the exporter reads of a switch serving both;
   - ``gnmi_openconfig``, ``gnmi_sonic``: ``drivers.optics.gnmi.follow`` feeding an
     ``OpticsAccumulator`` from a STREAM subscription with ``--sample-seconds``
     intervals, over ``GnmiClient``; a sample is one SAMPLE interval, and one reading
     is built from the accumulator in each (as a probe would).

   SNMP samples are taken back to back, the three variants in turn; a gNMI window runs
   ``--samples`` intervals once the stream has had its sync_response (the subscription
   and the first values are not counted). Every ``--rounds`` round runs the SNMP block
   and both gNMI windows, in the opposite order of the round before. Reported per
   variant (medians over rounds): the client's and the agent's CPU seconds per sample,
   wall time per sample (a poll's duration; a gNMI window over its samples, which is
   the interval), samples, and ratios to ``mso_cpo``.

2. **Scale** (``--parts scale``): ``--targets`` emulated gNMI switches with telemetry
   (``--scale-ports`` x ``--lanes``, model ``--scale-model``) served by
   ``--fleet-processes`` processes, and the exporter's stream side in this process:
   ``msoctl.exporter.streams.OpticsStreams`` (every stream on one event loop, its
   session opened from an inventory written for the fleet), one ``reading(device, wait_seconds=0)``
   per switch at every check, a check every interval, for ``--intervals`` intervals of
   ``--interval`` seconds once every stream has synced. Missed samples, two ways: a
   check at which the switch's reading failed or its age exceeded the interval plus
   ``--slack-seconds``, and a switch's intervals in which no notification arrived.
   Then as many CPO agents (``entity_layout="sonic"``, the same shape) in as many
   processes, polled as the exporter's SNMP worker polls them: ``surfaces.collect(...,
   surfaces=(--snmp-surface,))`` on one event loop in this process, each switch once an
   interval, the polls spread over the interval as Prometheus spreads its scrapes; a
   poll still running at its next turn is a missed poll. Reported for both: this
   process's CPU per target per second (the streams' side, with the checks' own share;
   the polling side), the fleets' CPU, start-up, threads and file descriptors of this
   process at the peak, and the ratio gNMI / SNMP of the client side's CPU.

   A switch has one port by default in this part: at 8 x 8 a sample costs the emulated
   switch and the client together about 0.1 s of CPU (part 1), so that 2,000 switches
   every 10 s would need some 20 cores. bench/README.md says how far the part scaled on
   a 2-core machine and what limited it.

The emulated gNMI servers look for changes of ON_CHANGE paths by rebuilding their
operational tree every ``--on-change-poll-seconds`` (the emulator's default is 0.1 s;
a real switch is told of a change). By default the benchmark sets that to the sample
interval, so that the agent's figure is of sampling, not of the emulator's polling; the
client's is the same either way (nothing changes, nothing is sent).

Machine load (``os.getloadavg``) is recorded at the start and end of each part.

Usage: python bench/telemetry_surfaces.py [--parts surfaces,scale] [--ports 8] [--lanes 8]
           [--samples 10] [--sample-seconds 1] [--rounds 2] [--targets 2000]
           [--fleet-processes 4] [--scale-ports 1] [--scale-model openconfig]
           [--interval 10] [--intervals 6] [--slack-seconds 2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import logging
import math
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from emulators.fleetprocess import FleetProcess

ROOT = Path(__file__).resolve().parent.parent
USER = "msoctl"
AUTH_KEY = "bench-auth-passphrase"
PRIV_KEY = "bench-priv-passphrase"
ENTITY_LAYOUT = "sonic"
MODELS = ("openconfig", "sonic")
SNMP_VARIANTS = ("entity_sensor", "mso_cpo", "mso_cpo_cpc")
GNMI_VARIANTS = tuple(f"gnmi_{model}" for model in MODELS)
BASELINE = "mso_cpo"
IDLE_SAMPLE_SECONDS = 3600.0
BUDGET_SECONDS = 60.0  # one SNMP collection of part 1: a benchmark measures, it does not give up
Progress = Callable[[str], None]


def load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1m": one, "5m": five, "15m": fifteen}


def commit() -> str | None:
    """The checkout's commit (with ``+`` when it has changes), for the record."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def process_status() -> dict[str, int]:
    """This process's threads (the kernel's count: gRPC's own included) and open files."""
    threads = 0
    with suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    try:
        descriptors = len(os.listdir("/proc/self/fd"))
    except OSError:
        descriptors = 0
    return {"threads": threads, "python_threads": threading.active_count(),
            "file_descriptors": descriptors}


# ---- the emulated switches, each fleet in a process of its own ------------------------------

def snmp_fleet(count: int, ports: int, lanes: int, *, first: int = 0,
               wait: bool = True) -> FleetProcess:
    from emulators.cpo.fleet import serve_fleet
    return FleetProcess(serve_fleet, (count, ports, USER, AUTH_KEY, PRIV_KEY),
                        kwargs={"first": first, "lanes": lanes, "entity_layout": ENTITY_LAYOUT},
                        what=f"the emulated CPO agents {first}..{first + count - 1}",
                        start_seconds=600, wait=wait)


def gnmi_fleet(count: int, ports: int, lanes: int, model: str, password: str, *,
               on_change_poll_seconds: float | None, first: int = 0,
               wait: bool = True) -> FleetProcess:
    from emulators.switch.fleet import serve_fleet
    return FleetProcess(serve_fleet, (count, 0.0, password),
                        kwargs={"ports": ports, "user": USER, "face": model,
                                "commit_confirmed": False, "prefix": f"gnmi-{model}",
                                "telemetry": True, "lanes": lanes, "first": first,
                                "on_change_poll_seconds": on_change_poll_seconds},
                        what=f"the emulated {model} switches {first}..{first + count - 1}",
                        start_seconds=600, wait=wait)


def start_all(starters: Sequence[Callable[[], FleetProcess]]) -> list[FleetProcess]:
    """Start every fleet side by side, then wait for all; on failure stop those started."""
    fleets: list[FleetProcess] = []
    try:
        for start in starters:
            fleets.append(start())
        for fleet in fleets:
            fleet.wait()
    except BaseException:
        close_all(fleets)
        raise
    return fleets


def close_all(fleets: Sequence[FleetProcess]) -> None:
    for fleet in fleets:
        with suppress(OSError):
            fleet.close()


def fleets_cpu(fleets: Sequence[FleetProcess]) -> float:
    return sum(fleet.cpu_seconds() for fleet in fleets)


def snmp_target(name: str, port: int, *, timeout_seconds: float = 10.0, retries: int = 1
                ) -> Any:
    from drivers.snmp.session import SnmpTarget
    return SnmpTarget(name, "127.0.0.1", port, user=USER, auth_key=AUTH_KEY, priv_key=PRIV_KEY,
                      timeout_seconds=timeout_seconds, retries=retries)


def counting_accumulator() -> Any:
    """An OpticsAccumulator that keeps the time (monotonic) of every notification."""
    from drivers.optics.gnmi import OpticsAccumulator

    class CountingAccumulator(OpticsAccumulator):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.arrivals: list[float] = []

        def add(self, notification: Any) -> None:
            self.arrivals.append(time.monotonic())  # one thread adds: kept in order
            super().add(notification)

    return CountingAccumulator


def intervals_with(arrivals: Sequence[float], start: float, seconds: float, count: int
                   ) -> int:
    """Of ``count`` intervals of ``seconds`` from ``start``, those a notification came in."""
    found = 0
    for index in range(count):
        low = bisect.bisect_left(arrivals, start + index * seconds)
        if low < len(arrivals) and arrivals[low] < start + (index + 1) * seconds:
            found += 1
    return found


# ---- part 1: one switch, every surface ----------------------------------------------------

def snmp_sample(label: str, target: Any, loop: asyncio.AbstractEventLoop) -> tuple[Any, int]:
    """One SNMP sample of ``label``'s kind: (the OpticsReading, PDUs sent)."""
    from drivers.snmp import surfaces
    from drivers.snmp.collector import TelemetryCollector

    if label == "mso_cpo":
        collector = TelemetryCollector(target, budget_seconds=BUDGET_SECONDS)
        reading = surfaces.from_mso_cpo(loop.run_until_complete(collector.cpo()))
        return reading, collector.requests
    wanted = ("entity-sensor",) if label == "entity_sensor" else ("mso-cpo",)
    found = loop.run_until_complete(surfaces.collect(target, surfaces=wanted,
                                                     budget_seconds=BUDGET_SECONDS))
    return found.optics, 0


def lanes_of(reading: Any) -> int:
    return sum(len(port.lanes) for port in reading.ports)


def following(name: str, port: int, model: str, password: str, sample_seconds: float
              ) -> tuple[Any, Callable[[], None]]:
    """``follow`` feeding a counting accumulator in a thread of its own, once the stream
    has had its sync_response: (the accumulator, what stops it)."""
    from drivers.optics.gnmi import follow
    from drivers.transports.gnmi import GnmiClient, GnmiTarget

    accumulator = counting_accumulator()(name, model)
    stop = threading.Event()
    client = GnmiClient(GnmiTarget(name, "127.0.0.1", port, username=USER,
                                   password=password, insecure=True,
                                   timeout_seconds=max(10.0, 3 * sample_seconds)))
    thread = threading.Thread(target=follow, args=(client, accumulator),
                              kwargs={"stop": stop, "sample_seconds": sample_seconds},
                              name=f"follow-{model}", daemon=True)
    thread.start()

    def close() -> None:
        stop.set()
        client.close()  # cancels the stream: follow's next() ends
        thread.join(30)

    # follow() sets ``synced`` at the target's sync_response: the first values are in
    deadline = time.monotonic() + 60
    while not accumulator.synced.is_set() and not (
            accumulator.arrivals and time.monotonic() - accumulator.arrivals[-1] > 1.0):
        if time.monotonic() > deadline:
            close()
            raise RuntimeError(f"{name}: no values within 60 s")
        time.sleep(0.05)
    return accumulator, close


def gnmi_idle(fleet: FleetProcess, model: str, password: str, seconds: float
              ) -> dict[str, float]:
    """What an open stream costs each side while no sample is due (its interval an hour):
    CPU seconds per second."""
    name, port, _ = fleet.devices[0]
    _, close = following(name, port, model, password, IDLE_SAMPLE_SECONDS)
    try:
        time.sleep(0.5)
        agent = fleet.cpu_seconds()
        cpu = time.process_time()
        started = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - started
        cpu = time.process_time() - cpu
        agent = fleet.cpu_seconds() - agent
    finally:
        close()
    return {"client_cpu_per_second": cpu / wall, "agent_cpu_per_second": agent / wall}


def snmp_block(fleet: FleetProcess, target: Any, loop: asyncio.AbstractEventLoop,
               samples: int, order: Sequence[str]) -> dict[str, list[dict[str, float]]]:
    """``samples`` samples of each SNMP variant, the variants in turn."""
    found: dict[str, list[dict[str, float]]] = {label: [] for label in order}
    for _ in range(samples):
        for label in order:
            agent = fleet.cpu_seconds()
            cpu = time.process_time()
            started = time.perf_counter()
            reading, _ = snmp_sample(label, target, loop)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
            agent = fleet.cpu_seconds() - agent
            if not reading.ports:
                raise RuntimeError(f"{label}: the reading has no ports")
            found[label].append({"wall_seconds": wall, "client_cpu_seconds": cpu,
                                 "agent_cpu_seconds": agent, "ports": len(reading.ports),
                                 "lanes": lanes_of(reading)})
    return found


def gnmi_window(fleet: FleetProcess, model: str, password: str, samples: int,
                sample_seconds: float) -> dict[str, float]:
    """A STREAM subscription to the fleet's one switch, ``samples`` intervals long once
    synced; one reading built each interval. Per-window totals."""
    name, port, _ = fleet.devices[0]
    accumulator, close = following(name, port, model, password, sample_seconds)
    try:
        time.sleep(sample_seconds / 2)  # between two rounds: the window holds whole ones
        agent = fleet.cpu_seconds()
        cpu = time.process_time()
        start = time.monotonic()
        reading_cpu = 0.0
        ports = lanes = 0
        for index in range(1, samples + 1):
            time.sleep(max(0.0, start + index * sample_seconds - time.monotonic()))
            began = time.thread_time()
            reading = accumulator.reading()
            reading_cpu += time.thread_time() - began
            ports, lanes = len(reading.ports), lanes_of(reading)
        wall = time.monotonic() - start
        cpu = time.process_time() - cpu
        agent = fleet.cpu_seconds() - agent
        received = intervals_with(accumulator.arrivals, start, sample_seconds, samples)
        notifications = sum(1 for at in accumulator.arrivals if start <= at < start + wall)
        if not ports or reading.dropped:
            raise RuntimeError(f"{name}: a reading of {ports} ports, dropped {reading.dropped}")
    finally:
        close()
    return {"wall_seconds": wall, "client_cpu_seconds": cpu, "agent_cpu_seconds": agent,
            "samples": samples, "intervals_with_notifications": received,
            "notifications": notifications, "reading_cpu_seconds": reading_cpu,
            "ports": ports, "lanes": lanes}


def measure_surfaces(ports: int, lanes: int, samples: int, sample_seconds: float,
                     rounds: int, on_change_poll_seconds: float | None,
                     progress: Progress, *, idle_seconds: float = 5.0) -> dict[str, Any]:
    from drivers.snmp import mibs
    from drivers.snmp.session import close_engines

    mibs.load()  # compiled before any timing
    password = secrets.token_urlsafe(16)
    progress(f"surfaces: starting one SNMP agent and one switch of each gNMI model "
             f"({ports} ports x {lanes} lanes)")
    loads = {"start": load()}
    fleets = start_all([
        partial(snmp_fleet, 1, ports, lanes, wait=False),
        *[partial(gnmi_fleet, 1, ports, lanes, model, password, wait=False,
                  on_change_poll_seconds=on_change_poll_seconds) for model in MODELS]])
    snmp, gnmi = fleets[0], dict(zip(MODELS, fleets[1:], strict=True))
    loop = asyncio.new_event_loop()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in
                                               (*SNMP_VARIANTS, *GNMI_VARIANTS)}
    requests: dict[str, int] = {}
    try:
        index, port = snmp.devices[0]
        target = snmp_target(f"cpo-{index:04d}", port)
        for label in SNMP_VARIANTS:  # untimed: discovery, the first walk of each
            _, requests[label] = snmp_sample(label, target, loop)
        blocks: list[str] = ["snmp", *GNMI_VARIANTS]
        for round_index in range(rounds):
            for block in blocks if round_index % 2 == 0 else blocks[::-1]:
                progress(f"surfaces: round {round_index + 1}/{rounds}: {block}")
                if block == "snmp":
                    order = list(SNMP_VARIANTS)
                    shift = round_index % len(order)
                    found = snmp_block(snmp, target, loop, samples, order[shift:] + order[:shift])
                    for label, samples_of in found.items():
                        runs[label].append(per_sample(samples_of))
                else:
                    model = block.removeprefix("gnmi_")
                    window = gnmi_window(gnmi[model], model, password, samples, sample_seconds)
                    runs[block].append({**per_sample([window], per=window["samples"]),
                                        "intervals_with_notifications":
                                            window["intervals_with_notifications"],
                                        "notifications_per_sample":
                                            window["notifications"] / window["samples"],
                                        "reading_cpu_seconds":
                                            window["reading_cpu_seconds"] / window["samples"]})
        idle = {}
        for model in MODELS:
            progress(f"surfaces: gnmi_{model}, an open stream with no sample due")
            idle[f"gnmi_{model}"] = gnmi_idle(gnmi[model], model, password, idle_seconds)
    finally:
        loop.run_until_complete(close_engines())
        loop.close()
        close_all(fleets)
    loads["end"] = load()
    variants: dict[str, Any] = {}
    for label, per_round in runs.items():
        figures = {key: statistics.median(r[key] for r in per_round) for key in per_round[0]}
        variants[label] = {
            "surface": SURFACE_OF[label],
            "samples": samples * rounds,
            "client_cpu_seconds_per_sample": figures["client_cpu_seconds"],
            "agent_cpu_seconds_per_sample": figures["agent_cpu_seconds"],
            "wall_seconds_per_sample": figures["wall_seconds"],
            "ports": int(figures["ports"]), "lanes": int(figures["lanes"]),
            "rounds": per_round}
        if requests.get(label):
            variants[label]["pdus_per_sample"] = requests[label]
        if label in GNMI_VARIANTS:
            variants[label]["intervals_with_notifications"] = sum(
                r["intervals_with_notifications"] for r in per_round)
            variants[label]["notifications_per_sample"] = figures["notifications_per_sample"]
            variants[label]["reading_cpu_seconds_per_sample"] = figures["reading_cpu_seconds"]
            variants[label]["idle"] = idle[label]
    base = variants[BASELINE]
    ratios = {label: {side: figures[key] / base[key] if base[key] > 0 else math.nan
                      for side, key in RATIO_KEYS.items()}
              for label, figures in variants.items()}
    return {"ports": ports, "lanes_per_port": lanes, "samples": samples, "rounds": rounds,
            "sample_seconds": sample_seconds, "idle_seconds": idle_seconds,
            "entity_layout": ENTITY_LAYOUT,
            "on_change_poll_seconds": on_change_poll_seconds, "load": loads,
            "variants": variants, "ratios_to": BASELINE, "ratios": ratios}


SURFACE_OF = {"entity_sensor": "SNMP ENTITY-SENSOR-MIB", "mso_cpo": "SNMP MSO-CPO-MIB",
              "mso_cpo_cpc": "SNMP MSO-CPO-MIB + MSO-CPC-MIB",
              "gnmi_openconfig": "gNMI STREAM OpenConfig", "gnmi_sonic": "gNMI STREAM SONiC"}
RATIO_KEYS = {"client_cpu": "client_cpu_seconds_per_sample",
              "agent_cpu": "agent_cpu_seconds_per_sample",
              "wall": "wall_seconds_per_sample"}


def per_sample(samples: Sequence[Mapping[str, float]], *, per: float | None = None
               ) -> dict[str, float]:
    """Totals of ``samples`` over their number (or ``per``); the ports and lanes read."""
    count = per if per is not None else len(samples)
    found = {key: sum(s[key] for s in samples) / count
             for key in ("wall_seconds", "client_cpu_seconds", "agent_cpu_seconds")}
    return {**found, "ports": min(s["ports"] for s in samples),
            "lanes": min(s["lanes"] for s in samples)}


# ---- part 2: many switches ----------------------------------------------------------------

def split(total: int, parts: int) -> list[tuple[int, int]]:
    """(first, count) of each of ``parts`` processes serving ``total`` switches."""
    parts = max(1, min(parts, total))
    size, extra = divmod(total, parts)
    found, first = [], 0
    for index in range(parts):
        count = size + (1 if index < extra else 0)
        found.append((first, count))
        first += count
    return found


def write_inventory(directory: Path, password: str, model: str,
                    fleets: Sequence[FleetProcess], timeout_seconds: float) -> Path:
    secret = directory / "switch.password"
    secret.write_text(password)
    secret.chmod(0o600)
    devices = [{"name": name, "kind": "switch", "transport": "gnmi",
                "address": f"127.0.0.1:{port}", "model": model, "username": USER,
                "password": "file:switch.password", "insecure": True,
                "timeout_seconds": timeout_seconds, "telemetry": [model],
                "labels": {"bench": "telemetry-surfaces"}}
               for fleet in fleets for name, port, _ in fleet.devices]
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump({"devices": devices}))
    return path


def measure_gnmi_scale(targets: int, processes: int, ports: int, lanes: int, model: str,
                       interval: float, intervals: int, slack: float,
                       on_change_poll_seconds: float | None, start_seconds: float,
                       progress: Progress) -> dict[str, Any]:
    import drivers.optics.gnmi as optics_gnmi
    from drivers.errors import DeviceError
    from msoctl.exporter.streams import OpticsStreams
    from msoctl.inventory import load_inventory

    password = secrets.token_urlsafe(16)
    result: dict[str, Any] = {"targets": targets, "fleet_processes": processes,
                              "model": model, "ports": ports, "lanes_per_port": lanes,
                              "interval_seconds": interval, "intervals": intervals,
                              "slack_seconds": slack,
                              "on_change_poll_seconds": on_change_poll_seconds,
                              "load": {"start": load()}}
    progress(f"scale gNMI: starting {targets} {model} switches in "
             f"{min(processes, targets)} processes")
    started = time.perf_counter()
    fleets = start_all([partial(gnmi_fleet, count, ports, lanes, model, password, first=first,
                                wait=False, on_change_poll_seconds=on_change_poll_seconds)
                        for first, count in split(targets, processes)])
    result["fleet_start_seconds"] = time.perf_counter() - started
    counting = counting_accumulator()
    original = optics_gnmi.OpticsAccumulator
    optics_gnmi.OpticsAccumulator = counting  # type: ignore[misc]  # the streams' own (they import it when started)
    streams = OpticsStreams(sample_seconds=interval)
    try:
        with tempfile.TemporaryDirectory(prefix="msoctl-bench-") as tmp:
            inventory = load_inventory(write_inventory(
                Path(tmp), password, model, fleets, timeout_seconds=max(30.0, 3 * interval)))
            devices = list(inventory.devices.values())
            progress(f"scale gNMI: opening {len(devices)} streams")
            before = status_now = process_status()
            fleet_cpu = fleets_cpu(fleets)
            cpu = time.process_time()
            started = time.perf_counter()
            # The first probe of each starts its stream: spread over one interval, as
            # Prometheus spreads its first scrapes of the targets over theirs.
            for index, device in enumerate(devices):
                time.sleep(max(0.0, started + interval * index / len(devices)
                               - time.perf_counter()))
                with suppress(DeviceError):
                    streams.reading(device, wait_seconds=0)
            synced = wait_synced(streams, devices, started + start_seconds, progress)
            result["start"] = {
                "wall_seconds": time.perf_counter() - started,
                "client_cpu_seconds": time.process_time() - cpu,
                "fleet_cpu_seconds": fleets_cpu(fleets) - fleet_cpu,
                "synced": synced, "process_before": before}
            if synced < len(devices):
                progress(f"scale gNMI: only {synced} of {len(devices)} streams synced within "
                         f"{start_seconds:g} s; measuring what runs")
            time.sleep(interval / 2)
            fleet_cpu = fleets_cpu(fleets)
            cpu = time.process_time()
            start = time.monotonic()
            check_cpu = 0.0
            stale = failed = 0
            ages: list[float] = []
            for index in range(1, intervals + 1):
                time.sleep(max(0.0, start + index * interval - time.monotonic()))
                began = time.thread_time()
                for device in devices:
                    try:
                        reading = streams.reading(device, wait_seconds=0)
                    except DeviceError:
                        failed += 1
                        continue
                    age = reading.age_seconds or 0.0
                    ages.append(age)
                    if age > interval + slack:
                        stale += 1
                check_cpu += time.thread_time() - began
                status_now = max(status_now, process_status(), key=lambda s: s["threads"])
                progress(f"scale gNMI: interval {index}/{intervals}: {stale} stale, "
                         f"{failed} failed so far")
            window = time.monotonic() - start
            cpu = time.process_time() - cpu
            fleet_cpu = fleets_cpu(fleets) - fleet_cpu
            silent = 0
            for stream in list(streams._streams.values()):
                accumulator = stream.accumulator
                arrivals = accumulator.arrivals if accumulator is not None else []
                silent += intervals - intervals_with(arrivals, start, interval, intervals)
            result["window_seconds"] = window
            result["client_cpu_seconds"] = cpu
            result["check_cpu_seconds"] = check_cpu
            result["client_cpu_per_target_per_second"] = cpu / len(devices) / window
            result["streams_cpu_per_target_per_second"] = (cpu - check_cpu) / len(devices) / window
            result["check_cpu_per_reading"] = check_cpu / max(1, len(devices) * intervals)
            result["fleet_cpu_per_target_per_second"] = fleet_cpu / len(devices) / window
            result["client_cores"] = cpu / window
            result["fleet_cores"] = fleet_cpu / window
            result["checks"] = len(devices) * intervals
            result["missed_checks"] = {"stale": stale, "failed": failed}
            result["intervals_without_notifications"] = silent
            result["age_seconds"] = {"p50": percentile(ages, 0.5), "p99": percentile(ages, 0.99),
                                     "max": max(ages, default=math.nan)}
            result["process_peak"] = status_now
    finally:
        progress("scale gNMI: closing the streams")
        closing = time.perf_counter()
        streams.close()
        optics_gnmi.OpticsAccumulator = original  # type: ignore[misc]
        result["close_seconds"] = time.perf_counter() - closing
        close_all(fleets)
    result["load"]["end"] = load()
    return result


def wait_synced(streams: Any, devices: Sequence[Any], deadline: float, progress: Progress
                ) -> int:
    """Wait until ``deadline`` (perf_counter) at most for every stream's sync_response;
    how many had it."""
    last = -1.0
    while True:
        synced = 0
        for device in devices:
            stream = streams._streams.get(device.name)
            if stream is not None and stream.accumulator is not None \
                    and stream.accumulator.synced.is_set():
                synced += 1
        if synced == len(devices) or time.perf_counter() > deadline:
            return synced
        if time.monotonic() - last > 10:
            progress(f"scale gNMI: {synced} of {len(devices)} streams synced")
            last = time.monotonic()
        time.sleep(0.5)


def percentile(values: Sequence[float], fraction: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure_snmp_scale(targets: int, processes: int, ports: int, lanes: int, surface: str,
                       interval: float, intervals: int, progress: Progress) -> dict[str, Any]:
    from drivers.snmp import mibs
    from drivers.snmp import surfaces as snmp_surfaces
    from drivers.snmp.session import close_engines

    mibs.load()
    result: dict[str, Any] = {"targets": targets, "fleet_processes": processes,
                              "surface": surface, "entity_layout": ENTITY_LAYOUT,
                              "ports": ports, "lanes_per_port": lanes,
                              "interval_seconds": interval, "intervals": intervals,
                              "load": {"start": load()}}
    progress(f"scale SNMP: starting {targets} CPO agents in {min(processes, targets)} processes")
    started = time.perf_counter()
    fleets = start_all([partial(snmp_fleet, count, ports, lanes, first=first, wait=False)
                        for first, count in split(targets, processes)])
    result["fleet_start_seconds"] = time.perf_counter() - started
    wanted = (surface,)
    agents = [snmp_target(f"cpo-{index:04d}", port, timeout_seconds=min(10.0, interval),
                          retries=0)
              for fleet in fleets for index, port in fleet.devices]
    durations: list[float] = []
    outcomes = {"ok": 0, "failed": 0, "skipped": 0}

    async def poll(target: Any) -> None:
        began = time.perf_counter()
        try:
            found = await snmp_surfaces.collect(target, surfaces=wanted, budget_seconds=interval)
        except Exception:  # a DeviceError, or a bug: counted as a failed poll either way
            outcomes["failed"] += 1
            return
        durations.append(time.perf_counter() - began)
        outcomes["ok" if found.optics is not None and found.optics.ports else "failed"] += 1

    async def each(target: Any, offset: float, start: float, rounds: int) -> None:
        running: asyncio.Task[None] | None = None
        for index in range(rounds):
            await asyncio.sleep(max(0.0, start + offset + index * interval - time.monotonic()))
            if running is not None and not running.done():
                outcomes["skipped"] += 1  # still polling from its last turn: a missed poll
                continue
            running = asyncio.ensure_future(poll(target))
        if running is not None:
            await running

    async def polls(rounds: int) -> None:
        start = time.monotonic()
        await asyncio.gather(*(each(target, interval * index / len(agents), start, rounds)
                               for index, target in enumerate(agents)))

    loop = asyncio.new_event_loop()
    try:
        progress(f"scale SNMP: one untimed poll of each of {len(agents)} agents (discovery)")
        warm = time.perf_counter()
        loop.run_until_complete(polls(1))
        result["warm_seconds"] = time.perf_counter() - warm
        result["warm"] = dict(outcomes)
        durations.clear()
        outcomes.update(ok=0, failed=0, skipped=0)
        progress(f"scale SNMP: {intervals} intervals of {interval:g} s")
        fleet_cpu = fleets_cpu(fleets)
        cpu = time.process_time()
        start = time.monotonic()
        loop.run_until_complete(polls(intervals))
        window = time.monotonic() - start
        cpu = time.process_time() - cpu
        fleet_cpu = fleets_cpu(fleets) - fleet_cpu
        result["process_peak"] = process_status()
    finally:
        loop.run_until_complete(close_engines())
        loop.close()
        close_all(fleets)
    polled = outcomes["ok"]
    result.update({
        "window_seconds": window, "client_cpu_seconds": cpu,
        "client_cpu_per_target_per_second": cpu / len(agents) / window,
        "client_cpu_per_poll": cpu / max(1, polled + outcomes["failed"]),
        "fleet_cpu_per_target_per_second": fleet_cpu / len(agents) / window,
        "polls_due": len(agents) * intervals, "polls": dict(outcomes),
        "missed_polls": outcomes["failed"] + outcomes["skipped"],
        "poll_seconds": {"p50": percentile(durations, 0.5), "p99": percentile(durations, 0.99)},
        "client_cores": cpu / window,
        "fleet_cores": fleet_cpu / window,
        # what polling every target every interval takes, kept up with or not
        "cores_needed_to_poll": cpu / max(1, polled + outcomes["failed"]) * len(agents)
        / interval,
    })
    result["load"]["end"] = load()
    return result


def measure_scale(targets: int, processes: int, ports: int, lanes: int, model: str,
                  interval: float, intervals: int, slack: float,
                  on_change_poll_seconds: float | None, snmp_surface: str,
                  start_seconds: float, progress: Progress) -> dict[str, Any]:
    gnmi = measure_gnmi_scale(targets, processes, ports, lanes, model, interval, intervals,
                              slack, on_change_poll_seconds, start_seconds, progress)
    snmp = measure_snmp_scale(targets, processes, ports, lanes, snmp_surface, interval,
                              intervals, progress)
    key = "client_cpu_per_target_per_second"
    return {"gnmi": gnmi, "snmp": snmp,
            "ratio_gnmi_over_snmp": {
                "client_cpu_per_target_per_second": gnmi[key] / snmp[key],
                "streams_only_over_snmp": gnmi["streams_cpu_per_target_per_second"] / snmp[key],
                "fleet_cpu_per_target_per_second": (gnmi["fleet_cpu_per_target_per_second"]
                                                    / snmp["fleet_cpu_per_target_per_second"])}}


# ---- the report ---------------------------------------------------------------------------

def report(result: dict[str, Any]) -> str:
    lines = [f"machine: {result['cpus']} CPUs, commit {result['commit']}, {result['date']}"]
    surfaces = result.get("surfaces")
    if surfaces is not None:
        lines += ["", *report_surfaces(surfaces)]
    scale = result.get("scale")
    if scale is not None:
        lines += ["", *report_scale(scale)]
    return "\n".join(lines)


def report_surfaces(surfaces: dict[str, Any]) -> list[str]:
    loads = surfaces["load"]
    lines = [f"part 1: one switch, {surfaces['ports']} ports x {surfaces['lanes_per_port']} "
             f"lanes; {surfaces['samples']} samples x {surfaces['rounds']} round(s); gNMI "
             f"SAMPLE every {surfaces['sample_seconds']:g} s; load "
             f"{loads['start']['1m']:.2f} -> {loads['end']['1m']:.2f}",
             f"{'variant':<16}{'client cpu ms':>15}{'agent cpu ms':>14}{'wall ms':>10}"
             f"{'samples':>9}{'x client':>10}{'x agent':>9}{'x wall':>8}"]
    for label, figures in surfaces["variants"].items():
        ratio = surfaces["ratios"][label]
        lines.append(f"{label:<16}{figures['client_cpu_seconds_per_sample'] * 1e3:>15.2f}"
                     f"{figures['agent_cpu_seconds_per_sample'] * 1e3:>14.2f}"
                     f"{figures['wall_seconds_per_sample'] * 1e3:>10.1f}"
                     f"{figures['samples']:>9}{ratio['client_cpu']:>10.2f}"
                     f"{ratio['agent_cpu']:>9.2f}{ratio['wall']:>8.2f}")
    lines.append(f"(per sample; ratios to {surfaces['ratios_to']}; a gNMI sample is one "
                 "SAMPLE interval, its wall the interval)")
    for label in GNMI_VARIANTS:
        figures = surfaces["variants"][label]
        idle = figures["idle"]
        lines.append(f"{label}: {figures['notifications_per_sample']:.0f} notifications a "
                     f"sample, a reading {figures['reading_cpu_seconds_per_sample'] * 1e3:.2f} "
                     f"ms; an open stream with no sample due: client "
                     f"{idle['client_cpu_per_second'] * 1e3:.2f} ms/s, agent "
                     f"{idle['agent_cpu_per_second'] * 1e3:.2f} ms/s")
    return lines


def report_scale(scale: dict[str, Any]) -> list[str]:
    gnmi, snmp, ratios = scale["gnmi"], scale["snmp"], scale["ratio_gnmi_over_snmp"]
    start, ages, missed = gnmi["start"], gnmi["age_seconds"], gnmi["missed_checks"]
    return [
        f"part 2: {gnmi['targets']} targets, {gnmi['ports']} ports x {gnmi['lanes_per_port']} "
        f"lanes, every {gnmi['interval_seconds']:g} s for {gnmi['intervals']} intervals, "
        f"fleets in {gnmi['fleet_processes']} processes",
        f"gNMI {gnmi['model']} streams (OpticsStreams): {start['synced']} synced in "
        f"{start['wall_seconds']:.1f} s ({start['client_cpu_seconds']:.1f} s CPU); load "
        f"{gnmi['load']['start']['1m']:.2f} -> {gnmi['load']['end']['1m']:.2f}",
        f"  exporter CPU per target per second "
        f"{gnmi['client_cpu_per_target_per_second'] * 1e3:.3f} ms (streams "
        f"{gnmi['streams_cpu_per_target_per_second'] * 1e3:.3f} ms; a reading "
        f"{gnmi['check_cpu_per_reading'] * 1e3:.2f} ms), {gnmi['client_cores']:.2f} cores; "
        f"fleets {gnmi['fleet_cpu_per_target_per_second'] * 1e3:.3f} ms, "
        f"{gnmi['fleet_cores']:.2f} cores",
        f"  missed: {missed['stale']} stale and {missed['failed']} failed of {gnmi['checks']} "
        f"checks, {gnmi['intervals_without_notifications']} target-intervals without a "
        f"notification; age p50 {ages['p50']:.2f} s, p99 {ages['p99']:.2f} s, max "
        f"{ages['max']:.2f} s",
        f"  this process at the peak: {gnmi['process_peak']['threads']} threads, "
        f"{gnmi['process_peak']['file_descriptors']} file descriptors",
        f"SNMP {snmp['surface']} polled (one event loop): load "
        f"{snmp['load']['start']['1m']:.2f} -> {snmp['load']['end']['1m']:.2f}",
        f"  polling CPU per target per second "
        f"{snmp['client_cpu_per_target_per_second'] * 1e3:.3f} ms "
        f"({snmp['client_cpu_per_poll'] * 1e3:.1f} ms a poll; {snmp['client_cores']:.2f} "
        f"cores, {snmp['cores_needed_to_poll']:.2f} to poll every target every interval); "
        f"fleets {snmp['fleet_cpu_per_target_per_second'] * 1e3:.3f} ms",
        f"  missed: {snmp['missed_polls']} of {snmp['polls_due']} polls "
        f"({snmp['polls']['failed']} failed, {snmp['polls']['skipped']} still running at "
        f"their next turn); poll p50 {snmp['poll_seconds']['p50']:.2f} s, p99 "
        f"{snmp['poll_seconds']['p99']:.2f} s",
        f"gNMI / SNMP, client CPU per target per second: "
        f"{ratios['client_cpu_per_target_per_second']:.2f} (streams alone "
        f"{ratios['streams_only_over_snmp']:.2f}); emulated fleets "
        f"{ratios['fleet_cpu_per_target_per_second']:.2f}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--parts", default="surfaces,scale",
                        help="surfaces, scale or both (comma-separated)")
    parser.add_argument("--ports", type=int, default=8, help="part 1: ports of the switch")
    parser.add_argument("--lanes", type=int, default=8, choices=(1, 2, 4, 8),
                        help="lanes per port (both parts)")
    parser.add_argument("--samples", type=int, default=10, help="part 1: samples a round")
    parser.add_argument("--sample-seconds", type=float, default=1.0,
                        help="part 1: the gNMI SAMPLE interval")
    parser.add_argument("--rounds", type=int, default=2, help="part 1: rounds")
    parser.add_argument("--on-change-poll-seconds", type=float, default=None,
                        help="the emulated gNMI servers' look for changes (default: the "
                             "sample interval of the part)")
    parser.add_argument("--targets", type=int, default=2000, help="part 2: switches of each kind")
    parser.add_argument("--fleet-processes", type=int, default=4,
                        help="part 2: processes serving each kind's switches")
    parser.add_argument("--scale-ports", type=int, default=1,
                        help="part 2: ports of a switch (1: see the module docstring)")
    parser.add_argument("--scale-model", choices=MODELS, default="openconfig")
    parser.add_argument("--interval", type=float, default=10.0,
                        help="part 2: the sample interval and the SNMP poll interval")
    parser.add_argument("--intervals", type=int, default=6, help="part 2: intervals measured")
    parser.add_argument("--slack-seconds", type=float, default=2.0,
                        help="part 2: an age beyond the interval plus this is a missed sample")
    parser.add_argument("--snmp-surface", choices=("entity-sensor", "mso-cpo"),
                        default="entity-sensor", help="part 2: what the SNMP side polls")
    parser.add_argument("--idle-seconds", type=float, default=5.0,
                        help="part 1: how long an open stream with no sample due is watched")
    parser.add_argument("--start-seconds", type=float, default=120.0,
                        help="part 2: how long the streams may take to sync")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--progress", action="store_true",
                        help="say what runs on stderr even with --json or no terminal")
    args = parser.parse_args(argv)
    parts = {part.strip() for part in args.parts.split(",") if part.strip()}
    if not parts or parts - {"surfaces", "scale"}:
        parser.error("--parts: surfaces, scale or both")
    if not (1 <= args.ports <= 64 and 1 <= args.scale_ports <= 64 and args.samples >= 1
            and args.rounds >= 1 and args.targets >= 1 and args.fleet_processes >= 1
            and args.intervals >= 1 and args.interval > 0 and args.sample_seconds > 0
            and args.slack_seconds >= 0):
        parser.error("--ports and --scale-ports 1..64; --samples, --rounds, --targets, "
                     "--fleet-processes, --intervals >= 1; intervals positive")
    quiet = not args.progress and (args.json or not sys.stderr.isatty())

    def progress(text: str) -> None:
        if not quiet:
            print(f"  {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    # Every gNMI channel in plaintext warns so; here, on loopback, that is the point.
    logging.getLogger("drivers.transports.gnmi").setLevel(logging.ERROR)
    result: dict[str, Any] = {"cpus": os.cpu_count(), "commit": commit(),
                              "date": time.strftime("%Y-%m-%d"), "load": {"start": load()}}
    if "surfaces" in parts:
        result["surfaces"] = measure_surfaces(
            args.ports, args.lanes, args.samples, args.sample_seconds, args.rounds,
            args.on_change_poll_seconds or args.sample_seconds, progress,
            idle_seconds=args.idle_seconds)
    if "scale" in parts:
        result["scale"] = measure_scale(
            args.targets, args.fleet_processes, args.scale_ports, args.lanes, args.scale_model,
            args.interval, args.intervals, args.slack_seconds,
            args.on_change_poll_seconds or args.interval, args.snmp_surface,
            args.start_seconds, progress)
    result["load"]["end"] = load()
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
