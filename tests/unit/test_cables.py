"""Cables while a cut's losses are gathered (msoctl/protect/cables.py): a cable is done
being cut, for the decision, once every link it carries now has its loss seen; the
readings alone can say when judging again could find that."""

from __future__ import annotations

from dataclasses import dataclass

from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber
from msoctl.protect.cables import Cables

THRESHOLD_DBM = -20.0


@dataclass
class State:
    link: Link
    mapped_role: str | None = "working"
    loss_since: float | None = None
    drained: bool = False


def _links() -> list[Link]:
    """link-1..4 between ocs-a and ocs-b: link-1 and link-2 work over cable east (spans
    e-1, e-2) and are protected over cable west (w-1, w-2); link-3 works over west (w-3)
    and is protected over east (e-3); link-4 works over a span in no cable (x-4)."""

    def span(name: str, port: int, cable: str | None) -> Span:
        return Span(name, 30, 0.2, 0.5,
                    SpanFiber(OcsPort("ocs-a", port + 64), OcsPort("ocs-b", port)),
                    SpanFiber(OcsPort("ocs-b", port + 64), OcsPort("ocs-a", port)), cable)

    def link(n: int, working: Span, protection: Span) -> Link:
        return Link(f"link-{n}",
                    LinkEnd("sw-a", f"Ethernet{n}", OcsPort("ocs-a", n), OcsPort("ocs-a", 32 + n)),
                    LinkEnd("sw-b", f"Ethernet{n}", OcsPort("ocs-b", n), OcsPort("ocs-b", 32 + n)),
                    working, protection)

    return [link(1, span("e-1", 11, "east"), span("w-1", 21, "west")),
            link(2, span("e-2", 12, "east"), span("w-2", 22, "west")),
            link(3, span("w-3", 23, "west"), span("e-3", 13, "east")),
            link(4, span("x-4", 14, None), span("w-4", 24, "west"))]


def test_a_cable_is_all_lost_once_every_link_it_carries_now_has_its_loss_seen() -> None:
    links = _links()
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
    links = _links()
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
