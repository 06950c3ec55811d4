"""Generate the topology of a large fabric for the lab (``msoctl lab topology generate``).

The fabric, as the generator builds it:

- Campuses ``c1..cN``, each with K OCS of P x P ports (``c1-ocs1`` ..; ingress 1..P,
  egress P+1..2P). OCS number k of every campus forms *plane* k: every span joins
  two OCS of one plane, so light never crosses from a plane to another. A plane is
  an OCS domain, which the lab can run in a process of its own.
- One switch per campus and plane (``c1-sw1`` ..), patched into that plane's OCS
  only, with as many ports as the OCS carries link ends (``Ethernet1..``).
- L links spread round-robin over the campus pairs, then over the planes: link l
  joins the switches of its pair's two campuses in its plane.
- Each link has a working span of its own (``span-l``) and a protection span
  (``span-L+g``) between the same two OCS, shared by the R links of protection group
  g (``--links-per-protection``, default 1: every link its own). Sharing saves
  ports, but a shared span protects one link of its group at a time (1:R).
- Spans between the same two campuses are grouped, in order, into cables of S
  (``cable-1`` ..): working spans in working cables, protection spans in protection
  cables of their own route, so one cut never takes a link's two spans. A cut of a
  working cable darkens S links at once.
- Amplifiers on A spans, spread evenly (``amp-1`` ..), on the A->B fiber as in the
  default topology, at the far campus.
- With ``--hosts-per-campus H``, H GPU servers per campus (``c1-gpu1`` ..) of
  ``--gpus-per-host`` GPUs, their vendors taken in turn from ``--host-vendors`` (mixed
  vendors on every campus), each with one NIC per plane: NIC r (rail r) on the campus's
  switch of plane r+1, on host ports after the switch's long-haul ports (rail-optimised:
  a rail is a plane). A plane whose campus switch carries no link has no switch, and no
  rail there.
- With ``--idle-light``, a bank of idle light sources per OCS (``c1-ocs1-idle``, 0 dBm
  each), one per protection span ending there, patched into the ingress ports after
  the spans' ports.

Why idle light. A span that carries nothing is dark, and a dark span cannot be told
from a cut one: nothing could verify a standby span before a link is switched onto it,
nor see a repaired working span come back (which a revert's wait-to-restore needs). A
real fabric that protects its links therefore keeps light on every standby span --
an idle transmitter or a light source patched into a free ingress port of the OCS,
where an amplified line system would have its supervisory channel -- and that is what
``msoctl protect run`` looks for: a free lit ingress port, parked on the standby span,
swapped onto the working span a link leaves. One source per protection span end is
enough: a span is either a link's or the standby of its group. It is an option because
it costs an ingress port per protection span end, which a fabric generated for the
lab's own scale tests, with no controller, would rather give to links.

Port budget, per OCS: each link end takes an ingress and an egress port for its
switch port and another of each for its working span (the span's two fibers), plus
one of each per protection span ending there -- the cross-connects of
``msoctl.links.Link.connections`` pair them. With 1:1 protection that is 3 ingress
and 3 egress ports per link end, so a 64x64 OCS carries 21 link ends; idle light adds
an ingress port per protection span (4 ingress ports per link end with 1:1: a 64x64
OCS carries 16, a 128x128 one 32). A fabric that
does not fit is refused (:class:`FabricDoesNotFit`) naming the fullest OCS and what
would make it fit.

Deterministic: the same arguments give the same file byte for byte; the seed varies
only the cables' route lengths (each route 0-10 % longer than the campus distance,
as cables follow roads and rights of way). Switches are unmanaged by default
(``--switch-management none``: their optics only; NETCONF and SNMP servers for
every switch of a large fabric cost more than the OCS themselves).
"""

from __future__ import annotations

import itertools
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from drivers.yamlfile import load_text
from emulators.lab.hostspec import GPU_VENDORS
from emulators.lab.topology import SWITCH_MANAGEMENT, parse_topology

MAX_CAMPUSES = 32
MAX_OCS_PER_CAMPUS = 64
MAX_LINKS = 20_000
SWITCH_SPEED = "400G"
PATCH_KM = 0.01
"""A switch port's two 5 m patches, added to the span to make its cable length."""
ROUTE_SPREAD = 0.10
IDLE_LIGHT_DBM = 0.0
"""Each idle light source's launch power: a span of 30 km and two OCS passes later it
arrives some 10 dB above the controller's default -20 dBm threshold."""


class FabricDoesNotFit(ValueError):
    """The fabric asked for needs more ports than its OCS have (one line)."""


@dataclass(frozen=True)
class FabricSpec:
    """What ``msoctl lab topology generate`` asks for (see the module docstring)."""

    campuses: int
    ocs_per_campus: int
    links: int
    ocs_size: int = 64
    spans_per_cable: int = 64
    amplified_spans: int = 0
    links_per_protection: int = 1
    switch_management: str = "none"
    span_length_km: float = 30.0
    seed: int = 1
    name: str | None = None
    idle_light: bool = False
    hosts_per_campus: int = 0
    gpus_per_host: int = 8
    host_vendors: tuple[str, ...] = ("nvidia",)

    def check(self) -> None:
        """ValueError naming the first argument out of range."""
        limits = (("campuses", self.campuses, 2, MAX_CAMPUSES),
                  ("ocs_per_campus", self.ocs_per_campus, 1, MAX_OCS_PER_CAMPUS),
                  ("ocs_size", self.ocs_size, 4, 512), ("links", self.links, 1, MAX_LINKS),
                  ("spans_per_cable", self.spans_per_cable, 1, 4096),
                  ("links_per_protection", self.links_per_protection, 1, 4096))
        for what, value, low, high in limits:
            if not low <= value <= high:
                raise ValueError(f"{what} must be {low}..{high}, not {value}")
        if not 0 < self.span_length_km <= 150:
            raise ValueError("span_length_km must be more than 0 and at most 150 km "
                             "(with the patches and the route's spread, within the lab's 200)")
        if self.switch_management not in SWITCH_MANAGEMENT:
            raise ValueError(f"switch_management must be one of {', '.join(SWITCH_MANAGEMENT)}")
        if not 0 <= self.hosts_per_campus <= 1024 or not 1 <= self.gpus_per_host <= 72:
            raise ValueError("hosts_per_campus must be 0..1024 and gpus_per_host 1..72")
        if not self.host_vendors or any(v not in GPU_VENDORS for v in self.host_vendors):
            raise ValueError(f"host_vendors must be some of {', '.join(GPU_VENDORS)}")
        spans = self.links + self.protection_spans
        if not 0 <= self.amplified_spans <= spans:
            raise ValueError(f"amplified_spans must be 0..{spans} (the fabric's spans)")

    @property
    def protection_spans(self) -> int:
        groups = _link_groups(self)
        return sum(-(-len(members) // self.links_per_protection) for members in groups.values())


@dataclass
class _End:
    ocs: str
    switch: str
    port: int  # the switch's EthernetN
    tx: int  # OCS ingress the switch port's transmitter feeds
    rx: int  # OCS egress feeding its receiver


@dataclass
class _Ocs:
    name: str
    campus: int
    plane: int
    size: int
    ends: int = 0
    protection: int = 0
    next_in: int = 0
    next_out: int = 0
    switch_ports: int = field(default=0)

    def take(self) -> tuple[int, int]:
        """The next free (ingress, egress) pair for a span's fibers."""
        pair = (self.next_in, self.next_out)
        self.next_in += 1
        self.next_out += 1
        return pair


def _pairs(spec: FabricSpec) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(1, spec.campuses + 1), 2))


def _placement(spec: FabricSpec, index: int) -> tuple[tuple[int, int], int]:
    """Link ``index`` (0-based): its campus pair and plane."""
    pairs = _pairs(spec)
    return pairs[index % len(pairs)], (index // len(pairs)) % spec.ocs_per_campus + 1


def _link_groups(spec: FabricSpec) -> dict[tuple[int, int, int], list[int]]:
    """Links (0-based) by (campus a, campus b, plane): those that may share protection."""
    groups: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for index in range(spec.links):
        (a, b), plane = _placement(spec, index)
        groups[(a, b, plane)].append(index)
    return groups


def _ocs_name(campus: int, plane: int) -> str:
    return f"c{campus}-ocs{plane}"


def _switch_name(campus: int, plane: int) -> str:
    return f"c{campus}-sw{plane}"


def _ingress_needed(spec: FabricSpec, unit: _Ocs) -> int:
    return 2 * unit.ends + unit.protection * (2 if spec.idle_light else 1)


def _check_budget(spec: FabricSpec, ocs: dict[str, _Ocs]) -> None:
    fullest = min(ocs.values(), key=lambda o: (-_ingress_needed(spec, o), o.name))
    needed = _ingress_needed(spec, fullest)
    if needed <= fullest.size:
        return
    egress = 2 * fullest.ends + fullest.protection
    sharing = ("its own protection span" if spec.links_per_protection == 1
               else f"a protection span per {spec.links_per_protection} links")
    idle = (f" + {fullest.protection} idle light sources" if spec.idle_light else "")
    raise FabricDoesNotFit(
        f"the fabric does not fit: {fullest.name} needs {needed} ingress and {egress} egress "
        f"ports ({fullest.ends} link ends x 2 for the switch port and the working span, + "
        f"{fullest.protection} protection spans{idle}, each link with {sharing}), a "
        f"{fullest.size}x{fullest.size} OCS has {fullest.size} of each; add OCS "
        f"(--ocs-per-campus), make them larger (--ocs-size), share protection "
        f"(--links-per-protection) or carry fewer links")


def generate(spec: FabricSpec) -> dict[str, Any]:
    """The topology document of ``spec`` (the YAML file's content). Raises ValueError for
    an argument out of range and :class:`FabricDoesNotFit` for ports that run out."""
    spec.check()
    rng = random.Random(f"msoctl-fabric/{spec.seed}")
    ocs = {_ocs_name(c, k): _Ocs(_ocs_name(c, k), c, k, spec.ocs_size)
           for c in range(1, spec.campuses + 1) for k in range(1, spec.ocs_per_campus + 1)}
    groups = _link_groups(spec)
    for (a, b, plane), members in groups.items():
        shared = -(-len(members) // spec.links_per_protection)
        for campus in (a, b):
            ocs[_ocs_name(campus, plane)].ends += len(members)
            ocs[_ocs_name(campus, plane)].protection += shared
    _check_budget(spec, ocs)
    for unit in ocs.values():  # switch ports first, then the spans' ports
        unit.next_in, unit.next_out = unit.ends + 1, spec.ocs_size + unit.ends + 1

    ends: dict[int, tuple[_End, _End]] = {}
    for index in range(spec.links):
        (a, b), plane = _placement(spec, index)
        both = []
        for campus in (a, b):
            unit = ocs[_ocs_name(campus, plane)]
            unit.switch_ports += 1
            port = unit.switch_ports
            both.append(_End(unit.name, _switch_name(campus, plane), port, port,
                             spec.ocs_size + port))
        ends[index] = (both[0], both[1])

    spans: list[dict[str, Any]] = []
    span_ocs: dict[str, tuple[str, str]] = {}

    def new_span(name: str, a_end: _End, b_end: _End) -> dict[str, Any]:
        a_in, a_out = ocs[a_end.ocs].take()
        b_in, b_out = ocs[b_end.ocs].take()
        span = {"name": name, "fibers": [{"from": f"{a_end.ocs}:{a_out}",
                                          "to": f"{b_end.ocs}:{b_in}"},
                                         {"from": f"{b_end.ocs}:{b_out}",
                                          "to": f"{a_end.ocs}:{a_in}"}]}
        spans.append(span)
        span_ocs[name] = (a_end.ocs, b_end.ocs)
        return span

    links: list[dict[str, Any]] = []
    working: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    protection: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    protection_of: dict[int, str] = {}
    protection_count = 0
    for (a, b, _plane), members in groups.items():
        for start in range(0, len(members), spec.links_per_protection):
            protection_count += 1
            name = f"span-{spec.links + protection_count}"
            first = members[start]
            protection[(a, b)].append(new_span(name, *ends[first]))
            for index in members[start:start + spec.links_per_protection]:
                protection_of[index] = name
    for index in range(spec.links):
        (a, b), _plane = _placement(spec, index)
        working[(a, b)].append(new_span(f"span-{index + 1}", *ends[index]))
        a_end, b_end = ends[index]
        links.append({"name": f"link-{index + 1}",
                      "a": f"{a_end.switch}:Ethernet{a_end.port}",
                      "b": f"{b_end.switch}:Ethernet{b_end.port}",
                      "working": f"span-{index + 1}", "protection": protection_of[index]})
    spans.sort(key=lambda s: int(s["name"].split("-")[1]))

    cables: list[dict[str, Any]] = []
    for campuses in _pairs(spec):
        for role, unsorted in (("working", working[campuses]),
                               ("protection", protection[campuses])):
            route = sorted(unsorted, key=lambda s: int(s["name"].split("-")[1]))
            for start in range(0, len(route), spec.spans_per_cable):
                name = f"cable-{len(cables) + 1}"
                length = round(spec.span_length_km * (1 + rng.uniform(0, ROUTE_SPREAD)), 2)
                cables.append({"name": name, "role": role, "length_km": length})
                for span in route[start:start + spec.spans_per_cable]:
                    span["cable"] = name

    amplifiers: list[dict[str, Any]] = []
    if spec.amplified_spans:
        chosen = sorted({i * len(spans) // spec.amplified_spans
                         for i in range(spec.amplified_spans)})
        for number, position in enumerate(chosen, start=1):
            span = spans[position]
            far = span["fibers"][0]["to"].split(":")[0]
            amplifiers.append({"name": f"amp-{number}", "campus": f"c{ocs[far].campus}"})
            span["fibers"][0]["amplifier"] = f"amp-{number}"

    switches: list[dict[str, Any]] = [
        {"name": _switch_name(u.campus, u.plane), "campus": f"c{u.campus}", "ports": u.ends,
         "speed": SWITCH_SPEED, "cable_length_km": round(spec.span_length_km + PATCH_KM, 3),
         "management": spec.switch_management} for u in ocs.values() if u.ends]
    hosts = _hosts(spec, {s["name"]: s for s in switches}, {u.name: u for u in ocs.values()})
    patches = []
    transceivers = []
    for unit in ocs.values():
        if unit.ends:
            switch = _switch_name(unit.campus, unit.plane)
            patches.append({"from": f"{switch}:tx1", "to": f"{unit.name}:1",
                            "count": unit.ends})
            patches.append({"from": f"{unit.name}:{spec.ocs_size + 1}", "to": f"{switch}:rx1",
                            "count": unit.ends})
        if spec.idle_light and unit.protection:
            bank = f"{unit.name}-idle"
            transceivers.append({"name": bank, "count": unit.protection,
                                 "power_dbm": IDLE_LIGHT_DBM, "campus": f"c{unit.campus}"})
            patches.append({"from": f"{bank}:tx1", "to": f"{unit.name}:{unit.next_in}",
                            "count": unit.protection})
    name = spec.name or (f"fabric-{spec.campuses}c-{spec.ocs_per_campus}x{spec.ocs_size}-"
                         f"{spec.links}l")
    return {
        "name": name,
        "ocs": [{"name": u.name, "size": u.size, "campus": f"c{u.campus}"}
                for u in ocs.values()],
        "switches": switches,
        "transceivers": transceivers,
        "patches": patches,
        "amplifiers": amplifiers,
        "cables": cables,
        "spans": [{"name": s["name"], "cable": s["cable"], "fibers": s["fibers"]}
                  for s in spans],
        "links": links,
        "hosts": hosts,
    }


def _hosts(spec: FabricSpec, switches: dict[str, dict[str, Any]],
           ocs: dict[str, _Ocs]) -> list[dict[str, Any]]:
    """The GPU servers (module docstring); each switch's ``host_ports`` set for them."""
    hosts: list[dict[str, Any]] = []
    for campus in range(1, spec.campuses + 1):
        for number in range(1, spec.hosts_per_campus + 1):
            vendor = spec.host_vendors[(number - 1) % len(spec.host_vendors)]
            nics = []
            for plane in range(1, spec.ocs_per_campus + 1):
                switch = switches.get(_switch_name(campus, plane))
                if switch is None:
                    continue
                switch["host_ports"] = switch.get("host_ports", 0) + 1
                port = ocs[_ocs_name(campus, plane)].ends + switch["host_ports"]
                nics.append({"switch": switch["name"], "port": f"Ethernet{port}",
                             "rail": plane - 1})
            if not nics:
                raise ValueError(f"campus c{campus} has no switch for its hosts' NICs "
                                 "(no link ends there)")
            hosts.append({"name": f"c{campus}-gpu{number}", "campus": f"c{campus}",
                          "gpus": {"vendor": vendor, "count": spec.gpus_per_host},
                          "nics": nics})
    return hosts


def _flow(value: Any) -> str:
    """One YAML flow item: mappings and lists inline, text quoted where YAML needs it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, str) and (":" in value or not value):
        return json.dumps(value)
    return str(value)


def summary(document: dict[str, Any], spec: FabricSpec) -> str:
    """One line: what the topology holds."""
    cables = document["cables"]
    return (f"{len(document['ocs'])} OCS of {spec.ocs_size}x{spec.ocs_size} in "
            f"{spec.campuses} campuses ({spec.ocs_per_campus} planes), "
            f"{len(document['switches'])} switches, {len(document['links'])} links, "
            f"{len(document['spans'])} spans in {len(cables)} cables of up to "
            f"{spec.spans_per_cable}, {len(document['amplifiers'])} amplifiers"
            + (f", {sum(t['count'] for t in document['transceivers'])} idle light sources"
               if document["transceivers"] else "")
            + (f", {len(document['hosts'])} GPU servers of "
               f"{'/'.join(spec.host_vendors)}" if document.get("hosts") else ""))


def generate_text(spec: FabricSpec, command: str = "") -> str:
    """The topology file of ``spec``, checked by loading it as the lab will."""
    return render(generate(spec), spec, command)


def render(document: dict[str, Any], spec: FabricSpec, command: str = "") -> str:
    """The topology file of ``document`` (made by :func:`generate` from ``spec``), checked
    by loading it as the lab will; ``command`` is named in its first line."""
    lines = [f"# Generated by {command or 'emulators.lab.generate'} (seed {spec.seed}).",
             f"# {summary(document, spec)}.",
             "# Planes: OCS number k of every campus, with their switches, are one domain;",
             "# spans join OCS of one plane only. Regenerate rather than edit by hand.",
             f"name: {_flow(document['name'])}"]
    for section in ("ocs", "switches", "transceivers", "patches", "amplifiers", "cables",
                    "spans", "links", "hosts"):
        if not document[section]:
            continue
        lines.append(f"{section}:")
        lines.extend(f"  - {_flow(item)}" for item in document[section])
    text = "\n".join(lines) + "\n"
    parse_topology(load_text(text, "<generated topology>"), "<generated topology>")
    return text
