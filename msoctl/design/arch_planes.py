"""Fabrics of independent planes: multi-plane fat-tree and rail-only.

``multi-plane`` (DeepSeek-V3's MPFT, arXiv 2505.09343): P independent 2-tier
fat-trees; each server puts the same number of its NIC ports in every plane, so
P divides the NIC ports of a server. Default P: the NIC ports of a server (8 GPUs
with one NIC each: 8 planes, GPU-NIC i of every server in plane i). A plane holds
ceil(E / P) ports and is built as ``fat-tree-2``; traffic between planes is
forwarded inside the server (NVLink or PCIe), which the counts do not include.

``rail-only`` (Wang et al., "How to Build Low-cost Networks for Large Language
Models (without Sacrificing Performance)", arXiv 2307.12169): one rail per NIC port
of a server, rail i connecting port i of every server, each rail the smallest
fat-tree (1 to 3 tiers) for its ports (one per server), and rails that need less
than a switch share switches (floor(k / rail ports) rails per switch, still not
joined to each other); no spine joins the rails:
traffic between rails crosses the server's scale-up domain first (the paper
measures an 8-11% all-to-all penalty for it, and a network 38-77% cheaper, 37-75%
lower in power, than a full Clos).

The two differ where a plane fits one switch (rail-only: one tier) or needs three
tiers (rail-only builds them; a multi-plane fat-tree has two by definition).
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
from msoctl.design.inputs import FabricInputs, speed_text

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

CROSS_PLANE = "traffic between planes is forwarded inside the server (not counted)"
CROSS_RAIL = ("traffic between rails crosses the server's scale-up domain first (an 8-11% "
              "all-to-all penalty in arXiv 2307.12169)")


def multi_plane(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """P planes of 2-tier fat-trees. Raises :class:`NotBuildable` when a plane's ports
    exceed k x d."""
    planes = inputs.planes or inputs.ports_per_server
    down, up = inputs.leaf_split()
    per_plane = math.ceil(inputs.endpoint_ports / planes)
    most = trees.capacity(2, inputs.link_radix, down, up)
    if per_plane > most:
        raise NotBuildable(
            f"multi-plane: {planes} planes of 2 tiers at radix {inputs.link_radix} "
            f"({speed_text(inputs.nic_speed_gbps)}) connect at most {planes * most:,} NIC "
            f"ports; {inputs.endpoint_ports:,} asked")
    built = trees.tree(2, per_plane, inputs.link_radix, down, up, inputs.nic_speed_gbps)
    return fabric_from("multi-plane", built, planes=planes,
                       oversubscription=trees.ratio(built, down, up),
                       notes=(f"{planes} planes of {per_plane:,} ports", CROSS_PLANE))


def rail_only(inputs: FabricInputs, table: ComponentTable) -> Fabric:
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
        return replace(fabric_from("rail-only", shared, notes=notes), planes=rails)
    try:
        built = trees.smallest_tree(per_rail, inputs.link_radix, down, up,
                                    inputs.nic_speed_gbps)
    except NotBuildable as error:
        raise NotBuildable(f"rail-only: a rail of {per_rail:,} servers: {error}") from None
    return fabric_from("rail-only", built, planes=rails,
                       oversubscription=trees.ratio(built, down, up), notes=notes)
