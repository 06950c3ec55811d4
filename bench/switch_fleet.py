"""Applying one congestion-control plan to a fleet of switches: parallel against sequential.

N emulated switches (emulators/switch/device.py: the congestion model behind
the NETCONF datastores and an asyncssh server) run in a second process, so
their CPU does not compete with the client's for the same interpreter; each
answers every RPC ``--latency-ms`` late (the emulator's latency fault), as a
switch across a campus would. The client is msoctl's own fleet apply
(msoctl/ops/switch.py ``Fleet.apply``): per switch a session that locks,
edits, validates, diffs and makes a confirmed commit with a persist token,
then a new session that reads running back and confirms.

Side by side in one run, the same plan (two plans, alternated, so every run
changes something):

- sequential: one switch at a time (``parallel=1``);
- parallel: ``--parallel`` switches at a time (8 by default, msoctl's default),
  and all N at once.

Reported: wall time, time per switch, CPU seconds of the client and of the
emulated switches, RPCs per switch, the ratio sequential / parallel, and the
run's floor: the larger of the CPU both sides need spread over the machine's
cores, and the added latency (RPCs x latency, once per wave of ``parallel``
switches). On a small machine the emulated switches' CPU, not the client,
bounds how much parallelism can gain; wall/floor shows how close the client
comes to that.

Usage: python bench/switch_fleet.py [--switches 50] [--latency-ms 5] [--parallel 8]
                                    [--rounds 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from drivers.switch.netconf import SwitchSession
from emulators.fleetprocess import FleetProcess
from emulators.switch.fleet import serve_fleet
from msoctl.access import Devices
from msoctl.inventory import load_inventory
from msoctl.journal import Journal
from msoctl.ops.switch import Fleet
from msoctl.ops.switch_plan import PortLink, derive

PORTS = 8
USER = "msoctl"


# ---- the emulated fleet, in its own process -------------------------------------------


class EmulatedFleet(FleetProcess):
    def __init__(self, count: int, latency_seconds: float, directory: Path):
        self.password = secrets.token_urlsafe(16)
        super().__init__(serve_fleet, (count, latency_seconds, self.password),
                         kwargs={"ports": PORTS, "user": USER},
                         what="the emulated switches", start_seconds=120)
        self.inventory = self._write_inventory(directory)

    def _write_inventory(self, directory: Path) -> Path:
        secret = directory / "switch.password"
        secret.write_text(self.password)
        secret.chmod(0o600)
        (directory / "known_hosts").write_text("".join(f"{line}\n"
                                                      for _, _, line in self.devices))
        devices = [{"name": name, "kind": "switch", "transport": "netconf",
                    "address": f"127.0.0.1:{port}", "username": USER,
                    "password": "file:switch.password", "known_hosts": "known_hosts",
                    "timeout_seconds": 30, "labels": {"bench": "fleet"}}
                   for name, port, _ in self.devices]
        path = directory / "inventory.yaml"
        path.write_text(yaml.safe_dump({"journal": "journal.sqlite", "devices": devices}))
        return path


# ---- the client side --------------------------------------------------------------------


class CountingSession(SwitchSession):
    rpcs = 0

    def _rpc(self, operation: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        CountingSession.rpcs += 1
        return super()._rpc(operation, call, *args, **kwargs)


def plans() -> list[dict[str, Any]]:
    links = [PortLink(f"Ethernet{i}", "30km", "400G") for i in range(1, PORTS + 1)]
    return [derive(links, cnp_dscp=dscp).config for dscp in (48, 46)]


def run_once(fleet: Fleet, emulated: EmulatedFleet, names: list[str], want: dict[str, Any],
             parallel: int) -> dict[str, float]:
    CountingSession.rpcs = 0
    server_cpu = emulated.cpu_seconds()
    cpu = time.process_time()
    started = time.perf_counter()
    outcomes = fleet.apply(names, want, parallel=parallel, confirm_timeout_seconds=120)
    wall = time.perf_counter() - started
    server_cpu = emulated.cpu_seconds() - server_cpu
    failed = [o for o in outcomes if o.status not in ("ok",)]
    if failed:
        raise RuntimeError(f"{failed[0].device}: {failed[0].status}: {failed[0].error}")
    return {"wall_seconds": wall, "cpu_seconds": time.process_time() - cpu,
            "server_cpu_seconds": server_cpu,
            "rpcs": CountingSession.rpcs,
            "mean_switch_seconds": statistics.fmean(o.seconds for o in outcomes)}


def measure(switches: int, latency_ms: float, parallel: int, rounds: int,
            progress: Callable[[str], None]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="msoctl-bench-") as tmp:
        emulated = EmulatedFleet(switches, latency_ms / 1000, Path(tmp))
        try:
            devices = Devices(load_inventory(emulated.inventory))
            fleet = Fleet(Journal(Path(tmp) / "journal.sqlite"), devices.switch_target,
                          session_factory=CountingSession)
            names = [name for name, _, _ in emulated.devices]
            wants = plans()
            variants = {"sequential": 1, f"parallel_{parallel}": parallel,
                        f"parallel_{switches}": switches}
            samples: dict[str, list[dict[str, float]]] = {key: [] for key in variants}
            turn = 0
            for round_index in range(rounds):
                for label, width in variants.items():
                    progress(f"round {round_index + 1}/{rounds}: {label}")
                    samples[label].append(run_once(fleet, emulated, names, wants[turn % 2],
                                                   width))
                    turn += 1
        finally:
            emulated.close()
    result: dict[str, Any] = {"switches": switches, "latency_ms": latency_ms,
                              "ports_per_switch": PORTS, "rounds": rounds, "variants": {}}
    for label, runs in samples.items():
        rpcs_per_switch = statistics.median(r["rpcs"] for r in runs) / switches
        result["variants"][label] = {
            "parallel": variants[label],
            "median_wall_seconds": statistics.median(r["wall_seconds"] for r in runs),
            "median_cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
            "median_switch_seconds": statistics.median(r["mean_switch_seconds"] for r in runs),
            "median_server_cpu_seconds": statistics.median(r["server_cpu_seconds"]
                                                           for r in runs),
            "rpcs_per_switch": rpcs_per_switch,
            "latency_floor_per_switch_seconds": rpcs_per_switch * latency_ms / 1000,
        }
        figures = result["variants"][label]
        # Neither side can go faster than its CPU allows, nor than the added latency:
        # the machine's floor for this run is the larger of the two.
        cpu_floor = (figures["median_cpu_seconds"] + figures["median_server_cpu_seconds"]) / (
            os.cpu_count() or 1)
        waves = -(-switches // variants[label])
        figures["floor_seconds"] = max(cpu_floor,
                                       waves * figures["latency_floor_per_switch_seconds"])
        figures["wall_over_floor"] = figures["median_wall_seconds"] / figures["floor_seconds"]
    sequential = result["variants"]["sequential"]["median_wall_seconds"]
    for figures in result["variants"].values():
        figures["sequential_over_this"] = sequential / figures["median_wall_seconds"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--switches", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.switches < 2 or args.rounds < 1 or args.parallel < 1 or args.latency_ms < 0:
        parser.error("--switches >= 2, --rounds >= 1, --parallel >= 1, --latency-ms >= 0")
    quiet = args.json or not sys.stderr.isatty()
    result = measure(args.switches, args.latency_ms, args.parallel, args.rounds,
                     (lambda _: None) if quiet else
                     (lambda text: print(f"  {text}", file=sys.stderr)))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"apply one plan ({PORTS} ports) to {args.switches} emulated switches, "
          f"{args.latency_ms:g} ms added per RPC, {os.cpu_count()} CPUs")
    print(f"{'variant':<14}{'wall s':>8}{'per switch s':>14}{'client cpu s':>14}"
          f"{'switch cpu s':>14}{'rpcs/switch':>13}{'floor s':>9}{'wall/floor':>12}"
          f"{'seq/this':>10}")
    for label, f in result["variants"].items():
        print(f"{label:<14}{f['median_wall_seconds']:>8.2f}{f['median_switch_seconds']:>14.3f}"
              f"{f['median_cpu_seconds']:>14.2f}{f['median_server_cpu_seconds']:>14.2f}"
              f"{f['rpcs_per_switch']:>13.0f}{f['floor_seconds']:>9.2f}"
              f"{f['wall_over_floor']:>11.2f}x{f['sequential_over_this']:>9.1f}x")
    print("floor: the larger of (client + switch CPU) / CPUs and the added latency "
          "(RPCs x latency x waves of --parallel)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
