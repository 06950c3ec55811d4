"""``multi-plane`` (DeepSeek-V3's multi-plane fat-tree, arXiv 2505.09343): P independent
2-tier fat-trees.

Each server puts the same number of its NIC ports in every plane, so P divides the
NIC ports of a server. Default P: the NIC ports of a server (8 GPUs with one NIC
each: 8 planes, GPU-NIC i of every server in plane i). A plane holds ceil(E / P)
ports and is built as ``fat-tree-2``; traffic between planes is forwarded inside the
server (NVLink or PCIe), which the counts do not include. Unlike ``rail-only`` a
plane has two tiers by definition (one switch only when its ports fit one).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msoctl.design import trees
from msoctl.design.fabric import Fabric, NotBuildable, fabric_from
from msoctl.design.inputs import FabricInputs, speed_text

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

NAME = "multi-plane"
SUMMARY = "independent 2-tier planes, one per NIC port of a server"
CROSS_PLANE = "traffic between planes is forwarded inside the server (not counted)"


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
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
    return fabric_from(NAME, built, planes=planes,
                       oversubscription=trees.ratio(built, down, up),
                       notes=(f"{planes} planes of {per_plane:,} ports", CROSS_PLANE))
