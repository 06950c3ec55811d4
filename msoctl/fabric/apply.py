"""``msoctl fabric apply``: carry out a fabric plan (:mod:`msoctl.fabric.plan`) in a
safe order, verified by the light that arrives, resumable from the journal.

Apply, in this order (each step through the existing per-device operation, with its
safety rules, device lock and journal records):

1. ``switch:NAME`` — congestion control before any traffic is lit, on every switch
   whose running differs, all or nothing: a confirmed commit on each
   (:class:`msoctl.ops.switch.Fleet`, left pending), read back over a new session;
   once every switch verified, each is confirmed; if any fails, every pending one is
   cancelled.
2. ``ocs:NAME`` — each OCS's map (:func:`msoctl.ops.ocs.apply_plan`: the lit-port
   switching interlock, one command, read back, light checked through each path),
   planned again from the map read just before, so a change made meanwhile is seen.
   Both ends of every link are done before any amplifier is touched.
3. ``amp:NAME`` — amplifier settings (:func:`msoctl.ops.amp.set_amplifier`: targets
   inside the module's ranges, the gain ramped at the device's slew rate in steps
   of at most its ``max_gain_step_db``), only the fields that differ.
4. ``restart:NAME`` — after its span is lit: an amplifier on a span that now carries
   an up link, whose ALS has shut its output while its input shows light, gets one
   ALS restart (:func:`msoctl.ops.amp.restart_amplifier`), and the output is
   awaited. An amplifier whose input is still dark is not restarted (the light
   check then names the hop).
5. ``verify`` — the path view (:mod:`msoctl.fabric.lightpath`) of every link that is to be up,
   read again until the light arrives both ways (or ``verify.timeout_seconds``):
   the first hop where it is lost is the error.

Journal and resume
    A fabric apply is one journal operation (device ``fabric``, action
    ``fabric.apply``, the intent file and its SHA-256 in the intent record), run
    under a lock of its own (one fabric apply at a time). It records ``planned``
    (the step ids), then for each step ``step`` records: ``started``, then ``done``
    (with what was done) or ``in place`` (nothing to do), ``pending`` for switch
    commits awaiting confirmation; its result says ``ok`` or ``failed`` (with the
    failed step). The devices' own operations (``switch.cc.*``, ``ocs.apply``,
    ``amp.*``) are journaled beside it as always.

    A rerun of ``fabric apply`` on the same intent file after an interruption (a
    result never written: the process was killed) or a failure continues that
    operation: the new operation names it (``resumes``) and closes an interrupted
    one (result ``interrupted``, ``resolved_by`` the new one, ``found``: the steps it
    had done). Before planning it settles what the earlier run may have left half
    done: a confirmed commit it left pending on a switch (found by the process ids
    of the runs in the chain) is cancelled, so that running is a known state, and
    interrupted device operations are closed. Then it re-reads every device and
    plans again: steps whose devices already hold their intent are ``in place``
    and nothing is sent, so the first step with something left to do is where it
    continues; the order above holds for what remains.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from drivers.errors import DeviceError, SafetyInterlock, ValidationError, VerificationFailed
from msoctl import safety
from msoctl.access import Devices
from msoctl.fabric.intent import FabricIntent
from msoctl.fabric.lightpath import PathReport, show
from msoctl.fabric.plan import (
    ACTION,
    FABRIC,
    AmpStep,
    FabricPlan,
    OcsStep,
    RestartStep,
    amp_changes,
    find_resume,
    make_plan,
    opened_amp,
    opened_ocs,
    switch_leftovers,
    wanted_map,
)
from msoctl.journal import Change, DeviceLock, Journal
from msoctl.ops.amp import restart_amplifier, set_amplifier
from msoctl.ops.ocs import apply_plan, close_interrupted, map_found, plan_map
from msoctl.ops.switch import CANCEL, CONFIRM, Fleet, Guard, deletion_refusal
from msoctl.words import counted

RESTART_WAIT_SECONDS = 3.0
"""How long an amplifier's output may take to come back after a restart pulse (the
gain loop settles in about 100 ms; a pulse lasts about 2 s)."""
POLL_SECONDS = 0.2


class FabricFailed(DeviceError):
    """A step of a fabric apply failed; the journal says which."""


def _close_interrupted(journal: Journal, device: str, change: Change, found: str) -> None:
    for operation in journal.interrupted(device):
        if journal.close(operation, {"device": device, "action": operation.action,
                                     "status": "interrupted", "resolved_by": change.op,
                                     "found": found}):
            change.note("recovered", interrupted_op=operation.op, interrupted_device=device)


# ---- apply ---------------------------------------------------------------------------------


def _steps_found(report: ApplyReport | None) -> dict[str, Any]:
    """How far an interrupted or failed apply got (``report`` None: stopped before it was
    planned); each device's own operation records what that device holds (its own
    read-back), and the step under way is counted as its device has it, so that the
    fabric's account agrees with its devices' (a map the OCS took is a step done)."""
    if report is None:
        return {"state": "not applied", "steps_done": [], "steps_left": None}
    planned = report.plan.step_ids()
    done = [s.step for s in report.steps if s.status == "done"]
    settled = {s.step for s in report.steps if s.status in ("done", "in place")}
    partly: list[str] = []
    if report.in_progress is not None:
        step, read_back = report.in_progress
        try:
            state = read_back().get("state")
        except Exception:  # the device may be what failed: the step stays not done
            state = None
        if state == "applied" and step not in settled:
            done.append(step)
            settled.add(step)
        elif state == "partly applied":
            partly.append(step)
    if planned and settled >= set(planned):
        state = "applied"
    elif not done and not partly:
        state = "not applied"
    else:
        state = "partly applied"
    return {"state": state, "steps_done": done,
            "steps_left": [step for step in planned if step not in settled],
            **({"steps_partly_done": partly} if partly else {})}


@dataclass
class StepOutcome:
    step: str
    status: str  # done | in place | skipped
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "status": self.status, "detail": self.detail}


@dataclass
class ApplyReport:
    op: str
    plan: FabricPlan
    steps: list[StepOutcome] = field(default_factory=list)
    light: PathReport | None = None
    cancelled_leftovers: dict[str, str] = field(default_factory=dict)
    in_progress: tuple[str, Callable[[], dict[str, Any]]] | None = None
    """The step under way and what its device holds when asked (its own operation's
    read-back): an interruption then reports that step as the device has it."""

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "file": str(self.plan.intent.path),
                "resumed": None if self.plan.resume is None else self.plan.resume.as_dict(),
                "cancelled_pending_commits": self.cancelled_leftovers,
                "steps": [s.as_dict() for s in self.steps],
                "light": None if self.light is None else self.light.as_dict()}


Report = Callable[[str], None]


class _Run:
    """One apply: the steps in order, each recorded in the fabric operation."""

    def __init__(self, devices: Devices, journal: Journal, plan: FabricPlan, change: Change,
                 report: ApplyReport, say: Report, *, allow_delete: bool = False):
        self.devices = devices
        self.journal = journal
        self.inventory = devices.inventory
        self.plan = plan
        self.change = change
        self.report = report
        self.say = say
        self.allow_delete = allow_delete

    def record(self, step: str, status: str, detail: str = "", **extra: Any) -> None:
        self.change.note("step", step=step, status=status, detail=detail, **extra)
        if status in ("done", "in place", "skipped"):
            self.report.steps.append(StepOutcome(step, status, detail))
            self.say(f"{step}: {status}{': ' + detail if detail else ''}")

    @contextmanager
    def step(self, step: str) -> Iterator[None]:
        self.record(step, "started")
        try:
            yield
        except BaseException:
            self.change.outcome["failed_step"] = step
            raise

    # 1. switches -------------------------------------------------------------------

    def switches(self) -> None:
        # The plan's impact and deletions were checked before any step; the fleet refuses
        # a deletion the plan did not show (running changed since) unless it was allowed.
        fleet = Fleet(self.journal, self.devices.switch_target,
                      guard=Guard(allow_delete=self.allow_delete))
        todo = [s for s in self.plan.switches if s.changes]
        for s in self.plan.switches:
            if not s.changes:
                self.record(s.step, "in place", "running holds the WANT tree")
        if not todo:
            return
        pending: dict[str, str] = {}
        try:
            for s in todo:
                self.record(s.step, "started")
                self.change.outcome["failed_step"] = s.step
                (outcome,) = fleet.apply([s.device], s.want, confirm=False, source=s.source)
                if outcome.status == "refused":
                    raise SafetyInterlock(str(outcome.error), device=s.device)
                if outcome.status == "failed":
                    raise FabricFailed(str(outcome.error), device=s.device)
                if outcome.status == "pending" and outcome.persist_id is not None:
                    pending[s.device] = outcome.persist_id
                    self.record(s.step, "pending", persist_id=outcome.persist_id)
                elif outcome.status == "unchanged":
                    self.record(s.step, "in place", "running already held the WANT tree")
                else:
                    self.record(s.step, "done", f"{counted(len(outcome.changes), 'change')} "
                                                "committed")
            for s in todo:  # every switch verified: confirm them all
                if s.device not in pending:
                    continue
                self.change.outcome["failed_step"] = s.step
                fleet.settle(s.device, CONFIRM, pending[s.device])
                del pending[s.device]
                self.record(s.step, "done", f"{counted(len(s.changes), 'change')}: confirmed "
                                            "commit, read back over a new session, confirmed")
        except BaseException:
            for device, token in pending.items():  # all or nothing
                with suppress(DeviceError):
                    fleet.settle(device, CANCEL, token)
            raise
        self.change.outcome.pop("failed_step", None)

    # 2. OCS maps --------------------------------------------------------------------

    def ocs(self, step: OcsStep) -> None:
        with self.step(step.step), opened_ocs(self.devices, step.device) as driver:
            current = driver.port_map()  # again: someone may have changed it since
            wanted, reasons = wanted_map(step.device, current, self.plan.intent,
                                         self.inventory)
            plan = plan_map(step.device, current, wanted)
            if plan.method == "none":
                close_interrupted(self.journal, step.device, current, self.change)
                self.record(step.step, "in place", "the map is as wanted")
                return
            step.plan, step.reasons = plan, reasons
            # Until it returns, an interruption's read-back asks the OCS what it took (a
            # closed session reconnects): the fabric's account is then the device's own.
            self.report.in_progress = (step.step, lambda: map_found(driver, plan))
            result = apply_plan(driver, plan, journal=self.journal,
                                device=self.inventory.device(step.device, "ocs"),
                                action="ocs.apply")
            lit = sum(1 for p in result.light if p.status == "ok")
            self.record(step.step, "done",
                        f"{len(plan.diff.remove)} removed, {len(plan.diff.add)} added "
                        f"({plan.method}) in {result.seconds * 1000:.0f} ms; "
                        f"{counted(lit, 'lit path')} pass{'es' if lit == 1 else ''} light")
            self.report.in_progress = None  # recorded done first: no moment goes untold

    # 3. amplifier settings -----------------------------------------------------------

    def amp(self, step: AmpStep) -> None:
        with self.step(step.step), opened_amp(self.devices, step.device) as driver:
            changes = amp_changes(step.intent, driver.settings())
            _close_interrupted(self.journal, step.device, self.change,
                               "the settings were read again")
            if not changes:
                self.record(step.step, "in place", "the settings are as wanted")
                return
            wanted = {name: new for name, (_, new) in changes.items()}
            result = set_amplifier(self.journal, self.inventory.device(step.device, "amp"),
                                   driver, **wanted, fabric_op=self.change.op)
            ramp = (f", gain ramped in {counted(len(result.gain_steps_db), 'step')}"
                    if len(result.gain_steps_db) > 1 else "")
            self.record(step.step, "done", ", ".join(
                f"{name} {old} -> {new}" for name, (old, new) in changes.items()) + ramp)

    # 4. amplifier restarts ---------------------------------------------------------------

    def restart(self, step: RestartStep) -> None:
        with self.step(step.step), opened_amp(self.devices, step.device) as driver:
            _close_interrupted(self.journal, step.device, self.change,
                               "the amplifier was read again")
            status = driver.status()
            state = status.monitors.als_state
            threshold = status.settings.los_threshold_dbm
            light_in = status.monitors.input_power_dbm
            if state == "normal":
                self.record(step.step, "in place", "ALS normal: the output is on")
                return
            if state == "output-disabled":
                self.record(step.step, "skipped", "its output is disabled (module in low "
                            "power, or output off): not restarted")
                return
            if light_in is None or threshold is None or light_in < threshold:
                self.record(step.step, "skipped",
                            f"no light at its input ({light_in} dBm): not restarted")
                return
            if state != "restart-pulse":
                restart_amplifier(self.journal, step.device, driver, fabric_op=self.change.op)
            deadline = time.monotonic() + RESTART_WAIT_SECONDS
            target = status.settings.target_gain_db if status.settings.mode == "gain" else None
            while True:
                monitors = driver.status().monitors
                gain = monitors.gain_db
                normal = monitors.als_state == "normal" and gain is not None
                if gain is not None and normal and (target is None or abs(gain - target) < 1):
                    break
                if time.monotonic() > deadline:
                    if normal:  # short of its target (saturated): the light check judges
                        break
                    raise FabricFailed(f"ALS state {monitors.als_state} {RESTART_WAIT_SECONDS:g}"
                                       " s after a restart pulse", device=step.device)
                time.sleep(0.05)
            self.record(step.step, "done",
                        f"restarted after {step.span} was lit: output "
                        f"{monitors.output_power_dbm} dBm, gain {monitors.gain_db} dB")

    # 5. light ------------------------------------------------------------------------------

    def verify(self) -> None:
        links = [self.inventory.links[name] for name in self.plan.verify_links]
        intent = self.plan.intent
        deadline = time.monotonic() + intent.verify_timeout_seconds
        with self.step("verify"):
            while True:
                light = show(self.devices, links,
                             tolerance_db=intent.tolerance_db)
                wrong = _wrong_light(light, intent)
                if not wrong or time.monotonic() > deadline:
                    break
                time.sleep(POLL_SECONDS)
            self.report.light = light
            self.change.outcome["light"] = {
                link.link: {d.direction: d.light for d in link.directions}
                for link in light.links}
            if wrong:
                raise VerificationFailed(f"light does not arrive: {wrong[0]}"
                                         + (f" (and {len(wrong) - 1} more)"
                                            if len(wrong) > 1 else ""))
            self.record("verify", "done", ", ".join(
                f"{link.link} light arrives both ways on {link.span}" for link in light.links))


def _wrong_light(light: PathReport, intent: FabricIntent) -> list[str]:
    wrong = []
    for device, why in light.errors.items():
        wrong.append(f"{device} did not answer ({why})")
    for link in light.links:
        role = intent.links[link.link].role
        for direction in link.directions:
            where = f"{link.link} {direction.source} -> {direction.destination}"
            lost = direction.lost_at
            if lost is not None:
                hop = direction.hops[lost]
                wrong.append(f"{where}: lost at hop {lost + 1} ({hop.device} {hop.point}: "
                             f"{hop.status})")
            elif direction.span != role:
                wrong.append(f"{where}: on span {direction.span}, not {role}")
            elif direction.light != "arrives":
                wrong.append(f"{where}: no measurement at the far end")
    return wrong


def apply(devices: Devices, journal: Journal, intent: FabricIntent, *,
          say: Report = lambda line: None, force: bool = False,
          allow_delete: bool = False) -> ApplyReport:
    """Apply ``intent`` (see the module docstring); ``say`` hears each step as it ends.

    Refused before any step, the fabric operation's result ``refused`` and
    :class:`SafetyInterlock` raised (exit 3), when the plan takes an in-service link down
    (unless ``force``) or a switch's WANT tree would delete configuration it does not name
    (unless ``allow_delete``)."""
    report, refusal = _apply(devices, journal, intent, say, force=force,
                             allow_delete=allow_delete)
    if refusal is not None:
        raise SafetyInterlock(refusal)
    return report


def _apply(devices: Devices, journal: Journal, intent: FabricIntent, say: Report, *,
           force: bool, allow_delete: bool) -> tuple[ApplyReport, str | None]:
    with DeviceLock(journal, FABRIC):
        resume = find_resume(journal, intent)
        # The read-back goes with the intent (a signal may come the moment it is written);
        # it reads the report as far as it has got, none before the first step.
        report: ApplyReport | None = None
        with journal.change(device=FABRIC, action=ACTION, file=str(intent.path),
                            intent_sha256=intent.sha256,
                            resumes=None if resume is None else resume.op,
                            read_back=lambda: _steps_found(report)) as change:
            if resume is not None:
                say(f"resuming fabric operation {resume.op} ({resume.status}"
                    + (f" at step {resume.failed_step}" if resume.failed_step else "")
                    + f"; {counted(len(resume.done), 'step')} done): device state read again"
                    + ("" if resume.same_intent else "; the intent file changed since"))
                if resume.orphaned:
                    journal.close(resume.op, {"device": FABRIC, "action": ACTION,
                                              "status": "interrupted",
                                              "resolved_by": change.op,
                                              "found": f"{counted(len(resume.done), 'step')} done: "
                                                       f"{', '.join(resume.done) or 'none'}"})
            leftovers = switch_leftovers(journal, intent, resume)
            report = ApplyReport(change.op, FabricPlan(intent, resume=resume))
            fleet = Fleet(journal, devices.switch_target)
            for device, token in leftovers.items():
                with suppress(ValidationError):  # already gone: confirmed, or timed out
                    fleet.settle(device, CANCEL, token)
                    report.cancelled_leftovers[device] = token
                    say(f"switch:{device}: cancelled commit {token} an earlier run left "
                        "pending")
                _close_interrupted(journal, device, change,
                                   "its pending commit was cancelled by a resumed fabric apply")
            plan = make_plan(devices, journal, intent, resume, leftovers)
            report.plan = plan
            change.note("planned", steps=plan.step_ids(), changes=plan.changes,
                        impact=[i.as_dict() for i in plan.impacts])
            refusal = _refusal(plan, force=force, allow_delete=allow_delete, change=change)
            if refusal is not None:
                change.status = "refused"
                change.outcome["reason"] = refusal
                return report, refusal
            run = _Run(devices, journal, plan, change, report, say, allow_delete=allow_delete)
            run.switches()
            for ocs_step in plan.ocs:
                run.ocs(ocs_step)
            for amp_step in plan.amps:
                run.amp(amp_step)
            for restart in plan.restarts:
                run.restart(restart)
            if plan.verify_links:
                run.verify()
            change.outcome["steps"] = {s.step: s.status for s in report.steps}
            return report, None


def _refusal(plan: FabricPlan, *, force: bool, allow_delete: bool,
             change: Change) -> str | None:
    """Why the plan may not run, or None (with the overrides given noted in the journal)."""
    violations = safety.links_taken_down(plan.impacts)
    if violations and not force:
        return safety.refusal(violations)
    for violation in violations:
        change.note("override", rule=violation.rule, reason=violation.message)
    for device, removed in plan.deletions.items():
        if not allow_delete:
            return f"switch:{device}: {deletion_refusal(device, removed)}"
        change.note("deletions", device=device, paths=[c.path for c in removed])
    return None
