"""The files a planned job hands to its launcher and its collective libraries, each in the
format its consumer reads:

- ``hostfile``: one line per host in rank order, ``HOST slots=N`` with the host's
  inventory name (Open MPI's hostfile, and DeepSpeed's, which must match
  ``^(\\S+)\\s+slots=(\\d+)``, refuses a host twice and keeps the order); ranks fill the
  hosts in file order, as both launchers map them by default. Addresses are in
  ``ranks.json``.
- ``flagcx-hostfile``: the same with ``type=<vendor>``, as FlagCX's launch example reads.
- ``ranks.json``: every rank's host, GPU, vendor, campus and NIC (name, rail, GUID), for
  any launcher that takes explicit placement.
- ``flagcx-route.xml``: FlagCX's inter-server route file (``FLAGCX_INTERSERVER_ROUTE_FILE``):
  ``<interserver_route><nic_pairs><pair>`` per pair of NICs that talk across servers (the
  ring's neighbouring hosts, rail to rail), each with ``<nic1 guid>``, ``<nic2 guid>`` and
  ``<interSwitch count>`` holding a ``<switch downBw upBw upLink downLink isTop>`` per hop,
  bandwidths in GB/s and link counts from the fabric as it is (msoctl/jobs/fabric.py);
  every attribute written, at most 16 hops, no XML declaration.
- ``env/<host>.env``: the environment of the host's ranks, one ``NAME=value`` a line:
  ``NCCL_IB_HCA`` (``=`` exact names with port 1, the NICs that are up), ``NCCL_IB_TC`` /
  ``NCCL_IB_SL`` from the lossless priority the switches carry RoCE on,
  ``NCCL_CROSS_NIC=0`` (rings stay on their rail), the same for FlagCX (``FLAGCX_IB_*``,
  ``FLAGCX_INTERSERVER_ROUTE_FILE``), and for an Ascend host HCCL's ``HCCL_RDMA_TC`` (a
  multiple of 4) and ``HCCL_RDMA_SL``. RCCL reads the ``NCCL_*`` names.
- ``hccl-ranktable.json``, for a job with Ascend NPUs: HCCL's rank table, version 1.0
  (``RANK_TABLE_FILE``, or the path ``HcclCommInitClusterInfo`` takes): ``status``
  ``completed``, ``version``, ``server_count`` and ``server_list``, each server its
  ``server_id`` (its address where the servers' addresses are known and distinct, else
  its name: HCCL wants them unique) and a ``device`` per NPU of the job on it
  (``device_id`` the NPU's number, ``device_ip`` the address of its NIC, ``rank_id``);
  every value a string, as HCCL reads them. The rank ids count from 0 within the job's
  Ascend ranks (FlagCX runs HCCL within the vendor's cluster, whose ranks are
  contiguous); for a job of Ascend NPUs only they are the job's ranks. Written only when
  every NPU's NIC has an address in the inventory and no two NPUs share one (HCCL gives
  each NPU a NIC of its own); else the reason is said.

The traffic class: RoCE traffic of lossless priority P is marked DSCP 8P+2 (DSCP 26 for
priority 3, the usual RoCE mapping); ``NCCL_IB_TC`` is the whole IP traffic-class byte,
DSCP x 4 + 2 (ECN-capable), HCCL's the DSCP x 4.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from msoctl.hosts import Host, HostNic
from msoctl.jobs.fabric import JobFabric, Route, gigabytes_per_second
from msoctl.jobs.plan import Placement
from msoctl.outfile import write_output

MAX_FLAGCX_HOPS = 16
IB_PORT = 1


def dscp(priority: int) -> int:
    return 8 * priority + 2


def traffic_class(priority: int) -> int:
    return dscp(priority) * 4 + 2


def hostfile(placement: Placement, *, with_type: bool = False) -> str:
    lines = []
    for host in placement.hosts:
        slots = sum(rank.host == host.name for rank in placement.ranks)
        lines.append(f"{host.name} slots={slots}" + (f" type={host.vendor}" if with_type
                                                      else ""))
    return "\n".join(lines) + "\n"


def ranks_document(placement: Placement) -> dict[str, Any]:
    addresses = {host.name: host.address for host in placement.hosts}
    return {"world_size": len(placement.ranks), "vendors": list(placement.vendors),
            "ranks": [{"rank": rank.rank, "host": rank.host, "address": addresses[rank.host],
                       "gpu": rank.gpu, "vendor": rank.vendor, "campus": rank.campus,
                       "nic": rank.nic.name, "rail": rank.nic.rail, "guid": rank.nic.guid,
                       "nic_address": rank.nic.address}
                      for rank in placement.ranks]}


def neighbour_pairs(placement: Placement) -> list[tuple[HostNic, HostNic]]:
    """The NIC pairs a ring over the placement uses across servers (:func:`ring_pairs`)."""
    used: dict[str, list[HostNic]] = {}
    for rank in placement.ranks:
        nics = used.setdefault(rank.host, [])
        if rank.nic not in nics:
            nics.append(rank.nic)
    return ring_pairs([host.name for host in placement.hosts], used)


def ring_pairs(hosts: Sequence[str], used: Mapping[str, Sequence[HostNic]]
               ) -> list[tuple[HostNic, HostNic]]:
    """The NIC pairs a ring over ``hosts`` (in rank order; ``used``: each one's NICs)
    uses across servers: each host and the next (the last and the first), rail to rail (a
    rail the next host has no NIC up on carries nothing between them), each pair once."""
    pairs: list[tuple[HostNic, HostNic]] = []
    seen: set[tuple[str, str]] = set()
    for index, host in enumerate(hosts):
        following = hosts[(index + 1) % len(hosts)]
        if following == host:
            continue
        theirs = {nic.rail: nic for nic in used.get(following, [])}
        for nic in used.get(host, []):
            other = theirs.get(nic.rail)  # rings stay on their rail (NCCL_CROSS_NIC=0)
            if other is None:
                continue
            key = (min(nic.guid, other.guid), max(nic.guid, other.guid))
            if key not in seen:
                seen.add(key)
                pairs.append((nic, other))
    return pairs


def route_xml(routes: Sequence[Route]) -> str:
    root = ElementTree.Element("interserver_route")
    pairs = ElementTree.SubElement(root, "nic_pairs")
    for route in routes:
        pair = ElementTree.SubElement(pairs, "pair")
        ElementTree.SubElement(pair, "nic1", guid=route.a.guid)
        ElementTree.SubElement(pair, "nic2", guid=route.b.guid)
        hops = route.hops[:MAX_FLAGCX_HOPS]
        inter = ElementTree.SubElement(pair, "interSwitch", count=str(len(hops)))
        for hop in hops:
            ElementTree.SubElement(
                inter, "switch", downBw=_gb(hop.down_bps), upBw=_gb(hop.up_bps),
                upLink=str(hop.up_links), downLink=str(max(1, hop.down_links)),
                isTop="1" if hop.top else "0")
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode") + "\n"


def _gb(bps: float) -> str:
    return f"{gigabytes_per_second(bps):g}"


def host_env(host: Host, placement: Placement, priority: int, route_file: str) -> str:
    up = [nic for nic in host.nics
          if nic.name not in placement.excluded_nics.get(host.name, ())]
    hca = "=" + ",".join(f"{nic.name}:{IB_PORT}" for nic in up)
    tc, sl = traffic_class(priority), priority
    lines = [f"NCCL_IB_HCA={hca}", f"NCCL_IB_TC={tc}", f"NCCL_IB_SL={sl}", "NCCL_CROSS_NIC=0",
             f"FLAGCX_IB_HCA={hca}", f"FLAGCX_IB_TC={tc}", f"FLAGCX_IB_SL={sl}",
             f"FLAGCX_INTERSERVER_ROUTE_FILE={route_file}"]
    if host.vendor == "ascend":
        lines += [f"HCCL_RDMA_TC={dscp(priority) * 4}", f"HCCL_RDMA_SL={sl}"]
    return "\n".join(lines) + "\n"


def hccl_rank_table(placement: Placement) -> tuple[dict[str, Any] | None, str | None]:
    """HCCL's rank table of the job's Ascend ranks (the module docstring), or None and why
    it cannot be written (None, None: the job has no Ascend NPU)."""
    ranks = [rank for rank in placement.ranks if rank.vendor == "ascend"]
    if not ranks:
        return None, None
    missing = sorted({f"{r.host}:{r.nic.name}" for r in ranks if r.nic.address is None})
    if missing:
        return None, f"NICs without an address in the inventory: {', '.join(missing)}"
    shared: dict[tuple[str, str], list[int]] = {}
    for rank in ranks:
        shared.setdefault((rank.host, rank.nic.name), []).append(rank.gpu)
    doubled = [f"{host}:{nic} (NPUs {', '.join(map(str, gpus))})"
               for (host, nic), gpus in shared.items() if len(gpus) > 1]
    if doubled:
        return None, f"NPUs share a NIC, HCCL gives each its own: {'; '.join(doubled)}"
    first = ranks[0].rank
    hosts = [host for host in placement.hosts if any(r.host == host.name for r in ranks)]
    addresses = [host.address for host in hosts]
    by_address = None not in addresses and len(set(addresses)) == len(addresses)
    servers: list[dict[str, Any]] = []
    for host in hosts:
        devices = [{"device_id": str(r.gpu), "device_ip": r.nic.address,
                    "rank_id": str(r.rank - first)} for r in ranks if r.host == host.name]
        servers.append({"server_id": host.address if by_address else host.name,
                        "device": devices})
    return {"status": "completed", "version": "1.0", "server_count": str(len(servers)),
            "server_list": servers}, None


def write_all(directory: Path, placement: Placement, routes: Sequence[Route],
              priority: int) -> tuple[dict[str, str], list[str]]:
    """Every file into ``directory`` (made if missing): {what: path}, and why a file the
    job would want was not written."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "env").mkdir(exist_ok=True)
    route_path = directory / "flagcx-route.xml"
    written = {
        "hostfile": _write(directory / "hostfile", hostfile(placement)),
        "flagcx_hostfile": _write(directory / "flagcx-hostfile",
                                  hostfile(placement, with_type=True)),
        "ranks": _write(directory / "ranks.json",
                        json.dumps(ranks_document(placement), indent=2) + "\n"),
        "flagcx_route": _write(route_path, route_xml(routes)),
    }
    for host in placement.hosts:
        written[f"env:{host.name}"] = _write(
            directory / "env" / f"{host.name}.env",
            host_env(host, placement, priority, str(route_path.resolve())))
    notes = []
    table, why = hccl_rank_table(placement)
    if table is not None:
        written["hccl_ranktable"] = _write(directory / "hccl-ranktable.json",
                                           json.dumps(table, indent=2) + "\n")
    elif why is not None:
        notes.append(f"HCCL's rank table not written: {why}")
    return written, notes


def _write(path: Path, text: str) -> str:
    write_output(path, text)
    return str(path)


def routes_for(placement: Placement, fabric: JobFabric) -> tuple[list[Route], list[str]]:
    """The routes of the ring's NIC pairs, and the pairs that have none (the fabric between
    them is down or unknown)."""
    routes, missing = [], []
    for a, b in neighbour_pairs(placement):
        route = fabric.route(a, b)
        if route is None:
            missing.append(f"{a.switch_port} ({a.name}) - {b.switch_port} ({b.name})")
        else:
            routes.append(route)
    return routes, missing
