"""Protection capacity for many links at once: which of the links that want to move now
may, onto which span, and why the others may not.

One evaluation of the controller sees every link that lost its light (a cable cut
darkens many at once); they are allocated together, so that decisions are consistent:

- a link moves onto the span of its other role only when that span is *free* (it
  carries no other link now: no other link's transmitter feeds it at either end, and
  it feeds no other link's receiver) and *lit* in both directions (verified by its
  probe light);
- a span goes to one link of the evaluation at most: no two links are moved onto one
  protection span. Where several want it (links that share a protection span and lost
  their working spans together), the one whose loss was seen first gets it, then the
  lower link name: the others are refused with the name of the link that got it;
- switches (light lost) come before reverts (light restored), so a revert never takes
  a span from a link that is down;
- a span that a link leaves in this evaluation is not given to another in the same
  one: it is the span that failed, or, for a revert, the next evaluation sees it free.

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from msoctl.links import Link, Span
from msoctl.protect.light import DIRECTION_NAMES, LIT, DirectionLight, span_state

TAKEN, DARK, CAPACITY = "taken", "dark", "capacity"


@dataclass(frozen=True)
class Candidate:
    """A link that wants to move from the span of ``from_role`` to the other one."""

    link: Link
    from_role: str
    to_role: str
    detected: float  # monotonic: the loss (or, for a revert, the restored light) first seen
    cause: str
    target_light: tuple[DirectionLight, ...]
    revert: bool = False
    finishing: bool = False
    """A move that failed half-way, to finish: the link is already partly on the target,
    whose light cannot be judged apart from it."""

    @property
    def target(self) -> Span:
        return self.link.span(self.to_role)

    @property
    def source(self) -> Span:
        return self.link.span(self.from_role)


@dataclass(frozen=True)
class Refusal:
    """Why ``candidate`` stays where it is: ``kind`` is :data:`TAKEN` (the span carries
    ``other``), :data:`CAPACITY` (the span went to ``other`` in the same evaluation) or
    :data:`DARK` (the span is not lit)."""

    candidate: Candidate
    kind: str
    reason: str
    other: str | None = None


def allocate(candidates: Iterable[Candidate], *,
             carrier: Callable[[Span], str | None]) -> tuple[list[Candidate], list[Refusal]]:
    """Split ``candidates`` into the moves to make now and the refusals.

    ``carrier(span)`` names the link that the span carries now (from the maps), or
    ``None`` when it is free.
    """
    ordered = sorted(candidates, key=lambda c: (c.revert, c.detected, c.link.name))
    leaving = {c.source.name for c in ordered}
    granted: dict[str, Candidate] = {}
    moves: list[Candidate] = []
    refusals: list[Refusal] = []
    for candidate in ordered:
        span, name = candidate.target, candidate.link.name
        other = carrier(span)
        if other is not None and other != name:
            refusals.append(Refusal(candidate, TAKEN, f"{span.name} is taken by {other}", other))
            continue
        winner = granted.get(span.name)
        if winner is not None:
            wanting = sum(c.target.name == span.name for c in ordered)
            refusals.append(Refusal(
                candidate, CAPACITY,
                f"{span.name} went to {winner.link.name}, which lost its light at the same "
                f"time (protection capacity exhausted: {wanting} links want {span.name})",
                winner.link.name))
            continue
        if span.name in leaving:
            refusals.append(Refusal(candidate, TAKEN, f"{span.name} is being left by another "
                                    "link in this same evaluation"))
            continue
        state = span_state(candidate.target_light)
        if state != LIT and not candidate.finishing:
            details = "; ".join(f"{DIRECTION_NAMES[d.direction]}: {d.reason}"
                                for d in candidate.target_light if d.state != LIT)
            word = "dark" if state == "lost" else state
            refusals.append(Refusal(candidate, DARK, f"{candidate.to_role} span {span.name} "
                                    f"is {word} ({details})"))
            continue
        granted[span.name] = candidate
        moves.append(candidate)
    return moves, refusals


class Carriers:
    """The link each span carries now, read from the maps of one evaluation: the link
    whose transmitter feeds one of its fibers, or whose receiver one of its fibers
    feeds; ``None`` when none does (or a map is unknown). Called with a span; each
    OCS's map is turned around (egress -> ingress) once, at its first question, for
    the fibers that leave it."""

    def __init__(self, maps: Mapping[str, Mapping[int, int] | None],
                 transmitters: Mapping[str, Mapping[int, str]],
                 receivers: Mapping[str, Mapping[int, str]]):
        self.maps = maps
        self.transmitters = transmitters
        self.receivers = receivers
        self._feeders: dict[str, dict[int, int]] = {}

    def __call__(self, span: Span) -> str | None:
        for fiber in (span.a_to_b, span.b_to_a):
            start, end = fiber.start.ocs, fiber.end.ocs
            feeders = self._feeding(start)
            if feeders is not None:
                feeder = feeders.get(fiber.start.port)
                if feeder is not None and feeder in self.transmitters.get(start, {}):
                    return self.transmitters[start][feeder]
            end_map = self.maps.get(end)
            if end_map is not None:
                fed = end_map.get(fiber.end.port)
                if fed is not None and fed in self.receivers.get(end, {}):
                    return self.receivers[end][fed]
        return None

    def _feeding(self, ocs: str) -> dict[int, int] | None:
        """OCS ``ocs``'s map turned around: which ingress feeds each egress port."""
        found = self._feeders.get(ocs)
        if found is None:
            port_map = self.maps.get(ocs)
            if port_map is None:
                return None
            found = self._feeders[ocs] = {e: i for i, e in port_map.items()}
        return found


def describe(refusals: Sequence[Refusal]) -> list[str]:
    """One line per link left down: ``link-2: span-p1 went to link-1 ...``."""
    return [f"{r.candidate.link.name}: {r.reason}" for r in refusals]
