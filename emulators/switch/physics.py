"""The figures and small formulas of the switch's congestion model (see :mod:`.model`).

Units are in the names: bytes, seconds, bits per second.
"""

from __future__ import annotations

import math

from drivers.switch.link import (
    FIBER_VELOCITY_M_PER_S,
    PAUSE_QUANTUM_BITS,
    PEER_RESPONSE_SECONDS,
)

MAX_PAUSE_QUANTA = 65535
"""Pause frames carry the longest pause time; the port refreshes them at half of it."""

FABRIC_RTT_SECONDS = 4e-6
"""Round trip through the switch pipelines and the NICs, on top of the cable's."""

RECEIVER_CNP_INTERVAL_SECONDS = 50e-6
"""A receiver NIC sends at most one CNP per flow per 50 us (np_min_time_between_cnps
as the original DCQCN proposal set it)."""

RATE_DECREASE_PERIOD_SECONDS = 4e-6
"""A sender cuts a flow's rate at most once per 4 us (ConnectX's rate-reduce monitor
period), however many CNPs arrive."""

ALPHA_TIMER_SECONDS = 55e-6
ALPHA_GAIN = 1 / 256
RECOVERY_TIMER_SECONDS = 55e-6
ADDITIVE_INCREASE_BPS = 40e6
"""DCQCN's reaction point: alpha (the estimate of congestion) moves by g = 1/256 per
55 us timer; without CNPs the rate closes half of its gap to the target rate per
timer (fast recovery) and the target rises by 40 Mb/s per timer (additive increase)."""


def pause_refresh_seconds(line_rate_bps: float) -> float:
    """Interval between two pause frames for a priority that stays paused."""
    return MAX_PAUSE_QUANTA * PAUSE_QUANTUM_BITS / line_rate_bps / 2


def cable_rtt_seconds(cable_length_m: float) -> float:
    return 2 * cable_length_m / FIBER_VELOCITY_M_PER_S


def in_flight_after_pause_bytes(cable_length_m: float, line_rate_bps: float) -> float:
    """Bytes that still arrive after a pause is sent: one cable round trip plus the
    partner's response time, at line rate."""
    return (cable_rtt_seconds(cable_length_m) + PEER_RESPONSE_SECONDS) * line_rate_bps / 8


def wred_probability(depth_bytes: float, min_bytes: int, max_bytes: int,
                     max_probability_percent: int) -> float:
    """Marking (or WRED drop) probability at a queue depth: 0 below the minimum,
    rising linearly to the maximum probability at the maximum threshold, 1 above it."""
    if depth_bytes < min_bytes:
        return 0.0
    if depth_bytes >= max_bytes:
        return 1.0
    return (depth_bytes - min_bytes) / (max_bytes - min_bytes) * max_probability_percent / 100


class Sender:
    """The senders of one queue's flows, as one DCQCN reaction point (all flows alike)."""

    def __init__(self, flows: int, wanted_bps: float):
        self.flows = flows
        self.wanted_bps = wanted_bps  # per flow
        self.rate_bps = wanted_bps
        self.target_bps = wanted_bps
        self.alpha = 1.0

    @property
    def total_bps(self) -> float:
        return self.rate_bps * self.flows

    @property
    def settled(self) -> bool:
        return self.rate_bps >= self.wanted_bps

    def want(self, flows: int, wanted_bps: float) -> None:
        self.flows = flows
        self.wanted_bps = wanted_bps
        self.rate_bps = min(self.rate_bps, wanted_bps)
        self.target_bps = min(self.target_bps, wanted_bps)

    def coast(self, steps: int, dt: float) -> None:
        """``steps`` steps of ``dt`` without CNPs at the wanted rate: only alpha moves,
        decaying as :meth:`step` decays it, in closed form."""
        self.alpha *= (1 - dt / ALPHA_TIMER_SECONDS * ALPHA_GAIN) ** steps

    def step(self, cnps_per_flow_per_second: float, dt: float) -> None:
        """Advance ``dt`` seconds receiving CNPs at the given rate per flow."""
        cuts = min(cnps_per_flow_per_second, 1 / RATE_DECREASE_PERIOD_SECONDS) * dt
        share = min(1.0, cnps_per_flow_per_second * ALPHA_TIMER_SECONDS)
        self.alpha += dt / ALPHA_TIMER_SECONDS * ALPHA_GAIN * (share - self.alpha)
        if cuts > 0:
            self.target_bps += (self.rate_bps - self.target_bps) * min(1.0, cuts)
            self.rate_bps *= (1 - self.alpha / 2) ** cuts
        quiet = (1 - share) * dt / RECOVERY_TIMER_SECONDS
        self.target_bps = min(self.wanted_bps,
                              self.target_bps + ADDITIVE_INCREASE_BPS * quiet)
        self.rate_bps += (self.target_bps - self.rate_bps) * (1 - math.pow(2, -quiet))
        self.rate_bps = min(self.rate_bps, self.wanted_bps)
        if self.rate_bps > self.wanted_bps * (1 - 1e-9):  # recovered: exactly, so idle
            self.rate_bps = self.target_bps = self.wanted_bps
