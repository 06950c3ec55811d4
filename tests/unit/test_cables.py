"""Cables while a cut's losses are gathered (msoctl/protect/cables.py): a cable is done
being cut, for the decision, once every link it carries now has its loss seen; the
readings alone can say when judging again could find that."""

from __future__ import annotations

from dataclasses import dataclass

from msoctl.links import Link, SpanFiber
from msoctl.protect.cables import Cables
from tests.support.cables import cable_links

THRESHOLD_DBM = -20.0


@dataclass
class State:
    link: Link
    mapped_role: str | None = "working"
    loss_since: float | None = None
    drained: bool = False


def test_a_cable_is_all_lost_once_every_link_it_carries_now_has_its_loss_seen() -> None:
    links = cable_links()
    cables = Cables(links)
    states = {link.name: State(link) for link in links}
    idle = lambda name: False  # noqa: E731
    assert cables.of([links[0].working, links[1].working]) == frozenset({"east"})
    assert cables.of([links[0].working, links[3].working]) is None  # x-4: no cable
    assert not cables.all_lost({"east"}, states, idle)
    states["link-1"].loss_since = 1.0
    assert not cables.all_lost({"east"}, states, idle)  # link-2 still lit
    states["link-2"].loss_since = 1.001
    # link-3's protection span e-3 is in east, but link-3 is on its working span in west
    assert cables.all_lost({"east"}, states, idle)
    assert not cables.all_lost({"east", "west"}, states, idle)
    # on its protection span (e-3), link-3 rides east: east is not all lost without it
    states["link-3"].mapped_role = "protection"
    assert not cables.all_lost({"east"}, states, idle)
    # unless it is drained or in a change
    states["link-3"].drained = True
    assert cables.all_lost({"east"}, states, idle)
    states["link-3"].drained = False
    assert cables.all_lost({"east"}, states, lambda name: name == "link-3")
    # a link on no span the maps show may be lit on the cable: not known to be lost
    states["link-3"].mapped_role = None
    assert not cables.all_lost({"east"}, states, idle)


def test_the_readings_say_a_cable_is_dark_when_each_link_not_judged_lost_reads_dark() -> None:
    links = cable_links()
    cables = Cables(links)
    states = {link.name: State(link) for link in links}
    idle = lambda name: False  # noqa: E731
    powers: dict[tuple[str, int], float | None] = {("ocs-a", port): -3.0
                                                   for port in range(1, 129)}
    powers |= {("ocs-b", port): -3.0 for port in range(1, 129)}

    def reading(ocs: str, port: int) -> float | None:
        return powers.get((ocs, port))

    def threshold(fiber: SpanFiber) -> float | None:
        return THRESHOLD_DBM

    assert not cables.dark({"east"}, states, idle, reading, threshold)
    powers[("ocs-b", 11)] = -40.0  # e-1's a->b far end: link-1 dark
    assert not cables.dark({"east"}, states, idle, reading, threshold)
    powers[("ocs-a", 12)] = None  # e-2's b->a far end, no light at all: link-2 dark
    assert cables.dark({"east"}, states, idle, reading, threshold)
    # a link judged lost already needs no dark reading
    powers[("ocs-b", 11)] = -3.0
    assert not cables.dark({"east"}, states, idle, reading, threshold)
    states["link-1"].loss_since = 1.0
    assert cables.dark({"east"}, states, idle, reading, threshold)
    # a far end whose threshold is not known yet (behind an amplifier) reads nothing
    states["link-1"].loss_since = None
    powers[("ocs-b", 11)] = -40.0
    assert not cables.dark({"east"}, states, idle, reading, lambda fiber: None)
    # on its protection span (e-3), link-3 rides east, lit
    states["link-3"].mapped_role = "protection"
    assert not cables.dark({"east"}, states, idle, reading, threshold)
    powers[("ocs-a", 13)] = -25.0
    assert cables.dark({"east"}, states, idle, reading, threshold)
    states["link-3"].mapped_role = None  # on no span the maps show: maybe lit on east
    assert not cables.dark({"east"}, states, idle, reading, threshold)
