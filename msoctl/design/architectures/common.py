"""What the fat-tree architectures share: a tree of a fixed or the fewest tiers, and
the one-line reason when the scale is beyond it."""

from __future__ import annotations

from msoctl.design import trees
from msoctl.design.fabric import Fabric, NotBuildable, fabric_from
from msoctl.design.inputs import FabricInputs, speed_text


def beyond(name: str, tiers: int, inputs: FabricInputs) -> NotBuildable:
    """Why ``name`` cannot connect ``inputs``' ports in ``tiers`` tiers."""
    down, up = inputs.leaf_split()
    most = trees.capacity(tiers, inputs.link_radix, down, up)
    return NotBuildable(
        f"{name}: radix {inputs.link_radix} at {speed_text(inputs.nic_speed_gbps)} connects at "
        f"most {most:,} NIC ports in {tiers} tiers; {inputs.endpoint_ports:,} asked")


def fat_tree(name: str, inputs: FabricInputs, tiers: int | None) -> Fabric:
    """A fat-tree of exactly ``tiers`` tiers (None: the fewest, 1 to 3) for every NIC
    port, one switch when they fit one. Raises :class:`NotBuildable` beyond it."""
    down, up = inputs.leaf_split()
    ports = inputs.endpoint_ports
    limit = trees.MAX_TIERS if tiers is None else tiers
    if ports > trees.capacity(limit, inputs.link_radix, down, up):
        raise beyond(name, limit, inputs)
    radix, speed = inputs.link_radix, inputs.nic_speed_gbps
    built = (trees.smallest_tree(ports, radix, down, up, speed) if tiers is None
             else trees.tree(tiers, ports, radix, down, up, speed))
    return fabric_from(name, built, oversubscription=trees.ratio(built, down, up))
