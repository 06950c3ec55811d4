"""EDFA physics of the amplifier emulator: gain, saturation, pumps, ASE, monitors.

Pure functions of a :class:`EdfaDesign` (the figures of one module) and the
present conditions; the time behaviour (settling, ALS) is in
:mod:`emulators.amp.model`. Powers are dBm (``-inf`` is no light), gains dB,
currents mA, temperatures degC.

Pumps. Each pump laser emits ``slope * (I - threshold)`` mW of pump light at
drive current ``I``; the erbium coil turns ``conversion`` of the pump power
beyond ``idle`` (what keeps the coil inverted with no signal) into signal
power. The pumps share the load equally. With the default figures (two
pumps, 30 mA threshold, 0.55 mW/mA, 400 mA driver limit, 35 % conversion,
10 mW idle) both pumps at their limit deliver 139 mW of signal, +21.4 dBm,
which is above the 20 dBm output limit; one pump alone delivers +18.3 dBm,
so losing a pump saturates a module that was running near full power.
At +20 dBm out, each of two pumps draws about 300 mA.

Pump temperature. A TEC holds each pump at 25 degC while its current stays
under ``tec_current_ma`` (300 mA); above that the TEC saturates and the pump
warms 0.15 degC per mA (40 degC at the 400 mA driver limit).

ASE. A pumped amplifier emits amplified spontaneous emission of about
``-35 dBm + gain``: -15 dBm at 20 dB of gain, which is what the output
monitor reads with no input light.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from emulators.optics.model import NO_LIGHT_DBM, dbm_to_mw, mw_to_dbm

ASE_AT_0DB_DBM = -35.0
GAIN_AT_PUMP_ON_DB = 0.0
"""Where the gain control loop starts when the pump turns on (transparency)."""
PUMP_TEC_CELSIUS = 25.0
PUMP_WARMING_CELSIUS_PER_MA = 0.15


@dataclass(frozen=True)
class EdfaDesign:
    gain_min_db: float = 5.0
    gain_max_db: float = 25.0
    output_power_max_dbm: float = 20.0
    tilt_min_db: float = -3.0
    tilt_max_db: float = 3.0
    pump_count: int = 2
    pump_current_max_ma: float = 400.0
    pump_threshold_ma: float = 30.0
    pump_slope_mw_per_ma: float = 0.55
    conversion: float = 0.35
    idle_pump_mw: float = 10.0
    tec_current_ma: float = 300.0
    settle_seconds: float = 0.020
    """Time constant of the gain control loop (first order)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.gain_min_db < self.gain_max_db <= 40.0:
            raise ValueError("gain range must satisfy 0 <= gain_min < gain_max <= 40 dB")
        if not -10.0 <= self.output_power_max_dbm <= 30.0:
            raise ValueError("output_power_max must be -10..30 dBm")
        if not self.tilt_min_db <= 0.0 <= self.tilt_max_db:
            raise ValueError("the tilt range must include 0 dB")
        if self.pump_count not in (1, 2):
            raise ValueError("pump_count must be 1 or 2")
        if self.pump_current_max_ma <= self.pump_threshold_ma:
            raise ValueError("pump_current_max must exceed the pump threshold")
        if self.settle_seconds <= 0:
            raise ValueError("settle_seconds must be positive")

    def pump_light_mw(self, current_ma: float) -> float:
        return max(0.0, current_ma - self.pump_threshold_ma) * self.pump_slope_mw_per_ma

    def capacity_dbm(self, input_dbm: float, working_pumps: int) -> float:
        """The most signal output the working pumps can deliver at this input."""
        pump_mw = working_pumps * self.pump_light_mw(self.pump_current_max_ma)
        signal_mw = dbm_to_mw(input_dbm) + self.conversion * max(0.0, pump_mw - self.idle_pump_mw)
        return mw_to_dbm(signal_mw)


def ase_dbm(gain_db: float) -> float:
    return ASE_AT_0DB_DBM + gain_db


@dataclass(frozen=True)
class GainTarget:
    """What the control loop aims for under the present conditions."""

    gain_db: float  # the steady-state gain the loop settles to
    limit_dbm: float  # total output ceiling: output_power_max, pump capacity, pulse level
    out_of_range: bool  # required gain outside the range, or output short by > 0.5 dB


def gain_target(
    design: EdfaDesign,
    input_dbm: float,
    *,
    constant_power: bool,
    target_gain_db: float,
    target_output_dbm: float,
    working_pumps: int,
    ceiling_dbm: float | None = None,
) -> GainTarget:
    """Steady-state gain for the mode and targets, limited by range and saturation."""
    if constant_power:
        wanted = target_output_dbm - input_dbm if input_dbm != NO_LIGHT_DBM else math.inf
    else:
        wanted = target_gain_db
    gain = min(max(wanted, design.gain_min_db), design.gain_max_db)
    out_of_range = gain != wanted
    limit = min(design.output_power_max_dbm, design.capacity_dbm(input_dbm, working_pumps))
    if ceiling_dbm is not None:
        limit = min(limit, ceiling_dbm)
    if input_dbm != NO_LIGHT_DBM:
        desired_out = input_dbm + gain
        if desired_out > limit:
            gain = limit - input_dbm
            if ceiling_dbm is None and desired_out - limit > 0.5:
                out_of_range = True
    return GainTarget(gain, limit, out_of_range)


def settle(gain_db: float, target_db: float, seconds: float, tau: float) -> float:
    """First-order approach of ``gain_db`` to ``target_db`` over ``seconds``."""
    if seconds <= 0:
        return gain_db
    return target_db + (gain_db - target_db) * math.exp(-seconds / tau)


def output_dbm(input_dbm: float, gain_db: float, limit_dbm: float) -> float:
    """Total output (signal plus ASE), never above ``limit_dbm``."""
    signal = input_dbm + gain_db if input_dbm != NO_LIGHT_DBM else NO_LIGHT_DBM
    total = mw_to_dbm(dbm_to_mw(signal) + dbm_to_mw(ase_dbm(gain_db)))
    return min(total, limit_dbm)


def pump_currents_ma(design: EdfaDesign, input_dbm: float, output_total_dbm: float,
                     working: list[bool]) -> list[float]:
    """Drive current of each pump for this output; 0 for a failed or idle pump."""
    count = sum(working)
    if count == 0 or output_total_dbm == NO_LIGHT_DBM:
        return [0.0] * len(working)
    added_mw = max(0.0, dbm_to_mw(output_total_dbm) - dbm_to_mw(input_dbm))
    pump_mw = (added_mw / design.conversion + design.idle_pump_mw) / count
    current = design.pump_threshold_ma + pump_mw / design.pump_slope_mw_per_ma
    current = min(current, design.pump_current_max_ma)
    return [current if ok else 0.0 for ok in working]


def pump_temperature_celsius(design: EdfaDesign, current_ma: float) -> float:
    over = max(0.0, current_ma - design.tec_current_ma)
    return PUMP_TEC_CELSIUS + PUMP_WARMING_CELSIUS_PER_MA * over
