"""The data path state machine of the amplifier's one optical path (CMIS 5.2 section 6.3.3).

The module advertises one application on lane 1 (see :mod:`emulators.amp.registers`), so
lane 1 has a data path and lanes 2-8 of the QSFP-DD shell belong to none: they stay in
DPDeactivated, the ground state. Lane 1 runs on device time:

- the state machine runs only in ModuleReady; in every other module state (low power,
  powering up or down, fault, reset) the data path is DPDeactivated;
- in ModuleReady with DataPathDeinit (page 10h byte 128, lane 1) clear it comes up:
  DPDeactivated -> DPInit -> DPInitialized -> DPTxTurnOn -> DPActivated;
- with DataPathDeinit set it goes down: DPActivated -> DPTxTurnOff -> DPInitialized ->
  DPDeinit -> DPDeactivated;
- a transient state (DPInit, DPDeinit, DPTxTurnOn, DPTxTurnOff) lasts its duration, which
  page 01h advertises (bytes 144 and 168), and is then left for the next state the host's
  request calls for: a request that changes during DPInit is acted on in DPInitialized.

Tx disable (page 10h byte 130) is not part of it: it darkens the output and leaves the
data path state alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.cmis.codes import DATA_PATH_STATE_CODES

DEACTIVATED = DATA_PATH_STATE_CODES["DPDeactivated"]
INIT = DATA_PATH_STATE_CODES["DPInit"]
DEINIT = DATA_PATH_STATE_CODES["DPDeinit"]
ACTIVATED = DATA_PATH_STATE_CODES["DPActivated"]
TX_TURN_ON = DATA_PATH_STATE_CODES["DPTxTurnOn"]
TX_TURN_OFF = DATA_PATH_STATE_CODES["DPTxTurnOff"]
INITIALIZED = DATA_PATH_STATE_CODES["DPInitialized"]


@dataclass(frozen=True)
class DataPathTimes:
    """How long the module takes in each transient state, seconds."""

    init_seconds: float = 0.008
    deinit_seconds: float = 0.004
    tx_turn_on_seconds: float = 0.004
    tx_turn_off_seconds: float = 0.001


class DataPath:
    def __init__(self, times: DataPathTimes, *, activated: bool):
        self.times = times
        self.state = ACTIVATED if activated else DEACTIVATED
        self.until: float | None = None

    def deadline(self) -> float | None:
        """When the present transient state ends (None in a steady state)."""
        return self.until

    def settle(self, t: float, *, module_ready: bool, deinit: bool) -> bool:
        """Every transition due at ``t``; whether the state changed."""
        before = self.state
        for _ in range(8):
            if not self._step(t, module_ready, deinit):
                break
        return self.state != before

    def _enter(self, state: int, t: float, seconds: float | None = None) -> None:
        self.state = state
        self.until = None if seconds is None else t + seconds

    def _step(self, t: float, module_ready: bool, deinit: bool) -> bool:
        if not module_ready:
            if self.state == DEACTIVATED and self.until is None:
                return False
            self._enter(DEACTIVATED, t)
            return True
        if self.until is not None and t < self.until:
            return False
        state, times = self.state, self.times
        if state == DEACTIVATED and not deinit:
            self._enter(INIT, t, times.init_seconds)
        elif state == INIT:
            self._enter(INITIALIZED, t)
        elif state == INITIALIZED:
            if deinit:
                self._enter(DEINIT, t, times.deinit_seconds)
            else:
                self._enter(TX_TURN_ON, t, times.tx_turn_on_seconds)
        elif state == TX_TURN_ON:
            if deinit:
                self._enter(TX_TURN_OFF, t, times.tx_turn_off_seconds)
            else:
                self._enter(ACTIVATED, t)
        elif state == ACTIVATED and deinit:
            self._enter(TX_TURN_OFF, t, times.tx_turn_off_seconds)
        elif state == TX_TURN_OFF:
            self._enter(INITIALIZED, t)
        elif state == DEINIT:
            self._enter(DEACTIVATED, t)
        else:
            return False
        return True
