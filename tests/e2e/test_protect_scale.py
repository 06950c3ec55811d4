"""One controller, many links (msoctl/protect/): a cable cut answered with one whole-map
command per OCS, consistent decisions when protection capacity is short, and polling that
stays within the message budget per OCS, counted at the emulated OCS itself.

One lab for the module (tests/protect_fabric.py: 12 links between ocs-a and ocs-b,
link-1..8 with a protection span each, link-9..12 two to a protection span, as in a 1:n
protection group) and one controller running on it, with the default budget of 50
messages a second per OCS. Every test starts from every link on its working span, both
spans lit, and leaves the fabric so (repairs, then waits for the reverts).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from msoctl.protect.allocate import CAPACITY, DARK, TAKEN
from msoctl.protect.config import ProtectConfig
from tests.support.lab import wait_until
from tests.support.protect_fabric import (
    ProtectedFabric,
    cut,
    cut_cable,
    fabric_topology,
    protected,
    repair_cable,
)

pytestmark = pytest.mark.serial  # real-time bounds are the subject: alone on the machine

LINKS = 12
DEDICATED = [f"link-{i}" for i in range(1, 9)]
BUDGET = 50.0
WTR_SECONDS = 0.3


class Fabric(ProtectedFabric):
    def ops(self, action: str, since: int) -> list[object]:
        return [o for o in self.journal.operations(action=action) if o.order > since]

    def last_order(self) -> int:
        last = self.journal.last()
        return 0 if last is None else last.order


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    directory = tmp_path_factory.mktemp("scale")
    topology = fabric_topology(directory, LINKS, protection=[*range(1, 9), 9, 9, 10, 10])
    config = ProtectConfig(wait_to_restore_seconds=WTR_SECONDS, ocs_messages_per_second=BUDGET)
    with protected(Fabric, directory, topology, config, settle_seconds=20) as found:
        yield found


@pytest.fixture
def settled(fabric: Fabric) -> Iterator[Fabric]:
    """The fabric as every test finds it, and is checked to leave it."""
    assert fabric.settled()
    yield fabric
    repair_cable(fabric.lab, [c.name for c in fabric.lab.topology.cables])
    fabric.until(fabric.settled, "every link back on its working span", seconds=15)


def test_a_cable_cut_of_eight_links_is_one_whole_map_command_per_ocs(settled: Fabric) -> None:
    """G.808.1 (05/2014) clause 7.1 (1+1 architecture, here one protection span per
    link): eight links lose their working spans at once (one cable); the controller
    answers in one evaluation, with one replace-map command (SCPI ``:OXC:SWIT:CONN:ONLY``)
    per OCS carrying all eight moves, and verifies the light of each link."""
    fabric = settled
    since, mark = fabric.last_order(), fabric.events.mark()
    before = {name: fabric.lab.ocs[name].requests.commands["connect_only"]
              for name in ("ocs-a", "ocs-b")}
    with cut(fabric.lab, [fabric.inventory.link(n).working.name for n in DEDICATED]):
        switched = fabric.events.wait("switch", DEDICATED, since=mark)
        replaced = {name: fabric.lab.ocs[name].requests.commands["connect_only"] - before[name]
                    for name in before}
        assert replaced == {"ocs-a": 1, "ocs-b": 1}, replaced
        assert {e.details["links_in_change"] for e in switched} == {8}
        assert len({e.op for e in switched}) == 1  # one journaled change for all of them
        for event in switched:
            assert event.details["to_span"] == fabric.inventory.link(event.link).protection.name
            assert event.durations_ms["verification"] is not None
        for number in range(1, 9):  # the light arrives at each link's receivers
            assert fabric.lab.optics.power_dbm(f"sw-b:rx{number}") > -15
            assert fabric.lab.optics.power_dbm(f"sw-a:rx{number}") > -15
        changes = fabric.ops("protection.switch", since)
        assert len(changes) == 1
        change = changes[0]
        assert change.status == "ok" and sorted(change.intent["links"]) == sorted(DEDICATED)
        per_link = change.result["links"]
        assert set(per_link) == set(DEDICATED)
        assert all(v["light_verified"] is not None for v in per_link.values())
        assert set(change.result["ocs"]) == {"ocs-a", "ocs-b"}


def test_links_sharing_a_protection_span_one_moves_and_the_other_is_told_why(
        settled: Fabric) -> None:
    """G.808.1 (05/2014) clauses 7.2 (1:n architecture: n working entities share one
    protection entity) and 21 (priority): link-9 and link-10 share prot-9 and lose their
    working spans together; one moves onto it, the other stays down, its refusal naming
    the link that has the span; a third loss on an already taken span is refused as
    taken. No span is ever given to two links."""
    fabric = settled
    since, mark = fabric.last_order(), fabric.events.mark()
    pair = ["link-9", "link-10"]
    with cut(fabric.lab, [fabric.inventory.link(n).working.name for n in pair]):
        fabric.until(lambda: fabric.events.of("switch", pair)
                     and fabric.events.of("unavailable", pair), "one moved, one refused")
        time.sleep(0.3)  # time for a wrong second move, were there one
        moved = [e for e in fabric.events.events[mark:] if e.kind == "switch"
                 and e.link in pair]
        assert len(moved) == 1, moved
        winner = moved[0].link
        loser = next(n for n in pair if n != winner)
        refusal = next(e for e in fabric.events.events[mark:] if e.kind == "unavailable"
                       and e.link == loser)
        assert refusal.details["refusal"] == CAPACITY
        assert refusal.details["other_link"] == winner
        assert winner in refusal.message and "prot-9" in refusal.message
        records = [o for o in fabric.journal.operations(action="protection.switch")
                   if o.order > since and o.status == "refused" and o.device == loser]
        assert len(records) == 1 and records[0].intent["other_link"] == winner
        status = {s["link"]: s for s in fabric.controller.status()}
        assert status[winner]["active_span"] == "prot-9"
        assert status[loser]["active_span"] == fabric.inventory.link(loser).working.name
        # first "prot-9 went to <winner>", then, once it is there, "taken by <winner>"
        assert winner in (status[loser]["unavailable"] or "")
    # link-11 moves onto prot-10; then link-12, which shares it, loses its span too
    mark = fabric.events.mark()
    with cut(fabric.lab, ["work-11"]):
        fabric.events.wait("switch", ["link-11"], since=mark)
        with cut(fabric.lab, ["work-12"]):
            taken = fabric.events.wait("unavailable", ["link-12"], since=mark)[0]
            assert taken.details["refusal"] == TAKEN
            assert taken.details["other_link"] == "link-11"
            assert "prot-10 is taken by link-11" in taken.message
    # a dark protection span: its own cut first, then the working span's
    fabric.until(fabric.settled, "back on the working spans", seconds=15)
    mark = fabric.events.mark()
    with cut(fabric.lab, ["prot-1"]):
        fabric.until(lambda: {s["link"]: s for s in fabric.controller.status()}["link-1"]
                     ["protection"]["light"] == "lost", "prot-1 seen dark")
        with cut(fabric.lab, ["work-1"]):
            dark = fabric.events.wait("unavailable", ["link-1"], since=mark)[0]
            assert dark.details["refusal"] == DARK and "prot-1 is" in dark.message
            time.sleep(0.3)
            assert not [e for e in fabric.events.events[mark:] if e.kind == "switch"]


def test_polling_stays_within_the_budget_counted_at_each_ocs(settled: Fabric) -> None:
    """The rate every OCS is assumed to answer (50 program messages a second; IEEE 488.2
    program messages, one per line), counted by the emulated OCS for every message it
    receives from every client: no second holds more, with the controller watching all
    12 links, before a cut, through a cut of eight links with its moves and light
    checks, and after."""
    fabric = settled
    lab = fabric.lab
    start = {name: lab.ocs[name].clock.now() for name in ("ocs-a", "ocs-b")}
    time.sleep(2.0)
    mark = fabric.events.mark()
    with cut(lab, [fabric.inventory.link(n).working.name for n in DEDICATED]):
        fabric.events.wait("switch", DEDICATED, since=mark)
        time.sleep(1.0)
    wait_until(fabric.settled, "back on the working spans", seconds=15)
    for name, since in start.items():
        requests = lab.ocs[name].requests
        busiest = requests.most_in_window(1.0, since=since)
        assert 0 < busiest <= BUDGET, (name, busiest)
        seconds = lab.ocs[name].clock.now() - since
        # the polls themselves: one power query per poll covering every watched port
        assert requests.between(since, since + seconds) <= BUDGET * seconds


def test_a_cut_and_its_repair_under_load_leave_no_operation_open(settled: Fabric) -> None:
    """What the journal holds after a cut of every link with a span of its own: one
    switch and one revert each, all closed (G.808.1 (05/2014) clause 15, wait-to-restore:
    the reverts come after it)."""
    fabric = settled
    since = fabric.last_order()
    mark = fabric.events.mark()
    cut_cable(fabric.lab, [fabric.inventory.link(n).working.name for n in DEDICATED])
    fabric.events.wait("switch", DEDICATED, since=mark)
    repaired = time.monotonic()
    repair_cable(fabric.lab, [fabric.inventory.link(n).working.name for n in DEDICATED])
    reverts = fabric.events.wait("revert", DEDICATED, since=mark, seconds=15)
    assert all(e.at - repaired >= WTR_SECONDS for e in reverts)
    wait_until(fabric.settled, "back on the working spans", seconds=15)
    moves = [o for o in fabric.journal.operations(action_prefix="protection.")
             if o.order > since and o.action in ("protection.switch", "protection.revert")
             and o.status == "ok"]
    for name in DEDICATED:
        mine = [o for o in moves if name in o.intent["links"]]
        assert [o.action for o in mine] == ["protection.switch", "protection.revert"], name
    assert not [o for o in fabric.journal.operations(open_only=True)
                if o.action != "protection.run"]
