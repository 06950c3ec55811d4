"""Automatic laser shutdown (ALS) of the amplifier, as a state machine on device time.

States are the vendor page's als_state codes. While the amplifier is active
(module ready, output enabled) and ALS is not disabled:

- normal -> LOS soak as soon as the input is below los_threshold;
- LOS soak -> normal when the input returns; -> shutdown (pump off) when the
  loss has lasted als_los_soak;
- shutdown -> restart pulse: in automatic mode every als_restart_interval
  (start to start, the first one an interval after the shutdown); in manual
  mode only when the host writes als_command bit 0 (also honoured in
  automatic mode);
- restart pulse (pump on at reduced power for als_restart_pulse) -> normal
  as soon as the input is back during the pulse; -> shutdown at its end.

Disabled mode never shuts the output (the hazard the driver's safety rules
guard against); switching to it resumes normal operation at once. An
inactive amplifier is in "output disabled" and forgets its ALS timers.
"""

from __future__ import annotations

from dataclasses import dataclass

NORMAL, LOS_SOAK, SHUTDOWN, RESTART_PULSE, OUTPUT_DISABLED = range(5)
MODE_DISABLED, MODE_AUTO, MODE_MANUAL = range(3)
PUMPING_STATES = frozenset({NORMAL, LOS_SOAK, RESTART_PULSE})


@dataclass(frozen=True)
class AlsSettings:
    mode: int = MODE_AUTO
    los_soak_seconds: float = 0.5
    restart_interval_seconds: float = 100.0
    restart_pulse_seconds: float = 2.0


class Als:
    def __init__(self) -> None:
        self.state = OUTPUT_DISABLED
        self.soak_since: float | None = None
        self.next_pulse: float | None = None
        self.pulse_until: float | None = None

    @property
    def pumping(self) -> bool:
        return self.state in PUMPING_STATES

    def settle(self, t: float, *, active: bool, los: bool, settings: AlsSettings) -> bool:
        """Make every transition due at time ``t``; whether the state changed."""
        before = self.state
        for _ in range(16):
            if not self._step(t, active, los, settings):
                break
        return self.state != before

    def deadline(self, los: bool, settings: AlsSettings) -> float | None:
        """When the next timed transition falls, if the input stays as it is."""
        if self.state == LOS_SOAK and los and self.soak_since is not None:
            return self.soak_since + settings.los_soak_seconds
        if self.state == SHUTDOWN and settings.mode == MODE_AUTO:
            return self.next_pulse
        if self.state == RESTART_PULSE:
            return self.pulse_until
        return None

    def restart(self, t: float, settings: AlsSettings) -> bool:
        """The host's restart command: one pulse now, if the output is shut down."""
        if self.state != SHUTDOWN:
            return False
        self._pulse(t, settings)
        return True

    def _enter(self, state: int) -> None:
        self.state = state
        if state in (NORMAL, OUTPUT_DISABLED):
            self.soak_since = self.next_pulse = self.pulse_until = None

    def _pulse(self, t: float, settings: AlsSettings) -> None:
        self.state = RESTART_PULSE
        self.pulse_until = t + settings.restart_pulse_seconds
        if settings.mode == MODE_AUTO:
            self.next_pulse = t + settings.restart_interval_seconds

    def _step(self, t: float, active: bool, los: bool, s: AlsSettings) -> bool:
        state = self.state
        if not active:
            if state == OUTPUT_DISABLED:
                return False
            self._enter(OUTPUT_DISABLED)
            return True
        if state == OUTPUT_DISABLED or (s.mode == MODE_DISABLED and state != NORMAL):
            self._enter(NORMAL)
            return True
        if s.mode == MODE_DISABLED:
            return False
        if state == NORMAL:
            if los:
                self.state, self.soak_since = LOS_SOAK, t
                return True
        elif state == LOS_SOAK:
            if not los:
                self._enter(NORMAL)
                return True
            assert self.soak_since is not None
            if t >= self.soak_since + s.los_soak_seconds:
                self.state = SHUTDOWN
                self.next_pulse = t + s.restart_interval_seconds if s.mode == MODE_AUTO else None
                return True
        elif state == SHUTDOWN:
            if s.mode != MODE_AUTO:
                self.next_pulse = None
            elif self.next_pulse is None:
                self.next_pulse = t + s.restart_interval_seconds
            elif t >= self.next_pulse:
                self._pulse(t, s)
                return True
        elif state == RESTART_PULSE:
            if not los:
                self._enter(NORMAL)
                return True
            if self.pulse_until is None or t >= self.pulse_until:
                self.state = SHUTDOWN
                if s.mode == MODE_AUTO and (self.next_pulse is None or self.next_pulse <= t):
                    self.next_pulse = t + s.restart_interval_seconds
                return True
        return False
