"""The jobs planned on the fabric and not ended, kept in the journal's store (``jobs``).

A job is registered when it is planned under a name (``msoctl job plan --name J``) and
removed when it ends (``msoctl job end J``); both are journaled changes (device
``job/J``, actions ``job.plan`` and ``job.end``). What is kept of a job is what its
status and the fabric's changes need: its servers and GPUs, the NICs it uses, and the
fabric links and switch ports its traffic crosses. With a PostgreSQL journal every host
sees the same jobs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drivers.errors import ValidationError
from msoctl.journal import Journal, current_user, locked_change
from msoctl.journal.model import now_ts
from msoctl.journal.store import JobRow

if TYPE_CHECKING:
    from msoctl.jobs.fabric import Route
    from msoctl.jobs.plan import Placement

PLAN = "job.plan"
END = "job.end"
CIRCUITS = "job.circuits"


@dataclass(frozen=True)
class Job:
    name: str
    since: str
    user: str
    op: str
    document: dict[str, Any]

    @property
    def links(self) -> list[str]:
        """The fabric links its traffic crosses: its routes' when it was planned, and the
        circuits lit for it since."""
        planned = list(self.document.get("links", []))
        return planned + [name for name in self.circuits if name not in planned]

    @property
    def circuits(self) -> list[str]:
        """The links ``msoctl job circuits`` lit for it, undone when it ends."""
        return list(self.document.get("circuits", []))

    @property
    def hosts(self) -> dict[str, list[int]]:
        """Server -> the job's GPUs on it."""
        return {h["name"]: list(h["gpus"]) for h in self.document.get("hosts", [])}

    @property
    def nics(self) -> dict[str, list[str]]:
        return {h["name"]: list(h["nics"]) for h in self.document.get("hosts", [])}

    @property
    def switch_ports(self) -> list[str]:
        return list(self.document.get("switch_ports", []))


def job_document(placement: Placement, routes: list[Route],
                 files_dir: str | None = None) -> dict[str, Any]:
    """What is kept of a planned job (module docstring); ``files_dir``: where its files
    were written (``job circuits`` rewrites its route file there)."""
    hosts = []
    for host in placement.hosts:
        ranks = [rank for rank in placement.ranks if rank.host == host.name]
        hosts.append({"name": host.name, "vendor": host.vendor, "campus": host.campus,
                      "gpus": [rank.gpu for rank in ranks],
                      "nics": sorted({rank.nic.name for rank in ranks}),
                      "first_rank": ranks[0].rank})
    links = sorted({name for route in routes for name in route.links})
    ports = sorted({rank.nic.switch_port for rank in placement.ranks})
    return {"world_size": len(placement.ranks), "vendors": list(placement.vendors),
            "hosts": hosts, "links": links, "switch_ports": ports, "files_dir": files_dir}


class Jobs:
    """The registered jobs of one journal."""

    def __init__(self, journal: Journal):
        self.journal = journal

    def all(self) -> dict[str, Job]:
        return {name: _job(row) for name, row in sorted(self.journal.store.jobs().items())}

    def get(self, name: str) -> Job:
        found = self.journal.store.jobs().get(name)
        if found is None:
            known = ", ".join(sorted(self.journal.store.jobs())) or "none"
            raise ValidationError(f"no job named {name!r} (jobs: {known})")
        return _job(found)

    def register(self, name: str, document: dict[str, Any]) -> Job:
        """Keep ``name``; ValidationError when a job of that name has not ended."""
        with locked_change(self.journal, device=f"job/{name}", action=PLAN,
                           gpus=document["world_size"],
                           hosts=[h["name"] for h in document["hosts"]],
                           links=document["links"]) as change:
            existing = self.journal.store.jobs().get(name)
            if existing is not None:
                change.outcome["refused"] = "a job of that name has not ended"
                raise ValidationError(f"job {name!r} was planned by {existing.user} at "
                                      f"{existing.since} and has not ended: "
                                      f"msoctl job end {name} first")
            row = JobRow(name, now_ts(), current_user(), change.op,
                         json.dumps(document, separators=(",", ":")))
            self.journal.store.set_job(row)
            return _job(row)

    def add_circuits(self, name: str, links: list[str], intent: str) -> Job:
        """Keep ``links`` as circuits of job ``name`` (lit by the fabric intent ``intent``):
        recorded before they are lit, so that a job whose circuits were lit in part still
        has them undone when it ends."""
        job = self.get(name)
        with locked_change(self.journal, device=f"job/{name}", action=CIRCUITS,
                           planned=job.op, links=links, file=intent):
            document = {**job.document, "circuits_file": intent,
                        "circuits": job.circuits + [n for n in links if n not in job.circuits]}
            self.journal.store.update_job(name, json.dumps(document, separators=(",", ":")))
        return self.get(name)

    def end(self, name: str) -> Job:
        job = self.get(name)
        with locked_change(self.journal, device=f"job/{name}", action=END,
                           planned=job.op) as change:
            change.outcome["gpus"] = job.document.get("world_size")
            self.journal.store.clear_job(name)
        return job


def _job(row: JobRow) -> Job:
    return Job(row.name, row.since, row.user, row.op, json.loads(row.body))
