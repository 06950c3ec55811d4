"""One queue of one port: its depth, its senders, its PFC state and its counters.

The physics is described in :mod:`emulators.switch.model`; this module
integrates one step of it.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from emulators.switch.config import QueueConfig, WatchdogConfig
from emulators.switch.physics import (
    FABRIC_RTT_SECONDS,
    RECEIVER_CNP_INTERVAL_SECONDS,
    Sender,
    pause_refresh_seconds,
    wred_probability,
)

COUNTER_NAMES = (
    "ecn-marked-packets",
    "switch-generated-cnps",
    "pfc-pause-frames-sent",
    "pfc-pause-frames-received",
    "dropped-packets",
    "buffer-watermark-bytes",
)


@dataclass(frozen=True)
class Probe:
    """A queue before one integration step, to tell afterwards whether the step changed
    anything but its counters and timers (see :meth:`QueueState.steady_until`)."""

    shape: tuple[object, ...]
    depth_bytes: float
    linear: tuple[float, float, float, float]  # marked, switch CNPs, dropped, stuck seconds


@dataclass(frozen=True)
class QueueStep:
    """What integration steps need to know besides the queue's own state, the time and the
    free pool: fixed while the configuration and the set of busy queues stay the same."""

    physical_loop_seconds: float  # pause sent -> partner's last byte arrives
    cable_rtt_seconds: float
    lossless: bool
    xoff_bytes: int
    xon_bytes: int
    watchdog: WatchdogConfig
    queue: QueueConfig
    fast_cnp: bool
    cnp_interval_seconds: float
    flow_table_share: float  # fraction of this queue's flows the fast-CNP flow table holds
    packet_bytes: int


class QueueState:
    def __init__(self, queue_id: int, line_rate_bps: float):
        self.queue_id = queue_id
        self.line_rate_bps = line_rate_bps
        self.offered_bps = 0.0
        self.drain_bps = line_rate_bps
        self.flows = 16
        self.burst_senders: int | None = None
        self.sender = Sender(self.flows, 0.0)
        self.depth_bytes = 0.0
        self.watermark_bytes = 0.0
        self.marked = 0.0
        self.switch_cnps = 0.0
        self.pauses_sent = 0.0
        self.pauses_received = 0.0
        self.dropped = 0.0
        self.pause_on = False
        self._refresh_elapsed = 0.0
        self._pause_history: list[tuple[float, bool]] = [(-math.inf, False)]
        self._feedback: list[tuple[float, float]] = []  # (due time, CNPs per flow per s)
        self._last_signal = 0.0
        self._cnp_rate = 0.0
        self.storm_since: float | None = None
        self.storm_ended_at: float | None = None
        self._storm_elapsed = 0.0
        self._stuck_seconds = 0.0
        self.watchdog_engaged = False

    # ---- load and faults -------------------------------------------------------------

    def _wanted(self) -> tuple[float, float]:
        if self.burst_senders is not None:
            return self.line_rate_bps, self.line_rate_bps / self.burst_senders
        return self.offered_bps, self.drain_bps

    def set_load(self, offered_bps: float, drain_bps: float, flows: int) -> None:
        self.offered_bps, self.drain_bps, self.flows = offered_bps, drain_bps, flows
        self._resend()

    def set_burst(self, senders: int | None) -> None:
        self.burst_senders = senders
        self._resend()

    def _resend(self) -> None:
        offered, _ = self._wanted()
        if self.sender.wanted_bps == 0 and offered > 0:
            self.sender = Sender(self.flows, offered / self.flows)  # new senders start at rate
        else:
            self.sender.want(self.flows, offered / self.flows)

    def storm_started(self, now: float) -> None:
        if self.storm_since is None:
            self.storm_since = now
            self.pauses_received += 1
            self._storm_elapsed = 0.0

    def storm_ended(self, now: float) -> None:
        self.storm_since = None
        self.storm_ended_at = now
        self._stuck_seconds = 0.0

    # ---- reading ---------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Nothing would change if time passed: the queue can be skipped."""
        offered, drain = self._wanted()
        return (self.depth_bytes == 0 and offered <= drain and self.sender.settled
                and not self.pause_on and self.storm_since is None
                and not self.watchdog_engaged and not self._feedback and self._cnp_rate == 0)

    def counters(self) -> dict[str, int]:
        values = (self.marked, self.switch_cnps, self.pauses_sent, self.pauses_received,
                  self.dropped, self.watermark_bytes)
        return {name: math.floor(value) for name, value in zip(COUNTER_NAMES, values,
                                                               strict=True)}

    # ---- steady state ------------------------------------------------------------------

    def _shape(self) -> tuple[object, ...]:
        sender = self.sender
        return (self.pause_on, self.watchdog_engaged, self.storm_since, self.burst_senders,
                sender.flows, sender.wanted_bps, sender.rate_bps, sender.target_bps,
                self._cnp_rate, self._last_signal, len(self._feedback))

    def probe(self) -> Probe:
        return Probe(self._shape(), self.depth_bytes,
                     (self.marked, self.switch_cnps, self.dropped, self._stuck_seconds))

    def steady_until(self, before: Probe, s: QueueStep, now: float, dt: float) -> float | None:
        """After one step of ``dt`` from ``now`` that began in state ``before``: when
        nothing but counters and timers changed and no feedback is on its way, the time
        until which every further step of ``dt`` repeats this one exactly (the watchdog's
        detection or restoration, or a pause whose effect is still crossing the cable,
        ends it); ``None`` when the queue is not in such a steady state."""
        if (self._shape() != before.shape or self._feedback or self._cnp_rate
                or self._last_signal):
            return None
        # A queue held full moves by rounding alone: a few units in the last place.
        tolerance = 4 * math.ulp(max(self.depth_bytes, before.depth_bytes))
        if abs(self.depth_bytes - before.depth_bytes) > tolerance:
            return None
        if s.lossless and self._pause_history[-1][0] > now - s.physical_loop_seconds:
            return None  # the partner has not yet seen our last pause or resume
        until = math.inf
        if self._stuck_seconds > before.linear[3]:
            until = now + s.watchdog.detection_seconds - before.linear[3]
        if (self.watchdog_engaged and self.storm_since is None
                and self.storm_ended_at is not None):
            until = min(until, self.storm_ended_at + s.watchdog.restoration_seconds)
        return until

    def extrapolate(self, before: Probe, steps: int, dt: float) -> None:
        """Take ``steps`` more steps like the one that followed ``before``, in closed form
        (only valid while :meth:`steady_until` allows it)."""
        marked, cnps, dropped, stuck = before.linear
        self.marked += (self.marked - marked) * steps
        self.switch_cnps += (self.switch_cnps - cnps) * steps
        self.dropped += (self.dropped - dropped) * steps
        self._stuck_seconds += (self._stuck_seconds - stuck) * steps
        refresh = pause_refresh_seconds(self.line_rate_bps)
        if self.storm_since is not None:
            self._storm_elapsed += steps * dt
            frames = math.floor(self._storm_elapsed / refresh)
            self.pauses_received += frames
            self._storm_elapsed -= frames * refresh
        if self.pause_on:
            self._refresh_elapsed += steps * dt
            frames = math.floor(self._refresh_elapsed / refresh)
            self.pauses_sent += frames
            self._refresh_elapsed -= frames * refresh
        self.sender.coast(steps, dt)

    def _paused_by_us_at(self, when: float) -> bool:
        history = self._pause_history
        while len(history) > 1 and history[1][0] <= when:
            del history[0]
        return history[0][1] if history[0][0] <= when else False

    # ---- one step --------------------------------------------------------------------

    def step(self, s: QueueStep, now: float, dt: float, pool_free_bytes: float) -> None:
        """Advance ``dt`` seconds from ``now``; ``pool_free_bytes`` is what the queue's pool
        has left besides this queue's depth."""
        _, drain_bps = self._wanted()
        wred = s.queue.wred
        honour_storm = self.storm_since is not None and s.lossless
        self._watchdog(s, now, dt, honour_storm)
        drop_all = self.watchdog_engaged and s.watchdog.action == "drop"
        if honour_storm and not (self.watchdog_engaged and s.watchdog.action == "forward"):
            drain_bps = 0.0
        if self.storm_since is not None:
            self._storm_elapsed += dt
            frames = math.floor(self._storm_elapsed / pause_refresh_seconds(self.line_rate_bps))
            self.pauses_received += frames
            self._storm_elapsed -= frames * pause_refresh_seconds(self.line_rate_bps)

        # Arrivals: the partner stops one pause loop after we paused it.
        paused = s.lossless and self._paused_by_us_at(now - s.physical_loop_seconds)
        arrival_bytes = 0.0 if paused else min(self.sender.total_bps,
                                               self.line_rate_bps) * dt / 8
        packets = arrival_bytes / s.packet_bytes
        probability = (wred_probability(self.depth_bytes, wred.min_threshold_bytes or 0,
                                        wred.max_threshold_bytes or 0,
                                        wred.max_probability_percent)
                       if wred.has_thresholds else 0.0)
        if wred.enable_ecn:
            self.marked += packets * probability
        elif not s.lossless and probability > 0:  # WRED drops instead of marking
            self.dropped += packets * probability
            arrival_bytes *= 1 - probability
        if drop_all:
            self.dropped += (arrival_bytes + self.depth_bytes) / s.packet_bytes
            self.depth_bytes = arrival_bytes = 0.0

        limit = self.depth_bytes + pool_free_bytes
        if s.lossless:  # the pause point plus the headroom above it
            limit = min(limit, 2 * s.xoff_bytes)
        base = self.depth_bytes - drain_bps * dt / 8
        accepted = min(arrival_bytes, max(0.0, limit - max(0.0, base)))
        self.dropped += (arrival_bytes - accepted) / s.packet_bytes
        self.depth_bytes = max(0.0, base + accepted)
        self.watermark_bytes = max(self.watermark_bytes, self.depth_bytes)

        self._feedback_step(s, now, dt, packets * probability / dt / self.sender.flows)
        self._pfc_step(s, now, dt)

    def _watchdog(self, s: QueueStep, now: float, dt: float, honour_storm: bool) -> None:
        if honour_storm and not self.watchdog_engaged and s.watchdog.enabled:
            if self.depth_bytes > 0:
                self._stuck_seconds += dt
            if self._stuck_seconds >= s.watchdog.detection_seconds:
                self.watchdog_engaged = True
        if self.watchdog_engaged and (not s.watchdog.enabled or (
                self.storm_since is None and self.storm_ended_at is not None
                and now - self.storm_ended_at >= s.watchdog.restoration_seconds)):
            self.watchdog_engaged = False
            self._stuck_seconds = 0.0

    def _feedback_step(self, s: QueueStep, now: float, dt: float,
                       marks_per_flow_per_second: float) -> None:
        loop = s.cable_rtt_seconds + FABRIC_RTT_SECONDS
        if s.fast_cnp:
            per_flow = marks_per_flow_per_second
            if s.cnp_interval_seconds > 0:
                per_flow = min(per_flow, 1 / s.cnp_interval_seconds)
            per_flow *= s.flow_table_share
            self.switch_cnps += per_flow * self.sender.flows * dt
        elif s.queue.wred.enable_ecn:  # the receiver echoes the marks, half a loop later
            per_flow = min(marks_per_flow_per_second, 1 / RECEIVER_CNP_INTERVAL_SECONDS)
            loop *= 1.5
        else:
            per_flow = 0.0
        if per_flow != self._last_signal:
            bisect.insort(self._feedback, (now + loop, per_flow))
            self._last_signal = per_flow
        while self._feedback and self._feedback[0][0] <= now:
            self._cnp_rate = self._feedback.pop(0)[1]
        self.sender.step(self._cnp_rate, dt)

    def _pfc_step(self, s: QueueStep, now: float, dt: float) -> None:
        resume = (self.depth_bytes < s.xoff_bytes
                  and self.depth_bytes <= s.xoff_bytes - s.xon_bytes)
        if self.pause_on and (not s.lossless or resume):
            self.pause_on = False
            self._pause_history.append((now, False))
        elif (not self.pause_on and s.lossless and self.depth_bytes > 0
              and self.depth_bytes >= s.xoff_bytes):
            self.pause_on = True
            self._pause_history.append((now, True))
            self.pauses_sent += 1
            self._refresh_elapsed = 0.0
        elif self.pause_on:
            refresh = pause_refresh_seconds(self.line_rate_bps)
            self._refresh_elapsed += dt
            frames = math.floor(self._refresh_elapsed / refresh)
            self.pauses_sent += frames
            self._refresh_elapsed -= frames * refresh
