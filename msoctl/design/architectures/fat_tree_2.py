"""``fat-tree-2``: leaf-spine, always two tiers (k leaves of d ports down at most: k x d
NIC ports, k^2/2 non-blocking). Counting: :mod:`msoctl.design.trees`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msoctl.design.architectures.common import fat_tree
from msoctl.design.fabric import Fabric
from msoctl.design.inputs import FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

NAME = "fat-tree-2"
SUMMARY = "leaf-spine, two tiers"


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """Raises :class:`~msoctl.design.fabric.NotBuildable` beyond k x d ports."""
    return fat_tree(NAME, inputs, 2)
