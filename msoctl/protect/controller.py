"""The protection controller: watch the spans that carry links, and on loss of light move
the links' OCS cross-connects to the protection span, then verify that light arrives.

How it runs (README.md, "Optical protection", has the operator's view; the pieces:
watch.py the device sessions and pollers, light.py the light, the hysteresis and the
map moves, moves.py the changes and the light check, config.py the settings and
events):

- Watching. One thread per device keeps a persistent session (watch.py):
  each OCS is asked for its power monitors every poll (default 5 ms, one query), its
  map every 100 ms; each amplifier on a span for its monitors and ALS state every
  50 ms. Every new reading wakes the decision loop, which judges each span direction
  (light.py): lit, lost (its source is lit, its far end dark), unlit
  (nothing lit feeds it) or unknown (a device did not answer lately).
- Deciding, per link. The span that carries the link now (read from the maps) is the
  *active* span, the other the *standby*. When the active span is lost for the whole
  hold-off, and the standby is lit in both directions and carries no other link, the
  link moves to the standby: one whole-map command per OCS, both OCSes at once. If
  the standby is dark, nothing is switched and "protection unavailable" is journaled
  (once per outage). On the protection span, in revertive mode, the link moves back
  once the working span has been lit for the whole wait-to-restore; in
  non-revertive mode it stays. Hysteresis on every level keeps a level near the
  threshold from flapping.
- Keeping the standby verified. A span that carries nothing is dark, and behind it
  its amplifier's ALS shuts the output after 0.5 s: such a span cannot be told from a
  cut one. So the controller parks an idle light source (a *probe*: a free ingress
  port that carries light, or those named with ``--probe``) on each standby span's
  fiber, and every switch swaps it onto the span the link leaves. Both spans stay lit
  and watched, and a repaired working span shows light, which the wait-to-restore
  needs. An amplifier whose ALS holds its output shut while light is back at its
  input is asked for a restart pulse (journaled), as its own restart timer would do
  minutes later.
- Journaling. Every switch or revert is one journaled change of action
  ``protection.switch`` or ``protection.revert`` (intent before the commands, result
  after the light check) with its timeline: detected, decided, journaled, commands
  sent, devices done, light verified, and the durations between; refusals are
  ``protection.switch`` records of status refused; probes and amplifier restarts are
  ``protection.probe`` and ``protection.als_restart`` changes; the run itself is a
  ``protection.run`` change whose notes say when a device stopped or started answering.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from drivers.amp.driver import AmpDriver
from drivers.errors import DeviceError, ValidationError
from drivers.ocs import OcsDriver
from msoctl import safety
from msoctl.access import Devices
from msoctl.inventory import Inventory
from msoctl.journal import Change, DeviceBusy, DeviceLock, Journal, JournalError, locked_change
from msoctl.links import Link, OcsPort
from msoctl.linkstate import LinkStates
from msoctl.protect.config import ProtectConfig, ProtectionEvent
from msoctl.protect.light import (
    DIRECTION_NAMES,
    LIT,
    LOST,
    UNKNOWN,
    AmpReading,
    DirectionLight,
    LightJudge,
    Move,
    MoveConflict,
    feeder_of,
    link_ports,
    link_role,
    map_changes,
    plan_move,
    span_state,
)
from msoctl.protect.moves import LightPoint, OcsActions, connect
from msoctl.protect.watch import AmpWatch, OcsWatch

__all__ = ["ProtectConfig", "ProtectionController", "ProtectionEvent"]

AMP_POLL_SECONDS = 0.05
ALS_RESTART_GAP_SECONDS = 3.0
"""At most one restart request per amplifier this often (a pulse lasts about 2 s)."""
PROBE_RETRY_SECONDS = 1.0
MOVE_RETRY_SECONDS = 0.1
SWITCH_INTERVAL_SECONDS = 0.001
ARMING_SECONDS = 1.0
"""How long to wait at start for a first reading of every amplifier, whose gain the
far-end thresholds behind it need."""
DRAIN_CHECK_SECONDS = 0.2
"""How often the drained links are looked up: a drain takes effect within this."""


@dataclass
class _Decision:
    move: Move
    detected: float  # when the loss (or, for a revert, the restored light) was first seen
    cause: str
    revert: bool = False


@dataclass
class _LinkState:
    link: Link
    role: str | None = None
    loss_since: float | None = None
    cause: str | None = None
    wtr_since: float | None = None
    unavailable: str | None = None
    pending: Move | None = None  # a move that failed half-way, to finish
    retry_after: float = 0.0
    lights: dict[str, list[DirectionLight]] = field(default_factory=dict)
    seen: bool = False  # the maps have been read once
    drained: bool = False  # out of service (msoctl link drain): watched, never moved


class ProtectionController:
    """Protects ``links`` (default: every link of the inventory with a protection span).

    ``run(stop)`` watches and acts until ``stop`` is set. ``on_event`` is called (from
    the controller's threads) with every :class:`ProtectionEvent`.
    """

    def __init__(self, inventory: Inventory, journal: Journal, *,
                 links: list[str] | None = None, config: ProtectConfig | None = None,
                 on_event: Callable[[ProtectionEvent], None] | None = None):
        self.config = config or ProtectConfig()
        self.config.check()
        self.inventory = inventory
        self.journal = journal
        chosen = ([inventory.link(name) for name in links] if links
                  else [link for link in inventory.links.values() if link.protection])
        if not chosen:
            raise ValidationError(f"{inventory.path}: no link with a protection span to protect")
        for link in chosen:
            if link.protection is None:
                raise ValidationError(f"link {link.name} has no protection span")
        self.links = chosen
        # A controller cannot wait the inventory's 5 s for a device that stopped answering.
        devices = Devices(inventory, at_most_seconds=self.config.device_timeout_seconds)
        self._open_ocs = devices.ocs
        self._open_amp = devices.amp
        self.on_event = on_event
        self.events: deque[ProtectionEvent] = deque(maxlen=1000)
        self.judge = LightJudge(self.config.threshold_dbm, self.config.hysteresis_db)
        self._states = {link.name: _LinkState(link) for link in chosen}
        ports: dict[str, set[int]] = {}
        for link in chosen:
            for ocs, used in link_ports(link).items():
                ports.setdefault(ocs, set()).update(used)
        for probe in self.config.probes:
            inventory.device(probe.ocs, "ocs")
            ports.setdefault(probe.ocs, set()).add(probe.port)
        self._ports = ports
        self._amps = sorted({f.amplifier for link in chosen
                             for span in (link.working, link.protection) if span
                             for f in (span.a_to_b, span.b_to_a) if f.amplifier})
        self._link_tx: dict[str, dict[int, str]] = {}
        self._link_rx: dict[str, dict[int, str]] = {}
        for link in inventory.links.values():
            for end in (link.a, link.b):
                self._link_tx.setdefault(end.tx.ocs, {})[end.tx.port] = link.name
                self._link_rx.setdefault(end.rx.ocs, {})[end.rx.port] = link.name
        self._changed = threading.Event()
        self._lock = threading.Lock()
        self._watches: dict[str, OcsWatch] = {}
        self._amp_watches: dict[str, AmpWatch] = {}
        self._ocs: OcsActions | None = None
        self._run_op: Change | None = None
        self._silent: dict[str, float] = {}
        self._restart_after: dict[str, float] = {}
        self._probe_after: dict[tuple[str, str], float] = {}
        self._sample_times: dict[str, float | None] = {}
        self._map_valid_after: dict[str, float] = {}
        self._started = 0.0
        self._mono0, self._wall0 = time.monotonic(), time.time()
        self._thread_failure: list[BaseException] = []
        self._link_states = LinkStates(journal)
        self._drains_read = -DRAIN_CHECK_SECONDS
        self.counts = {"switch": 0, "revert": 0, "unavailable": 0, "failed": 0, "dip": 0}

    # ---- running -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Watch and protect until ``stop`` is set; then close every session."""
        names = ",".join(link.name for link in self.links)
        # The watches, the decision loop and the move workers hand the interpreter to
        # each other at every step of a switch; the default 5 ms switch interval would
        # add up to that much at each hand-over while another thread computes.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, SWITCH_INTERVAL_SECONDS))
        try:
            self._run(names, stop)
        finally:
            sys.setswitchinterval(interval)

    def _run(self, names: str, stop: threading.Event) -> None:
        with ExitStack() as held:
            # One controller per link: a second one would fight the first.
            for link in self.links:
                try:
                    held.enter_context(DeviceLock(self.journal, f"protect-{link.name}"))
                except DeviceBusy as error:
                    raise DeviceBusy(f"{link.name} is already protected by another "
                                     f"controller ({error})") from None
            self._protect(names, stop)

    def _protect(self, names: str, stop: threading.Event) -> None:
        with self.journal.change(device=names, action="protection.run",
                                 links=[link.name for link in self.links],
                                 **self.config.as_dict()) as run_op:
            self._run_op = run_op
            self._start()
            try:
                while not stop.is_set():
                    self._changed.wait(self.config.poll_seconds)
                    self._changed.clear()
                    try:
                        self._evaluate()
                    except JournalError as error:
                        self._emit("error", None, f"journal: {error}")
                        stop.wait(1.0)
                    except Exception as error:  # report, keep protecting
                        self._emit("error", None, f"internal error: "
                                   f"{type(error).__name__}: {error}")
                        stop.wait(0.1)
            finally:
                self._close()
                run_op.outcome.update(self.counts)

    def _start(self) -> None:
        self._started = time.monotonic()
        self._ocs = OcsActions(sorted(self._ports), self._open_ocs)
        for name, ports in sorted(self._ports.items()):
            self._watches[name] = OcsWatch(name, self._open_ocs, ports,
                                           poll_seconds=self.config.poll_seconds,
                                           notify=self._changed.set)
        for name in self._amps:
            self._amp_watches[name] = AmpWatch(name, self._open_amp,
                                               poll_seconds=AMP_POLL_SECONDS,
                                               notify=self._changed.set)
        for watch in self._all_watches():
            watch.start()
        self._ocs.warm()

    def _close(self) -> None:
        for watch in self._all_watches():
            watch.stop()
        for watch in self._all_watches():
            watch.join(timeout=2 * self.config.device_timeout_seconds + 1)
        if self._ocs is not None:
            self._ocs.close()

    @contextmanager
    def background(self) -> Iterator[ProtectionController]:
        """Run in a thread for the ``with`` block (the demo, tests, the benchmark); an
        error that ends the run early is raised when the block ends."""
        stop = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                self.run(stop)
            except BaseException as error:  # handed to the caller below
                failure.append(error)

        thread = threading.Thread(target=run, name="protect", daemon=True)
        thread.start()
        self._thread_failure = failure
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=2 * self.config.device_timeout_seconds + 10)
        if failure:
            raise failure[0]

    def wait_ready(self, timeout_seconds: float = 10.0) -> bool:
        """Wait until every link is on a span and both its spans are lit (probes parked,
        amplifiers restarted); whether that happened within the timeout."""
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._thread_failure:
                raise self._thread_failure[0]
            if all(link["role"] is not None and link["working"]["light"] == LIT
                   and link["protection"]["light"] == LIT for link in self.status()):
                return True
            time.sleep(0.01)
        return False

    def _all_watches(self) -> list[OcsWatch | AmpWatch]:
        return [*self._watches.values(), *self._amp_watches.values()]

    def wall(self, monotonic: float | None) -> str | None:
        """ISO 8601 UTC time of a monotonic instant, to the millisecond."""
        if monotonic is None:
            return None
        when = datetime.fromtimestamp(self._wall0 + monotonic - self._mono0, UTC)
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _emit(self, kind: str, link: str | None, message: str, **extra: Any) -> ProtectionEvent:
        event = ProtectionEvent(kind, link, message, time.monotonic(), **extra)
        with self._lock:
            self.events.append(event)
            if kind in self.counts:
                self.counts[kind] += 1
        if self.on_event is not None:
            self.on_event(event)
        return event

    # ---- what the controller sees ---------------------------------------------------------------

    def _views(self, now: float) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        stale = self.config.stale_seconds
        powers: dict[str, Mapping[int, float | None] | None] = {}
        maps: dict[str, Mapping[int, int] | None] = {}
        for name, watch in self._watches.items():
            sample = watch.sample
            fresh = (sample is not None and watch.down_since is None
                     and now - sample.taken <= stale)
            powers[name] = sample.powers if fresh and sample else None
            # A map read before our own last change of it is not the map any more.
            current = (sample is not None and sample.map_taken is not None
                       and sample.map_taken >= self._map_valid_after.get(name, 0.0))
            maps[name] = sample.port_map if fresh and sample and current else None
            self._sample_times[name] = sample.taken if sample else None
        amps: dict[str, AmpReading | None] = {}
        for name, amp_watch in self._amp_watches.items():
            reading = amp_watch.sample
            amps[name] = (reading if reading is not None and amp_watch.down_since is None
                          and now - reading.taken <= 4 * AMP_POLL_SECONDS + stale else None)
        return powers, maps, amps

    def _check_drains(self, now: float) -> None:
        """Which links are drained, read every DRAIN_CHECK_SECONDS (a small file beside the
        journal, re-parsed only when it changed); each change of state is an event."""
        if now - self._drains_read < DRAIN_CHECK_SECONDS:
            return
        self._drains_read = now
        drained = self._link_states.drained()
        for state in self._states.values():
            entry = drained.get(state.link.name)
            if (entry is not None) == state.drained:
                continue
            with self._lock:
                state.drained = entry is not None
            state.loss_since = state.wtr_since = None
            state.unavailable, state.pending = None, None
            if entry is not None:
                self._emit("drained", state.link.name, f"{state.link.name}: drained by "
                           f"{entry.user} since {entry.since}; left alone until undrained")
            else:
                self._emit("undrained", state.link.name,
                           f"{state.link.name}: back in service; protected again")

    def _evaluate(self) -> None:
        now = time.monotonic()
        self._check_drains(now)
        self._report_devices(now)
        powers, maps, amps = self._views(now)
        arming = (now - self._started < ARMING_SECONDS
                  and any(w.sample is None for w in self._amp_watches.values()))
        decisions: list[_Decision] = []
        for state in self._states.values():
            decision = self._judge(state, now, powers, maps, amps, arming)
            if decision is not None:
                decisions.append(decision)
        if decisions:
            self._make_moves(decisions, powers)
        if self.config.restart_amplifiers:
            self._restart_amplifiers(now, amps)
        if self.config.use_probes and not decisions:
            self._keep_probes(now, maps)

    def _report_devices(self, now: float) -> None:
        for watch in self._all_watches():
            sample = watch.sample
            # Readings older than stale_seconds are not judged; a device is reported
            # silent only when a read failed or none has come for a device timeout (a
            # busy host can delay a poll by a few hundred ms).
            stale = sample is not None and now - sample.taken > max(
                self.config.device_timeout_seconds, 4 * watch.poll_seconds)
            silent = watch.down_since is not None or stale
            name = watch.device
            if silent and name not in self._silent:
                self._silent[name] = watch.down_since or (sample.taken if sample else now)
                why = watch.error or f"no reading for {now - self._silent[name]:.2f} s"
                self._emit("device_down", None, f"{name}: not answering ({why}); what runs "
                           "through it is not protected until it answers")
                self._note("device_down", name, error=why)
            elif not silent and name in self._silent and sample is not None:
                since = self._silent.pop(name)
                self._emit("device_up", None,
                           f"{name}: answering again after {now - since:.2f} s")
                self._note("device_up", name, silent_seconds=round(now - since, 3))

    def _note(self, event: str, device: str, **details: Any) -> None:
        if self._run_op is not None:
            try:
                self._run_op.note(event, subject=device, **details)
            except JournalError as error:
                self._emit("error", None, f"journal: {error}")

    # ---- deciding -------------------------------------------------------------------------

    def _judge(self, state: _LinkState, now: float, powers: dict[str, Any],
               maps: dict[str, Any], amps: dict[str, Any], arming: bool) -> _Decision | None:
        link = state.link
        assert link.protection is not None
        reachable = all(maps.get(name) is not None for name in link.ocs_names)
        readings = {"powers": powers, "maps": maps, "amps": amps}
        lights = {"working": self.judge.span(link.working, **readings),
                  "protection": self.judge.span(link.protection, **readings)}
        with self._lock:
            state.lights = lights
        if state.drained:  # out of service: its darkness is work in progress, not a failure
            return None
        if not reachable or arming:
            state.loss_since = state.wtr_since = None
            return None
        role = link_role(link, maps)
        if not state.seen:
            state.seen = True
            self._close_interrupted(link, role)
        if role != state.role:
            if role is not None and state.role is not None:
                self._emit("role", link.name, f"{link.name}: now on {link.span(role).name} "
                           f"({role}), changed outside the controller")
            with self._lock:
                state.role = role
            state.loss_since = state.wtr_since = None
            state.unavailable = None
        if role is None:
            if state.pending is not None and now >= state.retry_after:
                return _Decision(state.pending, now, "finishing a move that failed half-way")
            return None
        state.pending = None
        standby_role = "protection" if role == "working" else "working"
        active, standby = lights[role], lights[standby_role]
        if span_state(active) == UNKNOWN:
            # No fresh reading (a device slow or silent): no news is not light. An outage
            # goes on, a wait-to-restore starts again; nothing is decided on it.
            state.wtr_since = None
            return None
        if span_state(active) == LOST:
            state.wtr_since = None
            if state.loss_since is None:
                lost = [d for d in active if d.state == LOST]
                state.loss_since = min(self._sample_times.get(d.fiber.end.ocs) or now
                                       for d in lost)
                state.cause = "; ".join(f"{d.span} {DIRECTION_NAMES[d.direction]}: "
                                        f"{d.reason}" for d in lost)
            if now - state.loss_since < self.config.hold_off_seconds or now < state.retry_after:
                return None
            why_not = self._unavailable(link, standby_role, standby)
            if why_not is None:
                assert state.cause is not None
                return _Decision(Move(link, role, standby_role), state.loss_since, state.cause)
            # Journaled once per outage, not once per poll: the readings change, and so may
            # the words for the standby's darkness (unlit while its probe is re-parked,
            # lost while its amplifier's ALS holds it shut). A changed reason is an event.
            if state.unavailable is None:
                self._refuse(state, why_not)
            elif why_not.split(" (")[0] != state.unavailable.split(" (")[0]:
                state.unavailable = why_not
                self._emit("unavailable", link.name, f"{link.name}: still not switched: "
                           f"protection unavailable: {why_not}", details={"cause": state.cause})
            return None
        if state.loss_since is not None:
            lasted = (now - state.loss_since) * 1000
            if state.unavailable is not None:
                self._emit("restored", link.name, f"{link.name}: light back on "
                           f"{link.span(role).name} after {lasted:.0f} ms, without a switch")
            else:
                self._emit("dip", link.name, f"{link.name}: a loss of {lasted:.0f} ms on "
                           f"{link.span(role).name} ended within the hold-off; no switch",
                           details={"lasted_ms": round(lasted, 1), "cause": state.cause})
            state.loss_since, state.unavailable = None, None
        if role == "protection" and self.config.revertive:
            if span_state(lights["working"]) == LIT:
                if state.wtr_since is None:
                    state.wtr_since = now
                elif now - state.wtr_since >= self.config.wait_to_restore_seconds:
                    waited = now - state.wtr_since
                    return _Decision(Move(link, "protection", "working"), state.wtr_since,
                                     f"{link.working.name} lit for {waited:.2f} s "
                                     f"(wait-to-restore {self.config.wait_to_restore_seconds:g} s)",
                                     revert=True)
            else:
                state.wtr_since = None
        return None

    def _close_interrupted(self, link: Link, role: str | None) -> None:
        """Close the protection operations on ``link`` that a killed controller left open,
        saying where the link was found."""
        found = ("not connected on either span" if role is None
                 else f"{link.name} on {link.span(role).name} ({role})")
        for operation in self.journal.operations(mentions=link.name,
                                                 action_prefix="protection.", open_only=True):
            if operation.orphaned and self.journal.close(operation, {
                    "device": operation.device, "action": operation.action,
                    "status": "interrupted",
                    "resolved_by": self._run_op.op if self._run_op else None, "found": found}):
                self._emit("role", link.name, f"{link.name}: {operation.action} "
                           f"{operation.op} of {operation.started} was interrupted; "
                           f"found {found}")

    def _unavailable(self, link: Link, role: str, lights: list[DirectionLight]) -> str | None:
        """Why the link may not move to the span of ``role`` now, or ``None``."""
        span = link.span(role)
        for light in lights:
            carrier = self._link_tx.get(light.fiber.start.ocs, {}).get(light.feeder or 0)
            if carrier is not None and carrier != link.name:
                return f"{span.name} carries {carrier}"
        state = span_state(lights)
        if state == LIT:
            return None
        details = "; ".join(f"{DIRECTION_NAMES[d.direction]}: {d.reason}" for d in lights
                            if d.state != LIT)
        return f"{role} span {span.name} is {'dark' if state == LOST else state} ({details})"

    def _refuse(self, state: _LinkState, why_not: str) -> None:
        link, state.unavailable = state.link, why_not
        reason = f"protection unavailable: {why_not}"
        self.journal.refuse(device=link.name, action="protection.switch", reason=reason,
                            exit_code=1, cause=state.cause,
                            detected=self.wall(state.loss_since))
        self._emit("unavailable", link.name, f"{link.name}: loss of light ({state.cause}); "
                   f"not switched: {reason}", details={"cause": state.cause})

    # ---- acting ---------------------------------------------------------------------------

    @property
    def ocs(self) -> OcsActions:
        assert self._ocs is not None, "controller not started"
        return self._ocs

    def _make_moves(self, decisions: list[_Decision], powers: dict[str, Any]) -> None:
        """Carry out ``decisions`` together (both ends of every link at once), after the
        lit-port rule; a move that fails is tried again later."""
        decided = time.monotonic()
        names = sorted({name for d in decisions for name in d.move.link.ocs_names})
        revert = all(d.revert for d in decisions)
        action = "protection.revert" if revert else "protection.switch"
        label = ",".join(d.move.link.name for d in decisions)
        if not self._safe(decisions, powers):
            return
        try:
            with self._locked(names):
                self._move(decisions, names, action, label, decided)
        except DeviceBusy as error:
            self._emit("failed", label, f"{label}: not switched yet: {error}")
            self._retry_later(decisions, decided)
        except (DeviceError, JournalError) as error:
            self._emit("failed", label, f"{label}: {action} failed: {error}")
            self._retry_later(decisions, decided)

    @contextmanager
    def _locked(self, names: list[str]) -> Iterator[None]:
        with ExitStack() as stack:
            for name in names:
                stack.enter_context(DeviceLock(self.journal, name))
            yield

    def _retry_later(self, decisions: list[_Decision], now: float) -> None:
        for decision in decisions:
            state = self._states[decision.move.link.name]
            state.retry_after = now + MOVE_RETRY_SECONDS
            state.pending = decision.move

    def _safe(self, decisions: list[_Decision], powers: dict[str, Any]) -> bool:
        """The safety rule on switching lit ports, from the latest readings."""
        for decision in decisions:
            link = decision.move.link
            for name, ports in link_ports(link).items():
                limit = self.inventory.device(name, "ocs").max_switch_power_dbm
                violations = safety.ocs_lit_ports(powers.get(name) or {}, ports, limit)
                if violations:
                    message = violations[0].message
                    self.journal.refuse(device=link.name, action="protection.switch",
                                        reason=f"{name}: {message}", exit_code=3,
                                        rule=violations[0].rule)
                    self._emit("failed", link.name, f"{link.name}: not switched: {name}: "
                               f"{message} (safety rule)")
                    self._states[link.name].retry_after = time.monotonic() + 1.0
                    return False
        return True

    def _move(self, decisions: list[_Decision], names: list[str], action: str, label: str,
              decided: float) -> None:
        maps_read = self.ocs.read_maps(names)
        detected = min(d.detected for d in decisions)
        first = decisions[0].move
        with self.journal.change(
            device=label, action=action, links=[d.move.link.name for d in decisions],
            from_span=first.from_span.name, to_span=first.to_span.name,
            cause="; ".join(d.cause for d in decisions), detected=self.wall(detected),
        ) as change:
            journaled = time.monotonic()
            current = {name: future.result() for name, future in maps_read.items()}
            wanted: dict[str, dict[int, int]] = {name: dict(m) for name, (m, _) in
                                                 current.items()}
            try:
                for decision in decisions:
                    link = decision.move.link
                    for name in link.ocs_names:
                        other_tx = [p for p, owner in self._link_tx.get(name, {}).items()
                                    if owner != link.name]
                        other_rx = [p for p, owner in self._link_rx.get(name, {}).items()
                                    if owner != link.name]
                        wanted[name] = dict(plan_move(decision.move, name, wanted[name],
                                                      current[name][1], other_tx=other_tx,
                                                      other_rx=other_rx))
            except MoveConflict as error:
                for decision in decisions:
                    self._states[decision.move.link.name].unavailable = error.message
                raise
            applied = self.ocs.apply({name: wanted[name] for name in names})
            sent = max(a.sent for a in applied.values())
            done = max(a.done for a in applied.values())
            verified, light = self.ocs.verify(
                self._light_points(decisions),
                deadline=done + self.config.verify_timeout_seconds,
                poll_seconds=self.config.poll_seconds)
            switching = self.ocs.switching_ms(names)
            durations = {
                "hold_off": _ms(detected, decided),
                "decide_to_sent": _ms(decided, sent),
                "control_plane": _ms(detected, sent),
                "device": _ms(sent, done),
                "verification": _ms(done, verified),
                "total": _ms(detected, verified),
            }
            change.outcome.update({
                "timeline": {"detected": self.wall(detected), "decided": self.wall(decided),
                             "journaled": self.wall(journaled), "commands_sent": self.wall(sent),
                             "devices_done": self.wall(done),
                             "light_verified": self.wall(verified)},
                "durations_ms": durations,
                "ocs": {name: {"commands_sent": self.wall(a.sent), "done": self.wall(a.done),
                               "device_ms": _ms(a.sent, a.done),
                               "switching_ms": switching.get(name),
                               "changes": map_changes(current[name][0], a.final)}
                        for name, a in applied.items()},
                "light": light,
            })
            revert = action == "protection.revert"
            summary = (f"{'light verified' if verified else 'LIGHT NOT VERIFIED'}: "
                       + (f"{_text(_ms(decided, verified))} after the wait-to-restore ended "
                          f"(control plane {_text(durations['decide_to_sent'])}"
                          if revert else
                          f"{_text(durations['total'])} after detection "
                          f"(control plane {_text(durations['control_plane'])}")
                       + f", devices {_text(durations['device'])}, verification "
                         f"{_text(durations['verification'])})")
            change.outcome["summary"] = summary
            if verified is None:
                change.status = "failed"
                change.outcome["error"] = "light not verified within " \
                    f"{self.config.verify_timeout_seconds:g} s"
        for decision in decisions:
            state = self._states[decision.move.link.name]
            with self._lock:
                state.role = decision.move.to_role
            state.loss_since = state.wtr_since = state.unavailable = state.pending = None
        for name in names:
            self._map_valid_after[name] = applied[name].done
            self._watches[name].refresh_map()
        kind = "revert" if action == "protection.revert" else "switch"
        if verified is None:
            kind = "failed"
        self._emit(kind, label, f"{label}: {first.from_span.name} -> {first.to_span.name} "
                   f"({'; '.join(d.cause for d in decisions)}); {summary}",
                   op=change.op, durations_ms=durations,
                   details={"from_span": first.from_span.name, "to_span": first.to_span.name,
                            "switching_ms": switching, "detected": detected,
                            "light": light})

    def _light_points(self, decisions: list[_Decision]) -> dict[str, dict[int, LightPoint]]:
        """Where light must arrive after the moves: the new span's far ends (behind an
        amplifier, the threshold raised by its gain) and the receivers' egress ports."""
        points: dict[str, dict[int, LightPoint]] = {}
        for decision in decisions:
            link, span = decision.move.link, decision.move.to_span
            for fiber, end in ((span.a_to_b, link.b), (span.b_to_a, link.a)):
                threshold = self.config.threshold_dbm
                if fiber.amplifier:
                    reading = self._amp_watches[fiber.amplifier].sample
                    threshold += self.judge.amp_gain_db(fiber.amplifier, reading) or 0.0
                ocs = points.setdefault(fiber.end.ocs, {})
                ocs[fiber.end.port] = LightPoint(f"{span.name} far end", threshold)
                ocs[end.rx.port] = LightPoint(f"{end.switch} {end.port} receiver", threshold,
                                              upstream=fiber.end.port)
        return points

    # ---- keeping the standby verified ---------------------------------------------------

    def _restart_amplifiers(self, now: float, amps: dict[str, AmpReading | None]) -> None:
        needed = self.config.threshold_dbm + self.config.hysteresis_db
        for name, reading in amps.items():
            if (reading is None or reading.als_state != "shutdown"
                    or reading.module_state != "ModuleReady"
                    or "pump_failure" in reading.conditions
                    or reading.input_dbm is None or reading.input_dbm < needed
                    or now < self._restart_after.get(name, 0.0)):
                continue
            self._restart_after[name] = now + ALS_RESTART_GAP_SECONDS
            self._amp_watches[name].submit(partial(self._als_restart, name, reading=reading))

    def _als_restart(self, name: str, driver: AmpDriver, *, reading: AmpReading) -> None:
        """On the amplifier's own thread: one journaled restart pulse."""
        try:
            with locked_change(self.journal, device=name, action="protection.als_restart",
                               input_power_dbm=reading.input_dbm,
                               reason="light is back at the input while ALS holds the "
                                      "output shut"):
                driver.restart()
        except (DeviceBusy, JournalError) as error:
            self._emit("error", None, f"{name}: no ALS restart: {error}")
            return
        self._emit("als_restart", None, f"{name}: ALS restart requested (input "
                   f"{reading.input_dbm:.1f} dBm is back, output shut)")

    def _keep_probes(self, now: float, maps: dict[str, Any]) -> None:
        """Park a probe on every standby span fiber that nothing feeds."""
        for state in self._states.values():
            link = state.link
            if state.role is None or any(maps.get(n) is None for n in link.ocs_names):
                continue
            standby = link.span("protection" if state.role == "working" else "working")
            for direction in ("a_to_b", "b_to_a"):
                fiber = getattr(standby, direction)
                key = (standby.name, direction)
                start = fiber.start
                if feeder_of(maps[start.ocs], start.port) is not None \
                        or now < self._probe_after.get(key, 0.0):
                    continue
                self._probe_after[key] = now + PROBE_RETRY_SECONDS
                try:
                    probe = self._pick_probe(start.ocs, maps[start.ocs])
                    if probe is None:
                        self._probe_after[key] = now + 30.0
                        self._emit("probe", link.name, f"{standby.name} "
                                   f"{DIRECTION_NAMES[direction]} is not lit and no probe "
                                   f"light is free at {start.ocs}: it cannot be verified, so "
                                   f"{link.name} will not be switched onto it")
                        continue
                    with locked_change(self.journal, device=start.ocs,
                                       action="protection.probe", span=standby.name,
                                       direction=direction, probe=str(probe),
                                       connection=f"{probe.port}:{start.port}"):
                        self.ocs.call(start.ocs, partial(connect,
                                                         pairs={probe.port: start.port}))
                except (DeviceError, DeviceBusy, JournalError) as error:
                    self._emit("error", link.name, f"{link.name}: no probe on "
                               f"{standby.name}: {error}")
                    continue
                self._map_valid_after[start.ocs] = time.monotonic()
                self._watches[start.ocs].refresh_map()
                self._emit("probe", link.name, f"{standby.name} "
                           f"{DIRECTION_NAMES[direction]}: probe light {probe} parked on "
                           f"{start} to keep it verified")

    def _pick_probe(self, ocs: str, port_map: Mapping[int, int]) -> OcsPort | None:
        """A free ingress port of ``ocs`` that carries light and is no link's transmitter:
        one named with ``--probe``, else the highest such port."""
        busy = set(port_map) | set(self._link_tx.get(ocs, {}))
        needed = self.config.threshold_dbm + self.config.hysteresis_db
        if self.config.probes:
            candidates = [p.port for p in self.config.probes if p.ocs == ocs]
        else:
            size = self.ocs.call(ocs, _size)
            candidates = list(range(size, 0, -1))
        candidates = [p for p in candidates if p not in busy]
        if not candidates:
            return None
        powers = self.ocs.call(ocs, partial(_powers, ports=candidates))
        for port in candidates:
            power = powers.get(port)
            if power is not None and power >= needed:
                return OcsPort(ocs, port)
        return None

    # ---- what callers see ------------------------------------------------------------------

    def status(self) -> list[dict[str, Any]]:
        """Per link: the span that carries it, the light on both spans, pending timers."""
        now = time.monotonic()
        found = []
        with self._lock:
            for state in self._states.values():
                link = state.link
                found.append({
                    "link": link.name,
                    "role": state.role,
                    "active_span": None if state.role is None else link.span(state.role).name,
                    "working": {"span": link.working.name,
                                "light": span_state(state.lights.get("working", []))
                                if state.lights else None},
                    "protection": {"span": link.protection.name if link.protection else None,
                                   "light": span_state(state.lights.get("protection", []))
                                   if state.lights else None},
                    "hold_off_running_ms": None if state.loss_since is None
                    else round((now - state.loss_since) * 1000, 1),
                    "wait_to_restore_running_seconds": None if state.wtr_since is None
                    else round(now - state.wtr_since, 3),
                    "unavailable": state.unavailable,
                    "drained": state.drained,
                })
        return found


def _powers(driver: OcsDriver, *, ports: list[int]) -> dict[int, float | None]:
    return driver.power(ports)


def _size(driver: OcsDriver) -> int:
    return driver.size


def _ms(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round((end - start) * 1000, 3)


def _text(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.1f} ms"
