"""A switch's port optics and FEC, typed the same whichever surface they were read from.

Real switches serve their transceivers' (and co-packaged engines') monitors through
several surfaces: ENTITY-SENSOR-MIB rows joined to ports through ENTITY-MIB, a vendor
DOM MIB, OpenConfig's platform-transceiver paths, SONiC's STATE_DB and COUNTERS_DB
over gNMI, or the project's own MSO-CPO-MIB. Each surface's reader returns an
:class:`OpticsReading`; the exporter and the CLI show one shape, with
:attr:`OpticsReading.source` naming where it came from.

Units are in the names; ``None`` is "the surface did not give it" (never 0.0). A dark
receiver reads :data:`NO_LIGHT_DBM` whichever way the surface says it (0 W in
ENTITY-SENSOR-MIB, ``-inf`` in SONiC's STATE_DB, a vendor's floor), so every surface
gives the same number for it, and no ``-inf`` reaches an output. Lanes count from 1,
whatever the surface counts from (JUNIPER-DOM-MIB counts from 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

SOURCES = ("entity-sensor", "openconfig", "sonic", "hh3c", "juniper", "huawei", "mso-cpo")
"""Surface names, the exporter's ``source`` label: most hardware first."""

QUANTITIES = ("temperature_celsius", "supply_voltage_volts", "tx_power_dbm",
              "rx_power_dbm", "tx_bias_ma")
"""What a port's optics report, and what thresholds are set on (in these units)."""

LEVELS = ("low_alarm", "low_warning", "high_warning", "high_alarm")
"""Threshold levels, in the order a value crosses them going up."""

NO_LIGHT_DBM = -100.0
"""What a receiver that sees no light reads, and the floor of every power in dBm: far
below any receiver's sensitivity (MSO-CPO-MIB's MsoPowerDbm floor too)."""


def dbm(value: float) -> float:
    """A power in dBm held to :data:`NO_LIGHT_DBM` from below (``-inf`` included)."""
    return max(NO_LIGHT_DBM, value)


def milliwatts_to_dbm(milliwatts: float) -> float:
    """10·log10(P / 1 mW), held to :data:`NO_LIGHT_DBM`; 0 mW (or less: noise around zero)
    is no light."""
    return dbm(10.0 * math.log10(milliwatts)) if milliwatts > 0.0 else NO_LIGHT_DBM


@dataclass(frozen=True)
class Thresholds:
    """The four thresholds of one quantity, in its unit; ``None`` where none is set."""

    low_alarm: float | None = None
    low_warning: float | None = None
    high_warning: float | None = None
    high_alarm: float | None = None

    def levels(self) -> dict[str, float]:
        """The levels that are set, by name."""
        return {level: value for level in LEVELS
                if (value := getattr(self, level)) is not None}


@dataclass(frozen=True)
class LaneOptics:
    """One optical lane (channel) of a port."""

    lane: int
    tx_power_dbm: float | None = None
    rx_power_dbm: float | None = None
    tx_bias_ma: float | None = None


@dataclass(frozen=True)
class PortOptics:
    """The optics of one port: its module's (or engine's) monitors, its lanes, and the
    thresholds set on them by quantity (:data:`QUANTITIES`)."""

    port: int
    """ifIndex where the surface ties the optics to one, else the port's position."""
    port_name: str | None
    temperature_celsius: float | None = None
    supply_voltage_volts: float | None = None
    lanes: tuple[LaneOptics, ...] = ()
    thresholds: Mapping[str, Thresholds] = field(default_factory=dict)
    """A copy of its own (readings travel between processes pickled: a plain dict)."""

    def __post_init__(self) -> None:
        unknown = set(self.thresholds) - set(QUANTITIES)
        if unknown:
            raise ValueError(f"thresholds for unknown quantities {sorted(unknown)}")
        object.__setattr__(self, "thresholds", dict(self.thresholds))

    def lane(self, number: int) -> LaneOptics | None:
        return next((lane for lane in self.lanes if lane.lane == number), None)


@dataclass(frozen=True)
class PortFec:
    """One port's FEC, as surfaces that count per port give it (OpenConfig's
    if-ethernet, SONiC's COUNTERS_DB)."""

    port: int
    port_name: str | None
    speed_mbps: int | None = None
    corrected_total: int | None = None
    uncorrectable_total: int | None = None
    codewords_total: tuple[int | None, ...] | None = None
    """Codewords with 0, 1, ... 15 symbol errors, then 16 or more (S0..S16)."""
    pre_fec_ber: float | None = None
    post_fec_ber: float | None = None
    frame_loss_ratio: float | None = None
    """As the device computed it (SONiC's RATES FEC_FLR); ``None`` elsewhere."""


@dataclass(frozen=True)
class ExternalLaser:
    """One laser of an external laser source (co-packaged optics' ELS)."""

    module: int
    lane: int
    output_power_dbm: float | None = None
    bias_current_ma: float | None = None
    voltage_volts: float | None = None
    temperature_celsius: float | None = None
    state: str | None = None
    """off, ramping or on."""


@dataclass(frozen=True)
class OpticsReading:
    """One switch's optics and FEC from one surface.

    ``dropped`` counts the samples the reader threw away, by reason (a sensor type the
    RFC does not define, a precision out of range, a string where a number belongs, a
    partial entity table ...): the rest of the reading stands.
    """

    device: str
    source: str
    ports: tuple[PortOptics, ...] = ()
    fec: tuple[PortFec, ...] = ()
    lasers: tuple[ExternalLaser, ...] = ()
    dropped: Mapping[str, int] = field(default_factory=dict)
    age_seconds: float | None = None
    """How old the newest value is (a stream's last update); ``None`` for a poll."""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"unknown telemetry source {self.source!r}")
        object.__setattr__(self, "dropped", dict(self.dropped))

    def port(self, number: int) -> PortOptics | None:
        return next((port for port in self.ports if port.port == number), None)

    def port_named(self, name: str) -> PortOptics | None:
        return next((port for port in self.ports if port.port_name == name), None)
