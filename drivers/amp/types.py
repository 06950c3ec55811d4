"""Typed values the amplifier driver returns."""

from __future__ import annotations

from dataclasses import dataclass

from drivers.cmis.module import ModuleIdentity, ModuleStatus


@dataclass(frozen=True)
class AmpCapabilities:
    """The vendor page's ranges (B0h 176-188); every value ``None`` on a module without
    the page."""

    gain_min_db: float | None
    gain_max_db: float | None
    output_power_max_dbm: float | None
    tilt_min_db: float | None
    tilt_max_db: float | None
    pump_count: int | None
    pump_current_max_ma: float | None


@dataclass(frozen=True)
class AmpSettings:
    """The vendor page's controls as read; every value ``None`` on a module without it."""

    mode: str | None  # "gain" (constant gain) or "power" (constant output power)
    output_enabled: bool | None
    target_gain_db: float | None
    target_output_power_dbm: float | None
    target_tilt_db: float | None
    als_mode: str | None  # "auto", "manual", "disabled"
    als_los_soak_seconds: float | None
    als_restart_interval_seconds: float | None
    als_restart_pulse_seconds: float | None
    los_threshold_dbm: float | None


@dataclass(frozen=True)
class AmpMonitors:
    """The vendor page's monitors; ``None`` (no pump, no condition) without the page."""

    input_power_dbm: float | None
    output_power_dbm: float | None
    gain_db: float | None
    tilt_db: float | None
    pump_currents_ma: tuple[float | None, ...]
    pump_temperature_celsius: float | None
    back_reflection_db: float | None
    als_state: str | None
    conditions: tuple[str, ...]  # live, not latched: names from FLAG_BITS


@dataclass(frozen=True)
class AmpPath:
    """The amplifier's optical path as CMIS lane 1 shows it."""

    lane: int
    tx_disabled: bool | None  # page 10h byte 130: the host has shut the output
    data_path_state: str | None  # page 11h: "DPActivated", "DPDeactivated", ...


@dataclass(frozen=True)
class AmpStatus:
    module: ModuleStatus
    identity: ModuleIdentity
    settings: AmpSettings
    monitors: AmpMonitors
    amplifier_page: bool = True
    """Whether the module carries the vendor page B0h (it identifies as one that does);
    without it, ``settings`` and ``monitors`` hold ``None`` only and nothing of B0h was read."""


NO_CAPABILITIES = AmpCapabilities(None, None, None, None, None, None, None)
NO_SETTINGS = AmpSettings(None, None, None, None, None, None, None, None, None, None)
NO_MONITORS = AmpMonitors(None, None, None, None, (), None, None, None, ())
