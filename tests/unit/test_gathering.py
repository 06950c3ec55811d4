"""The decision loop's gathering of a cut's losses (ProtectionController._gathering): a
cable whose every link has its loss seen ends the gathering only once each of those links
the controller may decide for is a candidate of the same evaluation.

Seen in a fresh-clone run: a 16-link cable cut answered in two changes. Half the links'
losses were seen first; when the other half came, the first half's readings were not
fresh (a late poll), so they were judged nothing that time, while their losses, seen
before, made the cable "all lost": the change went with the second half alone."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from msoctl.protect.allocate import Candidate
from msoctl.protect.cables import Cables
from msoctl.protect.controller import ProtectionController, _LinkState
from tests.support.cables import cable_links


def bare_controller(links: list[Any]) -> ProtectionController:
    """The controller's state that _gathering reads, without devices or threads."""
    controller = ProtectionController.__new__(ProtectionController)
    controller._states = {link.name: _LinkState(link=link, mapped_role="working", owned=True)
                          for link in links}
    controller._cables = Cables(links)
    controller._in_flight = {}
    controller._lock = threading.Lock()
    controller._watches = {}
    return controller


def candidate(link: Any, detected: float) -> Candidate:
    return Candidate(link, "working", "protection", detected, "cut", ())


def test_a_cable_all_lost_waits_for_a_link_judged_nothing_this_time() -> None:
    links = cable_links()
    controller = bare_controller(links)
    states = controller._states
    link1, link2 = links[0], links[1]  # both work over cable east
    states["link-1"].loss_since = 1.000
    states["link-2"].loss_since = 1.015
    # link-1's reading is stale now: only link-2 is a candidate of this evaluation, seen
    # 15 ms ago (past the gathering's least and its quiet time); link-1's loss, 30 ms
    # ago at most, holds it
    assert controller._gathering([candidate(link2, 1.015)], 1.029)
    assert controller._gathered is None
    # again 2 ms on, but no later than 30 ms after link-1's loss
    assert controller._gather_until == pytest.approx(1.030)
    # link-1 judged fresh again: the cable is whole, and the change goes with both
    assert not controller._gathering([candidate(link1, 1.000), candidate(link2, 1.015)],
                                     1.030)
    assert controller._gathered == "every link of cable east dark"
    # link-1 never judged fresh: 30 ms after its loss, the change goes without it
    assert not controller._gathering([candidate(link2, 1.015)], 1.031)
    assert controller._gathered == ("30 ms after the first loss (the most), with 1 lost "
                                    "link of the cable not judged fresh")


def test_a_link_the_controller_may_not_decide_for_is_not_waited_for() -> None:
    links = cable_links()
    controller = bare_controller(links)
    states = controller._states
    states["link-1"].loss_since = 1.000
    states["link-2"].loss_since = 1.001
    states["link-1"].owned = False  # another instance's shard: followed, never decided
    assert not controller._gathering([candidate(links[1], 1.001)], 1.002)
    assert controller._gathered == "every link of cable east dark"
    states["link-1"].owned = True
    states["link-1"].retry_after = 5.0  # a move of it failed: tried again later
    assert not controller._gathering([candidate(links[1], 1.001)], 1.002)
    assert controller._gathered == "every link of cable east dark"
