"""msoctl's safety rules, in one place.

Each rule looks at what is about to be done and returns the violations; the
caller refuses (exit 3) unless the operator gave the explicit override, and
journals the refusal or the override either way.

Rules so far:
- Amplifier: ALS may not be disabled (``amp_als_mode``), nor its timings set so that
  the output stays lit into a cut fiber (``amp_als_timings``: soak at most 1 s,
  restart pulses lit at most a tenth of the time). Gain outside the
  module's advertised range is refused as bad input before anything is sent.
  Turning the output back on (Tx disable cleared, ``amp_output_on``) is refused
  while ALS would not shut it on a cut fiber: the same rules, applied to the
  ALS settings the module holds. Turning the output off is always safe.
- OCS: switching a port (making, moving or breaking its connection) while it
  carries more than the device's ``max_switch_power_dbm`` (default +20 dBm,
  the input limit of common OCS units) sweeps a high-power beam across other
  ports and into the switch's optics.
- Links: a change may not take an in-service link down (``link-in-service``,
  from :mod:`msoctl.impact`): drain it first (``msoctl link drain``), or give
  ``--force``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from msoctl.words import counted

if TYPE_CHECKING:
    from msoctl.impact import Impact


@dataclass(frozen=True)
class Violation:
    rule: str
    port: int | None
    message: str
    link: str | None = None


def ocs_lit_ports(
    powers_dbm: Mapping[int, float | None], ports: Iterable[int], limit_dbm: float
) -> list[Violation]:
    """The ``ports`` an OCS change would move that carry more than ``limit_dbm`` (dBm);
    a port without a reading (``None``) is not one of them."""
    violations = []
    for port in sorted(set(ports)):
        power = powers_dbm.get(port)
        if power is not None and power > limit_dbm:
            violations.append(Violation(
                "ocs-switch-power", port,
                f"port {port} carries {power:.2f} dBm, above the {limit_dbm:g} dBm switching limit",
            ))
    return violations


def amp_als_mode(mode: str) -> list[Violation]:
    """Disabling ALS leaves the amplifier's output lit into a cut fiber."""
    if mode != "disabled":
        return []
    return [Violation("amp-als-disabled", None,
                      "disabling ALS leaves the output lit after a fiber cut "
                      "(a laser-safety hazard)")]


MAX_LOS_SOAK_SECONDS = 1.0
"""ALS shuts the output after about 0.5 s of lost input (550 +- 50 ms in one manual)."""

MAX_RESTART_DUTY = 0.1
"""Restart pulses of about 2 s every 100-300 s: on a cut fiber the output is lit 1-2% of
the time. More than a tenth of the time is continuous exposure in all but name."""


def amp_als_timings(*, los_soak_seconds: float | None, restart_interval_seconds: float | None,
                    restart_pulse_seconds: float | None) -> list[Violation]:
    """ALS timings that would keep the output lit into a cut fiber."""
    violations = []
    if los_soak_seconds is not None and los_soak_seconds > MAX_LOS_SOAK_SECONDS:
        violations.append(Violation(
            "amp-als-soak", None,
            f"a loss-of-signal soak of {los_soak_seconds:g} s keeps the output lit into a cut "
            f"fiber for longer than ALS allows ({MAX_LOS_SOAK_SECONDS:g} s)"))
    if (restart_interval_seconds and restart_pulse_seconds is not None
            and restart_pulse_seconds > MAX_RESTART_DUTY * restart_interval_seconds):
        violations.append(Violation(
            "amp-als-restart-duty", None,
            f"restart pulses of {restart_pulse_seconds:g} s every {restart_interval_seconds:g} s "
            f"keep the output lit more than {MAX_RESTART_DUTY:.0%} of the time on a cut fiber"))
    return violations


def amp_output_on(*, als_mode: str | None, los_soak_seconds: float | None,
                  restart_interval_seconds: float | None,
                  restart_pulse_seconds: float | None) -> list[Violation]:
    """Lighting an amplifier's output into its span is safe only while ALS, as the module
    holds it now, would shut the output if the fiber were cut."""
    if als_mode is None:
        return [Violation("amp-output-on-als-unknown", None,
                          "the module's ALS mode cannot be read, so nothing says the output "
                          "would shut on a fiber cut")]
    found = [*amp_als_mode(als_mode), *amp_als_timings(
        los_soak_seconds=los_soak_seconds, restart_interval_seconds=restart_interval_seconds,
        restart_pulse_seconds=restart_pulse_seconds)]
    return [Violation(f"amp-output-on:{v.rule}", v.port,
                      f"turning the output on with ALS as it is set: {v.message}")
            for v in found]


LINK_IN_SERVICE = "link-in-service"


def links_taken_down(impacts: Iterable[Impact]) -> list[Violation]:
    """In-service links the change would take down."""
    return [Violation(LINK_IN_SERVICE, None,
                      f"{impact.link} is in service and would go down ({impact.reason})",
                      link=impact.link)
            for impact in impacts if impact.effect == "down" and not impact.drained]


def refusal(violations: list[Violation]) -> str:
    """The one line a refusal prints: the first violation, how many more, and the way out."""
    message = violations[0].message + (
        f" (and {len(violations) - 1} more)" if len(violations) > 1 else "")
    if violations[0].rule == LINK_IN_SERVICE:
        links = sorted({v.link for v in violations if v.link})
        return (f"{message}; drain it first ('msoctl link drain {' '.join(links[:1])}'"
                + (f", and {counted(len(links) - 1, 'more link')}" if len(links) > 1 else "")
                + ") or use --force (journaled)")
    return f"{message}; use --force to override (journaled)"
