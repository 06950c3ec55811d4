"""``rail-optimized``: a fat-tree of the fewest tiers (1 to 3) whose leaves are rail
leaves: GPU i of each server of a group goes to leaf i, so the NIC links cross
racks (the layout gives them the row class, where a top-of-rack leaf's are in the
rack). The counts are a fat-tree's; the cabling differs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msoctl.design.architectures.common import fat_tree
from msoctl.design.fabric import Fabric
from msoctl.design.inputs import FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

NAME = "rail-optimized"
SUMMARY = "fat-tree of the fewest tiers with rail leaves"


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """Raises :class:`~msoctl.design.fabric.NotBuildable` beyond three tiers."""
    return fat_tree(NAME, inputs, None)
