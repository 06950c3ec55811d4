"""Placing a job on healthy GPUs and ordering its ranks along the fabric.

**Placement.** Only GPUs their exporters call healthy, on hosts with a NIC up (or all on
one host), of the vendors asked (any, by default). The job takes as few vendors as it
can (one, if one has enough), then within each vendor as few campuses, then as few
scale-up domains and hosts: whole hosts first, the fullest first, the last one partly.

**Rank order**, hierarchical, as a ring all-reduce over it wants: a vendor's ranks are
contiguous (FlagCX forms its clusters by vendor, and its cluster ranks must be
contiguous); within a vendor, a campus's; within a campus, a scale-up domain's, then the
hosts of one switch together (their NICs meet there: the ring's hops between them stay
on one switch); within a host, GPU by GPU. Campuses are taken in opposite orders in
alternate vendors, so that the ring changes campus only where it must: a ring over two
campuses crosses the span twice, whatever the number of vendors.

Each rank's NIC is the one of the rail ``gpu mod the host's rails`` (a GPU talks off the
server through the NIC of its rail), skipping a rail whose NIC is down or degraded (up
below its speed: NCCL_IB_HCA then leaves it out).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from drivers.errors import ValidationError
from msoctl.compute.gpustate import HostState
from msoctl.hosts import Host, HostNic


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    gpu: int
    vendor: str
    campus: str
    nic: HostNic


@dataclass(frozen=True)
class Placement:
    ranks: tuple[Rank, ...]
    hosts: tuple[Host, ...]  # in rank order
    vendors: tuple[str, ...]  # in rank order
    excluded_nics: dict[str, tuple[str, ...]]  # host -> NICs down, degraded or unknown

    def crossings(self, key: str) -> int:
        """How many times a ring over the ranks changes ``key`` (``campus``, ``vendor``,
        ``host``), counting the way back from the last rank to the first."""
        values = [getattr(rank, key) for rank in self.ranks]
        return sum(values[i] != values[i - 1] for i in range(len(values))) \
            if len(values) > 1 else 0


@dataclass
class _Candidate:
    host: Host
    gpus: list[int]
    nics: list[HostNic]  # up, in rail order
    down: tuple[str, ...]


def candidates(states: Iterable[HostState]) -> list[_Candidate]:
    found = []
    for state in states:
        up = {nic.name for nic in state.nics if nic.usable}
        nics = sorted((nic for nic in state.host.nics if nic.name in up), key=lambda n: n.rail)
        down = tuple(nic.name for nic in state.host.nics if nic.name not in up)
        found.append(_Candidate(state.host, state.healthy_gpus, nics, down))
    return found


def place(states: Sequence[HostState], gpus: int, *, vendors: Sequence[str] = ()
          ) -> Placement:
    """Place ``gpus`` ranks (module docstring); :class:`ValidationError` saying how many
    healthy GPUs there are when they are too few."""
    if gpus < 1:
        raise ValidationError("a job needs at least one GPU")
    pool = [c for c in candidates(states) if c.gpus and (not vendors or c.host.vendor
                                                         in vendors)]
    single_host = [c for c in pool if len(c.gpus) >= gpus]
    networked = [c for c in pool if c.nics]
    available = sum(len(c.gpus) for c in networked)
    if available < gpus:
        if single_host:
            return _ordered([(_fullest(single_host, gpus), gpus)])
        healthy = sum(len(c.gpus) for c in pool)
        kind = "" if not vendors else f" {'/'.join(vendors)}"
        note = "" if healthy == available else (f" ({healthy - available} more on hosts "
                                                "whose NICs are all down)")
        raise ValidationError(f"{gpus} GPUs asked, but only {available} healthy{kind} GPUs "
                              f"are reachable over the fabric{note}")
    by_vendor: dict[str, list[_Candidate]] = {}
    for candidate in networked:
        by_vendor.setdefault(candidate.host.vendor, []).append(candidate)
    order = sorted(by_vendor, key=lambda v: (-sum(len(c.gpus) for c in by_vendor[v]), v))
    single = [v for v in order if sum(len(c.gpus) for c in by_vendor[v]) >= gpus]
    if single:  # the vendor with the fewest GPUs that still suffices
        order = [min(single, key=lambda v: (sum(len(c.gpus) for c in by_vendor[v]), v))]
    chosen: list[tuple[_Candidate, int]] = []
    left = gpus
    for vendor in order:
        if left == 0:
            break
        take = min(left, sum(len(c.gpus) for c in by_vendor[vendor]))
        chosen.extend(_within_vendor(by_vendor[vendor], take))
        left -= take
    return _ordered(chosen)


def _fullest(pool: Sequence[_Candidate], gpus: int) -> _Candidate:
    """The host that holds ``gpus`` with the least left over."""
    return min(pool, key=lambda c: (len(c.gpus) - gpus, c.host.name))


def _within_vendor(pool: Sequence[_Candidate], take: int) -> list[tuple[_Candidate, int]]:
    by_campus: dict[str, list[_Candidate]] = {}
    for candidate in pool:
        by_campus.setdefault(candidate.host.campus, []).append(candidate)

    def capacity(campus: str) -> int:
        return sum(len(c.gpus) for c in by_campus[campus])

    campuses = sorted(by_campus, key=lambda c: (-capacity(c), c))
    enough = [c for c in campuses if capacity(c) >= take]
    if enough:
        campuses = [min(enough, key=lambda c: (capacity(c), c))]
    chosen: list[tuple[_Candidate, int]] = []
    left = take
    for campus in campuses:
        hosts = sorted(by_campus[campus], key=lambda c: (-len(c.gpus), c.host.scale_up,
                                                         c.host.name))
        for candidate in hosts:
            if left == 0:
                break
            count = min(left, len(candidate.gpus))
            chosen.append((candidate, count))
            left -= count
    return chosen


def _ordered(chosen: Sequence[tuple[_Candidate, int]]) -> Placement:
    vendors: list[str] = []
    for candidate, _ in chosen:
        if candidate.host.vendor not in vendors:
            vendors.append(candidate.host.vendor)
    previous_campus: str | None = None
    ranks: list[Rank] = []
    hosts: list[Host] = []
    for vendor in vendors:
        mine = [(c, n) for c, n in chosen if c.host.vendor == vendor]
        campuses = sorted({c.host.campus for c, _ in mine})
        if previous_campus in campuses:  # carry on in the campus the last vendor ended in
            campuses.remove(previous_campus)
            campuses.insert(0, previous_campus)
        for campus in campuses:
            here = sorted(((c, n) for c, n in mine if c.host.campus == campus),
                          key=lambda item: (item[0].host.scale_up, _switch(item[0]),
                                            item[0].host.name))
            for candidate, count in here:
                hosts.append(candidate.host)
                rails = candidate.nics or list(candidate.host.nics)
                for gpu in sorted(candidate.gpus)[:count]:
                    ranks.append(Rank(len(ranks), candidate.host.name, gpu, vendor, campus,
                                      rails[gpu % len(rails)]))
            previous_campus = campus
    excluded = {c.host.name: c.down for c, _ in chosen if c.down}
    return Placement(tuple(ranks), tuple(hosts), tuple(vendors), excluded)


def _switch(candidate: _Candidate) -> str:
    nics = candidate.nics or list(candidate.host.nics)
    return nics[0].switch if nics else ""
