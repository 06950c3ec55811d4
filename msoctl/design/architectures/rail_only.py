"""``rail-only`` (Wang et al., "How to Build Low-cost Networks for Large Language
Models (without Sacrificing Performance)", arXiv 2307.12169): one rail per NIC port of
a server, rail i connecting port i of every server, and no spine joining the rails.

Each rail is the smallest fat-tree (1 to 3 tiers) for its ports, one per server;
rails that need less than a switch share switches (floor(k / rail ports) rails per
switch, still not joined to each other). Traffic between rails crosses the server's
scale-up domain first: the paper measures an 8-11% all-to-all penalty for it, and a
network 38-77% cheaper and 37-75% lower in power than the any-to-any Clos.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from msoctl.design import trees
from msoctl.design.fabric import (
    ENDPOINT,
    SWITCH,
    Fabric,
    LinkGroup,
    NotBuildable,
    Tier,
    Tree,
    fabric_from,
)
from msoctl.design.inputs import FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

NAME = "rail-only"
SUMMARY = "one fat-tree per rail, no spine between rails"
CROSS_RAIL = ("traffic between rails crosses the server's scale-up domain first (an 8-11% "
              "all-to-all penalty in arXiv 2307.12169)")


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """One rail per NIC port of a server, each the smallest fat-tree for its ports.
    Raises :class:`NotBuildable` when a rail needs more than three tiers."""
    rails = inputs.ports_per_server
    per_rail = inputs.servers
    down, up = inputs.leaf_split()
    notes = (f"{rails} rails of {per_rail:,} ports", CROSS_RAIL)
    if per_rail <= inputs.link_radix:
        ports = rails * per_rail
        switches = math.ceil(rails / (inputs.link_radix // per_rail))
        shared = Tree(tiers=(Tier("switch", SWITCH, switches, inputs.link_radix, ports),),
                      links=(LinkGroup(ENDPOINT, ports, inputs.nic_speed_gbps),),
                      switch_hops=1, path=(ENDPOINT, ENDPOINT))
        return replace(fabric_from(NAME, shared, notes=notes), planes=rails)
    try:
        built = trees.smallest_tree(per_rail, inputs.link_radix, down, up,
                                    inputs.nic_speed_gbps)
    except NotBuildable as error:
        raise NotBuildable(f"rail-only: a rail of {per_rail:,} servers: {error}") from None
    return fabric_from(NAME, built, planes=rails,
                       oversubscription=trees.ratio(built, down, up), notes=notes)
