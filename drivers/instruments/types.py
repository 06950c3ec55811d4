"""Typed values the instrument drivers return."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Identity:
    manufacturer: str
    model: str
    serial: str
    firmware: str


@dataclass(frozen=True)
class LaserSettings:
    """What a tunable laser source is set to."""

    wavelength_nm: float
    power_dbm: float
    output_on: bool


@dataclass(frozen=True)
class LaserRange:
    """The tuning and power range the laser reports."""

    wavelength_min_nm: float
    wavelength_max_nm: float
    power_min_dbm: float
    power_max_dbm: float


@dataclass(frozen=True)
class PowerTrace:
    """One power meter port's logged samples, oldest first.

    Sample ``k`` is the average over ``[k, k + 1) * interval_seconds`` after the
    logging started; ``None`` where the meter read no power at all.
    """

    channel: int
    interval_seconds: float
    powers_dbm: tuple[float | None, ...]

    @property
    def duration_seconds(self) -> float:
        return self.interval_seconds * len(self.powers_dbm)


