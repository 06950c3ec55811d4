"""What a large generated fabric costs the lab, in one process and spread over several,
side by side: start-up, memory, CPU at idle and under polling, and how soon the OCS
alarms of a cable cut arrive.

    .venv/bin/python bench/lab_scale.py [--links 256] [--ocs-per-campus 8] [--ocs-size 128]
        [--spans-per-cable 64] [--processes 1,2] [--idle-seconds 5] [--poll-seconds 5]
        [--poll-period-ms 50] [--cuts 5] [--json]

The fabric is ``msoctl lab topology generate --campuses 2`` with the sizes given (the
default: 256 links over 16 OCS of 128x128 in 8 planes, working and protection spans in
cables of 64, unmanaged switches). For each ``--processes`` value, in turn, the bench:

1. runs ``msoctl lab up --topology FILE --processes N`` in a process of its own, as an
   operator does, and times it until ``lab.json`` appears (every device listening, the
   inventory written);
2. reads the memory (RSS) of the lab's processes -- ``lab up`` and every process it
   started -- and their CPU over ``--idle-seconds`` with nothing asking anything;
3. sets every link on its working span (one whole-map command per OCS) and arms loss
   of light on every link's receiving ports (``arm_los``, -30 dBm, 2 dB);
4. polls: one thread per OCS reads the monitors of its receiving ports every
   ``--poll-period-ms`` for ``--poll-seconds``: the polls per second achieved against
   those asked, and the lab's CPU meanwhile; then for as long again flat out (each
   thread polls again as soon as it has its answer): what the lab serves at most. The
   polling clients, in this process, compete for the same two cores; their CPU is
   given too;
5. cuts: with an alarm stream open to every OCS, ``--cuts`` times cuts a working cable
   (``POST /v1/faults``, as ``msoctl lab fault cable_cut`` does), waits for one loss-of-
   light event per receiving port of its links (2 per link), mends it and waits for
   the clearing events. Latency per event: from just before the request was sent to the
   event's arrival here (what a controller sees), and from the cut's device time to the
   event's device time (the OCS's own detection; the lab's device time is the machine's
   monotonic clock, shared by its processes).

Nothing here asserts a timing; tests/bench/test_bench_lab_scale.py runs a small version.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from drivers.ocs import OcsDriver  # noqa: E402
from drivers.ocs.connect import open_ocs  # noqa: E402
from drivers.ocs.types import LosEvent  # noqa: E402
from msoctl.access import open_alarm_stream  # noqa: E402
from msoctl.inventory import Inventory, load_inventory  # noqa: E402
from msoctl.lab.client import call, find_lab  # noqa: E402

MSOCTL = [sys.executable, "-m", "msoctl"]
START_SECONDS = 300.0
EVENT_SECONDS = 30.0
THRESHOLD_DBM = -30.0
HYSTERESIS_DB = 2.0
TICKS = os.sysconf("SC_CLK_TCK")


def _generate(directory: Path, args: argparse.Namespace) -> Path:
    path = directory / "fabric.yaml"
    subprocess.run([*MSOCTL, "lab", "topology", "generate", "--campuses", "2",
                    "--ocs-per-campus", str(args.ocs_per_campus), "--ocs-size",
                    str(args.ocs_size), "--links", str(args.links), "--spans-per-cable",
                    str(args.spans_per_cable), "-o", str(path)],
                   check=True, capture_output=True, cwd=ROOT)
    return path


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, frontier = [root], [root]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found.extend(children)
        frontier.extend(children)
    return found


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += int(text.split("VmRSS:")[1].split()[0])
    return total / 1024


@contextmanager
def lab_up(topology: Path, state: Path, processes: int) -> Iterator[tuple[subprocess.Popen[bytes],
                                                                           float]]:
    started = time.monotonic()
    process = subprocess.Popen([*MSOCTL, "lab", "up", "--topology", str(topology),
                                "--state-dir", str(state), "--processes", str(processes)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        while not (state / "lab.json").exists():
            if process.poll() is not None:
                error = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"msoctl lab up ended: {error.strip()}")
            if time.monotonic() - started > START_SECONDS:
                raise TimeoutError(f"the lab did not start within {START_SECONDS:g} s")
            time.sleep(0.02)
        yield process, time.monotonic() - started
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _drivers(inventory: Inventory) -> dict[str, OcsDriver]:
    return {name: open_ocs(name, d.endpoint.transport, d.endpoint.address, timeout_seconds=10)
            for name, d in inventory.devices.items() if d.kind == "ocs"}


def _receiving(inventory: Inventory) -> dict[str, list[int]]:
    """Per OCS, the ingress ports where links' light arrives from their working spans."""
    found: dict[str, list[int]] = {}
    for link in inventory.links.values():
        for end in (link.working.b_to_a.end, link.working.a_to_b.end):
            found.setdefault(end.ocs, []).append(end.port)
    return found


def _prepare(inventory: Inventory, drivers: dict[str, OcsDriver]) -> float:
    """Every link on its working span, and loss of light armed on its receiving ports;
    the seconds the whole-map commands took."""
    wanted: dict[str, dict[int, int]] = {}
    for link in inventory.links.values():
        for ocs, pairs in link.connections("working").items():
            wanted.setdefault(ocs, {}).update(pairs)
    started = time.monotonic()
    for name, driver in drivers.items():
        driver.replace_map(wanted.get(name, {}))
    for driver in drivers.values():
        driver.wait_settled()
    took = time.monotonic() - started
    for name, ports in _receiving(inventory).items():
        drivers[name].arm_los(ports, THRESHOLD_DBM, HYSTERESIS_DB)
    return took


def _poll(inventory: Inventory, drivers: dict[str, OcsDriver], lab: list[int], seconds: float,
          period: float) -> dict[str, Any]:
    ports = _receiving(inventory)
    counts = dict.fromkeys(drivers, 0)
    stop = threading.Event()

    def run(name: str) -> None:
        driver = drivers[name]
        next_at = time.monotonic()
        while not stop.is_set():
            driver.power(ports.get(name, []))
            counts[name] += 1
            next_at += period
            delay = next_at - time.monotonic()
            if delay > 0:
                stop.wait(delay)
            else:
                next_at = time.monotonic()  # behind (or flat out): no catching up in a burst

    threads = [threading.Thread(target=run, args=(name,), daemon=True) for name in drivers]
    lab_before, own_before, started = _cpu_seconds(lab), time.process_time(), time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    return {"asked_polls_per_second": round(len(drivers) / period, 1) if period else None,
            "polls_per_second": round(sum(counts.values()) / wall, 1),
            "ports_per_poll": round(statistics.mean(len(p) for p in ports.values()), 1),
            "lab_cpu_percent": round(100 * (_cpu_seconds(lab) - lab_before) / wall, 1),
            "client_cpu_percent": round(100 * (time.process_time() - own_before) / wall, 1)}


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _cuts(state: Path, inventory: Inventory, count: int) -> dict[str, Any]:
    endpoint = find_lab(state)
    cables = [c for c in call(endpoint, "GET", "/v1/status")["cables"] if c["role"] == "working"]
    spans_of = {c["name"]: set(c["spans"]) for c in cables}
    events: list[tuple[float, LosEvent]] = []
    arrived = threading.Condition()

    def on_events(burst: list[LosEvent]) -> None:
        with arrived:
            events.extend((time.monotonic(), event) for event in burst)
            arrived.notify_all()

    streams = [open_alarm_stream(d, on_events=on_events, on_snapshot=lambda *_: None,
                                 on_lost=lambda *_: None)
               for d in inventory.devices.values() if d.kind == "ocs"]
    if any(s is None for s in streams) or not all(s.wait_live(30) for s in streams if s):
        raise RuntimeError("an OCS alarm stream did not come up")
    seen, device_side, last, to_cut, delivery = [], [], [], [], []
    try:
        for round_number in range(count):
            cable = cables[round_number % len(cables)]["name"]
            expected = 2 * sum(1 for link in inventory.links.values()
                               if link.working.name in spans_of[cable])
            with arrived:
                events.clear()
            sent = time.monotonic()
            injected = call(endpoint, "POST", "/v1/faults",
                            {"kind": "cable_cut", "target": cable})["injected"]
            with arrived:
                if not arrived.wait_for(lambda n=expected: len(events) >= n, EVENT_SECONDS):
                    raise RuntimeError(f"{len(events)} of {expected} LOS events for {cable}")
                got = list(events)
                events.clear()
            seen += [at - sent for at, _ in got]
            device_side += [e.device_seconds - injected["at_seconds"] for _, e in got]
            to_cut.append(injected["at_seconds"] - sent)
            delivery += [at - e.device_seconds for at, e in got]
            last.append(max(at for at, _ in got) - sent)
            call(endpoint, "POST", "/v1/faults/clear", {"target": cable})
            with arrived:
                if not arrived.wait_for(lambda n=expected: len(events) >= n, EVENT_SECONDS):
                    raise RuntimeError(f"the clearing events of {cable} did not all come")
    finally:
        for stream in streams:
            if stream is not None:
                stream.close()
    return {"cuts": count, "events_per_cut": len(seen) // max(count, 1),
            "seen_p50_ms": round(1000 * _percentile(seen, 0.5), 2),
            "seen_p99_ms": round(1000 * _percentile(seen, 0.99), 2),
            "device_p50_ms": round(1000 * _percentile(device_side, 0.5), 3),
            "device_p99_ms": round(1000 * _percentile(device_side, 0.99), 3),
            "all_known_p50_ms": round(1000 * statistics.median(last), 2),
            "request_to_cut_p50_ms": round(1000 * statistics.median(to_cut), 2),
            "delivery_p50_ms": round(1000 * _percentile(delivery, 0.5), 2)}


def run_variant(topology: Path, directory: Path, processes: int,
                args: argparse.Namespace) -> dict[str, Any]:
    state = directory / f"state-{processes}"
    with lab_up(topology, state, processes) as (process, start_seconds):
        pids = _tree(process.pid)
        pids = [p for p in pids if "resource_tracker" not in _cmdline(p)]
        idle_before = _cpu_seconds(pids)
        time.sleep(args.idle_seconds)
        idle = 100 * (_cpu_seconds(pids) - idle_before) / args.idle_seconds
        inventory = load_inventory(state / "inventory.yaml")
        drivers = _drivers(inventory)
        try:
            remap_seconds = _prepare(inventory, drivers)
            polling = _poll(inventory, drivers, pids, args.poll_seconds,
                            args.poll_period_ms / 1000)
            flat_out = _poll(inventory, drivers, pids, args.poll_seconds, 0.0)
        finally:
            for driver in drivers.values():
                driver.close()
        cuts = _cuts(state, inventory, args.cuts)
        status = call(find_lab(state), "GET", "/v1/status")
        return {"processes_asked": processes,
                "processes": [p["role"] for p in status["lab"]["processes"]],
                "start_seconds": round(start_seconds, 2), "rss_mb": round(_rss_mb(pids), 1),
                "idle_cpu_percent": round(idle, 1), "remap_seconds": round(remap_seconds, 3),
                "polling": polling, "flat_out": flat_out, "alarms": cuts}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _print(document: dict[str, Any]) -> None:
    fabric = document["fabric"]
    before, after = document["load_average"]
    print(f"lab scale: {fabric['links']} links, {fabric['ocs']} OCS of {fabric['ocs_size']}x"
          f"{fabric['ocs_size']}, cables of {fabric['spans_per_cable']}; {os.cpu_count()} CPUs, "
          f"load average {before} before, {after} after")
    header = ("processes", "start s", "RSS MB", "idle CPU %", "polls/s (asked)", "lab CPU %",
              "flat out polls/s", "lab CPU %", "client CPU %", "alarm p50 ms", "p99 ms",
              "device p50 ms", "p99 ms", "all known ms")
    rows = []
    for variant in document["variants"]:
        poll, flat, alarms = variant["polling"], variant["flat_out"], variant["alarms"]
        rows.append((f"{variant['processes_asked']} ({'+'.join(variant['processes'])})",
                     variant["start_seconds"], variant["rss_mb"], variant["idle_cpu_percent"],
                     f"{poll['polls_per_second']} ({poll['asked_polls_per_second']})",
                     poll["lab_cpu_percent"], flat["polls_per_second"], flat["lab_cpu_percent"],
                     flat["client_cpu_percent"],
                     alarms["seen_p50_ms"], alarms["seen_p99_ms"], alarms["device_p50_ms"],
                     alarms["device_p99_ms"], alarms["all_known_p50_ms"]))
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        print("  ".join(str(cell).rjust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"each cut: {document['variants'][0]['alarms']['events_per_cut']} LOS events "
          "(2 per link of the cable); of the alarm's latency, from the request to the cut "
          "beginning and from the judgement to its arrival here (p50, ms): " + "; ".join(
              f"{v['processes_asked']} process(es) {v['alarms']['request_to_cut_p50_ms']} and "
              f"{v['alarms']['delivery_p50_ms']}" for v in document["variants"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=256)
    parser.add_argument("--ocs-per-campus", type=int, default=8)
    parser.add_argument("--ocs-size", type=int, default=128)
    parser.add_argument("--spans-per-cable", type=int, default=64)
    parser.add_argument("--processes", default="1,2",
                        help="comma-separated worker counts to compare (1: one process)")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--poll-seconds", type=float, default=5.0)
    parser.add_argument("--poll-period-ms", type=float, default=50.0)
    parser.add_argument("--cuts", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="msoctl-lab-scale-") as scratch:
        directory = Path(scratch)
        topology = _generate(directory, args)
        variants = [run_variant(topology, directory, int(n), args)
                    for n in args.processes.split(",")]
    document = {"benchmark": "lab_scale",
                "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
                "fabric": {"links": args.links, "ocs": 2 * args.ocs_per_campus,
                           "ocs_size": args.ocs_size, "spans_per_cable": args.spans_per_cable},
                "poll_period_ms": args.poll_period_ms, "variants": variants}
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        _print(document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
