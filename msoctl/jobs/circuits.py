"""``msoctl job circuits``: direct optical paths for a job's ring, from the OCS.

A ring over a job's servers sends each server's traffic to the next one, rail to rail
(:func:`msoctl.jobs.files.ring_pairs`). Between two switches that traffic crosses the
fabric links joining them, and the OCS make those links: a link is lit when the OCS at
its ends connect its switch ports to its span. A dark link costs nothing until it is
lit, so a fabric can hold more links than it lights and light them where a job's
traffic goes (TopoOpt's idea: the optical layer shaped to the job).

**The plan.** For each pair of switches the ring's NIC pairs join, one link per NIC
pair (a ring edge runs at its NICs' rate; a link at the switch port's, the same), so
that every edge has a direct optical path of its own: the links joining the pair that
are in service count; then dark ones (not carried, not drained, their OCS readable) are
lit on their working span, in name order, until each edge has one. A drained link is
left as it is (someone took it out of service), and so is one whose OCS cannot be read;
a pair short of links is named, with how many edges share what there is. Each link owns
its switch and OCS ports (msoctl/links.py), so lighting one moves no other: the plan
never takes a link in service, and the fabric's apply checks that again (impact,
safety) before any step.

**Undone when the job ends**: each of its circuits that no other kept job crosses is
drained, taken down, and its drain lifted (:func:`undo_intent` gives the intent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from msoctl.hosts import Host, HostNic
from msoctl.jobs.files import ring_pairs
from msoctl.jobs.registry import Job
from msoctl.links import Link


@dataclass(frozen=True)
class SwitchPair:
    """Two switches the job's ring joins, and the links between them."""

    switches: tuple[str, str]
    edges: int  # the ring's NIC pairs between them
    in_service: tuple[str, ...]
    light: tuple[str, ...]  # dark links the plan lights
    drained: tuple[str, ...]  # left alone
    unknown: tuple[str, ...]  # their OCS could not be read: left alone
    spare: tuple[str, ...]  # dark links beyond what the edges need

    @property
    def short(self) -> int:
        """Edges still without a link of their own once the plan is applied."""
        return max(0, self.edges - len(self.in_service) - len(self.light))

    def as_dict(self) -> dict[str, object]:
        return {"switches": list(self.switches), "edges": self.edges,
                "in_service": list(self.in_service), "light": list(self.light),
                "drained": list(self.drained), "unknown": list(self.unknown),
                "spare": list(self.spare), "short": self.short}


@dataclass
class CircuitPlan:
    job: str
    pairs: list[SwitchPair] = field(default_factory=list)
    missing_hosts: list[str] = field(default_factory=list)  # no longer in the inventory

    @property
    def light(self) -> list[str]:
        return [name for pair in self.pairs for name in pair.light]

    def as_dict(self) -> dict[str, object]:
        return {"job": self.job, "light": self.light,
                "pairs": [pair.as_dict() for pair in self.pairs],
                "missing_hosts": self.missing_hosts}


def job_ring(job: Job, hosts: Mapping[str, Host]) -> tuple[list[tuple[HostNic, HostNic]],
                                                          list[str]]:
    """The NIC pairs of ``job``'s ring (its servers in rank order, the NICs it uses), and
    its servers no longer in the inventory."""
    kept = sorted(job.document.get("hosts", []), key=lambda h: h.get("first_rank", 0))
    missing = [h["name"] for h in kept if h["name"] not in hosts]
    used: dict[str, list[HostNic]] = {}
    for entry in kept:
        host = hosts.get(entry["name"])
        if host is None:
            continue
        used[host.name] = [nic for name in entry.get("nics", [])
                           if (nic := host.nic(name)) is not None]
    order = [h["name"] for h in kept if h["name"] in hosts]
    return ring_pairs(order, used), missing


def plan_circuits(job: Job, hosts: Mapping[str, Host], links: Mapping[str, Link],
                  carried: Mapping[str, str | None], drained: Iterable[str]) -> CircuitPlan:
    """The circuits for ``job`` (the module's plan); ``carried``: each link's span now
    (``working``, ``protection``, ``down``, None when its OCS could not be read)."""
    pairs, missing = job_ring(job, hosts)
    out = set(drained)
    edges: dict[tuple[str, str], int] = {}
    for a, b in pairs:
        if a.switch != b.switch:
            key = (min(a.switch, b.switch), max(a.switch, b.switch))
            edges[key] = edges.get(key, 0) + 1
    joining: dict[tuple[str, str], list[str]] = {}
    for name in sorted(links):
        link = links[name]
        key = (min(link.a.switch, link.b.switch), max(link.a.switch, link.b.switch))
        if key in edges:
            joining.setdefault(key, []).append(name)
    plan = CircuitPlan(job.name, missing_hosts=missing)
    for key in sorted(edges):
        names = joining.get(key, [])
        unknown = tuple(n for n in names if carried.get(n) is None)
        drained_here = tuple(n for n in names if n in out)
        in_service = tuple(n for n in names if n not in out
                           and carried.get(n) in ("working", "protection"))
        dark = [n for n in names if n not in out and carried.get(n) == "down"]
        wanted = max(0, edges[key] - len(in_service))
        plan.pairs.append(SwitchPair(key, edges[key], in_service, tuple(dark[:wanted]),
                                     drained_here, unknown, tuple(dark[wanted:])))
    return plan


def light_intent(links: Iterable[str]) -> str:
    """The fabric intent that lights ``links`` on their working spans."""
    return "links:\n" + "".join(f"  {name}: {{span: working}}\n" for name in links)


def undo_intent(links: Iterable[str]) -> str:
    """The fabric intent that takes ``links`` down."""
    return "links:\n" + "".join(f"  {name}: {{state: down}}\n" for name in links)
