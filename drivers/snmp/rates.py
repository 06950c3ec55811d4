"""Counter deltas, rates, CER and FLR between two CPC readings of one switch. Pure.

Counters (RFC 2578): a Counter64 (or Counter32) only grows, and wraps to zero past
2^64 - 1 (2^32 - 1). The difference of two readings is taken modulo that, so one
wrap between them is counted right. A counter has no meaningful value of its own
after a *discontinuity*, and no difference is taken across one:

- the agent restarted: its snmpEngineBoots changed between the readings (RFC 3414
  2.2.2: the engine re-initialised), or sysUpTime went backwards, or either happened
  during a reading (:attr:`CollectionInfo.restarted`); every counter started again
  from zero (MSO-CPC-MIB, msoCpcLaneDiscontinuityTime). sysUpTime does not go
  backwards when the agent had been up for less time before the restart than
  since, but snmpEngineBoots still shows it; from an agent that does not serve
  snmpEngineBoots, sysUpTime advancing less than this host's clock did is taken as
  a restart too when the shortfall is over :data:`RESTART_SLACK_SECONDS` plus 1 %
  (slack for a first request that needed a retry). A TimeTicks wrap after 497 days
  reads as a restart, which costs one interval, not a wrong rate;
- the lane's msoCpcLaneDiscontinuityTime changed: its receiver was reset;
- a counter went backwards by more than a wrap could explain in the interval
  (more codewords than the line rate carries): an unannounced reset.

Then the lane's rates are ``None`` and :attr:`LaneInterval.no_rates_reason` says why
(as it does when the counters did not move at all: see below).

Time: a device counts in hardware and refreshes the counters its agent serves now
and then (about once a second), so the agent's sysUpTime between two readings is
not the time over which the counters grew. The histogram tells that time exactly:
an up lane decodes codewords without pause (idles are encoded too), 39,062,500
a second, so ``ΣΔS / 39,062,500`` is how long the counters counted
(:attr:`LaneInterval.counted_seconds`); rates are taken over it when the histogram is
complete, else over the sysUpTime interval. No codeword counted at all (a reading
shorter than the device's refresh, or a lane without signal) gives no rates.

CER and FLR are as MSO-CPC-MIB's module DESCRIPTION defines them: over an
interval, with U the uncorrectable codewords, C the corrected ones and S0 those
without symbol errors, and X the FEC's interleave (codewords per frame),

    CER = ΔU / (ΔU + ΔC + ΔS0)        FLR = CER × (1 + 8X) / 8

taken from the histogram, whose bins S0..S16 are read together (ΔS16 = ΔU,
ΔS1..ΔS15 = ΔC). Without a complete histogram the codewords of the interval are
what the line rate carries, ``interval × 39,062,500`` per lane (212.5 Gb/s over
5,440-bit RS(544,514) codewords), and CER = ΔU / that (:attr:`LaneInterval.cer_basis`
says which). The interleave follows the port's speed, as SONiC's FEC FLR design
has it (:func:`interleave`): four codewords at 800G and 1.6T, two at 400G, one
below and where the agent does not tell the speed (ifHighSpeed): FLR is then 4.125,
2.125 and 1.125 times CER.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from drivers.snmp.telemetry import CpcTelemetry, ElectricalLane

COUNTER32_MODULUS = 2**32
COUNTER64_MODULUS = 2**64
LANE_RATE_BPS = 212_500_000_000
"""A 224G electrical lane's line rate, FEC parity included (MSO-CPC-MIB)."""
CODEWORD_BITS = 544 * 10
"""RS(544,514): 544 ten-bit symbols."""
CODEWORDS_PER_SECOND = LANE_RATE_BPS // CODEWORD_BITS
"""39,062,500 codewords per second per lane."""
INTERLEAVE_FROM_MBPS = ((800_000, 4), (400_000, 2))
"""The FEC interleave of a port of at least so many Mb/s (SONiC's FEC FLR design);
slower ports, one."""
RESTART_SLACK_SECONDS = 5.0
"""How much less than this host's clock the agent's sysUpTime may advance between two
readings before that counts as a restart."""
PLAUSIBLE_RATE_MARGIN = 2.0
"""A wrapped difference is believed up to this many times the line rate's codewords."""
BASIS_HISTOGRAM = "histogram"
BASIS_LINE_RATE = "line_rate"


def interleave(speed_mbps: int | None) -> int:
    """How many codewords a frame is spread over at ``speed_mbps`` (ifHighSpeed);
    1 when the speed is not known."""
    for at_least, codewords in INTERLEAVE_FROM_MBPS:
        if speed_mbps is not None and speed_mbps >= at_least:
            return codewords
    return 1


def flr_per_cer(codewords_per_frame: int) -> float:
    """Frame loss ratio per codeword error ratio at an interleave of
    ``codewords_per_frame`` (MSO-CPC-MIB): (1 + 8X) / 8."""
    return (1 + 8 * codewords_per_frame) / 8


def counter_delta(before: int, after: int, *, modulus: int = COUNTER64_MODULUS,
                  max_increase: float | None = None) -> int | None:
    """How much a counter grew from ``before`` to ``after``, one wrap allowed.

    ``None`` when it can only have been reset: it went backwards and the wrapped
    difference is more than ``max_increase`` (when given).
    """
    if not (0 <= before < modulus and 0 <= after < modulus):
        raise ValueError(f"counter values are 0..{modulus - 1}")
    delta = (after - before) % modulus
    if after < before and max_increase is not None and delta > max_increase:
        return None
    return delta


def rate(delta: int | None, seconds: float | None) -> float | None:
    """``delta`` per second; ``None`` without a delta or a positive interval."""
    if delta is None or seconds is None or seconds <= 0:
        return None
    return delta / seconds


@dataclass(frozen=True)
class LaneInterval:
    """One lane between two readings: counter differences, rates, CER and FLR."""

    port: int
    lane: int
    interval_seconds: float | None
    """The agent's sysUpTime between the two readings."""
    counted_seconds: float | None
    """How long the counters counted: the histogram's codewords over the line rate."""
    fec_corrected: int | None
    fec_uncorrectable: int | None
    fec_corrected_per_second: float | None
    fec_uncorrectable_per_second: float | None
    codewords: int | None
    """Codewords received in the interval: ΣΔ of the histogram's bins."""
    fec_histogram: tuple[int | None, ...] | None
    """ΔS0..ΔS16."""
    codeword_error_ratio: float | None
    frame_loss_ratio: float | None
    interleave: int
    """The FEC interleave FLR was reckoned with (:func:`interleave` of the port's speed)."""
    cer_basis: str | None
    """``histogram`` or ``line_rate`` (see the module's docstring); None without a CER."""
    no_rates_reason: str | None
    """Why this lane has no rates (a discontinuity, counters that did not move)."""


def interval_seconds(before: CpcTelemetry, after: CpcTelemetry) -> float | None:
    """The agent's time between the two readings (sysUpTime), else this host's."""
    start, end = before.info.uptime_seconds, after.info.uptime_seconds
    if start is not None and end is not None and end > start:
        return end - start
    local = after.info.started_monotonic - before.info.started_monotonic
    return local if local > 0 else None


def restart_between(before: CpcTelemetry, after: CpcTelemetry) -> str | None:
    """Why every counter is discontinuous between the readings, or ``None``."""
    if before.info.restarted or after.info.restarted:
        return ("the agent restarted during a reading (its snmpEngineBoots changed or "
                "sysUpTime went backwards)")
    boots_before, boots_after = before.info.engine_boots_end, after.info.engine_boots
    boots_known = boots_before is not None and boots_after is not None
    if boots_known and boots_before != boots_after:
        return (f"the agent restarted: snmpEngineBoots went from {boots_before} to "
                f"{boots_after}, and its counters started again from zero")
    start, end = before.info.uptime_end_seconds, after.info.uptime_seconds
    if start is None or end is None:
        return None
    if end < start:
        return (f"the agent restarted: sysUpTime went back from {start:.2f} s to {end:.2f} s,"
                f" and its counters started again from zero")
    if boots_known:
        return None  # the same boot: nothing to guess from this host's clock
    first = before.info.uptime_seconds
    local = after.info.started_monotonic - before.info.started_monotonic
    if first is not None and end - first < local - RESTART_SLACK_SECONDS - 0.01 * local:
        return (f"the agent restarted: its sysUpTime advanced {end - first:.2f} s while "
                f"{local:.2f} s went by, and its counters started again from zero")
    return None


def lane_intervals(before: CpcTelemetry, after: CpcTelemetry) -> list[LaneInterval]:
    """Every lane of ``after`` over the interval since ``before``."""
    seconds = interval_seconds(before, after)
    restart = restart_between(before, after)
    previous = {(lane.port, lane.lane): lane for lane in before.lanes}
    return [_lane(previous.get((lane.port, lane.lane)), lane, seconds, restart)
            for lane in after.lanes]


def _lane(before: ElectricalLane | None, after: ElectricalLane, seconds: float | None,
          restart: str | None) -> LaneInterval:
    reason = restart
    if reason is None and before is None:
        reason = "the lane was not in the first reading"
    if (reason is None and before is not None
            and before.discontinuity_uptime_seconds != after.discontinuity_uptime_seconds):
        reason = (f"the lane's counters were reset (msoCpcLaneDiscontinuityTime is now "
                  f"{_seconds(after.discontinuity_uptime_seconds)})")
    if reason is not None or before is None:
        return _without(after, seconds, reason or "")
    limit = CODEWORDS_PER_SECOND * PLAUSIBLE_RATE_MARGIN * max(seconds or 0.0, 1.0)
    corrected = _delta(before.fec_corrected_total, after.fec_corrected_total, limit)
    uncorrectable = _delta(before.fec_uncorrectable_total, after.fec_uncorrectable_total,
                           limit)
    bins = _bins(before.fec_histogram_total, after.fec_histogram_total, limit)
    if (isinstance(corrected, _Backwards) or isinstance(uncorrectable, _Backwards)
            or isinstance(bins, _Backwards)):
        return _without(after, seconds, "a FEC counter went backwards without a discontinuity "
                                        "being signalled: an unannounced reset")
    codewords = cer = counted = None
    basis = None
    over = seconds
    if bins is not None and all(count is not None for count in bins):
        codewords = sum(count or 0 for count in bins)
        if codewords == 0:
            return _without(after, seconds, "no codeword was counted in the interval (the "
                                             "device had not refreshed its counters yet, or "
                                             "the lane has no signal)")
        counted = over = codewords / CODEWORDS_PER_SECOND
        cer, basis = (bins[-1] or 0) / codewords, BASIS_HISTOGRAM
    elif uncorrectable is not None and seconds is not None and seconds > 0:
        cer = min(1.0, uncorrectable / (seconds * CODEWORDS_PER_SECOND))
        basis = BASIS_LINE_RATE
    codewords_per_frame = interleave(after.port_speed_mbps)
    return LaneInterval(
        port=after.port, lane=after.lane, interval_seconds=seconds, counted_seconds=counted,
        fec_corrected=corrected, fec_uncorrectable=uncorrectable,
        fec_corrected_per_second=rate(corrected, over),
        fec_uncorrectable_per_second=rate(uncorrectable, over),
        codewords=codewords, fec_histogram=bins, codeword_error_ratio=cer,
        frame_loss_ratio=None if cer is None else flr_per_cer(codewords_per_frame) * cer,
        interleave=codewords_per_frame, cer_basis=basis, no_rates_reason=None)


class _Backwards:
    """A counter that went backwards beyond any wrap."""


_BACKWARDS = _Backwards()


def _delta(before: int | None, after: int | None, limit: float) -> int | _Backwards | None:
    if before is None or after is None:
        return None
    delta = counter_delta(before, after, max_increase=limit)
    return _BACKWARDS if delta is None else delta


def _bins(before: Sequence[int | None] | None, after: Sequence[int | None] | None,
          limit: float) -> tuple[int | None, ...] | _Backwards | None:
    if before is None or after is None or len(before) != len(after):
        return None
    deltas: list[int | None] = []
    for start, end in zip(before, after, strict=True):
        delta = _delta(start, end, limit)
        if isinstance(delta, _Backwards):
            return _BACKWARDS
        deltas.append(delta)
    return tuple(deltas)


def _without(after: ElectricalLane, seconds: float | None, reason: str) -> LaneInterval:
    return LaneInterval(port=after.port, lane=after.lane, interval_seconds=seconds,
                        counted_seconds=None, fec_corrected=None, fec_uncorrectable=None,
                        fec_corrected_per_second=None, fec_uncorrectable_per_second=None,
                        codewords=None, fec_histogram=None, codeword_error_ratio=None,
                        frame_loss_ratio=None, interleave=interleave(after.port_speed_mbps),
                        cer_basis=None, no_rates_reason=reason)


def _seconds(value: float | None) -> str:
    return "not reported" if value is None else f"{value:.2f} s of sysUpTime"
