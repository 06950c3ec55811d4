"""Protection at fabric scale: many links cut at once, the cost of watching them, and the
takeover of a crashed controller.

The fabric (tests/support/protect_fabric.py, until the lab generates large fabrics itself):
``--links`` links (default 64) between two OCSes of ``--ocs-size`` ports (default 256),
each link on a 30 km working span of its own with a protection span of its own, probe
light on free ingress ports. The lab runs in this process (``emulators.lab.Lab``) so that
every span of a "cable" is cut in one step of the optical model: its servers share the
interpreter with the controller, which makes every figure here an upper bound.

Figures, each measured side by side in one run:

- **recovery per link** for cuts of 1, 8 and 64 links at once (``--cuts`` rounds each):
  from the cut to the link's light verified by the controller (its own per-link
  timeline: detection, the one change for all of them, the light check), p50/p99 over
  every link of every round; and the OCS switching time the device reports. The goal
  (issue 16): p99 within the switching time + 50 ms.
- **the cost of watching**: with every link protected and nothing happening, the
  controller's own CPU time (its threads only, read from /proc, so that the lab's
  threads are not counted) per protected link per second, and the messages each OCS
  receives per second (counted by the emulated OCS itself: every program message from
  every client), mean and the busiest second; the same during the cuts.
- **takeover** (``--ha``, needs PostgreSQL; a private cluster is started): two instances
  (``msoctl protect run --ha``, processes of their own) share the fabric; the owner is
  killed (SIGKILL) and a link cut at the same moment, ``--kills`` times: the time until
  the standby owns every shard, and until the cut link's light arrives at its
  receivers again (at the emulated switch).
- **an estimate** of the instances needed for 10,000 links from the measured cost:
  CPU per link per second while watching, and per link moved during a cut, against
  half a core per instance.

The message budget per OCS is the controller's default (50 a second) unless ``--ocs-rate``
is given; ``--compare-rate N`` runs the cuts again with a budget of N, side by side.

Run: ``.venv/bin/python bench/protection_scale.py [--links N] [--cuts N] [--ha]
[--kills N] [--ocs-rate N] [--compare-rate N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.support.protect_fabric and tests.support.postgres

from emulators.lab import Lab  # noqa: E402
from msoctl.inventory import Inventory, load_inventory  # noqa: E402
from msoctl.journal import Journal, close_stores  # noqa: E402
from msoctl.protect.config import ProtectConfig  # noqa: E402
from msoctl.protect.controller import ProtectionController  # noqa: E402
from tests.support.protect_fabric import (  # noqa: E402
    Recorder,
    connect_working,
    cut_cable,
    fabric_topology,
    repair_cable,
)

GOAL_BUDGET_MS = 50.0
CPU_PER_INSTANCE = 0.5
"""Cores one instance may use, for the estimate (the rest is headroom for bursts)."""
TARGET_LINKS = 10_000
WAIT_SECONDS = 20.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summary(values: Sequence[float]) -> dict[str, float | None]:
    def r(value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    return {"p50": r(percentile(values, 0.5)), "p99": r(percentile(values, 0.99)),
            "max": r(max(values)) if values else None, "n": len(values)}


def thread_cpu_seconds(prefix: str) -> float:
    """User + system CPU of this process's threads whose name starts with ``prefix``."""
    total = 0
    for thread in threading.enumerate():
        if not thread.name.startswith(prefix) or thread.native_id is None:
            continue
        try:
            fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
        except OSError:
            continue
        after = fields.rpartition(")")[2].split()
        total += int(after[11]) + int(after[12])  # utime, stime (fields 14, 15)
    return total / CLOCK_TICKS


def message_rates(lab: Lab, since: dict[str, float]) -> dict[str, dict[str, float]]:
    found = {}
    for name, start in since.items():
        device = lab.ocs[name]
        seconds = device.clock.now() - start
        count = device.requests.between(start, start + seconds + 1)
        found[name] = {"mean_per_second": round(count / seconds, 2),
                       "busiest_second": device.requests.most_in_window(1.0, since=start)}
    return found


class Fabric:
    """The lab, the inventory and one controller protecting every link."""

    def __init__(self, directory: Path, links: int, ocs_size: int, rate: float):
        topology = fabric_topology(directory, links, size=ocs_size)
        self.lab = Lab(directory / "lab", topology, serial_consoles=False)
        self.lab.start()
        self.inventory: Inventory = load_inventory(self.lab.state_dir / "inventory.yaml")
        connect_working(self.inventory)
        assert self.inventory.journal_path is not None
        self.journal = Journal(self.inventory.journal_path)
        self.events = Recorder()
        self.rate = rate
        self.controller = ProtectionController(
            self.inventory, self.journal, on_event=self.events,
            config=ProtectConfig(hold_off_seconds=0.0, wait_to_restore_seconds=0.5,
                                 ocs_messages_per_second=rate))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.controller.run, args=(self._stop,),
                                        name="protect-main", daemon=True)

    def start(self) -> None:
        self._thread.start()
        wait_for(self.settled, 60.0, "every link protected")

    def settled(self) -> bool:
        return all(link["role"] == "working" and link["working"]["light"] == "lit"
                   and link["protection"]["light"] == "lit"
                   and link["hold_off_running_ms"] is None
                   for link in self.controller.status())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.lab.stop()


def wait_for(predicate: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.01)


def cut_round(fabric: Fabric, names: list[str]) -> list[dict[str, Any]]:
    """Cut the working spans of ``names`` at once; per link, when its light was verified
    after the cut; repaired and reverted before returning."""
    spans = [fabric.inventory.link(n).working.name for n in names]
    mark = fabric.events.mark()
    cut_at = time.monotonic()
    cut_cable(fabric.lab, spans)
    try:
        switched = fabric.events.wait("switch", names, WAIT_SECONDS, since=mark)
    finally:
        repair_cable(fabric.lab, spans)
    figures = []
    for event in switched:
        total = event.durations_ms.get("total")
        detected = float(event.details["detected"])
        switching = [v for v in event.details["switching_ms"].values() if v is not None]
        figures.append({
            "link": event.link,
            "detection_ms": round((detected - cut_at) * 1000, 3),
            "recovery_ms": None if total is None
            else round((detected - cut_at) * 1000 + total, 3),
            "switching_ms": max(switching) if switching else None,
            **{f"{part}_ms": event.durations_ms.get(part)
               for part in ("control_plane", "device", "verification")},
            "links_in_change": event.details.get("links_in_change", 1)})
    try:
        wait_for(fabric.settled, WAIT_SECONDS, "the links reverted")
    except TimeoutError:
        stuck = [f"{link['link']} on {link['active_span']} ({link['working']['light']}/"
                 f"{link['protection']['light']}, {link['unavailable']})"
                 for link in fabric.controller.status() if link["role"] != "working"
                 or link["working"]["light"] != "lit" or link["protection"]["light"] != "lit"]
        recent = "; ".join(f"{e.kind}: {e.message}" for e in fabric.events.events[-5:])
        raise TimeoutError(f"the links did not revert: {', '.join(stuck[:5])}; the last "
                           f"events: {recent}") from None
    return figures


def cuts_figures(fabric: Fabric, sizes: list[int], rounds: int,
                 rng: random.Random) -> dict[str, Any]:
    names = [link.name for link in fabric.controller.links]
    found: dict[str, Any] = {}
    ocs = sorted(fabric.lab.ocs)
    since = {name: fabric.lab.ocs[name].clock.now() for name in ocs}
    cpu_before, wall_before = thread_cpu_seconds("protect"), time.monotonic()
    moved = 0
    for size in sizes:
        samples: list[dict[str, Any]] = []
        for _ in range(rounds):
            time.sleep(rng.uniform(0.0, 0.1))  # cuts at every phase of the poll
            samples += cut_round(fabric, rng.sample(names, min(size, len(names))))
        moved += len(samples)
        recovery = [s["recovery_ms"] for s in samples if s["recovery_ms"] is not None]
        over = [s["recovery_ms"] - s["switching_ms"] for s in samples
                if s["recovery_ms"] is not None and s["switching_ms"] is not None]
        switching = [s["switching_ms"] for s in samples if s["switching_ms"] is not None]
        found[str(size)] = {
            "links_cut": size, "rounds": rounds,
            "recovery_ms": summary(recovery),
            "detection_ms": summary([s["detection_ms"] for s in samples]),
            **{f"{part}_ms": summary([s[f"{part}_ms"] for s in samples
                                      if s[f"{part}_ms"] is not None])
               for part in ("control_plane", "device", "verification")},
            "switching_ms": summary(switching),
            "recovery_minus_switching_ms": summary(over),
            "one_change_per_cut": all(s["links_in_change"] == size for s in samples),
            "goal_met": bool(over) and (percentile(over, 0.99) or 0) <= GOAL_BUDGET_MS,
        }
    cpu = thread_cpu_seconds("protect") - cpu_before
    return {"sizes": found, "messages_per_ocs": message_rates(fabric.lab, since),
            "controller_cpu_seconds": round(cpu, 3),
            "wall_seconds": round(time.monotonic() - wall_before, 3),
            "links_moved": moved}


def watching_figures(fabric: Fabric, seconds: float) -> dict[str, Any]:
    ocs = sorted(fabric.lab.ocs)
    since = {name: fabric.lab.ocs[name].clock.now() for name in ocs}
    cpu_before, wall_before = thread_cpu_seconds("protect"), time.monotonic()
    time.sleep(seconds)
    cpu = thread_cpu_seconds("protect") - cpu_before
    wall = time.monotonic() - wall_before
    links = len(fabric.controller.links)
    return {"seconds": round(wall, 3), "links": links,
            "controller_cpu_share_of_a_core": round(cpu / wall, 4),
            "cpu_ms_per_link_per_second": round(cpu * 1000 / wall / links, 4),
            "messages_per_ocs": message_rates(fabric.lab, since)}


# ---- takeover -------------------------------------------------------------------------------


def takeover_figures(fabric: Fabric, directory: Path, kills: int,
                     rng: random.Random) -> dict[str, Any]:
    """Two instances in processes of their own on a PostgreSQL journal; the owner killed,
    a link cut at the same moment."""
    from msoctl.protect.ha import instances_and_shards
    from tests.support.postgres import PostgresCluster

    cluster = PostgresCluster.start(directory / "postgres", fast=False)
    processes: dict[str, subprocess.Popen[bytes]] = {}
    takeovers: list[float] = []
    recoveries: list[float] = []
    try:
        url = cluster.create_database("bench_protection")
        journal = Journal(url)
        env = dict(os.environ, MSOCTL_INVENTORY=str(fabric.lab.state_dir / "inventory.yaml"),
                   MSOCTL_JOURNAL=url)

        def start(name: str) -> None:
            log = (directory / f"{name}.log").open("wb")
            processes[name] = subprocess.Popen(
                [sys.executable, "-m", "msoctl", "protect", "run", "--ha", "--instance", name,
                 "--wait-to-restore-s", "0.5", "--ocs-rate", f"{fabric.rate:g}"],
                env=env, stdout=log, stderr=subprocess.STDOUT)

        def owners() -> set[str | None]:
            return {s["owner"] for s in instances_and_shards(journal)[1]}

        def receiver_lit(link: str) -> bool:
            found = fabric.inventory.link(link)
            return all(fabric.lab.optics.power_dbm(f"{end.switch}:rx"
                                                   f"{end.port.removeprefix('Ethernet')}") > -15
                       for end in (found.a, found.b))

        names = [link.name for link in fabric.controller.links]
        generation = 0
        start(f"i{generation}")
        wait_for(lambda: owners() == {f"i{generation}"}, 60, "the first instance owns")
        for _ in range(kills):
            generation += 1
            standby = f"i{generation}"
            start(standby)
            wait_for(lambda s=standby: any(i["instance"] == s and i["state"] == "standby"
                                           for i in instances_and_shards(journal)[0]),
                     60, "the standby registered")
            wait_for(fabric.settled, 60, "every link protected")
            time.sleep(rng.uniform(0.5, 1.0))
            owner = processes[f"i{generation - 1}"]
            link = rng.choice(names)
            span = fabric.inventory.link(link).working.name
            owner.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            cut_cable(fabric.lab, [span])
            try:
                wait_for(lambda s=standby: owners() == {s}, 30, "the takeover")
                takeovers.append(round((time.monotonic() - killed) * 1000, 3))
                wait_for(lambda lk=link: receiver_lit(lk), 30, "the cut link's light")
                recoveries.append(round((time.monotonic() - killed) * 1000, 3))
            finally:
                repair_cable(fabric.lab, [span])
            owner.wait(timeout=10)
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=15)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
        close_stores()
        cluster.close()
    return {"kills": kills, "takeover_ms": summary(takeovers),
            "cut_during_takeover_recovery_ms": summary(recoveries),
            "goal": "takeover within 1 s of a crash",
            "goal_met": bool(takeovers) and max(takeovers) <= 1000.0}


def estimate(watching: dict[str, Any], cuts: dict[str, Any]) -> dict[str, Any]:
    """10,000 links as fabrics of this size (each OCS pair polled within its own budget,
    so the cost of one pair scales by the number of pairs): the cores while watching,
    and while cutting (the cut rounds' share of a core, the busier of the two)."""
    links = watching["links"]
    pairs = math.ceil(TARGET_LINKS / links)
    watching_cores = watching["controller_cpu_share_of_a_core"] * pairs
    cutting_share = cuts["controller_cpu_seconds"] / max(cuts["wall_seconds"], 1e-9)
    busiest = max(watching_cores, cutting_share * pairs)
    instances = max(1, math.ceil(busiest / CPU_PER_INSTANCE))
    return {
        "links": TARGET_LINKS, "ocs_pairs": pairs, "cores_per_instance": CPU_PER_INSTANCE,
        "watching_cores": round(watching_cores, 3),
        "cutting_cores": round(cutting_share * pairs, 3),
        "instances": instances, "instances_with_a_standby": instances + 1,
    }


def run_benchmark(*, links: int, ocs_size: int, cuts: int, rate: float, ha: bool,
                  kills: int, compare_rate: float | None, watch_seconds: float,
                  seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    sizes = [n for n in (1, 8, 64) if n <= links] or [links]
    document: dict[str, Any] = {"benchmark": "protection_scale", "links": links,
                                "ocs_size": ocs_size, "ocs_messages_per_second": rate,
                                "lab": "in-process", "clock": "RealClock"}
    with tempfile.TemporaryDirectory(prefix="bench-protection-scale-") as workdir:
        fabric = Fabric(Path(workdir) / "fabric", links, ocs_size, rate)
        try:
            fabric.start()
            document["watching"] = watching_figures(fabric, watch_seconds)
            document["cuts"] = cuts_figures(fabric, sizes, cuts, rng)
            document["estimate"] = estimate(document["watching"], document["cuts"])
            if ha:
                fabric._stop.set()  # the instances take over the watching
                fabric._thread.join(timeout=30)
                document["takeover"] = takeover_figures(fabric, Path(workdir), kills, rng)
        finally:
            fabric.stop()
        if compare_rate is not None:
            other = Fabric(Path(workdir) / "compare", links, ocs_size, compare_rate)
            try:
                other.start()
                document["compare"] = {"ocs_messages_per_second": compare_rate,
                                       "cuts": cuts_figures(other, sizes, cuts, rng)}
            finally:
                other.stop()
    return document


def render_table(doc: dict[str, Any]) -> str:
    lines = [f"protection at scale: {doc['links']} links on {doc['ocs_size']}-port OCSes, "
             f"{doc['ocs_messages_per_second']:g} messages/s per OCS, lab {doc['lab']} "
             "(ms; nearest-rank percentiles)", ""]

    def cut_rows(cuts: dict[str, Any], rate: float) -> None:
        header = (f"{'links cut':>9}{'recovery p50':>14}{'p99':>8}{'detect p99':>12}"
                  f"{'control p99':>13}{'device p99':>12}{'verify p99':>12}"
                  f"{'switching':>11}{'p99-switch':>12}  goal   (budget {rate:g}/s)")
        lines.extend([header, "-" * len(header)])
        for size, row in cuts["sizes"].items():
            rec, det = row["recovery_ms"], row["detection_ms"]
            sw, over = row["switching_ms"], row["recovery_minus_switching_ms"]
            parts = "".join(f"{row[f'{part}_ms']['p99'] or 0:{width}.1f}" for part, width in
                            (("control_plane", 13), ("device", 12), ("verification", 12)))
            lines.append(f"{size:>9}{rec['p50'] or 0:14.1f}{rec['p99'] or 0:8.1f}"
                         f"{det['p99'] or 0:12.1f}{parts}{sw['p50'] or 0:11.1f}"
                         f"{over['p99'] or 0:12.1f}  {'met' if row['goal_met'] else 'NOT met'}")
        for name, rates in cuts["messages_per_ocs"].items():
            lines.append(f"  {name}: {rates['mean_per_second']:.1f} messages/s mean, busiest "
                         f"second {rates['busiest_second']} during the cuts")

    cut_rows(doc["cuts"], doc["ocs_messages_per_second"])
    if "compare" in doc:
        lines.append("")
        cut_rows(doc["compare"]["cuts"], doc["compare"]["ocs_messages_per_second"])
    watching = doc["watching"]
    lines += ["", f"watching {watching['links']} links for {watching['seconds']:.0f} s: "
              f"{watching['controller_cpu_share_of_a_core'] * 100:.1f}% of a core, "
              f"{watching['cpu_ms_per_link_per_second']:.3f} ms CPU per link per second"]
    for name, rates in watching["messages_per_ocs"].items():
        lines.append(f"  {name}: {rates['mean_per_second']:.1f} messages/s mean, busiest "
                     f"second {rates['busiest_second']}")
    guess = doc["estimate"]
    lines.append(f"estimate for {guess['links']} links ({guess['ocs_pairs']} OCS pairs of "
                 f"this size): {guess['watching_cores']:.2f} cores watching, "
                 f"{guess['cutting_cores']:.2f} while every pair is being cut; "
                 f"{guess['instances']} instance(s) at {guess['cores_per_instance']:g} core "
                 f"each, {guess['instances_with_a_standby']} with a standby")
    if "takeover" in doc:
        take = doc["takeover"]
        lines.append(f"takeover after SIGKILL ({take['kills']} kills): p50 "
                     f"{take['takeover_ms']['p50']} ms, max {take['takeover_ms']['max']} ms "
                     f"({'met' if take['goal_met'] else 'NOT met'}: {take['goal']}); a cut "
                     f"made at the kill: light back after p50 "
                     f"{take['cut_during_takeover_recovery_ms']['p50']} ms, max "
                     f"{take['cut_during_takeover_recovery_ms']['max']} ms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--links", type=int, default=64, help="links in the fabric (64)")
    parser.add_argument("--ocs-size", type=int, default=256, help="OCS ports N (NxN, 256)")
    parser.add_argument("--cuts", type=int, default=10, help="rounds per cut size (10)")
    parser.add_argument("--ocs-rate", type=float, default=50.0,
                        help="messages a second each OCS answers (50)")
    parser.add_argument("--compare-rate", type=float, default=None,
                        help="run the cuts again with this budget, side by side")
    parser.add_argument("--watch-seconds", type=float, default=5.0,
                        help="how long the idle cost is measured (5)")
    parser.add_argument("--ha", action="store_true", help="measure takeovers (PostgreSQL)")
    parser.add_argument("--kills", type=int, default=5, help="owner kills with --ha (5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    if args.links < 1 or 4 * args.links > args.ocs_size:
        parser.error("--links must be 1..ocs-size/4 (each link needs 4 ingress ports)")
    if args.cuts < 1 or args.kills < 1:
        parser.error("--cuts and --kills must be at least 1")
    try:
        doc = run_benchmark(links=args.links, ocs_size=args.ocs_size, cuts=args.cuts,
                            rate=args.ocs_rate, ha=args.ha, kills=args.kills,
                            compare_rate=args.compare_rate, watch_seconds=args.watch_seconds,
                            seed=args.seed)
    except (TimeoutError, RuntimeError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2) if args.json else render_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
