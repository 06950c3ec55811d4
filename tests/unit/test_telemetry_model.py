"""CPO/CPC telemetry physics (emulators/cpo): PAM4 BER, FEC statistics, the model's faults.

Time is a SteppedClock; every draw comes from seeded generators, so each statistical
check below sees the same numbers on every run, and its tolerance (five standard
deviations) is there to say what the model promises, not to absorb flakiness.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from drivers.snmp import mibs
from emulators.clock import SteppedClock
from emulators.cpo import copper, physics
from emulators.cpo.columns import BITS, COUNTER, ENUM, LOG10_BER, NUMBER, TEXT, fixed
from emulators.cpo.mibview import encode
from emulators.cpo.model import SwitchTelemetry, TelemetrySpec, receiver_source
from emulators.cpo.optical import LASER_RAMP_SECONDS, NO_LIGHT_DBM
from emulators.faults import Fault, FaultError
from emulators.optics.model import Fiber, OpticalModel, Transceivers

SMALL = TelemetrySpec(ports=(1, 2, 3, 4), optical_lanes_per_port=8, electrical_lanes_per_port=2,
                      lanes_per_engine=16, lanes_per_laser=4, lasers_per_els_module=4)


def _telemetry(spec: TelemetrySpec = SMALL, **kwargs: object) -> tuple[SteppedClock,
                                                                         SwitchTelemetry]:
    clock = SteppedClock()
    return clock, SwitchTelemetry("sw-t", clock, spec, **kwargs)  # type: ignore[arg-type]


def _steady(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SNR wander: each lane's SNR stays where a test puts it."""
    monkeypatch.setattr(copper, "SNR_WANDER_DB", 0.0)


# --- PAM4 and RS(544,514) ---------------------------------------------------------


def test_pam4_ber_is_the_gray_coded_formula_and_falls_with_snr() -> None:
    def expected(snr_db: float) -> float:
        snr = 10 ** (snr_db / 10)
        q = 0.5 * math.erfc(math.sqrt(3 * snr / 15) / math.sqrt(2))
        return 2 * (1 - 1 / 4) * q / 2

    grid = [10 + step * 0.25 for step in range(61)]  # 10..25 dB
    bers = [physics.pam4_bit_error_ratio(snr) for snr in grid]
    for snr, ber in zip(grid, bers, strict=True):
        assert ber == pytest.approx(expected(snr), rel=1e-12)
    assert all(later < earlier for earlier, later in itertools.pairwise(bers))
    # The figures people quote: the KP4 FEC limit of 2.4E-4 sits near 17.7 dB.
    assert physics.pam4_bit_error_ratio(17.7) == pytest.approx(2.3e-4, rel=0.1)


def test_line_rate_gives_a_whole_number_of_codewords_per_second() -> None:
    assert physics.CODEWORD_BITS == 5440 and physics.RS_T == 15
    assert physics.CODEWORDS_PER_SECOND == 39_062_500
    assert physics.HISTOGRAM_BINS == 17


@pytest.mark.parametrize("p", [1e-7, 1e-4, 2.6e-3, 0.02, 0.05, 0.2])
def test_codeword_bins_are_the_binomial_distribution(p: float) -> None:
    bins = physics.codeword_bin_probabilities(p)
    # Each term on its own, in logarithms (the model uses a recurrence instead).
    pmf = [math.exp(math.log(math.comb(544, k)) + k * math.log(p) + (544 - k) * math.log1p(-p))
           for k in range(545)]
    for k in range(16):
        assert bins[k] == pytest.approx(pmf[k], rel=1e-9, abs=1e-300)
    assert bins[16] == pytest.approx(math.fsum(pmf[16:]), rel=1e-9, abs=1e-300)
    assert math.fsum(bins) == pytest.approx(1.0, abs=1e-12)


def test_uncorrectable_codewords_appear_only_as_the_snr_nears_the_fec_limit() -> None:
    assert physics.expected_codeword_error_ratio(20.0) < 1e-30
    assert 1e-13 < physics.expected_codeword_error_ratio(17.6) < 1e-10
    ratios = [physics.expected_codeword_error_ratio(snr) for snr in (18, 17, 16, 15)]
    assert ratios == sorted(ratios)


@pytest.mark.parametrize(("trials", "p"), [(10**6, 3e-6), (500, 0.3), (39_062_500, 0.01),
                                           (10**12, 1e-9), (40, 0.9)])
def test_binomial_draws_have_the_binomial_mean_and_variance(trials: int, p: float) -> None:
    rng = random.Random(7)
    draws = [physics.binomial(rng, trials, p) for _ in range(4000)]
    mean = sum(draws) / len(draws)
    variance = sum((draw - mean) ** 2 for draw in draws) / (len(draws) - 1)
    expected_variance = trials * p * (1 - p)
    assert mean == pytest.approx(trials * p, abs=5 * math.sqrt(expected_variance / len(draws)))
    assert variance == pytest.approx(expected_variance, rel=0.15)
    assert all(0 <= draw <= trials for draw in draws)


def test_multinomial_splits_every_trial() -> None:
    rng = random.Random(3)
    for trials in (0, 1, 17, 10**9):
        counts = physics.multinomial(rng, trials, physics.codeword_bin_probabilities(0.01))
        assert sum(counts) == trials and min(counts) >= 0


# --- the FEC counters over the clock ------------------------------------------------


def test_fec_counters_follow_the_codeword_error_probabilities(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _steady(monkeypatch)
    clock, telemetry = _telemetry()
    lane = telemetry.electrical_lane(1, 1)
    lane.base_snr_db = 16.9  # CER about 4e-7: some 15 uncorrectable codewords a second
    seconds = 60
    for _ in range(seconds):
        clock.advance(1.0)
        telemetry.update()
    reading = next(row for row in telemetry.read().electrical_lanes
                   if (row.port, row.lane) == (1, 1))
    codewords = physics.CODEWORDS_PER_SECOND * seconds
    assert sum(reading.histogram) == codewords
    probabilities = physics.codeword_bin_probabilities(physics.rs_symbol_error_probability(16.9))
    for count, probability in zip(reading.histogram, probabilities, strict=True):
        sigma = math.sqrt(codewords * probability * (1 - probability))
        assert abs(count - codewords * probability) <= 5 * sigma + 1
    corrected = codewords * math.fsum(probabilities[1:16])
    uncorrectable = codewords * probabilities[16]
    assert reading.fec_uncorrectable > 100
    assert reading.fec_corrected == pytest.approx(corrected, rel=0.01)
    assert reading.fec_uncorrectable == pytest.approx(uncorrectable,
                                                      abs=5 * math.sqrt(uncorrectable))


def test_histogram_agrees_with_the_counters_exactly_and_carries_fractions() -> None:
    clock, telemetry = _telemetry()
    for _ in range(50):
        clock.advance(0.37)  # not a whole number of codewords per step
        telemetry.update()
    codewords = math.floor(physics.CODEWORDS_PER_SECOND * 0.37 * 50 + 1e-6)
    for row in telemetry.read().electrical_lanes:
        assert sum(row.histogram) in (codewords - 1, codewords, codewords + 1)
        assert row.fec_corrected == sum(row.histogram[1:16])
        assert row.fec_uncorrectable == row.histogram[16]
        assert row.discontinuity_at is None


def test_same_seed_same_steps_same_numbers() -> None:
    readings = []
    for _ in range(2):
        clock, telemetry = _telemetry(seed=11)
        for step in (0.5, 3.0, 10.0):
            clock.advance(step)
            telemetry.update()
        readings.append(telemetry.read())
    assert readings[0] == readings[1]
    _, other = _telemetry(seed=12)
    assert other.read().electrical_lanes != readings[0].electrical_lanes


def test_pre_fec_ber_and_eye_follow_the_lanes_snr() -> None:
    clock, telemetry = _telemetry()
    clock.advance(5.0)
    telemetry.update()
    for row in telemetry.read().electrical_lanes:
        assert row.pre_fec_ber == physics.pam4_bit_error_ratio(row.snr_db)
        assert 18.5 < row.snr_db < 22.5 and 1e-9 < row.pre_fec_ber < 1e-4
        assert 26 - 0.5 < row.insertion_loss_db < 34 + 0.5
        assert 0 < row.eye_height_mv < 80 and 0 < row.eye_width_ui < 0.6
    assert copper.eye_opening(12.0) == (0.0, 0.0)


def test_rising_ber_ramps_the_snr_down_and_recovers_when_cleared(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _steady(monkeypatch)
    clock, telemetry = _telemetry()
    lane = telemetry.electrical_lane(2, 1)
    before = lane.snr_db(clock.now())
    telemetry.faults.inject(Fault("rising_ber", target="2/1", seconds=100))
    bers = []
    for _ in range(10):
        clock.advance(10.0)
        telemetry.update()
        bers.append(next(row.pre_fec_ber for row in telemetry.read().electrical_lanes
                         if (row.port, row.lane) == (2, 1)))
    assert bers == sorted(bers) and bers[-1] > 1e3 * bers[0]
    assert lane.snr_db(clock.now()) == pytest.approx(before - copper.RISING_BER_DEPTH_DB)
    assert telemetry.electrical_lane(2, 2).ramp is None  # only the lane it names
    uncorrectable = lane.histogram[16]
    assert uncorrectable > 0
    telemetry.faults.clear("rising_ber")
    assert lane.snr_db(clock.now()) == pytest.approx(before)
    with pytest.raises(FaultError):
        telemetry.faults.inject(Fault("rising_ber", target="99/1"))


def test_a_lane_reset_zeroes_its_counters_and_records_the_discontinuity() -> None:
    clock, telemetry = _telemetry()
    clock.advance(2.0)
    telemetry.update()
    telemetry.faults.inject(Fault("lane_reset", target="3"))
    clock.advance(1.0)
    telemetry.update()
    rows = {(row.port, row.lane): row for row in telemetry.read().electrical_lanes}
    assert rows[3, 1].discontinuity_at == 2.0 and rows[3, 2].discontinuity_at == 2.0
    assert sum(rows[3, 1].histogram) == physics.CODEWORDS_PER_SECOND
    assert sum(rows[1, 1].histogram) == 3 * physics.CODEWORDS_PER_SECOND
    assert not telemetry.faults.is_active("lane_reset")  # an event
    telemetry.reset_counters()  # an agent restart: no discontinuity recorded since
    assert telemetry.read().electrical_lanes[0].discontinuity_at is None


# --- optics -------------------------------------------------------------------------


def test_lanes_map_onto_engines_and_lasers_in_order() -> None:
    _, telemetry = _telemetry()
    reading = telemetry.read()
    assert [engine.name for engine in reading.engines] == ["OE1", "OE2"]  # 32 lanes / 16
    assert len(reading.lasers) == 8  # 32 lanes / 4 per laser, in 2 modules of 4
    lane = next(row for row in reading.optical_lanes if (row.port, row.lane) == (3, 2))
    # optical lane 17 (from 0): engine 2 lane 2; laser 4 (from 0): module 2 lane 1
    assert (lane.engine, lane.engine_lane, lane.els_module, lane.els_lane) == (2, 2, 2, 1)


def test_healthy_optics_read_plausible_values() -> None:
    _, telemetry = _telemetry()
    reading = telemetry.read()
    for engine in reading.engines:
        assert 60 < engine.temperature_celsius < 75 and engine.status == "normal"
        assert engine.supply_voltage_volts == pytest.approx(1.791, abs=0.005)
    for laser in reading.lasers:
        assert laser.state == "on" and laser.faults == frozenset()
        assert laser.output_power_dbm == pytest.approx(18.0, abs=0.1)
        assert 200 < laser.bias_current_ma < 260 and 1.9 < laser.voltage_volts < 2.2
    for lane in reading.optical_lanes:
        # 18 dBm - 6.02 dB (split 1:4) - 7.5 dB, +-0.3 dB per lane
        assert lane.tx_power_dbm == pytest.approx(4.48, abs=0.45)
        assert lane.rx_power_dbm == pytest.approx(-2.0, abs=0.6)


def test_engine_temperature_drifts_slowly_and_follows_the_load() -> None:
    clock, telemetry = _telemetry()
    temperatures = []
    for _ in range(600):
        clock.advance(10.0)
        telemetry.update()
        temperatures.append(telemetry.optics.engines[0].lagged_celsius
                            + telemetry.optics.engines[0].wander_celsius)
    assert max(temperatures) - min(temperatures) < 5.0  # a wander of 0.5 degC, not a walk off
    assert max(abs(b - a) for a, b in itertools.pairwise(temperatures)) < 0.6
    assert sum(temperatures) / len(temperatures) == pytest.approx(55 + 20 * 0.6, abs=1.0)
    telemetry.set_load(1.0)
    clock.advance(600.0)
    telemetry.update()
    assert telemetry.read().engines[0].temperature_celsius == pytest.approx(75.0, abs=2.5)


def test_overheat_raises_over_temperature_with_hysteresis() -> None:
    clock, telemetry = _telemetry()
    telemetry.faults.inject(Fault("overheat", target="1"))
    clock.advance(600.0)
    telemetry.update()
    status = {engine.index: engine.status for engine in telemetry.read().engines}
    assert status == {1: "overTemperature", 2: "normal"}
    telemetry.faults.clear("overheat")
    clock.advance(600.0)
    telemetry.update()
    assert telemetry.read().engines[0].status == "normal"


def test_an_els_fault_darkens_the_lanes_its_laser_feeds_and_recovery_ramps() -> None:
    clock, telemetry = _telemetry()
    telemetry.faults.inject(Fault("els", target="1/2"))
    clock.advance(0.5)
    telemetry.update()
    reading = telemetry.read()
    laser = next(row for row in reading.lasers if (row.module, row.lane) == (1, 2))
    assert laser.state == "off" and laser.output_power_dbm == NO_LIGHT_DBM
    assert laser.faults == {"coolerFault", "overTemperature"}
    assert laser.bias_current_ma == 0.0 and laser.temperature_celsius > 70
    dark = {(row.port, row.lane) for row in reading.optical_lanes
            if row.tx_power_dbm == NO_LIGHT_DBM}
    fed = {(row.port, row.lane) for row in reading.optical_lanes
           if (row.els_module, row.els_lane) == (1, 2)}
    assert dark == fed == {(1, 5), (1, 6), (1, 7), (1, 8)}
    assert telemetry.tx_power_dbm(1, 5) == NO_LIGHT_DBM
    telemetry.faults.clear("els")
    clock.advance(LASER_RAMP_SECONDS / 2)
    telemetry.update()
    laser = next(row for row in telemetry.read().lasers if (row.module, row.lane) == (1, 2))
    assert laser.state == "ramping" and laser.faults == frozenset()
    assert laser.output_power_dbm == pytest.approx(18.0 - 3.01, abs=0.1)
    clock.advance(LASER_RAMP_SECONDS)
    telemetry.update()
    assert telemetry.read().lasers[1].state == "on"


def test_a_degrading_laser_fault_leaves_it_on_at_lower_power_and_the_current_at_its_limit(
        ) -> None:
    clock, telemetry = _telemetry()
    telemetry.faults.inject(Fault("els", target="2/3:endOfLife,lowOutputPower"))
    clock.advance(1.0)
    telemetry.update()
    laser = next(row for row in telemetry.read().lasers if (row.module, row.lane) == (2, 3))
    assert laser.state == "on" and laser.faults == {"endOfLife", "lowOutputPower"}
    assert laser.output_power_dbm == pytest.approx(12.0, abs=0.1)
    assert laser.bias_current_ma == pytest.approx(350.0, abs=0.1)
    with pytest.raises(FaultError, match="onFire"):
        telemetry.faults.inject(Fault("els", target="1/1:onFire"))
    with pytest.raises(FaultError, match="MODULE/LANE"):
        telemetry.faults.inject(Fault("els", target="9/9"))


def test_a_failed_engine_darkens_its_lanes() -> None:
    clock, telemetry = _telemetry()
    telemetry.faults.inject(Fault("engine", target="2"))
    clock.advance(1.0)
    telemetry.update()
    reading = telemetry.read()
    assert [engine.status for engine in reading.engines] == ["normal", "failed"]
    assert all(row.tx_power_dbm == NO_LIGHT_DBM for row in reading.optical_lanes
               if row.engine == 2)
    assert all(row.tx_power_dbm > 0 for row in reading.optical_lanes if row.engine == 1)


def test_receive_power_comes_from_the_source_given() -> None:
    powers = {(1, 1): -7.25, (2, 3): NO_LIGHT_DBM}
    _, telemetry = _telemetry(rx_power_dbm=lambda port, lane: powers.get((port, lane), -1.0))
    rows = {(row.port, row.lane): row for row in telemetry.read().optical_lanes}
    assert rows[1, 1].rx_power_dbm == pytest.approx(-7.25, abs=0.1)
    assert rows[2, 3].rx_power_dbm == NO_LIGHT_DBM
    assert rows[4, 8].rx_power_dbm == pytest.approx(-1.0, abs=0.1)


def test_receive_power_can_come_from_the_optical_model() -> None:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    optics.add(Transceivers("sw-t", 4, power_dbm=1.0))
    fiber = Fiber("loop", 10.0, loss_db_per_km=0.25, connector_loss_db=0.5)
    optics.add(fiber)
    optics.patch("sw-t:tx1", "loop:in")
    optics.patch("loop:out", "sw-t:rx3")
    spec = TelemetrySpec(ports=(5, 7), optical_lanes_per_port=4, electrical_lanes_per_port=1)
    # ifIndex 5 and 7 are the bank's ports 1 and 3
    source = receiver_source(optics, "sw-t", port_numbers={5: 1, 7: 3})
    telemetry = SwitchTelemetry("sw-t", clock, spec, rx_power_dbm=source)
    rows = telemetry.read().optical_lanes
    assert all(row.rx_power_dbm == pytest.approx(1.0 - 3.0, abs=0.1) for row in rows
               if row.port == 7)
    assert all(row.rx_power_dbm == NO_LIGHT_DBM for row in rows if row.port == 5)
    fiber.cut = True
    clock.advance(1.0)
    telemetry.update()
    assert all(row.rx_power_dbm == NO_LIGHT_DBM for row in telemetry.read().optical_lanes)


def test_spec_refuses_impossible_shapes() -> None:
    with pytest.raises(ValueError):
        TelemetrySpec(ports=(1, 1))
    with pytest.raises(ValueError):
        TelemetrySpec(electrical_lanes_per_port=0)


# --- encoding for the MIB ------------------------------------------------------------


def test_values_encode_as_the_mib_says() -> None:
    """MSO-TC's fixed points and MsoLog10Ber, RFC 2578's BITS and Counter64, RFC 2863's
    saturating ifSpeed, as the agent's own table (emulators/cpo/columns.py) names them."""
    def node(module: str, name: str) -> mibs.MibObject:
        return mibs.mib_object(module, name)

    tx = node("MSO-CPO-MIB", "msoCpoLaneTxPower")
    assert encode(tx, fixed(2), -1.234) == -123 and encode(tx, fixed(2), NO_LIGHT_DBM) == -10000
    assert encode(tx, fixed(2), 250.0) == 10000 and encode(tx, fixed(2), None) is None
    assert encode(tx, fixed(2), float("nan")) is None
    ber = node("MSO-CPC-MIB", "msoCpcLanePreFecBer")
    assert encode(ber, LOG10_BER, 2.4e-4) == -3620 and encode(ber, LOG10_BER, 0.0) == -18000
    assert encode(ber, LOG10_BER, 1e-30) == -18000
    assert encode(node("MSO-CPO-MIB", "msoCpoElsBiasCurrent"), fixed(3), 52.5) == 52500
    assert encode(node("MSO-CPO-MIB", "msoCpoElsState"), ENUM, "ramping") == 2
    assert encode(node("MSO-CPO-MIB", "msoCpoElsFaults"), BITS,
                  frozenset({"coolerFault", "endOfLife"})) == b"\x41"
    assert encode(node("MSO-CPC-MIB", "msoCpcLaneFecCorrected"), COUNTER, 2**64 + 5) == 5
    assert encode(node("MSO-CPO-MIB", "msoCpoEngineName"), TEXT,
                  "OE1" * 30) == b"OE1" * 21 + b"O"
    speed = node("IF-MIB", "ifSpeed")
    assert encode(speed, NUMBER, 800e9) == 2**32 - 1 and encode(speed, NUMBER, 1e9) == 10**9
    with pytest.raises(TypeError):
        encode(tx, ENUM, 1.5)


def test_tables_that_augment_another_take_its_index() -> None:
    names = mibs.table("IF-MIB", "ifXTable")
    assert [part.name for part in names.index] == ["ifIndex"]
    assert names.instance("ifName", (7,)) == (*mibs.oid("IF-MIB", "ifName"), 7)
