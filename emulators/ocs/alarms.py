"""Loss-of-light (LOS) alarms of an emulated OCS: per-port thresholds, one hysteresis,
the state of every armed port and the events that change it.

What the unit does (the dialect: docs/dialects/ocs.md, "Loss-of-light alarms"):

- A port is *armed* with a threshold in dBm. While alarms are enabled, an armed
  port whose detector reads below its threshold is in loss of light; it leaves
  loss of light only once the reading is back at or above threshold plus the
  unit's hysteresis, so a signal hovering at the threshold does not chatter.
  A failed port has no reading and counts as lost.
- A return of light is not reported at once: a lost port clears only once its light
  has held at or above threshold plus hysteresis for :data:`CLEAR_HOLD_SECONDS`, so
  that a beam still settling or a connector being seated does not clear the alarm and
  raise it again. A loss is raised at the first reading below the threshold.
- Every change of an armed port's state is an *event*, numbered from 1 after each
  power-on (:attr:`LosAlarms.sequence` is the last number given). Arming a port
  starts it clear, so a port armed in the dark raises its event at once.
- The detector is the port's monitor photodiode (the same calibration offset and
  noise floor as ``:PMON:POW?``), read with noise of its own so that watching
  alarms leaves the monitor's readings as they were.

When the unit looks: :meth:`LosAlarms.evaluate` reads every armed port. It is
called by whoever serves the alarms (emulators/ocs/alarm_server.py: at once when the
optical model reports a change of light, and when a hold is over), and before every
``:OXC:ALARm:LOS:STATe?`` answer, so a state read over SCPI is never stale. Light
announced ahead (a beam that settles) only adds light: :meth:`LosAlarms.settle`
reads the ports it reaches that are not lost, and takes those that are as lit from
then, to be read once their hold is over. Nothing here polls.

Thresholds, the hysteresis and the enable switch are settings of the unit: they
live in its non-volatile memory with the map (:meth:`settings`, :meth:`restore`).
The states and the sequence are not: after a power loss every armed port starts
clear again and numbering restarts at 1.

Raises :class:`~emulators.scpi.parser.ScpiError` (-222, data out of range; -221,
settings conflict) for settings the unit refuses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drivers.ocs.commands import (
    LOS_HYSTERESIS_DEFAULT_DB,
    LOS_HYSTERESIS_RANGE_DB,
    LOS_THRESHOLD_RANGE_DBM,
)
from emulators.scpi.parser import ScpiError

if TYPE_CHECKING:
    from emulators.ocs.model import OcsDevice


@dataclass(frozen=True)
class AlarmEvent:
    """One change of an armed port's loss-of-light state."""

    sequence: int
    port: int
    lost: bool
    power_dbm: float | None
    """The detector's reading that decided it; ``None`` for a failed port."""
    device_seconds: float


@dataclass(frozen=True)
class PortAlarm:
    """An armed port's state, as a snapshot lists it."""

    port: int
    lost: bool
    power_dbm: float | None
    device_seconds: float


EventListener = Callable[[AlarmEvent], None]
HoldListener = Callable[[list[int], float], None]
"""Told the lost ports whose light came back and the device time their hold is over:
they must be read again then (called with the device's lock held: it must not block)."""

CLEAR_HOLD_SECONDS = 0.05
"""How long a lost port's light must stay at or above threshold plus hysteresis before
its alarm clears. Equipment integrates a defect's absence before it clears an alarm
(seconds, for line alarms); an optical switch's detector needs only to see past a beam
that is still settling. A held port reads as lost (events, snapshots, ``STATe?``)."""


class LosAlarms:
    """The loss-of-light alarms of ``device``; every method takes the device's lock."""

    def __init__(self, device: OcsDevice):
        self.device = device
        self.thresholds_dbm: dict[int, float] = {}
        self.hysteresis_db = LOS_HYSTERESIS_DEFAULT_DB
        self.enabled = False
        self.sequence = 0
        self._lost: dict[int, bool] = {}
        self._power: dict[int, float | None] = {}
        self._evaluated_at = device.clock.now()
        self._judged: dict[int, float] = {}  # port -> device time of its last reading
        self._lit_since: dict[int, float] = {}  # a lost port read lit -> since when
        self._lit_from: dict[int, float] = {}  # a lost port a settling beam lit -> then
        self._listeners: list[EventListener] = []
        self._hold_listeners: list[HoldListener] = []
        self.evaluations = 0
        """How many times the armed ports were read (for benchmarks and tests)."""

    # ---- settings ------------------------------------------------------------------------

    def arm(self, ports: Iterable[int], threshold_dbm: float) -> None:
        low, high = LOS_THRESHOLD_RANGE_DBM
        if not (math.isfinite(threshold_dbm) and low <= threshold_dbm <= high):
            raise ScpiError(-222, f"threshold {threshold_dbm:g} dBm not in {low:g}..{high:g}")
        with self.device.lock:
            chosen = list(ports)
            self.device.check_ports(chosen)
            for port in chosen:
                self.thresholds_dbm[port] = float(threshold_dbm)
                self._lost.setdefault(port, False)
            self.device.save_settings()
            self.evaluate()

    def disarm(self, ports: Iterable[int]) -> None:
        with self.device.lock:
            chosen = list(ports)
            self.device.check_ports(chosen)
            for port in chosen:
                self.thresholds_dbm.pop(port, None)
                self._lost.pop(port, None)
                self._power.pop(port, None)
                self._forget_light(port)
            self.device.save_settings()

    def set_hysteresis(self, hysteresis_db: float) -> None:
        low, high = LOS_HYSTERESIS_RANGE_DB
        if not (math.isfinite(hysteresis_db) and low <= hysteresis_db <= high):
            raise ScpiError(-222, f"hysteresis {hysteresis_db:g} dB not in {low:g}..{high:g}")
        with self.device.lock:
            self.hysteresis_db = float(hysteresis_db)
            self.device.save_settings()
            self.evaluate()

    def set_enabled(self, enabled: bool) -> None:
        with self.device.lock:
            if enabled == self.enabled:
                return
            self.enabled = enabled
            # Re-enabled, every armed port starts clear and is judged afresh.
            self._lost = dict.fromkeys(self.thresholds_dbm, False)
            self._power.clear()
            self._lit_since.clear()
            self._lit_from.clear()
            self.device.save_settings()
            self.evaluate()

    def threshold_dbm(self, port: int) -> float | None:
        with self.device.lock:
            return self.thresholds_dbm.get(port)

    def settings(self) -> dict[str, Any]:
        """What the unit keeps in non-volatile memory."""
        with self.device.lock:
            return {"enabled": self.enabled, "hysteresis_db": self.hysteresis_db,
                    "thresholds_dbm": {str(p): t for p, t in sorted(self.thresholds_dbm.items())}}

    def restore(self, saved: object) -> None:
        """Settings read back from non-volatile memory; anything malformed is ignored
        (the alarms come up as delivered), as a corrupt map is."""
        if not isinstance(saved, dict):
            return
        try:
            thresholds = {int(p): float(t) for p, t in dict(saved["thresholds_dbm"]).items()}
            hysteresis = float(saved["hysteresis_db"])
            enabled = bool(saved["enabled"])
        except (KeyError, TypeError, ValueError):
            return
        low, high = LOS_THRESHOLD_RANGE_DBM
        if not all(1 <= p <= 2 * self.device.size and low <= t <= high
                   for p, t in thresholds.items()):
            return
        with self.device.lock:
            self.thresholds_dbm = thresholds
            self.hysteresis_db = hysteresis
            self.enabled = enabled
        self.power_on()

    def factory_reset(self) -> None:
        """As delivered: nothing armed, the default hysteresis, alarms disabled, numbering
        from the start (whoever listens keeps listening)."""
        with self.device.lock:
            self.thresholds_dbm = {}
            self.hysteresis_db = LOS_HYSTERESIS_DEFAULT_DB
            self.enabled = False
        self.power_on()

    def power_on(self) -> None:
        """After a power-on: every armed port clear, numbering from the start."""
        with self.device.lock:
            self.sequence = 0
            self._lost = dict.fromkeys(self.thresholds_dbm, False)
            self._power.clear()
            self._judged.clear()
            self._lit_since.clear()
            self._lit_from.clear()

    # ---- watching ------------------------------------------------------------------------

    def listen(self, listener: EventListener) -> tuple[int, list[PortAlarm]]:
        """Send every later event to ``listener`` (called with the device's lock held: it
        must not block); returns the snapshot it starts from and the sequence number of
        the last event before it, taken in the same breath, so that no event falls
        between the snapshot and the first event given, or is in both."""
        with self.device.lock:
            self.evaluate()
            self._listeners.append(listener)
            return self.sequence, self.snapshot()

    def unlisten(self, listener: EventListener) -> None:
        with self.device.lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def on_hold(self, listener: HoldListener) -> Callable[[], None]:
        """Tell ``listener`` of every hold that begins (:data:`HoldListener`); returns the
        function that stops it."""
        with self.device.lock:
            self._hold_listeners.append(listener)

        def stop() -> None:
            with self.device.lock:
                if listener in self._hold_listeners:
                    self._hold_listeners.remove(listener)

        return stop

    def snapshot(self) -> list[PortAlarm]:
        """Every armed port's state as last judged (none while alarms are disabled)."""
        with self.device.lock:
            if not self.enabled:
                return []
            return [PortAlarm(port, self._lost.get(port, False), self._power.get(port),
                              self._judged.get(port, self._evaluated_at))
                    for port in sorted(self.thresholds_dbm)]

    def states(self, ports: Iterable[int]) -> dict[int, bool]:
        """Loss of light now on each of ``ports``; -221 for a port that is not armed (or
        for any port while alarms are disabled)."""
        with self.device.lock:
            chosen = list(ports)
            self.device.check_ports(chosen)
            for port in chosen:
                if port not in self.thresholds_dbm or not self.enabled:
                    raise ScpiError(-221, f"port {port} has no loss-of-light alarm armed"
                                    + ("" if self.enabled else " (alarms are disabled)"))
            self.evaluate()
            return {port: self._lost[port] for port in chosen}

    def evaluate(self, ports: Iterable[int] | None = None) -> list[AlarmEvent]:
        """Read the detector of every armed port (of those of ``ports`` that are armed, when
        given: the ports a change can have reached) and raise its alarm, or clear it once
        its light has held (:data:`CLEAR_HOLD_SECONDS`); the events (also given to every
        listener). Nothing while alarms are disabled or the unit is down."""
        with self.device.lock:
            chosen = self._armed(ports)
            if chosen is None:
                return []
            if ports is None:
                self._evaluated_at = self.device.clock.now()
            return self._read(chosen)

    def settle(self, ports: Iterable[int] | None, at: float) -> list[AlarmEvent]:
        """Light announced for device time ``at`` (a beam that settles then) has reached
        ``ports`` (every armed port when ``None``). It only adds light, so on a lost port
        it can only begin a hold: those are taken as lit from ``at`` and read once their
        hold is over, not now (a cable's sixteen switches settling had every unit of a
        lab process read its ports together, ahead of the units' replies). The ports
        not lost are read now, as :meth:`evaluate` reads them (a boot that ended then
        left every port clear, to be judged afresh)."""
        with self.device.lock:
            chosen = self._armed(ports)
            if chosen is None:
                return []
            held = [p for p in chosen if self._lost.get(p, False)]
            for port in held:
                self._lit_from[port] = max(at, self._lit_from.get(port, at))
            if held:
                self._tell_hold(held, at + CLEAR_HOLD_SECONDS)
            return self._read([p for p in chosen if not self._lost.get(p, False)])

    def recheck(self, ports: Iterable[int]) -> list[AlarmEvent]:
        """:meth:`evaluate` of ``ports`` once a hold is over: a port lit by a beam that
        settled (:meth:`settle`), and not read since, is taken as lit from then."""
        with self.device.lock:
            chosen = self._armed(ports)
            return [] if chosen is None else self._read(chosen, settled=True)

    def _armed(self, ports: Iterable[int] | None) -> list[int] | None:
        """The armed ports among ``ports`` (every one when ``None``), in order; ``None``
        while nothing is watched: alarms disabled, none armed, or the unit down (the
        lock held)."""
        if not self.enabled or not self.thresholds_dbm or not self.device.is_up():
            return None
        return sorted(self.thresholds_dbm if ports is None
                      else {p for p in ports if p in self.thresholds_dbm})

    def _read(self, chosen: list[int], *, settled: bool = False) -> list[AlarmEvent]:
        """One sweep of the detectors of ``chosen`` (armed ports; the lock held). Only a
        ``settled`` sweep takes a lost port lit by a settling beam as lit from then: any
        other reading of it comes first and decides."""
        if not chosen:
            return []
        self.evaluations += 1
        now = self.device.clock.now()
        events: list[AlarmEvent] = []
        holds: dict[float, list[int]] = {}
        swept = self.device.detector_dbms(chosen)
        for port, reading in zip(chosen, swept, strict=True):
            threshold = self.thresholds_dbm[port]
            self._judged[port] = now
            self._power[port] = reading
            was_lost = self._lost.get(port, False)
            if reading is None:
                dark = True
            elif was_lost:
                dark = reading < threshold + self.hysteresis_db
            else:
                dark = reading < threshold
            lost = dark
            settled_at = self._lit_from.pop(port, None)
            if dark:
                self._lit_since.pop(port, None)
            elif was_lost:
                # back: lit since it was first read so, or since the beam that settled
                since = self._lit_since.get(port)
                if since is None:
                    since = now if settled_at is None or not settled else min(now, settled_at)
                    self._lit_since[port] = since
                if now < since + CLEAR_HOLD_SECONDS - 1e-9:  # (sums of float seconds)
                    lost = True  # not for long enough yet
                    holds.setdefault(since + CLEAR_HOLD_SECONDS, []).append(port)
                else:
                    del self._lit_since[port]
            if lost != was_lost:
                self._lost[port] = lost
                self.sequence += 1
                events.append(AlarmEvent(self.sequence, port, lost, reading, now))
        for due, held in holds.items():
            self._tell_hold(held, due)
        for event in events:
            for listener in list(self._listeners):
                listener(event)
        return events

    def _forget_light(self, port: int) -> None:
        self._lit_since.pop(port, None)
        self._lit_from.pop(port, None)

    def _tell_hold(self, ports: list[int], due: float) -> None:
        for listener in list(self._hold_listeners):
            listener(ports, due)
