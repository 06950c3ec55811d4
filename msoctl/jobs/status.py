"""A kept job's state now: every part of the fabric its traffic crosses.

- its servers: how many of the job's GPUs are healthy, how many of the NICs it uses are
  up, what is wrong (msoctl/compute/gpustate.py);
- the fabric links between its servers, traced end to end both ways as ``msoctl path
  show`` traces them (msoctl/fabric/lightpath.py): the span each is carried on now
  (``working``, ``protection``, ``none``), whether the light arrives or where it is lost
  (a cut span, an amplifier whose output is low or dark), drained or in service, and the
  amplifiers on its span.

The verdict: ``broken`` when a GPU of the job is unhealthy or unknown, a NIC it uses is
not up, or a link it crosses loses its light, is not connected, cannot be read, or is
drained; ``degraded`` when a link it crosses runs on its protection span (it works,
without a fallback); ``ok`` otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from msoctl.compute.gpustate import read_hosts
from msoctl.fabric.lightpath import show
from msoctl.jobs.registry import Job

if TYPE_CHECKING:
    from msoctl.cli.context import Context


@dataclass(frozen=True)
class HostPart:
    name: str
    gpus: int
    healthy: int
    nics: int
    nics_up: int
    problems: tuple[str, ...]


@dataclass(frozen=True)
class LinkPart:
    name: str
    role: str | None  # working | protection | none | mixed | None: unknown
    span: str | None
    light: str  # arrives | lost | unknown
    lost_at: str | None  # "device point (status)" where the light is lost
    amplifiers: tuple[str, ...]
    drained: bool


@dataclass
class JobState:
    job: Job
    hosts: list[HostPart] = field(default_factory=list)
    links: list[LinkPart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    verdict: str = "ok"


def job_state(ctx: Context, job: Job) -> JobState:
    inventory = ctx.inventory
    state = JobState(job)
    wanted = [inventory.hosts[name] for name in job.hosts if name in inventory.hosts]
    missing = [name for name in job.hosts if name not in inventory.hosts]
    broken: list[str] = [f"{name}: no longer in the inventory" for name in missing]
    degraded: list[str] = []
    for host_state in read_hosts(wanted, inventory.gpu_metrics):
        name = host_state.host.name
        gpus = job.hosts[name]
        nics = job.nics[name]
        problems = [f"gpu {gpu.index}: {'; '.join(gpu.reasons)}" for gpu in host_state.gpus
                    if gpu.index in gpus and not gpu.healthy]
        problems += [f"{nic.name}: {nic.reason}" for nic in host_state.nics
                     if nic.name in nics and not nic.up]
        healthy = sum(1 for gpu in host_state.gpus if gpu.index in gpus and gpu.healthy)
        up = sum(1 for nic in host_state.nics if nic.name in nics and nic.up)
        state.hosts.append(HostPart(name, len(gpus), healthy, len(nics), up, tuple(problems)))
        broken += [f"{name} {problem}" for problem in problems]
    drained = ctx.drained()
    links = [inventory.links[name] for name in job.links if name in inventory.links]
    broken += [f"{name}: no longer in the inventory" for name in job.links
               if name not in inventory.links]
    report = show(ctx.devices, links) if links else None
    for link, traced in zip(links, [] if report is None else report.links, strict=True):
        role = traced.span
        span = link.span(role) if role in ("working", "protection") else None
        amplifiers = () if span is None else tuple(
            amp for amp in (span.a_to_b.amplifier, span.b_to_a.amplifier) if amp)
        lost = next((d for d in traced.directions if d.lost_at is not None), None)
        where = None
        if lost is not None and lost.lost_at is not None:
            hop = lost.hops[lost.lost_at]
            where = f"{hop.device} {hop.point} ({hop.status})"
        state.links.append(LinkPart(link.name, role, None if span is None else span.name,
                                    traced.light, where, amplifiers, link.name in drained))
        if role is None:
            broken.append(f"{link.name}: its devices cannot be read")
        elif role in ("none", "mixed"):
            broken.append(f"{link.name}: not connected end to end ({role})")
        elif traced.light == "lost":
            broken.append(f"{link.name}: light lost at {where}")
        elif link.name in drained:
            broken.append(f"{link.name}: drained")
        elif role == "protection":
            degraded.append(f"{link.name}: on its protection span")
    state.problems = broken + degraded
    state.verdict = "broken" if broken else "degraded" if degraded else "ok"
    return state


def state_document(state: JobState) -> dict[str, Any]:
    return {"job": state.job.name, "since": state.job.since, "user": state.job.user,
            "verdict": state.verdict, "problems": state.problems,
            "hosts": [{**asdict(h), "problems": list(h.problems)} for h in state.hosts],
            "links": [{**asdict(link), "amplifiers": list(link.amplifiers)}
                      for link in state.links],
            "switch_ports": state.job.switch_ports}
