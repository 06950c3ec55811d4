"""Plan, apply and verify OCS changes: the diff, the fewest commands, the light check."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.errors import SafetyInterlock, ValidationError, VerificationFailed
from drivers.ocs import OcsDriver, PortMap
from drivers.ocs.types import MapDiff
from drivers.yamlfile import LinedList, Section, YamlFileError, load_file
from msoctl import safety
from msoctl.impact import Impact
from msoctl.inventory import Device
from msoctl.journal import Change, DeviceLock, Journal
from msoctl.words import counted

LIT_THRESHOLD_DBM = -30.0
"""An ingress port reading above this carries light that should arrive at its egress."""

LIGHT_TOLERANCE_DB = 3.0
"""How far below (input - insertion loss) the egress may read: two monitors at +-1 dB, margin."""


MAX_PORT_DIGITS = 6
"""No OCS has a million ports; longer digit strings are refused before int() (which
refuses more than 4300 digits with a ValueError of its own)."""


def _is_port_number(text: str) -> bool:
    # ASCII digits only: str.isdigit() also accepts characters such as "²" that int() refuses
    digits = text.strip()
    return digits.isascii() and digits.isdigit()


def _port(text: str) -> int:
    if len(text.strip()) > MAX_PORT_DIGITS:
        raise ValidationError(f"port {text.strip()[:20]!r}... is out of range")
    return int(text)


def parse_pair(text: str) -> tuple[int, int]:
    ingress, sep, egress = text.partition(":")
    if not sep or not _is_port_number(ingress) or not _is_port_number(egress):
        raise ValidationError(f"connection {text!r} must be written IN:OUT, like 1:65")
    return _port(ingress), _port(egress)


def parse_port(text: str) -> int:
    if not _is_port_number(text):
        raise ValidationError(f"port {text!r} must be a number")
    return _port(text)


def load_map_file(path: Path) -> list[tuple[int, int]]:
    """Read a map file: ``connections:`` as ``IN:OUT`` strings or {ingress, egress} objects."""
    try:
        data = load_file(path)
        top = Section(data, str(path), "map file")
        top.reject_unknown({"connections"})
        if top.data.get("connections") is None:
            # A map is the whole map: an absent list would disconnect everything.
            raise top.error(None, "no 'connections' list; write 'connections: []' to clear "
                                  "the whole map on purpose")
        items = top.get("connections", list)
    except YamlFileError as error:
        raise ValidationError(str(error)) from None
    lines = items.item_lines if isinstance(items, LinedList) else [0] * len(items)
    pairs = []
    for item, line in zip(items, lines, strict=True):
        where = f"{path}:{line}" if line else str(path)
        if isinstance(item, str):
            try:
                pairs.append(parse_pair(item))
            except ValidationError as error:
                raise ValidationError(f"{where}: {error.message}") from None
        elif isinstance(item, dict):
            try:
                entry = Section(item, str(path), "connection", line=line)
                entry.reject_unknown({"ingress", "egress"})
                pairs.append((entry.get("ingress", int), entry.get("egress", int)))
            except YamlFileError as error:
                raise ValidationError(str(error)) from None
        else:
            raise ValidationError(f"{where}: a connection is IN:OUT or {{ingress, egress}}, "
                                  f"got {item!r}")
    return pairs


@dataclass
class OcsPlan:
    device: str
    current: PortMap
    wanted: PortMap
    diff: MapDiff
    method: str  # "none", "add", "subtract", "replace"

    @property
    def touched_ports(self) -> list[int]:
        ports: set[int] = set()
        for mapping in (self.diff.add, self.diff.remove):
            for ingress, egress in mapping.items():
                ports.update((ingress, egress))
        return sorted(ports)

    def rows(self) -> list[dict[str, Any]]:
        rows = [{"action": "remove", "ingress": i, "egress": e}
                for i, e in self.diff.remove.items()]
        rows += [{"action": "add", "ingress": i, "egress": e} for i, e in self.diff.add.items()]
        return sorted(rows, key=lambda r: (r["ingress"], r["action"] != "remove"))

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "method": self.method,
            "commands": 0 if self.method == "none" else 1,
            "changes": self.rows(),
            "unchanged": len(self.diff.keep),
        }


def plan_map(device: str, current: PortMap, wanted: PortMap) -> OcsPlan:
    """The diff, and the single command that carries it out.

    Only additions: one ADD. Only removals: one SUBtract. Both: one ONLY, which
    the switch carries out as one reconfiguration and which leaves unchanged
    paths lit (a SUBtract then ADD would darken the moved paths twice).
    """
    diff = current.diff(wanted)
    if diff.empty:
        method = "none"
    elif not diff.remove:
        method = "add"
    elif not diff.add:
        method = "subtract"
    else:
        method = "replace"
    return OcsPlan(device, current, wanted, diff, method)


def execute(driver: OcsDriver, plan: OcsPlan) -> PortMap:
    if plan.method == "add":
        return driver.connect(plan.diff.add)
    if plan.method == "subtract":
        return driver.disconnect(list(plan.diff.remove))
    if plan.method == "replace":
        return driver.replace_map(plan.wanted)
    return driver.port_map()


@dataclass
class PathLight:
    ingress: int
    egress: int
    ingress_dbm: float | None
    egress_dbm: float | None
    insertion_loss_db: float | None
    status: str  # "ok", "dark input", "lost"

    def as_dict(self) -> dict[str, Any]:
        return {"ingress": self.ingress, "egress": self.egress,
                "ingress_power_dbm": self.ingress_dbm, "egress_power_dbm": self.egress_dbm,
                "insertion_loss_db": self.insertion_loss_db, "status": self.status}


def check_light(driver: OcsDriver, paths: Mapping[int, int]) -> list[PathLight]:
    """Does the light entering each path's ingress leave at its egress? Nothing to say
    (an empty list) on a unit without power monitors: :func:`light_checkable`."""
    if not paths or not light_checkable(driver):
        return []
    driver.wait_settled()
    ports = sorted({*paths.keys(), *paths.values()})
    powers = driver.power(ports)
    losses = {c.ingress: c.insertion_loss_db for c in driver.connections()}
    result = []
    for ingress, egress in sorted(paths.items()):
        p_in, p_out = powers.get(ingress), powers.get(egress)
        loss = losses.get(ingress)
        if p_in is None or p_in < LIT_THRESHOLD_DBM:
            status = "dark input"
        elif p_out is not None and p_out >= p_in - (loss or 2.0) - LIGHT_TOLERANCE_DB:
            status = "ok"
        else:
            status = "lost"
        result.append(PathLight(ingress, egress, p_in, p_out, loss, status))
    return result


def light_checkable(driver: OcsDriver) -> bool:
    """Whether the unit's monitors can tell where light goes (it has power monitors)."""
    return driver.has_monitors()


@dataclass
class ApplyResult:
    plan: OcsPlan
    final: PortMap
    seconds: float
    light: list[PathLight] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    impacts: list[Impact] = field(default_factory=list)
    unchecked_ports: list[int] = field(default_factory=list)  # no monitor: power not checked
    light_checked: bool = True  # False: the unit has no monitors to check it with


def map_found(driver: OcsDriver, plan: OcsPlan) -> dict[str, Any]:
    """What an interrupted or failed map change left: applied, partly applied or not applied.

    The switch is let finish what it accepted first (a reconfiguration under way
    completes on its own), then its map is read back and compared with the map
    before and the map wanted.
    """
    driver.wait_settled()
    found = driver.port_map()
    if found == plan.wanted:
        state = "applied"
    elif found == plan.current:
        state = "not applied"
    else:
        state = "partly applied"
    return {"state": state, "map": {str(i): e for i, e in found.items()},
            "left_to_do": plan_map(plan.device, found, plan.wanted).rows()}


def close_interrupted(journal: Journal, device: str, current: PortMap, change: Change) -> list[str]:
    """Close every orphaned change of ``device`` in the journal (once each), saying what was
    found: for a map change, whether its wanted map is in place (``applied``), the map it
    started from (``not applied``), or something between (``partly applied``)."""
    closed = []
    for operation in journal.interrupted(device):
        wanted = operation.intent.get("wanted")
        before = operation.intent.get("current")
        matches: bool | None = None
        found: dict[str, Any]
        if isinstance(wanted, dict):
            now = dict(current)
            matches = {int(k): v for k, v in wanted.items()} == now
            if matches:
                state = "applied"
            elif isinstance(before, dict) and {int(k): v for k, v in before.items()} == now:
                state = "not applied"
            else:
                state = "partly applied"
            found = {"state": state, "map": {str(i): e for i, e in current.items()}}
        else:  # not a map change (a port or boot-mode change): say what the map is now
            found = {"state": "unknown", "map_connections": len(current)}
        if not journal.close(operation, {"device": device, "action": operation.action,
                                         "status": "interrupted", "resolved_by": change.op,
                                         "found": found}):
            continue  # closed meanwhile by another process: once only
        change.note("recovered", interrupted_op=operation.op, interrupted_at=operation.started,
                    wanted_map_in_place=matches)
        closed.append(operation.op)
    return closed


def plan_violations(driver: OcsDriver, plan: OcsPlan, device: Device,
                    impacts: Sequence[Impact]) -> tuple[list[safety.Violation], list[int]]:
    """What the safety rules say of ``plan`` now: its violations (an in-service link
    taken down, a lit port switched above the limit) and the ports whose power could not
    be read. The same rules for a dry run as for the change itself.

    A port without a monitor reading (a unit without monitors, or a port without a
    detector) cannot be checked for a high-power beam: said and journaled, not refused
    (refusing would make such units unusable; the links' impact is still checked)."""
    touched = plan.touched_ports
    powers = driver.power(touched) if touched else {}
    violations = [*safety.links_taken_down(impacts), *safety.ocs_lit_ports(
        powers, touched, device.max_switch_power_dbm)]
    return violations, [port for port in touched if powers.get(port) is None]


def apply_plan(
    driver: OcsDriver,
    plan: OcsPlan,
    *,
    journal: Journal,
    device: Device,
    action: str,
    force: bool = False,
    verify_light: bool = True,
    impacts: Sequence[Impact] = (),
) -> ApplyResult:
    """Carry out ``plan`` under the device lock, journaled, safety-checked and verified.

    ``impacts`` are what the plan does to the inventory's links (:mod:`msoctl.impact`):
    one that takes an in-service link down is refused like a lit port is, unless ``force``.
    """
    with DeviceLock(journal, device.name):
        violations, unchecked = plan_violations(driver, plan, device, impacts)
        if violations and not force:
            message = safety.refusal(violations)
            journal.refuse(device=device.name, action=action, reason=message, exit_code=3,
                           rule=violations[0].rule,
                           ports=[v.port for v in violations if v.port is not None],
                           links=[i.as_dict() for i in impacts])
            raise SafetyInterlock(message, device=device.name)
        with journal.change(
            device=device.name, action=action, method=plan.method,
            current={str(k): v for k, v in plan.current.items()},
            wanted={str(k): v for k, v in plan.wanted.items()},
            changes=plan.rows(), impact=[i.as_dict() for i in impacts],
            power_unchecked_ports=unchecked or None,
            read_back=lambda: map_found(driver, plan),  # given with the intent: a signal
        ) as change:                                    # may come the moment it is written
            result = ApplyResult(plan, plan.current, 0.0, impacts=list(impacts),
                                 unchecked_ports=unchecked)
            result.recovered = close_interrupted(journal, device.name, plan.current, change)
            for violation in violations:
                change.note("override", rule=violation.rule, port=violation.port,
                            reason=violation.message)
                result.overrides.append(violation.message)
            started = time.monotonic()
            result.final = execute(driver, plan)
            result.seconds = time.monotonic() - started
            change.outcome["seconds"] = round(result.seconds, 4)
            if verify_light and not light_checkable(driver):
                result.light_checked = False
                change.outcome["light"] = "not checked: the unit has no power monitors"
            elif verify_light:
                result.light = check_light(driver, result.final)
                lost = [p for p in result.light if p.status == "lost"]
                change.outcome["light"] = {p.ingress: p.status for p in result.light}
                if lost:
                    raise VerificationFailed(
                        f"light does not arrive on {counted(len(lost), 'path')}: "
                        + ", ".join(f"{p.ingress}:{p.egress}" for p in lost[:8]),
                        device=device.name,
                    )
            return result
