"""What an architect reads off a solved scenario.

- **utilisation**: the bottleneck's mean output over the whole run against its line rate
  (the flows start together at line rate, as a collective's step does, so the start is
  part of it);
- **queue**: the bottleneck queue's mean, 99th percentile and largest depth, bytes, and
  the largest the other switch's queue reached (it fills only while paused);
- **PFC**: the share of the run during which the bottleneck kept its upstream paused, the
  PAUSE frames both switches sent, and bytes lost (a lossless class that loses has too
  little headroom);
- **CNPs per second**, over all flows, and **marked per second**: the packets the
  switches' RED curve selected (ECN-marked, or answered with a CNP);
- **flow completion time slowdown** for each size of a mix: a flow of that size, started
  at each of :data:`FCT_STARTS` evenly spread instants, is sent at one flow's share of the
  bottleneck's output and waits behind the queue it finds at the end; its time against
  the same flow alone on an idle path (size over line rate plus the one-way delay).
  Starts that cannot finish within the run are left out and counted. This is the fluid
  model's view of a flow that joins the others, not a packet-level FCT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from msoctl.design.cc.fluid import Solution
from msoctl.design.cc.scenario import DEFAULT_FLOW_SIZES

FCT_STARTS = 200


@dataclass(frozen=True)
class Slowdown:
    size_bytes: int
    mean: float | None  # None: no start finished within the run
    p99: float | None
    finished: int
    unfinished: int


@dataclass(frozen=True)
class Metrics:
    utilisation: float
    queue_mean_bytes: float
    queue_p99_bytes: float
    queue_max_bytes: float
    upstream_queue_max_bytes: float
    pause_fraction: float
    pause_frames: int
    lost_bytes: float
    cnps_per_second: float
    marked_per_second: float
    slowdowns: tuple[Slowdown, ...]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def measure(solution: Solution, flow_sizes: Sequence[int] = DEFAULT_FLOW_SIZES) -> Metrics:
    scenario = solution.scenario
    dt = solution.step_seconds
    duration = solution.steps * dt
    delivered = np.frombuffer(solution.delivered_bps)
    queue = np.frombuffer(solution.queue_bytes)
    upstream = np.frombuffer(solution.upstream_queue_bytes)
    return Metrics(
        utilisation=float(delivered.mean() / scenario.speed_bps),
        queue_mean_bytes=float(queue.mean()),
        queue_p99_bytes=float(np.percentile(queue, 99)),
        queue_max_bytes=float(queue.max()),
        upstream_queue_max_bytes=float(upstream.max()),
        pause_fraction=solution.paused_seconds / duration,
        pause_frames=solution.pause_frames,
        lost_bytes=solution.lost_bytes,
        cnps_per_second=solution.cnps / duration,
        marked_per_second=solution.marked_packets / duration,
        slowdowns=tuple(_slowdown(solution, delivered, queue, size) for size in flow_sizes),
    )


def _slowdown(solution: Solution, delivered: np.ndarray, queue: np.ndarray,
              size_bytes: int) -> Slowdown:
    scenario = solution.scenario
    dt = solution.step_seconds
    share = delivered / scenario.flows / 8 * dt           # bytes one flow moves per step
    sent = np.concatenate(([0.0], np.cumsum(share)))
    starts = np.linspace(0, solution.steps - 1, FCT_STARTS).astype(int)
    ends = np.searchsorted(sent, sent[starts] + size_bytes, side="left")
    done = ends <= solution.steps
    one_way = scenario.rtt_seconds / 2
    ideal = size_bytes * 8 / scenario.speed_bps + one_way
    if not done.any():
        return Slowdown(size_bytes, None, None, 0, FCT_STARTS)
    finished_at = ends[done]
    waited = queue[np.minimum(finished_at, solution.steps - 1)] * 8 / scenario.speed_bps
    times = (finished_at - starts[done]) * dt + one_way + waited
    ratios = times / ideal
    return Slowdown(size_bytes, float(ratios.mean()), float(np.percentile(ratios, 99)),
                    int(done.sum()), int((~done).sum()))
