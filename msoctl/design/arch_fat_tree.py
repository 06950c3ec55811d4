"""Fat-trees as one fabric: 2 tiers, 3 tiers, and rail-optimized.

- ``fat-tree-2``: leaf-spine, always two tiers; beyond k x d ports it cannot build.
- ``fat-tree-3``: three tiers (edge, aggregation, core), built as such at every scale.
- ``rail-optimized``: the same counts with the fewest tiers (1 to 3) that connect the
  ports, but its leaves are rail leaves: GPU i of each server goes to leaf i of its
  group, so the NIC links cross racks (the layout gives them the row class, where a
  top-of-rack leaf's are in the rack).

A fabric whose NIC ports fit one switch is that one switch, whatever the
architecture. Counting rules: :mod:`msoctl.design.trees`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from msoctl.design import trees
from msoctl.design.fabric import Fabric, NotBuildable, fabric_from
from msoctl.design.inputs import FabricInputs, speed_text

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable


def _limit(name: str, tiers: int, inputs: FabricInputs, down: int, up: int) -> NotBuildable:
    most = trees.capacity(tiers, inputs.link_radix, down, up)
    return NotBuildable(
        f"{name}: radix {inputs.link_radix} at {speed_text(inputs.nic_speed_gbps)} connects at "
        f"most {most:,} NIC ports in {tiers} tiers; {inputs.endpoint_ports:,} asked")


def _tiered(name: str, tiers: int, inputs: FabricInputs) -> Fabric:
    down, up = inputs.leaf_split()
    ports = inputs.endpoint_ports
    if ports > trees.capacity(tiers, inputs.link_radix, down, up):
        raise _limit(name, tiers, inputs, down, up)
    built = trees.tree(tiers, ports, inputs.link_radix, down, up, inputs.nic_speed_gbps)
    return fabric_from(name, built, oversubscription=trees.ratio(built, down, up))


def fat_tree_2(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """A 2-tier leaf-spine fabric. Raises :class:`NotBuildable` beyond k x d ports."""
    return _tiered("fat-tree-2", 2, inputs)


def fat_tree_3(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """A 3-tier fat-tree. Raises :class:`NotBuildable` beyond k x k/2 x d ports."""
    return _tiered("fat-tree-3", 3, inputs)


def rail_optimized(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """A fat-tree of the fewest tiers with rail leaves. Raises :class:`NotBuildable`
    beyond three tiers."""
    down, up = inputs.leaf_split()
    ports = inputs.endpoint_ports
    if ports > trees.capacity(trees.MAX_TIERS, inputs.link_radix, down, up):
        raise _limit("rail-optimized", trees.MAX_TIERS, inputs, down, up)
    built = trees.smallest_tree(ports, inputs.link_radix, down, up, inputs.nic_speed_gbps)
    return fabric_from("rail-optimized", built, oversubscription=trees.ratio(built, down, up))
