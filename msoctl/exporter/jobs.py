"""The kept jobs' state for Prometheus: ``/jobs``.

One scrape reads every job planned under a name and not ended (the journal's store), each
as ``msoctl job status`` reads it (:mod:`msoctl.jobs.status`), all at once within the
scrape's budget, and answers in the text exposition:

- per job: ``msoctl_job_up`` (read within the budget), ``msoctl_job_info`` (who planned
  it, its vendors), ``msoctl_job_start_time_seconds``, ``msoctl_job_state`` (``ok``,
  ``degraded``, ``broken``: one gauge each, 1 for the current one), ``msoctl_job_problems``;
- per server of a job: its GPUs and how many are healthy, its NICs and how many are up;
- per link a job crosses: ``msoctl_job_link_info`` (the span and role it is carried on),
  whether its light arrives, whether it is drained;
- per switch port a job crosses: ``msoctl_job_port_info`` (``faces`` host or fabric) and
  its optics level. The ports' counters are the switch targets' own series
  (``msoctl_switch_pfc_pause_frames_received_total``...): PromQL joins them to the job on
  ``device`` and ``port`` (deploy/msoctl-alerts.yml does, for a job whose ports pause).
  So the job's verdict here leaves counters out: it reads none (no rate from one reading).

The job is in label ``job_name``: Prometheus gives every series of a scrape the label
``job`` (its scrape job's name), which would rename ours.

``msoctl_jobs_up`` is 0 when the journal cannot be read (nothing else then). Readings of
``/jobs`` are shared as probes are: a scrape that arrives while one is taken, or within
the share window after it, gets its answer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Protocol

from drivers.errors import DeviceError, ValidationError
from drivers.yamlfile import YamlFileError
from msoctl.exporter.families import GAUGE, INFO, Families, MetricSpec
from msoctl.jobs.registry import Job
from msoctl.jobs.status import FabricView, JobState, job_state
from msoctl.journal import JournalError

log = logging.getLogger(__name__)

JOB = ("job_name",)
HOST = ("job_name", "host")
LINK = ("job_name", "link")
PORT = ("job_name", "device", "port")
VERDICTS = ("ok", "degraded", "broken")
OPTICS_LEVELS = ("ok", "warning", "alarm")
MAX_JOBS_AT_ONCE = 16

JOBS_UP = MetricSpec("msoctl_jobs_up", GAUGE,
                     "1 when the kept jobs could be read from the journal.", ())
JOBS_KEPT = MetricSpec("msoctl_jobs_kept", GAUGE,
                       "Jobs planned under a name and not ended.", ())
JOBS_DURATION = MetricSpec("msoctl_jobs_duration_seconds", GAUGE,
                           "How long reading every kept job's state took.", ())
JOB_UP = MetricSpec("msoctl_job_up", GAUGE,
                    "1 when the job's state was read within the scrape's budget.", JOB)
JOB_INFO = MetricSpec("msoctl_job_info", INFO, "Who planned the job, and its GPU vendors.",
                      JOB)
JOB_START = MetricSpec("msoctl_job_start_time_seconds", GAUGE,
                       "When the job was planned, seconds since the Unix epoch.", JOB)
JOB_STATE = MetricSpec("msoctl_job_state", GAUGE,
                       "1 for the job's verdict now (ok, degraded, broken), 0 for the others.",
                       ("job_name", "state"))
JOB_PROBLEMS = MetricSpec("msoctl_job_problems", GAUGE,
                          "What is wrong on the job's fabric, counted (see msoctl job status).",
                          JOB)
HOST_GPUS = MetricSpec("msoctl_job_host_gpus", GAUGE, "The job's GPUs on the server.", HOST)
HOST_HEALTHY = MetricSpec("msoctl_job_host_gpus_healthy", GAUGE,
                          "Of them, those the server's exporter calls healthy.", HOST)
HOST_NICS = MetricSpec("msoctl_job_host_nics", GAUGE, "The server's NICs the job uses.", HOST)
HOST_NICS_UP = MetricSpec("msoctl_job_host_nics_up", GAUGE, "Of them, those whose link is up.",
                          HOST)
LINK_INFO = MetricSpec("msoctl_job_link_info", INFO,
                       "A fabric link the job crosses: the span it is carried on and its role "
                       "(working, protection, none, mixed).", LINK)
LINK_LIGHT = MetricSpec("msoctl_job_link_light", GAUGE,
                        "1 when the link's light arrives both ways, 0 when it is lost (absent: "
                        "its devices could not be read).", LINK)
LINK_DRAINED = MetricSpec("msoctl_job_link_drained", GAUGE,
                          "1 when the link is drained (out of service).", LINK)
PORT_INFO = MetricSpec("msoctl_job_port_info", INFO,
                       "A switch port the job's traffic crosses (faces: host, where its NICs "
                       "are cabled; fabric, a link's end).", PORT)
PORT_OPTICS = MetricSpec("msoctl_job_port_optics", GAUGE,
                         "1 for the worst level of the port's optics against the switch's "
                         "thresholds (ok, warning, alarm), 0 for the others.",
                         ("job_name", "device", "port", "level"))

METRICS = (JOBS_UP, JOBS_KEPT, JOBS_DURATION, JOB_UP, JOB_INFO, JOB_START, JOB_STATE,
           JOB_PROBLEMS, HOST_GPUS, HOST_HEALTHY, HOST_NICS, HOST_NICS_UP, LINK_INFO,
           LINK_LIGHT, LINK_DRAINED, PORT_INFO, PORT_OPTICS)


class JobContext(FabricView, Protocol):
    def kept_jobs(self) -> dict[str, Job]: ...


class JobsReader:
    """Reads the kept jobs for ``/jobs``; ``open_context`` gives a context that has read
    nothing yet (the inventory and the journal as they are at each reading)."""

    def __init__(self, open_context: Callable[[], JobContext], *, share_seconds: float):
        self.open_context = open_context
        self.share_seconds = share_seconds
        self._lock = threading.Lock()
        self._body = b""
        self._finished = -float("inf")

    def exposition(self, budget: float) -> bytes:
        """Every kept job's state within ``budget`` seconds, or a reading that another
        scrape took at most ``share_seconds`` ago (or was taking when this one came)."""
        asked = time.monotonic()
        if not self._lock.acquire(timeout=budget):
            families = Families(METRICS)
            families.add(JOBS_UP.name, False)
            return families.text()
        try:
            if self._finished >= asked - self.share_seconds:
                return self._body
            self._body = self._read(asked + budget)
            self._finished = time.monotonic()
            return self._body
        finally:
            self._lock.release()

    def _read(self, deadline: float) -> bytes:
        started = time.monotonic()
        families = Families(METRICS)
        context = self.open_context()
        try:
            jobs = context.kept_jobs()
            view = _Fixed(context, context.drained() if jobs else set())
        except (JournalError, ValidationError, YamlFileError, OSError) as error:
            log.info("jobs: the journal cannot be read: %s", error)
            families.add(JOBS_UP.name, False)
            return families.text()
        families.add(JOBS_UP.name, True)
        families.add(JOBS_KEPT.name, len(jobs))
        pool = ThreadPoolExecutor(max_workers=MAX_JOBS_AT_ONCE, thread_name_prefix="job")
        futures = {name: pool.submit(job_state, view, job, interval=0.0)
                   for name, job in jobs.items()}
        wait(futures.values(), timeout=max(0.0, deadline - time.monotonic()))
        pool.shutdown(wait=False, cancel_futures=True)
        for name, future in futures.items():
            state = None
            if future.done() and not future.cancelled():
                try:
                    state = future.result()
                except (DeviceError, ValidationError, YamlFileError) as error:
                    log.info("job %s: %s", name, error)
                except Exception:  # one job's failure is that job's up 0, not the scrape's
                    log.exception("job %s: reading its state failed", name)
            families.add(JOB_UP.name, state is not None, job_name=name)
            if state is not None:
                _add_state(families, state)
        families.add(JOBS_DURATION.name, time.monotonic() - started)
        return families.text()


class _Fixed:
    """A context's inventory and devices, and the drained links read once: the jobs are
    read in threads, and the journal's connection stays with the thread that read it."""

    def __init__(self, context: JobContext, drained: set[str]):
        self.inventory = context.inventory
        self.devices = context.devices
        self._drained = drained

    def drained(self) -> set[str]:
        return self._drained


def _add_state(families: Families, state: JobState) -> None:
    job = state.job
    name = job.name
    families.info(JOB_INFO.name, {"user": job.user,
                                  "vendors": ",".join(job.document.get("vendors", []))},
                  job_name=name)
    families.add(JOB_START.name, _epoch(job.since), job_name=name)
    families.state(JOB_STATE.name, state.verdict, VERDICTS, job_name=name)
    families.add(JOB_PROBLEMS.name, len(state.problems), job_name=name)
    for host in state.hosts:
        families.add(HOST_GPUS.name, host.gpus, job_name=name, host=host.name)
        families.add(HOST_HEALTHY.name, host.healthy, job_name=name, host=host.name)
        families.add(HOST_NICS.name, host.nics, job_name=name, host=host.name)
        families.add(HOST_NICS_UP.name, host.nics_up, job_name=name, host=host.name)
    for link in state.links:
        families.info(LINK_INFO.name, {"span": link.span, "role": link.role},
                      job_name=name, link=link.name)
        light = {"arrives": True, "lost": False}.get(link.light)
        families.add(LINK_LIGHT.name, light, job_name=name, link=link.name)
        families.add(LINK_DRAINED.name, link.drained, job_name=name, link=link.name)
    for port in state.ports:
        families.info(PORT_INFO.name, {"faces": port.faces}, job_name=name, device=port.switch,
                      port=port.port)
        families.state(PORT_OPTICS.name, port.optics, OPTICS_LEVELS, "level", job_name=name,
                       device=port.switch, port=port.port)


def _epoch(timestamp: str) -> float | None:
    """The journal's ISO 8601 UTC timestamp (``2026-12-07T18:58:55.700Z``) as seconds."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
