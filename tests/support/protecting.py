"""A protection controller running in a thread against the lab, for the tests that watch
what it does: link-1 connected on its working span, the events it emits recorded."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from drivers.ocs.connect import open_ocs
from emulators.amp.als import NORMAL, SHUTDOWN
from emulators.lab import Lab
from msoctl.access import Devices
from msoctl.inventory import Inventory, load_inventory
from msoctl.journal import Journal
from msoctl.protect.controller import ProtectConfig, ProtectionController, ProtectionEvent
from tests.support.lab import wait_until


def connect_working(inventory: Inventory) -> None:
    link = inventory.link("link-1")
    for name, pairs in link.connections("working").items():
        device = inventory.device(name, "ocs")
        driver = open_ocs(name, device.endpoint.transport, device.endpoint.address)
        try:
            driver.connect(dict(pairs))
        finally:
            driver.close()


def restart_working_amplifiers(lab: Lab, inventory: Inventory) -> None:
    """Restart the amplifiers of link-1's working span that ALS holds shut, as an
    operator brings a span into service (the lab's amplifiers are shut when it is new or
    put back: their input was dark), and wait until they pump again; the protection
    span's are left to the controller, which restarts them once its probe lights them."""
    span = inventory.link("link-1").span("working")
    names = [f.amplifier for f in (span.a_to_b, span.b_to_a)
             if f.amplifier is not None and lab.amps[f.amplifier].als_state == SHUTDOWN]
    devices = Devices(inventory)
    for name in names:
        driver = devices.amp(name)
        try:
            driver.restart()
        finally:
            driver.close()
    wait_until(lambda: all(lab.amps[name].als_state == NORMAL for name in names),
               f"{', '.join(names)} pumping again")


@dataclass
class Running:
    controller: ProtectionController
    journal: Journal
    events: list[ProtectionEvent] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)

    def record(self, event: ProtectionEvent) -> None:
        with self.lock:
            self.events.append(event)
            self.lock.notify_all()

    def kinds(self, *kinds: str) -> list[ProtectionEvent]:
        with self.lock:
            return [e for e in self.events if e.kind in kinds]

    def wait_for(self, kind: str, seconds: float = 5.0, *, after: int = 0) -> ProtectionEvent:
        """The first event of ``kind`` beyond the first ``after`` of that kind."""
        deadline = time.monotonic() + seconds
        with self.lock:
            while True:
                found = [e for e in self.events if e.kind == kind]
                if len(found) > after:
                    return found[after]
                left = deadline - time.monotonic()
                assert left > 0, f"no {kind} event in {seconds} s:\n{self.told()}"
                self.lock.wait(left)

    def told(self) -> str:
        """Every event so far, a line each (for a failing assertion to show)."""
        with self.lock:
            return "\n".join(f"{e.kind}: {e.message}" for e in self.events)

    def link(self) -> dict[str, Any]:
        return self.controller.status()[0]

    def protection_ops(self, action: str) -> list[Any]:
        return [o for o in self.journal.operations() if o.action == action]


@contextmanager
def protecting(lab: Lab, **settings: Any) -> Iterator[Running]:
    """link-1 on its working span, under a controller running in a thread, both spans lit."""
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    connect_working(inventory)
    restart_working_amplifiers(lab, inventory)
    assert inventory.journal_path is not None
    journal = Journal(inventory.journal_path)
    # A 5 ms poll, as these tests were written for: the lab's OCS is taken to answer
    # 1000 messages a second (tests/e2e/test_protect_scale.py keeps the default budget).
    config = ProtectConfig(**{"poll_seconds": 0.005, "wait_to_restore_seconds": 0.3,
                              "ocs_messages_per_second": 1000.0, **settings})
    running = Running(ProtectionController(inventory, journal, config=config), journal)
    running.controller.on_event = running.record
    with running.controller.background():
        assert running.controller.wait_ready(8), "link-1 on a span, both spans lit"
        assert running.link()["role"] == "working"
        yield running
