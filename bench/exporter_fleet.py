"""Telemetry for a fleet: thousands of emulated targets through sharded exporters under
real Prometheus servers, and the CPO/CPC probe against Debian's snmp_exporter.

Every party runs in a process of its own, so that the CPU each uses is its own (from
/proc: utime + stime, children included for the exporters' SNMP workers):

1. Fleet: ``--targets`` emulated targets of mixed kinds, each emulator kind in its own
   process (OCSes, switches over NETCONF, amplifiers behind I2C bridges, CPO/CPC SNMP
   agents of 8 ports on some of the switches), split by ``msoctl inventory sd --shards
   N`` into ``--shards`` shards: an ``msoctl exporter`` and a Debian Prometheus per
   shard, configured from deploy/prometheus-sharded.yml, every target scraped every
   ``--interval`` seconds for ``--minutes``. Figures, from what the Prometheus servers
   stored (per target: samples of ``up`` and ``msoctl_up`` in the window, queried at
   its end), their targets API and /proc: scrapes made against those due (a target
   scraped on time has at least floor(window / interval) samples), missed scrapes (not
   made, failed: ``up`` 0, or the device down: ``msoctl_up`` 0), probe duration
   p50/p99 (``scrape_duration_seconds``), exporter CPU per target per scrape.
2. Concurrent probes: ``--burst`` probes at once, spread over 5 targets (amplifier,
   OCS, switch, its CPO/CPC telemetry, a second OCS) of one exporter: p50, p99, and
   the device readings they cost (the exporter's own counters).
3. CPO/CPC CPU: one emulated 64-port switch agent; msoctl's probe (fast decode path),
   msoctl's probe with pysnmp's own decoding (``MSOCTL_SNMP_FAST_DECODE=0``), and
   Debian's ``prometheus-snmp-exporter`` with ``msoctl exporter snmp-config``'s modules
   (MSO-CPO-MIB and MSO-CPC-MIB: two scrapes make one reading), alternately
   ``--cpo-samples`` times each: CPU per reading and the ratios to snmp_exporter.
   Skipped (and said so) when Debian's package is missing.

Usage: python bench/exporter_fleet.py [--targets 2000] [--shards 2] [--interval 30]
                                      [--minutes 5] [--burst 200] [--cpo-samples 10]
                                      [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import yaml

from emulators.fleetprocess import FleetProcess

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from exporter_probe import (  # noqa: E402  (the sibling bench's process helpers)
    CLOCK_TICKS,
    _stop,
    _wait,
    fetch,
    free_port,
    host_cpu_seconds,
    percentile,
    process_cpu_seconds,
)

MSOCTL = Path(sys.executable).with_name("msoctl")
SNMP_USER = "msoctl"
Progress = Callable[[str], None]


# ---- emulators in their own processes -------------------------------------------------------

def mix(targets: int) -> dict[str, int]:
    """How many of each kind make ``targets``: 1 in 40 a switch's CPO/CPC telemetry,
    1 in 20 a switch, 1 in 20 an amplifier, the rest OCSes."""
    cpo = max(1, targets // 40)
    switches = max(cpo, targets // 20)
    amps = max(1, targets // 20)
    return {"ocs": max(1, targets - cpo - switches - amps), "switch": switches, "amp": amps,
            "cpo": cpo}


AGENTS_PER_PROCESS = 10
"""Emulated CPO/CPC agents per process (see :class:`Fleet`)."""


def _split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` (at least one) shares differing by at most one."""
    parts = max(1, parts)
    return [total // parts + (1 if k < total % parts else 0) for k in range(parts)]


class Fleet:
    """Every emulator process and the inventory that lists their devices."""

    def __init__(self, counts: dict[str, int], directory: Path, *, agent_ports: int = 8):
        from emulators.amp.fleet import serve_fleet as serve_amplifiers
        from emulators.cpo.fleet import serve_fleet as serve_agents
        from emulators.ocs.fleet import serve_fleet as serve_ocs
        from emulators.switch.fleet import serve_fleet as serve_switches

        self.counts = counts
        password, auth, priv = (secrets.token_urlsafe(16) for _ in range(3))
        self.processes: list[FleetProcess] = []
        self.kinds: list[str] = []
        try:
            ocs = self._start(serve_ocs, (counts["ocs"],), "OCS fleet", kind="ocs")
            switches = self._start(serve_switches, (counts["switch"], 0.0, password),
                                   "switch fleet", kind="switch")
            amps = self._start(serve_amplifiers, (counts["amp"],), "amplifier fleet",
                               kind="amp")
            # Each emulated agent (pysnmp, USM with privacy) costs an 8-port reading about
            # 45 ms of CPU, a real switch's agent its own CPU: the agents go
            # AGENTS_PER_PROCESS to a process, so that one Python process is not the
            # fleet's bottleneck.
            shares = _split(counts["cpo"], math.ceil(counts["cpo"] / AGENTS_PER_PROCESS))
            agent_parts = [self._start(serve_agents, (share, agent_ports, SNMP_USER, auth,
                                                      priv), f"CPO agent fleet {k + 1}",
                                       kind="cpo", first=sum(shares[:k]))
                           for k, share in enumerate(shares)]
            for process in self.processes:  # started side by side, then waited for
                process.wait()
        except BaseException:
            self.close()
            raise
        for name, value in (("switch.password", password), ("snmp.auth", auth),
                            ("snmp.priv", priv)):
            (directory / name).write_text(value)
            (directory / name).chmod(0o600)
        (directory / "known_hosts").write_text("".join(f"{line}\n"
                                                       for _, _, line in switches.devices))
        agent_ports_of = [port for part in agent_parts for _, port in part.devices]
        devices: list[dict[str, Any]] = [
            {"name": name, "kind": "ocs", "transport": "visa",
             "address": f"TCPIP::127.0.0.1::{port}::SOCKET", "timeout_seconds": 5.0}
            for name, port in ocs.devices]
        devices += [{"name": name, "kind": "amp", "transport": "i2c-bridge",
                     "address": f"socket://127.0.0.1:{port}", "i2c_address": 80,
                     "timeout_seconds": 5.0} for name, port in amps.devices]
        for index, (name, port, _) in enumerate(switches.devices):
            entry: dict[str, Any] = {
                "name": name, "kind": "switch", "transport": "netconf",
                "address": f"127.0.0.1:{port}", "username": "msoctl",
                "password": "file:switch.password", "known_hosts": "known_hosts",
                "timeout_seconds": 10.0}
            if index < len(agent_ports_of):
                entry["snmp"] = {"address": f"127.0.0.1:{agent_ports_of[index]}",
                                 "user": SNMP_USER, "auth_key": "file:snmp.auth",
                                 "priv_key": "file:snmp.priv", "timeout_seconds": 5.0}
            devices.append(entry)
        self.inventory = directory / "inventory.yaml"
        self.inventory.write_text(yaml.safe_dump({"devices": devices}))
        self.targets = len(devices) + len(agent_ports_of)

    def _start(self, serve: Callable[..., None], args: tuple[Any, ...], what: str, *,
               kind: str, **kwargs: Any) -> FleetProcess:
        started = FleetProcess(serve, args, what=what, start_seconds=600, wait=False,
                               kwargs=kwargs)
        self.processes.append(started)
        self.kinds.append(kind)
        return started

    def pids_by_kind(self) -> dict[str, list[int]]:
        """The emulator processes by the kind they serve."""
        found: dict[str, list[int]] = {}
        for kind, process in zip(self.kinds, self.processes, strict=True):
            found.setdefault(kind, []).append(process.pid)
        return found

    def cpu_seconds_by_kind(self) -> dict[str, float]:
        """The emulator processes' CPU so far, by the kind they serve (read from /proc,
        as the timeline's sampler reads it, so that the two agree)."""
        return {kind: sum(process_cpu_seconds(pid) for pid in pids)
                for kind, pids in self.pids_by_kind().items()}

    def close(self) -> None:
        for process in self.processes:
            process.close()


# ---- exporters and Prometheus servers ---------------------------------------------------------

@contextmanager
def exporter(inventory: Path, log: Path, *, env: dict[str, str] | None = None,
             share_seconds: float | None = None,
             options: Sequence[str] = ()) -> Iterator[tuple[str, int]]:
    """``msoctl exporter`` in its own process: its HOST:PORT and pid (``share_seconds``:
    its ``--share-seconds``, the default when None; ``options``: more of its options)."""
    environment = {**os.environ, "MSOCTL_INVENTORY": str(inventory), **(env or {})}
    share = [] if share_seconds is None else ["--share-seconds", f"{share_seconds:g}"]
    share = [*share, *options]
    with log.open("w") as output:
        process = subprocess.Popen([str(MSOCTL), "exporter", "--listen", "127.0.0.1:0",
                                    *share],
                                   env=environment, stdout=subprocess.DEVNULL, stderr=output)
    try:
        _wait(lambda: "listening on" in log.read_text(), "the exporter", 60, process)
        url = log.read_text().split("listening on ")[1].split()[0]
        time.sleep(1.0)  # its SNMP worker imports pysnmp meanwhile
        yield url.removeprefix("http://"), process.pid
    finally:
        _stop(process)


@contextmanager
def prometheus(config: dict[str, Any], directory: Path) -> Iterator[tuple[str, int]]:
    """Debian's Prometheus on ``config``: its URL and pid."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("Debian's prometheus is not installed (apt-get install prometheus)")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "prometheus.yml").write_text(yaml.safe_dump(config))
    address = f"127.0.0.1:{free_port()}"
    with (directory / "prometheus.log").open("w") as output:
        process = subprocess.Popen(
            [binary, f"--config.file={directory / 'prometheus.yml'}",
             f"--storage.tsdb.path={directory / 'data'}", f"--web.listen-address={address}",
             "--log.level=warn"], stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _ready(f"http://{address}"), "prometheus", 60, process)
        yield f"http://{address}", process.pid
    finally:
        _stop(process)


def _ready(url: str) -> bool:
    try:
        fetch(f"{url}/-/ready", timeout=1)
        return True
    except OSError:
        return False


def query(url: str, expression: str, *, at: float | None = None) -> list[dict[str, Any]]:
    """An instant query's result, evaluated at ``at`` (Unix seconds; now if None)."""
    when = "" if at is None else f"&time={at:.3f}"
    body, _ = fetch(f"{url}/api/v1/query?query={urllib.parse.quote(expression)}{when}",
                    timeout=60)
    document = json.loads(body)
    if document["status"] != "success":
        raise RuntimeError(f"{expression}: {document}")
    return list(document["data"]["result"])


def scrape_timeout(interval: float) -> float:
    """Prometheus's scrape timeout here: 10 s, or the interval if shorter."""
    return min(10.0, interval)


def shard_config(shard: int, shards: int, exporter_address: str, targets: Path,
                 interval: float) -> dict[str, Any]:
    from msoctl.exporter import sd

    base = yaml.safe_load((ROOT / "deploy" / "prometheus-sharded.yml").read_text())
    config = sd.shard_config(base, shard, shards, exporter=exporter_address,
                             targets=str(targets))
    timeout = f"{scrape_timeout(interval):g}s"
    config["global"].update(scrape_interval=f"{interval:g}s", scrape_timeout=timeout,
                            evaluation_interval=f"{interval:g}s")
    config["rule_files"] = []
    for job in config["scrape_configs"]:  # every target at the same interval
        job.update(scrape_interval=f"{interval:g}s", scrape_timeout=timeout)
    return config


# ---- 1. the fleet -------------------------------------------------------------------------------

def fleet_run(fleet: Fleet, shards: int, interval: float, minutes: float, directory: Path,
              progress: Progress, *, options: Sequence[str] = (),
              bucket_seconds: float = 10.0) -> dict[str, Any]:
    split = directory / "targets"
    done = subprocess.run([str(MSOCTL), "inventory", "sd", "--shards", str(shards), "--out",
                           str(split)], env={**os.environ, "MSOCTL_INVENTORY":
                                             str(fleet.inventory)},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"msoctl inventory sd: {done.stderr}")
    with ExitStack() as stack:
        exporters = [stack.enter_context(exporter(fleet.inventory,
                                                  directory / f"exporter-{k}.log",
                                                  options=options))
                     for k in range(shards)]
        begun = time.time()
        # the emulators by kind too, to tell which of them an episode of misses is
        sampler = stack.enter_context(_CpuSampler(
            {"exporters": [pid for _, pid in exporters],
             **{f"{kind}_emulators": pids for kind, pids in fleet.pids_by_kind().items()}},
            begun, bucket_seconds))
        servers = [stack.enter_context(prometheus(
            shard_config(k, shards, exporters[k][0], split / f"msoctl-targets-{k}.json",
                         interval), directory / f"prometheus-{k}")) for k in range(shards)]
        sampler.watch("prometheus", [pid for _, pid in servers])
        # two intervals, and at least the seconds Prometheus takes to find and first
        # scrape the targets of its file_sd files
        warm = min(max(2 * interval, 5.0), 60.0)
        progress(f"fleet: {fleet.targets} targets, {shards} shards, warming up {warm:g} s")
        time.sleep(warm)
        exporter_cpu = [process_cpu_seconds(pid, children=True) for _, pid in exporters]
        prometheus_cpu = [process_cpu_seconds(pid) for _, pid in servers]
        fleet_cpu_by_kind = fleet.cpu_seconds_by_kind()
        started = time.time()
        deadline = time.monotonic() + minutes * 60
        while time.monotonic() < deadline:
            left = deadline - time.monotonic()
            progress(f"fleet: {left:.0f} s to go")
            time.sleep(min(30.0, max(0.0, left)))
        window = time.time() - started
        exporter_cpu = [process_cpu_seconds(pid, children=True) - before
                        for (_, pid), before in zip(exporters, exporter_cpu, strict=True)]
        prometheus_cpu = [process_cpu_seconds(pid) - before
                          for (_, pid), before in zip(servers, prometheus_cpu, strict=True)]
        fleet_cpu_by_kind = {kind: seconds - fleet_cpu_by_kind[kind]
                             for kind, seconds in fleet.cpu_seconds_by_kind().items()}
        fleet_cpu = sum(fleet_cpu_by_kind.values())
        ended = started + window
        # a scrape begun before the end is stored when it ends, up to a scrape timeout
        # later: queried sooner, one query of the window could see it and the next not
        time.sleep(max(0.0, ended + scrape_timeout(interval) + 1.0 - time.time()))
        counted = [_scrapes(url, _expected(split / f"msoctl-targets-{k}.json"), window,
                            ended, interval) for k, (url, _) in enumerate(servers)]
        timeline = _timeline([url for url, _ in servers], begun, ended, started,
                             bucket_seconds)
        for entry in timeline:
            entry.update(sampler.cores(entry["t"]))
    made = sum(c["made"] for c in counted)
    durations = [d for c in counted for d in c["durations"]]
    missed = sum(c["not_made"] + c["failed"] + c["down"] for c in counted)
    return {"targets": sum(c["targets"] for c in counted), "kinds": fleet.counts,
            "shards": shards, "interval_seconds": interval, "window_seconds": window,
            "targets_active": sum(c["active"] for c in counted),
            "targets_never_scraped": sum(c["never_scraped"] for c in counted),
            "scrapes_due": sum(c["due"] for c in counted), "scrapes_made": made,
            "scrapes_not_made": sum(c["not_made"] for c in counted),
            "scrapes_failed": sum(c["failed"] for c in counted),
            "devices_down": sum(c["down"] for c in counted), "missed_scrapes": missed,
            "devices_down_by_kind": {kind: sum(c["down_by_kind"].get(kind, 0)
                                               for c in counted)
                                     for kind in sorted({k for c in counted
                                                         for k in c["down_by_kind"]})},
            "scrape_interval_p99_seconds": max(c["interval_p99"] for c in counted),
            "probe_p50_seconds": statistics.median(durations) if durations else None,
            "probe_p99_seconds": percentile(durations, 0.99) if durations else None,
            "probe_max_seconds": max(durations) if durations else None,
            "exporter_cpu_seconds": sum(exporter_cpu),
            "exporter_cpu_ms_per_target_scrape": 1e3 * sum(exporter_cpu) / max(1, made),
            "exporter_cores": sum(exporter_cpu) / window,
            "prometheus_cores": sum(prometheus_cpu) / window,
            "emulator_cores": fleet_cpu / window,
            # a kind near a core per process is the emulators' limit, not the exporters'
            # (its devices answer late)
            "emulator_cores_by_kind": {kind: round(seconds / window, 3)
                                       for kind, seconds in fleet_cpu_by_kind.items()},
            "timeline": timeline}


JOBS = 'job=~"msoctl|msoctl-cpo"'


def _expected(targets_file: Path) -> set[str]:
    """The device targets a shard's file lists, as ``job/instance`` keys: a switch's
    CPO/CPC group goes to job msoctl-cpo, everything else to msoctl."""
    keys = set()
    for group in json.loads(targets_file.read_text()):
        job = "msoctl-cpo" if group.get("labels", {}).get("kind") == "cpo" else "msoctl"
        keys.update(f"{job}/{target}" for target in group["targets"])
    return keys


def _per_target(url: str, expression: str, at: float) -> dict[str, float]:
    return {f"{s['metric']['job']}/{s['metric']['instance']}": float(s["value"][1])
            for s in query(url, expression, at=at)}


def _scrapes(url: str, expected: set[str], window: float, ended: float,
             interval: float) -> dict[str, Any]:
    """One shard's scrapes of its targets in the ``window`` seconds up to ``ended``, from
    the samples Prometheus stored: made (samples of ``up``), failed (``up`` 0), the
    device down (``msoctl_up`` 0), not made (fewer than the interval allows, per target:
    a target scraped on time has at least floor(window / interval) samples), and the
    targets Prometheus itself lists as active (its targets API)."""
    span = f"{int(window)}s"
    made = _per_target(url, f"count_over_time(up{{{JOBS}}}[{span}])", ended)
    ups = _per_target(url, f"sum_over_time(up{{{JOBS}}}[{span}])", ended)
    probes = _per_target(url, f"count_over_time(msoctl_up{{{JOBS}}}[{span}])", ended)
    probes_up = _per_target(url, f"sum_over_time(msoctl_up{{{JOBS}}}[{span}])", ended)
    down_by_kind: dict[str, int] = {}
    for series in query(url, f"sum by (kind) (count_over_time(msoctl_up{{{JOBS}}}[{span}]) "
                             f"- sum_over_time(msoctl_up{{{JOBS}}}[{span}]))", at=ended):
        kind = series["metric"].get("kind", "?")
        down_by_kind[kind] = down_by_kind.get(kind, 0) + int(float(series["value"][1]))
    each_due = int(window // interval)
    body, _ = fetch(f"{url}/api/v1/targets?state=active", timeout=60)
    active = {f"{t['labels']['job']}/{t['labels']['instance']}"
              for t in json.loads(body)["data"]["activeTargets"]
              if t["labels"].get("job") in ("msoctl", "msoctl-cpo")}
    durations: list[float] = []
    for series in query(url, f"scrape_duration_seconds{{{JOBS}}}[{span}]", at=ended):
        durations += [float(value) for _, value in series["values"]]
    metrics, _ = fetch(f"{url}/metrics", timeout=60)
    intervals = [float(line.rsplit(" ", 1)[1]) for line in metrics.decode().splitlines()
                 if line.startswith("prometheus_target_interval_length_seconds{")
                 and 'quantile="0.99"' in line and f'interval="{interval:g}s"' in line]
    targets = expected | set(made)
    return {"targets": len(targets), "active": len(active & targets),
            "never_scraped": len(targets - set(made)), "due": each_due * len(targets),
            "made": int(sum(made.values())),
            "not_made": sum(max(0, each_due - int(made.get(t, 0))) for t in targets),
            "failed": int(sum(made.values()) - sum(ups.values())),
            "down": int(sum(probes.values()) - sum(probes_up.values())),
            "down_by_kind": down_by_kind,
            "durations": durations,
            "interval_p99": max([v for v in intervals if math.isfinite(v)], default=0.0)}


class _CpuSampler:
    """The CPU the parties' processes use, sampled every ``bucket`` seconds from ``begun``
    (a ``time.time()``) in a thread: :meth:`cores` gives each party's cores over the
    bucket starting at ``t`` seconds, and the host's busy and stolen cores
    (:func:`host_cpu_seconds`). The exporters' SNMP workers count with them."""

    def __init__(self, parties: dict[str, list[int]], begun: float, bucket: float):
        self.parties = dict(parties)
        self.begun, self.bucket = begun, bucket
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, party: str, pids: list[int]) -> None:
        self.parties[party] = pids

    def _sample(self) -> None:
        self.samples.append((time.time(), {
            **{party: sum(process_cpu_seconds(pid, children=True) for pid in pids)
               for party, pids in list(self.parties.items())},
            **host_cpu_seconds()}))

    def _run(self) -> None:
        self._sample()
        while not self._stop.wait(max(0.0, self.begun + self.bucket * len(self.samples)
                                      - time.time())):
            self._sample()

    def cores(self, t: float) -> dict[str, float | None]:
        """``<party>_cores`` over [t, t + bucket): None where not sampled both ends."""
        index = round(t / self.bucket)
        if index + 1 >= len(self.samples):
            return {f"{party}_cores": None for party in self.parties}
        (t0, before), (t1, after) = self.samples[index], self.samples[index + 1]
        return {f"{party}_cores": (after[party] - before.get(party, 0.0)) / (t1 - t0)
                if party in before else None for party in after}

    def __enter__(self) -> _CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def _timeline(urls: list[str], begun: float, ended: float, window_start: float,
              bucket: float) -> list[dict[str, Any]]:
    """Every device scrape the servers stored from the exporters' start (the warm-up
    included) to ``ended``, by the second it was made in, in buckets of ``bucket``
    seconds: scrapes made, failed (``up`` 0: no answer in time), the device down
    (``msoctl_up`` 0), and the scrape durations' p50 and max. ``t`` is seconds since
    the exporters started, ``window`` whether the bucket is in the measured window."""
    span = f"{int(ended - begun) + 1}s"
    rows: dict[int, dict[str, Any]] = {}

    def row(stamp: float) -> dict[str, Any]:
        index = int((stamp - begun) // bucket)
        return rows.setdefault(index, {"t": index * bucket, "made": 0, "failed": 0,
                                       "down": 0, "durations": []})

    for url in urls:
        for series in query(url, f"up{{{JOBS}}}[{span}]", at=ended):
            for stamp, value in series["values"]:
                entry = row(float(stamp))
                entry["made"] += 1
                entry["failed"] += float(value) == 0
        for series in query(url, f"msoctl_up{{{JOBS}}}[{span}]", at=ended):
            for stamp, value in series["values"]:
                row(float(stamp))["down"] += float(value) == 0
        for series in query(url, f"scrape_duration_seconds{{{JOBS}}}[{span}]", at=ended):
            for stamp, value in series["values"]:
                row(float(stamp))["durations"].append(float(value))
    timeline = []
    for index in sorted(rows):
        entry = rows[index]
        durations = entry.pop("durations")
        entry["p50_seconds"] = statistics.median(durations) if durations else None
        entry["max_seconds"] = max(durations) if durations else None
        entry["window"] = begun + entry["t"] >= window_start
        timeline.append(entry)
    return timeline


# ---- 2. a burst of concurrent probes ----------------------------------------------------------

def burst(fleet: Fleet, probes: int, directory: Path, progress: Progress) -> dict[str, Any]:
    devices = yaml.safe_load(fleet.inventory.read_text())["devices"]
    first = {kind: next(d["name"] for d in devices if d["kind"] == kind)
             for kind in ("ocs", "amp")}
    switch = next(d["name"] for d in devices if "snmp" in d)
    second_ocs = [d["name"] for d in devices if d["kind"] == "ocs"][1]
    targets = [(first["amp"], "amp"), (first["ocs"], "ocs"), (switch, "switch"),
               (switch, "cpo"), (second_ocs, "ocs")]
    with exporter(fleet.inventory, directory / "burst-exporter.log") as (address, _):
        for name, kind in targets:  # warm: connections, the SNMP engine
            fetch(f"http://{address}/probe?target={name}&module={kind}")
        time.sleep(2.5)  # past the share window
        before = _counters(address)
        gate = threading.Barrier(probes)

        def one(number: int) -> tuple[float, bool]:
            name, kind = targets[number % len(targets)]
            gate.wait()
            body, seconds = fetch(f"http://{address}/probe?target={name}&module={kind}")
            return seconds, f'msoctl_up{{device="{name}"}} 1.0'.encode() in body

        progress(f"burst: {probes} probes of {len(targets)} targets at once")
        with ThreadPoolExecutor(probes) as pool:
            results = list(pool.map(one, range(probes)))
        after = _counters(address)
    seconds = [s for s, _ in results]
    by_target: dict[str, list[float]] = {}
    for number, (took, _) in enumerate(results):
        name, kind = targets[number % len(targets)]
        by_target.setdefault(f"{name}/{kind}", []).append(took)
    return {"probes": probes, "targets": len(targets), "up": sum(up for _, up in results),
            "p50_seconds": statistics.median(seconds), "p99_seconds": percentile(seconds, 0.99),
            "max_seconds_by_target": {key: max(values) for key, values in by_target.items()},
            "readings": after["readings"] - before["readings"],
            "shared": after["shared"] - before["shared"]}


def _counters(address: str) -> dict[str, float]:
    body, _ = fetch(f"http://{address}/metrics")
    totals = {"readings": 0.0, "shared": 0.0}
    for line in body.decode().splitlines():
        for key, name in (("readings", "msoctl_exporter_readings_total{"),
                          ("shared", "msoctl_exporter_probes_shared_total{")):
            if line.startswith(name):
                totals[key] += float(line.rsplit(" ", 1)[1])
    return totals


# ---- 3. CPO/CPC against snmp_exporter ------------------------------------------------------------

def against_snmp_exporter(samples: int, directory: Path, progress: Progress, *,
                          ports: int = 64) -> dict[str, Any]:
    binary = shutil.which("prometheus-snmp-exporter")
    if binary is None:
        return {"skipped": "Debian's prometheus-snmp-exporter is not installed"}
    counts = {"ocs": 0, "switch": 1, "amp": 0, "cpo": 1}
    progress(f"CPO/CPC: one emulated {ports}-port switch agent")
    work = directory / "cpo"
    work.mkdir()
    agent = Fleet(counts, work, agent_ports=ports)
    try:
        env = {**os.environ, "MSOCTL_INVENTORY": str(agent.inventory)}
        config = work / "snmp.yml"
        done = subprocess.run([str(MSOCTL), "exporter", "snmp-config", "--out", str(config)],
                              env=env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"msoctl exporter snmp-config: {done.stderr}")
        switch = yaml.safe_load(agent.inventory.read_text())["devices"][0]
        address = switch["snmp"]["address"]
        port = free_port()
        with (work / "snmp_exporter.log").open("w") as output:
            theirs = subprocess.Popen([binary, f"--config.file={config}",
                                       f"--web.listen-address=127.0.0.1:{port}"],
                                      stdout=output, stderr=subprocess.STDOUT)
        try:
            _wait(lambda: _ready_plain(f"http://127.0.0.1:{port}/"), "snmp_exporter", 30,
                  theirs)
            # every probe its own reading: nothing shared from the previous sample
            with exporter(agent.inventory, work / "fast.log", share_seconds=0) as fast, \
                    exporter(agent.inventory, work / "pysnmp.log", share_seconds=0,
                             env={"MSOCTL_SNMP_FAST_DECODE": "0"}) as slow:
                result = _compare_cpu(samples, switch["name"], address, port, theirs.pid,
                                      fast, slow, progress)
                result["ports"] = ports
                return result
        finally:
            _stop(theirs)
    finally:
        agent.close()


def _compare_cpu(samples: int, name: str, address: str, port: int, their_pid: int,
                 fast: tuple[str, int], slow: tuple[str, int],
                 progress: Progress) -> dict[str, Any]:
    def ours(where: tuple[str, int]) -> tuple[float, float, bool]:
        before = process_cpu_seconds(where[1], children=True)
        body, seconds = fetch(f"http://{where[0]}/probe?target={name}&module=cpo",
                              timeout=30)
        return (process_cpu_seconds(where[1], children=True) - before, seconds,
                b"msoctl_up{" in body and b" 1.0" in body.split(b"msoctl_up{")[1][:80])

    def snmp_exporter() -> tuple[float, float, bool]:
        before = process_cpu_seconds(their_pid)
        wall = 0.0
        whole = True
        for module in ("MSO-CPO-MIB", "MSO-CPC-MIB"):
            body, seconds = fetch(f"http://127.0.0.1:{port}/snmp?target={address}"
                                  f"&module={module}", timeout=30)
            wall += seconds
            whole = whole and b"msoCp" in body
        return process_cpu_seconds(their_pid) - before, wall, whole

    parties: dict[str, Callable[[], tuple[float, float, bool]]] = {
        "msoctl": lambda: ours(fast), "msoctl_pysnmp_decode": lambda: ours(slow),
        "snmp_exporter": snmp_exporter}
    for run in parties.values():  # warm-up: engines, discovery
        run()
    figures: dict[str, dict[str, list[float]]] = {
        label: {"cpu": [], "wall": [], "ok": []} for label in parties}
    for index in range(samples):
        progress(f"CPO/CPC CPU: {index + 1}/{samples}")
        order = list(parties.items())
        for label, run in (order if index % 2 == 0 else order[::-1]):
            cpu, wall, ok = run()
            figures[label]["cpu"].append(cpu)
            figures[label]["wall"].append(wall)
            figures[label]["ok"].append(float(ok))
    result: dict[str, Any] = {"samples": samples}
    for label, values in figures.items():
        result[label] = {"cpu_seconds_per_reading": statistics.fmean(values["cpu"]),
                         "p50_seconds": statistics.median(values["wall"]),
                         "complete": int(sum(values["ok"]))}
    theirs = max(result["snmp_exporter"]["cpu_seconds_per_reading"], 1 / CLOCK_TICKS)
    result["cpu_ratio_over_snmp_exporter"] = {
        label: result[label]["cpu_seconds_per_reading"] / theirs
        for label in ("msoctl", "msoctl_pysnmp_decode")}
    return result


def _ready_plain(url: str) -> bool:
    try:
        fetch(url, timeout=1)
        return True
    except OSError:
        return False


# ---- the run ---------------------------------------------------------------------------------

def measure(targets: int, shards: int, interval: float, minutes: float, probes: int,
            cpo_samples: int, progress: Progress, *, cpo_ports: int = 64,
            options: Sequence[str] = (), keep_logs: Path | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="msoctl-fleet-") as tmp:
        directory = Path(tmp)
        try:
            counts = mix(targets)
            progress(f"starting {targets} emulated targets: {counts}")
            fleet = Fleet(counts, directory)
            try:
                result["fleet"] = fleet_run(fleet, shards, interval, minutes, directory,
                                            progress, options=options)
                result["burst"] = burst(fleet, probes, directory, progress) if probes else {
                    "skipped": "--burst 0"}
            finally:
                fleet.close()
            result["cpo_cpu"] = (against_snmp_exporter(cpo_samples, directory, progress,
                                                       ports=cpo_ports)
                                 if cpo_samples else {"skipped": "--cpo-samples 0"})
        finally:
            if keep_logs is not None:  # every party's log, before the directory goes
                for log in directory.rglob("*.log"):
                    target = keep_logs / log.relative_to(directory)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(log, target)
    return result


def report(result: dict[str, Any]) -> None:
    f = result["fleet"]
    print(f"msoctl exporter fleet, {result['cpus']} CPUs; every party in its own process")
    print(f"fleet: {f['targets']} targets {f['kinds']}, {f['shards']} exporter shards under "
          f"{f['shards']} Prometheus servers, every {f['interval_seconds']:g} s for "
          f"{f['window_seconds']:.0f} s")
    print(f"  targets: {f['targets_active']} active in Prometheus, "
          f"{f['targets_never_scraped']} never scraped")
    print(f"  scrapes: {f['scrapes_made']} made of {f['scrapes_due']} due "
          f"({f['scrapes_not_made']} not made), {f['scrapes_failed']} failed, "
          f"{f['devices_down']} found the device down {f['devices_down_by_kind']}: "
          f"missed {f['missed_scrapes']}; "
          f"scrape interval p99 {f['scrape_interval_p99_seconds']:.2f} s")
    if f["probe_p99_seconds"] is not None:
        print(f"  probe p50 {f['probe_p50_seconds'] * 1e3:.0f} ms, "
              f"p99 {f['probe_p99_seconds'] * 1e3:.0f} ms, "
              f"max {f['probe_max_seconds'] * 1e3:.0f} ms")
    print(f"  exporter CPU {f['exporter_cpu_ms_per_target_scrape']:.2f} ms per target per "
          f"scrape ({f['exporter_cores']:.2f} cores); Prometheus {f['prometheus_cores']:.2f} "
          f"cores; emulators {f['emulator_cores']:.2f} cores "
          f"({', '.join(f'{k} {v:.2f}' for k, v in f['emulator_cores_by_kind'].items())})")
    print("  timeline from the exporters' start (s: made/failed/down, p50 ms, exporter "
          "cores, CPO agents' cores, host's busy/stolen cores; * window):")
    cells = [f"{'*' if e['window'] else ' '}{e['t']:4.0f}: {e['made']}/{e['failed']}/"
             f"{e['down']} {1e3 * (e['p50_seconds'] or 0):.0f} "
             f"{e.get('exporters_cores') or 0:.2f} {e.get('cpo_emulators_cores') or 0:.2f} "
             f"{e.get('host_busy_cores') or 0:.2f}/{e.get('host_steal_cores') or 0:.2f}"
             for e in f["timeline"]]
    for start in range(0, len(cells), 3):
        print("   " + "  ".join(f"{cell:<42}" for cell in cells[start:start + 3]))
    b = result["burst"]
    if "skipped" not in b:
        print(f"\nburst: {b['probes']} probes of {b['targets']} targets at once: "
              f"p50 {b['p50_seconds'] * 1e3:.0f} ms, p99 {b['p99_seconds'] * 1e3:.0f} ms, "
              f"{b['up']} up, {b['readings']:.0f} device readings ({b['shared']:.0f} shared)")
        print("  slowest per target: " + ", ".join(
            f"{key} {seconds * 1e3:.0f} ms" for key, seconds in b["max_seconds_by_target"].items()))
    c = result["cpo_cpu"]
    if "skipped" in c:
        print(f"\nCPO/CPC comparison skipped: {c['skipped']}")
        return
    print(f"\nCPO/CPC reading of one {c['ports']}-port switch, {c['samples']} each, "
          "alternated:")
    for label in ("msoctl", "msoctl_pysnmp_decode", "snmp_exporter"):
        g = c[label]
        print(f"  {label:<22} CPU {g['cpu_seconds_per_reading'] * 1e3:6.1f} ms/reading   "
              f"p50 {g['p50_seconds'] * 1e3:5.0f} ms   complete {g['complete']}")
    r = c["cpu_ratio_over_snmp_exporter"]
    print(f"  CPU / snmp_exporter's: msoctl {r['msoctl']:.2f}x (pysnmp's own decoding: "
          f"{r['msoctl_pysnmp_decode']:.2f}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--targets", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--interval", type=float, default=30.0, help="scrape interval, s")
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--burst", type=int, default=200, help="concurrent probes (0: skip)")
    parser.add_argument("--cpo-samples", type=int, default=10, help="0: skip")
    parser.add_argument("--exporter-option", action="append", default=[], metavar="OPT",
                        help="an option for each msoctl exporter (repeat; e.g. "
                             "--exporter-option=--max-sessions=0)")
    parser.add_argument("--keep-logs", type=Path, metavar="DIR",
                        help="copy the exporters', Prometheus servers' and snmp_exporter's "
                             "logs here (with --exporter-option=-v each failed probe is "
                             "logged with its reason)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.targets < 8 or args.shards < 1 or args.interval < 1 or args.minutes <= 0 \
            or args.burst < 0 or args.cpo_samples < 0:
        parser.error("--targets >= 8, --shards >= 1, --interval >= 1, --minutes > 0, "
                     "--burst and --cpo-samples >= 0")
    quiet = args.json or not sys.stderr.isatty()
    result = measure(args.targets, args.shards, args.interval, args.minutes, args.burst,
                     args.cpo_samples, (lambda _: None) if quiet else
                     (lambda text: print(f"  {text}", file=sys.stderr)),
                     options=args.exporter_option, keep_logs=args.keep_logs)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
