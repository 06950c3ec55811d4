"""msoctl's safety rules, in one place.

Each rule looks at what is about to be done and returns the violations; the
caller refuses (exit 3) unless the operator gave the explicit override, and
journals the refusal or the override either way.

Rules so far:
- Amplifier: ALS may not be disabled (``amp_als_mode``). Gain outside the
  module's advertised range is refused as bad input before anything is sent.
- OCS: switching a port (making, moving or breaking its connection) while it
  carries more than the device's ``max_switch_power_dbm`` (default +20 dBm,
  the input limit of common OCS units) sweeps a high-power beam across other
  ports and into the switch's optics.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    rule: str
    port: int | None
    message: str


def ocs_switch_power(
    powers_dbm: Mapping[int, float | None], ports: Iterable[int], limit_dbm: float
) -> list[Violation]:
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
