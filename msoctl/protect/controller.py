"""The protection controller: watch the spans that carry links, and on loss of light move
the links' OCS cross-connects to the protection span, then verify that light arrives.

How it runs (README.md, "Optical protection", has the operator's view; the pieces:
watch.py the device sessions and pollers, light.py the light, the hysteresis and the
map moves, moves.py the changes and the light check, config.py the settings and
events):

- Watching. One thread per device keeps a persistent session (watch.py): each OCS
  is asked for its power monitors on every port of every protected link in one query
  per poll, its map every second; each amplifier on a span for its monitors and ALS
  state every 50 ms. How often an OCS is polled follows from the message budget per
  OCS (budget.py, default 50 messages a second): the polls never exceed it, whatever
  the number of links. Every new reading wakes the decision loop, which judges each
  span direction (light.py): lit, lost (its source is lit, its far end dark), unlit
  (nothing lit feeds it) or unknown (a device did not answer lately).
- Deciding, for every link at once. The span that carries a link now (read from the
  maps) is its *active* span, the other its *standby*. Every link whose active span
  has been lost for the whole hold-off is a candidate to move; one evaluation
  allocates the candidates together (allocate.py): a link moves only onto a standby
  span that is lit and free, no span goes to two links, and each link left down gets
  its reason (the span is taken by link X, went to link Y in the same evaluation, or
  is dark), journaled once per outage. On the protection span, in revertive mode, a
  link moves back once the working span has been lit for the whole wait-to-restore;
  in non-revertive mode it stays. Hysteresis on every level keeps a level near the
  threshold from flapping.
- Acting (acting.py): the moves of one evaluation are one journaled change, one
  whole-map command per OCS touched, every OCS at once, and the light verified link
  by link. Each change runs in a worker of its own: the loop goes on deciding while
  it runs (the losses that arrive meanwhile become the next change, sent while this
  one is verified), leaves its links alone and reserves their new spans until it
  ends.
- Keeping the standby verified (standby.py): probe light parked on standby spans,
  amplifiers asked for an ALS restart when light is back at their input.
- Ownership (ownership.py, ha.py): links are in shards (their OCS pair); the
  controller decides and acts only for the shards it owns, and confirms the ownership
  before every device change (fencing). Alone (the default) it owns them all; with
  ``--ha``, instances share them through the journal's PostgreSQL database, a standby
  keeping its watches warm (polling slowly) to take over.
- Journaling. Every evaluation's moves are one journaled change of action
  ``protection.switch`` or ``protection.revert`` (intent before the commands, result
  after the light check) naming every link, with the timeline of the whole change and
  of each link: detected, decided, journaled, commands sent, devices done, light
  verified, and the durations between; refusals are ``protection.switch`` records of
  status refused; probes and amplifier restarts are ``protection.probe`` and
  ``protection.als_restart`` changes; the run itself is a ``protection.run`` change
  whose notes say when a device stopped or started answering.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from drivers.errors import ValidationError
from msoctl.access import Devices
from msoctl.inventory import Inventory
from msoctl.journal import Change, DeviceBusy, DeviceLock, Journal, JournalError, Operation
from msoctl.links import Link, SpanFiber
from msoctl.linkstate import LinkStates
from msoctl.protect.acting import Acting, LinkProgress
from msoctl.protect.alarms import AlarmFeeds
from msoctl.protect.allocate import Candidate, Carriers, Refusal, allocate
from msoctl.protect.budget import QueryBudget
from msoctl.protect.cables import Cables
from msoctl.protect.config import ProtectConfig, ProtectionEvent
from msoctl.protect.light import (
    DIRECTION_NAMES,
    LIT,
    LOST,
    UNKNOWN,
    AmpReading,
    DirectionLight,
    LightJudge,
    link_ports,
    link_role,
    span_state,
    touched_links,
)
from msoctl.protect.moves import OcsActions
from msoctl.protect.ownership import Ownership, SoleOwner, shard_of
from msoctl.protect.standby import KeepingStandby
from msoctl.protect.watch import AmpWatch, OcsWatch
from msoctl.words import counted

__all__ = ["ProtectConfig", "ProtectionController", "ProtectionEvent"]

AMP_POLL_SECONDS = 0.05
TIMER_SECONDS = 0.05
"""The decision loop's tick when no reading comes."""
REJUDGE_EVERY_SECONDS = 1.0
"""Every link is judged at least this often, new readings or not."""
STALE_POLLS = 5
"""An OCS reading older than this many of its watch's poll intervals is not judged."""
SWITCH_INTERVAL_SECONDS = 0.001
GAIN_SETTLED_DB = 0.3
"""An amplifier's gain loop has settled when its gain is this close to its target, or
has moved no more than this since the reading before (one held short of its target, by
its pumps' power say, settles there)."""
ARMING_SECONDS = 1.0
"""How long to wait at start for a first reading of every amplifier, whose gain the
far-end thresholds behind it need."""
DRAIN_CHECK_SECONDS = 0.2
"""How often the drained links are looked up: a drain takes effect within this."""
CHANGES_IN_FLIGHT = 4
"""Changes carried out at once (each in a worker of its own, acting.py): a change being
verified does not hold back the next."""
READY_CHECK_SECONDS = (0.05, 0.5)
"""How often the decision loop looks whether the controller is ready, until it is: at
first, and at most (twice as long after each look that finds it not ready, so that a
controller that stays short of ready, a protection span dark, does not work out every
link's state on the decision's path 20 times a second)."""
GATHER_MIN_SECONDS = 0.01
GATHER_QUIET_SECONDS = 0.01
GATHER_MAX_SECONDS = 0.03
"""A loss is acted on once the other OCSes have had the time to report theirs: at least
GATHER_MIN_SECONDS after the first loss of an outage is seen, longer (up to
GATHER_MAX_SECONDS) while a poll asked for is still outstanding at any OCS (light back,
its reading has not come) or while losses are still arriving (the last one less than
GATHER_QUIET_SECONDS ago). A cable cut darkens links on many OCSes, whose alarms and
polls arrive a few milliseconds apart (from other processes, other hosts): acting on
the first would answer the cut in several changes, each OCS's map written several
times, the later links waiting for the earlier ones' light check. The price is at most
GATHER_MAX_SECONDS of a recovery, shown in each move's ``hold_off`` duration. Where the
inventory names the spans' cables, a gathering ends as soon as every link that the
losses' cables carry has lost its light (msoctl/protect/cables.py): a whole cable cut is
answered when its last link is seen dark, without the wait. The quiet time covers the
spread of one cut's alarms from the units that report it: a lab process (or a host)
that falls behind by more than it splits the cut into two changes, the second waiting
for the first's turns at every OCS they share (seen at 6 ms, on two loaded cores)."""


@dataclass(kw_only=True)
class _LinkState(LinkProgress):
    """A link as the controller follows it (``pending``: a move that failed half-way,
    to finish)."""

    link: Link
    loss_since: float | None = None
    cause: str | None = None
    wtr_since: float | None = None
    lights: dict[str, list[DirectionLight]] = field(default_factory=dict)
    mapped_role: str | None = None  # the span those readings' maps put it on
    seen: bool = False  # the maps have been read once
    owned: bool = False  # this instance acts for it (the shard is ours)
    drained: bool = False  # out of service (msoctl link drain): watched, never moved


class ProtectionController(Acting, KeepingStandby):
    """Protects ``links`` (default: every link of the inventory with a protection span).

    ``run(stop)`` watches and acts until ``stop`` is set. ``on_event`` is called (from
    the controller's threads) with every :class:`ProtectionEvent`. ``ownership`` says
    which links it may act for (default: all of them, alone).
    """

    def __init__(self, inventory: Inventory, journal: Journal, *,
                 links: list[str] | None = None, config: ProtectConfig | None = None,
                 on_event: Callable[[ProtectionEvent], None] | None = None,
                 ownership: Ownership | None = None):
        self.config = config or ProtectConfig()
        self.ownership: Ownership = ownership or SoleOwner()
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
        self._devices = devices
        self._open_ocs = devices.ocs
        self._open_amp = devices.amp
        self.on_event = on_event
        self.events: deque[ProtectionEvent] = deque(maxlen=1000)
        self.judge = LightJudge(self.config.threshold_dbm, self.config.hysteresis_db)
        self._states = {link.name: _LinkState(link=link) for link in chosen}
        ports: dict[str, set[int]] = {}
        self._related: dict[str, dict[int, set[int]]] = {}
        """Per OCS, each watched port's and the other ports of its links there."""
        self._links_at: dict[str, dict[int, set[str]]] = {}
        """Per OCS, the links through each watched port."""
        self._switched: dict[str, list[tuple[str, tuple[int, ...], float]]] = {}
        """Per link, each of its OCSes, the ports a move of it switches there, in order,
        and that OCS's switching power limit (the lit-port rule of acting.py)."""
        for link in chosen:
            of_link = link_ports(link)
            self._switched[link.name] = [
                (ocs, tuple(sorted(used)), inventory.device(ocs, "ocs").max_switch_power_dbm)
                for ocs, used in of_link.items()]
            for ocs, used in of_link.items():
                ports.setdefault(ocs, set()).update(used)
                related = self._related.setdefault(ocs, {})
                links_at = self._links_at.setdefault(ocs, {})
                for port in used:
                    related.setdefault(port, set()).update(used)
                    links_at.setdefault(port, set()).add(link.name)
        for probe in self.config.probes:
            inventory.device(probe.ocs, "ocs")
            ports.setdefault(probe.ocs, set()).add(probe.port)
        self._ports = ports
        self._budgets = {name: QueryBudget(self.config.ocs_messages_per_second)
                         for name in ports}
        self._amp_links: dict[str, list[Link]] = {}
        for link in chosen:
            for span in (link.working, link.protection):
                for fiber in (span.a_to_b, span.b_to_a) if span else ():
                    if fiber.amplifier:
                        self._amp_links.setdefault(fiber.amplifier, []).append(link)
        self._amps = sorted(self._amp_links)
        self._ownership_changed = threading.Event()
        self._links_of_ocs = {name: set().union(*at.values())
                              for name, at in self._links_at.items()}
        self._judged_views: tuple[dict[str, Any], dict[str, Any], dict[str, Any]] = \
            ({}, {}, {})
        """The readings the last evaluation judged (:meth:`_to_judge` compares the
        next's with them)."""
        self._settling: set[str] = set()
        """Links whose change has ended, left alone until each of their OCSes has been
        read since the change was done there, then judged afresh (what was read while
        the change decided for them went unjudged, and a reading taken while their
        beams switched shows their light dark)."""
        self._judged_all = 0.0
        self._judge_all = True
        self._arrivals: dict[str, set[int]] = {}  # every span's arrival ports, per OCS
        for span in inventory.spans.values():
            for fiber in (span.a_to_b, span.b_to_a):
                self._arrivals.setdefault(fiber.end.ocs, set()).add(fiber.end.port)
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
        self._alarms: AlarmFeeds | None = None
        self._amp_alarms_armed = False
        self._run_op: Change | None = None
        self._silent: dict[str, float] = {}
        self._restart_after: dict[str, float] = {}
        self._restarted_at: dict[str, float] = {}  # amplifier -> its last restart pulse sent
        self._probe_after: dict[tuple[str, str], float] = {}
        self._sample_times: dict[str, float | None] = {}
        self._map_valid_after: dict[str, float] = {}
        self._started = 0.0
        self._armed = False  # judged once with every amplifier read (ARMING_SECONDS)
        self._ready_told = False
        self._ready_due = 0.0
        self._ready_every = READY_CHECK_SECONDS[0]
        self._mono0, self._wall0 = time.monotonic(), time.time()
        self._thread_failure: list[BaseException] = []
        self._link_states = LinkStates(journal)
        self._drains_read = -DRAIN_CHECK_SECONDS
        self._gather_until: float | None = None
        self._cables = Cables(chosen)
        self._gathered: str | None = None
        """Why the last gathering ended (journaled with the change it decided)."""
        self._gather_cables: frozenset[str] | None = None
        """The cables of the losses being gathered, while it waits (None: some without)."""
        self._turns = {name: threading.Lock() for name in ports}
        self._changes = ThreadPoolExecutor(max_workers=CHANGES_IN_FLIGHT,
                                           thread_name_prefix="protect-change")
        self._journaling = ThreadPoolExecutor(max_workers=CHANGES_IN_FLIGHT,
                                              thread_name_prefix="protect-intent")
        self._in_flight: dict[str, str] = {}
        self._changing: Counter[str] = Counter()
        """Per OCS, the changes in flight on it (its reconciliation polls wait meanwhile)."""
        self._devices_looked_at: set[str] = set()
        """Devices whose interrupted probes and restarts were closed since this instance
        took them (looked at once, not once per link)."""
        """Link -> the span it is being moved onto, while its change runs."""
        self.counts = {"switch": 0, "revert": 0, "unavailable": 0, "failed": 0, "dip": 0,
                       "fenced": 0}

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
            gc.unfreeze()  # what _protect froze is the collector's again

    def _run(self, names: str, stop: threading.Event) -> None:
        with ExitStack() as held:
            # One controller per link: a second one would fight the first. Instances
            # that share the links through the database own shards instead.
            for link in self.links if self.ownership.instance is None else ():
                try:
                    held.enter_context(DeviceLock(self.journal, f"protect-{link.name}"))
                except DeviceBusy as error:
                    raise DeviceBusy(f"{link.name} is already protected by another "
                                     f"controller ({error})") from None
            self._protect(names, stop)

    def _protect(self, names: str, stop: threading.Event) -> None:
        with self.journal.change(device=names, action="protection.run",
                                 links=[link.name for link in self.links],
                                                  instance=self.ownership.instance,
                                 **self.config.as_dict()) as run_op:
            self._run_op = run_op
            self._start()
            # What the run has built lives as long as it: kept out of the collector's
            # full passes, which would scan it all each time (20-30 ms of a stopped
            # interpreter, measured in a 16-OCS fabric: on the recovery path whenever
            # one falls in an outage).
            gc.collect()
            gc.freeze()
            try:
                while not stop.is_set():
                    self._wait_for_readings(stop)
                    self._changed.clear()
                    if self._ownership_changed.is_set():
                        self._ownership_changed.clear()
                        self._follow_ownership()
                    try:
                        self._evaluate()
                        self._tell_ready()
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

    def _wait_for_readings(self, stop: threading.Event) -> None:
        """The decision loop's wait: new readings wake it, and the timers' tick runs the
        timers (the hold-off, the wait-to-restore) when no reading comes. A gathering
        (see GATHER_MIN_SECONDS) is not woken by every reading: it decides at its end,
        on the readings' own times, and judging again at every alarm of a burst would
        hold the interpreter while the burst's other alarms wait to be taken in. It is
        woken by the reading that shows its losses' cables dark, which it can end."""
        if self._gather_until is None:
            self._changed.wait(max(self.config.poll_seconds, TIMER_SECONDS))
            return
        cables = self._gather_cables
        while (left := self._gather_until - time.monotonic()) > 0:
            if cables is None:
                stop.wait(left)
                return
            # Woken only once the readings say the losses' cables are dark through and
            # through: judging then can end the gathering (Cables.dark).
            if not self._changed.wait(left):
                return
            self._changed.clear()
            if stop.is_set() or self._cables.dark(cables, self._states, self._busy,
                                                   self._reading, self._arrival_threshold):
                return
        self._changed.wait(0.001)  # it is over: evaluate again almost at once

    def _gathering(self, candidates: list[Candidate], now: float) -> bool:
        """Whether to wait for the other OCSes' losses before acting on ``candidates``
        (GATHER_MIN_SECONDS): only for losses seen within GATHER_MAX_SECONDS, so that a
        link left down (refused) does not hold the others back, and not for more losses
        once every link the losses' cables carry has lost its light (cables.py)."""
        switches = [c for c in candidates if not c.revert and not c.finishing]
        losses = [c for c in switches if now - c.detected < GATHER_MAX_SECONDS]
        self._gather_until = self._gathered = None
        if not losses:
            if switches:
                self._gathered = (f"losses seen {GATHER_MAX_SECONDS * 1000:g} ms ago or more: "
                                  "no wait")
            return False
        fresh = [c.detected for c in losses]
        first, latest = min(fresh), max(fresh)
        cables = self._gather_cables = self._cables.of(c.source for c in losses)
        whole = cables is not None and self._cables.all_lost(cables, self._states,
                                                             self._busy)
        # Losses seen before whose links are no candidate now (their readings not fresh:
        # a late poll), which this instance may decide for: going without them would
        # answer the cut in two changes.
        unjudged: list[float] = []
        if whole:
            assert cables is not None
            deciding = {c.link.name for c in switches}
            for name in self._cables.carried(cables, self._states, self._busy):
                state = self._states[name]
                if name not in deciding and state.owned and now >= state.retry_after \
                        and state.loss_since is not None:
                    unjudged.append(state.loss_since)
            whole = not unjudged
        if not whole and now - first < GATHER_MIN_SECONDS:
            self._gather_until = first + GATHER_MIN_SECONDS
            return True
        # Losses still arriving (a cut's alarms from another process of the lab, another
        # host): wait until they have been quiet a moment, within GATHER_MAX_SECONDS.
        if not whole and now - latest < GATHER_QUIET_SECONDS \
                and now - first < GATHER_MAX_SECONDS:
            self._gather_until = min(latest + GATHER_QUIET_SECONDS, first + GATHER_MAX_SECONDS)
            return True
        # Still waiting for a reading asked for (light back somewhere, an OCS read after
        # a change)? What it brings may take a candidate back.
        if any(watch.poll_pending for watch in self._watches.values()):
            self._gather_until = min(now + 0.002, first + GATHER_MAX_SECONDS)
            return True
        # Their fresh readings may yet make them candidates, within GATHER_MAX_SECONDS of
        # the first of those losses.
        if unjudged and now - min(unjudged) < GATHER_MAX_SECONDS:
            self._gather_until = min(now + 0.002, min(unjudged) + GATHER_MAX_SECONDS)
            return True
        if whole:
            assert cables is not None
            named = ", ".join(sorted(cables))
            self._gathered = f"every link of cable{'s' if len(cables) > 1 else ''} {named} dark"
        elif unjudged:
            self._gathered = (f"{GATHER_MAX_SECONDS * 1000:g} ms after the first loss (the "
                              f"most), with {counted(len(unjudged), 'lost link')} of the "
                              "cable not judged fresh")
        elif now - first >= GATHER_MAX_SECONDS:
            self._gathered = f"{GATHER_MAX_SECONDS * 1000:g} ms after the first loss (the most)"
        else:
            self._gathered = f"no other loss for {GATHER_QUIET_SECONDS * 1000:g} ms"
        return False

    def _start(self) -> None:
        self._started = time.monotonic()
        self._ocs = OcsActions(sorted(self._ports), self._open_ocs, self._budgets)
        for index, (name, ports) in enumerate(sorted(self._ports.items())):
            starts = {(f.start.ocs, f.start.port) for link in self.links
                      for span in (link.working, link.protection) if span
                      for f in (span.a_to_b, span.b_to_a) if f.start.ocs == name}
            # the OCSes' whole polls spread evenly over each interval, not all at once
            self._watches[name] = OcsWatch(name, self._open_ocs, ports,
                                           budget=self._budgets[name],
                                           poll_seconds=self.config.poll_seconds,
                                           notify=self._changed.set, feeders=len(starts),
                                           related=self._related.get(name, {}),
                                           phase=index / len(self._ports),
                                           changing=partial(self._in_change, name))
        for name in self._amps:
            self._amp_watches[name] = AmpWatch(name, self._open_amp,
                                               poll_seconds=AMP_POLL_SECONDS,
                                               notify=self._changed.set)
        self._follow_ownership()
        for watch in self._all_watches():
            watch.start()
        self._ocs.warm()
        self._alarms = AlarmFeeds(self._watches, self._ocs,
                                  opener=(self._devices.alarm_stream if self.config.use_alarms
                                          else None),
                                  hysteresis_db=self.config.hysteresis_db,
                                  say=self._say, moving=self._moving)
        self._alarms.start(self._alarm_ports(amplified=False))
        self.ownership.start(self.links, self._on_ownership)
        self._follow_ownership()

    def _in_change(self, ocs: str) -> bool:
        with self._lock:
            return self._changing[ocs] > 0

    def _say(self, kind: str, message: str) -> None:
        self._emit(kind, None, message)

    def _alarm_ports(self, *, amplified: bool) -> dict[str, dict[int, float]]:
        """The ingress ports whose loss of light is alarmed, and their thresholds: the
        links' transmitters, and the spans' arrival ports (``amplified``: those behind an
        amplifier, at the threshold raised by its gain, once it is known)."""
        base = self.config.threshold_dbm
        found: dict[str, dict[int, float]] = {}
        for link in self.links:
            if not amplified:
                for end in (link.a, link.b):
                    found.setdefault(end.tx.ocs, {})[end.tx.port] = base
            for span in (link.working, link.protection):
                for fiber in (span.a_to_b, span.b_to_a) if span else ():
                    if bool(fiber.amplifier) != amplified:
                        continue
                    threshold = self._arrival_threshold(fiber)
                    if threshold is not None:
                        found.setdefault(fiber.end.ocs, {})[fiber.end.port] = threshold
        return found

    def _arrival_threshold(self, fiber: SpanFiber) -> float | None:
        """The loss-of-light threshold at a fiber's far end: behind an amplifier, raised
        by its gain (``None`` until the gain is known)."""
        if not fiber.amplifier:
            return self.config.threshold_dbm
        reading = self._amp_watches[fiber.amplifier].sample
        gain = None if reading is None else self.judge.amp_gain_db(fiber.amplifier, reading)
        return None if gain is None else self.config.threshold_dbm + gain

    def _reading(self, ocs: str, port: int) -> float | None:
        sample = self._watches[ocs].sample
        return None if sample is None else sample.powers.get(port)

    def _busy(self, link: str) -> bool:
        """Whether ``link`` is in a change now (its change decides for it)."""
        return link in self._in_flight

    def _on_ownership(self) -> None:
        """From the lease loop: the shards owned changed; the decision loop follows."""
        self._ownership_changed.set()
        self._changed.set()

    def _follow_ownership(self) -> None:
        """Poll fast the OCSes of the links this instance owns, slowly the others (a warm
        standby); links newly owned are looked at afresh (their interrupted operations
        closed, their watches polled at once)."""
        fast: set[str] = set()
        for state in self._states.values():
            owned = self.ownership.acts_for(state.link)
            if owned:
                fast.update(state.link.ocs_names)
                if not state.owned:
                    state.seen = False  # close what its last owner left open
                    self._devices_looked_at.difference_update(_devices_of(state.link))
                    state.retry_after = 0.0
            state.owned = owned
        for name, watch in self._watches.items():
            watch.set_fast(name in fast)
        self._judge_all = True

    def _close(self) -> None:
        self._changes.shutdown(wait=True)  # the changes in flight end, and are journaled
        self._journaling.shutdown(wait=True)
        if self._alarms is not None:
            self._alarms.close()
        self.ownership.stop()
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

    def ready(self) -> bool:
        """Whether every link is on a span, both its spans lit (probes parked,
        amplifiers restarted and steady) and no loss of it being timed or told, as
        judged with every amplifier read (before that, a span behind an amplifier shut
        by ALS can look lit: its far-end threshold is raised by a gain not read yet) and
        no OCS read outstanding (a map read again after a probe's park, say, whose links
        are not judged until it comes). A cut measured from then is answered as the
        controller answers any: the ``ready`` event says when it first is."""
        return (self._armed and not self.amplifiers_steady()
                and not any(w.poll_pending for w in self._watches.values())
                and all(link["role"] is not None and link["working"]["light"] == LIT
                        and link["protection"]["light"] == LIT
                        and link["hold_off_running_ms"] is None
                        and link["unavailable"] is None for link in self.status()))

    def wait_ready(self, timeout_seconds: float = 10.0) -> bool:
        """Wait until :meth:`ready`; whether that happened within the timeout."""
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._thread_failure:
                raise self._thread_failure[0]
            if self.ready():
                return True
            time.sleep(0.01)
        return False

    def amplifiers_steady(self) -> dict[str, str | None]:
        """The amplifiers watched that are not steady now, and their ALS state: one shut
        by ALS, or in a restart pulse (its output at the pulse's power), has not reached
        the light it carries when steady; nor has one not read since its restart pulse
        was sent (its last reading is of before it), nor one whose gain loop is still
        settling after it (its gain neither at its target nor still since the reading
        before). Empty when all are (a measurement of the protection switch starts from
        there)."""
        unsteady: dict[str, str | None] = {}
        for name, watch in self._amp_watches.items():
            sample, before = watch.sample, watch.previous
            if sample is None or sample.module_state != "ModuleReady" \
                    or sample.als_state != "normal" \
                    or sample.taken <= self._restarted_at.get(name, -1.0):
                unsteady[name] = None if sample is None else sample.als_state
            elif sample.gain_db is not None and not (
                    (sample.target_gain_db is not None
                     and abs(sample.gain_db - sample.target_gain_db) <= GAIN_SETTLED_DB)
                    or (before is not None and before.gain_db is not None
                        and abs(sample.gain_db - before.gain_db) <= GAIN_SETTLED_DB)):
                unsteady[name] = f"{sample.als_state}, gain {sample.gain_db:.1f} dB settling"
        return unsteady

    def _progress(self, link: str) -> LinkProgress:
        state: _LinkState = self._states[link]
        return state

    def _moved(self, link: str, role: str) -> None:
        state = self._states[link]
        with self._lock:
            state.role = role
        state.loss_since = state.wtr_since = state.unavailable = state.pending = None

    def _all_watches(self) -> list[OcsWatch | AmpWatch]:
        return [*self._watches.values(), *self._amp_watches.values()]

    def _tell_ready(self) -> None:
        """The ``ready`` event, once, when the controller first is (:meth:`ready`):
        whoever started it (an operator, a script, a test about to cut a fiber) knows
        from its output when a loss will be answered from a steady state. Looked at
        at READY_CHECK_SECONDS, not at every reading, and not while a loss is being
        gathered (it is not ready then)."""
        now = time.monotonic()
        if self._ready_told or now < self._ready_due or self._gather_until is not None:
            return
        self._ready_due = now + self._ready_every
        if not self.ready():
            self._ready_every = min(2 * self._ready_every, READY_CHECK_SECONDS[1])
            return
        self._ready_told = True
        amplifiers = len(self._amp_watches)
        steady = f", {counted(amplifiers, 'amplifier')} steady" if amplifiers else ""
        self._emit("ready", None, (
            f"{counted(len(self.links), 'link')} on a span with both spans lit{steady}, "
            f"{(now - self._started) * 1000:.0f} ms after the start"))

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
            stale = max(self.config.stale_seconds, STALE_POLLS * watch.interval())
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
            self._judge_all = True
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
        candidates: list[Candidate] = []
        to_judge, settled = self._to_judge(now, powers, maps, amps)
        for state, changed in to_judge:
            candidate = self._judge(state, now, powers, maps, amps, arming, changed)
            if candidate is not None:
                candidates.append(candidate)
        # Only now are these readings judged: after a failure in the loop above, the next
        # evaluation compares its readings with the last ones judged, not with these.
        self._judged_views = (powers, maps, amps)
        self._armed = self._armed or not arming
        with self._lock:
            self._settling -= settled
        moves: list[Candidate] = []
        if self._gathering(candidates, now):
            return
        if candidates:
            with self._lock:
                reserved = {span: link for link, span in self._in_flight.items()}
            carriers = Carriers(maps, self._link_tx, self._link_rx)
            moves, refusals = allocate(candidates, carrier=lambda span: reserved.get(
                span.name) or carriers(span))
            for refusal in refusals:
                self._refused(refusal)
            if moves:
                self._start_change(moves, powers, self._gathered)
        if not arming and not self._amp_alarms_armed and self._alarms is not None \
                and self._amp_watches:
            self._amp_alarms_armed = True
            for name, ports in self._alarm_ports(amplified=True).items():
                self._alarms.arm(name, ports)
        if self.config.restart_amplifiers:
            self._restart_amplifiers(now, amps)
        # Probes are parked by map changes of their own: never beside a change in flight.
        if self.config.use_probes and not moves and not self._in_flight:
            self._keep_probes(now, maps)

    def _moving(self, ocs: str, port: int) -> bool:
        """Whether every link through ``port`` of ``ocs`` is in a change now (its light
        flickers as the change re-points beams, and the change checks it itself)."""
        links = self._links_at.get(ocs, {}).get(port, set())
        with self._lock:
            return bool(links) and all(name in self._in_flight for name in links)

    def _start_change(self, moves: list[Candidate], powers: dict[str, Any],
                      gathered: str | None) -> None:
        """Carry out ``moves`` in a worker (acting.py); their links are left alone by the
        decision loop, and their target spans reserved, until it ends."""
        touched = sorted({n for move in moves for n in move.link.ocs_names})
        with self._lock:
            for move in moves:
                self._in_flight[move.link.name] = move.target.name
            self._changing.update(touched)

        def change() -> None:
            try:
                self._make_moves(moves, powers, gathered)
            except Exception as error:  # report, keep protecting
                self._emit("error", None, f"internal error: {type(error).__name__}: {error}")
                self._retry_later(moves, time.monotonic())
            finally:
                with self._lock:
                    for move in moves:
                        self._in_flight.pop(move.link.name, None)
                        self._settling.add(move.link.name)
                    self._changing.subtract(touched)
                # Every reading of the OCSes touched fresh again, asked for once the links
                # are judged again (their alarms were left to the change meanwhile): the
                # adopted map was judged with the readings of before the change.
                for name in touched:
                    self._watches[name].refresh_map()
                self._changed.set()

        self._changes.submit(change)

    def _to_judge(self, now: float, powers: dict[str, Any], maps: dict[str, Any],
                  amps: dict[str, Any]) -> tuple[list[tuple[_LinkState, bool]], set[str]]:
        """The links whose judgement may have changed, each with whether a reading it is
        judged from has (only then are its lights judged again: the same readings give
        the same lights). Those are the links with a changed reading, those with a timer
        or a retry running, and every link once a second (and after a drain or an
        ownership change). A cable cut's alarm then costs the judging of the few links
        through its port, not of every link of its OCS. Also the links done settling
        after their change (judged afresh now), for the caller to take out of
        ``_settling`` once they are judged."""
        changed = self._changed_links(powers, maps, amps)
        with self._lock:
            settled = set()
            for name in self._settling:
                ends = self._states[name].link.ocs_names
                # the light at one end comes through the other: both read since both
                # were done
                done = max(self._map_valid_after.get(ocs, 0.0) for ocs in ends)
                if all(self._read_since(ocs, done) for ocs in ends):
                    settled.add(name)
            waiting = self._settling - settled
        changed |= settled
        if now - self._judged_all >= REJUDGE_EVERY_SECONDS or self._judge_all:
            self._judged_all, self._judge_all = now, False
            return [(state, state.link.name in changed) for state in self._states.values()
                    if state.link.name not in waiting], settled
        return [(state, state.link.name in changed) for state in self._states.values()
                if state.link.name not in waiting and (
                    state.link.name in changed or state.loss_since is not None
                    or state.wtr_since is not None or state.pending is not None
                    or not state.seen)], settled

    def _read_since(self, ocs: str, done: float) -> bool:
        """Whether ``ocs`` has been read whole since ``done`` (monotonic), or does not
        answer (then nothing will come, and its links are judged unknown)."""
        watch = self._watches[ocs]
        sample = watch.sample
        return watch.down_since is not None or (sample is not None and sample.asked >= done)

    def _changed_links(self, powers: dict[str, Any], maps: dict[str, Any],
                       amps: dict[str, Any]) -> set[str]:
        """The links a reading they are judged from differs for, from the last judged
        evaluation's: every link of an OCS that answers or falls silent, or whose map is
        read or lost; those of the ports whose readings or cross-connects changed
        (:func:`touched_links`: a move's adopted map touches the links it moved and
        their probes, not every link of the OCS); those behind an amplifier with a new
        reading."""
        was_powers, was_maps, was_amps = self._judged_views
        found: set[str] = set()
        for name, readings in powers.items():
            before, port_map, map_before = was_powers.get(name), maps[name], was_maps.get(name)
            if readings is before and port_map is map_before:
                continue
            if readings is None or before is None or port_map is None or map_before is None:
                found |= self._links_of_ocs.get(name, set())
            else:
                found |= touched_links(self._links_at.get(name, {}), before, readings,
                                       map_before, port_map)
        for name, reading in amps.items():
            if reading is not was_amps.get(name) and reading != was_amps.get(name):
                found.update(link.name for link in self._amp_links.get(name, ()))
        return found

    def _report_devices(self, now: float) -> None:
        for watch in self._all_watches():
            sample = watch.sample
            # Readings older than stale_seconds are not judged; a device is reported
            # silent only when a read failed or none has come for a device timeout (a
            # busy host can delay a poll by a few hundred ms).
            stale = sample is not None and now - sample.taken > max(
                self.config.device_timeout_seconds, 4 * watch.interval())
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
               maps: dict[str, Any], amps: dict[str, Any], arming: bool,
               changed: bool) -> Candidate | None:
        """What ``state``'s link wants now: a move (a candidate, allocated with the
        others), or nothing; its lights judged again if a reading they are judged from
        has ``changed``. A link of a shard this instance does not own is followed (its
        light, its loss) but never decided for."""
        link = state.link
        assert link.protection is not None
        if link.name in self._in_flight:
            # Its change decides for it until it ends (and judging it meanwhile, every
            # evaluation of a cable cut, would cost the loop what the next change needs).
            return None
        reachable = all(maps.get(name) is not None for name in link.ocs_names)
        if changed or not state.lights:
            readings = {"powers": powers, "maps": maps, "amps": amps}
            lights = {"working": self.judge.span(link.working, **readings),
                      "protection": self.judge.span(link.protection, **readings)}
            with self._lock:
                state.lights = lights
            state.mapped_role = link_role(link, maps)
        lights, role = state.lights, state.mapped_role
        if state.drained:  # out of service: its darkness is work in progress, not a failure
            return None
        if not reachable or arming:
            # No map to judge from (an OCS silent, or its map read again after a change):
            # as with no fresh reading, an outage goes on, to be judged, ended or told
            # restored once the maps are back; a wait-to-restore starts again.
            state.wtr_since = None
            return None
        if not state.seen:
            state.seen = True
            self._close_interrupted(link, role)
            self._close_interrupted_on_devices(link, maps)
        if role != state.role:
            if role is not None and state.role is not None:
                self._emit("role", link.name, f"{link.name}: now on {link.span(role).name} "
                           f"({role}), changed outside the controller")
            with self._lock:
                state.role = role
            state.loss_since = state.wtr_since = None
            state.unavailable = None
        if role is None:
            pending = state.pending
            if pending is not None and now >= state.retry_after and state.owned:
                return Candidate(link, pending.from_role, pending.to_role, now,
                                 "finishing a move that failed half-way",
                                 tuple(lights[pending.to_role]), finishing=True)
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
            if now - state.loss_since < self.config.hold_off_seconds \
                    or now < state.retry_after or not state.owned:
                return None
            assert state.cause is not None
            return Candidate(link, role, standby_role, state.loss_since, state.cause,
                             tuple(standby))
        if state.loss_since is not None:
            lasted = (now - state.loss_since) * 1000
            if state.unavailable is not None:
                self._emit("restored", link.name, f"{link.name}: light back on "
                           f"{link.span(role).name} after {lasted:.0f} ms, without a switch")
            else:
                # judged past the hold-off only when a judgement fell there (a busy host
                # can leave a gap between two)
                within = ("within the hold-off" if lasted < self.config.hold_off_seconds * 1000
                          else "before it was judged past the hold-off")
                self._emit("dip", link.name, f"{link.name}: a loss of {lasted:.0f} ms on "
                           f"{link.span(role).name} ended {within}; no switch",
                           details={"lasted_ms": round(lasted, 1), "cause": state.cause})
            state.loss_since, state.unavailable = None, None
        if role == "protection" and self.config.revertive:
            if span_state(lights["working"]) == LIT:
                if state.wtr_since is None:
                    state.wtr_since = now
                elif now - state.wtr_since >= self.config.wait_to_restore_seconds \
                        and state.owned and now >= state.retry_after:
                    waited = now - state.wtr_since
                    return Candidate(link, "protection", "working", state.wtr_since,
                                     f"{link.working.name} lit for {waited:.2f} s "
                                     f"(wait-to-restore "
                                     f"{self.config.wait_to_restore_seconds:g} s)",
                                     tuple(lights["working"]), revert=True)
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
            if operation.orphaned:
                self._close_orphan(operation, link, link.name, found)

    def _close_interrupted_on_devices(self, link: Link,
                                      maps: Mapping[str, Mapping[int, int] | None]) -> None:
        """Close what a killed controller left open on ``link``'s devices rather than on
        the link: a probe parked at one of its OCSes (found: which of its connections the
        OCS holds now), an ALS restart of one of its amplifiers (a pulse either went or
        did not; the amplifier's watch judges its light from here)."""
        for device in _devices_of(link):
            if device in self._devices_looked_at:
                continue
            self._devices_looked_at.add(device)
            for operation in self.journal.operations(device, action_prefix="protection.",
                                                     open_only=True):
                if not operation.orphaned:
                    continue
                if operation.action == "protection.probe":
                    held = maps.get(device)
                    pairs = [c.split(":") for c in operation.intent.get("connections", ())]
                    found: str = ("the OCS did not answer" if held is None else
                                  "probe connections in place: " + (", ".join(
                                      f"{i}:{e}" for i, e in pairs
                                      if held.get(int(i)) == int(e)) or "none"))
                elif operation.action == "protection.als_restart":
                    found = "restart pulse outcome unknown; the amplifier's watch judges it"
                else:
                    continue
                self._close_orphan(operation, link, device, found)

    def _close_orphan(self, operation: Operation, link: Link, subject: str,
                      found: str) -> None:
        """Close ``operation``, which a killed controller left open, as interrupted by
        this run, with what was ``found``; said once, as an event of ``link``."""
        if self.journal.close(operation, {
                "device": operation.device, "action": operation.action,
                "status": "interrupted",
                "resolved_by": self._run_op.op if self._run_op else None, "found": found}):
            self._emit("role", link.name, f"{subject}: {operation.action} {operation.op} "
                       f"of {operation.started} was interrupted; found {found}")

    def _refused(self, refusal: Refusal) -> None:
        """A link that stays down, and why: journaled once per outage, not once per poll
        (the readings change, and so may the words for the standby's darkness: unlit
        while its probe is re-parked, lost while its amplifier's ALS holds it shut); a
        changed reason is an event."""
        link = refusal.candidate.link
        state = self._states[link.name]
        why_not = refusal.reason
        if refusal.candidate.revert:
            return  # a revert waits: the link is up on its protection span
        if state.unavailable is None:
            state.unavailable = why_not
            reason = f"protection unavailable: {why_not}"
            self.journal.refuse(device=link.name, action="protection.switch", reason=reason,
                                exit_code=1, cause=state.cause, refusal=refusal.kind,
                                other_link=refusal.other,
                                detected=self.wall(state.loss_since))
            self._emit("unavailable", link.name, f"{link.name}: loss of light "
                       f"({state.cause}); not switched: {reason}",
                       details={"cause": state.cause, "refusal": refusal.kind,
                                "other_link": refusal.other})
        elif why_not.split(" (")[0] != state.unavailable.split(" (")[0]:
            state.unavailable = why_not
            self._emit("unavailable", link.name, f"{link.name}: still not switched: "
                       f"protection unavailable: {why_not}",
                       details={"cause": state.cause, "refusal": refusal.kind,
                                "other_link": refusal.other})

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
                    "shard": shard_of(link),
                    "owned": state.owned,
                })
        return found

    def detection(self) -> dict[str, dict[str, Any]]:
        """Per OCS watched: how losses are detected now (``alarms``: the unit's stream is
        live and the polls only reconcile; ``polling``: a unit without alarms, or whose
        stream is lost), whether it has a stream (``alarm_stream``: ``live``, ``lost`` or
        ``None``), the snapshots (connections) and loss-of-light events received, its
        poll interval in ms, the connections of the map the controller holds, and
        whether that is the map the unit announced last (``map_as_announced``; ``None``:
        no announcement on a live stream)."""
        feeds = self._alarms
        found: dict[str, dict[str, Any]] = {}
        for name, watch in sorted(self._watches.items()):
            live = None if feeds is None else feeds.live.get(name)
            announced = None if feeds is None else feeds.last_announced(name)
            sample = watch.sample
            found[name] = {
                "detection": "alarms" if watch.alarms_live else "polling",
                "alarm_stream": None if live is None else ("live" if live else "lost"),
                "alarm_connections": 0 if feeds is None else feeds.connections.get(name, 0),
                "alarm_events": 0 if feeds is None else feeds.events.get(name, 0),
                "poll_interval_ms": round(watch.interval() * 1000, 1),
                "map": None if sample is None or sample.port_map is None
                else dict(sample.port_map),
                "map_as_announced": None if announced is None
                else watch.map_if(announced) is not None,
            }
        return found


def _devices_of(link: Link) -> list[str]:
    """The OCSes and the amplifiers of ``link``'s spans."""
    spans = [span for span in (link.working, link.protection) if span is not None]
    amplifiers = sorted({fiber.amplifier for span in spans
                         for fiber in (span.a_to_b, span.b_to_a)
                         if fiber.amplifier is not None})
    return [*link.ocs_names, *amplifiers]
