"""What a change does to the fabric's links: which it darkens, moves or disturbs.

Every command that changes a device works this out before it sends anything,
shows it in its plan (and ``--dry-run``), and refuses to take an in-service
link down (:func:`msoctl.safety.links_taken_down`) unless the link is drained
(:mod:`msoctl.linkstate`) or ``--force`` is given.

Effects, from worst:

| effect       | meaning                                                            |
|--------------|--------------------------------------------------------------------|
| down         | the link's light stops: its cross-connects go, a port it uses is   |
|              | disabled, an amplifier on the span it is carried on goes dark, its |
|              | switch port's speed changes (the link retrains)                    |
| moved        | the link changes span (one OCS switching time without light)       |
| unprotected  | the span that would protect the link goes dark                     |
| disturbed    | the link stays up but its light or its congestion settings change  |
| at risk      | nothing changes now; a later event (a power loss) would darken it  |
| still dark   | the link's path at this device is made, but its other OCS does not |
|              | carry that span: no light end to end                               |
| restored     | the link's path comes back end to end                              |

Where a link is carried is read from the OCS maps: a link is carried on the
span of a role (working, protection) at an OCS when both its cross-connects
for that role are in that OCS's map (:meth:`msoctl.links.Link.connections`);
it is carried end to end when that holds at both its OCS. An impact follows the light
end to end, as ``path show`` does: a path made at one OCS is ``restored`` only when the
other OCS carries the same span after the change, and moving one end of an in-service
link to another span while the other end stays takes it ``down``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from drivers.errors import SafetyInterlock
from msoctl import safety
from msoctl.inventory import Inventory
from msoctl.journal import Change as JournalChange
from msoctl.journal import Journal
from msoctl.links import Link
from msoctl.safety import Violation
from msoctl.words import plural

ROLES = ("working", "protection")
EFFECTS = ("down", "moved", "unprotected", "disturbed", "at risk", "still dark", "restored")


@dataclass(frozen=True)
class Impact:
    """One link touched by a change."""

    link: str
    effect: str  # one of EFFECTS
    span: str | None  # the span concerned (the one the link leaves, for "moved")
    reason: str
    drained: bool = False
    to_span: str | None = None  # for "moved": the span the link goes to
    assumed: bool = False  # the link's span could not be read; the worst was assumed

    @property
    def service(self) -> str:
        return "drained" if self.drained else "in service"

    def as_dict(self) -> dict[str, Any]:
        return {"link": self.link, "effect": self.effect, "span": self.span,
                "to_span": self.to_span, "service": self.service, "reason": self.reason,
                "assumed": self.assumed}


MapReader = Callable[[str], Mapping[int, int] | None]
"""OCS name -> its current map, or None when it cannot be read."""


def _span_name(link: Link, role: str | None) -> str | None:
    if role is None:
        return None
    return link.span(role).name


def _roles(link: Link) -> list[str]:
    return [role for role in ROLES if role == "working" or link.protection is not None]


def role_at(link: Link, ocs: str, port_map: Mapping[int, int]) -> str | None:
    """The role whose cross-connects of ``link`` are all in ``ocs``'s map, if any."""
    for role in _roles(link):
        pairs = link.connections(role).get(ocs)
        if pairs and all(port_map.get(ingress) == egress for ingress, egress in pairs):
            return role
    return None


def links_at(inventory: Inventory, ocs: str) -> list[Link]:
    return [link for link in inventory.links.values() if ocs in link.ocs_names]


def _lit_elsewhere(link: Link, ocs: str, role: str, read_map: MapReader | None
                   ) -> tuple[bool, bool]:
    """Whether ``link`` is carried on ``role`` at its other OCS too (so it is up end to end
    and a change at ``ocs`` can take it down), and whether that was assumed (unreadable)."""
    if read_map is None:
        return True, False
    other = next((name for name in link.ocs_names if name != ocs), None)
    if other is None:
        return True, False
    port_map = read_map(other)
    if port_map is None:
        return True, True
    return role_at(link, other, port_map) == role, False


def ocs_map(inventory: Inventory, ocs: str, before: Mapping[int, int],
            after: Mapping[int, int], drained: Iterable[str] = (),
            read_map: MapReader | None = None,
            read_after: MapReader | None = None) -> list[Impact]:
    """A map change of ``ocs``: the links whose path there goes, moves or comes back.

    With ``read_map`` (the other OCS's maps), a link is taken down or moved only if it is
    carried end to end now: one already dark at its other end loses nothing; and what it
    becomes is judged with the other OCS's map after the change (``read_after``: the
    other OCS's planned maps, when a plan changes them too; else its maps now)."""
    after_elsewhere = read_after or read_map
    out = set(drained)
    impacts = []
    for link in links_at(inventory, ocs):
        was, will = role_at(link, ocs, before), role_at(link, ocs, after)
        if was == will:
            continue
        assumed = False
        if was is not None:
            up, assumed = _lit_elsewhere(link, ocs, was, read_map)
            if not up:
                continue  # dark end to end already
        if was is not None and will is None:
            gone = [f"{i}:{e}" for i, e in link.connections(was)[ocs]
                    if after.get(i) != e]
            impacts.append(Impact(link.name, "down", _span_name(link, was),
                                  f"{ocs}: {', '.join(gone)} ({was}) removed",
                                  link.name in out, assumed=assumed))
        elif was is not None and will is not None:
            followed, _ = _lit_elsewhere(link, ocs, will, after_elsewhere)
            if followed:
                impacts.append(Impact(link.name, "moved", _span_name(link, was),
                                      f"{ocs}: {was} -> {will}", link.name in out,
                                      to_span=_span_name(link, will), assumed=assumed))
            else:
                impacts.append(Impact(link.name, "down", _span_name(link, was),
                                      f"{ocs}: {was} -> {will}, but {_other(link, ocs)} "
                                      f"stays off {will}: dark until both ends move",
                                      link.name in out, assumed=assumed))
        elif will is not None:
            lit, unknown = _lit_elsewhere(link, ocs, will, after_elsewhere)
            if lit:
                impacts.append(Impact(link.name, "restored", _span_name(link, will),
                                      f"{ocs}: its {will} cross-connects are made",
                                      link.name in out, assumed=unknown))
            else:
                impacts.append(Impact(link.name, "still dark", _span_name(link, will),
                                      f"{ocs}: its {will} cross-connects are made, but "
                                      f"{_other(link, ocs)} does not carry {will}",
                                      link.name in out))
    return impacts


def _other(link: Link, ocs: str) -> str:
    return next((name for name in link.ocs_names if name != ocs), ocs)


def ocs_ports_disabled(inventory: Inventory, ocs: str, ports: Iterable[int],
                       current: Mapping[int, int], drained: Iterable[str] = (),
                       read_map: MapReader | None = None) -> list[Impact]:
    """Disabling ``ports`` of ``ocs``: links carried through any of them go dark."""
    out, chosen = set(drained), set(ports)
    impacts = []
    for link in links_at(inventory, ocs):
        role = role_at(link, ocs, current)
        if role is None:
            continue
        up, assumed = _lit_elsewhere(link, ocs, role, read_map)
        used = sorted({p for pair in link.connections(role)[ocs] for p in pair} & chosen)
        if used and up:
            impacts.append(Impact(link.name, "down", _span_name(link, role),
                                  f"{ocs}: {plural(len(used), 'port')} "
                                  f"{', '.join(map(str, used))} disabled",
                                  link.name in out, assumed=assumed))
    return impacts


def ocs_boot_mode(inventory: Inventory, ocs: str, mode: str, current: Mapping[int, int],
                  drained: Iterable[str] = ()) -> list[Impact]:
    """A boot mode of ``dark``: links carried at ``ocs`` would not come back after a power
    loss. Nothing changes now."""
    if mode != "dark":
        return []
    out = set(drained)
    return [Impact(link.name, "at risk", _span_name(link, role),
                   f"{ocs}: after a power loss its map is not restored", link.name in out)
            for link in links_at(inventory, ocs)
            if (role := role_at(link, ocs, current)) is not None]


def carried(link: Link, read_map: MapReader) -> tuple[str | None, bool]:
    """The role ``link`` is carried on end to end, and whether that was assumed
    (an OCS map could not be read: the working span is assumed, the worst case for a
    change on it)."""
    roles = []
    for ocs in link.ocs_names:
        port_map = read_map(ocs)
        if port_map is None:
            return "working", True
        roles.append(role_at(link, ocs, port_map))
    if roles[0] is not None and roles[0] == roles[1]:
        return roles[0], False
    return None, False


def amplifier(inventory: Inventory, amp: str, effect: str, reason: str, read_map: MapReader,
              drained: Iterable[str] = ()) -> list[Impact]:
    """A change of amplifier ``amp`` whose effect on the span it amplifies is ``effect``
    (``down``, ``disturbed`` or ``restored``): the links carried on that span get it; a
    link that span would protect is ``unprotected`` when it goes down."""
    out = set(drained)
    spans = {span.name for span in inventory.spans.values()
             if amp in (span.a_to_b.amplifier, span.b_to_a.amplifier)}
    impacts = []
    for link in inventory.links.values():
        on = {role: link.span(role).name for role in _roles(link)}
        if not spans & set(on.values()):
            continue
        role, assumed = carried(link, read_map)
        if role is not None and on[role] in spans:
            impacts.append(Impact(link.name, effect, on[role], f"{amp}: {reason}",
                                  link.name in out, assumed=assumed))
        elif effect == "down":
            standby = next(name for name in on.values() if name in spans)
            impacts.append(Impact(link.name, "unprotected", standby, f"{amp}: {reason}",
                                  link.name in out, assumed=assumed))
    return impacts


def switch_config(inventory: Inventory, switch: str, changes: Sequence[Any],
                  drained: Iterable[str] = (), read_map: MapReader | None = None
                  ) -> list[Impact]:
    """Configuration changes on ``switch`` (:class:`drivers.switch.tree.Change`): a link on a
    port whose speed is changed or removed retrains (down) if it is up (carried end to end:
    ``read_map`` reads the OCS maps; without it the link is taken to be up); any other
    change on its port, or a switch-wide one (fast CNP, buffer), disturbs the links there."""
    out = set(drained)
    ports: dict[str, list[str]] = {}
    global_changes: list[str] = []
    for change in changes:
        if change.port is None:
            global_changes.append(change.aspect)
        else:
            ports.setdefault(change.port, []).append(change.aspect)
    impacts = []
    for link in inventory.links.values():
        for end in (link.a, link.b):
            if end.switch != switch:
                continue
            leaves = ports.get(end.port, [])
            role, assumed = ("working", False) if read_map is None else carried(link, read_map)
            if "speed" in leaves and role is not None:
                effect, reason = "down", f"{switch} {end.port}: speed changes (link retrains)"
            elif "speed" in leaves:
                effect, reason = "disturbed", (f"{switch} {end.port}: speed changes "
                                               "(the link is not lit now)")
            elif leaves:
                effect, reason = "disturbed", f"{switch} {end.port}: {', '.join(leaves[:4])}"
            elif global_changes:
                effect, reason = "disturbed", f"{switch}: {', '.join(global_changes[:4])}"
            else:
                continue
            impacts.append(Impact(link.name, effect,
                                  link.span(role).name if role else link.working.name, reason,
                                  link.name in out, assumed=assumed))
    return impacts


def worst_first(impacts: Iterable[Impact]) -> list[Impact]:
    """One line per link and effect, the worst effects first."""
    seen: dict[tuple[str, str], Impact] = {}
    for impact in impacts:
        seen.setdefault((impact.link, impact.effect), impact)
    return sorted(seen.values(), key=lambda i: (EFFECTS.index(i.effect), i.link))


def enforce(impacts: Sequence[Impact], *, journal: Journal, device: str, action: str,
            force: bool) -> list[Violation]:
    """Refuse (journaled, :class:`SafetyInterlock`, exit 3) a change that takes an in-service
    link down, unless ``force``; with ``force``, the violations to note in the change as
    journaled overrides."""
    violations = safety.links_taken_down(impacts)
    if violations and not force:
        message = safety.refusal(violations)
        journal.refuse(device=device, action=action, reason=message, exit_code=3,
                       rule=violations[0].rule, links=[i.as_dict() for i in impacts])
        raise SafetyInterlock(message, device=device)
    return violations


def note_overrides(change: JournalChange, violations: Sequence[Violation]) -> None:
    for violation in violations:
        change.note("override", rule=violation.rule, reason=violation.message)
