"""Switch and link counts of small fabrics, each worked out by hand in the test's text.

The counting rules are those of msoctl/design/trees.py: a k-ary fat-tree (Al-Fares,
Loukissas and Vahdat, "A Scalable, Commodity Data Center Network Architecture",
SIGCOMM 2008, section 3: k/2 edge and k/2 aggregation switches per pod, (k/2)^2 core
switches, k^3/4 hosts) and its 2-tier form (k leaves of k/2 down and k/2 up, k/2
spines, k^2/2 hosts), with partial builds by ceiling leaves, pods and the tier above.
Plain arithmetic: no device, no file but the shipped component table.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msoctl.design.architectures import ARCHITECTURES
from msoctl.design.components import load_table
from msoctl.design.fabric import Fabric, NotBuildable
from msoctl.design.inputs import DesignError, FabricInputs

TABLE = load_table()


def build(architecture: str, **shape: object) -> Fabric:
    inputs = FabricInputs(**shape)  # type: ignore[arg-type]
    inputs.check()
    return ARCHITECTURES[architecture].build(inputs, TABLE)


def tiers(fabric: Fabric) -> list[tuple[str, int]]:
    return [(t.name, t.count) for t in fabric.tiers]


def links(fabric: Fabric) -> list[tuple[str, int]]:
    return [(g.role, g.count) for g in fabric.links]


def test_two_tiers_of_radix_4() -> None:
    """k = 4: a leaf has 2 ports down and 2 up, so 8 NIC ports take 8 / 2 = 4 leaves;
    their 4 x 2 = 8 uplinks fill 8 / 4 = 2 spines. 8 NIC links + 8 leaf-spine links;
    the longest path crosses leaf, spine, leaf: 3 switches."""
    fabric = build("fat-tree-2", gpus=8, gpus_per_server=1, radix=4)
    assert tiers(fabric) == [("leaf", 4), ("spine", 2)]
    assert links(fabric) == [("endpoint", 8), ("leaf-spine", 8)]
    assert (fabric.switches, fabric.switch_links, fabric.switch_hops_max) == (6, 8, 3)
    assert [t.ports_used for t in fabric.tiers] == [8 + 8, 8]
    assert fabric.oversubscription == 1.0


def test_three_tiers_of_radix_4() -> None:
    """k = 4: k^3/4 = 16 NIC ports; 16 / 2 = 8 edges in 8 / 2 = 4 pods, 4 x 2 = 8
    aggregation switches, 2 core groups of ceil(4 x 2 / 4) = 2: 4 cores (k^2/4);
    5k^2/4 = 20 switches. Links: 16 NIC, 8 x 2 = 16 edge-aggregation, 8 x 2 = 16
    aggregation-core. Longest path: edge, aggregation, core, aggregation, edge (5)."""
    fabric = build("fat-tree-3", gpus=16, gpus_per_server=1, radix=4)
    assert tiers(fabric) == [("edge", 8), ("aggregation", 8), ("core", 4)]
    assert links(fabric) == [("endpoint", 16), ("edge-aggregation", 16),
                             ("aggregation-core", 16)]
    assert (fabric.switches, fabric.switch_hops_max) == (20, 5)


def test_partial_builds_ceil_leaves_pods_and_the_tier_above() -> None:
    """Ten NIC ports on k = 4 in three tiers: ceil(10 / 2) = 5 edges, in ceil(5 / 2) = 3
    pods (the last with one edge), 3 x 2 = 6 aggregation switches, 2 x ceil(3 x 2 / 4) =
    4 cores. Links: 10 NIC, 5 x 2 = 10 edge-aggregation, 6 x 2 = 12 aggregation-core
    (every aggregation switch keeps both uplinks, also in the half-empty pod).
    Six ports in two tiers: 3 leaves, ceil(3 x 2 / 4) = 2 spines, 6 + 6 links."""
    three = build("fat-tree-3", gpus=10, gpus_per_server=1, radix=4)
    assert tiers(three) == [("edge", 5), ("aggregation", 6), ("core", 4)]
    assert links(three) == [("endpoint", 10), ("edge-aggregation", 10),
                            ("aggregation-core", 12)]
    two = build("fat-tree-2", gpus=6, gpus_per_server=1, radix=4)
    assert tiers(two) == [("leaf", 3), ("spine", 2)]
    assert links(two) == [("endpoint", 6), ("leaf-spine", 6)]


def test_full_trees_of_radix_64_match_the_published_counts() -> None:
    """k = 64: two tiers hold k^2/2 = 2,048 ports on 64 + 32 = 96 switches; three tiers
    hold k^3/4 = 65,536 on 5k^2/4 = 5,120 switches with 2 x 65,536 = 131,072 links
    between them (the FT2 and FT3 columns of DeepSeek-V3's table, arXiv 2505.09343)."""
    two = build("fat-tree-2", gpus=2048)
    assert tiers(two) == [("leaf", 64), ("spine", 32)]
    assert two.switch_links == 2048
    three = build("fat-tree-3", gpus=65536)
    assert tiers(three) == [("edge", 2048), ("aggregation", 2048), ("core", 1024)]
    assert (three.switches, three.switch_links) == (5120, 131072)


def test_a_fabric_that_fits_one_switch_is_one_switch() -> None:
    """Four ports on k = 4: one switch, one tier, one hop, whatever the architecture."""
    for name in ("fat-tree-2", "fat-tree-3", "rail-optimized"):
        fabric = build(name, gpus=4, gpus_per_server=1, radix=4)
        assert tiers(fabric) == [("switch", 1)], name
        assert (fabric.switch_hops_max, fabric.switch_links) == (1, 0)


def test_oversubscription_splits_the_leaf() -> None:
    """k = 8 at 3:1: a leaf has floor(8 x 3 / 4) = 6 ports down and 2 up. 48 NIC ports:
    8 leaves (k of them, the most two tiers allow), 16 uplinks on ceil(16 / 8) = 2
    spines; 48 + 16 links. 49 ports need a ninth leaf: not in two tiers."""
    fabric = build("fat-tree-2", gpus=48, gpus_per_server=1, radix=8, oversubscription=3.0)
    assert tiers(fabric) == [("leaf", 8), ("spine", 2)]
    assert links(fabric) == [("endpoint", 48), ("leaf-spine", 16)]
    assert fabric.oversubscription == 3.0
    with pytest.raises(NotBuildable, match="at most 48 NIC ports in 2 tiers; 49 asked"):
        build("fat-tree-2", gpus=49, gpus_per_server=1, radix=8, oversubscription=3.0)


def test_faster_switch_ports_are_split_to_the_nic_speed() -> None:
    """64 ports of 800G split into 128 of 400G: two tiers then hold 128 x 64 = 8,192
    ports (128 leaves, 64 spines), where 64 x 400G ports hold 2,048."""
    fabric = build("fat-tree-2", gpus=8192, radix=64, switch_speed_gbps=800)
    assert tiers(fabric) == [("leaf", 128), ("spine", 64)]
    with pytest.raises(NotBuildable, match="radix 64 at 400G connects at most 2,048"):
        build("fat-tree-2", gpus=8192, radix=64, switch_speed_gbps=400)


def test_multi_plane_is_one_two_tier_tree_per_nic_port_of_a_server() -> None:
    """Servers of 4 GPUs, one NIC each: 4 planes. 32 GPUs on k = 4: each plane holds
    32 / 4 = 8 ports, a full 2-tier tree of 4 leaves + 2 spines; 4 x 6 = 24 switches,
    4 x 8 = 32 NIC links and 32 leaf-spine links. DeepSeek-V3's MPFT (16,384 GPUs in
    8 planes of k = 64) is 8 x 96 = 768 switches and 8 x 2,048 = 16,384 links between
    them."""
    small = build("multi-plane", gpus=32, gpus_per_server=4, radix=4)
    assert (small.planes, tiers(small)) == (4, [("leaf", 16), ("spine", 8)])
    assert links(small) == [("endpoint", 32), ("leaf-spine", 32)]
    paper = build("multi-plane", gpus=16384, gpus_per_server=8)
    assert (paper.planes, paper.switches, paper.switch_links) == (8, 768, 16384)
    with pytest.raises(NotBuildable, match=r"8 planes of 2 tiers .* at most 16,384"):
        build("multi-plane", gpus=16392, gpus_per_server=8)


def test_rail_only_sizes_each_rail_for_its_servers() -> None:
    """Servers of 4 GPUs on k = 4: 4 rails, one port per server each. 3 servers: a rail
    of 3 ports takes a switch, 4 switches in all and 12 NIC links. 2 servers: rails of
    2 ports, floor(4 / 2) = 2 rails share a switch: 2 switches. 5 servers: a rail of 5
    ports needs two tiers, ceil(5 / 2) = 3 leaves and ceil(3 x 2 / 4) = 2 spines: 4 x 5 =
    20 switches, 20 NIC links and 4 x 6 = 24 leaf-spine links."""
    three = build("rail-only", gpus=12, gpus_per_server=4, radix=4)
    assert (three.planes, tiers(three), three.switch_links) == (4, [("switch", 4)], 0)
    assert links(three) == [("endpoint", 12)]
    two = build("rail-only", gpus=8, gpus_per_server=4, radix=4)
    assert (two.planes, tiers(two), two.tiers[0].ports_used) == (4, [("switch", 2)], 8)
    five = build("rail-only", gpus=20, gpus_per_server=4, radix=4)
    assert tiers(five) == [("leaf", 12), ("spine", 8)]
    assert links(five) == [("endpoint", 20), ("leaf-spine", 24)]


def test_a_big_switch_counts_its_chips_and_internal_links() -> None:
    """k = 4 chips, so a big switch has at most k^2/2 = 8 external ports. 16 GPUs in
    servers of 2 (one NIC each): one plane would need 16 ports, two planes need 8 each
    (2 divides the server's 2 ports): 2 big switches, each a 2-tier Clos of 4 + 2 = 6
    chips with 4 x 2 = 8 internal links. One flat tier: 1 box, 3 chips on the path."""
    fabric = build("bigswitch", gpus=16, gpus_per_server=2, radix=4)
    assert (fabric.planes, tiers(fabric)) == (2, [("bigswitch", 2)])
    box = fabric.tiers[0]
    assert (box.ports_each, box.chips_each, box.internal_links_each) == (8, 6, 8)
    assert links(fabric) == [("endpoint", 16)]
    assert (fabric.switch_hops_max, fabric.chip_hops_max, fabric.switch_chips) == (1, 3, 12)
    with pytest.raises(NotBuildable, match="big switches of 16 ports; at most 8"):
        build("bigswitch", gpus=32, gpus_per_server=2, radix=4)


def test_ocs_spine_replaces_the_core_with_ocs_ports() -> None:
    """k = 4, 16 ports: 8 edges in 4 pods, 8 aggregation switches (as fat-tree-3); each
    pod has 2 x 2 = 4 uplinks. The shipped OCS has 136 ports: floor(136 / 4) = 34 per
    pod per OCS, so one OCS takes all 4 x 4 = 16 uplinks. 16 aggregation-OCS links,
    each with one transceiver (the OCS has none) and light travelling twice the reach
    class; 4 switches on the path (no core)."""
    fabric = build("ocs-spine", gpus=16, gpus_per_server=1, radix=4)
    assert tiers(fabric) == [("edge", 8), ("aggregation", 8), ("ocs", 1)]
    assert links(fabric) == [("endpoint", 16), ("edge-aggregation", 16),
                             ("aggregation-ocs", 16)]
    uplinks = fabric.links[2]
    assert (uplinks.optical_ends, uplinks.segments, uplinks.through_ocs) == (1, 2, True)
    assert (fabric.switches, fabric.ocs_ports, fabric.switch_hops_max) == (16, 136, 4)


def test_impossible_shapes_are_refused_before_counting() -> None:
    """An odd radix has no k/2; a NIC port faster than the switch port cannot be
    linked; planes must divide a server's NIC ports."""
    for shape, words in (({"radix": 63}, "even number"),
                         ({"nic_speed_gbps": 800}, "does not fit a 400G switch port"),
                         ({"planes": 3}, "give a divisor"),
                         ({"oversubscription": 0.5}, "from 1 to 16")):
        with pytest.raises(DesignError, match=words):
            FabricInputs(gpus=1024, **shape).check()  # type: ignore[arg-type]


RADIX = st.integers(min_value=2, max_value=32).map(lambda half: 2 * half)
FAST = settings(max_examples=200, deadline=None)


@FAST
@given(radix=RADIX, fill=st.floats(min_value=0.0, max_value=1.0), ratio=st.sampled_from([1, 3]))
def test_every_two_tier_build_is_a_proper_leaf_spine(radix: int, fill: float,
                                                     ratio: int) -> None:
    """For any radix and any scale up to the 2-tier limit: the leaves hold every port and
    not one leaf too many, the spines take every uplink, and no spine has more ports in
    use than it has; there are no more spines than a leaf has uplinks, so each leaf
    reaches every spine. At the limit with 1:1 leaves it is the full tree: k^2/2 ports,
    k + k/2 switches."""
    inputs = FabricInputs(gpus=1, gpus_per_server=1, radix=radix,
                          oversubscription=float(ratio))
    down, up = inputs.leaf_split()
    ports = max(radix + 1, round(fill * radix * down))
    if ports > radix * down:
        return
    fabric = build("fat-tree-2", gpus=ports, gpus_per_server=1, radix=radix,
                   oversubscription=float(ratio))
    (leaf, spine) = fabric.tiers
    assert (leaf.count - 1) * down < ports <= leaf.count * down
    assert leaf.count <= radix and spine.count <= up
    assert spine.ports_used == leaf.count * up <= spine.count * radix
    assert all(t.ports_used <= t.count * t.ports_each for t in fabric.tiers)
    assert fabric.links_total == ports + leaf.count * up
    if ratio == 1 and ports == radix * down:
        assert (ports, fabric.switches) == (radix ** 2 // 2, 3 * radix // 2)


@FAST
@given(radix=RADIX, fill=st.floats(min_value=0.0, max_value=1.0))
def test_every_three_tier_build_is_a_proper_fat_tree(radix: int, fill: float) -> None:
    """For any radix and scale up to k^3/4: edges hold every port, pods are at most k,
    each core group takes the uplinks of one aggregation position of every pod within
    k ports a core and at most k/2 cores (each aggregation switch reaches each core of
    its group); at the limit it is the full tree of 5k^2/4 switches and k^3/2 links
    between them."""
    half = radix // 2
    ports = max(radix + 1, round(fill * radix ** 3 / 4))
    fabric = build("fat-tree-3", gpus=ports, gpus_per_server=1, radix=radix)
    edge, aggregation, core = fabric.tiers
    pods = aggregation.count // half
    assert (edge.count - 1) * half < ports <= edge.count * half
    assert pods <= radix and (pods - 1) * half < edge.count <= pods * half
    per_group = core.count // half
    assert core.count == half * per_group and per_group <= half
    assert aggregation.count * half <= core.count * radix
    assert all(t.ports_used <= t.count * t.ports_each for t in fabric.tiers)
    if ports == radix ** 3 // 4:
        assert fabric.switches == 5 * radix ** 2 // 4
        assert fabric.switch_links == radix ** 3 // 2
