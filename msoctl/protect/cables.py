"""Cables while a cut's losses are gathered: whether every link a cable carries has gone
dark, so that the decision need not wait for more of its losses.

A span's ``cable`` (msoctl/links.py) names the spans one cut darkens together. The
decision loop gathers the losses of an outage for a moment before it acts
(msoctl/protect/controller.py, GATHER_MIN_SECONDS), so that a cable cut seen at many
OCSes is answered by one change. The moment is a guess at when the last OCS will have
reported. Once every link carried by the cut's cables has lost its light there is
nothing more to wait for from them, and the change can go at once.

Two questions, one cheap and one exact:

- :meth:`Cables.dark`: from the latest readings alone, whether every such link not yet
  judged lost reads dark at the far end of a fiber of its span. It is asked at each
  reading that comes while the loop gathers (dozens in a cable cut), to know whether
  judging again now could end the gathering; a wrong guess costs one evaluation.
- :meth:`Cables.all_lost`: from the links' judged state, whether every one of them has
  its loss seen. Only this ends a gathering, and only once every one of them the
  controller may decide for is a candidate of the same evaluation: a link whose loss
  was seen before but whose reading is not fresh now (a late poll) is not, and acting
  without it would answer the cut in two changes.

A link counts for the cable its span *now* is in (the span its maps put it on), not the
one it was planned on. Links out of service (drained) or in a change are left out. A
link with a span in the cable that no map shows on either span (a map not read since
a change, an OCS not answering) may be lit on it: the cable is not known to be dark,
and the gathering waits as it would without cables. Where several
cables share a trench, the inventory should name the trench as the cable: a gathering
ended by one cable's losses does not wait for another's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from msoctl.links import Link, Span, SpanFiber


class LinkView(Protocol):
    """What is asked of a link's state (the controller's ``_LinkState``)."""

    link: Link
    mapped_role: str | None
    loss_since: float | None
    drained: bool


Reading = Callable[[str, int], float | None]
"""The latest reading of an OCS port, dBm (``None``: none, or no light)."""
Threshold = Callable[[SpanFiber], float | None]
"""The reading below which a fiber's far end is dark (``None``: not known yet)."""


class Cables:
    def __init__(self, links: Iterable[Link]):
        self.carriers: dict[str, list[Link]] = {}
        """Per cable, the links with a span (of either role) in it."""
        for link in links:
            for span in (link.working, link.protection):
                if span is not None and span.cable is not None:
                    self.carriers.setdefault(span.cable, []).append(link)

    def of(self, spans: Iterable[Span]) -> frozenset[str] | None:
        """The cables of ``spans``; ``None`` if one has none (nothing to go by)."""
        found = set()
        for span in spans:
            if span.cable is None:
                return None
            found.add(span.cable)
        return frozenset(found)

    def all_lost(self, cables: Iterable[str], states: Mapping[str, LinkView],
                 busy: Callable[[str], bool]) -> bool:
        """Whether every link carried by ``cables`` now (``busy(link)``: in a change,
        left out) has its loss seen."""
        return all(span is not None and states[name].loss_since is not None
                   for name, span in self._carried(cables, states, busy))

    def carried(self, cables: Iterable[str], states: Mapping[str, LinkView],
                busy: Callable[[str], bool]) -> list[str]:
        """The names of the links ``cables`` carry now (as :meth:`all_lost` counts them)."""
        return [name for name, _ in self._carried(cables, states, busy)]

    def dark(self, cables: Iterable[str], states: Mapping[str, LinkView],
             busy: Callable[[str], bool], reading: Reading, threshold: Threshold) -> bool:
        """Whether every link carried by ``cables`` now whose loss is not seen yet reads
        dark at a far end of its span (below ``threshold``, or no reading)."""
        for name, span in self._carried(cables, states, busy):
            if span is None:
                return False  # on no span the maps show: maybe on this cable, lit
            if states[name].loss_since is not None:
                continue  # judged lost already
            if not any(_dark(fiber, reading, threshold) for fiber in (span.a_to_b, span.b_to_a)):
                return False
        return True

    def _carried(self, cables: Iterable[str], states: Mapping[str, LinkView],
                 busy: Callable[[str], bool]) -> Iterator[tuple[str, Span | None]]:
        """The links ``cables`` carry now, each with its span there; ``None`` for a
        link with a span in them that no map shows on either span (it may be)."""
        for cable in cables:
            for link in self.carriers.get(cable, ()):
                state = states.get(link.name)
                if state is None or state.drained or busy(link.name):
                    continue
                if state.mapped_role is None:
                    yield link.name, None
                    continue
                span = link.span(state.mapped_role)
                if span.cable == cable:
                    yield link.name, span


def _dark(fiber: SpanFiber, reading: Reading, threshold: Threshold) -> bool:
    limit = threshold(fiber)
    if limit is None:
        return False  # behind an amplifier whose gain is not known yet: not judged here
    power = reading(fiber.end.ocs, fiber.end.port)
    return power is None or power < limit
