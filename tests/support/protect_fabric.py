"""Lab fabrics for the protection tests and bench/protection_scale.py: many links between
one pair of OCSes, each on a working span of its own, protected by dedicated or shared
protection spans, with idle light sources (probes) patched into free ingress ports.

The working spans of an OCS pair run in one cable (``work``, ``work2``, ...): a cut of all
of them at once (in one step of the optical model) darkens every link, as a backhoe
does; each protection span is a cable of its own. Spans have no
amplifiers (30 km at 0.2 dB/km arrives well above the threshold), so that a large fabric
stays cheap to emulate.

Ports, on each OCS of size S with K links, P protection spans:
ingress 1..K transmitters, K+1..2K working spans arriving, 2K+1..2K+P protection spans
arriving, 2K+P+1..2K+2P probes; egress S+1..S+K receivers, S+K+1..S+2K working spans
leaving, S+2K+1..S+2K+P protection spans leaving.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from drivers.ocs.connect import open_ocs
from emulators.faults import Fault
from emulators.lab import Lab
from emulators.lab.topology import Topology, load_topology
from msoctl.inventory import Inventory, load_inventory
from msoctl.journal import Journal
from msoctl.protect.config import ProtectConfig, ProtectionEvent
from msoctl.protect.controller import ProtectionController


def fabric_document(links: int, *, protection: list[int] | None = None, size: int = 64,
                    pairs: int = 1, name: str = "protection-scale",
                    without_alarms: Iterable[int] = ()) -> dict[str, Any]:
    """The topology document: ``pairs`` OCS pairs (``ocs-a1``/``ocs-b1``, ...; one pair:
    ``ocs-a``/``ocs-b``), each with ``links`` links (``link-1``, ... numbered across the
    pairs), link i of a pair protected by its protection span ``protection[i - 1]``
    (default: a span of its own, ``prot-i``). The OCS of the pairs numbered in
    ``without_alarms`` (1, ...) are units without loss-of-light alarms."""
    chosen = protection or list(range(1, links + 1))
    if len(chosen) != links:
        raise ValueError(f"{len(chosen)} protection spans named for {links} links")
    spans = max(chosen)
    if 2 * links + 2 * spans > size:
        raise ValueError(f"{links} links and {spans} protection spans need "
                         f"{2 * links + 2 * spans} ingress ports; the OCS has {size}")
    document: dict[str, Any] = {"name": name, "ocs": [], "switches": [], "transceivers": [],
                                "patches": [], "cables": [], "spans": [], "links": []}
    number = 0
    silent = set(without_alarms)
    for pair in range(1, pairs + 1):
        tag = "" if pairs == 1 else str(pair)
        a, b = f"ocs-a{tag}", f"ocs-b{tag}"
        sw_a, sw_b = f"sw-a{tag}", f"sw-b{tag}"
        document["ocs"] += [{"name": a, "size": size, "campus": "a"},
                            {"name": b, "size": size, "campus": "b"}]
        if pair in silent:
            for unit in document["ocs"][-2:]:
                unit["alarms"] = False
        for switch, campus in ((sw_a, "a"), (sw_b, "b")):
            document["switches"].append({
                "name": switch, "campus": campus, "ports": links, "speed": "400G",
                "cable_length_km": 30.01, "power_dbm": 1.0})
        for ocs, switch, campus in ((a, sw_a, "a"), (b, sw_b, "b")):
            probes = f"probe-{ocs}"
            document["transceivers"].append({"name": probes, "count": spans,
                                             "power_dbm": 0.0, "campus": campus})
            document["patches"] += [
                {"from": f"{switch}:tx1", "to": f"{ocs}:1", "count": links},
                {"from": f"{ocs}:{size + 1}", "to": f"{switch}:rx1", "count": links},
                {"from": f"{probes}:tx1", "to": f"{ocs}:{2 * links + spans + 1}",
                 "count": spans},
            ]
        # the pair's working spans in one cable (one cut takes them all), each protection
        # span in a cable of its own
        document["cables"].append({"name": f"work{tag}", "role": "working", "length_km": 30})
        for i in range(1, links + 1):
            working = _span(f"work{tag}-{i}", "working", a, b, out=size + links + i,
                            arrive=links + i)
            document["spans"].append(
                {"name": working["name"], "cable": f"work{tag}", "fibers": working["fibers"]})
        for j in range(1, spans + 1):
            document["cables"].append(_span(f"prot{tag}-{j}", "protection", a, b,
                                             out=size + 2 * links + j,
                                             arrive=2 * links + j))
        for i in range(1, links + 1):
            number += 1
            document["links"].append({
                "name": f"link-{number}", "a": f"{sw_a}:Ethernet{i}",
                "b": f"{sw_b}:Ethernet{i}", "working": f"work{tag}-{i}",
                "protection": f"prot{tag}-{chosen[i - 1]}"})
    return document


def _span(name: str, role: str, a: str, b: str, *, out: int, arrive: int) -> dict[str, Any]:
    return {"name": name, "role": role, "length_km": 30, "fibers": [
        {"from": f"{a}:{out}", "to": f"{b}:{arrive}"},
        {"from": f"{b}:{out}", "to": f"{a}:{arrive}"}]}


def fabric_topology(directory: Path, links: int, **options: Any) -> Topology:
    """The fabric written to ``directory/topology.yaml`` and loaded from there."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "topology.yaml"
    path.write_text(yaml.safe_dump(fabric_document(links, **options), sort_keys=False))
    return load_topology(path)


def connect_working(inventory: Inventory, names: Iterable[str] | None = None) -> None:
    """Put the links on their working spans, one bulk connect per OCS (as an operator's
    ``ocs connect`` would)."""
    chosen = [inventory.link(n) for n in names] if names is not None \
        else list(inventory.links.values())
    per_ocs: dict[str, dict[int, int]] = {}
    for link in chosen:
        for ocs, pairs in link.connections("working").items():
            per_ocs.setdefault(ocs, {}).update(pairs)
    for ocs, pairs in per_ocs.items():
        device = inventory.device(ocs, "ocs")
        driver = open_ocs(ocs, device.endpoint.transport, device.endpoint.address)
        try:
            driver.connect(pairs)
        finally:
            driver.close()


def cut_cable(lab: Lab, spans: Iterable[str]) -> None:
    """Cut every fiber of ``spans`` in one step of the optical model: no monitor reading
    sees some of them cut and others not."""
    with lab.optics.lock:
        for span in spans:
            lab.inject(span, Fault("fiber_cut"))


def repair_cable(lab: Lab, spans: Iterable[str]) -> None:
    with lab.optics.lock:
        for span in spans:
            lab.clear(span)


@contextmanager
def cut(lab: Lab, spans: Iterable[str]) -> Iterator[None]:
    """The spans cut for the ``with`` block, repaired after it."""
    chosen = list(spans)
    cut_cable(lab, chosen)
    try:
        yield
    finally:
        repair_cable(lab, chosen)


class Recorder:
    """A controller's events, waited for by kind and link."""

    def __init__(self) -> None:
        import threading

        self.events: list[ProtectionEvent] = []
        self.condition = threading.Condition()

    def __call__(self, event: ProtectionEvent) -> None:
        with self.condition:
            self.events.append(event)
            self.condition.notify_all()

    def of(self, kind: str, links: Iterable[str] | None = None) -> list[ProtectionEvent]:
        wanted = None if links is None else set(links)
        with self.condition:
            return [e for e in self.events if e.kind == kind
                    and (wanted is None or e.link in wanted)]

    def wait(self, kind: str, links: Iterable[str], seconds: float = 10.0,
             *, since: int = 0) -> list[ProtectionEvent]:
        """One event of ``kind`` for each of ``links`` among the events after the first
        ``since``, waited for."""
        import time

        wanted = set(links)
        deadline = time.monotonic() + seconds
        with self.condition:
            while True:
                found = {e.link: e for e in self.events[since:] if e.kind == kind
                         and e.link in wanted}
                if set(found) == wanted:
                    return [found[name] for name in sorted(wanted)]
                left = deadline - time.monotonic()
                assert left > 0, (f"{kind} for {sorted(wanted - set(found))} not seen in "
                                  f"{seconds} s: " + "; ".join(
                                      f"{e.kind}: {e.message}" for e in self.events[since:]))
                self.condition.wait(left)

    def mark(self) -> int:
        with self.condition:
            return len(self.events)


@dataclass
class ProtectedFabric:
    """A lab fabric with every link on its working span and a controller protecting it
    in the background (:func:`protected`)."""

    lab: Lab
    inventory: Inventory
    journal: Journal
    controller: ProtectionController
    events: Recorder

    def settled(self) -> bool:
        """Every link on its working span, both spans lit, no hold-off running."""
        return all(link["active_span"] == self.inventory.link(link["link"]).working.name
                   and link["working"]["light"] == "lit"
                   and link["protection"]["light"] == "lit"
                   and link["hold_off_running_ms"] is None
                   for link in self.controller.status())

    def until(self, predicate: Callable[[], object], what: str, seconds: float = 5.0) -> None:
        """``wait_until``, saying the controller's recent events when it times out."""
        deadline = time.monotonic() + seconds
        while not predicate():
            assert time.monotonic() < deadline, f"timed out waiting: {what}: " + "; ".join(
                f"{e.kind}: {e.message}" for e in self.events.events[-12:])
            time.sleep(0.01)


F = TypeVar("F", bound=ProtectedFabric)


@contextmanager
def protected(kind: type[F], directory: Path, topology: Topology, config: ProtectConfig,
              *, settle_seconds: float) -> Iterator[F]:
    """``topology``'s lab in ``directory``, its links connected onto their working spans,
    and a controller with ``config`` running until the block ends; yields a ``kind``
    once every link is settled."""
    with Lab(directory / "lab", topology, serial_consoles=False) as lab:
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        connect_working(inventory)
        assert inventory.journal_path is not None
        journal = Journal(inventory.journal_path)
        events = Recorder()
        controller = ProtectionController(inventory, journal, on_event=events, config=config)
        with controller.background():
            found = kind(lab, inventory, journal, controller, events)
            found.until(found.settled, "every link on its working span, both spans lit",
                        seconds=settle_seconds)
            yield found
