"""edit-config time against the size of the edit, and the lab's other devices meanwhile.

Two parts, each with edits of 1,000, 10,000 and 40,000 list entries by default. An
entry is a list entry of yang/msoctl-congestion.yang: a port, or a queue of a port;
every edit names N/8 ports, each with 7 queues whose WRED/ECN thresholds it sets.

- **size**: one emulated switch whose chip has as many ports as the largest edit
  names (emulators/switch/fleet.py, in a process of its own, so that its CPU
  does not compete with the client's). The client is ncclient in this process, with
  the send tick msoctl's driver uses. Per round: edit-config of the candidate, then
  commit (the YANG must rules checked by libyang, or the fallback without it, and
  the configuration applied to the congestion model). Rounds alternate two threshold
  values after an untimed first edit, so every timed edit changes every queue.
  Reported: seconds of each, microseconds per entry, and each size's time per entry
  over the smallest size's (1.0 is linear).
- **neighbours**: the default lab in its own process (``msoctl lab up``); the client of
  a big edit-config plus validate of sw-a's candidate in another (this file run with
  ``--client``), so that neither shares an interpreter with the probes, which run
  here: ocs-a's ``*IDN?`` over TCP (SCPI), an I2C read through amp-1's bridge, and
  sw-b's get-config over NETCONF, round-robin. Each probe's answer times while the
  edit runs (from the moment the client is told to go until it reports) against the
  same probe's idle answer times just before: medians, maxima and the ratios.

Nothing is asserted: tests/e2e/test_netconf_scale.py checks behaviour, this measures.

Usage: python bench/netconf_edit.py [--entries 1000,10000,40000] [--rounds 3]
                                    [--samples 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from lxml import etree
from ncclient import manager
from ncclient.manager import Manager
from ncclient.operations import RaiseMode

import drivers.switch.netconf  # noqa: F401 - the driver's ncclient send tick (2 ms, not 100)
from drivers.switch.tree import to_xml
from emulators.fleetprocess import FleetProcess
from emulators.switch.fleet import serve_fleet

QUEUES_PER_PORT = 7
USER = "msoctl"
RPC_TIMEOUT_SECONDS = 600.0
AMP_ADDRESS = 0x50
LAB_START_SECONDS = 120.0
PROBES = ("ocs-a *IDN?", "amp-1 I2C read", "sw-b get-config")


def edit_of(entries: int, threshold: int, *, prefix: str = "Ethernet") -> str:
    """``<config>`` with ``entries`` list entries: ports ``<prefix>1..`` with 7 queues."""
    ports = entries // (QUEUES_PER_PORT + 1)
    tree = {"switch": {"ports": {"port": [{
        "name": f"{prefix}{number}", "speed": "400G",
        "queues": {"queue": [{"queue-id": queue, "wred": {
            "min-threshold": threshold, "max-threshold": 3 * threshold, "enable-ecn": True}}
            for queue in range(QUEUES_PER_PORT)]},
    } for number in range(1, ports + 1)]}}}
    return etree.tostring(to_xml(tree), encoding="unicode")


@contextmanager
def session(host: str, port: int, password: str, *, ssh_config: str | None = None
            ) -> Iterator[Manager]:
    """An ncclient session, host key checked when ``ssh_config`` names a known_hosts."""
    connection = manager.connect(
        host=host, port=port, username=USER, password=password, allow_agent=False,
        look_for_keys=False, hostkey_verify=ssh_config is not None, ssh_config=ssh_config,
        timeout=RPC_TIMEOUT_SECONDS)
    connection.timeout = RPC_TIMEOUT_SECONDS
    connection.raise_mode = RaiseMode.ERRORS
    try:
        yield connection
    finally:
        connection.close_session()


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


# ---- part 1: time against size ----------------------------------------------------------------


def measure_size(sizes: list[int], rounds: int,
                 progress: Callable[[str], None]) -> dict[str, Any]:
    ports = max(sizes) // (QUEUES_PER_PORT + 1)
    password = secrets.token_urlsafe(16)
    progress(f"starting a switch with {ports} ports")
    fleet = FleetProcess(serve_fleet, (1, 0.0, password), kwargs={"ports": ports, "user": USER},
                         what="the emulated switch", start_seconds=300)
    figures: dict[str, Any] = {}
    try:
        [(_, port, _)] = fleet.devices
        with session("127.0.0.1", port, password) as client:
            for entries in sizes:
                edits = [edit_of(entries, threshold) for threshold in (1_000_000, 2_000_000)]
                client.edit_config(target="candidate", config=edits[1])  # untimed: creates
                client.commit()
                runs: list[dict[str, float]] = []
                for round_index in range(rounds):
                    progress(f"{entries} entries, round {round_index + 1}/{rounds}")
                    run: dict[str, float] = {}
                    edit = partial(client.edit_config, target="candidate",
                                   config=edits[round_index % 2])
                    for step, call in (("edit", edit), ("commit", client.commit)):
                        server_cpu, client_cpu = fleet.cpu_seconds(), time.process_time()
                        run[f"{step}_seconds"] = timed(call)
                        run[f"{step}_client_cpu_seconds"] = time.process_time() - client_cpu
                        run[f"{step}_switch_cpu_seconds"] = fleet.cpu_seconds() - server_cpu
                    runs.append(run)
                entry: dict[str, Any] = {"entries": entries,
                                         "request_bytes": len(edits[0].encode())}
                for key in runs[0]:
                    entry[f"median_{key}"] = statistics.median(run[key] for run in runs)
                entry["edit_us_per_entry"] = entry["median_edit_seconds"] / entries * 1e6
                entry["commit_us_per_entry"] = entry["median_commit_seconds"] / entries * 1e6
                entry["samples"] = runs
                figures[str(entries)] = entry
    finally:
        fleet.close()
    smallest = figures[str(min(sizes))]
    for entry in figures.values():
        entry["edit_per_entry_over_smallest"] = (entry["edit_us_per_entry"]
                                                 / smallest["edit_us_per_entry"])
        entry["commit_per_entry_over_smallest"] = (entry["commit_us_per_entry"]
                                                   / smallest["commit_us_per_entry"])
    return {"switch_ports": ports, "rounds": rounds, "sizes": figures}


# ---- part 2: the other devices of the lab -----------------------------------------------------


class LabProcess:
    """``msoctl lab up`` in its own process, as the lab runs for an operator."""

    def __init__(self, state_dir: Path):
        self.state_dir = state_dir
        self.process = subprocess.Popen(
            [sys.executable, "-m", "msoctl", "lab", "up",
             "--state-dir", str(state_dir)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        inventory = state_dir / "inventory.yaml"
        deadline = time.monotonic() + LAB_START_SECONDS
        while not (state_dir / "lab.json").exists() or not inventory.exists():
            if self.process.poll() is not None:
                error = self.process.stderr.read().decode() if self.process.stderr else ""
                raise RuntimeError(f"msoctl lab up ended: {error.strip()}")
            if time.monotonic() > deadline:
                self.close()
                raise TimeoutError(f"the lab did not start within {LAB_START_SECONDS:g} s")
            time.sleep(0.05)
        self.devices = {device["name"]: device
                        for device in yaml.safe_load(inventory.read_text())["devices"]}
        self.ssh_config = state_dir / "ssh_config"
        self.ssh_config.write_text(f"Host *\n  UserKnownHostsFile {state_dir / 'known_hosts'}\n")

    def netconf(self, name: str) -> tuple[str, int, str]:
        """Host, port and password of switch ``name``."""
        device = self.devices[name]
        host, _, port = device["address"].rpartition(":")
        password = (self.state_dir / device["password"].removeprefix("file:")).read_text()
        return host, int(port), password.strip()

    def tcp_port(self, name: str) -> int:
        """The TCP port of an OCS (VISA resource) or of an amplifier's bridge (socket URL)."""
        address = self.devices[name]["address"]
        if address.startswith("TCPIP::"):
            return int(address.split("::")[2])
        return int(address.rpartition(":")[2])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def line_probe(port: int, line: bytes) -> Callable[[], None]:
    """Send ``line``, read one LF-ended answer (an SCPI or bridge exchange)."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=60)

    def ask() -> None:
        connection.sendall(line)
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = connection.recv(4096)
            if not chunk:
                raise ConnectionError("the device closed the connection")
            answer += chunk
        if answer.startswith((b"ERR", b"NACK")):
            raise RuntimeError(f"the device refused {line!r}: {answer!r}")

    return ask


def stats(times: list[float]) -> dict[str, Any]:
    if not times:
        return {"count": 0, "median_seconds": None, "max_seconds": None}
    return {"count": len(times), "median_seconds": statistics.median(times),
            "max_seconds": max(times)}


def measure_neighbours(sizes: list[int], samples: int,
                       progress: Callable[[str], None]) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="msoctl-bench-") as tmp:
        progress("starting the lab (msoctl lab up)")
        lab = LabProcess(Path(tmp) / "lab")
        try:
            host, port, password = lab.netconf("sw-b")
            with session(host, port, password, ssh_config=str(lab.ssh_config)) as other:
                probes: dict[str, Callable[[], Any]] = {
                    PROBES[0]: line_probe(lab.tcp_port("ocs-a"), b"*IDN?\n"),
                    PROBES[1]: line_probe(lab.tcp_port("amp-1"),
                                          b"R %02X 00 01\n" % AMP_ADDRESS),
                    PROBES[2]: lambda: other.get_config(source="running"),
                }
                for entries in sizes:
                    progress(f"{entries} entries on sw-a while the others are probed")
                    figures[str(entries)] = _one_edit(lab, entries, probes, samples)
        finally:
            lab.close()
    return {"samples": samples, "sizes": figures}


def _one_edit(lab: LabProcess, entries: int, probes: dict[str, Callable[[], Any]],
              samples: int) -> dict[str, Any]:
    idle: dict[str, list[float]] = {name: [] for name in probes}
    for _ in range(samples):
        for name, probe in probes.items():
            idle[name].append(timed(probe))
    host, port, password = lab.netconf("sw-a")
    client = subprocess.Popen(
        [sys.executable, __file__, "--client", host, str(port), str(lab.ssh_config),
         str(entries)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert client.stdin is not None and client.stdout is not None
    try:
        client.stdin.write(password + "\n")
        client.stdin.flush()
        if client.stdout.readline().strip() != "ready":
            raise RuntimeError("the edit's client did not start")
        busy: dict[str, list[float]] = {name: [] for name in probes}
        client.stdin.write("go\n")
        client.stdin.flush()
        while client.poll() is None and not _readable(client.stdout):
            for name, probe in probes.items():
                busy[name].append(timed(probe))
        reported = json.loads(client.stdout.readline())
    finally:
        client.stdin.close()
        client.wait(timeout=RPC_TIMEOUT_SECONDS)
    result: dict[str, Any] = {"entries": entries, **reported, "probes": {}}
    for name in probes:
        quiet, during = stats(idle[name]), stats(busy[name])
        entry = {"idle": quiet, "during_edit": during}
        if during["count"]:
            entry["median_over_idle_median"] = during["median_seconds"] / quiet["median_seconds"]
            entry["max_over_idle_median"] = during["max_seconds"] / quiet["median_seconds"]
            entry["max_over_edit"] = during["max_seconds"] / reported["edit_and_validate_seconds"]
        result["probes"][name] = entry
    return result


def _readable(stream: Any) -> bool:
    import select

    return bool(select.select([stream], [], [], 0)[0])


def run_client(host: str, port: int, ssh_config: str, entries: int) -> int:
    """The big edit's client, in a process of its own: password on stdin, ``ready`` once
    connected, then on ``go`` edit-config and validate of the candidate, their seconds
    as one JSON line, and discard-changes."""
    password = sys.stdin.readline().strip()
    edit = edit_of(entries, 1_000_000, prefix="Ethernet9/")  # ports the chip lacks: not
    with session(host, port, password, ssh_config=ssh_config) as client:  # committed
        print("ready", flush=True)
        if sys.stdin.readline().strip() != "go":
            return 1
        edit_seconds = timed(lambda: client.edit_config(target="candidate", config=edit))
        validate_seconds = timed(lambda: client.validate(source="candidate"))
        print(json.dumps({"edit_seconds": edit_seconds, "validate_seconds": validate_seconds,
                          "edit_and_validate_seconds": edit_seconds + validate_seconds,
                          "request_bytes": len(edit.encode())}), flush=True)
        client.discard_changes()
    return 0


# ---- the report -------------------------------------------------------------------------------


def measure(sizes: list[int], rounds: int, samples: int,
            progress: Callable[[str], None]) -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "size": measure_size(sizes, rounds, progress),
            "neighbours": measure_neighbours(sizes, samples, progress)}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def report(result: dict[str, Any]) -> None:
    size = result["size"]
    print(f"edit-config and commit of N list entries: one switch with {size['switch_ports']} "
          f"ports in its own process, median of {size['rounds']} rounds, "
          f"{result['cpus']} CPUs")
    print(f"{'entries':>8}{'MB':>7}{'edit s':>9}{'cpu sw/cl':>11}{'commit s':>10}"
          f"{'cpu sw/cl':>11}{'edit us/e':>11}{'commit us/e':>13}{'edit x1st':>11}"
          f"{'commit x1st':>13}")
    for entry in size["sizes"].values():
        print(f"{entry['entries']:>8}{entry['request_bytes'] / 1e6:>7.2f}"
              f"{entry['median_edit_seconds']:>9.2f}"
              f"{entry['median_edit_switch_cpu_seconds']:>6.2f}/"
              f"{entry['median_edit_client_cpu_seconds']:<4.2f}"
              f"{entry['median_commit_seconds']:>10.2f}"
              f"{entry['median_commit_switch_cpu_seconds']:>6.2f}/"
              f"{entry['median_commit_client_cpu_seconds']:<4.2f}"
              f"{entry['edit_us_per_entry']:>11.1f}{entry['commit_us_per_entry']:>13.1f}"
              f"{entry['edit_per_entry_over_smallest']:>10.2f}x"
              f"{entry['commit_per_entry_over_smallest']:>12.2f}x")
    print("cpu sw/cl: CPU seconds of the switch's process / of the client; x1st: time per "
          "entry over that of the smallest edit (1.00x: linear; a commit also checks and "
          "applies the whole datastore, whatever the edit's size)")
    print()
    print("the lab's other devices while sw-a takes an edit-config + validate of N entries "
          "(lab, client and probes in three processes)")
    print(f"{'entries':>8}{'edit s':>8}  {'probe':<17}{'idle ms':>9}{'during ms':>11}"
          f"{'max ms':>8}{'n':>5}{'med/idle':>10}{'max/idle':>10}{'max/edit':>10}")
    for entry in result["neighbours"]["sizes"].values():
        for index, (name, probe) in enumerate(entry["probes"].items()):
            during = probe["during_edit"]
            head = (f"{entry['entries']:>8}{entry['edit_and_validate_seconds']:>8.2f}" if
                    index == 0 else " " * 16)
            ratios = "".join(f"{probe[key]:>9.1f}x" if key in probe else f"{'-':>10}"
                             for key in ("median_over_idle_median", "max_over_idle_median"))
            edit_share = (f"{probe['max_over_edit']:>10.3f}" if "max_over_edit" in probe
                          else f"{'-':>10}")
            print(f"{head}  {name:<17}{_ms(probe['idle']['median_seconds']):>9}"
                  f"{_ms(during['median_seconds']):>11}{_ms(during['max_seconds']):>8}"
                  f"{during['count']:>5}{ratios}{edit_share}")
    print("idle: median before the edit; during: while it runs; max/edit: the worst answer "
          "as a share of the edit's time")


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["--client"]:
        host, port, ssh_config, entries = arguments[1:5]
        return run_client(host, int(port), ssh_config, int(entries))
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--entries", default="1000,10000,40000",
                        help="comma-separated edit sizes in list entries (at least 8 each)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=20,
                        help="idle answers of each probe before each edit")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(arguments)
    try:
        sizes = sorted({int(text) for text in args.entries.split(",")})
    except ValueError:
        parser.error("--entries: comma-separated integers")
    if min(sizes) < QUEUES_PER_PORT + 1 or args.rounds < 1 or args.samples < 1:
        parser.error(f"--entries >= {QUEUES_PER_PORT + 1}, --rounds >= 1, --samples >= 1")
    quiet = args.json or not sys.stderr.isatty()
    result = measure(sizes, args.rounds, args.samples,
                     (lambda _: None) if quiet else
                     (lambda text: print(f"  {text}", file=sys.stderr)))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
