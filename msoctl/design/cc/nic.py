"""DCQCN parameters of the NICs, by the names ConnectX gives them.

The defaults are those NVIDIA ConnectX-4 and later NICs ship with (``mlxconfig`` names in
capitals; the same names in lower case under ``/sys/class/net/<if>/ecn/roce_rp`` and
``roce_np``). An operator overrides one with ``--nic-param NAME=VALUE`` in the table's
unit. How the model reads each is in :data:`PARAMETERS`' ``meaning``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from drivers.errors import ValidationError


@dataclass(frozen=True)
class NicParameter:
    name: str
    default: float
    unit: str
    low: float
    high: float
    meaning: str


PARAMETERS: tuple[NicParameter, ...] = (
    NicParameter("rpg_time_reset", 300, "us", 1, 131_071,
                 "rate-increase timer T: a rate increase event every T without a CNP"),
    NicParameter("rpg_byte_reset", 32_767, "B", 1, 2**31,
                 "byte counter B: a rate increase event every B bytes sent without a CNP"),
    NicParameter("rpg_threshold", 1, "events", 1, 31,
                 "F: increase events in fast recovery before additive increase"),
    NicParameter("rpg_ai_rate", 5, "Mb/s", 0.001, 1e6,
                 "additive increase of the target rate per event"),
    NicParameter("rpg_hai_rate", 50, "Mb/s", 0.001, 1e6,
                 "hyper increase of the target rate per event, once both counters passed F"),
    NicParameter("clamp_tgt_rate", 0, "0/1", 0, 1,
                 "1: every decrease also sets the target rate to the rate before the cut"),
    NicParameter("clamp_tgt_rate_after_time_inc", 1, "0/1", 0, 1,
                 "1: a decrease sets the target rate when the rate was last raised by the "
                 "timer (the model: in the timer's share of increase events)"),
    NicParameter("rpg_gd", 11, "log2 x 1024", 10, 11,
                 "a decrease cuts the rate by alpha / 2^(rpg_gd - 10)"),
    NicParameter("rpg_min_dec_fac", 50, "%", 0, 100,
                 "a decrease never leaves less than this share of the rate"),
    NicParameter("rpg_min_rate", 1, "Mb/s", 0.001, 1e6, "the lowest rate a flow is cut to"),
    NicParameter("dce_tcp_g", 1019, "/1024", 0, 1023,
                 "alpha's weight: alpha <- (g/1024) alpha + (1 - g/1024) [CNP seen]"),
    NicParameter("dce_tcp_rtt", 1, "us", 1, 131_071, "alpha update period"),
    NicParameter("initial_alpha_value", 1023, "/1024", 1, 1023,
                 "alpha of a flow that has not been cut yet"),
    NicParameter("rate_reduce_monitor_period", 4, "us", 1, 1e6,
                 "at most one decrease per period"),
    NicParameter("min_time_between_cnps", 4, "us", 0, 1e6,
                 "the receiver's (NP's) shortest interval between two CNPs of a flow"),
)
BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}


@dataclass(frozen=True)
class Nic:
    """The parameters in SI units (seconds, bytes, bits per second) and fractions."""

    timer_seconds: float
    byte_counter_bytes: float
    fast_recovery_events: int
    clamp_target: bool
    clamp_target_after_timer: bool
    additive_increase_bps: float
    hyper_increase_bps: float
    decrease_divisor: float
    min_kept_fraction: float
    min_rate_bps: float
    alpha_gain: float
    alpha_period_seconds: float
    initial_alpha: float
    decrease_period_seconds: float
    cnp_interval_seconds: float


def nic(overrides: Mapping[str, float] | None = None) -> Nic:
    """ConnectX's defaults with ``overrides`` (by name, in the table's units)."""
    values = {parameter.name: float(parameter.default) for parameter in PARAMETERS}
    for name, value in (overrides or {}).items():
        parameter = BY_NAME.get(name)
        if parameter is None:
            raise ValidationError(f"NIC parameter {name!r}: one of {', '.join(BY_NAME)}")
        if not math.isfinite(value) or not parameter.low <= value <= parameter.high:
            raise ValidationError(f"NIC parameter {name}={value:g}: {parameter.low:g}.."
                                  f"{parameter.high:g} {parameter.unit}")
        values[name] = value
    if values["rpg_threshold"] != int(values["rpg_threshold"]):
        raise ValidationError("NIC parameter rpg_threshold is a whole number of events")
    for flag in ("clamp_tgt_rate", "clamp_tgt_rate_after_time_inc"):
        if values[flag] not in (0, 1):
            raise ValidationError(f"NIC parameter {flag} is 0 or 1")
    us, mbps = 1e-6, 1e6
    return Nic(
        timer_seconds=values["rpg_time_reset"] * us,
        byte_counter_bytes=values["rpg_byte_reset"],
        fast_recovery_events=int(values["rpg_threshold"]),
        clamp_target=values["clamp_tgt_rate"] == 1,
        clamp_target_after_timer=values["clamp_tgt_rate_after_time_inc"] == 1,
        additive_increase_bps=values["rpg_ai_rate"] * mbps,
        hyper_increase_bps=values["rpg_hai_rate"] * mbps,
        decrease_divisor=2 ** (values["rpg_gd"] - 10),
        min_kept_fraction=values["rpg_min_dec_fac"] / 100,
        min_rate_bps=values["rpg_min_rate"] * mbps,
        alpha_gain=1 - values["dce_tcp_g"] / 1024,
        alpha_period_seconds=values["dce_tcp_rtt"] * us,
        initial_alpha=values["initial_alpha_value"] / 1024,
        decrease_period_seconds=values["rate_reduce_monitor_period"] * us,
        cnp_interval_seconds=values["min_time_between_cnps"] * us,
    )


def parse_overrides(items: Iterable[str]) -> dict[str, float]:
    """``NAME=VALUE`` texts -> {name: value}; a bad one raises :class:`ValidationError`."""
    found: dict[str, float] = {}
    for item in items:
        name, equals, text = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise ValidationError(f"--nic-param {item!r}: write NAME=VALUE, e.g. "
                                  "rpg_ai_rate=10")
        try:
            value = float(text)
        except ValueError:
            raise ValidationError(f"--nic-param {item!r}: {text.strip()!r} is not a "
                                  "number") from None
        found[name] = value
    nic(found)  # checks every name and range
    return found
