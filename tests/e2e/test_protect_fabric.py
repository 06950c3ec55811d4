"""Protection of a generated fabric, run as operators run it (tests/support/generated_fabric.py):
``msoctl lab topology generate --idle-light``, ``msoctl lab up --topology FILE
--processes 2``, ``msoctl protect run`` in a process of its own protecting every link,
and ``msoctl lab fault cable_cut`` of a working cable.

Two fabrics, one lab each for the module's tests:

- dedicated: 2 campuses, 4 OCS (planes) per campus, 64 links in cables of 16, each link
  with a protection span of its own: a working cable's cut darkens 16 links spread over
  every plane, so every OCS is touched;
- shared: 2 campuses, 2 planes, 8 links in cables of 4, two links to a protection span
  (``--links-per-protection 2``): a cable cut takes both links of two groups.

What is checked is what the journal and the devices hold, not the controller's word for
it: the light at the OCS monitors, the maps read back, the journal's operations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.lab import load_topology
from msoctl.journal import Operation
from msoctl.links import Link
from tests.support.generated_fabric import (
    RECEIVER_LIT_DBM,
    RunningLab,
    arrival_ports,
    generate,
    last_order,
    on_span,
    protection_ops,
    settled,
    told_ready,
    wait,
)

pytestmark = pytest.mark.serial  # a lab in two processes and a controller: alone

WAIT_SECONDS = 30.0
"""Generous for a loaded 2-core machine: a cut is answered in tens of milliseconds."""
WTR_SECONDS = 1.0


def _start(directory: Path, *arguments: str) -> RunningLab:
    topology = directory / "fabric.yaml"
    generate(topology, *arguments)
    running = RunningLab.start(topology, directory / "state", processes=2)
    try:
        running.connect_working()
        log = directory / "protect.log"
        running.protect(log, "--wait-to-restore-s", f"{WTR_SECONDS:g}")
        links = list(running.inventory.links.values())
        wait(lambda: settled(running, links) and told_ready(log),
             "every link protected, both spans lit, the controller ready",
             60.0, lambda: log.read_text()[-1500:])
    except BaseException:
        running.close()
        raise
    return running


@pytest.fixture(scope="module")
def dedicated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningLab]:
    running = _start(tmp_path_factory.mktemp("dedicated"), "--campuses", "2",
                     "--ocs-per-campus", "4", "--links", "64", "--spans-per-cable", "16")
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningLab]:
    running = _start(tmp_path_factory.mktemp("shared"), "--campuses", "2",
                     "--ocs-per-campus", "2", "--links", "8", "--spans-per-cable", "4",
                     "--links-per-protection", "2")
    try:
        yield running
    finally:
        running.close()


def _cable_links(running: RunningLab, cable: str) -> list[Link]:
    spans = set(next(c for c in load_topology(running.topology).cables
                     if c.name == cable).spans)
    return [link for link in running.inventory.links.values() if link.working.name in spans]


def _lit(running: RunningLab, ports: dict[str, set[int]]) -> bool:
    readings = running.powers(ports)
    return all(v is not None and v > RECEIVER_LIT_DBM for v in readings.values())


def test_a_cable_cut_of_16_links_is_one_replace_map_per_ocs_touched(
        dedicated: RunningLab) -> None:
    """G.808.1 (05/2014) clause 7.1 (1+1: a protection span per link), at the scale of a
    cable: the cut of ``cable-1`` (16 working spans, links on every plane) is answered by
    one journaled change naming the 16 links, one whole-map command (SCPI
    ``:OXC:SWIT:CONN:ONLY``) per OCS touched, each link's light verified; the maps read
    back carry every link on its protection span, light arrives where each protection
    span ends; after the repair and the wait-to-restore (clause 15) each link is
    reverted once, and the journal holds nothing open."""
    running = dedicated
    journal = running.journal()
    cut = _cable_links(running, "cable-1")
    assert len(cut) == 16
    touched = {name for link in cut for name in link.ocs_names}
    assert len(touched) == 8  # every OCS of the fabric
    since = last_order(journal)
    running.fault("cable_cut", "cable-1")
    try:
        wait(lambda: [o for o in protection_ops(journal, since, "protection.switch")
                      if not o.is_open], "the switch journaled", WAIT_SECONDS)
        maps = running.maps()
        assert all(on_span(link, "protection", maps) for link in cut)
        assert _lit(running, arrival_ports(cut, "protection"))
    finally:
        running.fault("cable_cut", "cable-1", clear=True)
    switches = protection_ops(journal, since, "protection.switch")
    # (if not: each change whole, as a string, which pytest does not shorten: its links,
    # why its gathering ended, when each link was seen dark, what it found)
    assert len(switches) == 1, "\n".join(
        f"order {o.order} {o.status} links {sorted(o.intent.get('links', []))} gathered "
        f"{o.intent.get('gathered')!r} detected {o.intent.get('detected')!r} result "
        f"{json.dumps(o.result, sort_keys=True, default=str)}" for o in switches)
    change = switches[0]
    assert change.status == "ok", change.result
    assert sorted(change.intent["links"]) == sorted(link.name for link in cut)
    # the lab's inventory names each span's cable: the change went as soon as the last
    # of the cable's links was seen dark, not after a wait for more losses
    assert all(link.working.cable == "cable-1" for link in cut)
    assert change.intent["gathered"] == "every link of cable cable-1 dark"
    assert set(change.result["ocs"]) == touched  # one replace-map per OCS touched
    assert all(entry["changes"] for entry in change.result["ocs"].values())
    per_link = change.result["links"]
    assert set(per_link) == {link.name for link in cut}
    for name, entry in per_link.items():
        assert entry["light_verified"] is not None, name
        assert all(point["lit"] for point in entry["light"].values()), name
    # the reverts follow each link's own wait-to-restore: one or a few changes, each link
    # in exactly one of them (or, a device having timed out on a loaded machine, the
    # change tried again: then the last one naming it)
    def reverted() -> dict[str, str]:
        last: dict[str, str] = {}
        for o in protection_ops(journal, since, "protection.revert"):
            for name in o.intent["links"]:
                last[name] = "open" if o.is_open else o.status
        return last

    wait(lambda: reverted() == {link.name: "ok" for link in cut}, "every link reverted",
         WAIT_SECONDS, lambda: str(reverted()))
    maps = running.maps()
    assert all(on_span(link, "working", maps) for link in running.inventory.links.values())
    assert not [o for o in journal.operations(open_only=True) if o.action != "protection.run"]
    assert not protection_ops(journal, since, "protection.switch")[1:]  # nothing moved twice


def test_a_span_cut_alone_is_acted_on_once_no_other_loss_has_come(
        dedicated: RunningLab) -> None:
    """One span of a cable of 16 cut (``fiber_cut``): its cable is not dark through and
    through, so the loss waits the gathering's moment for the others a cut might bring,
    then moves its link alone; the journal says why the decision went then."""
    running = dedicated
    journal = running.journal()
    (link, *_) = _cable_links(running, "cable-2")
    span = link.working.name
    since = last_order(journal)
    running.fault("fiber_cut", span)
    try:
        wait(lambda: [o for o in protection_ops(journal, since, "protection.switch")
                      if not o.is_open], "the switch journaled", WAIT_SECONDS)
    finally:
        running.fault("fiber_cut", span, clear=True)
    (change,) = protection_ops(journal, since, "protection.switch")
    assert change.status == "ok" and change.intent["links"] == [link.name], change.result
    # (on a loaded machine the loss may be older than the gathering's longest when it is
    # first judged: then it goes at once, and says so)
    assert change.intent["gathered"] in ("no other loss for 10 ms",
                                         "30 ms after the first loss (the most)",
                                         "losses seen 30 ms ago or more: no wait")
    assert change.result["durations_ms"]["hold_off"] >= 10  # GATHER_MIN_SECONDS
    wait(lambda: [o for o in protection_ops(journal, since, "protection.revert")
                  if o.status == "ok"] and on_span(link, "working", running.maps())
         and not [o for o in journal.operations(open_only=True)
                  if o.action != "protection.run"],
         "the link back on its working span, nothing open", WAIT_SECONDS)


def test_links_sharing_a_protection_span_one_moves_the_other_is_refused_naming_it(
        shared: RunningLab) -> None:
    """G.808.1 (05/2014) clause 7.2 (1:n: n working spans share one protection span): a
    cable cut takes both links of two groups; in each group one link moves onto the
    shared span and the other is refused, its refusal naming the link that has the
    span; no span is given to two links."""
    running = shared
    journal = running.journal()
    cut = _cable_links(running, "cable-1")
    groups: dict[str, list[Link]] = {}
    for link in cut:
        assert link.protection is not None
        groups.setdefault(link.protection.name, []).append(link)
    assert sorted(len(g) for g in groups.values()) == [2, 2]
    since = last_order(journal)
    running.fault("cable_cut", "cable-1")
    try:
        # one switch (two, if the cut's losses reached the controller far apart on a
        # loaded machine: changes are pipelined) and two refusals, nothing left open
        wait(lambda: len([o for o in protection_ops(journal, since, "protection.switch")
                          if o.status == "refused"]) >= 2
             and len({name for o in protection_ops(journal, since, "protection.switch")
                      if o.status == "ok" for name in o.intent["links"]}) >= 2
             and not [o for o in protection_ops(journal, since, "protection.switch")
                      if o.is_open], "the switches and two refusals", WAIT_SECONDS)
        maps = running.maps()
        ops = protection_ops(journal, since, "protection.switch")
        moved = [o for o in ops if o.status == "ok"]
        refused = [o for o in ops if o.status == "refused"]
        assert 1 <= len(moved) <= 2 and len(refused) == 2, [(o.status, o.device) for o in ops]
        winners = {name for o in moved for name in o.intent["links"]}
        assert len(winners) == 2, winners  # one per shared span
        for span, members in groups.items():
            on_protection = [link.name for link in members if on_span(link, "protection", maps)]
            assert len(on_protection) == 1, (span, on_protection)
            (winner,) = on_protection
            assert winner in winners
            loser = next(link.name for link in members if link.name != winner)
            refusal = next(o for o in refused if o.device == loser)
            assert refusal.intent["other_link"] == winner
            assert winner in refusal.intent["reason"] and span in refusal.intent["reason"]
    finally:
        running.fault("cable_cut", "cable-1", clear=True)
    wait(lambda: all(on_span(link, "working", running.maps()) for link in cut)
         and not [o for o in journal.operations(open_only=True)
                  if o.action != "protection.run"],
         "every link back on its working span, nothing open", WAIT_SECONDS)


def test_a_loss_during_a_change_is_sent_before_that_change_is_verified(
        shared: RunningLab) -> None:
    """G.808.1 (05/2014) clause 7.1 (1+1), two links of disjoint OCS pairs cut one after
    the other: the second loss, arriving while the first link's change is still being
    carried out (every SCPI reply of its OCSes held back 0.3 s, the ``latency`` fault),
    is answered by a change of its own whose light is verified before the first one's:
    changes are pipelined, not queued behind the one in flight."""
    running = shared
    journal = running.journal()
    links = list(running.inventory.links.values())
    first = links[0]
    second = next(link for link in links
                  if not set(link.ocs_names) & set(first.ocs_names))
    since = last_order(journal)

    def switch_of(link: Link, *, closed: bool) -> list[Operation]:
        return [o for o in protection_ops(journal, since, "protection.switch")
                if link.name in o.intent["links"] and (not closed or not o.is_open)]

    try:
        for name in first.ocs_names:
            running.fault("latency", name, "--seconds", "0.3")
        running.fault("fiber_cut", first.working.name)
        wait(lambda: switch_of(first, closed=False), "the first change journaled",
             WAIT_SECONDS)
        running.fault("fiber_cut", second.working.name)
        wait(lambda: switch_of(first, closed=True) and switch_of(second, closed=True),
             "both changes closed", WAIT_SECONDS)
    finally:
        for name in first.ocs_names:
            running.fault("latency", name, clear=True)
        for link in (first, second):
            running.fault("fiber_cut", link.working.name, clear=True)
    (one,), (two,) = switch_of(first, closed=True), switch_of(second, closed=True)
    assert one.op != two.op and one.status == two.status == "ok", (one.result, two.result)
    assert one.result is not None and two.result is not None
    verified_one = one.result["links"][first.name]["light_verified"]
    verified_two = two.result["links"][second.name]["light_verified"]
    assert two.result["timeline"]["commands_sent"] < verified_one
    assert verified_two < verified_one
    wait(lambda: all(on_span(link, "working", running.maps()) for link in (first, second))
         and not [o for o in journal.operations(open_only=True)
                  if o.action != "protection.run"],
         "both links back on their working spans, nothing open", WAIT_SECONDS)
