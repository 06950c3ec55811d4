"""Link physics of a 224G PAM4 SerDes lane and its RS(544,514) FEC, as plain functions.

The chain from what a receiver sees to what its FEC counts:

1. SNR (dB, at the slicer after equalisation) → PAM4 symbol error ratio, for M
   equally spaced levels with Gray coding and Gaussian noise (the textbook M-PAM
   result, e.g. Proakis, *Digital Communications*, M-ary PAM)::

       SER = 2 (1 - 1/M) Q( sqrt( 3 SNR / (M^2 - 1) ) ),   M = 4
       BER = SER / log2(M)

   (Gray coding: a symbol error moves to a neighbouring level and flips one of
   the log2(M) = 2 bits.)
2. BER → the probability that a 10-bit RS symbol is wrong. A 10-bit symbol is
   five PAM4 symbols, and it is wrong when any of them is:
   ``p = 1 - (1 - SER)^5``, about 10 × BER while errors are rare. Errors are
   taken as independent: the error bursts of a DFE and the precoding that
   shortens them are not modelled.
3. Symbol errors per codeword → Binomial(544, p). RS(544,514) corrects up to
   t = 15 of them, so a codeword lands in histogram bin k (k = 0..15 errors,
   bin 0 being error-free) or in bin 16 (16 or more errors: uncorrectable).
   Corrected codewords are bins 1..15.
4. Codewords arrive at the line rate: 212.5 Gb/s per lane (the MIB's figure:
   the 200 Gb/s of 200GbE per lane after 256b/257b transcoding and the
   RS(544,514) parity, 106.25 GBd PAM4) over 5,440 bits per codeword, which is
   exactly 39,062,500 codewords per second per lane.

Counting over an interval is a multinomial draw of the codewords into the 17
bins, done as a chain of binomial draws (:func:`multinomial`), each from the
exact binomial distribution (:func:`binomial`), with the caller's seeded
:class:`random.Random` so that a run is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

PAM4_LEVELS = 4
BITS_PER_PAM4_SYMBOL = 2  # log2(4)

RS_N = 544
"""Symbols per RS(544,514) codeword."""
RS_K = 514
"""Data symbols per codeword."""
RS_T = (RS_N - RS_K) // 2
"""Symbol errors the decoder corrects: 15."""
RS_SYMBOL_BITS = 10
CODEWORD_BITS = RS_N * RS_SYMBOL_BITS  # 5,440
PAM4_SYMBOLS_PER_RS_SYMBOL = RS_SYMBOL_BITS // BITS_PER_PAM4_SYMBOL  # 5

LANE_RATE_BPS = 212_500_000_000
"""Line rate of one 224G electrical lane, FEC parity included (MSO-CPC-MIB)."""
CODEWORDS_PER_SECOND = LANE_RATE_BPS // CODEWORD_BITS
"""39,062,500: 212.5e9 / 5440 is a whole number."""
assert CODEWORDS_PER_SECOND * CODEWORD_BITS == LANE_RATE_BPS

HISTOGRAM_BINS = RS_T + 2
"""Bins S0..S16: 0..15 symbol errors, and 16 or more (uncorrectable)."""
UNCORRECTABLE_BIN = HISTOGRAM_BINS - 1


def q_function(x: float) -> float:
    """The Gaussian tail probability Q(x) = P(N(0,1) > x)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def db_to_ratio(db: float) -> float:
    return float(10.0 ** (db / 10.0))


def pam4_symbol_error_ratio(snr_db: float) -> float:
    """SER of Gray-coded PAM4 at ``snr_db`` (average signal over noise power)."""
    m = PAM4_LEVELS
    return 2.0 * (1.0 - 1.0 / m) * q_function(math.sqrt(3.0 * db_to_ratio(snr_db) / (m * m - 1)))


def pam4_bit_error_ratio(snr_db: float) -> float:
    """Pre-FEC BER of Gray-coded PAM4 at ``snr_db``: SER / log2(4)."""
    return pam4_symbol_error_ratio(snr_db) / BITS_PER_PAM4_SYMBOL


def rs_symbol_error_probability(snr_db: float) -> float:
    """The probability that one 10-bit RS symbol (five PAM4 symbols) is received wrong."""
    ser = pam4_symbol_error_ratio(snr_db)
    return -math.expm1(PAM4_SYMBOLS_PER_RS_SYMBOL * math.log1p(-ser))


def codeword_bin_probabilities(symbol_error_probability: float) -> tuple[float, ...]:
    """P(bin k) for k = 0..15 symbol errors in a codeword, then P(16 or more): 17 values.

    Binomial(544, p). The tail (bin 16) is summed term by term while errors are rare,
    where ``1 - sum(bins 0..15)`` would lose it to rounding.
    """
    p = symbol_error_probability
    if p <= 0.0:
        return (1.0,) + (0.0,) * (HISTOGRAM_BINS - 1)
    if p >= 1.0:
        return (0.0,) * (HISTOGRAM_BINS - 1) + (1.0,)
    odds = p / (1.0 - p)
    term = math.exp(RS_N * math.log1p(-p))  # P(0 errors); 0.0 once p > 0.73 or so
    head = []
    for k in range(UNCORRECTABLE_BIN):
        head.append(term)
        term *= (RS_N - k) / (k + 1) * odds
    if RS_N * p < UNCORRECTABLE_BIN / 2:
        # From k = 16 on each term is less than half the one before it.
        tail, k = 0.0, UNCORRECTABLE_BIN
        while term > tail * 1e-17 and k <= RS_N:
            tail += term
            term *= (RS_N - k) / (k + 1) * odds
            k += 1
    else:
        tail = max(0.0, 1.0 - math.fsum(head))
    return (*head, tail)


def expected_codeword_error_ratio(snr_db: float) -> float:
    """P(a codeword is uncorrectable) at ``snr_db``: the CER the counters should show."""
    return codeword_bin_probabilities(rs_symbol_error_probability(snr_db))[UNCORRECTABLE_BIN]


# --- sampling -----------------------------------------------------------------------


def binomial(rng: random.Random, trials: int, probability: float) -> int:
    """One draw from Binomial(``trials``, ``probability``), exactly distributed.

    The methods Python 3.12's ``random.binomialvariate`` uses (this project runs on
    3.11): for a mean under 10, Devroye's geometric method (the gaps between
    successes are geometric; O(mean) work); otherwise Hörmann's BTRS, transformed
    rejection with a squeeze ("The generation of binomial random variates", 1993),
    a handful of uniforms whatever the mean.
    """
    if trials <= 0 or probability <= 0.0:
        return 0
    if probability >= 1.0:
        return trials
    if probability > 0.5:
        return trials - binomial(rng, trials, 1.0 - probability)
    if trials * probability < 10.0:
        log_q = math.log1p(-probability)
        successes = position = 0
        while True:
            position += math.floor(math.log(1.0 - rng.random()) / log_q) + 1
            if position > trials:
                return successes
            successes += 1
    spq = math.sqrt(trials * probability * (1.0 - probability))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * probability
    c = trials * probability + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(probability / (1.0 - probability))
    mode = math.floor((trials + 1) * probability)
    h = math.lgamma(mode + 1) + math.lgamma(trials - mode + 1)
    while True:
        u = rng.random() - 0.5
        v = rng.random()
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0 or k > trials:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v *= alpha / (a / (us * us) + b)
        if math.log(v) <= h - math.lgamma(k + 1) - math.lgamma(trials - k + 1) + (k - mode) * lpq:
            return k


def multinomial(rng: random.Random, trials: int, probabilities: Sequence[float]) -> list[int]:
    """Split ``trials`` among outcomes with ``probabilities`` (summing to about 1).

    Drawn as a chain of binomials from the last outcome down, each conditioned on
    what is left; the first outcome (here: error-free codewords, by far the most
    likely) takes the remainder, so the counts always add up to ``trials`` exactly.
    """
    counts = [0] * len(probabilities)
    remaining = trials
    # Mass of outcomes 0..i, summed from the small end so that none is lost.
    below = [0.0] * len(probabilities)
    total = 0.0
    for index, probability in enumerate(probabilities):
        total += probability
        below[index] = total
    for index in range(len(probabilities) - 1, 0, -1):
        if remaining == 0:
            break
        mass = below[index]
        share = probabilities[index] / mass if mass > 0.0 else 0.0
        drawn = binomial(rng, remaining, min(1.0, share))
        counts[index] = drawn
        remaining -= drawn
    counts[0] = remaining
    return counts
