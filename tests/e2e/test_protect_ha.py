"""Protection instances sharing the links through the journal's PostgreSQL database
(``msoctl protect run --ha``, msoctl/protect/ha.py), against a real PostgreSQL server
(tests/postgres_peer.py) and the emulated fabric: an owner killed (SIGKILL) and one
frozen (SIGSTOP) while links are cut; a standby takes over within the lease bound; no
link is moved twice for one cut; the journal keeps every takeover and loses nothing.

The fabric (tests/protect_fabric.py): two OCS pairs, so two shards (``ocs-a1+ocs-b1``
with link-1 and link-2, ``ocs-a2+ocs-b2`` with link-3 and link-4). The instances run as
processes of their own (``python -m msoctl protect run --ha``), as on different hosts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulators.lab import Lab
from msoctl.inventory import Inventory, load_inventory
from msoctl.journal import Journal
from msoctl.links import Link
from msoctl.protect.ha import LeaseOwnership, LeaseTimes, instances_and_shards
from msoctl.protect.ownership import Fenced
from tests.support.lab import wait_until
from tests.support.protect_fabric import connect_working, cut_cable, fabric_topology, repair_cable

pytestmark = pytest.mark.serial  # real-time bounds are the subject: alone on the machine

SHARDS = ("ocs-a1+ocs-b1", "ocs-a2+ocs-b2")
LEASE_BOUND_SECONDS = 0.9
"""A crashed owner's shards are taken within lease + renew (ha.py's defaults)."""
LOADED_SLACK_SECONDS = 2.0
"""What a loaded 2-core test host may add to that bound."""
TAKEOVER_WAIT_SECONDS = 20
"""How long the test waits to see a takeover at all: the bound is checked in the
database's clock, as the takeover recorded it (:func:`assert_within_the_bound`)."""


@dataclass
class Site:
    lab: Lab
    inventory: Inventory
    url: str
    journal: Journal
    directory: Path
    processes: dict[str, subprocess.Popen[bytes]]

    def start(self, name: str) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        env["MSOCTL_INVENTORY"] = str(self.lab.state_dir / "inventory.yaml")
        env["MSOCTL_JOURNAL"] = self.url
        log = (self.directory / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "msoctl", "protect", "run", "--ha", "--instance", name,
             "--wait-to-restore-s", "0.3"],
            env=env, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name] = process
        return process

    def status(self, *, json_output: bool = True) -> Any:
        """``msoctl protect status`` (its JSON document, or its table)."""
        env = dict(os.environ, MSOCTL_INVENTORY=str(self.lab.state_dir / "inventory.yaml"),
                   MSOCTL_JOURNAL=self.url)
        result = subprocess.run(
            [sys.executable, "-m", "msoctl", "protect", "status",
             *(["-o", "json"] if json_output else [])],
            env=env, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout) if json_output else result.stdout

    def log(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(errors="replace")

    def owners(self) -> dict[str, tuple[str | None, int]]:
        _, shards = instances_and_shards(self.journal)
        return {s["shard"]: (s["owner"], s["term"]) for s in shards}

    def instance(self, name: str) -> dict[str, Any] | None:
        instances, _ = instances_and_shards(self.journal)
        return next((i for i in instances if i["instance"] == name), None)

    def on_span(self, link: str, role: str) -> bool:
        """At the emulated OCSes: every cross-connect of ``link`` over its ``role`` span."""
        found = self.inventory.link(link)
        return all(self.lab.ocs[ocs].connection_map().get(i) == e
                   for ocs, pairs in found.connections(role).items() for i, e in pairs)

    def protected(self) -> bool:
        """Every link on its working span and its protection span lit by a probe."""
        for link in self.inventory.links.values():
            if not self.on_span(link.name, "working"):
                return False
            assert link.protection is not None
            for fiber in (link.protection.a_to_b, link.protection.b_to_a):
                fed = set(self.lab.ocs[fiber.start.ocs].connection_map().values())
                if fiber.start.port not in fed:
                    return False
        return True

    def moves_of(self, link: str, since: int) -> list[Any]:
        return [o for o in self.journal.operations(mentions=link)
                if o.order > since and o.status == "ok"
                and o.action in ("protection.switch", "protection.revert")]

    def last_order(self) -> int:
        last = self.journal.last()
        return 0 if last is None else last.order


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Site]:
    directory = tmp_path_factory.mktemp("ha")
    topology = fabric_topology(directory, 2, pairs=2)
    with Lab(directory / "lab", topology, serial_consoles=False) as lab:
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        connect_working(inventory)
        found = Site(lab, inventory, postgres_url, Journal(postgres_url), directory, {})
        try:
            yield found
        finally:
            for process in found.processes.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGCONT)
                    process.kill()
                    process.wait(timeout=10)


def assert_within_the_bound(takeover: Any) -> None:
    """The takeover came within lease + renew of the previous owner's last renewal (its
    heartbeat, renewed in the same round as its leases), in the database's clock as the
    new owner's claim read it (ha.py journals both ages): the controller's own times, not
    this test's clock, which its own polling and a loaded host stretch; and not before
    the lease had ended."""
    intent = takeover.intent
    assert intent["lease_ended_seconds_ago"] >= 0, intent
    assert intent["heartbeat_age_seconds"] < LEASE_BOUND_SECONDS + LOADED_SLACK_SECONDS, intent


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGCONT)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=15)


def test_a_killed_owner_is_replaced_within_the_bound_and_the_cut_it_left_is_repaired(
        site: Site) -> None:
    """Leases and terms (ha.py; the bound follows Patroni's rule loop_wait + 2 x
    retry_timeout <= ttl): instance A owns both shards, B stands by with its watches
    running. A is killed (SIGKILL) and a link is cut at once: B takes both shards
    within lease + renew (0.9 s; the assertion leaves room for a loaded host) with
    term + 1, each takeover journaled, and repairs the cut (G.808.1 (05/2014) clause 13:
    the switch is made by exactly one controller)."""
    a = site.start("A")
    wait_until(lambda: {o for o, _ in site.owners().values()} == {"A"}
               and len(site.owners()) == 2, "A owns both shards", seconds=20)
    site.start("B")
    wait_until(lambda: (site.instance("B") or {}).get("state") == "standby",
               "B registered as a standby", seconds=20)
    wait_until(site.protected, "every link protected", seconds=20)
    terms = {shard: term for shard, (_, term) in site.owners().items()}
    since = site.last_order()

    a.send_signal(signal.SIGKILL)
    a.wait(timeout=10)
    cut_cable(site.lab, ["work1-1"])  # link-1, in the first shard
    try:
        wait_until(lambda: {o for o, _ in site.owners().values()} == {"B"},
                   "B owns both shards", seconds=TAKEOVER_WAIT_SECONDS)
        assert {s: t for s, (_, t) in site.owners().items()} == {
            s: terms[s] + 1 for s in SHARDS}
        wait_until(lambda: site.on_span("link-1", "protection"), "link-1 on prot1-1",
                   seconds=10)
    finally:
        repair_cable(site.lab, ["work1-1"])
    wait_until(lambda: site.on_span("link-1", "working"), "link-1 reverted", seconds=10)

    takeovers = [o for o in site.journal.operations(action="protection.takeover")
                 if o.order > since]
    assert sorted(o.device for o in takeovers) == sorted(SHARDS)
    for takeover in takeovers:
        assert takeover.intent["instance"] == "B"
        assert takeover.intent["previous_owner"] == "A"
        assert takeover.intent["term"] == terms[takeover.device] + 1
        assert_within_the_bound(takeover)
    wait_until(lambda: len(site.moves_of("link-1", since)) == 2, "both moves journaled")
    moves = site.moves_of("link-1", since)
    assert [o.action for o in moves] == ["protection.switch", "protection.revert"]
    assert all(o.intent["instance"] == "B" for o in moves)
    fences = [r for o in moves for r in o.records if r.get("event") == "fence"]
    assert all(r["terms"] == {SHARDS[0]: terms[SHARDS[0]] + 1} for r in fences) and fences
    # A's run, which it could not close, was closed by B as interrupted
    runs = [o for o in site.journal.operations(action="protection.run")
            if o.intent.get("instance") == "A"]
    wait_until(lambda: all(not o.is_open for o in site.journal.operations(
        action="protection.run") if o.intent.get("instance") == "A"),
        "A's run closed", seconds=5)
    assert runs


def test_a_frozen_owner_is_replaced_and_after_it_resumes_it_moves_nothing(
        site: Site) -> None:
    """Fencing (ha.py): B owns both shards, C stands by. B is frozen (SIGSTOP); C takes
    the shards once B's lease has ended, ending B's database sessions. Links are cut
    while B is frozen and after it resumes (SIGCONT): C alone moves them, once each; B
    finds its renewal refused (journaled as protection.shard_lost) and makes no device
    change."""
    b = site.processes["B"]
    assert {o for o, _ in site.owners().values()} == {"B"}
    site.start("C")
    wait_until(lambda: (site.instance("C") or {}).get("state") == "standby",
               "C registered as a standby", seconds=20)
    wait_until(site.protected, "every link protected", seconds=20)
    since = site.last_order()

    b.send_signal(signal.SIGSTOP)
    try:
        wait_until(lambda: {o for o, _ in site.owners().values()} == {"C"},
                   "C owns both shards", seconds=TAKEOVER_WAIT_SECONDS)
        def takeovers() -> list[Any]:
            return [o for o in site.journal.operations(action="protection.takeover")
                    if o.order > since]

        wait_until(lambda: len(takeovers()) == len(SHARDS), "C's takeovers journaled")
        assert sorted(o.device for o in takeovers()) == sorted(SHARDS)
        for takeover in takeovers():
            assert takeover.intent["instance"] == "C"
            assert takeover.intent["previous_owner"] == "B"
            assert_within_the_bound(takeover)
        cut_cable(site.lab, ["work2-1"])  # link-3, second shard, while B is frozen
        wait_until(lambda: site.on_span("link-3", "protection"), "link-3 moved by C",
                   seconds=10)
    finally:
        b.send_signal(signal.SIGCONT)
    wait_until(lambda: len([o for o in site.journal.operations(
        action="protection.shard_lost") if o.order > since]) == 2,
        "B's renewals refused and journaled", seconds=10)
    cut_cable(site.lab, ["work1-2"])  # link-2, first shard, after B resumed
    try:
        wait_until(lambda: site.on_span("link-2", "protection"), "link-2 moved", seconds=10)
        time.sleep(0.5)  # time for a second, wrong move, were there one
    finally:
        repair_cable(site.lab, ["work2-1", "work1-2"])
    wait_until(site.protected, "every link back on its working span", seconds=15)

    lost = [o for o in site.journal.operations(action="protection.shard_lost")
            if o.order > since]
    assert {o.intent["instance"] for o in lost} == {"B"}
    assert {o.intent["owner"] for o in lost} == {"C"}
    changes = [o for o in site.journal.operations(action_prefix="protection.")
               if o.order > since and o.action in ("protection.switch", "protection.revert",
                                                   "protection.probe",
                                                   "protection.als_restart")
               and o.status == "ok"]
    assert changes and {o.intent.get("instance") for o in changes} == {"C"}
    for link in ("link-2", "link-3"):
        wait_until(lambda link=link: len(site.moves_of(link, since)) >= 2,  # type: ignore[misc]
                   f"{link}'s moves journaled")
        assert [o.action for o in site.moves_of(link, since)] == [
            "protection.switch", "protection.revert"], link
    assert "lost" in site.log("B")
    shown = site.status()
    instances = {i["instance"]: i for i in shown["instances"]}
    assert {"A", "B", "C"} <= set(instances)
    assert instances["C"]["state"] == "active" and instances["C"]["connected"]
    assert instances["B"]["state"] == "standby"  # alive again, owning nothing
    assert instances["C"]["heartbeat_age_seconds"] < 5
    assert {s["shard"]: s["owner"] for s in shown["shards"]} == dict.fromkeys(SHARDS, "C")
    assert {link["link"]: link["owner"]["instance"] for link in shown["links"]} == \
        dict.fromkeys(("link-1", "link-2", "link-3", "link-4"), "C")
    table = site.status(json_output=False)
    assert "SHARDS (TERM)" in table and "ocs-a1+ocs-b1 (3)" in table
    stop(b)
    stop(site.processes["C"])
    assert not [o for o in site.journal.operations(open_only=True)]
    instances, _ = instances_and_shards(site.journal)
    assert {i["instance"]: i["state"] for i in instances}["C"] == "stopped"


def test_the_fence_refuses_an_instance_whose_shard_was_taken(site: Site) -> None:
    """The fence itself, on the real database: an instance whose renewals stop (a frozen
    process, a lost database) is refused by its own deadline (``check``) and by the
    database (``fence``: another owner and term) once another instance has taken its
    shard; the new owner passes both."""
    times = LeaseTimes(renew_seconds=0.05, lease_seconds=0.4, margin_seconds=0.1,
                       retry_seconds=0.1)
    link: Link = site.inventory.link("link-1")
    first = LeaseOwnership(Journal(site.url), times=times, name="fence-1")
    second = LeaseOwnership(Journal(site.url), times=times, name="fence-2")
    first.start([link], lambda: None)
    try:
        wait_until(lambda: first.acts_for(link), "fence-1 owns the shard")
        term = first.fence([link])[SHARDS[0]]
        second.start([link], lambda: None)
        first._stop.set()  # its renewals stop: as if frozen
        assert first._thread is not None
        first._thread.join(timeout=5)
        wait_until(lambda: second.acts_for(link), "fence-2 took the shard", seconds=5)
        with pytest.raises(Fenced, match="ran out"):
            first.check([link])
        first._deadline[SHARDS[0]] = time.monotonic() + 10  # even with a wrong clock ...
        with pytest.raises(Fenced, match="no longer this instance's"):
            first.fence([link])  # ... the database says no
        assert second.fence([link]) == {SHARDS[0]: term + 1}
        second.check([link])
    finally:
        second.stop()
        first._deadline.clear()
        first.stop()
