"""Co-packaged copper of one switch: 224G PAM4 lanes, their SNR and their FEC counters.

Per lane (figures chosen by this emulator, see :mod:`.physics` for the laws):

- **Channel.** An insertion loss at Nyquist drawn once per lane, 26-34 dB (a
  copper reach of about 1.5 m at 53 GHz). The receiver's estimate of it carries
  0.05 dB of noise.
- **SNR.** ``21.5 dB - 0.25 × (loss - 26 dB)`` plus a fixed ±0.3 dB per lane,
  so healthy lanes sit at 19.2-21.8 dB (pre-FEC BER 1e-8 to 1e-5, well inside
  what RS(544,514) cleans up), plus a wander: an Ornstein-Uhlenbeck process of
  0.15 dB standard deviation and 30 s correlation time. A ``rising_ber`` fault
  ramps the SNR down linearly by ``depth`` dB over ``seconds``.
- **Pre-FEC BER** is the PAM4 formula at the lane's SNR now.
- **FEC counters** integrate the codewords that arrived since the last update:
  39,062,500 per second per lane, the fraction of a codeword carried to the
  next update, split into the 17 histogram bins by a multinomial draw at the
  bin probabilities averaged over the interval (the SNR moves in between: it
  is taken as linear between the two updates, the fault ramp exactly).
  Corrected = bins 1..15, uncorrectable = bin 16, so they agree by
  construction.
- **Eye.** The opening of the smallest PAM4 eye at a 1e-4 contour, for levels
  ±d, ±3d with d = 40 mV (240 mV swing after equalisation) and Gaussian noise
  at the lane's SNR: ``height = 2d - 2 z σ``, σ = d·sqrt(5 / SNR), z = Q⁻¹(1e-4)
  = 3.719; width = 0.6 UI × sqrt(height / 2d). Both 0 once the eye closes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from emulators.cpo import physics
from emulators.cpo.optical import ornstein_uhlenbeck

LOSS_MIN_DB = 26.0
LOSS_MAX_DB = 34.0
LOSS_ESTIMATE_NOISE_DB = 0.05
SNR_AT_MIN_LOSS_DB = 21.5
SNR_PER_LOSS_DB = 0.25
SNR_LANE_SPREAD_DB = 0.3
SNR_WANDER_DB = 0.15
SNR_WANDER_SECONDS = 30.0
RISING_BER_DEPTH_DB = 8.0
RISING_BER_SECONDS = 60.0

EYE_LEVEL_SPACING_MV = 40.0  # d: levels at ±d and ±3d
EYE_CONTOUR_Z = 3.719  # Q(3.719) = 1e-4
EYE_WIDTH_MAX_UI = 0.6

# How many points of an interval the bin probabilities are averaged over when the
# SNR moves in it; one (the middle) when it stays within SNR_STEADY_DB.
INTERVAL_SAMPLES = 8
SNR_STEADY_DB = 0.25


@dataclass(frozen=True)
class ElectricalLaneReading:
    port: int  # ifIndex
    lane: int
    snr_db: float
    pre_fec_ber: float
    fec_corrected: int
    fec_uncorrectable: int
    histogram: tuple[int, ...]  # codewords with 0..15 symbol errors, then 16 or more
    insertion_loss_db: float
    eye_height_mv: float
    eye_width_ui: float
    discontinuity_at: float | None  # device time of the last counter reset, if any


@dataclass
class SnrRamp:
    """A falling SNR: ``depth_db`` lost linearly from ``start`` over ``seconds``."""

    start: float
    seconds: float
    depth_db: float

    def loss_db(self, now: float) -> float:
        if now <= self.start:
            return 0.0
        if self.seconds <= 0.0 or now >= self.start + self.seconds:
            return self.depth_db
        return self.depth_db * (now - self.start) / self.seconds


class ElectricalLane:
    """One lane's channel, SNR and FEC counters."""

    def __init__(self, port: int, lane: int, rng: random.Random):
        self.port = port
        self.lane = lane
        self.insertion_loss_db = rng.uniform(LOSS_MIN_DB, LOSS_MAX_DB)
        self.base_snr_db = (SNR_AT_MIN_LOSS_DB
                            - SNR_PER_LOSS_DB * (self.insertion_loss_db - LOSS_MIN_DB)
                            + rng.uniform(-SNR_LANE_SPREAD_DB, SNR_LANE_SPREAD_DB))
        self.wander_db = 0.0
        self.ramp: SnrRamp | None = None
        self.histogram = [0] * physics.HISTOGRAM_BINS
        self.codeword_carry = 0.0
        self.discontinuity_at: float | None = None

    def snr_db(self, now: float, wander_db: float | None = None) -> float:
        ramp = self.ramp.loss_db(now) if self.ramp is not None else 0.0
        return self.base_snr_db + (self.wander_db if wander_db is None else wander_db) - ramp

    def reset_counters(self, now: float | None) -> None:
        """Zero the counters; ``now`` is the discontinuity's time (None: a fresh agent)."""
        self.histogram = [0] * physics.HISTOGRAM_BINS
        self.codeword_carry = 0.0
        self.discontinuity_at = now

    def bin_probabilities(self, start: float, end: float, wander_start: float,
                          wander_end: float) -> list[float]:
        """The histogram bins' probabilities averaged over the interval [start, end]."""
        first = self.snr_db(start, wander_start)
        last = self.snr_db(end, wander_end)
        ramping = self.ramp is not None and self.ramp.start < end and (
            start < self.ramp.start + self.ramp.seconds)
        samples = INTERVAL_SAMPLES if ramping or abs(last - first) > SNR_STEADY_DB else 1
        total = [0.0] * physics.HISTOGRAM_BINS
        for sample in range(samples):
            fraction = (sample + 0.5) / samples
            moment = start + (end - start) * fraction
            snr = self.snr_db(moment, wander_start + (wander_end - wander_start) * fraction)
            probabilities = physics.codeword_bin_probabilities(
                physics.rs_symbol_error_probability(snr))
            for index, probability in enumerate(probabilities):
                total[index] += probability
        return [value / samples for value in total]

    def advance(self, start: float, end: float, rng: random.Random) -> None:
        """Count the codewords of [start, end] and move the SNR's wander to ``end``."""
        seconds = end - start
        if seconds <= 0.0:
            return
        wander_end = ornstein_uhlenbeck(rng, self.wander_db, seconds, SNR_WANDER_DB,
                                        SNR_WANDER_SECONDS)
        probabilities = self.bin_probabilities(start, end, self.wander_db, wander_end)
        self.wander_db = wander_end
        arrived = physics.CODEWORDS_PER_SECOND * seconds + self.codeword_carry
        codewords = math.floor(arrived)
        self.codeword_carry = arrived - codewords
        for index, count in enumerate(physics.multinomial(rng, codewords, probabilities)):
            self.histogram[index] += count

    def read(self, now: float, rng: random.Random) -> ElectricalLaneReading:
        snr = self.snr_db(now)
        height, width = eye_opening(snr)
        histogram = tuple(self.histogram)
        return ElectricalLaneReading(
            port=self.port, lane=self.lane, snr_db=snr,
            pre_fec_ber=physics.pam4_bit_error_ratio(snr),
            fec_corrected=sum(histogram[1:physics.UNCORRECTABLE_BIN]),
            fec_uncorrectable=histogram[physics.UNCORRECTABLE_BIN],
            histogram=histogram,
            insertion_loss_db=self.insertion_loss_db + rng.gauss(0.0, LOSS_ESTIMATE_NOISE_DB),
            eye_height_mv=height, eye_width_ui=width,
            discontinuity_at=self.discontinuity_at)


def eye_opening(snr_db: float) -> tuple[float, float]:
    """(height in mV, width in UI) of the smallest PAM4 eye at ``snr_db``."""
    sigma_mv = EYE_LEVEL_SPACING_MV * math.sqrt(5.0 / physics.db_to_ratio(snr_db))
    height = 2.0 * EYE_LEVEL_SPACING_MV - 2.0 * EYE_CONTOUR_Z * sigma_mv
    if height <= 0.0:
        return 0.0, 0.0
    return height, EYE_WIDTH_MAX_UI * math.sqrt(height / (2.0 * EYE_LEVEL_SPACING_MV))
