"""Congestion-control changes on switches: one device or a fleet, journaled, confirmed.

An apply on one switch, in order:

1. the journal's intent (the WANT file's digest, the persist token, the timeout);
2. session 1: lock candidate, edit, validate, diff; a confirmed commit with a
   persist token; the session ends (the change is running, and pending);
3. session 2, a new one: running is read back and must hold the WANT tree —
   that this session can be opened at all shows management survived the change;
4. the confirming commit (persist-id), unless ``--no-confirm`` leaves it pending
   for ``msoctl switch cc confirm`` / ``cancel``, or the server's timeout.

A fleet runs that on each device in parallel, at most ``parallel`` at a time.
With ``all_or_nothing`` nobody confirms until everybody has verified; if any
device fails, every pending commit is cancelled and the fleet is where it was.

Pending changes are found again in the journal: the result of an apply
records ``status: pending``, its persist id and its deadline; a later confirm
or cancel records what became of it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from drivers.errors import DeviceError, SafetyInterlock, ValidationError
from drivers.switch.intent import TOP, Intent, from_dict, to_dict
from drivers.switch.netconf import NetconfRejected, NetconfTarget
from drivers.switch.session import open_session
from drivers.switch.tree import Change, check
from drivers.yamlfile import YamlFileError, load_file
from msoctl import safety
from msoctl.impact import Impact
from msoctl.journal import Change as JournalChange
from msoctl.journal import Journal, locked_change
from msoctl.words import counted

if TYPE_CHECKING:
    from drivers.switch.gnmi import GnmiSwitchTarget
    from drivers.switch.session import Session
    from drivers.transports.gnmi import GnmiRejected

APPLY = "switch.cc.apply"
CONFIRM = "switch.cc.confirm"
CANCEL = "switch.cc.cancel"
DEFAULT_PARALLEL = 8

Target: TypeAlias = "NetconfTarget | GnmiSwitchTarget"
Connect = Callable[[str], Target]
Want = Intent | Mapping[str, Any]


def load_want(path: Path) -> Want:
    """A WANT file, YAML or JSON: the operator's intent (``congestion_control:``, what
    ``msoctl switch plan`` writes), or a first round's ``switch:`` tree of
    yang/msoctl-congestion.yang (also under ``config:``, as ``msoctl switch plan -o json``
    printed it), checked against that module."""
    try:
        data = load_file(path)
    except YamlFileError as error:
        raise ValidationError(str(error)) from None
    if isinstance(data, Mapping) and "config" in data and "switch" not in data \
            and TOP not in data:
        data = data["config"]
    if isinstance(data, Mapping) and TOP in data:
        return from_dict(data, source=str(path))
    return check(data, source=str(path))


def want_digest(want: Want) -> str:
    document = to_dict(want) if isinstance(want, Intent) else want
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Outcome:
    """What happened on one device."""

    device: str
    status: str = "ok"  # ok | pending | unchanged | cancelled | refused | failed
    changes: list[Change] = field(default_factory=list)
    impacts: list[Impact] = field(default_factory=list)
    persist_id: str | None = None
    error: str | None = None
    error_type: str | None = None
    rpc_errors: list[dict[str, str | None]] = field(default_factory=list)
    seconds: float = 0.0
    undo: Any = None  # what puts an applied change back (a switch that cannot hold it)

    def as_dict(self) -> dict[str, Any]:
        return {"device": self.device, "status": self.status,
                "changes": [c.as_dict() for c in self.changes if c.kind != "remove"],
                "deletions": [c.as_dict() for c in self.changes if c.kind == "remove"],
                "impact": [i.as_dict() for i in self.impacts], "persist_id": self.persist_id,
                "error": self.error, "rpc_errors": self.rpc_errors,
                "duration_seconds": round(self.seconds, 3)}


def _gnmi_refusal(error: DeviceError) -> GnmiRejected | None:
    """``error`` as a gNMI refusal, if it is one (the gNMI client is imported only once a
    gNMI switch was opened, so an error cannot be one before)."""
    module = sys.modules.get("drivers.transports.gnmi")
    if module is not None and isinstance(error, module.GnmiRejected):
        return cast("GnmiRejected", error)
    return None


def _failed(outcome: Outcome, error: DeviceError) -> Outcome:
    outcome.status = "failed"
    outcome.error = error.message  # the device is named beside it
    outcome.error_type = type(error).__name__
    if isinstance(error, NetconfRejected):
        outcome.rpc_errors = [e.as_dict() for e in error.rpc_errors]
    elif (refusal := _gnmi_refusal(error)) is not None:
        outcome.rpc_errors = [{"error_tag": refusal.code, "error_message": refusal.details}]
    return outcome


def _deadline(seconds: int) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


ImpactOf = Callable[[str, list[Change]], list[Impact]]
"""Switch name and its planned changes -> what they do to the inventory's links."""


@dataclass(frozen=True)
class Guard:
    """What a switch change may do: delete configuration (``allow_delete``), change only
    the leaves the WANT file names (``merge_only``), take an in-service link down
    (``force``); ``impact_of`` works out the links each change touches."""

    merge_only: bool = False
    allow_delete: bool = False
    force: bool = False
    impact_of: ImpactOf | None = None


def deletions(changes: Sequence[Change]) -> list[Change]:
    """The changes that remove configuration present on the switch."""
    return [c for c in changes if c.kind == "remove"]


def deletion_refusal(device: str, removed: Sequence[Change]) -> str:
    shown = ", ".join(c.path for c in removed[:3])
    more = f" and {len(removed) - 3} more" if len(removed) > 3 else ""
    return (f"the WANT file would delete {counted(len(removed), 'leaf')} it does not name "
            f"({shown}{more}); give --allow-delete to delete them, or --merge to change only "
            "what the file names")


class Fleet:
    """Applies one WANT to switches, journaled, each through its session
    (:func:`drivers.switch.session.open_session`: NETCONF or gNMI)."""

    def __init__(self, journal: Journal, connect: Connect, *,
                 session_factory: Callable[[Target], Session] = open_session,
                 guard: Guard | None = None):
        self.journal = journal
        self.connect = connect
        self.session = session_factory
        self.guard = guard or Guard()

    # ---- apply ------------------------------------------------------------------------

    def apply(self, devices: Sequence[str], want: Want, *,
              confirm_timeout_seconds: int = 120, confirm: bool = True,
              all_or_nothing: bool = False, parallel: int = DEFAULT_PARALLEL,
              source: str | None = None) -> list[Outcome]:
        """Apply ``want`` to every device; outcomes in the order of ``devices``."""
        if not devices:
            raise ValidationError("no switch to apply to")
        if len(set(devices)) != len(devices):
            raise ValidationError("a switch is named twice")
        if not 1 <= parallel <= 256:
            raise ValidationError("--parallel is 1..256")
        targets = {name: self.connect(name) for name in devices}  # inventory errors first
        digest = want_digest(want)
        stage_confirm = confirm and not all_or_nothing

        def one(name: str) -> Outcome:
            return self._apply_one(targets[name], want, digest, source,
                                   confirm_timeout_seconds, stage_confirm)

        outcomes = self._each(devices, one, parallel)

        def outcome_of(name: str) -> Outcome:
            return next(o for o in outcomes if o.device == name)

        if all_or_nothing:
            pending = [o for o in outcomes if o.status == "pending"]
            if any(o.status in ("failed", "refused") for o in outcomes):
                self._each([o.device for o in pending],
                           lambda name: self._settle(targets[name], outcome_of(name), CANCEL,
                                                     "all-or-nothing: another switch failed"),
                           parallel)
                # A switch that could not hold its change pending (a gNMI switch without
                # the Commit extension) has it applied: it is put back as it was.
                applied = [o for o in outcomes if o.status == "ok" and o.undo is not None]
                self._each([o.device for o in applied],
                           lambda name: self._undo(targets[name], outcome_of(name),
                                                   "all-or-nothing: another switch failed"),
                           parallel)
            elif confirm:
                self._each([o.device for o in pending],
                           lambda name: self._settle(targets[name], outcome_of(name), CONFIRM,
                                                     "all-or-nothing: every switch verified"),
                           parallel)
        return outcomes

    @staticmethod
    def _each(names: Sequence[str], work: Callable[[str], Outcome],
              parallel: int) -> list[Outcome]:
        if len(names) <= 1 or parallel == 1:
            return [work(name) for name in names]
        with ThreadPoolExecutor(max_workers=min(parallel, len(names)),
                                thread_name_prefix="switch") as pool:
            return list(pool.map(work, names))

    def _apply_one(self, target: Target, want: Want, digest: str,
                   source: str | None, timeout: int, confirm: bool) -> Outcome:
        outcome = Outcome(target.name)
        started = time.monotonic()
        token = f"msoctl-{uuid.uuid4().hex[:16]}"
        guard = self.guard
        try:
            with locked_change(self.journal, device=target.name, action=APPLY,
                               want=source, want_sha256=digest, persist_id=token,
                               confirm_timeout_seconds=timeout,
                               merge_only=guard.merge_only or None) as change:

                def check(changes: list[Change]) -> None:
                    """Before the commit: no silent deletion, no in-service link down."""
                    outcome.changes = changes
                    if guard.impact_of is not None:
                        outcome.impacts = guard.impact_of(target.name, changes)
                    change.outcome["impact"] = [i.as_dict() for i in outcome.impacts]
                    removed = deletions(changes)
                    if removed and not guard.allow_delete:
                        raise SafetyInterlock(deletion_refusal(target.name, removed),
                                              device=target.name)
                    violations = safety.links_taken_down(outcome.impacts)
                    if violations and not guard.force:
                        raise SafetyInterlock(safety.refusal(violations), device=target.name)
                    for violation in violations:
                        change.note("override", rule=violation.rule, reason=violation.message)
                    if removed:
                        change.note("deletions", paths=[c.path for c in removed])

                try:
                    with self.session(target) as first:
                        applied = first.apply(want, confirm_timeout_seconds=timeout,
                                              persist_id=token, merge_only=guard.merge_only,
                                              check=check)
                except SafetyInterlock as refused:  # nothing was committed
                    outcome.status = change.status = "refused"
                    outcome.error = refused.message
                    outcome.error_type = type(refused).__name__
                    change.outcome["reason"] = refused.message
                    outcome.seconds = time.monotonic() - started
                    return outcome
                outcome.changes = applied.changes
                outcome.undo = applied.undo
                change.outcome["changes"] = len(applied.changes)
                change.outcome["method"] = applied.method
                if not applied.changes:
                    outcome.status = change.status = "unchanged"
                elif applied.pending:
                    outcome.persist_id = token
                    self._verify_and_settle(target, want, token, confirm, timeout, outcome,
                                            change)
                else:
                    outcome.status = "ok"
        except DeviceError as error:
            _failed(outcome, error)
        outcome.seconds = time.monotonic() - started
        return outcome

    def _verify_and_settle(self, target: Target, want: Want, token: str,
                           confirm: bool, timeout: int, outcome: Outcome,
                           change: JournalChange) -> None:
        """Read back in a new session; confirm, or leave pending; cancel if it fails."""
        try:
            with self.session(target) as second:
                second.verify(want)
                if confirm:
                    second.confirm(token)
        except DeviceError:
            self._cancel_quietly(target, token, change)
            raise
        if confirm:
            outcome.status = change.status = "ok"
        else:
            outcome.status = change.status = "pending"
            change.outcome["persist_id"] = token
            change.outcome["confirm_deadline"] = _deadline(timeout)

    def _cancel_quietly(self, target: Target, token: str,
                        change: JournalChange) -> None:
        try:
            with self.session(target) as third:
                third.cancel(token)
            change.outcome["cancelled"] = True
        except DeviceError as error:  # the server's timeout rolls it back anyway
            change.outcome["cancel_error"] = str(error)

    def _settle(self, target: Target, outcome: Outcome, action: str,
                why: str) -> Outcome:
        """Confirm or cancel one pending commit of this run (all-or-nothing)."""
        token = outcome.persist_id
        assert token is not None
        try:
            with locked_change(self.journal, device=target.name, action=action,
                               persist_id=token, reason=why), self.session(target) as s:
                if action == CONFIRM:
                    s.confirm(token)
                    outcome.status = "ok"
                else:
                    s.cancel(token)
                    outcome.status = "cancelled"
        except DeviceError as error:
            _failed(outcome, error)
        return outcome

    def _undo(self, target: Target, outcome: Outcome, why: str) -> Outcome:
        """Put back a change applied in this run on a switch that could not hold it
        pending (all-or-nothing), journaled as a cancel."""
        try:
            with locked_change(self.journal, device=target.name, action=CANCEL,
                               reason=why, method="put back"), \
                    self.session(target) as session:
                session.undo(outcome.undo)  # type: ignore[union-attr]
                outcome.status = "cancelled"
        except DeviceError as error:
            _failed(outcome, error)
        return outcome

    # ---- later confirm / cancel -------------------------------------------------------

    def pending(self, device: str) -> dict[str, Any] | None:
        """The newest pending change of ``device`` in the journal, not yet settled."""
        newest = self.journal.last(device, action=APPLY, status="pending")
        if newest is None or newest.result is None:
            return None
        latest = newest.result
        settles = self.journal.operations(device, actions=(CONFIRM, CANCEL), status="ok",
                                          since=newest.started)
        if str(latest.get("persist_id")) in {str(o.intent.get("persist_id")) for o in settles}:
            return None
        return latest

    def settle(self, device: str, action: str, persist_id: str | None = None) -> str:
        """Confirm or cancel the pending change of ``device``; returns its persist id."""
        if persist_id is None:
            found = self.pending(device)
            if found is None:
                raise ValidationError(f"{device}: no pending change in the journal "
                                      "(give --persist-id to settle one made elsewhere)")
            persist_id = str(found["persist_id"])
        target = self.connect(device)
        with locked_change(self.journal, device=device, action=action,
                           persist_id=persist_id), self.session(target) as s:
            try:
                if action == CONFIRM:
                    s.confirm(persist_id)
                else:
                    s.cancel(persist_id)
            except DeviceError as refused:
                gnmi = _gnmi_refusal(refused)
                if (isinstance(refused, NetconfRejected) and "invalid-value" in refused.tags) \
                        or (gnmi is not None and gnmi.code == "NOT_FOUND"):
                    raise ValidationError(
                        f"{device}: the switch has no pending commit {persist_id} (its "
                        "confirm timeout may have passed: the switch then rolled it back)",
                        device=device) from None
                raise
        return persist_id

