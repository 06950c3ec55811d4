"""Cost and power of a counted fabric, from the component table.

- a switch box: the table's switch of ``radix`` ports at ``switch_speed`` (split ports
  do not change the box);
- a big switch: its chips at ``chip_price_ratio`` (and ``chip_power_ratio``) of that
  switch, plus the chassis per external port and the internal links;
- an OCS: every port of every OCS, used or not;
- a link: its medium (:mod:`msoctl.design.media`): one cable, or one transceiver
  per optical end. With ``scope: {endpoint_links: false}`` the NIC links are not
  costed (they are still counted).

Latency on the longest shortest path: each switch chip crossed costs the switch's
``latency_ns``; each link the length of its reach class at the fiber's
``propagation_ns_per_m``. An OCS adds no switching latency (it converts nothing).

Raises :class:`DesignError` for a missing price.
"""

from __future__ import annotations

from dataclasses import dataclass

from msoctl.design.components import ComponentTable, Medium
from msoctl.design.fabric import BIGSWITCH, ENDPOINT, OCS, Fabric, Tier
from msoctl.design.inputs import DesignError, FabricInputs, speed_text
from msoctl.design.media import Span, choose, span_of, units


@dataclass(frozen=True)
class TierCost:
    tier: Tier
    usd: float
    watts: float


@dataclass(frozen=True)
class LinkCost:
    """One link group costed: ``medium`` is None when the group is not costed."""

    role: str
    count: int
    speed_gbps: int
    span: Span
    medium: Medium | None
    units: int
    usd: float
    watts: float


@dataclass(frozen=True)
class Costing:
    """A fabric with its prices: totals in USD and watts, latency in nanoseconds."""

    fabric: Fabric
    what_if: frozenset[str]
    tiers: tuple[TierCost, ...]
    links: tuple[LinkCost, ...]
    latency_ns: float

    @property
    def usd(self) -> float:
        return self.switching_usd + self.links_usd

    @property
    def watts(self) -> float:
        return sum(t.watts for t in self.tiers) + sum(g.watts for g in self.links)

    @property
    def switching_usd(self) -> float:
        return sum(t.usd for t in self.tiers)

    @property
    def links_usd(self) -> float:
        return sum(g.usd for g in self.links)

    @property
    def transceivers(self) -> int:
        return sum(g.units for g in self.links if g.medium is not None and g.medium.per_end)

    @property
    def cables(self) -> int:
        return sum(g.units for g in self.links
                   if g.medium is not None and not g.medium.per_end)


def _tier_cost(tier: Tier, inputs: FabricInputs, table: ComponentTable) -> TierCost:
    if tier.kind == OCS:
        assert table.ocs is not None  # the architecture refused to build without one
        ports = tier.count * tier.ports_each
        return TierCost(tier, ports * table.ocs.usd_per_port, ports * table.ocs.watts_per_port)
    switch = table.switch(inputs.radix, inputs.switch_speed_gbps)
    if switch is None:
        speeds = sorted({model.speed_gbps for model in table.switches.values()
                         if model.ports == inputs.radix})
        hint = ("" if not speeds else f" (it has {inputs.radix}-port switches at "
                + ", ".join(speed_text(speed) for speed in speeds)
                + f": --switch-speed {speed_text(speeds[0])})")
        raise DesignError(
            f"no price for a {inputs.radix}-port {speed_text(inputs.switch_speed_gbps)} switch "
            f"in the component table ({table.name}){hint}; add one under switches:")
    if tier.kind != BIGSWITCH:
        return TierCost(tier, tier.count * switch.usd, tier.count * switch.watts)
    big = table.bigswitch
    assert big is not None  # the architecture refused to build without one
    usd = (tier.chips_each * big.chip_price_ratio * switch.usd
           + tier.ports_each * big.chassis_usd_per_port
           + tier.internal_links_each * big.internal_link_usd)
    watts = (tier.chips_each * big.chip_power_ratio * switch.watts
             + tier.ports_each * big.chassis_watts_per_port
             + tier.internal_links_each * big.internal_link_watts)
    return TierCost(tier, tier.count * usd, tier.count * watts)


def cost(fabric: Fabric, inputs: FabricInputs, table: ComponentTable,
         what_if: frozenset[str] = frozenset()) -> Costing:
    """``fabric`` priced by ``table`` with the ``what_if`` media substitutions."""
    tiers = tuple(_tier_cost(t, inputs, table) for t in fabric.tiers)
    links = []
    for group in fabric.links:
        span = span_of(group, fabric.architecture, table)
        if group.role == ENDPOINT and not table.endpoint_links:
            links.append(LinkCost(group.role, group.count, group.speed_gbps, span, None, 0,
                                  0.0, 0.0))
            continue
        medium = choose(group, span, table, what_if)
        taken = units(medium, group)
        links.append(LinkCost(group.role, group.count, group.speed_gbps, span, medium, taken,
                              taken * medium.usd, taken * medium.watts))
    switch = table.switch(inputs.radix, inputs.switch_speed_gbps)
    chip_ns = 0.0 if switch is None else switch.latency_ns
    roles = table.layout[fabric.architecture]
    flight_m = sum(table.reach_m[roles[role]] for role in fabric.path)
    latency = fabric.chip_hops_max * chip_ns + flight_m * table.fiber.propagation_ns_per_m
    return Costing(fabric, what_if, tiers, tuple(links), latency)
