"""``msoctl fabric plan``: one intent for the whole fabric (:mod:`msoctl.fabric.intent`),
planned as one diff across devices; :mod:`msoctl.fabric.apply` carries the plan out.

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

Resume
    :func:`find_resume` finds the earlier apply of the same intent file that a rerun
    continues, :func:`switch_leftovers` the confirmed commits it left pending (see
    :mod:`msoctl.fabric.apply`, "Journal and resume").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from drivers.amp.driver import AmpDriver
from drivers.amp.types import AmpSettings
from drivers.errors import DeviceError, ValidationError
from drivers.ocs import OcsDriver, PortMap
from drivers.switch.session import open_session
from drivers.switch.tree import Change as TreeChange
from msoctl import impact
from msoctl.access import Devices
from msoctl.fabric.intent import AmpIntent, FabricIntent
from msoctl.impact import Impact
from msoctl.inventory import Inventory
from msoctl.journal import Journal, Operation
from msoctl.links import Link
from msoctl.linkstate import LinkStates
from msoctl.ops.ocs import OcsPlan, plan_map
from msoctl.ops.switch import APPLY, CANCEL, CONFIRM, Fleet, Want, deletions

FABRIC = "fabric"
"""The journal's device name for fabric operations (and the name of their lock)."""
ACTION = "fabric.apply"
GAIN_EPSILON_DB = 0.005


# ---- the plan ---------------------------------------------------------------------------


@dataclass
class SwitchStep:
    device: str
    want: Want
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
def opened_ocs(devices: Devices, name: str) -> Iterator[OcsDriver]:
    """OCS ``name`` open for the ``with`` block, closed after it."""
    driver = devices.ocs(name)
    try:
        yield driver
    finally:
        driver.close()


@contextmanager
def opened_amp(devices: Devices, name: str) -> Iterator[AmpDriver]:
    """Amplifier ``name`` open for the ``with`` block, closed after it."""
    driver = devices.amp(name)
    try:
        yield driver
    finally:
        driver.close()


def amp_changes(intent: AmpIntent, current: AmpSettings) -> dict[str, tuple[Any, Any]]:
    """Setting -> (current, wanted) for each setting the intent names that differs (gain,
    output power and tilt by more than :data:`GAIN_EPSILON_DB`)."""
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


def make_plan(devices: Devices, journal: Journal, intent: FabricIntent,
              resume: Resume | None = None, leftovers: dict[str, str] | None = None
              ) -> FabricPlan:
    """Read every device the intent touches (in parallel) and plan; changes nothing."""
    inventory = devices.inventory
    plan = FabricPlan(intent, resume=resume)
    leftovers = leftovers or {}
    candidates = _restart_candidates(intent, inventory)

    def plan_switch(name: str) -> SwitchStep:
        wanted = intent.switches[name]
        pending = Fleet(journal, devices.switch_target).pending(name)
        if pending is not None and str(pending.get("persist_id")) != leftovers.get(name):
            raise ValidationError(
                f"{name} has a pending confirmed commit {pending.get('persist_id')} (until "
                f"{pending.get('confirm_deadline')}): settle it first with 'msoctl switch cc "
                f"confirm|cancel {name}'", device=name)
        with open_session(devices.switch_target(name)) as session:
            switch_plan = session.plan(wanted.want)
        return SwitchStep(name, wanted.want, wanted.source, switch_plan.changes,
                          switch_plan.method, leftovers.get(name))

    def plan_ocs(name: str) -> OcsStep:
        with opened_ocs(devices, name) as driver:
            current = driver.port_map()
        wanted, reasons = wanted_map(name, current, intent, inventory)
        return OcsStep(name, plan_map(name, current, wanted), reasons)

    def plan_amp(name: str) -> tuple[AmpStep | None, RestartStep | None]:
        with opened_amp(devices, name) as driver:
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
                               amp_changes(wanted, status.settings))
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
    plan.impacts = fabric_impacts(devices, journal, plan)
    return plan


def fabric_impacts(devices: Devices, journal: Journal, plan: FabricPlan) -> list[Impact]:
    """What the whole plan does to the inventory's links: each OCS map step, each switch's
    changes, each amplifier setting on a span carrying a link."""
    inventory = devices.inventory
    drained = set(LinkStates(journal).drained())
    maps: dict[str, dict[int, int] | None] = {o.device: dict(o.plan.current) for o in plan.ocs}

    def read_map(name: str) -> dict[int, int] | None:
        if name not in maps:
            try:
                with opened_ocs(devices, name) as driver:
                    maps[name] = dict(driver.port_map())
            except DeviceError:
                maps[name] = None
        return maps[name]

    planned = {o.device: dict(o.plan.wanted) for o in plan.ocs}

    def read_after(name: str) -> dict[int, int] | None:  # the plan moves both ends at once
        return planned[name] if name in planned else read_map(name)

    found: list[Impact] = []
    for o in plan.ocs:
        found += impact.ocs_map(inventory, o.device, o.plan.current, o.plan.wanted, drained,
                                read_map=read_map, read_after=read_after)
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


