"""A lab spread over processes: its OCS domains in worker processes, so that every core
serves.

Python runs one thread at a time per process; a lab of hundreds of links in one
process answers its SCPI clients, reads its alarms and walks its optical model on
one core however many the machine has. Light never crosses between OCS domains
(emulators/lab/domains.py), so each worker (emulators/lab/worker.py, a process forked
from emulators/processes.py's server) runs its share of the domains as an ordinary
:class:`~emulators.lab.lab.Lab` with an optical model of its own, and nothing a worker
computes is needed by another.

This process -- the one ``msoctl lab up`` runs in -- keeps what a lab has once:

- the lock on the state directory (before any worker starts, until all have ended);
- the inventory, merged from the workers' entries in the topology's order and written
  atomically once every worker listens, and ``known_hosts`` likewise;
- the control endpoint (emulators/lab/control.py), whose requests it routes: a
  device's fault to the worker that holds it; a cable's cut to every worker holding
  one of its spans, all sent before any answer is awaited, so the fibers of one cable
  go dark at once across processes (within the pipes' latency, well under a
  millisecond on an idle machine); the status from every worker at once, merged into
  the shape of a lab in one process, with each process listed under
  ``lab.processes``.

Workers are started together and come up in parallel. A worker that fails to start
stops the whole lab with its one-line reason; a worker whose starting process dies
(killed, however) sees its pipe close and stops too.
"""

from __future__ import annotations

import json
import os
import threading
import time
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from emulators.faults import Fault, FaultError
from emulators.lab.constants import ENDPOINT_FILE, JOURNAL_FILE, TOKEN_FILE
from emulators.lab.control import ControlServer, endpoint_document, remove_endpoint_file
from emulators.lab.domains import partition, restrict
from emulators.lab.files import new_secret, write_atomically, write_inventory
from emulators.lab.lab import KNOWN_HOSTS
from emulators.lab.statelock import StateDirLock
from emulators.lab.status import CUT_KINDS, cables_and_spans, check_fault, fault_kinds
from emulators.lab.topology import Topology
from emulators.lab.worker import serve_part
from emulators.loopthread import LoopThread
from emulators.processes import process_context

START_SECONDS = 300.0
"""How long the workers may take to listen, all together."""
REQUEST_SECONDS = 60.0


class WorkerFailed(RuntimeError):
    """A worker did not start, or stopped answering; the message says which and why."""


class _Worker:
    """One worker process and the parent's end of its pipe (one request at a time)."""

    def __init__(self, index: int, topology: Topology, state_dir: Path):
        context = process_context()
        self.index = index
        self.topology = topology
        self.pipe, child = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=serve_part, args=(str(state_dir), child), daemon=True,
            name=f"lab-worker-{index}")
        self.process.start()
        child.close()
        # The part goes over the pipe, from a thread: the new process reads it only once
        # its interpreter is up, and a write that large would hold the next worker's start.
        self._sending = threading.Thread(target=self._send_part, name=f"lab-worker-{index}-part",
                                         daemon=True)
        self._sending.start()
        self.lock = threading.Lock()
        self.ready: dict[str, Any] = {}

    def _send_part(self) -> None:
        try:
            self.pipe.send(self.topology)
        except (OSError, ValueError):
            pass  # the worker is gone; wait_ready says so

    def describe(self) -> str:
        return (f"lab worker {self.index + 1} (pid {self.process.pid}, "
                f"{', '.join(o.name for o in self.topology.ocs[:3])}"
                f"{' ...' if len(self.topology.ocs) > 3 else ''})")

    def wait_ready(self, deadline: float) -> None:
        while not self.pipe.poll(0.1):
            if not self.process.is_alive():
                raise WorkerFailed(f"{self.describe()} ended before it listened")
            if time.monotonic() > deadline:
                raise WorkerFailed(f"{self.describe()} did not listen within "
                                   f"{START_SECONDS:g} s")
        try:
            status, value = self.pipe.recv()
        except (EOFError, OSError):
            raise WorkerFailed(f"{self.describe()} ended before it listened") from None
        if status != "ready":
            raise WorkerFailed(f"{self.describe()} did not start: {value}")
        self.ready = value

    def send(self, *request: Any) -> None:
        try:
            self.pipe.send(request)
        except (OSError, ValueError):
            raise WorkerFailed(f"{self.describe()} has ended") from None

    def receive(self) -> Any:
        if not self.pipe.poll(REQUEST_SECONDS):
            raise WorkerFailed(f"{self.describe()} did not answer within "
                               f"{REQUEST_SECONDS:g} s")
        try:
            status, value = self.pipe.recv()
        except (EOFError, OSError):
            raise WorkerFailed(f"{self.describe()} has ended") from None
        if status == "fault":
            raise FaultError(value)
        if status != "ok":
            raise WorkerFailed(f"{self.describe()}: {value}")
        return value

    def stop(self) -> None:
        try:
            with self.lock:
                self.pipe.send(("stop",))
        except (OSError, ValueError):
            pass  # already gone
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.pipe.close()


def _ask(workers: list[_Worker], *request: Any) -> list[Any]:
    """Send ``request`` to every one of ``workers`` first, then collect their answers: they
    work on it at the same time."""
    for worker in workers:
        worker.lock.acquire()
    try:
        for worker in workers:
            worker.send(*request)
        return [worker.receive() for worker in workers]
    finally:
        for worker in workers:
            worker.lock.release()


class SpreadLab:
    """The lab of ``topology`` over at most ``processes`` worker processes (see the module
    docstring); ``start()`` serves it, ``stop()`` ends every worker. It is also the
    control endpoint's :class:`~emulators.lab.backend.LabBackend`."""

    def __init__(self, state_dir: Path, topology: Topology, *, processes: int):
        self.state_dir = Path(state_dir)
        self.topology = topology
        self.parts = [restrict(topology, names) for names in partition(topology, processes)]
        self.control: ControlServer | None = None
        self.workers: list[_Worker] = []
        self._targets: dict[str, list[str]] = {}
        self._owners: dict[str, list[int]] = {}
        self._runner = LoopThread("lab-control")
        self._state_lock = StateDirLock(self.state_dir)
        self._state_lock.acquire()  # before any worker touches the directory
        order = [*(o.name for o in topology.ocs), *(a.name for a in topology.amplifiers),
                 *(s.name for s in topology.switches),
                 *(n for t in topology.test_sets for n in (t.laser, t.meter))]
        self._device_order = {name: index for index, name in enumerate(order)}
        self._fiber_order = {f.name: index for index, f in enumerate(topology.fibers())}

    # ---- running ----------------------------------------------------------------------

    def start(self) -> Path:
        """Start every worker, wait until all listen, write the inventory and start the
        control endpoint; the inventory's path. Raises :class:`WorkerFailed`."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.workers = [_Worker(index, part, self.state_dir)
                            for index, part in enumerate(self.parts)]
            deadline = time.monotonic() + START_SECONDS
            for worker in self.workers:
                worker.wait_ready(deadline)
            self._merge_targets()
            inventory = write_inventory(self.state_dir, self.topology.name, self.inventory())
            lines = [line for w in self.workers for line in w.ready["known_hosts"]]
            if lines:
                write_atomically(self.state_dir / KNOWN_HOSTS, "".join(
                    f"{line}\n" for line in lines), 0o644)
            self._runner.start()
            self.control = ControlServer(self, new_secret(self.state_dir, TOKEN_FILE))
            self._runner.call(self.control.start())
            write_atomically(self.state_dir / ENDPOINT_FILE, json.dumps(
                endpoint_document(self.control, self), indent=2) + "\n", 0o644)
        except BaseException:
            self.stop()
            raise
        return inventory

    def stop(self) -> None:
        try:
            control = self.control

            async def stop_control() -> None:
                if control is not None:
                    remove_endpoint_file(self.state_dir, control)
                    await control.stop()

            if self._runner.started:
                self._runner.stop(stop_control)
            for worker in self.workers:
                worker.stop()
            self.workers = []
        finally:
            self._state_lock.release()

    def __enter__(self) -> SpreadLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [int(w.ready["pid"]) for w in self.workers if w.ready]

    # ---- the inventory ------------------------------------------------------------------

    def inventory(self) -> dict[str, Any]:
        """The workers' inventory entries, merged in the topology's order."""
        parts = [w.ready["inventory"] for w in self.workers]
        devices = sorted((d for p in parts for d in p["devices"]),
                         key=lambda d: self._device_order.get(d["name"], len(self._device_order)))
        span_order = {s.name: i for i, s in enumerate(self.topology.spans)}
        link_order = {link.name: i for i, link in enumerate(self.topology.links)}
        document: dict[str, Any] = {"journal": JOURNAL_FILE, "devices": devices}
        spans = sorted((s for p in parts for s in p.get("spans", [])),
                       key=lambda s: span_order[s["name"]])
        links = sorted((link for p in parts for link in p.get("links", [])),
                       key=lambda link: link_order[link["name"]])
        if spans:
            document["spans"] = spans
        if links:
            document["links"] = links
        host_order = {host.name: i for i, host in enumerate(self.topology.hosts)}
        hosts = sorted((h for p in parts for h in p.get("hosts", [])),
                       key=lambda h: host_order[h["name"]])
        if hosts:
            document["hosts"] = hosts
        return document

    def _merge_targets(self) -> None:
        for worker in self.workers:
            for target, kinds in worker.ready["targets"].items():
                self._targets.setdefault(target, kinds)
                self._owners.setdefault(target, []).append(worker.index)

    # ---- the control endpoint's backend ------------------------------------------------------

    def fault_targets(self) -> dict[str, list[str]]:
        return dict(self._targets)

    def holders(self, target: str) -> list[int]:
        """The pids of the workers that hold ``target`` (a cable: every one holding one of
        its spans); FaultError for no such target."""
        return [int(worker.ready["pid"]) for worker in self._holders(target)]

    def _holders(self, target: str) -> list[_Worker]:
        fault_kinds(self._targets, self.topology, target)  # FaultError for no such target
        return [self.workers[index] for index in self._owners[target]]

    def inject(self, target: str, fault: Fault) -> dict[str, Any]:
        check_fault(self._targets, self.topology, target, fault.kind)
        answers = _ask(self._holders(target), "inject", target, fault)
        if fault.kind not in CUT_KINDS:
            return dict(answers[0])
        fibers = sorted((f for a in answers for f in a["fibers"]),
                        key=lambda name: self._fiber_order[name])
        return {"kind": fault.kind, "fibers": fibers,
                "at_seconds": min(a["at_seconds"] for a in answers)}

    def clear(self, target: str, kind: str | None,
              port: str | None = None) -> list[dict[str, Any]]:
        if kind is not None:
            check_fault(self._targets, self.topology, target, kind)
        answers = _ask(self._holders(target), "clear", target, kind, port)
        cleared = [entry for a in answers for entry in a]
        return sorted(cleared, key=lambda e: self._fiber_order.get(e.get("target") or "", 0))

    def status(self) -> dict[str, Any]:
        documents = _ask(self.workers, "status")
        devices = sorted((d for doc in documents for d in doc["devices"]),
                         key=lambda d: self._device_order.get(d["name"], len(self._device_order)))
        fibers = sorted((f for doc in documents for f in doc["fibers"]),
                        key=lambda f: self._fiber_order[f["name"]])
        processes = [{"pid": os.getpid(), "role": "control", "ocs": 0, "switches": 0,
                      "amplifiers": 0, "links": 0, "cpu_seconds": round(time.process_time(), 3)},
                     *(p for doc in documents for p in doc["lab"]["processes"])]
        first = documents[0]["lab"]
        return {
            "lab": {**first, "topology": self.topology.name, "pid": os.getpid(),
                    "processes": processes},
            "devices": devices,
            "fibers": fibers,
            **cables_and_spans(self.topology, fibers),
        }


def lab_for(state_dir: Path, topology: Topology, processes: int) -> SpreadLab | None:
    """A :class:`SpreadLab` when ``topology`` has links in more than one domain and
    ``processes`` is more than 1; ``None`` when it runs in one process."""
    if processes < 2 or len(partition(topology, processes)) < 2:
        return None
    return SpreadLab(state_dir, topology, processes=processes)
