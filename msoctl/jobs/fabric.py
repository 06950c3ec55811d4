"""The fabric as a job sees it: which switch each NIC is on, which links join the
switches now, and the hops between two NICs with their bandwidth and link counts.

A switch's *down* side is its host ports (the NICs cabled to it, from the inventory's
hosts), its *up* side the fabric links that leave it for another switch. A link counts
while it carries light on its working or protection span and is not drained; a link
whose OCS could not be read is *unknown* and does not count, but is named. Ports run at
the speed of the NICs on the switch (the inventory gives links no speed of their own).

Paths are the fewest switch hops between the two NICs' switches over the counted links
(breadth-first); each hop is (switch, up links toward the next, down links, the speeds).
The last switch of a path, or the only one, is *top* (FlagCX's ``isTop``: its down
bandwidth alone bounds the route).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from msoctl.hosts import Host, HostNic
from msoctl.links import Link

BITS_PER_GIGABYTE = 8e9


@dataclass(frozen=True)
class Hop:
    switch: str
    up_links: int  # toward the next switch of the path (0 on the last)
    down_links: int  # NICs cabled to it
    up_bps: float
    down_bps: float
    top: bool
    links: tuple[str, ...] = ()  # the fabric links toward the next switch

    def bandwidth_bps(self) -> float:
        """FlagCX's reading of a hop: the down bandwidth for a top switch, else the lesser
        of it and the up bandwidth shared by the down links (oversubscription)."""
        if self.top or self.down_links == 0:
            return self.down_bps
        return min(self.down_bps, self.up_bps * self.up_links / self.down_links)


@dataclass(frozen=True)
class Route:
    a: HostNic
    b: HostNic
    hops: tuple[Hop, ...]

    @property
    def bandwidth_bps(self) -> float:
        return min([self.a.speed_bps, self.b.speed_bps,
                    *(hop.bandwidth_bps() for hop in self.hops)])

    @property
    def links(self) -> list[str]:
        return [name for hop in self.hops for name in hop.links]


@dataclass
class JobFabric:
    """Switches, the NICs on them and the links between them (see the module docstring)."""

    down: dict[str, list[HostNic]] = field(default_factory=dict)
    links: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # sorted pair
    unknown_links: list[str] = field(default_factory=list)
    out_of_service: list[str] = field(default_factory=list)
    _adjacent: dict[str, list[str]] | None = field(default=None, repr=False)
    _paths: dict[tuple[str, str], list[str] | None] = field(default_factory=dict, repr=False)
    _speeds: dict[str, float] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, hosts: Iterable[Host], links: Mapping[str, Link],
              carried: Callable[[Link], str | None], drained: Iterable[str]) -> JobFabric:
        """``carried(link)``: ``working``, ``protection``, ``down`` (no light) or None when
        its OCS could not be read."""
        fabric = cls()
        for host in hosts:
            for nic in host.nics:
                fabric.down.setdefault(nic.switch, []).append(nic)
        out = set(drained)
        for name, link in links.items():
            role = carried(link)
            if role is None:
                fabric.unknown_links.append(name)
            elif role == "down" or name in out:
                fabric.out_of_service.append(name)
            else:
                pair = tuple(sorted((link.a.switch, link.b.switch)))
                fabric.links.setdefault((pair[0], pair[1]), []).append(name)
        return fabric

    def speed_bps(self, switch: str) -> float:
        if switch not in self._speeds:
            self._speeds[switch] = max((nic.speed_bps for nic in self.down.get(switch, [])),
                                       default=0.0)
        return self._speeds[switch]

    def neighbours(self, switch: str) -> list[str]:
        if self._adjacent is None:
            adjacent: dict[str, set[str]] = {}
            for a, b in self.links:
                adjacent.setdefault(a, set()).add(b)
                adjacent.setdefault(b, set()).add(a)
            self._adjacent = {name: sorted(found) for name, found in adjacent.items()}
        return self._adjacent.get(switch, [])

    def switch_path(self, start: str, end: str) -> list[str] | None:
        """The fewest-hop path of switches from ``start`` to ``end`` (None: no path)."""
        key = (start, end)
        if key not in self._paths:
            self._paths[key] = self._search(start, end)
        return self._paths[key]

    def _search(self, start: str, end: str) -> list[str] | None:
        if start == end:
            return [start]
        previous: dict[str, str] = {start: start}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for there in self.neighbours(here):
                if there in previous:
                    continue
                previous[there] = here
                if there == end:
                    path = [end]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return path[::-1]
                queue.append(there)
        return None

    def route(self, a: HostNic, b: HostNic) -> Route | None:
        path = self.switch_path(a.switch, b.switch)
        if path is None:
            return None
        hops = []
        for index, switch in enumerate(path):
            last = index == len(path) - 1
            links = () if last else tuple(
                self.links[tuple(sorted((switch, path[index + 1])))])  # type: ignore[index]
            speed = self.speed_bps(switch) or min(a.speed_bps, b.speed_bps)
            hops.append(Hop(switch, len(links), len(self.down.get(switch, [])), speed, speed,
                            last, links))
        return Route(a, b, tuple(hops))


def gigabytes_per_second(bps: float) -> float:
    return bps / BITS_PER_GIGABYTE
