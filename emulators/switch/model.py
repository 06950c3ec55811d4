"""Congestion model of the deep-buffer switch that carries RoCEv2 over the long links.

The configuration (yang/msoctl-congestion.yang, applied with
:meth:`SwitchModel.apply_config`) drives what the counters do under load, so a
wrong setting shows the way it would on the hardware: fast CNP off and the
switch sends no CNPs; PFC headroom sized for a shorter cable than the real one
and a lossless queue drops packets.

What is modelled, and why:

- The chip: one shared packet buffer (default 8 GB, a deep-buffer chip with
  HBM) of which a lossless pool (default 4 GB) holds the lossless priorities,
  their PFC headroom included; lossy queues share the rest. Each port has a
  physical line rate and cable length, given when the model is built; the
  configured ``speed`` and ``cable-length-meters`` are what the operator
  *said*, and only the physical ones move bytes. That difference is how
  headroom too small for the cable arises.
- Geometry: a modelled port is one long-haul link. The senders sit behind its
  cable; their traffic is queued in this switch per priority (queue n carries
  priority n) and drains at the queue's drain rate, the share of the egress it
  gets (the line rate by default; 1/N of it in an incast of N senders). Arrivals
  can never exceed the physical line rate: the cable carries no more. The
  same port is where the partner's pause frames arrive: while the partner
  pauses a priority, that queue stops draining (one queue per port and
  priority carries both the headroom of the ingress and the pauses of the
  egress: a simplification).
- Time: counters are integrated lazily over the injected clock (``clock.now()``
  when something is read or changed) in steps of at most 5 us, and no more
  than a quarter of the shortest pause loop of a busy port; queues with nothing to
  do are skipped. A step costs about 10 us of CPU per busy queue, so a queue
  whose senders keep reacting to CNPs (DCQCN settles into a cycle, never a
  fixed point) costs about 3 s of CPU per second of device time: whoever runs
  the model on a real clock bounds its congestion (the lab's switches make
  the congestion fault a finite burst, emulators/switch/device.py).
- Steady states are not stepped through: every 16th step is checked, and when
  it changed nothing on any busy queue but counters and timers (a lossy queue
  held full and dropping, a priority stormed with nothing arriving, the
  watchdog dropping everything; no CNP in flight, senders at their wanted
  rate, the partner already seeing our last pause), the same steps are taken
  in closed form up to the next event that would change them: a burst's end,
  the watchdog's detection or restoration time, or the time asked for. One
  step is kept in hand, so the step where something changes is integrated.
  The result is the stepped one up to floating-point rounding: a threshold
  met exactly on a step boundary (200 ms of watchdog detection is 40,000
  steps) may be met one step, 5 us, earlier or later.
- ECN/WRED: with thresholds configured, the marking probability is 0 below
  ``min-threshold``, rises linearly to ``max-drop-probability-percent`` at
  ``max-threshold`` and is 100% above it. With ``enable-ecn`` the packets are
  marked (``ecn-marked-packets``); without it a lossy queue drops them (WRED),
  a lossless one neither marks nor drops. Packets are counted at 4096 B (the
  RoCEv2 MTU), fractions carried over so counters are exact over time.
- Congestion feedback (DCQCN-like, :class:`.physics.Sender`): each queue has a
  number of flows (16 by default); a flow with a marked packet gets a CNP —
  from its receiver (at most one per 50 us per flow), or from this switch when
  fast CNP is enabled globally *and* on the queue (``switch-generated-cnps``,
  at most one per flow per ``min-interval-microseconds``, only for as many flows
  as the flow table holds, 4096 entries by default). A CNP cuts the flow's rate
  by alpha/2; without CNPs the rate recovers. Feedback takes a loop: a
  switch CNP goes back over the cable and the slowed traffic comes forward
  again, one cable round trip plus 4 us of pipelines; a receiver's CNP comes
  half a round trip later (published figures: switch-generated CNPs save up to half an
  RTT; the model charges the whole half). So with fast CNP the queue peaks
  lower: on 30 km at 400G the half RTT is about 152 us, 7.6 MB at line rate.
- PFC, per lossless priority: the port sends a pause frame when the queue's
  depth reaches ``xoff-bytes`` and refreshes it every half pause time
  (65535 quanta: 41.9 us at 400G) while the depth stays above
  ``xoff-bytes - xon-bytes`` (``pfc-pause-frames-sent``). The partner stops one
  cable round trip plus its response time (905 quanta at 400G, 1.16 us)
  after the pause was sent; what it sends meanwhile — 15.2 MB on 30 km at
  400G, 0.21 MB on 300 m — lands in the headroom, ``xoff-bytes`` more above the
  pause point. What does not fit is dropped (``dropped-packets`` on a lossless
  queue). The planner's headroom (msoctl.ops.headroom) includes this in-flight
  volume with margin, so its settings never drop here.
- Lossy queues drop what the lossy part of the buffer cannot hold.
- ``buffer-watermark-bytes``: the highest depth of a queue; for a port, the
  highest sum of its queues' depths.
- PFC watchdog: a priority that the partner keeps paused, its queue not
  draining, for ``detection-time-ms`` trips the watchdog: ``drop`` flushes the
  queue and drops arrivals, ``forward`` drains it ignoring the pauses; it
  stands down ``restoration-time-ms`` after the pauses stop.

Faults (:class:`emulators.faults.FaultInjector`, target ``PORT`` or
``PORT@QUEUE``; without a queue, the port's lowest lossless priority, or 3):

| kind       | effect                                                               |
|------------|----------------------------------------------------------------------|
| congestion | an incast on the queue: senders at line rate, the drain cut to       |
|            | 1/``count`` (default 4) of it, for ``seconds`` or until cleared      |
| pfc_storm  | the partner keeps pausing the priority: ``pfc-pause-frames-received``|
|            | grows at its refresh rate, the queue stops draining and fills        |
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from drivers.switch.link import PEER_RESPONSE_SECONDS, PORT_SPEEDS_BPS
from emulators.clock import Clock
from emulators.faults import Fault, FaultError, FaultInjector
from emulators.switch.config import (
    QUEUES_PER_PORT,
    ConfigError,
    PortConfig,
    SwitchConfig,
    parse,
)
from emulators.switch.physics import cable_rtt_seconds
from emulators.switch.queue import COUNTER_NAMES, Probe, QueueState, QueueStep
from emulators.text import digits as _digits

DEFAULT_TOTAL_BYTES = 8_000_000_000
DEFAULT_LOSSLESS_POOL_BYTES = 4_000_000_000
DEFAULT_FLOW_TABLE_SIZE = 4096
MAX_STEP_SECONDS = 5e-6
MIN_STEP_SECONDS = 0.25e-6
PROBE_EVERY_STEPS = 16
SPEEDS_BPS = PORT_SPEEDS_BPS

__all__ = ["COUNTER_NAMES", "ConfigError", "PhysicalPort", "SwitchModel"]


@dataclass(frozen=True)
class PhysicalPort:
    """What a port really is: its line rate and the fiber to its partner."""

    speed: str
    cable_length_meters: float

    @property
    def line_rate_bps(self) -> float:
        return SPEEDS_BPS[self.speed]

    @property
    def pause_loop_seconds(self) -> float:
        return cable_rtt_seconds(self.cable_length_meters) + PEER_RESPONSE_SECONDS


@dataclass
class _PortState:
    physical: PhysicalPort
    queues: list[QueueState] = field(default_factory=list)
    watermark_bytes: float = 0.0


@dataclass
class _Busy:
    """A queue with something to do, and the fixed part of its integration steps."""

    port: _PortState
    queue: QueueState
    lossless: bool
    step: QueueStep


class SwitchModel:
    """One switch's buffer, queues and congestion counters, driven by its configuration."""

    def __init__(
        self,
        clock: Clock,
        ports: Mapping[str, PhysicalPort],
        *,
        name: str = "switch",
        total_bytes: int = DEFAULT_TOTAL_BYTES,
        lossless_pool_bytes: int = DEFAULT_LOSSLESS_POOL_BYTES,
        packet_bytes: int = 4096,
        flow_table_size: int = DEFAULT_FLOW_TABLE_SIZE,
    ):
        if not 0 <= lossless_pool_bytes <= total_bytes:
            raise ValueError("the lossless pool must fit in the buffer")
        for port_name, port in ports.items():
            if port.speed not in SPEEDS_BPS or port.cable_length_meters < 0:
                raise ValueError(f"port {port_name}: speed one of {', '.join(SPEEDS_BPS)}, "
                                 "cable length >= 0")
        self.name = name
        self.clock = clock
        self.total_bytes = total_bytes
        self.lossless_pool_bytes = lossless_pool_bytes
        self.packet_bytes = packet_bytes
        self.chip_flow_table_size = flow_table_size
        self.config = SwitchConfig()
        self._ports = {
            port_name: _PortState(port, [QueueState(q, port.line_rate_bps)
                                         for q in range(QUEUES_PER_PORT)])
            for port_name, port in ports.items()
        }
        self._time = clock.now()
        self._bursts: dict[tuple[str, int], tuple[int, float | None]] = {}
        self.faults = FaultInjector(name)
        self.faults.handle("congestion", self._fault_congestion, self._clear_congestion)
        self.faults.handle("pfc_storm", self._fault_storm, self._clear_storm)

    # ---- configuration and load --------------------------------------------------------

    def apply_config(self, tree: Mapping[str, Any]) -> None:
        """Replace the active configuration (what a commit does); the past stays as it ran.

        Raises :class:`ConfigError` for a port the chip does not have or a value
        the model cannot read.
        """
        config = parse(tree)
        unknown = sorted(set(config.ports) - set(self._ports))
        if unknown:
            raise ConfigError(f"no such port: {', '.join(unknown)}")
        self._advance()
        self.config = config

    def set_load(self, port: str, queue: int, offered_gbps: float, *,
                 drain_gbps: float | None = None, flows: int = 16) -> None:
        """Senders behind ``port``'s cable offer ``offered_gbps`` to ``queue`` (capped at
        the physical line rate); the queue drains at ``drain_gbps`` (default: line rate)."""
        state = self._queue(port, queue)
        if offered_gbps < 0 or (drain_gbps is not None and drain_gbps < 0) or flows < 1:
            raise ValueError("loads are >= 0 Gb/s, with at least one flow")
        self._advance()
        line = self._ports[port].physical.line_rate_bps
        state.set_load(min(offered_gbps * 1e9, line), line if drain_gbps is None
                       else min(drain_gbps * 1e9, line), flows)

    def incast(self, port: str, queue: int, senders: int, *, flows: int = 16) -> None:
        """``senders`` at line rate converge on one egress: this port's share drains at
        1/``senders`` of the line rate while its senders offer the full rate."""
        if senders < 1:
            raise ValueError("an incast needs at least one sender")
        line_gbps = self._ports[port].physical.line_rate_bps / 1e9 if port in self._ports else 0
        self.set_load(port, queue, line_gbps, drain_gbps=line_gbps / senders, flows=flows)

    # ---- reading -----------------------------------------------------------------------

    def counters(self, port: str, queue: int | None = None) -> dict[str, int]:
        """The YANG counters of a queue, or of the whole port when ``queue`` is None."""
        if queue is not None:
            state = self._queue(port, queue)
            self._advance()
            return state.counters()
        if port not in self._ports:
            raise KeyError(f"no such port: {port}")
        self._advance()
        return self._port_counters(self._ports[port])

    def queue_depth_bytes(self, port: str, queue: int) -> int:
        state = self._queue(port, queue)
        self._advance()
        return round(state.depth_bytes)

    def state_tree(self) -> dict[str, Any]:
        """The operational data in the YANG names: the buffer, counters per port and queue."""
        self._advance()
        return {"switch": {
            "buffer": {"total-bytes": self.total_bytes,
                       "lossless-pool-bytes": self.lossless_pool_bytes},
            "ports": {"port": [{
                "name": name,
                "counters": self._port_counters(port),
                "queues": {"queue": [{"queue-id": q.queue_id, "counters": q.counters()}
                                     for q in port.queues]},
            } for name, port in self._ports.items()]},
        }}

    @staticmethod
    def _port_counters(port: _PortState) -> dict[str, int]:
        per_queue = [q.counters() for q in port.queues]
        totals = {name: sum(c[name] for c in per_queue) for name in COUNTER_NAMES}
        totals["buffer-watermark-bytes"] = math.floor(port.watermark_bytes)
        return totals

    def _queue(self, port: str, queue: int) -> QueueState:
        if port not in self._ports:
            raise KeyError(f"no such port: {port}")
        if not 0 <= queue < QUEUES_PER_PORT:
            raise KeyError(f"queue {queue} not in 0..{QUEUES_PER_PORT - 1}")
        return self._ports[port].queues[queue]

    # ---- integration ------------------------------------------------------------------

    def _advance(self) -> None:
        now = self.clock.now()
        busy: list[_Busy] | None = None
        step_seconds = MAX_STEP_SECONDS
        burst_end = self._burst_end()
        steps = 0
        while self._time < now:
            if self._time >= burst_end:
                self._end_bursts_due()
                burst_end = self._burst_end()
                busy = None
            if busy is None:
                busy = self._busy()
                if busy:
                    step_seconds = self._step_seconds(busy)
            if not busy:
                self._time = min(now, burst_end)
                continue
            dt = min(step_seconds, now - self._time)
            probes = ([b.queue.probe() for b in busy]
                      if dt == step_seconds and steps % PROBE_EVERY_STEPS == 0 else None)
            start = self._time
            self._step(busy, dt)
            self._time += dt
            steps += 1
            if any(b.queue.idle for b in busy):
                busy = None  # the set changes, and with it the flow table's share
            elif probes is not None:
                self._skip_steady(busy, probes, start, dt, min(now, burst_end))

    def _skip_steady(self, busy: list[_Busy], probes: list[Probe], start: float, dt: float,
                     limit: float) -> None:
        """When the step just taken from ``start`` changed nothing but counters and timers
        on every busy queue (a steady state: a queue held full and dropping, a storm
        against an empty queue), take the same steps up to ``limit`` in closed form. One
        step is kept in hand, so the step where something changes is integrated."""
        for b, probe in zip(busy, probes, strict=True):
            until = b.queue.steady_until(probe, b.step, start, dt)
            if until is None:
                return
            limit = min(limit, until)
        count = math.floor((limit - self._time) / dt) - 1
        if count < 1:
            return
        for b, probe in zip(busy, probes, strict=True):
            b.queue.extrapolate(probe, count, dt)
        self._time += count * dt

    def _busy(self) -> list[_Busy]:
        """The queues with something to do, and what their steps need (fixed until the
        configuration, a load or this set changes)."""
        found = [(name, port, q) for name, port in self._ports.items()
                 for q in port.queues if not q.idle]
        flows_on_fast_cnp = sum(q.flows for name, _, q in found
                                if self._fast_cnp(self.config.port(name), q.queue_id))
        table = self.config.fast_cnp.flow_table_size or self.chip_flow_table_size
        table_share = min(1.0, table / flows_on_fast_cnp) if flows_on_fast_cnp else 1.0
        busy = []
        for name, port, q in found:
            config = self.config.port(name)
            lossless = q.queue_id in config.lossless_priorities
            busy.append(_Busy(port, q, lossless, QueueStep(
                physical_loop_seconds=port.physical.pause_loop_seconds,
                cable_rtt_seconds=cable_rtt_seconds(port.physical.cable_length_meters),
                lossless=lossless, xoff_bytes=config.xoff_bytes or 0,
                xon_bytes=config.xon_bytes or 0, watchdog=config.watchdog,
                queue=config.queue(q.queue_id), fast_cnp=self._fast_cnp(config, q.queue_id),
                cnp_interval_seconds=self.config.fast_cnp.min_interval_seconds,
                flow_table_share=table_share, packet_bytes=self.packet_bytes,
            )))
        return busy

    @staticmethod
    def _step_seconds(busy: list[_Busy]) -> float:
        """A quarter of the shortest pause loop among busy ports, at most 5 us."""
        shortest = min(b.port.physical.pause_loop_seconds for b in busy)
        return max(MIN_STEP_SECONDS, min(MAX_STEP_SECONDS, shortest / 4))

    def _step(self, busy: list[_Busy], dt: float) -> None:
        # Idle queues hold nothing (their depth is 0), so the busy ones fill the pools.
        lossless_used = 0.0
        lossy_used = 0.0
        for b in busy:
            if b.lossless:
                lossless_used += b.queue.depth_bytes
            else:
                lossy_used += b.queue.depth_bytes
        lossy_pool = self.total_bytes - self.lossless_pool_bytes
        for b in busy:
            q = b.queue
            free = (self.lossless_pool_bytes - lossless_used if b.lossless
                    else lossy_pool - lossy_used)
            before = q.depth_bytes
            q.step(b.step, self._time, dt, max(0.0, free))
            if b.lossless:
                lossless_used += q.depth_bytes - before
            else:
                lossy_used += q.depth_bytes - before
        for port in {id(b.port): b.port for b in busy}.values():
            port.watermark_bytes = max(port.watermark_bytes,
                                       sum(q.depth_bytes for q in port.queues))

    def _fast_cnp(self, config: PortConfig, queue_id: int) -> bool:
        return self.config.fast_cnp.enabled and config.queue(queue_id).fast_cnp

    # ---- faults -----------------------------------------------------------------------

    def _target(self, fault: Fault) -> tuple[str, int]:
        text = fault.target or ""
        port, _, queue_text = text.partition("@")
        if port not in self._ports:
            raise FaultError(f"{self.name}: {fault.kind} needs a target PORT or PORT@QUEUE, "
                             f"got {fault.target!r}")
        if queue_text:
            if not _digits(queue_text) or int(queue_text) >= QUEUES_PER_PORT:
                raise FaultError(f"{self.name}: queue {queue_text!r} not in 0..7")
            return port, int(queue_text)
        lossless = self.config.port(port).lossless_priorities
        return port, min(lossless) if lossless else 3

    def _fault_congestion(self, fault: Fault) -> None:
        port, queue = self._target(fault)
        senders = fault.count if fault.count is not None else 4
        if senders < 1:
            raise FaultError(f"{self.name}: a congestion burst needs count >= 1 senders")
        self._advance()
        until = None if fault.seconds is None else self._time + fault.seconds
        self._bursts[(port, queue)] = (senders, until)
        self._ports[port].queues[queue].set_burst(senders)

    def _clear_congestion(self, fault: Fault) -> None:
        port, queue = self._target(fault)
        self._advance()
        if self._bursts.pop((port, queue), None) is not None:
            self._ports[port].queues[queue].set_burst(None)

    def _end_bursts_due(self) -> None:
        for (port, queue), (_, until) in list(self._bursts.items()):
            if until is not None and until <= self._time:
                del self._bursts[(port, queue)]
                self._ports[port].queues[queue].set_burst(None)

    def _burst_end(self) -> float:
        """When the next burst ends (infinity when none will)."""
        return min((until for _, until in self._bursts.values() if until is not None),
                   default=math.inf)

    def _fault_storm(self, fault: Fault) -> None:
        port, queue = self._target(fault)
        self._advance()
        self._ports[port].queues[queue].storm_started(self._time)

    def _clear_storm(self, fault: Fault) -> None:
        port, queue = self._target(fault)
        self._advance()
        self._ports[port].queues[queue].storm_ended(self._time)
