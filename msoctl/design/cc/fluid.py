"""The fluid model of DCQCN with delayed feedback and PFC, solved with a fixed step.

Per flow class (``count`` identical flows; the model follows one of them), with the
rate ``R_C``, the target rate ``R_T`` and ``alpha``, after Zhu et al. (SIGCOMM 2015) in
the delayed-feedback form of "ECN or Delay" (CoNEXT 2016, eq. 11), written here in
events per second so that the NIC's separate intervals can be told apart. With ``p`` the
probability that a packet is marked (or, with fast CNP, that the switch answers it with
a CNP) as it reaches the sender, delayed by the feedback path, ``Rd`` the flow's
sending rate one loop ago in packets per second (the packets that ``p`` was drawn on),
``S`` its sending rate now, and ``L = ln(1 - p)``:

- CNPs a flow receives: ``cnp = (1 - exp(tau_cnp * Rd * L)) / tau_cnp``: at most one per
  ``tau_cnp`` (the receiver's ``min_time_between_cnps``, or the switch's fast-CNP
  interval), when a marked packet came in it;
- decreases: ``dec = min(cnp, 1 / tau_dec)`` (``rate_reduce_monitor_period``), each
  cutting ``R_C`` by ``cut = min(alpha / 2^(rpg_gd - 10), 1 - rpg_min_dec_fac)`` and
  setting ``R_T`` to the rate before the cut;
- ``alpha`` moves every ``tau_alpha`` by ``g`` toward 1 if a CNP came in that period and
  toward 0 otherwise: ``dalpha/dt = g / tau_alpha * (P - alpha)``, ``P`` the chance of a
  CNP in a period: a marked packet in it (``1 - exp(tau_alpha * Rd * L)``, eq. 11's
  term), but at most ``cnp * tau_alpha`` when the period is shorter than the CNPs'
  pacing (ConnectX updates alpha every microsecond);
- increase events, from the byte counter (every ``B`` bytes sent without a CNP) and
  the timer (every ``T``), as eq. 11 counts them: ``bytes = S * p / (exp(-B * L) - 1)``,
  ``timer = Rd * p / (exp(-T * Rd * L) - 1)`` per second (``S / B`` and ``1 / T`` when
  nothing is marked); each moves ``R_C`` half way to ``R_T``; those after ``F`` stages
  without a CNP (fractions ``exp(F * B * L)`` and ``exp(F * T * Rd * L)``) also raise
  ``R_T`` by ``R_AI``, and by ``R_HAI`` when both counters are past ``F`` (fraction
  ``exp(F * max(B, T * Rd) * L)``: the hyper increase, which eq. 11 leaves out).

``R_C`` stays between ``rpg_min_rate`` and the line rate, ``R_T`` at most the line rate.

The queues (:mod:`.scenario` draws the fabric): switch A's port onto the span and switch
B's port after it, each draining at its capacity (the bottleneck's is the line rate, the
other's the flows' sum), marking by RED between ``Kmin`` and ``Kmax`` up to ``Pmax`` (and
every packet above ``Kmax``), sending PAUSE upstream at ``buffer - xoff`` and resuming
``xon`` below it. A PAUSE takes the link's propagation delay to reach the upstream
(switch B's crosses the span to A; A's reaches the NICs), and what was already on the
link still arrives. A paused NIC keeps its DCQCN state and timers but sends nothing (its
byte counter stands still). Bytes beyond the buffer are lost and counted: a lossless
class that loses has too little headroom.

Delays are explicit. Sender to A: host link and a switch; A to B: the span and a switch;
B to the receivers: a switch and host link. End-to-end ECN: a mark at A or B travels on
to the receiver, which sends the CNP back over the whole path (plus its turnaround).
Switch-generated CNP: A's CNP goes straight back over the host link, B's back over the
span. The feedback a sender acts on at time t was drawn at each queue one return trip
earlier, on packets the sender sent one sender-to-queue trip before that.

Explicit Euler with step ``dt`` on every state, the delays rounded to whole steps (ring
buffers); PFC's on/off state is evaluated every step. The step's adequacy is checked by
solving again at half the step (:func:`solve` with ``dt`` halved; ``bench/design_cc.py``
reports the difference of every output).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass

from msoctl.design.cc.scenario import MODES, Scenario

DEFAULT_STEP_SECONDS = 0.5e-6
MAX_STEPS = 40_000_000
_TINY = 1e-12
_HUGE = 700.0  # exp() of more overflows; the event rate it divides is 0 by then


@dataclass(frozen=True)
class Solution:
    """What one solved scenario leaves for the metrics (:mod:`.metrics`).

    Per step: ``delivered_bps`` (the bottleneck's output), ``queue_bytes`` (the
    bottleneck's), ``upstream_queue_bytes`` (the other switch's), ``rate_bps`` (per flow
    class, the current rate ``R_C`` of one of its flows; a class not started yet shows
    0). Totals: CNPs sent, packets the switches' RED curve selected (marked with ECN, or
    answered with a CNP by a switch that sends them), PAUSE frames sent by either
    switch, seconds during which the bottleneck kept its upstream paused, bytes lost.
    """

    scenario: Scenario
    mode: str
    step_seconds: float
    delivered_bps: array[float]
    queue_bytes: array[float]
    upstream_queue_bytes: array[float]
    rate_bps: tuple[array[float], ...]
    cnps: float
    marked_packets: float
    pause_frames: int
    paused_seconds: float
    lost_bytes: float

    @property
    def steps(self) -> int:
        return len(self.delivered_bps)


def solve(scenario: Scenario, mode: str, *, dt: float = DEFAULT_STEP_SECONDS) -> Solution:
    """Solve ``scenario`` with feedback ``mode`` (``ecn`` or ``switch``) for its duration."""
    scenario.check()
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    steps = math.ceil(scenario.duration_seconds / dt)
    if not 0 < dt <= 1e-4 or steps > MAX_STEPS:
        raise ValueError(f"a step of {dt:g} s is out of range for {scenario.duration_seconds:g} s")
    return _Solver(scenario, mode, dt).run(steps)


class _Solver:
    def __init__(self, scenario: Scenario, mode: str, dt: float):
        self.scenario, self.mode, self.dt = scenario, mode, dt
        switch, nic = scenario.switch, scenario.nic
        speed = scenario.speed_bps
        total = scenario.flows * speed
        near = scenario.bottleneck == "near"
        self.capacity_a = speed if near else total
        self.capacity_b = total if near else speed

        def steps(seconds: float) -> int:
            return max(1, round(seconds / dt))

        host, span, latency = scenario.host_seconds, scenario.span_seconds, switch.latency_seconds
        # one-way legs
        to_a = host + latency                      # sender -> A's queue
        a_to_b = span + latency                    # A's queue -> B's queue
        b_to_receiver = latency + host
        receiver_to_sender = (host + latency + span + latency + host
                              + scenario.nic_turnaround_seconds)
        if mode == "ecn":
            back_a = a_to_b + b_to_receiver + receiver_to_sender
            back_b = b_to_receiver + receiver_to_sender
            self.cnp_interval = nic.cnp_interval_seconds
        else:
            back_a = host
            back_b = span + latency + host
            self.cnp_interval = (switch.fast_cnp_interval_seconds
                                 if switch.fast_cnp_interval_seconds is not None
                                 else nic.cnp_interval_seconds)
        self.d_to_a = steps(to_a)
        self.d_a_to_b = steps(a_to_b)
        self.d_back_a, self.d_back_b = steps(back_a), steps(back_b)
        bottleneck_loop = to_a + back_a if near else to_a + a_to_b + back_b
        self.d_loop = steps(bottleneck_loop)
        self.d_pause_a = steps(host)               # A's PAUSE to the NICs
        self.d_pause_b = steps(span)               # B's PAUSE to A, across the span
        self.history = 2 + max(self.d_to_a, self.d_a_to_b, self.d_back_a, self.d_back_b,
                               self.d_loop, self.d_pause_a, self.d_pause_b)
        self.packet_bits = scenario.packet_bytes * 8
        self.start_steps = [round(c.start_seconds / dt) for c in scenario.classes]

    def red(self, queue: float) -> float:
        switch = self.scenario.switch
        if queue <= switch.ecn_min_bytes:
            return 0.0
        if queue >= switch.ecn_max_bytes:
            return 1.0
        return (switch.ecn_max_probability * (queue - switch.ecn_min_bytes)
                / (switch.ecn_max_bytes - switch.ecn_min_bytes))

    def run(self, steps: int) -> Solution:  # one loop, kept flat: it is the hot path
        scenario, dt = self.scenario, self.dt
        nic, switch = scenario.nic, scenario.switch
        line = scenario.speed_bps
        counts = [c.count for c in scenario.classes]
        classes = len(counts)
        size = self.history
        # ring buffers, indexed by step % size
        sent = [[0.0] * size for _ in range(classes)]   # one flow's sending rate, bit/s
        marks_a, marks_b = [0.0] * size, [0.0] * size
        paused_a, paused_b = [False] * size, [False] * size
        out_a_history = [0.0] * size

        rate = [line] * classes
        target = [line] * classes
        alpha = [nic.initial_alpha] * classes
        queue_a = queue_b = 0.0
        pfc_a, pfc_b = (_Pfc(switch.pause_at_bytes, switch.pause_at_bytes - switch.xon_bytes,
                             scenario.pause_refresh_seconds) for _ in range(2))
        buffer = switch.buffer_bytes
        near = scenario.bottleneck == "near"

        tau_cnp = max(self.cnp_interval, dt)
        tau_dec = max(nic.decrease_period_seconds, dt)
        tau_alpha = max(nic.alpha_period_seconds, dt)
        gain_alpha = nic.alpha_gain / tau_alpha
        bytes_pk = nic.byte_counter_bytes * 8 / self.packet_bits
        timer = nic.timer_seconds
        stages = nic.fast_recovery_events
        ai, hai = nic.additive_increase_bps, nic.hyper_increase_bps
        max_cut = 1 - nic.min_kept_fraction
        divisor = nic.decrease_divisor
        clamp_always, clamp_after_timer = nic.clamp_target, nic.clamp_target_after_timer
        min_rate = nic.min_rate_bps
        packet_bits = self.packet_bits

        delivered = array("d", bytes(8 * steps))
        queue_trace = array("d", bytes(8 * steps))
        upstream_trace = array("d", bytes(8 * steps))
        rate_traces = tuple(array("d", bytes(8 * steps)) for _ in range(classes))
        cnps = 0.0
        marked = 0.0
        paused_seconds = 0.0
        lost = 0.0

        for k in range(steps):
            now = k % size
            # ---- what arrives at the queues now
            into_a = 0.0
            back = (k - self.d_to_a) % size
            for i in range(classes):
                into_a += counts[i] * sent[i][back]
            held_by_b = paused_b[(k - self.d_pause_b) % size]
            if held_by_b:
                out_a = 0.0
            elif queue_a > 0:
                out_a = self.capacity_a
            else:
                out_a = min(into_a, self.capacity_a)
            queue_a += (into_a - out_a) * dt / 8
            if queue_a < 0:
                queue_a = 0.0
            elif queue_a > buffer:
                lost += queue_a - buffer
                queue_a = buffer
            out_a_history[now] = out_a
            into_b = out_a_history[(k - self.d_a_to_b) % size]
            out_b = self.capacity_b if queue_b > 0 else min(into_b, self.capacity_b)
            queue_b += (into_b - out_b) * dt / 8
            if queue_b < 0:
                queue_b = 0.0
            elif queue_b > buffer:
                lost += queue_b - buffer
                queue_b = buffer

            # ---- PFC at each switch: XOFF at the threshold, refreshed, XON below it
            pausing_a = pfc_a.step(queue_a, dt)
            pausing_b = pfc_b.step(queue_b, dt)
            paused_a[now], paused_b[now] = pausing_a, pausing_b
            if pausing_a if near else pausing_b:
                paused_seconds += dt
            marks_a[now] = self.red(queue_a)
            marks_b[now] = self.red(queue_b)
            marked += (marks_a[now] * into_a + marks_b[now] * into_b) * dt / packet_bits

            # ---- the senders, on feedback one return trip old
            p_a = marks_a[(k - self.d_back_a) % size]
            p_b = marks_b[(k - self.d_back_b) % size]
            p = 1 - (1 - p_a) * (1 - p_b)
            if p > 1 - _TINY:
                p = 1 - _TINY
            log_free = math.log1p(-p)
            nic_held = paused_a[(k - self.d_pause_a) % size]
            loop = (k - self.d_loop) % size
            for i in range(classes):
                if k < self.start_steps[i]:
                    sent[i][now] = 0.0
                    continue
                r_c, r_t, a = rate[i], target[i], alpha[i]
                sending = 0.0 if nic_held else r_c
                seen = sent[i][loop] / packet_bits      # packets/s the feedback was drawn on
                now_pk = sending / packet_bits
                if p > 0:
                    cnp = -math.expm1(tau_cnp * seen * log_free) / tau_cnp
                    x = -bytes_pk * log_free
                    by_bytes = now_pk * p / math.expm1(x) if x < _HUGE else 0.0
                    x = -timer * seen * log_free
                    if x > _HUGE:
                        by_timer = 0.0
                    elif x > _TINY:
                        by_timer = seen * p / math.expm1(x)
                    else:
                        by_timer = p / (-timer * log_free)
                    after_bytes = math.exp(stages * bytes_pk * log_free)
                    after_timer = math.exp(stages * timer * seen * log_free)
                    hyper = math.exp(stages * max(bytes_pk, timer * seen) * log_free)
                else:
                    cnp = 0.0
                    by_bytes, by_timer = now_pk / bytes_pk, 1 / timer
                    after_bytes = after_timer = hyper = 1.0
                decreases = min(cnp, 1 / tau_dec)
                cut = min(a / divisor, max_cut)
                events = by_bytes + by_timer
                d_rate = -r_c * cut * decreases + (r_t - r_c) * events / 2
                if clamp_always:
                    clamped = decreases
                elif clamp_after_timer and events > 0:
                    clamped = decreases * by_timer / events
                else:
                    clamped = 0.0
                d_target = (-(r_t - r_c) * clamped + ai * (by_bytes * after_bytes
                                                             + by_timer * after_timer)
                            + (hai - ai) * events * hyper)
                # a CNP within the alpha period: a marked packet in it, but no more
                # often than the CNPs come (they are paced, at most one per tau_cnp)
                seen_cnp = min(-math.expm1(tau_alpha * seen * log_free), cnp * tau_alpha)
                d_alpha = gain_alpha * (seen_cnp - a)
                r_c += d_rate * dt
                r_t += d_target * dt
                a += d_alpha * dt
                if r_t > line:
                    r_t = line
                if r_c > r_t:
                    r_c = r_t
                if r_c < min_rate:
                    r_c = min_rate
                if r_t < r_c:
                    r_t = r_c
                rate[i], target[i] = r_c, r_t
                alpha[i] = 0.0 if a < 0 else 1.0 if a > 1 else a
                sent[i][now] = 0.0 if nic_held else r_c
                rate_traces[i][k] = r_c
                cnps += counts[i] * cnp * dt

            delivered[k] = out_a if near else out_b
            queue_trace[k] = queue_a if near else queue_b
            upstream_trace[k] = queue_b if near else queue_a

        return Solution(scenario=scenario, mode=self.mode, step_seconds=dt,
                        delivered_bps=delivered, queue_bytes=queue_trace,
                        upstream_queue_bytes=upstream_trace, rate_bps=rate_traces,
                        cnps=cnps, marked_packets=marked,
                        pause_frames=pfc_a.frames + pfc_b.frames,
                        paused_seconds=paused_seconds, lost_bytes=lost)


class _Pfc:
    """One switch's PAUSE for the lossless queue: XOFF when the queue reaches ``on`` bytes,
    sent again every ``refresh`` seconds while it stays above ``off``, XON at ``off``."""

    __slots__ = ("frames", "off", "on", "pausing", "refresh", "since_frame")

    def __init__(self, on: float, off: float, refresh: float):
        self.on, self.off, self.refresh = on, off, refresh
        self.pausing = False
        self.since_frame = 0.0
        self.frames = 0

    def step(self, queue: float, dt: float) -> bool:
        """Whether the upstream is told to pause after this step."""
        if self.pausing:
            if queue <= self.off:
                self.pausing = False
            else:
                self.since_frame += dt
                if self.since_frame >= self.refresh:
                    self.since_frame -= self.refresh
                    self.frames += 1
        elif queue >= self.on:
            self.pausing, self.since_frame = True, 0.0
            self.frames += 1
        return self.pausing
