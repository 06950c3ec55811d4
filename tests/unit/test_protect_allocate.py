"""Which span carries which link, read from the OCS maps (msoctl/protect/allocate.py,
``Carriers``): the question allocation asks of every candidate's target span."""

from __future__ import annotations

from msoctl.links import OcsPort, Span, SpanFiber
from msoctl.protect.allocate import Carriers

# ocs-a (8x8) egress 12 -> ocs-b ingress 4 (A->B), ocs-b egress 13 -> ocs-a ingress 5 (B->A)
SPAN = Span("prot-1", 10.0, 0.22, 0.5,
            a_to_b=SpanFiber(OcsPort("ocs-a", 12), OcsPort("ocs-b", 4)),
            b_to_a=SpanFiber(OcsPort("ocs-b", 13), OcsPort("ocs-a", 5)))
TRANSMITTERS = {"ocs-a": {1: "link-1", 2: "link-2"}, "ocs-b": {1: "link-1", 2: "link-2"}}
RECEIVERS = {"ocs-a": {9: "link-1", 10: "link-2"}, "ocs-b": {9: "link-1", 10: "link-2"}}


def test_a_span_is_carried_by_the_link_whose_transmitter_feeds_it() -> None:
    maps = {"ocs-a": {2: 12, 3: 14}, "ocs-b": {}}
    assert Carriers(maps, TRANSMITTERS, RECEIVERS)(SPAN) == "link-2"
    maps = {"ocs-a": {}, "ocs-b": {1: 13}}  # the B->A fiber, fed at ocs-b
    assert Carriers(maps, TRANSMITTERS, RECEIVERS)(SPAN) == "link-1"


def test_a_span_is_carried_by_the_link_whose_receiver_it_feeds() -> None:
    maps = {"ocs-a": {5: 9}, "ocs-b": {}}  # ocs-a:5 (the B->A fiber's end) -> link-1's rx
    assert Carriers(maps, TRANSMITTERS, RECEIVERS)(SPAN) == "link-1"
    maps = {"ocs-a": {}, "ocs-b": {4: 10}}
    assert Carriers(maps, TRANSMITTERS, RECEIVERS)(SPAN) == "link-2"


def test_a_span_fed_by_no_link_or_seen_through_unknown_maps_is_free() -> None:
    # ocs-a:3 feeds it, but port 3 is no link's transmitter: a probe, a test set
    assert Carriers({"ocs-a": {3: 12}, "ocs-b": {}}, TRANSMITTERS, RECEIVERS)(SPAN) is None
    assert Carriers({"ocs-a": None, "ocs-b": None}, TRANSMITTERS, RECEIVERS)(SPAN) is None
    assert Carriers({}, TRANSMITTERS, RECEIVERS)(SPAN) is None


def test_each_map_is_turned_around_once_for_all_the_questions() -> None:
    class Counting(dict[int, int]):
        walked = 0

        def items(self):  # type: ignore[no-untyped-def]
            Counting.walked += 1
            return super().items()

    maps = {"ocs-a": Counting({2: 12}), "ocs-b": Counting()}
    carriers = Carriers(maps, TRANSMITTERS, RECEIVERS)
    for _ in range(5):
        assert carriers(SPAN) == "link-2"
    assert Counting.walked == 1
