"""The counted fabric an architecture builds: tiers of boxes and groups of links.

Counts only; what each link is made of (cable or modules) and what everything
costs is decided later from the component table (:mod:`msoctl.design.cost`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

# Link roles: the key of the component table's layout, which gives each role of each
# architecture its reach class.
ENDPOINT = "endpoint"
LEAF_SPINE = "leaf-spine"
EDGE_AGGREGATION = "edge-aggregation"
AGGREGATION_CORE = "aggregation-core"
AGGREGATION_OCS = "aggregation-ocs"
LINK_ROLES = (ENDPOINT, LEAF_SPINE, EDGE_AGGREGATION, AGGREGATION_CORE, AGGREGATION_OCS)

SWITCH, BIGSWITCH, OCS = "switch", "bigswitch", "ocs"


class NotBuildable(Exception):
    """This architecture cannot build this fabric (the message says why, in one line)."""


@dataclass(frozen=True)
class Tier:
    """One layer of boxes.

    ``count`` boxes of ``ports_each`` ports at the link speed, ``ports_used`` of all
    their ports cabled. A big switch also has ``chips_each`` switch chips inside and
    ``internal_links_each`` links between them; an OCS has ``ports_each`` duplex ports.
    """

    name: str
    kind: str
    count: int
    ports_each: int
    ports_used: int
    chips_each: int = 1
    internal_links_each: int = 0
    internal_tiers: int = 1

    def times(self, planes: int) -> Tier:
        return replace(self, count=self.count * planes, ports_used=self.ports_used * planes)


@dataclass(frozen=True)
class LinkGroup:
    """``count`` links of one role at ``speed_gbps``.

    ``optical_ends`` is how many transceivers the link takes when it is optical: 2, or
    1 when its far end is an OCS port (the OCS switches light and has none).
    ``segments`` is how many times the role's reach-class length the light travels
    end to end: 1, or 2 through an OCS (module, fiber, OCS, fiber, module).
    """

    role: str
    count: int
    speed_gbps: int
    optical_ends: int = 2
    segments: int = 1
    through_ocs: bool = False

    def times(self, planes: int) -> LinkGroup:
        return replace(self, count=self.count * planes)


@dataclass(frozen=True)
class Tree:
    """A fabric part: its tiers, links, and the longest shortest path through it.

    ``switch_hops`` boxes are crossed on that path, ``chip_hops`` switch chips (more
    than boxes inside a big switch); ``path`` lists the link roles along it.
    """

    tiers: tuple[Tier, ...]
    links: tuple[LinkGroup, ...]
    switch_hops: int
    path: tuple[str, ...]
    chip_hops: int | None = None

    def times(self, planes: int) -> Tree:
        return replace(self, tiers=tuple(t.times(planes) for t in self.tiers),
                       links=tuple(g.times(planes) for g in self.links))


@dataclass(frozen=True)
class Fabric:
    """A whole fabric for one architecture at one scale.

    ``planes`` independent copies are already multiplied into ``tiers`` and ``links``;
    ``oversubscription`` is the leaf's down:up ratio as built (1.0: non-blocking).
    """

    architecture: str
    planes: int
    tiers: tuple[Tier, ...]
    links: tuple[LinkGroup, ...]
    switch_hops_max: int
    chip_hops_max: int
    path: tuple[str, ...]
    oversubscription: float
    notes: tuple[str, ...] = ()

    @property
    def switches(self) -> int:
        """Electrical boxes: switches and big switches (not OCS)."""
        return sum(t.count for t in self.tiers if t.kind in (SWITCH, BIGSWITCH))

    @property
    def switch_chips(self) -> int:
        return sum(t.count * t.chips_each for t in self.tiers if t.kind in (SWITCH, BIGSWITCH))

    @property
    def ocs_ports(self) -> int:
        """OCS ports installed (every port of every OCS, used or not)."""
        return sum(t.count * t.ports_each for t in self.tiers if t.kind == OCS)

    @property
    def links_total(self) -> int:
        return sum(g.count for g in self.links)

    @property
    def switch_links(self) -> int:
        """Links between boxes: every link but the NIC ones."""
        return sum(g.count for g in self.links if g.role != ENDPOINT)


def fabric_from(architecture: str, tree: Tree, *, planes: int = 1,
                oversubscription: float = 1.0, notes: tuple[str, ...] = ()) -> Fabric:
    """A :class:`Fabric` of ``planes`` copies of ``tree``."""
    whole = tree.times(planes) if planes > 1 else tree
    return Fabric(architecture=architecture, planes=planes, tiers=whole.tiers,
                  links=whole.links, switch_hops_max=tree.switch_hops,
                  chip_hops_max=tree.switch_hops if tree.chip_hops is None else tree.chip_hops,
                  path=tree.path, oversubscription=oversubscription, notes=notes)
