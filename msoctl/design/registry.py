"""The architectures a study can compare, by name: one registry, one module each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from msoctl.design.arch_bigswitch import bigswitch
from msoctl.design.arch_fat_tree import fat_tree_2, fat_tree_3, rail_optimized
from msoctl.design.arch_ocs import ocs_spine
from msoctl.design.arch_planes import multi_plane, rail_only
from msoctl.design.fabric import Fabric
from msoctl.design.inputs import FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable

Builder = Callable[[FabricInputs, "ComponentTable"], Fabric]


@dataclass(frozen=True)
class Architecture:
    name: str
    summary: str
    build: Builder


ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in (
    Architecture("fat-tree-2", "leaf-spine, two tiers", fat_tree_2),
    Architecture("fat-tree-3", "edge, aggregation and core tiers", fat_tree_3),
    Architecture("rail-optimized", "fat-tree of the fewest tiers with rail leaves",
                 rail_optimized),
    Architecture("multi-plane", "independent 2-tier planes, one per NIC port of a server",
                 multi_plane),
    Architecture("rail-only", "one fat-tree per rail, no spine between rails", rail_only),
    Architecture("bigswitch", "multi-chip big switches as one flat tier", bigswitch),
    Architecture("ocs-spine", "3-tier pods direct-connected through OCS", ocs_spine),
)}
NAMES = tuple(ARCHITECTURES)
