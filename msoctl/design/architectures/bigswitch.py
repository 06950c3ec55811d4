"""``bigswitch``: big multi-chip switches (chassis) as one flat tier.

The NICs connect straight to big switches, so any two GPUs are one box apart. A big
switch of R external ports is built inside from switch chips of the same radix k in
a non-blocking Clos (:mod:`msoctl.design.trees`, d = u = k/2): its chips and the
links between them are counted as part of it (priced by the component table's
``bigswitch`` section), its external ports are the fabric's only tier.

One big switch cannot hold every port at scale, so the tier is split in planes as
the multi-plane fabric is: each server puts the same number of its NIC ports in
every plane, one big switch per plane. Planes: ``--planes`` if given, else the
fewest that divide a server's NIC ports and keep each big switch within
``max_external_ports`` (the table's, or k^2/2: two internal chip tiers). Each big
switch is built to the size of its plane, ceil(E / P) external ports.

A path crosses one box but 1, 3 or 5 chips (one, two or three internal tiers):
``chip_hops_max`` carries that into the latency.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msoctl.design import trees
from msoctl.design.fabric import (
    BIGSWITCH,
    ENDPOINT,
    LINK_ROLES,
    Fabric,
    LinkGroup,
    NotBuildable,
    Tier,
    Tree,
    fabric_from,
)
from msoctl.design.inputs import DesignError, FabricInputs
from msoctl.words import counted

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable


NAME = "bigswitch"
SUMMARY = "multi-chip big switches as one flat tier"


def max_external_ports(inputs: FabricInputs, table: ComponentTable) -> int:
    """The most external ports one big switch may have."""
    if table.bigswitch is None:
        raise DesignError(f"the component table ({table.name}) has no bigswitch section: "
                          "no price for a big switch")
    return table.bigswitch.max_external_ports or inputs.link_radix ** 2 // 2


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """One big switch per plane. Raises :class:`NotBuildable` when even one plane per
    NIC port of a server needs bigger switches than allowed."""
    most = max_external_ports(inputs, table)
    ports = inputs.endpoint_ports
    if inputs.planes is not None:
        planes = inputs.planes
    else:
        fitting = [p for p in range(1, inputs.ports_per_server + 1)
                   if inputs.ports_per_server % p == 0 and math.ceil(ports / p) <= most]
        planes = fitting[0] if fitting else inputs.ports_per_server
    external = math.ceil(ports / planes)
    if external > most:
        raise NotBuildable(
            f"bigswitch: {ports:,} NIC ports in {counted(planes, 'plane')} need big switches of "
            f"{external:,} ports; at most {most:,} (a server has {inputs.ports_per_server} "
            "NIC ports, one plane each at most)")
    half = inputs.link_radix // 2
    inside = trees.smallest_tree(external, inputs.link_radix, half, half,
                                 inputs.nic_speed_gbps)
    chips = sum(t.count for t in inside.tiers)
    internal_links = sum(g.count for g in inside.links if g.role in LINK_ROLES[1:])
    box = Tier("bigswitch", BIGSWITCH, 1, external, external, chips_each=chips,
               internal_links_each=internal_links, internal_tiers=len(inside.tiers))
    flat = Tree(tiers=(box,), links=(LinkGroup(ENDPOINT, external, inputs.nic_speed_gbps),),
                switch_hops=1, path=(ENDPOINT, ENDPOINT), chip_hops=inside.switch_hops)
    return fabric_from(NAME, flat, planes=planes, notes=(
        f"{counted(planes, 'big switch', 'big switches')} of {external:,} ports, {chips} chips in "
        f"{counted(len(inside.tiers), 'internal tier')} each",))
