"""What a ring all-reduce costs over the fabric as msoctl knows it, for one order of ranks.

A ring all-reduce of ``S`` bytes over ``n`` ranks is a reduce-scatter then an all-gather,
``n - 1`` steps each: at every step each rank sends one chunk of ``c = S / n`` bytes to
the next rank, and the chunk it sends at a step is the one it received at the step
before (with its own added in). Where every edge of the ring is alike, each step costs
an edge's latency and a chunk's transfer, and

    T = 2 (n - 1) / n * S / B  +  2 (n - 1) * alpha

(the classic ring model: Patarasuk and Yuan, 2009). On a fabric the edges differ: a few
cross a 30 km span, the others a switch. With its receives posted ahead (NCCL keeps its
buffers posted), a rank waits for nobody but the chunk it forwards, so the ring runs as
a pipeline, and charging every step the slowest edge's latency (as the formula does with
the worst edge's ``alpha``) overstates it: a chunk crosses the span on only some of its
steps. So the model follows the pipeline. Edge ``i`` (rank ``i`` to rank ``i + 1``)
delivers a chunk in ``w_i = alpha_i + c / B_i`` and keeps its sender busy for
``t_i = c / B_i``; rank ``i`` starts its send of step ``k + 1`` once the chunk of step
``k`` has arrived and its previous send has left::

    s_i(k + 1) = max(s_{i-1}(k) + w_{i-1},  s_i(k) + t_i),   s_i(0) = 0

and the all-reduce ends when the last chunks arrive, ``max_i s_{i-1}(2n - 3) + w_{i-1}``:
the heaviest path of ``2n - 2`` edges through the ring (a chunk going round twice, or a
slow sender sending all its chunks). It is solved step by step up to
:data:`EXACT_RANKS` ranks; beyond, by those two paths. For a ring of like edges it is the
formula above.

**An edge's bandwidth, sharing counted.** Every rank sends at every step, so edges that
cross one resource in the same direction divide it equally: a NIC's transmitter (edges
leaving it), its receiver (edges arriving), and the fabric links between two switches
one way (``up_links`` links of the sending switch's port speed, as msoctl/jobs/fabric.py
counts them: a ring that crosses the 30 km span twice has one edge each way and each
gets the whole of it; one that crosses it four times has two each way, at half). Links
are full duplex: the two directions are counted apart. This is the pessimistic side:
edges of a pipelined ring that share a link do not always send at the same moment (on
the test fabric of tests/interop/test_ring_collectives.py, orders crossing the span four
times measured 1.37 to 1.57 times the planned order's time where this model says 1.75,
and one not counting sharing 1.33). An edge between two ranks of one host runs at the
host's own bandwidth (``intra_host_bps``, NVLink or the like), shared with nothing.

**An edge's latency**: the hosts' stacks and NICs at its two ends (``host_seconds``),
each switch its route crosses (``switch_seconds``), and the light's time in the spans
its links are carried on, 5 µs a kilometre (glass of group index 1.47: 4.9 µs/km,
rounded up for the patches and the OCS). An edge within one host costs
``intra_host_seconds``.

Pure functions over :class:`~msoctl.jobs.plan.Rank` and :class:`~msoctl.jobs.fabric.
JobFabric`; every figure in seconds, bits per second and bytes.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from drivers.errors import ValidationError
from msoctl.jobs.fabric import JobFabric, Route
from msoctl.jobs.plan import Rank
from msoctl.links import Link

FIBRE_SECONDS_PER_KM = 5e-6
MAX_SIZE_BYTES = 1 << 50  # a petabyte: anything larger is a typing mistake
BITS_PER_BYTE = 8


@dataclass(frozen=True)
class RingParameters:
    """What the fabric's description does not give: the ends' and the switches' own
    latencies, and the bandwidth between GPUs of one host."""

    host_seconds: float = 3e-6  # both ends' NIC and stack, RoCE: ~1.5 µs each
    switch_seconds: float = 1e-6  # a switch's forwarding, per switch crossed
    intra_host_seconds: float = 2e-6
    intra_host_bps: float = 3.6e12  # 450 GB/s: NVLink 4, one direction


@dataclass(frozen=True)
class Edge:
    """One edge of the ring: ``source`` sends to ``target``."""

    source: Rank
    target: Rank
    route: Route | None  # None: both ranks on one host
    bandwidth_bps: float  # its share of its narrowest resource
    latency_seconds: float
    span_km: float
    bottleneck: str  # what bounds its bandwidth, and how many edges share it


@dataclass(frozen=True)
class RingCost:
    size_bytes: int
    edges: tuple[Edge, ...]

    @property
    def ranks(self) -> int:
        return len(self.edges) if len(self.edges) > 1 else 1

    @property
    def bandwidth_bps(self) -> float:
        """The narrowest edge's share (infinite for a single rank)."""
        return min((edge.bandwidth_bps for edge in self.edges), default=float("inf"))

    @property
    def step_latency_seconds(self) -> float:
        """The slowest edge's latency (the classic formula's ``alpha``)."""
        return max((edge.latency_seconds for edge in self.edges), default=0.0)

    @property
    def narrowest(self) -> Edge | None:
        return min(self.edges, key=lambda edge: edge.bandwidth_bps) if self.edges else None

    @property
    def seconds(self) -> float:
        """``T``: the heaviest path through the pipelined ring (the module docstring)."""
        n = self.ranks
        if n == 1:
            return 0.0
        chunk_bits = self.size_bytes * BITS_PER_BYTE / n
        sends = [chunk_bits / edge.bandwidth_bps for edge in self.edges]
        deliveries = [edge.latency_seconds + send
                      for edge, send in zip(self.edges, sends, strict=True)]
        return pipeline_seconds(deliveries, sends)


EXACT_RANKS = 1024
"""Rings of up to this many ranks are solved step by step (2n - 3 steps over n ranks)."""


def pipeline_seconds(deliveries: Sequence[float], sends: Sequence[float], *,
                     exact_ranks: int = EXACT_RANKS) -> float:
    """When the last chunk of a ring all-reduce arrives: edge ``i`` delivers a chunk in
    ``deliveries[i]`` and keeps its sender busy for ``sends[i]`` (the recurrence of the
    module docstring). Beyond ``exact_ranks`` ranks, the heavier of its two paths: a
    chunk going round twice (every edge twice but two neighbours once), and the slowest
    sender sending every chunk."""
    import numpy as np  # only where a prediction is asked for

    n = len(deliveries)
    if n < 2:
        return 0.0
    w = np.asarray(deliveries, dtype=float)
    t = np.asarray(sends, dtype=float)
    if n <= exact_ranks:
        start = np.zeros(n)
        for _ in range(2 * n - 3):
            start = np.maximum(np.roll(start + w, 1), start + t)
        return float(np.max(start + w))
    round_twice = 2 * float(w.sum()) - float(np.min(w + np.roll(w, -1)))
    sender = float(np.max((2 * n - 3) * t + w))
    return max(round_twice, sender)


def ring_cost(ranks: Sequence[Rank], fabric: JobFabric, size_bytes: int, *,
              span_km: Mapping[str, float],
              parameters: RingParameters = RingParameters()) -> RingCost:
    """The cost of a ring all-reduce of ``size_bytes`` over ``ranks`` in this order (the
    last rank sends to the first). ``span_km``: each fabric link's span length now
    (:func:`span_lengths_km`). :class:`ValidationError` for a size out of 1 byte..1 PB,
    a rank given twice, two ranks the fabric does not join, or a link of unknown length."""
    if not 1 <= size_bytes <= MAX_SIZE_BYTES:
        raise ValidationError(f"all-reduce size {size_bytes} bytes: must be 1 byte..1 PB")
    seen: set[tuple[str, int]] = set()
    for rank in ranks:
        if (rank.host, rank.gpu) in seen:
            raise ValidationError(f"rank order: {rank.host} GPU {rank.gpu} is in it twice")
        seen.add((rank.host, rank.gpu))
    if len(ranks) < 2:
        return RingCost(size_bytes, ())
    pairs = [(ranks[i], ranks[(i + 1) % len(ranks)]) for i in range(len(ranks))]
    routes = [None if a.host == b.host else _route(fabric, a, b) for a, b in pairs]
    users: dict[tuple[str, ...], int] = {}
    for route in routes:
        for resource, _ in _resources(route):
            users[resource] = users.get(resource, 0) + 1
    edges = []
    for (a, b), route in zip(pairs, routes, strict=True):
        if route is None:
            edges.append(Edge(a, b, None, parameters.intra_host_bps,
                              parameters.intra_host_seconds, 0.0, "within the host"))
            continue
        share, resource = min(((capacity / users[resource], resource)
                               for resource, capacity in _resources(route)),
                              key=lambda item: item[0])  # a tie: the first, the NIC's
        km = sum(_hop_km(hop.links, span_km) for hop in route.hops)
        latency = (parameters.host_seconds + len(route.hops) * parameters.switch_seconds
                   + km * FIBRE_SECONDS_PER_KM)
        sharing = f", shared by {users[resource]} edges" if users[resource] > 1 else ""
        edges.append(Edge(a, b, route, share, latency, km, _describe(resource) + sharing))
    return RingCost(size_bytes, tuple(edges))


def _route(fabric: JobFabric, a: Rank, b: Rank) -> Route:
    route = fabric.route(a.nic, b.nic)
    if route is None:
        raise ValidationError(f"ranks {a.rank} ({a.host} {a.nic.name}) and {b.rank} ({b.host} "
                              f"{b.nic.name}): the fabric does not join them now")
    return route


def _resources(route: Route | None) -> list[tuple[tuple[str, ...], float]]:
    """What an edge's bytes cross, each with its capacity (bits/s): the sending NIC, the
    links between each switch and the next one way, the receiving NIC."""
    if route is None:
        return []
    found: list[tuple[tuple[str, ...], float]] = [
        (("tx", route.a.guid, route.a.switch_port), route.a.speed_bps),
        (("rx", route.b.guid, route.b.switch_port), route.b.speed_bps)]
    for here, there in itertools.pairwise(route.hops):
        found.append((("links", here.switch, there.switch, ",".join(here.links)),
                      here.up_links * here.up_bps))
    return found


def _describe(resource: tuple[str, ...]) -> str:
    if resource[0] == "tx":
        return f"the NIC at {resource[2]} sending"
    if resource[0] == "rx":
        return f"the NIC at {resource[2]} receiving"
    return f"{resource[3]} from {resource[1]} to {resource[2]}"


def _hop_km(links: Sequence[str], span_km: Mapping[str, float]) -> float:
    """The longest span among a hop's parallel links (its traffic may take any)."""
    for name in links:
        if name not in span_km:
            raise ValidationError(f"link {name}: the length of its span is not known")
    return max((span_km[name] for name in links), default=0.0)


def span_lengths_km(links: Mapping[str, Link],
                    carried: Callable[[Link], str | None]) -> dict[str, float]:
    """Each link's span length now: of the span ``carried(link)`` says it is on
    (``working`` or ``protection``); links on neither are left out (the job fabric does
    not count them)."""
    lengths = {}
    for name, link in links.items():
        role = carried(link)
        if role in ("working", "protection"):
            lengths[name] = link.span(role).length_km
    return lengths


def random_orders(ranks: Sequence[Rank], count: int, *, seed: int) -> list[tuple[Rank, ...]]:
    """``count`` orders of ``ranks`` drawn at random (reproducibly: the same ``seed``
    gives the same orders)."""
    draw = random.Random(seed)
    orders = []
    for _ in range(count):
        order = list(ranks)
        draw.shuffle(order)
        orders.append(tuple(order))
    return orders


def median_random_seconds(ranks: Sequence[Rank], fabric: JobFabric, size_bytes: int, *,
                          span_km: Mapping[str, float], count: int = 100, seed: int = 0,
                          parameters: RingParameters = RingParameters()) -> float:
    """The median cost (seconds) of ``count`` random orders of ``ranks``: what a launcher
    that ignores the fabric can expect."""
    return statistics.median(
        ring_cost(order, fabric, size_bytes, span_km=span_km, parameters=parameters).seconds
        for order in random_orders(ranks, count, seed=seed))
