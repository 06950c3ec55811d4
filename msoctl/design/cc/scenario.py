"""One case for the fluid model: the link, the flows, the switches, the NICs.

The fabric is two switches and a long span between them::

    senders --host link-- switch A ==== span (distance) ==== switch B --host link-- receivers

The bottleneck is ``near`` (A's port onto the span, where traffic from many ports funnels
into the long-haul link: the span is the narrow part) or ``far`` (B's port toward a
receiver, after the span: the span has room, the receiver's link does not). The other
switch's queue exists too and only fills when it is paused.

Switch thresholds come from a WANT file (the port's ``xoff_bytes``, ``xon_bytes``, its
lossless queue's ``ecn`` thresholds, the switch-wide ``fast_cnp.min_interval_us``) or,
without one, are worked out for the link exactly as ``msoctl switch plan`` does, so the
model reads the numbers the switches get. The switch sends PAUSE when a lossless queue
reaches ``buffer_bytes - xoff_bytes`` (the headroom is what arrives after), and resumes
at ``xon_bytes`` below that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from drivers.errors import ValidationError
from drivers.switch.intent import Intent
from drivers.switch.link import FIBER_VELOCITY_M_PER_S, PAUSE_QUANTUM_BITS
from msoctl.design.cc.nic import Nic, nic
from msoctl.ops.headroom import LinkParameters, compute

BOTTLENECKS = ("near", "far")
MODES = ("ecn", "switch")
"""Feedback: ``ecn`` marks at the switch and CNPs from the receiving NIC (end to end);
``switch`` CNPs sent by the congested switch itself (fast CNP)."""

DEFAULT_BUFFER_BYTES = 256_000_000
"""The buffer one lossless queue of a deep-buffer switch may fill (assumed, not measured)."""
DEFAULT_SWITCH_LATENCY_SECONDS = 2e-6
DEFAULT_HOST_LINK_M = 10.0
DEFAULT_PACKET_BYTES = 4096
DEFAULT_NIC_TURNAROUND_SECONDS = 1e-6
PAUSE_QUANTA_SENT = 65535
"""The pause time a PFC XOFF frame asks for; it is refreshed at half of that."""
MAX_FLOWS = 100_000
DEFAULT_FLOW_SIZES = (1_000_000, 16_000_000, 64_000_000)
"""Sizes whose completion-time slowdown is reported (bytes)."""
MAX_DURATION_SECONDS = 10.0


@dataclass(frozen=True)
class SwitchSettings:
    """One lossless queue's settings, in bytes, seconds and fractions."""

    ecn_min_bytes: int
    ecn_max_bytes: int
    ecn_max_probability: float
    xoff_bytes: int
    xon_bytes: int
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    fast_cnp_interval_seconds: float | None = None  # None: the NICs' min_time_between_cnps
    latency_seconds: float = DEFAULT_SWITCH_LATENCY_SECONDS

    @property
    def pause_at_bytes(self) -> int:
        return self.buffer_bytes - self.xoff_bytes

    def check(self) -> None:
        if not 0 <= self.ecn_min_bytes < self.ecn_max_bytes:
            raise ValidationError(f"ECN thresholds {self.ecn_min_bytes:,}..{self.ecn_max_bytes:,}"
                                  " B: the minimum must be below the maximum")
        if not 0 < self.ecn_max_probability <= 1:
            raise ValidationError(f"ECN probability {self.ecn_max_probability * 100:g}%: "
                                  "1..100%")
        if self.ecn_max_bytes > self.buffer_bytes:
            raise ValidationError(f"the ECN maximum {self.ecn_max_bytes:,} B is above the "
                                  f"buffer ({self.buffer_bytes:,} B)")
        if not 0 < self.xoff_bytes < self.buffer_bytes:
            raise ValidationError(f"the PFC headroom {self.xoff_bytes:,} B does not fit in the "
                                  f"buffer ({self.buffer_bytes:,} B)")
        if not 0 <= self.xon_bytes < self.pause_at_bytes:
            raise ValidationError(f"xon {self.xon_bytes:,} B must be below the pause threshold "
                                  f"({self.pause_at_bytes:,} B)")


@dataclass(frozen=True)
class FlowClass:
    """``count`` identical flows starting at ``start_seconds`` (the model's unit)."""

    count: int
    start_seconds: float = 0.0


@dataclass(frozen=True)
class Scenario:
    distance_m: float
    speed_bps: float
    classes: tuple[FlowClass, ...]
    switch: SwitchSettings
    nic: Nic = field(default_factory=nic)
    bottleneck: str = "near"
    duration_seconds: float = 0.2
    packet_bytes: int = DEFAULT_PACKET_BYTES
    host_link_m: float = DEFAULT_HOST_LINK_M
    nic_turnaround_seconds: float = DEFAULT_NIC_TURNAROUND_SECONDS

    @property
    def flows(self) -> int:
        return sum(flow_class.count for flow_class in self.classes)

    @property
    def span_seconds(self) -> float:
        return self.distance_m / FIBER_VELOCITY_M_PER_S

    @property
    def host_seconds(self) -> float:
        return self.host_link_m / FIBER_VELOCITY_M_PER_S

    @property
    def rtt_seconds(self) -> float:
        """Sender to receiver and back, the switches' latency included."""
        return 2 * (self.span_seconds + 2 * self.host_seconds + 2 * self.switch.latency_seconds)

    @property
    def pause_refresh_seconds(self) -> float:
        return PAUSE_QUANTA_SENT * PAUSE_QUANTUM_BITS / self.speed_bps / 2

    def check(self) -> None:
        if not self.classes or any(c.count < 1 for c in self.classes):
            raise ValidationError("a scenario needs at least one flow")
        if self.flows > MAX_FLOWS:
            raise ValidationError(f"{self.flows:,} flows: at most {MAX_FLOWS:,}")
        if self.bottleneck not in BOTTLENECKS:
            raise ValidationError(f"bottleneck {self.bottleneck!r}: one of "
                                  f"{', '.join(BOTTLENECKS)}")
        if not 0 < self.duration_seconds <= MAX_DURATION_SECONDS:
            raise ValidationError(f"duration: more than 0, at most {MAX_DURATION_SECONDS:g} s")
        if any(not 0 <= c.start_seconds < self.duration_seconds for c in self.classes):
            raise ValidationError("every flow starts within the duration")
        if self.packet_bytes < 64 or not math.isfinite(self.distance_m) or self.distance_m < 0:
            raise ValidationError("packets of at least 64 B, a distance of 0 or more")
        self.switch.check()


def planned_switch(distance_m: float, speed_bps: float, *,
                   buffer_bytes: int = DEFAULT_BUFFER_BYTES,
                   fast_cnp_interval_seconds: float | None = None,
                   latency_seconds: float = DEFAULT_SWITCH_LATENCY_SECONDS) -> SwitchSettings:
    """The thresholds ``msoctl switch plan`` gives a port of this link."""
    plan = compute(LinkParameters(distance_m=distance_m, speed_bps=speed_bps))
    return SwitchSettings(
        ecn_min_bytes=plan.ecn_min_threshold_bytes, ecn_max_bytes=plan.ecn_max_threshold_bytes,
        ecn_max_probability=plan.ecn_max_probability_percent / 100,
        xoff_bytes=plan.xoff_bytes, xon_bytes=plan.xon_bytes, buffer_bytes=buffer_bytes,
        fast_cnp_interval_seconds=fast_cnp_interval_seconds, latency_seconds=latency_seconds)


@dataclass(frozen=True)
class WantedPort:
    """What a WANT file gives the model for one port."""

    name: str
    speed: str | None
    distance_m: float | None
    switch: SwitchSettings


def from_want(intent: Intent, source: Path | str, port: str | None) -> WantedPort:
    """The port's lossless queue settings from a WANT file's intent (``port``: the one
    to read, needed when the file names several)."""
    if port is None:
        if len(intent.ports) != 1:
            names = ", ".join(intent.ports) or "none"
            raise ValidationError(f"{source}: name the port to model with --port "
                                  f"(the file has {names})")
        port = next(iter(intent.ports))
    wanted = intent.ports.get(port)
    if wanted is None:
        raise ValidationError(f"{source}: no port {port!r} (it has {', '.join(intent.ports)})")
    lossless = [q for q in wanted.lossless_priorities if q in wanted.queues
                and wanted.queues[q].ecn is not None]
    if not lossless:
        raise ValidationError(f"{source}: port {port} has no lossless queue with ECN "
                              "thresholds")
    thresholds = wanted.queues[lossless[0]].ecn
    assert thresholds is not None
    if wanted.xoff_bytes is None or wanted.xon_bytes is None:
        raise ValidationError(f"{source}: port {port} gives no xoff_bytes/xon_bytes")
    interval = None
    if intent.fast_cnp is not None and intent.fast_cnp.min_interval_us is not None:
        interval = intent.fast_cnp.min_interval_us * 1e-6
    switch = SwitchSettings(
        ecn_min_bytes=thresholds.min_bytes, ecn_max_bytes=thresholds.max_bytes,
        ecn_max_probability=thresholds.probability_percent / 100,
        xoff_bytes=wanted.xoff_bytes, xon_bytes=wanted.xon_bytes,
        fast_cnp_interval_seconds=interval)
    distance = None if wanted.cable_length_m is None else float(wanted.cable_length_m)
    return WantedPort(port, wanted.speed, distance, switch)


def with_switch(scenario: Scenario, **changes: float) -> Scenario:
    return replace(scenario, switch=replace(scenario.switch, **changes))  # type: ignore[arg-type]
