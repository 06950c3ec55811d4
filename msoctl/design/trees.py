"""Counting fat-trees (folded Clos networks) of one, two and three tiers.

Notation: k switch ports at the link speed; a leaf (the bottom tier, "edge" in a
3-tier tree) has d ports down to NICs and u up (d = u = k/2 when non-blocking);
E is the number of NIC ports to connect.

One tier: one switch, E <= k.

Two tiers (leaf-spine). Every leaf has one uplink to each of u spines, and a spine
has a port for each leaf, so there are at most k leaves:

    leaves = ceil(E / d)             spines = ceil(leaves x u / k)
    links  = E + leaves x u          E <= k x d   (k^2/2 non-blocking)

A full non-blocking tree of k = 64: 2,048 ports, 64 leaves + 32 spines = 96 switches,
2,048 NIC links and 2,048 leaf-spine links. k = 4: 8 ports, 4 + 2 switches, 8 + 8 links.

Three tiers (Al-Fares et al., "A Scalable, Commodity Data Center Network
Architecture", SIGCOMM 2008). A pod has k/2 edge switches and u aggregation
switches; every edge has one uplink to each aggregation switch of its pod; an
aggregation switch has k/2 ports down (one per edge) and k/2 up to the core; core
switches form u groups, group j taking the uplinks of aggregation switch j of every
pod, and a core has k ports, so there are at most k pods:

    edges = ceil(E / d)      pods = ceil(edges / (k/2))     aggregation = pods x u
    cores = u x ceil(pods x (k/2) / k)
    links = E + edges x u + aggregation x k/2               E <= k x (k/2) x d

Full and non-blocking that is k^3/4 ports on 5k^2/4 switches: k = 64 gives 65,536
ports on 2,048 + 2,048 + 1,024 = 5,120 switches and 131,072 switch-to-switch links;
k = 4 gives 16 ports on 8 + 8 + 4 = 20 switches and 16 + 16 + 16 links.

Partial builds (a scale that is not a full tree) follow one rule: ceil the leaves
(edges) from the ports, the pods from the edges, and the switches above from the
uplinks they must take; every leaf and aggregation switch has all its uplinks
cabled, even when its last downlinks are unused, so the fabric stays non-blocking
(at its ratio) for what it holds. Ten ports on k = 4 in three tiers: 5 edges in
3 pods, 6 aggregation and 2 x ceil(3 x 2 / 4) = 4 core switches; 10 + 10 + 12 links.
"""

from __future__ import annotations

import math

from msoctl.design.fabric import (
    AGGREGATION_CORE,
    EDGE_AGGREGATION,
    ENDPOINT,
    LEAF_SPINE,
    SWITCH,
    LinkGroup,
    NotBuildable,
    Tier,
    Tree,
)

MAX_TIERS = 3


def capacity(tiers: int, radix: int, down: int, up: int) -> int:
    """The most NIC ports a tree of ``tiers`` (1..3) can connect."""
    if tiers == 1:
        return radix
    if tiers == 2:
        return radix * down
    return radix * (radix // 2) * down


def ratio(built: Tree, down: int, up: int) -> float:
    """The oversubscription of ``built``: down:up at its leaves, 1.0 for one switch."""
    return 1.0 if len(built.tiers) == 1 else down / up


def single_switch(ports: int, radix: int, speed_gbps: int) -> Tree:
    """One switch for ``ports`` <= ``radix`` NIC ports."""
    if ports > radix:
        raise NotBuildable(f"{ports:,} ports do not fit one switch of {radix}")
    return Tree(tiers=(Tier("switch", SWITCH, 1, radix, ports),),
                links=(LinkGroup(ENDPOINT, ports, speed_gbps),),
                switch_hops=1, path=(ENDPOINT, ENDPOINT))


def two_tier(ports: int, radix: int, down: int, up: int, speed_gbps: int) -> Tree:
    """A leaf-spine tree for ``ports`` NIC ports (see the module docstring)."""
    leaves = math.ceil(ports / down)
    if leaves > radix:
        raise NotBuildable(f"2 tiers of radix {radix} connect at most "
                           f"{capacity(2, radix, down, up):,} ports")
    uplinks = leaves * up
    spines = math.ceil(uplinks / radix)
    return Tree(
        tiers=(Tier("leaf", SWITCH, leaves, radix, ports + uplinks),
               Tier("spine", SWITCH, spines, radix, uplinks)),
        links=(LinkGroup(ENDPOINT, ports, speed_gbps),
               LinkGroup(LEAF_SPINE, uplinks, speed_gbps)),
        switch_hops=3, path=(ENDPOINT, LEAF_SPINE, LEAF_SPINE, ENDPOINT))


def pods_for(ports: int, radix: int, down: int) -> tuple[int, int]:
    """(edges, pods) of a 3-tier tree for ``ports`` NIC ports."""
    edges = math.ceil(ports / down)
    return edges, math.ceil(edges / (radix // 2))


def three_tier(ports: int, radix: int, down: int, up: int, speed_gbps: int) -> Tree:
    """A 3-tier fat-tree for ``ports`` NIC ports (see the module docstring)."""
    half = radix // 2
    edges, pods = pods_for(ports, radix, down)
    if pods > radix:
        raise NotBuildable(f"3 tiers of radix {radix} connect at most "
                           f"{capacity(3, radix, down, up):,} ports")
    aggregation = pods * up
    edge_links = edges * up
    core_links = aggregation * half
    cores = up * math.ceil(pods * half / radix)
    return Tree(
        tiers=(Tier("edge", SWITCH, edges, radix, ports + edge_links),
               Tier("aggregation", SWITCH, aggregation, radix, edge_links + core_links),
               Tier("core", SWITCH, cores, radix, core_links)),
        links=(LinkGroup(ENDPOINT, ports, speed_gbps),
               LinkGroup(EDGE_AGGREGATION, edge_links, speed_gbps),
               LinkGroup(AGGREGATION_CORE, core_links, speed_gbps)),
        switch_hops=5,
        path=(ENDPOINT, EDGE_AGGREGATION, AGGREGATION_CORE, AGGREGATION_CORE,
              EDGE_AGGREGATION, ENDPOINT))


def tree(tiers: int, ports: int, radix: int, down: int, up: int, speed_gbps: int) -> Tree:
    """A tree of exactly ``tiers`` tiers, or one switch when the ports fit one."""
    if ports <= radix:
        return single_switch(ports, radix, speed_gbps)
    build = two_tier if tiers == 2 else three_tier
    return build(ports, radix, down, up, speed_gbps)


def smallest_tree(ports: int, radix: int, down: int, up: int, speed_gbps: int) -> Tree:
    """The tree of the fewest tiers (1 to 3) that connects ``ports``."""
    for tiers in range(1, MAX_TIERS + 1):
        if ports <= capacity(tiers, radix, down, up):
            return tree(tiers, ports, radix, down, up, speed_gbps)
    raise NotBuildable(f"radix {radix} connects at most "
                       f"{capacity(MAX_TIERS, radix, down, up):,} ports in {MAX_TIERS} tiers")
