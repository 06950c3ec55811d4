"""``msoctl job plan``'s planning time for jobs of 1,000 and 100,000 GPUs.

    .venv/bin/python bench/job_plan.py [--gpus 1000,100000] [--rounds 3] [--json]

The fabric is generated here, as msoctl would hold it for a large fleet: campuses of
servers of 8 GPUs with 8 NICs (rails), each rail a plane of leaf switches of 64 host
ports, every leaf joined to its plane's leaf in the other campus by 4 links; servers of
two vendors in turn. Every GPU healthy but one in 100 (and one NIC in 200 down), so the
placement has something to leave out. Timed, each ``--rounds`` times (the median kept):
the placement and rank order (``place``), the routes of the ring's NIC pairs over the
fabric (``routes_for``), and the route file's text (``route_xml``). Reading the servers'
state and writing the files are not in it (the exporters and the disk are the fleet's).
Machine load (``os.getloadavg``) is recorded at the start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from msoctl.compute.gpustate import GpuState, HostState, NicState
from msoctl.hosts import Host, HostNic
from msoctl.jobs.fabric import JobFabric
from msoctl.jobs.files import route_xml, routes_for
from msoctl.jobs.plan import place

GPUS_PER_HOST = 8
RAILS = 8
HOST_PORTS_PER_LEAF = 64
LINKS_PER_LEAF_PAIR = 4
CAMPUSES = 2
VENDORS = ("nvidia", "amd")


def fleet(gpus: int) -> tuple[list[HostState], JobFabric]:
    """Servers for ``gpus`` GPUs (a fifth more, so a job has a choice) and their fabric."""
    hosts_needed = -(-gpus * 6 // 5 // GPUS_PER_HOST)
    per_campus = -(-hosts_needed // CAMPUSES)
    states: list[HostState] = []
    fabric = JobFabric()
    guid = 0
    for campus in range(1, CAMPUSES + 1):
        for number in range(per_campus):
            leaf = number // HOST_PORTS_PER_LEAF
            name = f"c{campus}-gpu{number + 1}"
            nics = []
            for rail in range(RAILS):
                guid += 1
                switch = f"c{campus}-p{rail}-leaf{leaf}"
                nic = HostNic(f"mlx5_{rail}", f"0x1070fd03{guid:08x}", switch,
                              f"Ethernet{number % HOST_PORTS_PER_LEAF + 1}", "400G", rail)
                nics.append(nic)
                fabric.down.setdefault(switch, []).append(nic)
            host = Host(name, VENDORS[number % len(VENDORS)], "X", GPUS_PER_HOST, tuple(nics),
                        name, f"c{campus}")
            index = len(states)
            gpus_state = tuple(GpuState(name, i, (index * GPUS_PER_HOST + i) % 100 != 0)
                               for i in range(GPUS_PER_HOST))
            nic_state = tuple(NicState(name, n.name, (index * RAILS + r) % 200 != 0)
                              for r, n in enumerate(nics))
            states.append(HostState(host, gpus_state, nic_state))
    leaves = -(-per_campus // HOST_PORTS_PER_LEAF)
    for rail in range(RAILS):
        for leaf in range(leaves):
            pair = (f"c1-p{rail}-leaf{leaf}", f"c2-p{rail}-leaf{leaf}")
            fabric.links[pair] = [f"link-{rail}-{leaf}-{k}" for k in range(LINKS_PER_LEAF_PAIR)]
    for rail in range(RAILS):
        for campus in range(1, CAMPUSES + 1):  # the leaves of a plane meet at its spine
            for leaf in range(1, leaves):
                pair = (f"c{campus}-p{rail}-leaf0", f"c{campus}-p{rail}-leaf{leaf}")
                fabric.links[pair] = [f"spine-{campus}-{rail}-{leaf}"]
    return states, fabric


def timed(gpus: int, rounds: int) -> dict[str, Any]:
    states, fabric = fleet(gpus)
    figures: dict[str, list[float]] = {"place": [], "routes": [], "route_file": []}
    for _ in range(rounds):
        started = time.process_time()
        placement = place(states, gpus)
        figures["place"].append(time.process_time() - started)
        started = time.process_time()
        routes, missing = routes_for(placement, JobFabric(
            down=fabric.down, links=fabric.links))  # a new fabric: no cached paths
        figures["routes"].append(time.process_time() - started)
        started = time.process_time()
        text = route_xml(routes)
        figures["route_file"].append(time.process_time() - started)
    medians = {key: statistics.median(values) for key, values in figures.items()}
    return {"gpus": gpus, "hosts": len(states), "hosts_used": len(placement.hosts),
            "switches": len(fabric.down), "links": sum(len(v) for v in fabric.links.values()),
            "routes": len(routes), "unreachable": len(missing),
            "route_file_bytes": len(text), "crossings": {k: placement.crossings(k)
                                                         for k in ("campus", "vendor")},
            "cpu_seconds": medians, "cpu_seconds_total": sum(medians.values())}


def machine_load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"1m": one, "5m": five, "15m": fifteen}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", default="1000,100000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    sizes = [int(text) for text in options.gpus.split(",")]
    document: dict[str, Any] = {"load": {"start": machine_load()}}
    document["jobs"] = [timed(size, options.rounds) for size in sizes]
    document["load"]["end"] = machine_load()
    if options.json:
        print(json.dumps(document, indent=2))
        return 0
    for job in document["jobs"]:
        cpu = job["cpu_seconds"]
        print(f"{job['gpus']:,} GPUs on {job['hosts_used']:,} of {job['hosts']:,} servers, "
              f"{job['switches']:,} switches: place {cpu['place']:.3f} s, routes "
              f"{cpu['routes']:.3f} s ({job['routes']:,}), route file {cpu['route_file']:.3f} s "
              f"({job['route_file_bytes']:,} B); total {job['cpu_seconds_total']:.3f} s CPU")
    print(f"load {document['load']['start']['1m']:.2f} -> {document['load']['end']['1m']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
