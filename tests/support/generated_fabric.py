"""A generated fabric run as operators run it, for the protection tests and
bench/protection_scale.py: ``msoctl lab topology generate``, ``msoctl lab up --topology
FILE --processes N`` and ``msoctl protect run``, each a process of its own, the links
put on their working spans first (one whole-map command per OCS, as an operator's
``ocs connect`` would), faults through ``msoctl lab fault``.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from drivers.errors import DeviceError
from drivers.ocs.connect import open_ocs
from msoctl.cli import run
from msoctl.inventory import Inventory, load_inventory
from msoctl.journal import Journal, Operation
from msoctl.links import Link

MSOCTL = [sys.executable, "-m", "msoctl"]
LAB_START_SECONDS = 60.0
RECEIVER_LIT_DBM = -15.0
"""An OCS monitor on a lit span end or receiver path reads about -8 dBm here."""


def generate(path: Path, *arguments: str) -> None:
    """``msoctl lab topology generate ARGUMENTS --idle-light -o PATH``."""
    subprocess.run([*MSOCTL, "lab", "topology", "generate", *arguments, "--idle-light",
                    "-o", str(path)], check=True, capture_output=True, timeout=60)


def wait(predicate: Callable[[], object], what: str, seconds: float,
         detail: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}" + (f": {detail()}"
                                                                 if detail() else ""))
        time.sleep(0.02)


def stop(process: subprocess.Popen[bytes], seconds: float = 20.0) -> int:
    """SIGTERM, then SIGKILL after ``seconds``; the exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return process.returncode


@dataclass
class RunningLab:
    """``msoctl lab up`` in a process of its own, and what it wrote."""

    topology: Path
    state_dir: Path
    process: subprocess.Popen[bytes]
    inventory: Inventory
    controllers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(cls, topology: Path, state_dir: Path, *, processes: int = 2) -> RunningLab:
        log = (state_dir.parent / f"{state_dir.name}.lab.log").open("wb")
        process = subprocess.Popen(
            [*MSOCTL, "lab", "up", "--topology", str(topology), "--state-dir", str(state_dir),
             "--processes", str(processes)], stdout=log, stderr=subprocess.STDOUT)
        inventory_file = state_dir / "inventory.yaml"
        try:
            wait(lambda: inventory_file.exists() or process.poll() is not None,
                 "the lab's inventory", LAB_START_SECONDS)
            if process.poll() is not None:
                raise RuntimeError(f"msoctl lab up exited {process.returncode}: " + (
                    state_dir.parent / f"{state_dir.name}.lab.log").read_text()[-2000:])
        except BaseException:
            stop(process)
            raise
        return cls(topology, state_dir, process, load_inventory(inventory_file))

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, MSOCTL_INVENTORY=str(self.state_dir / "inventory.yaml"))

    def journal(self) -> Journal:
        assert self.inventory.journal_path is not None
        return Journal(self.inventory.journal_path)

    def msoctl(self, *arguments: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*MSOCTL, *arguments], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def fault(self, kind: str, target: str, *options: str, clear: bool = False) -> None:
        """``msoctl lab fault KIND TARGET [OPTIONS] [--clear]``, in this process: a process
        of its own would take a core for its start-up just as the controller answers the
        cut."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run(["lab", "fault", kind, target, "--state-dir", str(self.state_dir),
                        *options, *(["--clear"] if clear else [])])
        if code != 0:
            raise RuntimeError(f"msoctl lab fault {kind} {target}: {err.getvalue().strip()}")

    def connect_working(self) -> None:
        """Every link on its working span: one whole-map command per OCS."""
        wanted: dict[str, dict[int, int]] = {}
        for link in self.inventory.links.values():
            for ocs, pairs in link.connections("working").items():
                wanted.setdefault(ocs, {}).update(pairs)
        for name, pairs in wanted.items():
            device = self.inventory.device(name, "ocs")
            driver = open_ocs(name, device.endpoint.transport, device.endpoint.address,
                              timeout_seconds=5.0)
            try:
                driver.replace_map(pairs)
            finally:
                driver.close()

    def protect(self, log: Path, *arguments: str,
                env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """``msoctl protect run ARGUMENTS``, its output in ``log``."""
        process = subprocess.Popen([*MSOCTL, "protect", "run", *arguments],
                                   env=env or self.env, stdout=log.open("wb"),
                                   stderr=subprocess.STDOUT)
        self.controllers.append(process)
        return process

    def powers(self, ports: dict[str, set[int]]) -> dict[tuple[str, int], float | None]:
        """One reading of ``ports[ocs]`` on each OCS, over SCPI."""
        found: dict[tuple[str, int], float | None] = {}
        for name, wanted in ports.items():
            device = self.inventory.device(name, "ocs")
            driver = open_ocs(name, device.endpoint.transport, device.endpoint.address,
                              timeout_seconds=5.0)
            try:
                found.update({(name, p): v for p, v in driver.power(sorted(wanted)).items()})
            finally:
                driver.close()
        return found

    def maps(self) -> dict[str, dict[int, int]]:
        found = {}
        for name, device in self.inventory.devices.items():
            if device.kind != "ocs":
                continue
            driver = open_ocs(name, device.endpoint.transport, device.endpoint.address,
                              timeout_seconds=5.0)
            try:
                found[name] = dict(driver.port_map())
            finally:
                driver.close()
        return found

    def close(self) -> None:
        for process in self.controllers:
            stop(process)
        stop(self.process)


def on_span(link: Link, role: str, maps: dict[str, dict[int, int]]) -> bool:
    """Whether every cross-connect of ``link``'s span of ``role`` is in place."""
    return all(maps.get(ocs, {}).get(i) == e
               for ocs, pairs in link.connections(role).items() for i, e in pairs)


def arrival_ports(links: Sequence[Link], role: str) -> dict[str, set[int]]:
    """Where each link's light arrives from its span of ``role``, per OCS."""
    found: dict[str, set[int]] = {}
    for link in links:
        span = link.span(role)
        for fiber in (span.a_to_b, span.b_to_a):
            found.setdefault(fiber.end.ocs, set()).add(fiber.end.port)
    return found


def protection_ops(journal: Journal, after: int, *actions: str) -> list[Operation]:
    """The operations of ``actions`` journaled after order ``after``, oldest first: read
    newest first a few at a time, down to ``after`` only (a benchmark asks this every
    20 ms while it measures, and must not load every earlier change to answer)."""
    found: list[Operation] = []
    for operation in journal.newest_first(actions=actions, page=8):
        if operation.order <= after:
            break
        found.append(operation)
    return found[::-1]


def last_order(journal: Journal) -> int:
    last = journal.last()
    return 0 if last is None else last.order


def told_ready(log: Path) -> bool:
    """Whether the ``msoctl protect run`` writing ``log`` has said it is ready (its
    ``ready`` event: every link on a span, both spans lit, the amplifiers steady, no
    read outstanding). A cut made earlier may fall in its start (a map being read again
    after a probe's park), when part of a cable's losses are not judged yet."""
    try:
        return any(line.split()[1:2] == ["ready"] for line in log.read_text().splitlines())
    except FileNotFoundError:
        return False


def settled(running: RunningLab, links: Sequence[Link]) -> bool:
    """Every link on its working span and light arriving at both ends of both its spans
    (the protection span's from the probe the controller parked), read from the OCSes."""
    try:
        maps = running.maps()
        if not all(on_span(link, "working", maps) for link in links):
            return False
        ports = arrival_ports(links, "working")
        for name, more in arrival_ports(links, "protection").items():
            ports.setdefault(name, set()).update(more)
        return all(v is not None and v > RECEIVER_LIT_DBM
                   for v in running.powers(ports).values())
    except DeviceError:
        return False
