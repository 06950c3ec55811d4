"""The ring all-reduce cost model (msoctl/jobs/ringcost.py) against costs worked out by
hand: the pipelined ring's heaviest path of ``2n - 2`` edges, each edge delivering a chunk
``c = S / n`` in ``w = alpha + c / B`` (``B`` its share of what it crosses), which for a
ring of like edges is ``T = 2 (n - 1) / n * S / B + 2 (n - 1) * alpha``.

The fabric of most cases: two campuses, a 400G NIC per host on its campus's switch, the
switches joined by one 400G link over a 30 km span. An edge across it: 3 µs at the ends,
1 µs in each of the two switches, 150 µs in the glass: 155 µs."""

from __future__ import annotations

import pytest

from drivers.errors import ValidationError
from msoctl.compute.gpustate import GpuState, HostState, NicState
from msoctl.hosts import Host, HostNic
from msoctl.jobs.fabric import JobFabric
from msoctl.jobs.plan import Rank, place
from msoctl.jobs.ringcost import (
    RingParameters,
    median_random_seconds,
    pipeline_seconds,
    random_orders,
    ring_cost,
    span_lengths_km,
)
from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber

GBIT = 1e9
SPAN_SECONDS = 155e-6
SIZE = 100_000_000  # 100 MB: 8e8 bits
KM = {"link-1": 30.0}


def host(name: str, campus: str, *, gpus: int = 1, rails: int = 1, port: int = 9) -> Host:
    switch = f"sw-{campus}"
    nics = tuple(HostNic(f"mlx5_{r}", f"0x{abs(hash((name, r))) % 16**16:016x}", switch,
                         f"Ethernet{port + r}", "400G", r) for r in range(rails))
    return Host(name, "nvidia", "H100", gpus, nics, name, campus)


def span(name: str, km: float) -> Span:
    return Span(name, km, 0.2, 0.5, SpanFiber(OcsPort("ocs-a", 121), OcsPort("ocs-b", 61)),
                SpanFiber(OcsPort("ocs-b", 121), OcsPort("ocs-a", 61)))


def link(name: str, port: int = 1, *, km: float = 30.0,
         protection_km: float | None = None) -> Link:
    return Link(name, LinkEnd("sw-a", f"Ethernet{port}", OcsPort("ocs-a", port),
                              OcsPort("ocs-a", 64 + port)),
                LinkEnd("sw-b", f"Ethernet{port}", OcsPort("ocs-b", port),
                        OcsPort("ocs-b", 64 + port)),
                span(f"span-{port}", km),
                None if protection_km is None else span(f"span-p{port}", protection_km))


def fabric(hosts: list[Host], links: list[Link], *, down: tuple[str, ...] = ()) -> JobFabric:
    return JobFabric.build(hosts, {lk.name: lk for lk in links},
                           lambda lk: "down" if lk.name in down else "working", ())


def ranks_of(hosts: list[Host]) -> list[Rank]:
    """Every GPU of ``hosts`` in this order, on the NIC of its rail."""
    ranks: list[Rank] = []
    for each in hosts:
        for gpu in range(each.gpus):
            ranks.append(Rank(len(ranks), each.name, gpu, each.vendor, each.campus,
                              each.nics[gpu % len(each.nics)]))
    return ranks


def four_hosts() -> list[Host]:
    return [host("a1", "a", port=9), host("a2", "a", port=10), host("b1", "b", port=9),
            host("b2", "b", port=10)]


def test_the_planned_order_crosses_the_span_once_each_way_at_full_bandwidth() -> None:
    """a1 a2 b1 b2: one edge each way over link-1, each with the whole 400G. A chunk is
    2e8 bits: 0.5 ms on any edge; an edge within a campus adds 4 µs (the ends, one
    switch), one across the span 155 µs. The heaviest path of 6 edges goes round the
    4-edge ring once and a half, every edge twice but two neighbours (a local edge and a
    span's) once: 2 (2 x 0.504 + 2 x 0.655) - (0.504 + 0.655) = 3.477 ms, where charging
    every step the span's latency (the classic formula) says 3.93 ms."""
    hosts = four_hosts()
    cost = ring_cost(ranks_of(hosts), fabric(hosts, [link("link-1")]), SIZE, span_km=KM)
    assert cost.ranks == 4
    assert cost.bandwidth_bps == pytest.approx(400 * GBIT)
    assert cost.step_latency_seconds == pytest.approx(SPAN_SECONDS)
    assert [edge.latency_seconds for edge in cost.edges] == pytest.approx(
        [4e-6, SPAN_SECONDS, 4e-6, SPAN_SECONDS])
    assert cost.seconds == pytest.approx(2 * (2 * 0.504e-3 + 2 * 0.655e-3) - 1.159e-3)
    assert sum(edge.span_km > 0 for edge in cost.edges) == 2


def test_an_interleaved_order_crosses_it_four_times_and_halves_the_bandwidth() -> None:
    """a1 b1 a2 b2: every edge crosses; two go each way over the one link, at 200G each.
    A ring of like edges: the classic formula, 2 x 3/4 x 8e8 / 200e9 + 6 x 155 µs."""
    a1, a2, b1, b2 = four_hosts()
    order = ranks_of([a1, b1, a2, b2])
    cost = ring_cost(order, fabric([a1, a2, b1, b2], [link("link-1")]), SIZE, span_km=KM)
    assert cost.bandwidth_bps == pytest.approx(200 * GBIT)
    assert cost.seconds == pytest.approx(6e-3 + 6 * SPAN_SECONDS)
    narrowest = cost.narrowest
    assert narrowest is not None and narrowest.bottleneck.startswith("link-1 from sw-")
    assert narrowest.bottleneck.endswith(", shared by 2 edges")


def test_a_second_link_between_the_campuses_takes_the_interleaved_order_back_to_the_nics(
        ) -> None:
    """Two 400G links: 800G each way, shared by two edges, 400G each: the NICs bound it."""
    a1, a2, b1, b2 = four_hosts()
    both = fabric([a1, a2, b1, b2], [link("link-1"), link("link-2", 2)])
    cost = ring_cost(ranks_of([a1, b1, a2, b2]), both, SIZE,
                     span_km={"link-1": 30.0, "link-2": 30.0})
    assert cost.bandwidth_bps == pytest.approx(400 * GBIT)
    assert cost.narrowest is not None and "NIC" in cost.narrowest.bottleneck
    assert cost.seconds == pytest.approx(3e-3 + 6 * SPAN_SECONDS)


def test_the_longest_parallel_span_sets_the_latency() -> None:
    a1, a2, b1, b2 = four_hosts()
    both = fabric([a1, a2, b1, b2], [link("link-1"), link("link-2", 2)])
    cost = ring_cost(ranks_of([a1, a2, b1, b2]), both, SIZE,
                     span_km={"link-1": 30.0, "link-2": 40.0})
    assert cost.step_latency_seconds == pytest.approx(3e-6 + 2e-6 + 40 * 5e-6)


def test_ranks_of_one_host_talk_at_the_hosts_own_bandwidth_and_share_its_nic_outside() -> None:
    """Two hosts of two GPUs, one NIC each. In host order the edges between a host's GPUs
    run at 450 GB/s in 2 µs; one edge leaves each NIC: 400G. Alternating hosts, both of
    a host's ranks send out of its one NIC at once: 200G each."""
    a1, b1 = host("a1", "a", gpus=2), host("b1", "b", gpus=2)
    both = fabric([a1, b1], [link("link-1")])
    in_order = ranks_of([a1, b1])
    cost = ring_cost(in_order, both, SIZE, span_km=KM)
    assert [edge.route is None for edge in cost.edges] == [True, False, True, False]
    assert cost.edges[0].bandwidth_bps == pytest.approx(3.6e12)
    assert cost.edges[0].latency_seconds == pytest.approx(2e-6)
    assert cost.bandwidth_bps == pytest.approx(400 * GBIT)
    alternating = [in_order[0], in_order[2], in_order[1], in_order[3]]
    shared = ring_cost(alternating, both, SIZE, span_km=KM)
    assert shared.bandwidth_bps == pytest.approx(200 * GBIT)


def test_parameters_change_the_ends_the_switches_and_the_hosts_own_links() -> None:
    hosts = four_hosts()
    slow = RingParameters(host_seconds=10e-6, switch_seconds=5e-6)
    cost = ring_cost(ranks_of(hosts), fabric(hosts, [link("link-1")]), SIZE, span_km=KM,
                     parameters=slow)
    assert cost.step_latency_seconds == pytest.approx(10e-6 + 2 * 5e-6 + 150e-6)


def test_one_rank_costs_nothing_and_two_ranks_are_one_edge_each_way() -> None:
    a1, _, b1, _ = four_hosts()
    lone = ring_cost(ranks_of([a1]), fabric([a1], []), SIZE, span_km={})
    assert lone.seconds == 0.0 and lone.ranks == 1
    pair = ring_cost(ranks_of([a1, b1]), fabric([a1, b1], [link("link-1")]), SIZE, span_km=KM)
    assert pair.ranks == 2 and pair.bandwidth_bps == pytest.approx(400 * GBIT)
    assert pair.seconds == pytest.approx(2 * 1 / 2 * 8e8 / 400e9 + 2 * SPAN_SECONDS)


@pytest.mark.parametrize(("size", "words"), [(0, "must be 1 byte..1 PB"),
                                             (2**51, "must be 1 byte..1 PB")])
def test_a_size_out_of_range_is_refused(size: int, words: str) -> None:
    hosts = four_hosts()
    with pytest.raises(ValidationError, match=words):
        ring_cost(ranks_of(hosts), fabric(hosts, [link("link-1")]), size, span_km=KM)


def test_a_rank_given_twice_is_refused() -> None:
    hosts = four_hosts()
    ranks = ranks_of(hosts)
    with pytest.raises(ValidationError, match="a1 GPU 0 is in it twice"):
        ring_cost([*ranks, ranks[0]], fabric(hosts, [link("link-1")]), SIZE, span_km=KM)


def test_ranks_the_fabric_does_not_join_are_named() -> None:
    hosts = four_hosts()
    dark = fabric(hosts, [link("link-1")], down=("link-1",))
    with pytest.raises(ValidationError, match=r"ranks 1 \(a2 mlx5_0\) and 2 \(b1 mlx5_0\): "
                                              "the fabric does not join them now"):
        ring_cost(ranks_of(hosts), dark, SIZE, span_km=KM)


def test_a_link_of_unknown_length_is_named() -> None:
    hosts = four_hosts()
    with pytest.raises(ValidationError, match="link link-1: the length of its span"):
        ring_cost(ranks_of(hosts), fabric(hosts, [link("link-1")]), SIZE, span_km={})


def test_span_lengths_follow_the_span_each_link_is_carried_on() -> None:
    links = {"link-1": link("link-1", km=30.0, protection_km=42.0),
             "link-2": link("link-2", 2, km=31.0), "link-3": link("link-3", 3)}
    roles = {"link-1": "protection", "link-2": "working", "link-3": None}
    assert span_lengths_km(links, lambda lk: roles[lk.name]) == {"link-1": 42.0,
                                                                  "link-2": 31.0}


def test_random_orders_are_reproducible_permutations_and_cost_more_than_the_plan() -> None:
    """The planner's order over six hosts on two campuses crosses the span twice; the
    median of random orders crosses it more, so costs more."""
    hosts = [host(f"a{i}", "a", port=8 + i) for i in (1, 2, 3)] + \
            [host(f"b{i}", "b", port=8 + i) for i in (1, 2, 3)]
    states = [HostState(h, (GpuState(h.name, 0, True),), (NicState(h.name, "mlx5_0", True),))
              for h in hosts]
    planned = place(states, 6).ranks
    orders = random_orders(planned, 20, seed=3)
    assert orders == random_orders(planned, 20, seed=3)
    assert all(sorted(r.host for r in order) == sorted(r.host for r in planned)
               for order in orders)
    assert len({tuple(r.host for r in order) for order in orders}) > 1
    net = fabric(hosts, [link("link-1")])
    plan_seconds = ring_cost(planned, net, SIZE, span_km=KM).seconds
    assert median_random_seconds(planned, net, SIZE, span_km=KM, seed=3) > plan_seconds
    assert min(ring_cost(order, net, SIZE, span_km=KM).seconds for order in orders) \
        == pytest.approx(plan_seconds)  # some random orders happen to cross only twice


def test_the_pipeline_is_its_heaviest_path_and_beyond_the_exact_size_its_two_bounds() -> None:
    """Four edges delivering in 10, 1, 5.5 and 1 (one slow sender, 5, at rank 2; the
    others 0.1). The heaviest path of five steps and a delivery (of the 4 x 2^5, each
    step a send where the rank is or a move along the ring): e0, e1, a send at rank 2,
    e2, e3, e0 again: 10 + 1 + 5 + 5.5 + 1 + 10 = 32.5. Its two bounds, the model's
    beyond the exact size: round twice, 2 x 17.5 - (5.5 + 1) = 28.5; the slow sender
    alone, 5 x 5 + 5.5 = 30.5."""
    deliveries, sends = [10.0, 1.0, 5.5, 1.0], [0.1, 0.1, 5.0, 0.1]
    assert pipeline_seconds(deliveries, sends) == pytest.approx(32.5)
    assert pipeline_seconds(deliveries, sends, exact_ranks=3) == pytest.approx(30.5)
    like = [2.0] * 6
    assert pipeline_seconds(like, [1.0] * 6) == pytest.approx(10 * 2.0)  # 2 (n - 1) w
    assert pipeline_seconds(like, [1.0] * 6, exact_ranks=1) == pytest.approx(20.0)
    assert pipeline_seconds([3.0], [1.0]) == 0.0
