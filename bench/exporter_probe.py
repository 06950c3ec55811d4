"""Probing through ``msoctl exporter``: latency per device kind, a fleet of emulated
targets probed concurrently, and the CPO/CPC probe against Debian's snmp_exporter.

Every party runs in a process of its own, so that the CPU each one uses is its own:
the exporter (``msoctl exporter``, and its SNMP worker process), the emulated lab
(``msoctl lab up``), the emulated OCS fleet (emulators/ocs/fleet.py), and
``prometheus-snmp-exporter``. CPU seconds come from /proc (utime + stime).

1. Per kind: the lab's devices probed round robin (``ocs``, ``amp``, ``switch``, and
   each switch's ``cpo`` telemetry), ``--samples`` probes per device: latency p50
   and p99, exporter CPU seconds per probe (the SNMP worker's included, and apart).
2. Fleet: ``--targets`` emulated 64x64 OCSes (each its own SCPI server on loopback)
   in one process, listed in a generated inventory, probed ``--rounds`` times each by
   ``--clients`` concurrent clients: latency p50 and p99, probes per second,
   exporter CPU seconds per probe, the emulated fleet's CPU per probe, how many
   probes found their device up.
3. snmp_exporter: ``prometheus-snmp-exporter`` with a configuration that
   ``prometheus-snmp-generator`` generates from our MIBs (mibs/) for the same
   tables, and msoctl's CPO probe, scraping the same lab agent (sw-a), alternately,
   ``--snmp-samples`` times each: wall p50, CPU per scrape, series, bytes, and the
   ratios msoctl / snmp_exporter. Skipped (and said so) when Debian's package is not
   installed.

Usage: python bench/exporter_probe.py [--samples 20] [--targets 500] [--clients 8]
                                      [--rounds 2] [--snmp-samples 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.support.ports

from emulators.fleetprocess import FleetProcess  # noqa: E402
from tests.support.ports import free_port  # noqa: E402  (also exporter_fleet.py's)

MSOCTL = Path(sys.executable).with_name("msoctl")
TIMEOUT_HEADER = "X-Prometheus-Scrape-Timeout-Seconds"
SCRAPE_TIMEOUT_SECONDS = 10.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPO_TABLES = ("msoCpoEngineTable", "msoCpoLaneTable", "msoCpoElsTable", "msoCpcLaneTable",
              "msoCpcHistogramTable", "msoCpcFecDegradeThreshold")

Progress = Callable[[str], None]


# ---- processes and their CPU ------------------------------------------------------------

def process_cpu_seconds(pid: int, *, children: bool = False,
                        only_children: bool = False) -> float:
    """utime + stime of ``pid`` (and, with ``children``, of its live child processes;
    with ``only_children``, of those alone: the exporter's SNMP worker)."""
    total = 0.0
    pids = [] if only_children else [pid]
    if children or only_children:
        try:
            pids += [int(p) for p in
                     Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            pass
    for each in pids:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def host_cpu_seconds() -> dict[str, float]:
    """The whole machine's CPU seconds so far (/proc/stat): ``host_busy`` (every process
    and the kernel) and ``host_steal`` (taken by the hypervisor for other guests: a
    virtual machine's cores lent away, which no process here can show)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return {}
    user, nice, system, _idle, _iowait, irq, softirq, steal = (
        int(value) / CLOCK_TICKS for value in [*fields, "0", "0", "0", "0"][:8])
    return {"host_busy": user + nice + system + irq + softirq, "host_steal": steal}


def _wait(predicate: Callable[[], bool], what: str, seconds: float,
          process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {seconds:g} s")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def lab(directory: Path) -> Iterator[Path]:
    """``msoctl lab up`` in its own process; the inventory it writes."""
    state = directory / "lab"
    log = directory / "lab.log"
    with log.open("w") as output:
        process = subprocess.Popen([str(MSOCTL), "lab", "up", "--state-dir", str(state)],
                                   stdout=output, stderr=subprocess.STDOUT)
    try:
        inventory = state / "inventory.yaml"
        _wait(inventory.exists, "the lab", 60, process)
        yield inventory
    finally:
        _stop(process)


@contextmanager
def exporter(inventory: Path, log: Path) -> Iterator[tuple[str, int]]:
    """``msoctl exporter`` in its own process: its URL and pid. It shares only readings
    in flight (``--share-seconds 0``): every probe here comes after the previous one is
    answered, and each is to cost the device a reading of its own."""
    env = {**os.environ, "MSOCTL_INVENTORY": str(inventory)}
    with log.open("w") as output:
        process = subprocess.Popen([str(MSOCTL), "exporter", "--listen", "127.0.0.1:0",
                                    "--share-seconds", "0"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=output)
    try:
        _wait(lambda: "listening on" in log.read_text(), "the exporter", 60, process)
        url = log.read_text().split("listening on ")[1].split()[0]
        time.sleep(1.0)  # its SNMP worker imports pysnmp meanwhile
        yield url, process.pid
    finally:
        _stop(process)


def fetch(url: str, *, timeout: float = SCRAPE_TIMEOUT_SECONDS) -> tuple[bytes, float]:
    request = urllib.request.Request(url, headers={TIMEOUT_HEADER: str(timeout)})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=timeout + 5) as reply:
        body = reply.read()
    return body, time.perf_counter() - started


def is_up(body: bytes) -> bool:
    return any(line.startswith(b"msoctl_up{") and line.endswith(b" 1.0")
               for line in body.splitlines())


def series(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# ---- 1. latency per kind ------------------------------------------------------------------

def per_kind(url: str, pid: int, inventory: Path, samples: int,
             progress: Progress) -> dict[str, Any]:
    devices = yaml.safe_load(inventory.read_text())["devices"]
    targets = [(d["name"], d["kind"]) for d in devices if d["kind"] in ("ocs", "amp", "switch")]
    targets += [(d["name"], "cpo") for d in devices if d["kind"] == "switch" and "snmp" in d]
    latency: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    worker_cpu: dict[str, float] = {}
    down: dict[str, int] = {}
    for name, kind in targets:  # warm-up: first connections, the SNMP engines
        fetch(f"{url}/probe?target={name}&module={kind}")
    readings_before = readings(url)
    for round_index in range(samples):
        progress(f"per kind: round {round_index + 1}/{samples}")
        for name, kind in targets:
            before = process_cpu_seconds(pid, children=True)
            worker = process_cpu_seconds(pid, only_children=True)
            body, seconds = fetch(f"{url}/probe?target={name}&module={kind}")
            cpu[kind] = cpu.get(kind, 0.0) + process_cpu_seconds(pid, children=True) - before
            worker_cpu[kind] = (worker_cpu.get(kind, 0.0)
                                + process_cpu_seconds(pid, only_children=True) - worker)
            latency.setdefault(kind, []).append(seconds)
            down[kind] = down.get(kind, 0) + (not is_up(body))
    taken = readings(url)
    return {kind: {"probes": len(values), "down": down[kind],
                   "readings": int(taken.get(kind, 0) - readings_before.get(kind, 0)),
                   "p50_seconds": statistics.median(values),
                   "p99_seconds": percentile(values, 0.99),
                   "exporter_cpu_seconds_per_probe": cpu[kind] / len(values),
                   "of_which_snmp_worker_seconds": worker_cpu[kind] / len(values)}
            for kind, values in latency.items()}


def readings(url: str) -> dict[str, float]:
    """The exporter's ``msoctl_exporter_readings_total`` per module: device readings taken."""
    body, _ = fetch(f"{url}/metrics")
    found: dict[str, float] = {}
    for line in body.decode().splitlines():
        if line.startswith('msoctl_exporter_readings_total{kind="'):
            kind = line.split('"')[1]
            found[kind] = float(line.rsplit(" ", 1)[1])
    return found


# ---- 2. a fleet of targets, concurrent clients ---------------------------------------------

class OcsFleet(FleetProcess):
    """Emulated OCSes in a process of their own (emulators/ocs/fleet.py)."""

    def __init__(self, count: int, directory: Path):
        from emulators.ocs.fleet import serve_fleet

        super().__init__(serve_fleet, (count,), what="the emulated OCS fleet")
        self.inventory = directory / "fleet.yaml"
        self.inventory.write_text(yaml.safe_dump({"devices": [
            {"name": name, "kind": "ocs", "transport": "visa",
             "address": f"TCPIP::127.0.0.1::{port}::SOCKET", "timeout_seconds": 5.0,
             "labels": {"bench": "fleet"}} for name, port in self.devices]}))


def fleet(count: int, clients: int, rounds: int, directory: Path,
          progress: Progress) -> dict[str, Any]:
    progress(f"fleet: starting {count} emulated OCSes")
    emulated = OcsFleet(count, directory)
    try:
        with exporter(emulated.inventory, directory / "fleet-exporter.log") as (url, pid):
            names = [name for name, _ in emulated.devices]
            for name in names[:clients]:  # warm-up: pyvisa's resource manager, imports
                fetch(f"{url}/probe?target={name}")
            work: queue.Queue[str] = queue.Queue()
            for _round in range(rounds):
                for name in names:
                    work.put(name)
            latencies: list[float] = []
            down = [0]
            lock = threading.Lock()

            def client() -> None:
                while True:
                    try:
                        name = work.get_nowait()
                    except queue.Empty:
                        return
                    body, seconds = fetch(f"{url}/probe?target={name}")
                    with lock:
                        latencies.append(seconds)
                        down[0] += not is_up(body)

            progress(f"fleet: {count * rounds} probes by {clients} clients")
            exporter_cpu, fleet_cpu = process_cpu_seconds(pid), emulated.cpu_seconds()
            started = time.perf_counter()
            threads = [threading.Thread(target=client) for _ in range(clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            exporter_cpu = process_cpu_seconds(pid) - exporter_cpu
            fleet_cpu = emulated.cpu_seconds() - fleet_cpu
    finally:
        emulated.close()
    probes = len(latencies)
    return {"targets": count, "clients": clients, "rounds": rounds, "probes": probes,
            "down": down[0], "wall_seconds": wall, "probes_per_second": probes / wall,
            "p50_seconds": statistics.median(latencies),
            "p99_seconds": percentile(latencies, 0.99),
            "exporter_cpu_seconds_per_probe": exporter_cpu / probes,
            "fleet_cpu_seconds_per_probe": fleet_cpu / probes}


# ---- 3. against snmp_exporter ------------------------------------------------------------------

def snmp_exporter_config(inventory: Path, target: str, directory: Path) -> Path:
    """snmp.yml generated by prometheus-snmp-generator from mibs/ for the CPO/CPC tables,
    with the target's SNMPv3 credentials (SHA-256, AES-128, as the agent wants)."""
    device = next(d for d in yaml.safe_load(inventory.read_text())["devices"]
                  if d["name"] == target)
    access = device["snmp"]

    def secret(reference: str) -> str:
        path = Path(reference.removeprefix("file:"))
        return (path if path.is_absolute() else inventory.parent / path).read_text().strip()

    generator = {"modules": {"mso_cpo": {
        "version": 3, "max_repetitions": 50, "retries": 1, "timeout": "5s",
        "auth": {"username": access["user"], "security_level": "authPriv",
                 "password": secret(access["auth_key"]), "auth_protocol": "SHA256",
                 "priv_protocol": "AES", "priv_password": secret(access["priv_key"])},
        "walk": ["sysUpTime", "ifName", *CPO_TABLES],
        "lookups": [{"source_indexes": ["ifIndex"], "lookup": "ifName"}],
        "overrides": {name: {"type": "EnumAsStateSet"} for name in
                      ("msoCpoEngineStatus", "msoCpoElsState", "msoCpoElsControlMode")},
    }}}
    work = directory / "snmp-generator"
    work.mkdir()
    (work / "generator.yml").write_text(yaml.safe_dump(generator))
    generated = subprocess.run(["prometheus-snmp-generator", "generate"], cwd=work,
                               env={**os.environ, "MIBDIRS": str(ROOT / "mibs")},
                               capture_output=True, text=True, timeout=60)
    if generated.returncode != 0:
        raise RuntimeError(f"prometheus-snmp-generator: {generated.stderr.strip()}")
    return work / "snmp.yml"


def against_snmp_exporter(url: str, pid: int, inventory: Path, samples: int,
                          directory: Path, progress: Progress) -> dict[str, Any]:
    binary = shutil.which("prometheus-snmp-exporter")
    if binary is None or shutil.which("prometheus-snmp-generator") is None:
        return {"skipped": "Debian's prometheus-snmp-exporter is not installed"}
    target = "sw-a"
    config = snmp_exporter_config(inventory, target, directory)
    address = next(d for d in yaml.safe_load(inventory.read_text())["devices"]
                   if d["name"] == target)["snmp"]["address"]
    port = free_port()
    with (directory / "snmp_exporter.log").open("w") as output:
        theirs = subprocess.Popen([binary, f"--config.file={config}",
                                   f"--web.listen-address=127.0.0.1:{port}"],
                                  stdout=output, stderr=subprocess.STDOUT)
    try:
        their_url = f"http://127.0.0.1:{port}/snmp?target={address}&module=mso_cpo"
        our_url = f"{url}/probe?target={target}&module=cpo"
        _wait(lambda: _answers(f"http://127.0.0.1:{port}/"), "snmp_exporter", 30, theirs)
        fetch(their_url)
        fetch(our_url)
        figures: dict[str, dict[str, list[float]]] = {
            "msoctl": {"wall": [], "cpu": [], "series": [], "bytes": []},
            "snmp_exporter": {"wall": [], "cpu": [], "series": [], "bytes": []}}
        for index in range(samples):
            progress(f"snmp_exporter comparison: {index + 1}/{samples}")
            order = [("msoctl", our_url, pid, True), ("snmp_exporter", their_url, theirs.pid,
                                                      False)]
            for label, address_url, who, children in (order if index % 2 == 0 else order[::-1]):
                before = process_cpu_seconds(who, children=children)
                body, seconds = fetch(address_url)
                figures[label]["cpu"].append(process_cpu_seconds(who, children=children)
                                             - before)
                figures[label]["wall"].append(seconds)
                figures[label]["series"].append(series(body))
                figures[label]["bytes"].append(len(body))
    finally:
        _stop(theirs)
    result: dict[str, Any] = {"target": target, "samples": samples}
    for label, values in figures.items():
        result[label] = {"p50_seconds": statistics.median(values["wall"]),
                         "cpu_seconds_per_scrape": statistics.fmean(values["cpu"]),
                         "series": int(statistics.median(values["series"])),
                         "bytes": int(statistics.median(values["bytes"]))}
    ours, theirs_figures = result["msoctl"], result["snmp_exporter"]
    result["ratios_msoctl_over_snmp_exporter"] = {
        "p50_seconds": ours["p50_seconds"] / theirs_figures["p50_seconds"],
        "cpu_seconds_per_scrape": ours["cpu_seconds_per_scrape"]
        / max(theirs_figures["cpu_seconds_per_scrape"], 1 / CLOCK_TICKS),
        "series": ours["series"] / theirs_figures["series"]}
    return result


def _answers(url: str) -> bool:
    try:
        fetch(url, timeout=1)
        return True
    except OSError:
        return False


# ---- the run ------------------------------------------------------------------------------

def measure(samples: int, targets: int, clients: int, rounds: int, snmp_samples: int,
            progress: Progress) -> dict[str, Any]:
    result: dict[str, Any] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="msoctl-bench-") as tmp:
        directory = Path(tmp)
        with lab(directory) as inventory, \
                exporter(inventory, directory / "exporter.log") as (url, pid):
            result["per_kind"] = per_kind(url, pid, inventory, samples, progress)
            result["snmp_exporter"] = (
                against_snmp_exporter(url, pid, inventory, snmp_samples, directory, progress)
                if snmp_samples else {"skipped": "--snmp-samples 0"})
        result["fleet"] = fleet(targets, clients, rounds, directory, progress)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=20, help="probes per lab device")
    parser.add_argument("--targets", type=int, default=500, help="emulated OCSes")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--rounds", type=int, default=2, help="probes per fleet target")
    parser.add_argument("--snmp-samples", type=int, default=10,
                        help="scrapes each of the CPO comparison (0: skip it)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if min(args.samples, args.targets, args.clients, args.rounds) < 1 or args.snmp_samples < 0:
        parser.error("--samples, --targets, --clients, --rounds >= 1; --snmp-samples >= 0")
    quiet = args.json or not sys.stderr.isatty()
    result = measure(args.samples, args.targets, args.clients, args.rounds, args.snmp_samples,
                     (lambda _: None) if quiet else
                     (lambda text: print(f"  {text}", file=sys.stderr)))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"msoctl exporter, {result['cpus']} CPUs; every party in its own process")
    print(f"{'kind':<8}{'probes':>8}{'down':>6}{'p50 ms':>9}{'p99 ms':>9}{'cpu ms/probe':>14}"
          f"{'of which SNMP worker':>22}")
    for kind, f in result["per_kind"].items():
        print(f"{kind:<8}{f['probes']:>8}{f['down']:>6}{f['p50_seconds'] * 1e3:>9.1f}"
              f"{f['p99_seconds'] * 1e3:>9.1f}{f['exporter_cpu_seconds_per_probe'] * 1e3:>14.1f}"
              f"{f['of_which_snmp_worker_seconds'] * 1e3:>22.1f}")
    f = result["fleet"]
    print(f"\nfleet: {f['targets']} emulated OCS targets x {f['rounds']} rounds, "
          f"{f['clients']} concurrent clients: {f['probes']} probes in "
          f"{f['wall_seconds']:.1f} s ({f['probes_per_second']:.0f}/s), {f['down']} down")
    print(f"  latency p50 {f['p50_seconds'] * 1e3:.0f} ms, p99 {f['p99_seconds'] * 1e3:.0f} ms; "
          f"exporter CPU {f['exporter_cpu_seconds_per_probe'] * 1e3:.1f} ms/probe, "
          f"emulated OCS CPU {f['fleet_cpu_seconds_per_probe'] * 1e3:.1f} ms/probe")
    s = result["snmp_exporter"]
    if "skipped" in s:
        print(f"\nsnmp_exporter comparison skipped: {s['skipped']}")
    else:
        r = s["ratios_msoctl_over_snmp_exporter"]
        print(f"\nCPO/CPC of {s['target']}, {s['samples']} scrapes each, alternated:")
        for label in ("msoctl", "snmp_exporter"):
            g = s[label]
            print(f"  {label:<14} p50 {g['p50_seconds'] * 1e3:7.0f} ms   CPU "
                  f"{g['cpu_seconds_per_scrape'] * 1e3:6.0f} ms/scrape   {g['series']} series"
                  f"   {g['bytes'] / 1e3:.0f} kB")
        print(f"  msoctl / snmp_exporter: latency {r['p50_seconds']:.2f}x, CPU "
              f"{r['cpu_seconds_per_scrape']:.2f}x, series {r['series']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
