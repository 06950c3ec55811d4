"""Fabric links in the inventory: which switch ports are joined through which OCS ports,
spans and amplifiers — the model that ``path``, ``fabric`` and ``protect`` work on.

Two top-level inventory sections, beside ``devices``::

    spans:                          # the fiber pairs between campuses
      - name: span-1
        length_km: 30
        loss_db_per_km: 0.2         # default 0.2 (G.652 at 1550 nm, with splices)
        connector_loss_db: 0.6      # all connectors of one fiber; default 0.5
        cable: cable-east           # optional: the cable (sheath, duct) it runs in
        a_to_b: {from: ocs-a:121, to: ocs-b:61, amplifier: amp-1}
        b_to_a: {from: ocs-b:121, to: ocs-a:61}
    links:                          # switch port <-> switch port, both directions
      - name: link-1
        a: {switch: sw-a, port: Ethernet1, tx: ocs-a:1, rx: ocs-a:65}
        b: {switch: sw-b, port: Ethernet1, tx: ocs-b:1, rx: ocs-b:65}
        working: span-1
        protection: span-2          # optional
        tx_power_dbm: 1.0           # optional: the launch power the budget starts from

``tx: ocs-a:1`` says the switch port's transmitter is patched into ocs-a's
ingress port 1; ``rx: ocs-a:65`` that ocs-a's egress port 65 feeds its
receiver. A span's ``a_to_b`` fiber leaves the OCS of the link's ``a`` end and
reaches the OCS of its ``b`` end (``b_to_a`` the other way). So a link on a
span needs, at each end's OCS, two cross-connects (:meth:`Link.connections`):

- at a: ``tx`` -> the span's a_to_b ``from`` port, and the span's b_to_a ``to``
  port -> ``rx``;
- at b: the span's a_to_b ``to`` port -> ``rx``, and ``tx`` -> the span's b_to_a
  ``from`` port.

Protection moves both cross-connects at both ends from the working span's ports
to the protection span's.

A span's ``cable`` names its shared risk: the spans that one cut darkens together
(one sheath, or one duct or trench where several cables share a route; the lab's
topology writes its cables here). A link's protection span must not be in its
working span's cable. The protection controller uses the cables to act on a cut as
soon as every span of the cable is dark, instead of waiting a moment for more losses
(msoctl/protect/controller.py, the gathering). Every reference is checked when the inventory loads
(devices of the right kind, OCS ends consistent), each error naming the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drivers.yamlfile import LinedList, Section, YamlFileError

DEFAULT_LOSS_DB_PER_KM = 0.2
DEFAULT_CONNECTOR_LOSS_DB = 0.5
_OCS_PORT = re.compile(r"^(?P<ocs>[A-Za-z0-9][A-Za-z0-9_.-]{0,62}):(?P<port>[0-9]{1,4})$")
LINK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}")
"""A link or span name (matched whole: ``fullmatch``)."""


@dataclass(frozen=True)
class OcsPort:
    ocs: str
    port: int

    def __str__(self) -> str:
        return f"{self.ocs}:{self.port}"


@dataclass(frozen=True)
class SpanFiber:
    """One direction of a span: from an OCS egress port to another OCS's ingress port."""

    start: OcsPort
    end: OcsPort
    amplifier: str | None = None


@dataclass(frozen=True)
class Span:
    name: str
    length_km: float
    loss_db_per_km: float
    connector_loss_db: float
    a_to_b: SpanFiber
    b_to_a: SpanFiber
    cable: str | None = None
    """The spans that fail with it share it (see the module docstring)."""

    @property
    def fiber_loss_db(self) -> float:
        """Loss of one fiber of the span, amplifier not counted."""
        return self.length_km * self.loss_db_per_km + self.connector_loss_db


@dataclass(frozen=True)
class LinkEnd:
    switch: str
    port: str
    tx: OcsPort  # the OCS ingress port the switch port's transmitter feeds
    rx: OcsPort  # the OCS egress port that feeds the switch port's receiver


@dataclass(frozen=True)
class Link:
    name: str
    a: LinkEnd
    b: LinkEnd
    working: Span
    protection: Span | None = None
    tx_power_dbm: float | None = None

    def span(self, role: str) -> Span:
        if role == "working":
            return self.working
        if role == "protection" and self.protection is not None:
            return self.protection
        raise KeyError(f"link {self.name} has no {role} span")

    def connections(self, role: str = "working") -> dict[str, list[tuple[int, int]]]:
        """The OCS cross-connects (ingress, egress) that carry this link over the span
        of ``role``, per OCS."""
        span = self.span(role)
        return {
            self.a.tx.ocs: [(self.a.tx.port, span.a_to_b.start.port),
                            (span.b_to_a.end.port, self.a.rx.port)],
            self.b.tx.ocs: [(span.a_to_b.end.port, self.b.rx.port),
                            (self.b.tx.port, span.b_to_a.start.port)],
        }

    @property
    def ocs_names(self) -> tuple[str, str]:
        return self.a.tx.ocs, self.b.tx.ocs


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _ocs_port(section: Section, key: str) -> OcsPort:
    text = section.get(key, str)
    match = _OCS_PORT.match(text.strip())
    if match is None:
        raise section.error(key, f"{text!r}: write OCS:PORT, like ocs-a:121")
    return OcsPort(match["ocs"], int(match["port"]))


def _items(data: Mapping[str, Any], key: str, source: str) -> list[tuple[Any, int]]:
    entries = data.get(key)
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise YamlFileError(f"{source}: inventory: field '{key}' must be a list")
    lines = entries.item_lines if isinstance(entries, LinedList) else [0] * len(entries)
    return list(zip(entries, lines, strict=True))


def parse_spans_and_links(data: Mapping[str, Any], source: str,
                          kinds: Mapping[str, str]) -> tuple[dict[str, Span], dict[str, Link]]:
    """The ``spans`` and ``links`` sections, checked against the devices' ``kinds``."""

    def device(section: Section, key: str, name: str, kind: str) -> None:
        found = kinds.get(name)
        if found is None:
            raise section.error(key, f"no device named {name!r}")
        if found != kind:
            raise section.error(key, f"{name!r} is {_article(found)}, not {_article(kind)}")

    spans: dict[str, Span] = {}
    for index, (item, line) in enumerate(_items(data, "spans", source)):
        section = Section(item, source, f"span #{index + 1}", line=line)
        section.reject_unknown({"name", "length_km", "loss_db_per_km", "connector_loss_db",
                                "cable", "a_to_b", "b_to_a"})
        name = section.get("name", str)
        if not LINK_NAME.fullmatch(name):
            raise section.error("name", "must be letters, digits, '.', '_', ':' or '-'")
        section.owner = f"span {name!r}"
        if name in spans:
            raise section.error("name", "is defined twice")
        length = section.get("length_km", float)
        if not 0 < length <= 20_000:
            raise section.error("length_km", "must be more than 0 and at most 20000 km")
        per_km = section.get("loss_db_per_km", float, default=DEFAULT_LOSS_DB_PER_KM)
        if not 0 <= per_km <= 10:
            raise section.error("loss_db_per_km", "must be 0..10 dB/km")
        connectors = section.get("connector_loss_db", float, default=DEFAULT_CONNECTOR_LOSS_DB)
        if not 0 <= connectors <= 30:
            raise section.error("connector_loss_db", "must be 0..30 dB")
        cable = section.get("cable", str, default=None)
        if cable is not None and not LINK_NAME.fullmatch(cable):
            raise section.error("cable", "must be letters, digits, '.', '_', ':' or '-'")
        fibers = []
        for key in ("a_to_b", "b_to_a"):
            sub = Section(section.get(key, dict), source, f"span {name!r} {key}",
                          line=getattr(section.data.get(key), "line", line))
            sub.reject_unknown({"from", "to", "amplifier"})
            start, end = _ocs_port(sub, "from"), _ocs_port(sub, "to")
            device(sub, "from", start.ocs, "ocs")
            device(sub, "to", end.ocs, "ocs")
            if start.ocs == end.ocs:
                raise sub.error("to", "a span joins two different OCSes")
            amplifier = sub.get("amplifier", str, default=None)
            if amplifier is not None:
                device(sub, "amplifier", amplifier, "amp")
            fibers.append(SpanFiber(start, end, amplifier))
        a_to_b, b_to_a = fibers
        if (a_to_b.start.ocs, a_to_b.end.ocs) != (b_to_a.end.ocs, b_to_a.start.ocs):
            raise section.error("b_to_a", "must run between the same two OCSes as a_to_b, "
                                "the other way")
        spans[name] = Span(name, length, per_km, connectors, a_to_b, b_to_a, cable)

    links: dict[str, Link] = {}
    used: dict[str, str] = {}
    working_spans: dict[str, str] = {}
    for index, (item, line) in enumerate(_items(data, "links", source)):
        section = Section(item, source, f"link #{index + 1}", line=line)
        section.reject_unknown({"name", "a", "b", "working", "protection", "tx_power_dbm"})
        name = section.get("name", str)
        if not LINK_NAME.fullmatch(name):
            raise section.error("name", "must be letters, digits, '.', '_', ':' or '-'")
        section.owner = f"link {name!r}"
        if name in links:
            raise section.error("name", "is defined twice")
        ends: list[LinkEnd] = []
        for key in ("a", "b"):
            sub = Section(section.get(key, dict), source, f"link {name!r} end {key}",
                          line=getattr(section.data.get(key), "line", line))
            sub.reject_unknown({"switch", "port", "tx", "rx"})
            switch = sub.get("switch", str)
            device(sub, "switch", switch, "switch")
            tx, rx = _ocs_port(sub, "tx"), _ocs_port(sub, "rx")
            device(sub, "tx", tx.ocs, "ocs")
            if rx.ocs != tx.ocs:
                raise sub.error("rx", f"must be on the same OCS as tx ({tx.ocs})")
            port = sub.get("port", str)
            link_end = LinkEnd(switch, port, tx, rx)
            for taken in (f"{switch}:{port}", str(tx), str(rx)):
                if taken in used:
                    raise sub.error(None, f"{taken} is already used by link {used[taken]!r}")
                used[taken] = name
            ends.append(link_end)
        a, b = ends
        roles: dict[str, Span | None] = {}
        for role in ("working", "protection"):
            span_name = section.get(role, str, default=None)
            if span_name is None:
                if role == "working":
                    raise section.error(None, "field 'working' is required")
                roles[role] = None
                continue
            span = spans.get(span_name)
            if span is None:
                raise section.error(role, f"no span named {span_name!r}")
            if (span.a_to_b.start.ocs, span.a_to_b.end.ocs) != (a.tx.ocs, b.tx.ocs):
                raise section.error(role, f"span {span_name} runs {span.a_to_b.start.ocs} -> "
                                    f"{span.a_to_b.end.ocs}; the link's ends are on "
                                    f"{a.tx.ocs} and {b.tx.ocs}")
            roles[role] = span
        working = roles["working"]
        assert working is not None
        if working.name in working_spans:
            raise section.error("working", f"span {working.name} already carries link "
                                f"{working_spans[working.name]!r} (one link per fiber pair; "
                                "links may share a protection span)")
        working_spans[working.name] = name
        protection = roles["protection"]
        if protection is not None and protection.name == working.name:
            raise section.error("protection", "must be another span than the working one")
        if protection is not None and protection.cable is not None \
                and protection.cable == working.cable:
            raise section.error("protection", f"span {protection.name} is in cable "
                                f"{working.cable}, as the working span {working.name} is: "
                                "one cut would darken both")
        tx_power = section.get("tx_power_dbm", float, default=None)
        if tx_power is not None and not -30 <= tx_power <= 30:
            raise section.error("tx_power_dbm", "must be -30..30 dBm")
        links[name] = Link(name, a, b, working, roles["protection"], tx_power)
    return spans, links
