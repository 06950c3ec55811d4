"""A kept job's state now: every part of the fabric its traffic crosses.

- its servers: how many of the job's GPUs are healthy, how many of the NICs it uses are
  up, what is wrong (msoctl/compute/gpustate.py);
- the fabric links between its servers: the span each is carried on now (``working``,
  ``protection``, or none: dark), unknown where an OCS cannot be read, drained or in
  service, and the amplifiers on that span.

The verdict: ``broken`` when a GPU of the job is unhealthy or unknown, a NIC it uses is
not up, or a link it crosses is dark or drained; ``degraded`` when a link it crosses runs
on its protection span (it works, without a fallback); ``ok`` otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from msoctl import impact
from msoctl.compute.gpustate import read_hosts
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
    role: str | None  # working | protection | dark | None: unknown
    span: str | None
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
    for name in job.links:
        link = inventory.links.get(name)
        if link is None:
            broken.append(f"{name}: no longer in the inventory")
            continue
        unreadable = any(ctx.read_map(ocs) is None for ocs in link.ocs_names)
        role, _ = (None, False) if unreadable else impact.carried(link, ctx.read_map)
        shown = None if unreadable else (role or "dark")
        span = link.span(role) if role in ("working", "protection") else None
        amplifiers = () if span is None else tuple(
            amp for amp in (span.a_to_b.amplifier, span.b_to_a.amplifier) if amp)
        state.links.append(LinkPart(name, shown, None if span is None else span.name,
                                    amplifiers, name in drained))
        if shown is None:
            broken.append(f"{name}: its OCS cannot be read")
        elif shown == "dark":
            broken.append(f"{name}: dark")
        elif name in drained:
            broken.append(f"{name}: drained")
        elif shown == "protection":
            degraded.append(f"{name}: on its protection span")
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
