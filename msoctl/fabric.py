"""``msoctl fabric plan|apply``: one intent for the whole fabric (:mod:`msoctl.fabric_intent`),
planned as one diff across devices, applied in a safe order, verified by the light
that arrives, resumable from the journal.

Plan
    Every device the intent touches is read (in parallel): each switch plans its WANT
    tree in its own candidate datastore (:meth:`SwitchSession.plan`: validated there,
    diffed, discarded); each OCS's map is read and the wanted map computed (below);
    each amplifier's settings are read and the intent's targets checked against the
    module's ranges; the amplifiers on the spans of links that are to be up are
    listed for an ALS restart. Nothing is changed.

    An OCS's wanted map: its current map (or, when the intent gives its
    ``connections``, exactly those) with, for every link of the intent that ends
    there, the link's cross-connects on its other span and whatever holds its
    switch ports removed, and, for a link that is up, its cross-connects on the
    wanted span added (:meth:`msoctl.links.Link.connections`) — removing any other
    connection that holds a port they need. Two links of the intent needing one port,
    or a raw map connection on a port a link needs, is an error naming the line.

Apply, in this order (each step through the existing per-device operation, with its
safety rules, device lock and journal records):

1. ``switch:NAME`` — congestion control before any traffic is lit, on every switch
   whose running differs, all or nothing: a confirmed commit on each
   (:class:`msoctl.switch_ops.Fleet`, left pending), read back over a new session;
   once every switch verified, each is confirmed; if any fails, every pending one is
   cancelled.
2. ``ocs:NAME`` — each OCS's map (:func:`msoctl.ocs_ops.apply_plan`: the lit-port
   switching interlock, one command, read back, light checked through each path),
   planned again from the map read just before, so a change made meanwhile is seen.
   Both ends of every link are done before any amplifier is touched.
3. ``amp:NAME`` — amplifier settings (:func:`msoctl.amp_ops.set_amplifier`: targets
   inside the module's ranges, the gain ramped at the device's slew rate in steps
   of at most its ``max_gain_step_db``), only the fields that differ.
4. ``restart:NAME`` — after its span is lit: an amplifier on a span that now carries
   an up link, whose ALS has shut its output while its input shows light, gets one
   ALS restart (:func:`msoctl.amp_ops.restart_amplifier`), and the output is
   awaited. An amplifier whose input is still dark is not restarted (the light
   check then names the hop).
5. ``verify`` — the path view (:mod:`msoctl.paths`) of every link that is to be up,
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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Protocol

from drivers.amp.driver import AmpDriver
from drivers.amp.types import AmpSettings
from drivers.errors import DeviceError, SafetyInterlock, ValidationError, VerificationFailed
from drivers.ocs import OcsDriver, PortMap
from drivers.switch.netconf import NetconfTarget, SwitchSession
from drivers.switch.tree import Change as TreeChange
from msoctl import impact, safety
from msoctl.amp_ops import restart_amplifier, set_amplifier
from msoctl.fabric_intent import AmpIntent, FabricIntent
from msoctl.impact import Impact
from msoctl.inventory import Inventory
from msoctl.journal import Change, DeviceLock, Journal, Operation
from msoctl.links import Link
from msoctl.linkstate import LinkStates
from msoctl.ocs_ops import OcsPlan, apply_plan, close_interrupted, plan_map
from msoctl.paths import DeviceAccess, PathReport, show
from msoctl.switch_ops import APPLY, CANCEL, CONFIRM, Fleet, Guard, deletion_refusal, deletions

FABRIC = "fabric"
"""The journal's device name for fabric operations (and the name of their lock)."""
ACTION = "fabric.apply"
GAIN_EPSILON_DB = 0.005
RESTART_WAIT_SECONDS = 3.0
"""How long an amplifier's output may take to come back after a restart pulse (the
gain loop settles in about 100 ms; a pulse lasts about 2 s)."""
POLL_SECONDS = 0.2


class FabricAccess(DeviceAccess, Protocol):
    """What fabric operations need (:class:`msoctl.cli.Context` is one)."""

    @property
    def journal(self) -> Journal: ...

    @property
    def inventory(self) -> Inventory: ...

    def switch_target(self, name: str) -> NetconfTarget: ...


class FabricFailed(DeviceError):
    """A step of a fabric apply failed; the journal says which."""


# ---- the plan ---------------------------------------------------------------------------


@dataclass
class SwitchStep:
    device: str
    want: dict[str, Any]
    source: str
    changes: list[TreeChange]
    method: str
    leftover: str | None = None  # persist id of a pending commit an earlier run left

    @property
    def step(self) -> str:
        return f"switch:{self.device}"

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": "switch", "device": self.device,
                "want": self.source, "method": self.method,
                "pending_commit_to_cancel": self.leftover,
                "changes": [c.as_dict() for c in self.changes]}


@dataclass
class OcsStep:
    device: str
    plan: OcsPlan
    reasons: dict[tuple[str, int, int], str]

    @property
    def step(self) -> str:
        return f"ocs:{self.device}"

    def rows(self) -> list[dict[str, Any]]:
        return [{**row, "reason": self.reasons.get(
            (row["action"], row["ingress"], row["egress"]))} for row in self.plan.rows()]

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": "ocs", "device": self.device,
                "method": self.plan.method, "changes": self.rows(),
                "unchanged": len(self.plan.diff.keep)}


@dataclass
class AmpStep:
    device: str
    intent: AmpIntent
    current: AmpSettings
    changes: dict[str, tuple[Any, Any]]  # setting -> (current, wanted)

    @property
    def step(self) -> str:
        return f"amp:{self.device}"

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": "amp", "device": self.device,
                "changes": [{"setting": name, "current": current, "wanted": wanted}
                            for name, (current, wanted) in self.changes.items()]}


@dataclass
class RestartStep:
    device: str
    span: str
    als_state: str | None

    @property
    def step(self) -> str:
        return f"restart:{self.device}"

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "kind": "amp_restart", "device": self.device,
                "span": self.span, "als_state": self.als_state,
                "when": "after its span is lit, if ALS has shut the output"}


@dataclass
class Resume:
    """An earlier apply of this intent file that did not end well, to be continued."""

    op: str
    status: str  # interrupted | failed
    started: str
    done: list[str]
    failed_step: str | None
    same_intent: bool
    pids: set[int]
    hosts: set[str]
    orphaned: bool = False  # never closed: its process died before writing a result
    since: str = ""  # when the first of the runs it continues began

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "status": self.status, "started": self.started,
                "steps_done": self.done, "failed_step": self.failed_step,
                "same_intent": self.same_intent}


@dataclass
class FabricPlan:
    intent: FabricIntent
    switches: list[SwitchStep] = field(default_factory=list)
    ocs: list[OcsStep] = field(default_factory=list)
    amps: list[AmpStep] = field(default_factory=list)
    restarts: list[RestartStep] = field(default_factory=list)
    verify_links: list[str] = field(default_factory=list)
    resume: Resume | None = None
    impacts: list[Impact] = field(default_factory=list)

    @property
    def deletions(self) -> dict[str, list[TreeChange]]:
        """Switch -> configuration its WANT tree would delete (leaves it does not name)."""
        return {s.device: removed for s in self.switches if (removed := deletions(s.changes))}

    @property
    def changes(self) -> int:
        return (sum(len(s.changes) for s in self.switches)
                + sum(len(o.plan.rows()) for o in self.ocs)
                + sum(len(a.changes) for a in self.amps))

    def step_ids(self) -> list[str]:
        steps = [s.step for s in self.switches if s.changes or s.leftover]
        steps += [o.step for o in self.ocs if o.plan.method != "none"]
        steps += [a.step for a in self.amps if a.changes]
        steps += [r.step for r in self.restarts]
        return steps + (["verify"] if self.verify_links else [])

    def as_dict(self) -> dict[str, Any]:
        return {"file": str(self.intent.path), "intent_sha256": self.intent.sha256,
                "resume": None if self.resume is None else self.resume.as_dict(),
                "changes": self.changes, "step_order": self.step_ids(),
                "steps": [*(s.as_dict() for s in self.switches),
                          *(o.as_dict() for o in self.ocs),
                          *(a.as_dict() for a in self.amps),
                          *(r.as_dict() for r in self.restarts),
                          {"step": "verify", "kind": "verify", "links": self.verify_links,
                           "timeout_seconds": self.intent.verify_timeout_seconds}],
                "deletions": {device: [c.as_dict() for c in removed]
                              for device, removed in self.deletions.items()},
                "impact": [i.as_dict() for i in self.impacts]}


def _spans_of(link: Link) -> list[tuple[str, Any]]:
    return [(role, span) for role, span in (("working", link.working),
                                            ("protection", link.protection)) if span]


def wanted_map(name: str, current: PortMap, intent: FabricIntent, inventory: Inventory
               ) -> tuple[PortMap, dict[tuple[str, int, int], str]]:
    """The map ``intent`` wants on OCS ``name``, and why each connection comes or goes."""
    raw = intent.ocs.get(name)
    base = dict(raw.connections) if raw is not None else dict(current)
    needed: dict[int, int] = {}
    owner: dict[int, str] = {}  # port -> the link that needs it
    leaving: dict[tuple[int, int], str] = {}
    for link_intent in intent.links.values():
        link = inventory.links[link_intent.name]
        if name not in link.ocs_names:
            continue
        own = {pair for role, _ in _spans_of(link) for pair in link.connections(role)[name]}
        end = link.a if link.a.tx.ocs == name else link.b
        for ingress, egress in list(base.items()):
            if (ingress, egress) in own:
                leaving[(ingress, egress)] = (
                    f"{link.name} is down" if not link_intent.up
                    else f"{link.name} moves to its {link_intent.role} span")
            elif ingress == end.tx.port or egress == end.rx.port:
                leaving[(ingress, egress)] = (f"holds {end.switch} {end.port}'s port, which "
                                              f"{link.name} needs")
            else:
                continue
            del base[ingress]
        if not link_intent.up:
            continue
        for ingress, egress in link.connections(link_intent.role)[name]:
            for port in (ingress, egress):
                if port in owner:
                    raise ValidationError(
                        f"{intent.where(link_intent.line)}: link {link.name!r}: needs "
                        f"{name}:{port}, which link {owner[port]!r} needs too")
                owner[port] = link.name
            needed[ingress] = egress
    if raw is not None:
        for ingress, egress in raw.connections.items():
            held = [p for p in (ingress, egress) if p in owner]
            if held and needed.get(ingress) != egress:
                raise ValidationError(
                    f"{intent.where(raw.lines[ingress])}: ocs {name!r}: connection "
                    f"{ingress}:{egress} uses port {held[0]}, which link {owner[held[0]]!r} "
                    "needs")
    for ingress, egress in list(base.items()):
        if (ingress in owner or egress in owner) and needed.get(ingress) != egress:
            port = ingress if ingress in owner else egress
            leaving.setdefault((ingress, egress),
                               f"holds {name}:{port}, which {owner[port]} needs")
            del base[ingress]
    try:
        wanted = PortMap({**base, **needed}, current.size)
    except ValidationError as error:
        where = intent.where(raw.line if raw is not None else 0)
        raise ValidationError(f"{where}: ocs {name!r}: {error.message}") from None
    reasons: dict[tuple[str, int, int], str] = {}
    for ingress, egress in needed.items():
        link_intent = intent.links[owner[ingress]]
        span = inventory.links[link_intent.name].span(link_intent.role)
        reasons[("add", ingress, egress)] = (f"{link_intent.name} on its {link_intent.role} "
                                             f"span {span.name}")
    for ingress, egress in current.items():
        if wanted.get(ingress) != egress:
            reasons[("remove", ingress, egress)] = leaving.get(
                (ingress, egress), f"not in the intent's map of {name}" if raw else "")
    if raw is not None:
        for ingress, egress in raw.connections.items():
            reasons.setdefault(("add", ingress, egress),
                               f"the intent's map (line {raw.lines[ingress]})")
    return wanted, reasons


def _ocs_names(intent: FabricIntent, inventory: Inventory) -> list[str]:
    names = set(intent.ocs)
    for name in intent.links:
        names.update(inventory.links[name].ocs_names)
    return sorted(names)


def _restart_candidates(intent: FabricIntent, inventory: Inventory) -> dict[str, str]:
    """Amplifier -> the span that will carry light through it."""
    found: dict[str, str] = {}
    for link_intent in intent.links.values():
        if not link_intent.up:
            continue
        span = inventory.links[link_intent.name].span(link_intent.role)
        for fiber in (span.a_to_b, span.b_to_a):
            if fiber.amplifier is not None:
                found.setdefault(fiber.amplifier, span.name)
    return found


@contextmanager
def _ocs(access: FabricAccess, name: str) -> Iterator[OcsDriver]:
    _, driver = access.ocs(name)
    try:
        yield driver
    finally:
        driver.close()


@contextmanager
def _amp(access: FabricAccess, name: str) -> Iterator[AmpDriver]:
    _, driver = access.amp(name)
    try:
        yield driver
    finally:
        driver.close()


def _amp_changes(intent: AmpIntent, current: AmpSettings) -> dict[str, tuple[Any, Any]]:
    changes: dict[str, tuple[Any, Any]] = {}
    if intent.mode is not None and intent.mode != current.mode:
        changes["mode"] = (current.mode, intent.mode)
    for name, wanted, now in (("gain_db", intent.gain_db, current.target_gain_db),
                              ("output_power_dbm", intent.output_power_dbm,
                               current.target_output_power_dbm),
                              ("tilt_db", intent.tilt_db, current.target_tilt_db)):
        if wanted is not None and (now is None or abs(now - wanted) > GAIN_EPSILON_DB):
            changes[name] = (now, wanted)
    return changes


def make_plan(access: FabricAccess, intent: FabricIntent, resume: Resume | None = None,
              leftovers: dict[str, str] | None = None) -> FabricPlan:
    """Read every device the intent touches (in parallel) and plan; changes nothing."""
    inventory = access.inventory
    journal = access.journal
    plan = FabricPlan(intent, resume=resume)
    leftovers = leftovers or {}
    candidates = _restart_candidates(intent, inventory)

    def plan_switch(name: str) -> SwitchStep:
        wanted = intent.switches[name]
        pending = Fleet(journal, access.switch_target).pending(name)
        if pending is not None and str(pending.get("persist_id")) != leftovers.get(name):
            raise ValidationError(
                f"{name} has a pending confirmed commit {pending.get('persist_id')} (until "
                f"{pending.get('confirm_deadline')}): settle it first with 'msoctl switch cc "
                f"confirm|cancel {name}'", device=name)
        with SwitchSession(access.switch_target(name)) as session:
            switch_plan = session.plan(wanted.want)
        return SwitchStep(name, wanted.want, wanted.source, switch_plan.changes,
                          switch_plan.method, leftovers.get(name))

    def plan_ocs(name: str) -> OcsStep:
        with _ocs(access, name) as driver:
            current = driver.port_map()
        wanted, reasons = wanted_map(name, current, intent, inventory)
        return OcsStep(name, plan_map(name, current, wanted), reasons)

    def plan_amp(name: str) -> tuple[AmpStep | None, RestartStep | None]:
        with _amp(access, name) as driver:
            status = driver.status()
            step = None
            wanted = intent.amplifiers.get(name)
            if wanted is not None:
                try:
                    driver.check_targets(gain_db=wanted.gain_db,
                                         output_power_dbm=wanted.output_power_dbm,
                                         tilt_db=wanted.tilt_db)
                except ValidationError as error:
                    raise ValidationError(f"{intent.where(wanted.line)}: amplifier {name!r}: "
                                          f"{error.message}") from None
                step = AmpStep(name, wanted, status.settings,
                               _amp_changes(wanted, status.settings))
        restart = None if name not in candidates else \
            RestartStep(name, candidates[name], status.monitors.als_state)
        return step, restart

    amp_names = sorted({*intent.amplifiers, *candidates})
    work: list[Callable[[], Any]] = [
        *(lambda n=n: plan_switch(n) for n in sorted(intent.switches)),
        *(lambda n=n: plan_ocs(n) for n in _ocs_names(intent, inventory)),
        *(lambda n=n: plan_amp(n) for n in amp_names)]
    with ThreadPoolExecutor(max_workers=max(1, len(work)), thread_name_prefix="plan") as pool:
        results = [future.result() for future in [pool.submit(task) for task in work]]
    for result in results:
        if isinstance(result, SwitchStep):
            plan.switches.append(result)
        elif isinstance(result, OcsStep):
            plan.ocs.append(result)
        else:
            amp_step, restart = result
            if amp_step is not None:
                plan.amps.append(amp_step)
            if restart is not None:
                plan.restarts.append(restart)
    plan.verify_links = [name for name, link in intent.links.items() if link.up]
    plan.impacts = fabric_impacts(access, plan)
    return plan


def fabric_impacts(access: FabricAccess, plan: FabricPlan) -> list[Impact]:
    """What the whole plan does to the inventory's links: each OCS map step, each switch's
    changes, each amplifier setting on a span carrying a link."""
    inventory = access.inventory
    drained = set(LinkStates(access.journal).drained())
    maps: dict[str, dict[int, int] | None] = {o.device: dict(o.plan.current) for o in plan.ocs}

    def read_map(name: str) -> dict[int, int] | None:
        if name not in maps:
            try:
                with _ocs(access, name) as driver:
                    maps[name] = dict(driver.port_map())
            except DeviceError:
                maps[name] = None
        return maps[name]

    found: list[Impact] = []
    for o in plan.ocs:
        found += impact.ocs_map(inventory, o.device, o.plan.current, o.plan.wanted, drained,
                                read_map=read_map)
    for s in plan.switches:
        found += impact.switch_config(inventory, s.device, s.changes, drained,
                                      read_map=read_map)
    for a in plan.amps:
        if a.changes:
            found += impact.amplifier(inventory, a.device, "disturbed",
                                      "the light level on its span changes", read_map, drained)
    return impact.worst_first(found)


# ---- resume -------------------------------------------------------------------------------


def find_resume(journal: Journal, intent: FabricIntent) -> Resume | None:
    """The last apply of this intent file, if it was interrupted or failed."""
    last = next((o for o in journal.newest_first(FABRIC, action=ACTION)
                 if o.intent.get("file") == str(intent.path)), None)
    if last is None or last.status not in ("interrupted", "failed"):
        return None
    pids: set[int] = set()
    hosts: set[str] = set()
    since = last.started
    seen: set[str] = set()
    chain: Operation | None = last
    while chain is not None and chain.op not in seen:  # the runs this one continued
        seen.add(chain.op)
        since = min(since, chain.started)
        pid = chain.intent.get("pid")
        if isinstance(pid, int):
            pids.add(pid)
        hosts.add(str(chain.intent.get("host")))
        earlier = chain.intent.get("resumes")
        chain = journal.operation(str(earlier)) if earlier else None
        if chain is not None and (chain.device != FABRIC or chain.action != ACTION
                                  or chain.intent.get("file") != str(intent.path)):
            chain = None
    done = [str(r.get("step")) for r in last.records
            if r.get("event") == "step" and r.get("status") in ("done", "in place")]
    failed = (last.result or {}).get("failed_step")
    return Resume(last.op, last.status, last.started, done,
                  None if failed is None else str(failed),
                  last.intent.get("intent_sha256") == intent.sha256, pids, hosts,
                  orphaned=last.orphaned, since=since)


def switch_leftovers(journal: Journal, intent: FabricIntent, resume: Resume | None
                     ) -> dict[str, str]:
    """Switch -> persist id of a confirmed commit the runs of ``resume`` left pending."""
    if resume is None:
        return {}
    found: dict[str, str] = {}
    for name in intent.switches:
        # only what the resumed runs can have left: the switch's operations since they began
        ops = journal.operations(name, since=resume.since)
        settled = {str(o.intent.get("persist_id")) for o in ops
                   if o.action in (CONFIRM, CANCEL) and o.status == "ok"}
        for op in ops:
            token = op.intent.get("persist_id")
            if (op.action == APPLY and token and str(token) not in settled
                    and op.status in ("pending", "interrupted")
                    and op.intent.get("pid") in resume.pids
                    and str(op.intent.get("host")) in resume.hosts):
                found[name] = str(token)
    return found


def _close_interrupted(journal: Journal, device: str, change: Change, found: str) -> None:
    for operation in journal.interrupted(device):
        if journal.close(operation, {"device": device, "action": operation.action,
                                     "status": "interrupted", "resolved_by": change.op,
                                     "found": found}):
            change.note("recovered", interrupted_op=operation.op, interrupted_device=device)


# ---- apply ---------------------------------------------------------------------------------


def _steps_found(report: ApplyReport) -> dict[str, Any]:
    """How far an interrupted or failed apply got; each device's own operation records
    what that device holds (its own read-back)."""
    planned = report.plan.step_ids()
    done = [s.step for s in report.steps if s.status == "done"]
    settled = {s.step for s in report.steps if s.status in ("done", "in place")}
    if planned and settled >= set(planned):
        state = "applied"
    elif not done:
        state = "not applied"
    else:
        state = "partly applied"
    return {"state": state, "steps_done": done,
            "steps_left": [step for step in planned if step not in settled]}


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

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "file": str(self.plan.intent.path),
                "resumed": None if self.plan.resume is None else self.plan.resume.as_dict(),
                "cancelled_pending_commits": self.cancelled_leftovers,
                "steps": [s.as_dict() for s in self.steps],
                "light": None if self.light is None else self.light.as_dict()}


Report = Callable[[str], None]


class _Run:
    """One apply: the steps in order, each recorded in the fabric operation."""

    def __init__(self, access: FabricAccess, plan: FabricPlan, change: Change,
                 report: ApplyReport, say: Report, *, allow_delete: bool = False):
        self.access = access
        self.journal = access.journal
        self.inventory = access.inventory
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
        fleet = Fleet(self.journal, self.access.switch_target,
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
                    self.record(s.step, "done", f"{len(outcome.changes)} change(s) "
                                                "committed")
            for s in todo:  # every switch verified: confirm them all
                if s.device not in pending:
                    continue
                self.change.outcome["failed_step"] = s.step
                fleet.settle(s.device, CONFIRM, pending[s.device])
                del pending[s.device]
                self.record(s.step, "done", f"{len(s.changes)} change(s): confirmed commit, "
                                            "read back over a new session, confirmed")
        except BaseException:
            for device, token in pending.items():  # all or nothing
                with suppress(DeviceError):
                    fleet.settle(device, CANCEL, token)
            raise
        self.change.outcome.pop("failed_step", None)

    # 2. OCS maps --------------------------------------------------------------------

    def ocs(self, step: OcsStep) -> None:
        with self.step(step.step), _ocs(self.access, step.device) as driver:
            current = driver.port_map()  # again: someone may have changed it since
            wanted, reasons = wanted_map(step.device, current, self.plan.intent,
                                         self.inventory)
            plan = plan_map(step.device, current, wanted)
            if plan.method == "none":
                close_interrupted(self.journal, step.device, current, self.change)
                self.record(step.step, "in place", "the map is as wanted")
                return
            step.plan, step.reasons = plan, reasons
            result = apply_plan(driver, plan, journal=self.journal,
                                device=self.inventory.device(step.device, "ocs"),
                                action="ocs.apply")
            lit = sum(1 for p in result.light if p.status == "ok")
            self.record(step.step, "done",
                        f"{len(plan.diff.remove)} removed, {len(plan.diff.add)} added "
                        f"({plan.method}) in {result.seconds * 1000:.0f} ms; "
                        f"{lit} lit path(s) pass light")

    # 3. amplifier settings -----------------------------------------------------------

    def amp(self, step: AmpStep) -> None:
        with self.step(step.step), _amp(self.access, step.device) as driver:
            changes = _amp_changes(step.intent, driver.settings())
            _close_interrupted(self.journal, step.device, self.change,
                               "the settings were read again")
            if not changes:
                self.record(step.step, "in place", "the settings are as wanted")
                return
            wanted = {name: new for name, (_, new) in changes.items()}
            result = set_amplifier(self.journal, self.inventory.device(step.device, "amp"),
                                   driver, **wanted, fabric_op=self.change.op)
            ramp = (f", gain ramped in {len(result.gain_steps_db)} steps"
                    if len(result.gain_steps_db) > 1 else "")
            self.record(step.step, "done", ", ".join(
                f"{name} {old} -> {new}" for name, (old, new) in changes.items()) + ramp)

    # 4. amplifier restarts ---------------------------------------------------------------

    def restart(self, step: RestartStep) -> None:
        with self.step(step.step), _amp(self.access, step.device) as driver:
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
                light = show(self.access, self.inventory, links,
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


def apply(access: FabricAccess, intent: FabricIntent, *,
          say: Report = lambda line: None, force: bool = False,
          allow_delete: bool = False) -> ApplyReport:
    """Apply ``intent`` (see the module docstring); ``say`` hears each step as it ends.

    Refused before any step, the fabric operation's result ``refused`` and
    :class:`SafetyInterlock` raised (exit 3), when the plan takes an in-service link down
    (unless ``force``) or a switch's WANT tree would delete configuration it does not name
    (unless ``allow_delete``)."""
    report, refusal = _apply(access, intent, say, force=force, allow_delete=allow_delete)
    if refusal is not None:
        raise SafetyInterlock(refusal)
    return report


def _apply(access: FabricAccess, intent: FabricIntent, say: Report, *, force: bool,
           allow_delete: bool) -> tuple[ApplyReport, str | None]:
    journal = access.journal
    with DeviceLock(journal, FABRIC):
        resume = find_resume(journal, intent)
        with journal.change(device=FABRIC, action=ACTION, file=str(intent.path),
                            intent_sha256=intent.sha256,
                            resumes=None if resume is None else resume.op) as change:
            if resume is not None:
                say(f"resuming fabric operation {resume.op} ({resume.status}"
                    + (f" at step {resume.failed_step}" if resume.failed_step else "")
                    + f"; {len(resume.done)} step(s) done): device state read again"
                    + ("" if resume.same_intent else "; the intent file changed since"))
                if resume.orphaned:
                    journal.close(resume.op, {"device": FABRIC, "action": ACTION,
                                              "status": "interrupted",
                                              "resolved_by": change.op,
                                              "found": f"{len(resume.done)} step(s) done: "
                                                       f"{', '.join(resume.done) or 'none'}"})
            leftovers = switch_leftovers(journal, intent, resume)
            report = ApplyReport(change.op, FabricPlan(intent, resume=resume))
            change.read_back = lambda: _steps_found(report)
            fleet = Fleet(journal, access.switch_target)
            for device, token in leftovers.items():
                with suppress(ValidationError):  # already gone: confirmed, or timed out
                    fleet.settle(device, CANCEL, token)
                    report.cancelled_leftovers[device] = token
                    say(f"switch:{device}: cancelled commit {token} an earlier run left "
                        "pending")
                _close_interrupted(journal, device, change,
                                   "its pending commit was cancelled by a resumed fabric apply")
            plan = make_plan(access, intent, resume, leftovers)
            report.plan = plan
            change.note("planned", steps=plan.step_ids(), changes=plan.changes,
                        impact=[i.as_dict() for i in plan.impacts])
            refusal = _refusal(plan, force=force, allow_delete=allow_delete, change=change)
            if refusal is not None:
                change.status = "refused"
                change.outcome["reason"] = refusal
                return report, refusal
            run = _Run(access, plan, change, report, say, allow_delete=allow_delete)
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
