"""What the control endpoint asks of a lab, whether it runs in this process or is spread
over several.

:class:`LabBackend` is the four things the endpoint (emulators/lab/control.py) needs:
the status document, the fault targets with the kinds each takes, injecting a fault
and clearing faults. :class:`LocalBackend` answers them for a :class:`Lab` in this
process (the lab ``msoctl lab up`` runs for a small topology, and each worker of a
spread one); :class:`~emulators.lab.spread.SpreadLab` answers them by asking its
workers. Both answer in the same shapes, so that a client cannot tell them apart.

Raises :class:`~emulators.faults.FaultError` for a target or kind the lab does not
have (the endpoint's 400).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from emulators.faults import Fault, FaultError
from emulators.lab.status import (
    CUT_KINDS,
    check_fault,
    fault_document,
    fault_kinds,
    fault_targets,
    fibers_of,
    lab_status,
)
from emulators.lab.topology import Topology

if TYPE_CHECKING:
    from emulators.lab.lab import Lab


class LabBackend(Protocol):
    topology: Topology
    state_dir: Path

    def status(self) -> dict[str, Any]:
        """The status document (emulators/lab/status.py)."""

    def fault_targets(self) -> dict[str, list[str]]:
        """Every fault target and the kinds it takes."""

    def inject(self, target: str, fault: Fault) -> dict[str, Any]:
        """Inject ``fault`` on ``target``; the document of what was injected (for a cut,
        its ``fibers`` and the device time it began, ``at_seconds``)."""

    def clear(self, target: str, kind: str | None,
              port: str | None = None) -> list[dict[str, Any]]:
        """Clear ``kind`` (``None``: every fault) on ``target`` (with ``port``: only those
        injected on that part of it); what was cleared."""


class LocalBackend:
    """:class:`LabBackend` over a :class:`Lab` in this process."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.topology = lab.topology
        self.state_dir = lab.state_dir
        self._targets: dict[str, list[str]] | None = None

    def status(self) -> dict[str, Any]:
        return lab_status(self.lab)

    def fault_targets(self) -> dict[str, list[str]]:
        # Read once (callers do not change it): every device registers the kinds it takes
        # when it is built and its servers start, and a large lab has thousands of targets.
        if self._targets is None:
            self._targets = fault_targets(self.lab)
        return self._targets

    def inject(self, target: str, fault: Fault) -> dict[str, Any]:
        check_fault(self.fault_targets(), self.topology, target, fault.kind)
        started = self.lab.clock.now()
        self.lab.inject(target, fault)
        if fault.kind in CUT_KINDS:
            return {"kind": fault.kind, "fibers": fibers_of(self.topology, target),
                    "at_seconds": started}
        return fault_document(fault)

    def clear(self, target: str, kind: str | None,
              port: str | None = None) -> list[dict[str, Any]]:
        targets = self.fault_targets()
        kinds = fault_kinds(targets, self.topology, target)  # the target must exist
        if kind is not None:
            check_fault(targets, self.topology, target, kind)
        if any(k in kinds for k in CUT_KINDS):  # a cable, a span or a fiber
            if port is not None:
                raise FaultError(f"{target} is cut whole or fiber by fiber (name the "
                                 "fiber): a cut has no port")
            cut = [name for name in fibers_of(self.topology, target)
                   if self.lab.fibers[name].cut]
            self.lab.clear(target, kind)
            return [{"kind": CUT_KINDS[0], "target": name} for name in cut]
        before = self.lab.faults(target).active()
        self.lab.clear(target, kind, port)
        after = self.lab.faults(target).active()
        return [fault_document(f) for f in before if f not in after]
