"""``ocs-spine``: the core tier of a 3-tier fat-tree replaced by optical circuit switches.

Pods are built as in ``fat-tree-3`` (k/2 edge and u aggregation switches each). The
aggregation switches' uplinks, instead of reaching core switches, end on OCS ports
and the OCS patches them straight to an uplink of another pod (direct connect, as
Google's Jupiter fabric does since its OCS generation): light is switched, not
converted, so an uplink has one transceiver (at the aggregation switch) and one
OCS port, where a core link has two transceivers and a core switch port.

Counting, with N duplex ports per OCS and U = u x k/2 uplinks per pod: each OCS
takes the same number of uplinks from every pod, floor(N / pods), so

    ocs = ceil(U / floor(N / pods))      pods <= N

The insertion loss is modelled: a circuit runs module - fiber - OCS - fiber -
module, twice the aggregation-OCS reach class end to end, and spends the OCS's
insertion loss and its two connectors from the module's channel budget, which
often calls for a longer-reach module class (FR rather than DR). A fabric that
fits one pod has no OCS (it is that pod: a leaf-spine of edges and aggregation).

Not modelled: the OCS reconfiguration (circuits are fixed for the study), and the
transit that uneven traffic takes through a third pod (two more switch hops).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from msoctl.design import trees
from msoctl.design.fabric import (
    AGGREGATION_OCS,
    EDGE_AGGREGATION,
    ENDPOINT,
    OCS,
    SWITCH,
    Fabric,
    LinkGroup,
    NotBuildable,
    Tier,
    Tree,
    fabric_from,
)
from msoctl.design.inputs import DesignError, FabricInputs

if TYPE_CHECKING:
    from msoctl.design.components import ComponentTable


NAME = "ocs-spine"
SUMMARY = "3-tier pods direct-connected through OCS"


def build(inputs: FabricInputs, table: ComponentTable) -> Fabric:
    """Pods direct-connected through OCS. Raises :class:`NotBuildable` with more pods
    than an OCS has ports, :class:`DesignError` without an OCS in the table."""
    if table.ocs is None:
        raise DesignError(f"the component table ({table.name}) has no ocs section: no price "
                          "for an OCS port")
    radix, speed = inputs.link_radix, inputs.nic_speed_gbps
    down, up = inputs.leaf_split()
    half = radix // 2
    ports = inputs.endpoint_ports
    edges, pods = trees.pods_for(ports, radix, down)
    if pods <= 1:
        built = trees.tree(2, ports, radix, down, up, speed)
        return fabric_from(NAME, built, oversubscription=trees.ratio(built, down, up),
                           notes=("fits one pod: a leaf-spine, no OCS",))
    per_ocs_port = table.ocs.ports
    if pods > per_ocs_port:
        raise NotBuildable(f"ocs-spine: {pods:,} pods need an OCS port each on every OCS; "
                           f"an OCS has {per_ocs_port} ports")
    aggregation = pods * up
    pod_uplinks = up * half
    if pod_uplinks < pods - 1:
        raise NotBuildable(f"ocs-spine: a pod's {pod_uplinks} uplinks cannot reach each of "
                           f"the {pods - 1} other pods directly")
    uplinks = pods * pod_uplinks
    units = math.ceil(pod_uplinks / (per_ocs_port // pods))
    edge_links = edges * up
    built = Tree(
        tiers=(Tier("edge", SWITCH, edges, radix, ports + edge_links),
               Tier("aggregation", SWITCH, aggregation, radix, edge_links + uplinks),
               Tier("ocs", OCS, units, per_ocs_port, uplinks)),
        links=(LinkGroup(ENDPOINT, ports, speed),
               LinkGroup(EDGE_AGGREGATION, edge_links, speed),
               LinkGroup(AGGREGATION_OCS, uplinks, speed, optical_ends=1, segments=2,
                         through_ocs=True)),
        switch_hops=4,
        path=(ENDPOINT, EDGE_AGGREGATION, AGGREGATION_OCS, AGGREGATION_OCS, EDGE_AGGREGATION,
              ENDPOINT))
    direct = pod_uplinks / (pods - 1)
    return fabric_from(NAME, built, oversubscription=down / up, notes=(
        f"{pods} pods direct-connected by {units} OCS; {direct:,.0f} uplinks from each pod "
        "to each other pod; uneven traffic transits a third pod (not counted)",))
