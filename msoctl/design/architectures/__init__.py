"""The architectures a study can compare: one module each, one registry.

A module has ``NAME``, ``SUMMARY`` and ``build(inputs, table) -> Fabric``, raising
:class:`~msoctl.design.fabric.NotBuildable` (with the reason) for a scale it cannot
build. A new architecture is one module added to ``_MODULES``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from msoctl.design.architectures import (
    bigswitch,
    fat_tree_2,
    fat_tree_3,
    multi_plane,
    ocs_spine,
    rail_only,
    rail_optimized,
)
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


_MODULES: tuple[ModuleType, ...] = (fat_tree_2, fat_tree_3, rail_optimized, multi_plane,
                                    rail_only, bigswitch, ocs_spine)
ARCHITECTURES: dict[str, Architecture] = {
    m.NAME: Architecture(m.NAME, m.SUMMARY, m.build) for m in _MODULES}
NAMES = tuple(ARCHITECTURES)
