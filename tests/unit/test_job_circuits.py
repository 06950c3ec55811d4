"""``msoctl job circuits``' plan (msoctl/jobs/circuits.py): one link per ring NIC pair
between two switches, dark links lit in name order, drained and unreadable ones left
alone."""

from __future__ import annotations

from msoctl.hosts import Host, HostNic
from msoctl.jobs.circuits import light_intent, plan_circuits, undo_intent
from msoctl.jobs.registry import Job
from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber

GUIDS = iter(range(1, 1000))


def _host(name: str, switch: str, rails: int = 2) -> Host:
    nics = tuple(HostNic(f"mlx5_{r}", f"0x1070fd03{next(GUIDS):08x}", switch,
                         f"Ethernet{9 + r}", "400G", r) for r in range(rails))
    return Host(name, "nvidia", "H100", 4, nics, name, switch[-1])


def _link(number: int, a: str = "sw-a", b: str = "sw-b") -> Link:
    span = Span(f"span-{number}", 30, 0.2, 0.5,
                SpanFiber(OcsPort("ocs-a", 120 + number), OcsPort("ocs-b", 60 + number)),
                SpanFiber(OcsPort("ocs-b", 120 + number), OcsPort("ocs-a", 60 + number)))
    return Link(f"link-{number}", LinkEnd(a, f"Ethernet{number}", OcsPort("ocs-a", number),
                                          OcsPort("ocs-a", 64 + number)),
                LinkEnd(b, f"Ethernet{number}", OcsPort("ocs-b", number),
                        OcsPort("ocs-b", 64 + number)), span)


def _job(*hosts: tuple[str, list[str]]) -> Job:
    entries = [{"name": name, "nics": nics, "first_rank": 4 * i, "gpus": [0, 1, 2, 3]}
               for i, (name, nics) in enumerate(hosts)]
    return Job("llm", "2026-12-07T00:00:00.000Z", "root", "op", {"hosts": entries,
                                                                  "links": []})


HOSTS = {h.name: h for h in (_host("a1", "sw-a"), _host("a2", "sw-a"), _host("b1", "sw-b"),
                             _host("b2", "sw-b"))}
BOTH = ["mlx5_0", "mlx5_1"]


def test_each_ring_pair_between_the_switches_gets_a_dark_link_in_name_order() -> None:
    """a1 a2 b1 b2: the ring crosses sw-a/sw-b twice (a2->b1, b2->a1), on two rails: four
    NIC pairs. Three dark links: all lit, one pair short."""
    links = {link.name: link for link in map(_link, (1, 2, 3))}
    carried = dict.fromkeys(links, "down")
    plan = plan_circuits(_job(("a1", BOTH), ("a2", BOTH), ("b1", BOTH), ("b2", BOTH)),
                         HOSTS, links, carried, [])
    [pair] = plan.pairs
    assert (pair.switches, pair.edges, pair.light, pair.short) == (
        ("sw-a", "sw-b"), 4, ("link-1", "link-2", "link-3"), 1)
    assert plan.light == ["link-1", "link-2", "link-3"]


def test_links_in_service_count_and_spare_dark_ones_stay_dark() -> None:
    """One rail used: a1 -> b1 and back is one NIC pair; link-2 in service covers it."""
    links = {link.name: link for link in map(_link, (1, 2, 3))}
    carried = {"link-1": "down", "link-2": "protection", "link-3": "down"}
    plan = plan_circuits(_job(("a1", ["mlx5_0"]), ("b1", ["mlx5_0"])), HOSTS, links,
                         carried, [])
    [pair] = plan.pairs
    assert (pair.edges, pair.in_service, pair.light, pair.spare, pair.short) == (
        1, ("link-2",), (), ("link-1", "link-3"), 0)


def test_drained_and_unreadable_links_are_left_alone() -> None:
    links = {link.name: link for link in map(_link, (1, 2, 3))}
    carried = {"link-1": "down", "link-2": None, "link-3": "down"}
    plan = plan_circuits(_job(("a1", BOTH), ("b1", BOTH)), HOSTS, links, carried,
                         ["link-1"])
    [pair] = plan.pairs
    assert (pair.drained, pair.unknown, pair.light, pair.short) == (
        ("link-1",), ("link-2",), ("link-3",), 1)


def test_a_ring_on_one_switch_or_links_elsewhere_give_nothing() -> None:
    links = {"link-1": _link(1, "sw-c", "sw-d")}
    assert plan_circuits(_job(("a1", BOTH), ("a2", BOTH)), HOSTS, links,
                         {"link-1": "down"}, []).pairs == []
    plan = plan_circuits(_job(("a1", BOTH), ("b1", BOTH), ("gone", BOTH)), HOSTS, links,
                         {"link-1": "down"}, [])
    assert plan.missing_hosts == ["gone"] and plan.light == []
    assert plan.pairs[0].short == 2  # no link joins sw-a and sw-b at all


def test_the_intents_light_and_take_down_the_links_named() -> None:
    assert light_intent(["link-1", "link-3"]) == \
        "links:\n  link-1: {span: working}\n  link-3: {span: working}\n"
    assert undo_intent(["link-1"]) == "links:\n  link-1: {state: down}\n"
