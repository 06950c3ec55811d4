"""Detection from what the OCS pushes: its loss-of-light alarms, polling as the fallback.

Polling every watched port of a large OCS within its message budget takes a poll
interval of 100 ms or more (two power queries per 256 ports); the alarms the unit pushes
arrive within milliseconds of the loss. So, for every OCS that has them
(``OcsDriver.alarm_support()``; the dialect is the project's extension, see
docs/dialects/ocs.md):

- the controller arms loss of light on the ingress ports it judges light by: the
  links' transmitters and every span's arrival port, at the controller's threshold and
  hysteresis (behind an amplifier, the threshold raised by the amplifier's gain, armed
  once its gain is known);
- it follows the unit's alarm stream (``msoctl.access`` opens it from the inventory):
  a loss event's own reading (the unit's detector, below the armed threshold) goes
  into the watch's view at once and is judged with the same thresholds, hysteresis
  and checks as a regular poll's. No read follows it: every armed port that crosses
  its threshold raises an event of its own, so the view of the other ports stands,
  and a read per event would load the unit (and delay its other events) just when a
  cable cut has it report dozens. Light back is judged on a read: the event makes
  the watch read that port with the other ports of its links at once, from the
  budget's reserve (the ports of the events that came meanwhile in one query), and a
  move is never undone on an event alone;
- while the stream is live (its snapshot received, heartbeats arriving), the watch
  polls at the reconciliation rate (once a second) instead of its fast rate; when the
  stream is lost (closed, silent for the stream's timeout, a gap in the event
  numbers), the watch polls fast again until it is back;
- every (re)connection begins with the unit's snapshot of its armed ports: the watch
  polls at once (whatever happened while the stream was away is judged from a fresh
  reading, never from the events), and ports the snapshot lacks (the unit was reset
  to its factory settings, or replaced) are armed again.

- the unit announces its map on the stream (after the snapshot, and at each change,
  whoever made it): an announced map that is not the watch's copy (a change made
  outside this controller) has the watch read the map at once, and a change of the
  controller plans on the copy without reading the map first while the copy is the
  map last announced on a stream heard within :data:`MAP_HEARD_SECONDS` and no later
  than :data:`MAP_LAG_SECONDS` behind its promptest (:meth:`AlarmFeeds.announced_map`).

A unit without alarms, or whose alarm connection cannot be opened, is simply polled.
Arming sets alarm thresholds only, never a path: it is not fenced, and a standby arms
the same thresholds as the owner.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from drivers.errors import DeviceError, ValidationError
from drivers.ocs import OcsDriver
from msoctl.protect.moves import OcsActions
from msoctl.protect.watch import OcsWatch
from msoctl.words import counted

LOS_HYSTERESIS_MAX_DB = 10.0
"""The most hysteresis the alarm extension takes (one value for the whole unit)."""
LOS_THRESHOLD_RANGE_DBM = (-60.0, 10.0)
MAP_HEARD_SECONDS = 0.75
"""A map announced on a stream silent longer than this (a heartbeat is due every
0.5 s) is not planned on: the stream may be stuck with a change untold."""
MAP_LAG_SECONDS = 0.1
"""Nor on a stream whose last line came this much later than its promptest (the
driver's ``OcsAlarmStream.lag``, by the unit's clock): a change is told that late."""


class AlarmFeeds:
    """The alarm streams of the OCSes the controller watches.

    ``opener(name, on_events=, on_snapshot=, on_lost=)`` opens a started stream, or
    returns ``None`` for a unit without alarms (``msoctl.access.Devices.alarm_stream``).
    ``say(kind, message)`` reports what happens. ``moving(ocs, port)``: whether every
    link through that port is being moved now; its events are counted and left to the
    move, which checks that light itself and has the OCS read whole once it is done
    (a move's own re-pointed beams go dark while they switch: two events per span end,
    each of which would otherwise be read).
    """

    def __init__(self, watches: Mapping[str, OcsWatch], actions: OcsActions, *,
                 opener: Callable[..., Any] | None, hysteresis_db: float,
                 say: Callable[[str, str], None],
                 moving: Callable[[str, int], bool] = lambda ocs, port: False):
        self.watches = watches
        self.actions = actions
        self.opener = opener
        self.hysteresis_db = min(hysteresis_db, LOS_HYSTERESIS_MAX_DB)
        self.say = say
        self.moving = moving
        self.streams: dict[str, Any] = {}
        self.armed: dict[str, dict[int, float]] = {}
        self.events: dict[str, int] = {}
        """Loss-of-light events received per OCS."""
        self.connections: dict[str, int] = {}
        """Snapshots received per OCS: its first connection and every reconnection."""
        self.live: dict[str, bool] = {}
        """Per OCS with a stream: whether it is live now."""
        self._lock = threading.Lock()
        self._closed = False
        self._later: dict[str, dict[int, float]] = {}
        """Ports to arm once the OCS's stream is open (asked for before it was)."""

    def start(self, wanted: Mapping[str, Mapping[int, float]]) -> None:
        """Arm ``wanted[ocs][port] = threshold_dbm`` and open each OCS's stream, in the
        OCSes' workers (the controller does not wait for them)."""
        if self.opener is None:
            return  # this msoctl has no alarm client: poll
        for name, ports in wanted.items():
            self.actions.pool.submit(self._start_one, name, dict(ports))

    def arm(self, name: str, ports: Mapping[int, float]) -> None:
        """Arm more ports of OCS ``name`` (those behind an amplifier, once its gain is
        known), in its worker; ports armed already at that threshold are left alone."""
        with self._lock:
            if name not in self.streams:
                # Its stream is still being opened (or the unit has none): armed with the
                # others once it is open, never dropped -- a port behind an amplifier left
                # unarmed would be judged only at the slow reconciliation.
                self._later.setdefault(name, {}).update(ports)
                return
        new = {p: t for p, t in ports.items() if self.armed.get(name, {}).get(p) != t}
        if new:
            self.actions.pool.submit(self._arm, name, new)

    def _start_one(self, name: str, ports: dict[int, float]) -> None:
        try:
            supported = self.actions.call(name, _alarm_support)
        except DeviceError as error:
            self.say("error", f"{name}: cannot ask for alarms ({error}); polling")
            return
        if not supported:
            return
        if not self._arm(name, ports):
            return
        watch = self.watches[name]
        try:
            stream = self.opener(  # type: ignore[misc]
                name, on_events=lambda events: self._events(watch, events),
                on_snapshot=lambda device, states: self._snapshot(watch, states),
                on_lost=lambda device, reason: self._lost(watch, reason),
                on_map=lambda device, line: watch.note_map(line.digest))
        except (DeviceError, ValidationError) as error:
            self.say("error", f"{name}: no alarm stream ({error}); polling")
            return
        if stream is None:
            return
        with self._lock:
            closed = self._closed
            if not closed:
                self.streams[name] = stream
                later = self._later.pop(name, {})
        if closed:
            # Closed outside the lock: the stream's thread may be in a callback waiting
            # for it (a snapshot), and the close waits for that thread.
            stream.close()
            return
        if later:
            self.arm(name, later)
        self.say("alarms", f"{name}: loss-of-light alarms armed on {counted(len(ports), 'port')}; "
                 "polling slows to a reconciliation once the stream is live")

    def _arm(self, name: str, ports: dict[int, float]) -> bool:
        low, high = LOS_THRESHOLD_RANGE_DBM
        by_threshold: dict[float, list[int]] = {}
        for port, threshold in ports.items():
            by_threshold.setdefault(round(min(high, max(low, threshold)), 2), []).append(port)
        try:
            for threshold, chosen in sorted(by_threshold.items()):
                self.actions.call(name, partial(_arm_los, ports=sorted(chosen),
                                                threshold_dbm=threshold,
                                                hysteresis_db=self.hysteresis_db))
        except DeviceError as error:
            self.say("error", f"{name}: arming loss-of-light alarms failed ({error}); "
                     "polling")
            return False
        self.armed.setdefault(name, {}).update(ports)
        return True

    def _events(self, watch: OcsWatch, events: list[Any]) -> None:
        """The events that came together on one OCS's stream, taken in at once."""
        received = time.monotonic()
        with self._lock:
            self.events[watch.device] = self.events.get(watch.device, 0) + len(events)
        losses: dict[int, float] = {}
        back: list[int] = []
        for event in events:  # in the unit's order: a port's last event stands
            if self.moving(watch.device, event.port):
                continue
            # A loss the unit measured (its reading below the armed threshold) is judged
            # at once, as a poll's reading would be. Light back waits for a read: a move
            # is never undone on an event alone.
            if event.lost and event.power_dbm is not None:
                losses[event.port] = event.power_dbm
                if event.port in back:
                    back.remove(event.port)
            else:
                losses.pop(event.port, None)
                back.append(event.port)
        if losses:
            watch.note_loss(losses, received)
        if back:
            watch.confirm(back)

    def _snapshot(self, watch: OcsWatch, states: Mapping[int, bool]) -> None:
        """A (re)connection: reconcile from a fresh poll, and arm again what the unit
        forgot."""
        name = watch.device
        with self._lock:
            again = self.connections.get(name, 0) > 0
            self.connections[name] = self.connections.get(name, 0) + 1
            self.live[name] = True
        watch.set_alarms_live(True)
        watch.poll_now()
        forgotten = {p: t for p, t in self.armed.get(name, {}).items() if p not in states}
        if forgotten:
            self.say("alarms", f"{name}: the unit has no alarm armed on {len(forgotten)} "
                     "ports it was given; arming them again")
            self.actions.pool.submit(self._arm, name, forgotten)
        elif again:
            self.say("alarms", f"{name}: alarm stream back; reconciled from a fresh poll, "
                     "polling slows to a reconciliation")

    def _lost(self, watch: OcsWatch, reason: str) -> None:
        with self._lock:
            self.live[watch.device] = False
        watch.set_alarms_live(False)
        self.say("alarms", f"{watch.device}: alarm stream lost ({reason}); polling fast "
                 "until it is back")

    def announced_map(self, name: str) -> tuple[dict[int, int], int] | None:
        """OCS ``name``'s map and size as its watch holds them, when that is the map
        the unit announced last on a live stream heard within :data:`MAP_HEARD_SECONDS`
        and lagging no more than :data:`MAP_LAG_SECONDS`; else ``None`` (read it). A
        change made elsewhere reaches the controller as fast as a loss-of-light event
        does (the unit announces it at once); one made within that time of a command
        of the controller is overwritten by it, as one made between a map read and
        the command would be."""
        digest = self.last_announced(name)
        stream = self.streams.get(name)
        if digest is None or stream is None or stream.lag > MAP_LAG_SECONDS \
                or time.monotonic() - stream.heard > MAP_HEARD_SECONDS:
            return None
        return self.watches[name].map_if(digest)

    def last_announced(self, name: str) -> int | None:
        """The CRC-32 of the map OCS ``name`` announced last on its live stream."""
        stream = self.streams.get(name)
        line = None if stream is None or not stream.live else stream.map_line
        return None if line is None else line.digest

    def close(self) -> None:
        with self._lock:
            self._closed = True
            streams, self.streams = dict(self.streams), {}
        for stream in streams.values():
            stream.close()


def _arm_los(driver: OcsDriver, *, ports: list[int], threshold_dbm: float,
             hysteresis_db: float) -> dict[int, bool]:
    return driver.arm_los(ports, threshold_dbm, hysteresis_db)


def _alarm_support(driver: OcsDriver) -> bool:
    return driver.alarm_support()
