"""OCS domains of a topology, and how a lab spread over processes shares them out.

A *domain* is a set of OCS joined by spans, with everything fiber joins to them:
their switches' optics, the amplifiers on their spans, their test sets. Light never
crosses from one domain to another, so each can run in a process of its own with an
optical model of its own, and what one process computes is never needed by another.
(A switch patched into OCS of two domains joins them into one: a switch is one
device, in one process.)

:func:`partition` shares the domains among workers: those that carry links, heaviest
first, each to the least loaded worker (weight: its links and OCS ports, which is
what the alarms, the monitors and the status walk); domains without links (a test
set's OCS) go with the first. :func:`restrict` cuts the topology of one worker out of
the whole: the same names, the same ports, only its own elements -- a cable whose
spans lie in several domains appears in each, holding the spans there.
"""

from __future__ import annotations

from dataclasses import replace

from emulators.lab.topology import Topology


def domains(topology: Topology) -> list[frozenset[str]]:
    """The domains of ``topology`` as sets of element names (OCS, transceiver banks and
    switches, amplifiers, test-set instruments), in the order of their first OCS.
    Elements joined to no OCS go with the first domain."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def join(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    names = [*(o.name for o in topology.ocs), *(t.name for t in topology.transceivers),
             *(a.name for a in topology.amplifiers)]
    for name in names:
        find(name)
    for fiber in topology.fibers():
        start, end = fiber.from_port.split(":")[0], fiber.to_port.split(":")[0]
        join(start, end)
        if fiber.amplifier:
            join(fiber.amplifier, end)
    for test_set in topology.test_sets:
        for instrument in (test_set.laser, test_set.meter):
            join(instrument, test_set.ocs)
    groups: dict[str, set[str]] = {}
    for name in parent:
        groups.setdefault(find(name), set()).add(name)
    ocs_names = [o.name for o in topology.ocs]
    found = [frozenset(group) for group in sorted(
        (g for g in groups.values() if g & set(ocs_names)),
        key=lambda g: min(ocs_names.index(n) for n in g if n in ocs_names))]
    strays = frozenset().union(*(g for g in groups.values() if not g & set(ocs_names)))
    if strays and found:
        found[0] = found[0] | strays
    return found


def _weight(topology: Topology, domain: frozenset[str]) -> int:
    links = sum(1 for link in topology.links if link.a.split(":")[0] in domain)
    ports = sum(2 * o.size for o in topology.ocs if o.name in domain)
    return 64 * links + ports


def partition(topology: Topology, processes: int) -> list[frozenset[str]]:
    """The element names of each worker: at most ``processes`` of them, never more than
    the domains that carry links (at least one)."""
    found = domains(topology)
    linked = [d for d in found if any(link.a.split(":")[0] in d for link in topology.links)]
    idle = [d for d in found if d not in linked]
    count = max(1, min(processes, len(linked)))
    shares: list[set[str]] = [set() for _ in range(count)]
    loads = [0] * count
    for domain in sorted(linked, key=lambda d: -_weight(topology, d)):
        lightest = loads.index(min(loads))
        shares[lightest] |= domain
        loads[lightest] += _weight(topology, domain)
    for domain in idle:
        shares[0] |= domain
    return [frozenset(share) for share in shares]


def restrict(topology: Topology, names: frozenset[str]) -> Topology:
    """The part of ``topology`` whose elements are ``names`` (see the module docstring)."""
    def ours(port: str) -> bool:
        return port.split(":")[0] in names

    spans = [s for s in topology.spans if all(ours(f.from_port) for f in s.fibers)]
    span_names = {s.name for s in spans}
    cables = []
    for cable in topology.cables:
        held = tuple(name for name in cable.spans if name in span_names)
        if held:
            cables.append(replace(cable, spans=held, fibers=tuple(
                f for f in cable.fibers if f.span in span_names)))
    return Topology(
        name=topology.name, source=topology.source,
        ocs=[o for o in topology.ocs if o.name in names],
        transceivers=[t for t in topology.transceivers if t.name in names],
        switches=[s for s in topology.switches if s.name in names],
        amplifiers=[a for a in topology.amplifiers if a.name in names],
        patches=[f for f in topology.patches if ours(f.from_port)],
        spans=spans, cables=cables,
        links=[link for link in topology.links if ours(link.a)],
        test_sets=[t for t in topology.test_sets if t.ocs in names],
        # a server runs beside the switch of its first NIC (it is no part of the optics)
        hosts=[h for h in topology.hosts if h.nics[0].switch in names])
