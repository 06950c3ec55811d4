"""Counter deltas, rates, CER and FLR (drivers/snmp/rates.py): pure functions, made-up readings."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from drivers.snmp.rates import (
    CODEWORDS_PER_SECOND,
    COUNTER32_MODULUS,
    COUNTER64_MODULUS,
    RESTART_SLACK_SECONDS,
    counter_delta,
    lane_intervals,
    rate,
)
from drivers.snmp.telemetry import CollectionInfo, CpcTelemetry, ElectricalLane

BINS = 17


def info(uptime: float, *, end: float | None = None, at: float | None = None,
         restarted: bool = False, boots: int | None = None) -> CollectionInfo:
    return CollectionInfo(device="sw-x", uptime_seconds=uptime,
                          uptime_end_seconds=uptime if end is None else end,
                          restarted=restarted, requests=3, variables=100,
                          duration_seconds=0.1,
                          started_monotonic=1000.0 + uptime if at is None else at,
                          engine_boots=boots, engine_boots_end=boots)


def lane(port: int, number: int, histogram: list[int] | None, *, reset_at: float = 0.0,
         corrected: int | None = None, uncorrectable: int | None = None,
         speed_mbps: int | None = None) -> ElectricalLane:
    if histogram is not None:
        corrected = sum(histogram[1:16]) if corrected is None else corrected
        uncorrectable = histogram[16] if uncorrectable is None else uncorrectable
    return ElectricalLane(port=port, lane=number, port_name=f"Ethernet{port}",
                          port_speed_mbps=speed_mbps, snr_db=20.0,
                          pre_fec_ber=1e-6, fec_corrected_total=corrected,
                          fec_uncorrectable_total=uncorrectable, insertion_loss_db=30.0,
                          eye_height_mv=15.0, eye_width_ui=0.25,
                          discontinuity_uptime_seconds=reset_at,
                          fec_histogram_total=None if histogram is None else tuple(histogram))


def reading(uptime: float, *lanes: ElectricalLane, **fields: Any) -> CpcTelemetry:
    return CpcTelemetry(info(uptime, **fields), 1e-4, tuple(lanes))


def bins(error_free: int, corrected: int = 0, uncorrectable: int = 0) -> list[int]:
    counts = [0] * BINS
    counts[0], counts[1], counts[16] = error_free, corrected, uncorrectable
    return counts


# ---- counters ------------------------------------------------------------------------------


def test_counter_delta_counts_one_wrap() -> None:
    assert counter_delta(10, 25) == 15
    assert counter_delta(COUNTER64_MODULUS - 5, 10) == 15
    assert counter_delta(COUNTER32_MODULUS - 1, 2, modulus=COUNTER32_MODULUS) == 3
    assert counter_delta(7, 7) == 0


def test_a_counter_that_went_back_further_than_a_wrap_explains_was_reset() -> None:
    assert counter_delta(1_000_000, 10, max_increase=1e6) is None
    assert counter_delta(COUNTER64_MODULUS - 5, 10, max_increase=1e6) == 15
    with pytest.raises(ValueError):
        counter_delta(-1, 5)
    with pytest.raises(ValueError):
        counter_delta(0, COUNTER32_MODULUS, modulus=COUNTER32_MODULUS)


def test_rate_needs_a_delta_and_a_positive_interval() -> None:
    assert rate(50, 10.0) == 5.0
    assert rate(None, 10.0) is None
    assert rate(50, 0.0) is None and rate(50, None) is None


# ---- CER and FLR -----------------------------------------------------------------------------


def test_cer_and_flr_from_the_histogram_over_the_counted_time() -> None:
    per_second = CODEWORDS_PER_SECOND
    before = reading(100.0, lane(1, 1, bins(5 * per_second - 1000, 900, 100)))
    after = reading(110.0, lane(1, 1, bins(15 * per_second - 3000, 2500, 500)))
    [row] = lane_intervals(before, after)
    assert row.no_rates_reason is None
    assert row.interval_seconds == 10.0
    assert row.codewords == 10 * per_second
    assert row.counted_seconds == 10.0
    assert row.fec_corrected == 1600 and row.fec_uncorrectable == 400
    assert row.fec_corrected_per_second == 160.0 and row.fec_uncorrectable_per_second == 40.0
    assert row.fec_histogram is not None and row.fec_histogram[16] == 400
    # CER = ΔU / (ΔU + ΔC + ΔS0); FLR = 1.125 CER, the port's speed not known
    assert row.codeword_error_ratio == pytest.approx(400 / (10 * per_second))
    assert row.interleave == 1
    assert row.frame_loss_ratio == pytest.approx(1.125 * 400 / (10 * per_second))
    assert row.cer_basis == "histogram"


@pytest.mark.parametrize(("speed_mbps", "codewords_per_frame", "flr_per_cer"), [
    (None, 1, 1.125), (100_000, 1, 1.125), (200_000, 1, 1.125), (400_000, 2, 2.125),
    (800_000, 4, 4.125), (1_600_000, 4, 4.125)])
def test_flr_follows_the_interleave_of_the_ports_speed(
        speed_mbps: int | None, codewords_per_frame: int, flr_per_cer: float) -> None:
    """FLR = CER (1 + 8X) / 8, X the codewords a frame spans: 4 at 800G and 1.6T, 2 at
    400G (SONiC's FEC FLR design), 1 below and when ifHighSpeed is not served."""
    per_second = CODEWORDS_PER_SECOND
    before = reading(100.0, lane(1, 1, bins(5 * per_second - 100, 0, 100),
                                 speed_mbps=speed_mbps))
    after = reading(110.0, lane(1, 1, bins(15 * per_second - 300, 0, 300),
                                speed_mbps=speed_mbps))
    [row] = lane_intervals(before, after)
    assert row.interleave == codewords_per_frame
    assert row.codeword_error_ratio == pytest.approx(200 / (10 * per_second))
    assert row.frame_loss_ratio == pytest.approx(flr_per_cer * 200 / (10 * per_second))


def test_rates_are_over_the_time_the_counters_counted_not_the_readings_apart() -> None:
    # The device refreshed its counters 3 s apart although it was read 2 s apart.
    before = reading(100.0, lane(1, 1, bins(0)))
    after = reading(102.0, lane(1, 1, bins(3 * CODEWORDS_PER_SECOND - 30, 30)))
    [row] = lane_intervals(before, after)
    assert row.interval_seconds == 2.0 and row.counted_seconds == 3.0
    assert row.fec_corrected_per_second == 10.0


def test_without_a_histogram_the_line_rate_gives_the_codewords() -> None:
    before = reading(100.0, lane(1, 1, None, corrected=0, uncorrectable=0))
    after = reading(104.0, lane(1, 1, None, corrected=4000, uncorrectable=78))
    [row] = lane_intervals(before, after)
    assert row.cer_basis == "line_rate" and row.codewords is None
    assert row.codeword_error_ratio == pytest.approx(78 / (4 * CODEWORDS_PER_SECOND))
    assert row.fec_corrected_per_second == 1000.0  # over sysUpTime's 4 s


def test_counters_that_did_not_move_give_no_rates() -> None:
    same = lane(1, 1, bins(5000))
    [row] = lane_intervals(reading(100.0, same), reading(100.5, same))
    assert row.no_rates_reason is not None and "no codeword" in row.no_rates_reason
    assert row.codeword_error_ratio is None and row.fec_corrected_per_second is None


# ---- discontinuities ---------------------------------------------------------------------------


def test_sysuptime_going_backwards_is_a_restart_for_every_lane() -> None:
    before = reading(500.0, lane(1, 1, bins(10**9)), lane(1, 2, bins(10**9)))
    after = reading(3.0, lane(1, 1, bins(10**8)), lane(1, 2, bins(10**8)))
    rows = lane_intervals(before, after)
    assert all(row.no_rates_reason is not None and "sysUpTime went back from 500.00 s"
               in row.no_rates_reason for row in rows)
    assert all(row.fec_corrected is None and row.codeword_error_ratio is None for row in rows)


def test_a_restart_during_a_reading_is_a_restart() -> None:
    before = reading(100.0, lane(1, 1, bins(0)))
    after = reading(110.0, lane(1, 1, bins(CODEWORDS_PER_SECOND)), restarted=True)
    [row] = lane_intervals(before, after)
    assert row.no_rates_reason is not None and "during a reading" in row.no_rates_reason


def test_sysuptime_falling_behind_this_hosts_clock_is_a_restart() -> None:
    # Up 10 s, read; restarted 60 s later; read again 30 s after the restart: sysUpTime
    # did not go backwards (10 s -> 30 s), but it advanced 20 s while 90 s went by.
    before = reading(10.0, lane(1, 1, bins(0)), at=1000.0)
    after = reading(30.0, lane(1, 1, bins(30 * CODEWORDS_PER_SECOND)), at=1090.0)
    [row] = lane_intervals(before, after)
    assert row.no_rates_reason is not None and "advanced 20.00 s while 90.00 s" in (
        row.no_rates_reason)
    # ...but not within the slack (a first request that waited for a retry).
    late = replace(after, info=replace(after.info, started_monotonic=1000.0 + 20.0
                                       + RESTART_SLACK_SECONDS - 0.5))
    assert lane_intervals(before, late)[0].no_rates_reason is None


def test_a_change_of_snmp_engine_boots_is_a_restart_whatever_sysuptime_did() -> None:
    """RFC 3414 2.2.2: snmpEngineBoots counts the engine's re-initialisations. Up 10 s,
    read; restarted at once and read 30 s later: sysUpTime went forwards, and this
    host's clock agrees, but boots 4 -> 5 says the counters started again."""
    before = reading(10.0, lane(1, 1, bins(0)), at=1000.0, boots=4)
    after = reading(30.0, lane(1, 1, bins(30 * CODEWORDS_PER_SECOND)), at=1030.0, boots=5)
    [row] = lane_intervals(before, after)
    assert row.no_rates_reason is not None and "snmpEngineBoots went from 4 to 5" in (
        row.no_rates_reason)
    assert row.fec_corrected is None


def test_the_same_boots_leave_nothing_to_guess_from_this_hosts_clock() -> None:
    """With snmpEngineBoots unchanged the engine did not re-initialise: a sysUpTime that
    advanced less than this host's clock (a slow host, a stalled agent) is no restart."""
    before = reading(10.0, lane(1, 1, bins(0)), at=1000.0, boots=4)
    after = reading(30.0, lane(1, 1, bins(20 * CODEWORDS_PER_SECOND)), at=1090.0, boots=4)
    [row] = lane_intervals(before, after)
    assert row.no_rates_reason is None and row.codewords == 20 * CODEWORDS_PER_SECOND


def test_a_changed_discontinuity_time_is_a_reset_of_that_lane_only() -> None:
    before = reading(100.0, lane(1, 1, bins(0)), lane(1, 2, bins(0)))
    after = reading(110.0, lane(1, 1, bins(CODEWORDS_PER_SECOND)),
                    lane(1, 2, bins(CODEWORDS_PER_SECOND // 2), reset_at=105.0))
    first, second = lane_intervals(before, after)
    assert first.no_rates_reason is None and first.codewords == CODEWORDS_PER_SECOND
    assert second.no_rates_reason is not None and "105.00 s of sysUpTime" in (
        second.no_rates_reason)
    assert second.fec_corrected_per_second is None


def test_an_unannounced_reset_and_a_new_lane_give_no_rates() -> None:
    before = reading(100.0, lane(1, 1, bins(10 * CODEWORDS_PER_SECOND, 5000)))
    after = reading(101.0, lane(1, 1, bins(CODEWORDS_PER_SECOND // 2, 10)),
                    lane(2, 1, bins(CODEWORDS_PER_SECOND)))
    reset, new = lane_intervals(before, after)
    assert reset.no_rates_reason is not None and "went backwards" in reset.no_rates_reason
    assert new.no_rates_reason == "the lane was not in the first reading"
