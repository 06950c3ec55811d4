"""What the collector returns: the CPO and CPC telemetry of one switch, typed.

One dataclass per table row; every measured field carries its unit in its name
(``_dbm``, ``_db``, ``_celsius``, ``_volts``, ``_ma``, ``_mv``, ``_ui``, ``_seconds``)
and is ``None`` where the agent left the instance out (MSO-TC: a value a device
cannot read is omitted, never reported as zero). Ports are ifIndex values, lanes
count from 1. The units agree with the MIBs' UNITS clauses; tests check that
against :mod:`drivers.snmp.mibs` column by column.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class CollectionInfo:
    """How one collection went: the agent's uptime around it, and its cost."""

    device: str
    uptime_seconds: float | None
    """sysUpTime (SNMPv2-MIB) in the first response of the collection."""
    uptime_end_seconds: float | None
    """sysUpTime in the last response."""
    restarted: bool
    """snmpEngineBoots changed, or sysUpTime went backwards, between two responses: the
    agent restarted meanwhile, so counters read before and after that moment do not
    belong together."""
    requests: int
    """PDUs sent (the engine's own retries and USM discovery not counted)."""
    variables: int
    """Variable bindings received."""
    duration_seconds: float
    started_monotonic: float
    """``time.monotonic()`` of this process when the collection's first request went out
    (after the address lookup and engine set-up, which only the first one pays)."""
    engine_boots: int | None = None
    """snmpEngineBoots (SNMP-FRAMEWORK-MIB) in the first response; ``None`` from an
    agent that does not serve it."""
    engine_boots_end: int | None = None
    """snmpEngineBoots in the last response."""


@dataclass(frozen=True)
class Engine:
    """An optical engine (msoCpoEngineTable)."""

    index: int
    name: str | None
    lane_count: int | None
    temperature_celsius: float | None
    temperature_high_celsius: float | None
    supply_voltage_volts: float | None
    status: str | None
    """normal, overTemperature or failed."""


@dataclass(frozen=True)
class OpticalLane:
    """One optical lane of a port (msoCpoLaneTable). A dark receiver reads -100.0 dBm,
    the floor of MsoPowerDbm."""

    port: int
    lane: int
    port_name: str | None
    engine: int | None
    engine_lane: int | None
    tx_power_dbm: float | None
    rx_power_dbm: float | None
    tx_bias_ma: float | None
    els_module: int | None
    els_lane: int | None


@dataclass(frozen=True)
class Laser:
    """One laser of an external laser source module (msoCpoElsTable)."""

    module: int
    lane: int
    output_power_dbm: float | None
    bias_current_ma: float | None
    voltage_volts: float | None
    temperature_celsius: float | None
    state: str | None
    """off, ramping or on."""
    control_mode: str | None
    """constantCurrent or constantPower."""
    faults: tuple[str, ...] | None
    """The msoCpoElsFaults bits set, by name, sorted; empty when there is no fault."""


@dataclass(frozen=True)
class ElectricalLane:
    """One electrical lane of a port (msoCpcLaneTable and its histogram rows)."""

    port: int
    lane: int
    port_name: str | None
    port_speed_mbps: int | None
    """ifHighSpeed of the port; ``None`` when the agent does not serve it (or serves 0)."""
    snr_db: float | None
    pre_fec_ber: float | None
    """The ratio (not its logarithm); 1e-18 stands for 1E-18 or less, no errors included."""
    fec_corrected_total: int | None
    fec_uncorrectable_total: int | None
    insertion_loss_db: float | None
    eye_height_mv: float | None
    eye_width_ui: float | None
    discontinuity_uptime_seconds: float | None
    """msoCpcLaneDiscontinuityTime: sysUpTime at the lane's last counter reset, 0.0 if none."""
    fec_histogram_total: tuple[int | None, ...] | None
    """Codewords with 0, 1, ... 15 symbol errors, then 16 or more (bins S0..S16);
    ``None`` when the histogram was not read."""


@dataclass(frozen=True)
class CpoTelemetry:
    """The co-packaged optics of one switch."""

    info: CollectionInfo
    engines: tuple[Engine, ...]
    lanes: tuple[OpticalLane, ...]
    lasers: tuple[Laser, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"device": self.info.device, "uptime_seconds": self.info.uptime_seconds,
                "engines": [asdict(row) for row in self.engines],
                "lasers": [asdict(row) for row in self.lasers],
                "lanes": [asdict(row) for row in self.lanes]}


@dataclass(frozen=True)
class CpcTelemetry:
    """The co-packaged copper of one switch."""

    info: CollectionInfo
    fec_degrade_threshold_ber: float | None
    lanes: tuple[ElectricalLane, ...]

    def lane(self, port: int, lane: int) -> ElectricalLane | None:
        return next((row for row in self.lanes if (row.port, row.lane) == (port, lane)), None)
