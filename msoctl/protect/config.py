"""The protection controller's settings and the events it reports (see controller.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from drivers.errors import ValidationError
from msoctl.links import OcsPort
from msoctl.protect.budget import MIN_MESSAGES_PER_SECOND

if TYPE_CHECKING:
    from msoctl.inventory import Inventory


@dataclass(frozen=True)
class ProtectConfig:
    """The controller's settings. Times in seconds, levels in dBm, hysteresis in dB."""

    hold_off_seconds: float = 0.0
    wait_to_restore_seconds: float = 300.0
    revertive: bool = True
    poll_seconds: float = 0.005
    threshold_dbm: float = -20.0
    hysteresis_db: float = 2.0
    probes: tuple[OcsPort, ...] = ()
    """Idle light sources to park on standby spans; empty: pick free lit ingress ports."""
    use_probes: bool = True
    use_alarms: bool = True
    """Follow the loss-of-light alarms of the OCSes that have them (alarms.py); off:
    poll every OCS at its full rate."""
    restart_amplifiers: bool = True
    verify_timeout_seconds: float = 1.0
    device_timeout_seconds: float = 1.0
    ocs_messages_per_second: float = 50.0
    """The command rate every OCS is assumed to answer: the controller never sends one
    more program messages than this in any second (msoctl/protect/budget.py)."""

    def check(self) -> None:
        """Raise :class:`ValidationError` for a setting out of range."""
        for name, value, low, high in (
            ("hold-off", self.hold_off_seconds, 0.0, 60.0),
            ("wait-to-restore", self.wait_to_restore_seconds, 0.0, 3600.0),
            ("poll interval", self.poll_seconds, 0.001, 10.0),
            ("threshold", self.threshold_dbm, -60.0, 20.0),
            ("hysteresis", self.hysteresis_db, 0.0, 20.0),
            ("verify timeout", self.verify_timeout_seconds, 0.01, 60.0),
            ("device timeout", self.device_timeout_seconds, 0.05, 60.0),
            ("OCS message rate", self.ocs_messages_per_second, MIN_MESSAGES_PER_SECOND,
             100_000.0),
        ):
            if not low <= value <= high:
                raise ValidationError(f"{name} must be {low:g}..{high:g}, got {value:g}")

    @property
    def stale_seconds(self) -> float:
        """A reading older than this is not trusted (at least: a watch polling slower
        than ``poll_seconds`` stretches it to a few of its own intervals)."""
        return max(0.2, 20 * self.poll_seconds)

    def as_dict(self) -> dict[str, Any]:
        return {"hold_off_ms": round(self.hold_off_seconds * 1000, 3),
                "wait_to_restore_seconds": self.wait_to_restore_seconds,
                "revertive": self.revertive, "poll_ms": round(self.poll_seconds * 1000, 3),
                "threshold_dbm": self.threshold_dbm, "hysteresis_db": self.hysteresis_db,
                "probes": [str(p) for p in self.probes] if self.use_probes else "none",
                "restart_amplifiers": self.restart_amplifiers, "alarms": self.use_alarms,
                "ocs_messages_per_second": self.ocs_messages_per_second}


def check_probes(probes: Sequence[OcsPort], inventory: Inventory,
                 size_of: Callable[[str], int]) -> None:
    """Refuse (:class:`ValidationError`) a probe the controller could never park: named
    twice, on a device that is not an OCS of the inventory, on a port a link uses, or
    outside the OCS's ingress ports 1..N (``size_of(ocs)`` asks the OCS its N; a probe
    feeds an egress port, so it is an ingress port itself)."""
    seen: set[OcsPort] = set()
    used = {port: link.name for link in inventory.links.values()
            for end in (link.a, link.b) for port in (end.tx, end.rx)}
    sizes: dict[str, int] = {}
    for probe in probes:
        if probe in seen:
            raise ValidationError(f"--probe {probe} is given twice")
        seen.add(probe)
        inventory.device(probe.ocs, "ocs")
        if probe in used:
            raise ValidationError(f"--probe {probe}: the port carries link {used[probe]}; a "
                                  "probe is a free ingress port with idle light")
        if probe.ocs not in sizes:
            sizes[probe.ocs] = size_of(probe.ocs)
        size = sizes[probe.ocs]
        if not 1 <= probe.port <= size:
            where = "an egress port" if size < probe.port <= 2 * size else "not a port"
            raise ValidationError(f"--probe {probe}: {where} of {probe.ocs} "
                                  f"({size}x{size}); a probe is an ingress port, 1..{size}")


@dataclass
class ProtectionEvent:
    """Something the controller did or saw, for its output and for callers."""

    kind: str  # switch, revert, unavailable, failed, dip, restored, probe, als_restart, ready,
    #            device_down, device_up, role, error, fenced, ownership
    link: str | None
    message: str
    at: float  # monotonic seconds
    op: str | None = None
    durations_ms: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
