"""Applying one congestion-control plan to a fleet of switches: NETCONF against gNMI,
OpenConfig against SONiC.

N emulated switches of each kind (emulators/switch/fleet.py: the congestion model
behind a NETCONF or gNMI face) run in a process per kind, so that their CPU does not
compete with the client's for the same interpreter and each kind's CPU is measured on
its own; each answers every RPC ``--latency-ms`` late (the emulator's latency fault),
as a switch across a campus would. The client is msoctl's own fleet apply
(msoctl/ops/switch.py ``Fleet.apply``) with its default session factory
(drivers/switch/session.py ``open_session``), ``--parallel`` switches at a time.

The variants (:data:`VARIANTS`), side by side in one run, each round in the opposite
order of the round before so that the machine's load drifts over all of them alike:

- ``netconf``: the msoctl module over NETCONF: lock, edit, validate, diff, a confirmed
  commit with a persist token; a new SSH session reads running back and confirms;
- ``oc_commit``: OpenConfig (Arista's augments, as the lab's sw-c) over gNMI with the
  Commit extension: a Set that leaves the commit pending, read back on a new channel,
  a Set that confirms;
- ``oc_set``: the same switch without the extension: a Set, read back on a new
  channel, done;
- ``sonic``: SONiC's CONFIG_DB over gNMI, with the Commit extension.

Every variant applies the same plan: msoctl's derived plan with fast CNP off (SONiC has
no table for it and refuses it on), as intent. Two such plans (30 km and 25 km of
cable: other headroom and thresholds on every port) alternate, so every apply changes
something.

Reported per variant: wall time, wall per switch, the client's and the emulated
switches' CPU per switch, RPCs per switch (NETCONF operations; gNMI Capabilities, Get
and Set, every channel counted), and the run's floor (the larger of both sides' CPU
spread over the cores and the added latency, RPCs x latency once per wave of
``--parallel`` switches); then each figure's ratio to ``netconf``'s.
``--sweep-parallel`` adds the earlier comparison: NETCONF one switch at a time and all
N at once.

Usage: python bench/switch_fleet.py [--switches 50] [--latency-ms 5] [--parallel 8]
                                    [--rounds 3] [--sweep-parallel] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from drivers.switch.intent import Intent, from_legacy
from drivers.switch.netconf import SwitchSession
from drivers.switch.session import open_session
from drivers.transports.gnmi import GnmiClient
from emulators.fleetprocess import FleetProcess
from emulators.switch.fleet import serve_fleet
from msoctl.access import Devices
from msoctl.inventory import load_inventory
from msoctl.journal import Journal
from msoctl.ops.switch import Fleet
from msoctl.ops.switch_plan import PortLink, derive

PORTS = 8
USER = "msoctl"
CABLES = ("30km", "25km")
BASELINE = "netconf"


@dataclass(frozen=True)
class Kind:
    """One kind of emulated switch: a fleet of them in a process of its own."""

    face: str  # SwitchDevice's face: msoctl (NETCONF), openconfig or sonic (gNMI)
    model: str  # the inventory's model for it
    commit_confirmed: bool = True  # the gNMI Commit extension offered
    augments: str = "arista"  # an OpenConfig switch's (the lab's default)

    @property
    def transport(self) -> str:
        return "netconf" if self.face == "msoctl" else "gnmi"


@dataclass(frozen=True)
class Variant:
    kind: str  # a key of KINDS
    parallel: int | None = None  # None: --parallel; 0: all switches at once


KINDS = {  # the keys name the switches too: netconf-000, oc-set-000, ...
    "netconf": Kind("msoctl", "msoctl"),
    "oc-commit": Kind("openconfig", "openconfig"),
    "oc-set": Kind("openconfig", "openconfig", commit_confirmed=False),
    "sonic": Kind("sonic", "sonic"),
}
VARIANTS = {
    "netconf": Variant("netconf"),
    "oc_commit": Variant("oc-commit"),
    "oc_set": Variant("oc-set"),
    "sonic": Variant("sonic"),
}
SWEEP = {"netconf_seq": Variant("netconf", parallel=1),
         "netconf_all": Variant("netconf", parallel=0)}


# ---- the emulated fleets, each in its own process --------------------------------------


def start_fleets(count: int, latency_seconds: float, password: str,
                 kinds: Mapping[str, Kind]) -> dict[str, FleetProcess]:
    """One process per kind, started side by side (each spends seconds importing)."""
    fleets: dict[str, FleetProcess] = {}
    try:
        for key, kind in kinds.items():
            fleets[key] = FleetProcess(
                serve_fleet, (count, latency_seconds, password),
                kwargs={"ports": PORTS, "user": USER, "face": kind.face,
                        "augments": kind.augments, "commit_confirmed": kind.commit_confirmed,
                        "prefix": key},
                what=f"the emulated {key} switches", start_seconds=120, wait=False)
        for fleet in fleets.values():
            fleet.wait()
    except BaseException:
        close_all(fleets)
        raise
    return fleets


def close_all(fleets: Mapping[str, FleetProcess]) -> None:
    """Stop every fleet; one whose process already ended (its pipe broken) is passed by,
    so that the error that ended it is the one shown."""
    for fleet in fleets.values():
        with suppress(OSError):
            fleet.close()


def write_inventory(directory: Path, password: str, kinds: Mapping[str, Kind],
                    fleets: Mapping[str, FleetProcess]) -> Path:
    secret = directory / "switch.password"
    secret.write_text(password)
    secret.chmod(0o600)
    (directory / "known_hosts").write_text("".join(
        f"{line}\n" for fleet in fleets.values() for _, _, line in fleet.devices if line))
    devices = []
    for key, fleet in fleets.items():
        kind = kinds[key]
        for name, port, _ in fleet.devices:
            entry: dict[str, Any] = {
                "name": name, "kind": "switch", "transport": kind.transport,
                "address": f"127.0.0.1:{port}", "model": kind.model, "username": USER,
                "password": "file:switch.password", "timeout_seconds": 30,
                "labels": {"bench": "fleet", "fleet": key}}
            if kind.transport == "netconf":
                entry["known_hosts"] = "known_hosts"
            else:
                entry["insecure"] = True  # plaintext on loopback: TLS is not measured here
            devices.append(entry)
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump({"journal": "journal.sqlite", "devices": devices}))
    return path


# ---- the client side --------------------------------------------------------------------


class RpcCounter:
    """RPCs the client sends, by operation, from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, operation: str) -> None:
        with self._lock:
            self._counts[operation] += 1

    def take(self) -> Counter[str]:
        """The counts so far; counting starts again from zero."""
        with self._lock:
            counts, self._counts = self._counts, Counter()
        return counts


@contextmanager
def counting_rpcs(counter: RpcCounter) -> Iterator[None]:
    """Count every RPC the switch drivers send while inside. Wrapped where each transport
    sends (NETCONF: ``SwitchSession._rpc``; gNMI: ``GnmiClient._unary``), not in a session
    factory: a gNMI session reads back on a channel of its own that no factory sees."""
    netconf_rpc, gnmi_unary = SwitchSession._rpc, GnmiClient._unary

    def counted_rpc(self: SwitchSession, operation: str, *args: Any, **kwargs: Any) -> Any:
        counter.add(operation)
        return netconf_rpc(self, operation, *args, **kwargs)

    def counted_unary(self: GnmiClient, operation: str, *args: Any, **kwargs: Any) -> Any:
        counter.add(operation)
        return gnmi_unary(self, operation, *args, **kwargs)

    SwitchSession._rpc = counted_rpc  # type: ignore[method-assign]
    GnmiClient._unary = counted_unary  # type: ignore[method-assign]
    try:
        yield
    finally:
        SwitchSession._rpc = netconf_rpc  # type: ignore[method-assign]
        GnmiClient._unary = gnmi_unary  # type: ignore[method-assign]


def plans() -> list[Intent]:
    """The two plans every variant alternates between (module docstring)."""
    found = []
    for cable in CABLES:
        links = [PortLink(f"Ethernet{i}", cable, "400G") for i in range(1, PORTS + 1)]
        found.append(from_legacy(derive(links, fast_cnp=False).config))
    return found


def run_once(fleet: Fleet, emulated: FleetProcess, names: list[str], want: Intent,
             parallel: int, counter: RpcCounter) -> dict[str, Any]:
    counter.take()
    server_cpu = emulated.cpu_seconds()
    cpu = time.process_time()
    started = time.perf_counter()
    outcomes = fleet.apply(names, want, parallel=parallel, confirm_timeout_seconds=120)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    server_cpu = emulated.cpu_seconds() - server_cpu
    rpcs = counter.take()
    failed = [o for o in outcomes if o.status != "ok"]
    if failed:
        raise RuntimeError(f"{failed[0].device}: {failed[0].status}: {failed[0].error}")
    return {"wall_seconds": wall, "cpu_seconds": cpu, "server_cpu_seconds": server_cpu,
            "rpcs": sum(rpcs.values()), "rpcs_by_operation": dict(rpcs),
            "mean_switch_seconds": statistics.fmean(o.seconds for o in outcomes)}


def summarise(runs: list[dict[str, Any]], switches: int, parallel: int,
              latency_ms: float) -> dict[str, Any]:
    def median(key: str) -> float:
        return float(statistics.median(r[key] for r in runs))

    wall, cpu, server_cpu = (median("wall_seconds"), median("cpu_seconds"),
                             median("server_cpu_seconds"))
    rpcs_per_switch = median("rpcs") / switches
    operations = sorted({op for r in runs for op in r["rpcs_by_operation"]})
    figures: dict[str, Any] = {
        "parallel": parallel,
        "median_wall_seconds": wall,
        "wall_per_switch_seconds": wall / switches,
        "median_cpu_seconds": cpu,
        "client_cpu_per_switch_seconds": cpu / switches,
        "median_server_cpu_seconds": server_cpu,
        "server_cpu_per_switch_seconds": server_cpu / switches,
        "median_switch_seconds": median("mean_switch_seconds"),
        "rpcs_per_switch": rpcs_per_switch,
        "rpcs_per_switch_by_operation": {
            op: statistics.median(r["rpcs_by_operation"].get(op, 0) for r in runs) / switches
            for op in operations},
        "latency_floor_per_switch_seconds": rpcs_per_switch * latency_ms / 1000,
    }
    # Neither side can go faster than its CPU allows, nor than the added latency:
    # the machine's floor for this run is the larger of the two.
    cpu_floor = (cpu + server_cpu) / (os.cpu_count() or 1)
    waves = -(-switches // parallel)
    figures["floor_seconds"] = max(cpu_floor,
                                   waves * figures["latency_floor_per_switch_seconds"])
    figures["wall_over_floor"] = wall / figures["floor_seconds"]
    return figures


RATIOS = {"wall": "median_wall_seconds", "client_cpu": "median_cpu_seconds",
          "server_cpu": "median_server_cpu_seconds", "rpcs": "rpcs_per_switch"}


def measure(switches: int, latency_ms: float, parallel: int, rounds: int,
            progress: Callable[[str], None], *, sweep: bool = False) -> dict[str, Any]:
    variants = {**VARIANTS, **(SWEEP if sweep else {})}
    kinds = {v.kind: KINDS[v.kind] for v in variants.values()}
    widths = {label: switches if v.parallel == 0 else (v.parallel or parallel)
              for label, v in variants.items()}
    password = secrets.token_urlsafe(16)
    counter = RpcCounter()
    samples: dict[str, list[dict[str, Any]]] = {label: [] for label in variants}
    with tempfile.TemporaryDirectory(prefix="msoctl-bench-") as tmp:
        progress(f"starting {len(kinds)} fleets of {switches} switches")
        fleets = start_fleets(switches, latency_ms / 1000, password, kinds)
        try:
            inventory = write_inventory(Path(tmp), password, kinds, fleets)
            devices = Devices(load_inventory(inventory))
            fleet = Fleet(Journal(Path(tmp) / "journal.sqlite"), devices.switch_target)
            names = {key: [name for name, _, _ in f.devices] for key, f in fleets.items()}
            for key in kinds:  # untimed: the transport's imports and first connection
                with open_session(devices.switch_target(names[key][0])) as session:
                    session.read_intent()
            wants = plans()
            applied = Counter[str]()  # per fleet, so that every apply changes something
            order = list(variants)
            with counting_rpcs(counter):
                for round_index in range(rounds):
                    for label in order if round_index % 2 == 0 else order[::-1]:
                        key = variants[label].kind
                        progress(f"round {round_index + 1}/{rounds}: {label}")
                        samples[label].append(run_once(
                            fleet, fleets[key], names[key], wants[applied[key] % 2],
                            widths[label], counter))
                        applied[key] += 1
        finally:
            close_all(fleets)
    result: dict[str, Any] = {"switches": switches, "latency_ms": latency_ms,
                              "parallel": parallel, "ports_per_switch": PORTS,
                              "rounds": rounds, "cpus": os.cpu_count(), "variants": {},
                              "ratios_to": BASELINE, "ratios": {}}
    for label, runs in samples.items():
        kind = KINDS[variants[label].kind]
        result["variants"][label] = {
            "transport": kind.transport, "model": kind.model,
            "commit_confirmed": kind.commit_confirmed if kind.transport == "gnmi" else True,
            **summarise(runs, switches, widths[label], latency_ms), "samples": runs}
    base = result["variants"][BASELINE]
    for label, figures in result["variants"].items():
        result["ratios"][label] = {name: figures[key] / base[key]
                                   for name, key in RATIOS.items()}
    return result


# ---- the report -------------------------------------------------------------------------


def report(result: dict[str, Any]) -> None:
    print(f"apply one plan ({result['ports_per_switch']} ports) to {result['switches']} "
          f"emulated switches of each kind, --parallel {result['parallel']}, "
          f"{result['latency_ms']:g} ms added per RPC, {result['cpus']} CPUs, "
          f"medians of {result['rounds']} round(s)")
    print(f"{'variant':<13}{'par':>4}{'wall s':>8}{'wall/sw ms':>12}{'client cpu/sw ms':>18}"
          f"{'switch cpu/sw ms':>18}{'rpcs/sw':>9}{'wall/floor':>12}")
    for label, f in result["variants"].items():
        print(f"{label:<13}{f['parallel']:>4}{f['median_wall_seconds']:>8.2f}"
              f"{f['wall_per_switch_seconds'] * 1000:>12.1f}"
              f"{f['client_cpu_per_switch_seconds'] * 1000:>18.1f}"
              f"{f['server_cpu_per_switch_seconds'] * 1000:>18.1f}"
              f"{f['rpcs_per_switch']:>9.0f}{f['wall_over_floor']:>11.2f}x")
    print(f"\nratios to {result['ratios_to']}:")
    print(f"{'variant':<13}{'wall':>8}{'client cpu':>12}{'switch cpu':>12}{'rpcs':>8}")
    for label, r in result["ratios"].items():
        print(f"{label:<13}{r['wall']:>7.2f}x{r['client_cpu']:>11.2f}x"
              f"{r['server_cpu']:>11.2f}x{r['rpcs']:>7.2f}x")
    print("\nRPCs per switch:")
    for label, f in result["variants"].items():
        shown = ", ".join(f"{op} {n:g}" for op, n in f["rpcs_per_switch_by_operation"].items())
        print(f"  {label:<13}{shown}")
    print("floor: the larger of (client + switch CPU) / CPUs and the added latency "
          "(RPCs x latency x waves of --parallel)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--switches", type=int, default=50, help="of each kind")
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sweep-parallel", action="store_true",
                        help="also NETCONF one switch at a time and all at once")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.switches < 2 or args.rounds < 1 or args.parallel < 1 or args.latency_ms < 0:
        parser.error("--switches >= 2, --rounds >= 1, --parallel >= 1, --latency-ms >= 0")
    quiet = args.json or not sys.stderr.isatty()
    # Every gNMI channel in plaintext warns so; here, on loopback, that is the point.
    logging.getLogger("drivers.transports.gnmi").setLevel(logging.ERROR)
    result = measure(args.switches, args.latency_ms, args.parallel, args.rounds,
                     (lambda _: None) if quiet else
                     (lambda text: print(f"  {text}", file=sys.stderr)),
                     sweep=args.sweep_parallel)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
