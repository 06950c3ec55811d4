"""``fat-tree-3``: edge, aggregation and core tiers, built as three tiers at every scale
(at most k x k/2 x d NIC ports, k^3/4 non-blocking). Counting: :mod:`msoctl.design.trees`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msoctl.design.architectures.common import fat_tree
from msoctl.design.fabric import Fabric
from msoctl.design.inputs import FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

NAME = "fat-tree-3"
SUMMARY = "edge, aggregation and core tiers"


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """Raises :class:`~msoctl.design.fabric.NotBuildable` beyond k x k/2 x d ports."""
    return fat_tree(NAME, inputs, 3)
