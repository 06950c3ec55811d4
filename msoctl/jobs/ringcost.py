"""What a ring all-reduce costs over the fabric as msoctl knows it, for one order of ranks.

A ring all-reduce of ``S`` bytes over ``n`` ranks is a reduce-scatter then an all-gather,
each ``n - 1`` steps; in every step each rank sends ``S / n`` bytes to the next rank of
the ring, all at once. A step lasts as long as its slowest edge, so::

    T = 2 (n - 1) / n * S / B  +  2 (n - 1) * alpha

with ``B`` the bandwidth of the ring's narrowest edge and ``alpha`` the latency of its
slowest one (the classic ring model: Patarasuk and Yuan, 2009).

**An edge's bandwidth, sharing counted.** Every edge of the ring sends at the same time,
so edges that cross one resource in the same direction divide it equally: a NIC's
transmitter (edges leaving it), its receiver (edges arriving), and the fabric links
between two switches one way (``up_links`` links of the sending switch's port speed, as
msoctl/jobs/fabric.py counts them: a ring that crosses the 30 km span twice has one
edge each way and each gets the whole of it; one that crosses it four times has two
each way, at half). Links are full duplex: the two directions are counted apart. An
edge between two ranks of one host runs at the host's own bandwidth
(``intra_host_bps``, NVLink or the like), shared with nothing.

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
        """``B``: the narrowest edge's share (infinite for a single rank)."""
        return min((edge.bandwidth_bps for edge in self.edges), default=float("inf"))

    @property
    def step_latency_seconds(self) -> float:
        """``alpha``: the slowest edge's latency."""
        return max((edge.latency_seconds for edge in self.edges), default=0.0)

    @property
    def narrowest(self) -> Edge | None:
        return min(self.edges, key=lambda edge: edge.bandwidth_bps) if self.edges else None

    @property
    def transfer_seconds(self) -> float:
        """``2 (n - 1) / n * S / B``."""
        n = self.ranks
        if n == 1:
            return 0.0
        return 2 * (n - 1) / n * self.size_bytes * BITS_PER_BYTE / self.bandwidth_bps

    @property
    def latency_seconds(self) -> float:
        """``2 (n - 1) * alpha``."""
        return 2 * (self.ranks - 1) * self.step_latency_seconds

    @property
    def seconds(self) -> float:
        return self.transfer_seconds + self.latency_seconds


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
