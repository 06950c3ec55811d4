"""The emulated power meter's logging plan (emulators/instruments/meter.py): how a logging
run's samples fall on the stretches between the optical model's change times, taken
in runs of whole samples at once, is what each sample gives on its own by definition
(wholly inside one stretch: that stretch; straddling a change: each stretch it
overlaps, weighted by the overlap)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from emulators.instruments.meter import PowerMeter


class _Changes:
    """What ``PowerMeter._plan`` asks of its meter: the bounds of a span."""

    def __init__(self, changes: list[float]):
        self.changes = changes
        self._last_plan = None

    def _bounds(self, start: float, end: float) -> list[float]:
        return [start, *(t for t in self.changes if start < t < end), end]


def per_sample(bounds: list[float], start: float, count: int,
               interval: float) -> list[list[tuple[int, float]]]:
    """Each sample's (stretch, weight) list, sample by sample."""
    found = []
    for k in range(count):
        first, last = start + k * interval, start + (k + 1) * interval
        inside = [j for j in range(len(bounds) - 1)
                  if bounds[j] <= first and (last <= bounds[j + 1] or j == len(bounds) - 2)]
        if inside:
            found.append([(inside[-1], 1.0)])
            continue
        found.append([(j, (min(last, bounds[j + 1]) - max(first, bounds[j])) / interval)
                      for j in range(len(bounds) - 1)
                      if bounds[j] < last and min(last, bounds[j + 1]) - max(first, bounds[j]) > 0])
    return found


def expanded(runs: list[tuple[int, list[tuple[int, float]]]]) -> list[list[tuple[int, float]]]:
    return [weights for repeat, weights in runs for _ in range(repeat)]


@settings(max_examples=300, deadline=None)
@given(start=st.sampled_from([0.0, 1.25, 97.3]),
       interval=st.sampled_from([1e-4, 0.001, 0.01, 0.1, 1 / 3]),
       count=st.integers(1, 400),
       inside=st.lists(st.floats(0.0, 1.0), max_size=6),
       on_sample=st.lists(st.integers(0, 400), max_size=3))
def test_runs_of_whole_samples_are_what_each_sample_gives(
        start: float, interval: float, count: int, inside: list[float],
        on_sample: list[int]) -> None:
    changes = sorted([start + f * count * interval for f in inside]
                     + [start + k * interval for k in on_sample if k <= count])
    meter: Any = _Changes(changes)
    plan = PowerMeter._plan(meter, start, count, interval)
    assert expanded(plan.runs) == per_sample(plan.bounds, start, count, interval)


def test_a_long_logging_without_changes_is_one_run() -> None:
    meter: Any = _Changes([])
    plan = PowerMeter._plan(meter, 0.0, 200_000, 1e-5)
    assert plan.runs == [(200_000, [(0, 1.0)])]
