"""What an instrument has: its optional features asked once per session.

A driver hands :func:`probe_queries` (every probe of its feature table, rendered for
its own source or port) to ``ScpiSession.probe`` along with any query it wants
answered in the same write; :func:`features_from` reads the answers against the
table, and :func:`unsupported` words the refusal when a request needs a feature the
unit lacks, naming the feature and what the unit answered to its probe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from drivers.errors import Unsupported
from drivers.features import Features
from drivers.instruments.commands import OptionalFeature
from drivers.scpi.session import UNDEFINED_HEADER, Probed


def probe_name(key: str, index: int) -> str:
    """The name under which probe ``index`` of feature ``key`` is asked."""
    return f"{key}:{index}"


def probe_queries(table: Mapping[str, OptionalFeature],
                  render: Callable[[str, str], str]) -> dict[str, str]:
    """Every probe of every feature of ``table``, by :func:`probe_name`: the query that
    ``render(command key, argument)`` writes."""
    return {probe_name(key, index): render(command, argument)
            for key, feature in table.items()
            for index, (command, argument) in enumerate(feature.probes)}


def _has(feature: OptionalFeature, answer: Probed) -> bool:
    return answer.reply is not None if feature.answered else answer.supported


def features_from(table: Mapping[str, OptionalFeature],
                  answers: Mapping[str, Probed]) -> Features:
    """The features of ``table`` the unit has, from its answers to the probes."""
    present = frozenset(
        key for key, feature in table.items()
        if all(_has(feature, answers[probe_name(key, index)])
               for index in range(len(feature.probes))))
    return Features(present, tuple(table))


def unsupported(table: Mapping[str, OptionalFeature], key: str,
                answers: Mapping[str, Probed], *, device: str,
                purpose: str = "") -> Unsupported:
    """The refusal of a request that needs feature ``key``: one line naming the feature
    and what the unit answered to the probe that showed it lacks it; ``purpose`` (what
    needed it) is added after a colon."""
    feature = table[key]
    failed = next(answer for index in range(len(feature.probes))
                  if not _has(feature, answer := answers[probe_name(key, index)]))
    if failed.error is None:
        how = "answered nothing"
    elif failed.error[0] == UNDEFINED_HEADER:
        how = "is an undefined header on it"
    else:
        how = f"is refused, {failed.error[0]} {failed.error[1].split(';')[0]}"
    message = f"{feature.title} not supported by this unit ({failed.query} {how})"
    return Unsupported(message + (f": {purpose}" if purpose else ""), device=device)
