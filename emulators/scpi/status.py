"""The status of one SCPI client: error queue, IEEE 488.2 status byte and event status
register, and the SCPI-99 OPERation and QUEStionable register sets.

Each client connection of an emulated instrument has its own :class:`ClientStatus`
(a device built with a shared queue hands every client the same one, as some real
units do). What the registers report comes from the device:

- conditions are read from the device at any moment of its clock (a
  :class:`ConditionSource`), together with the moments at which a condition may
  have changed, so an event register latches a transition that came and went
  between two reads (an LC reconfiguration of 30 ms, say) exactly as the
  transition filters say, without anything polling the device;
- errors are pushed by the parser and the device's handlers through
  :meth:`ClientStatus.report`, which also sets the ESR bit of the code's class.

Sources: IEEE 488.2-1992 §11.2 (status byte), §11.5.1 (standard event status
register), §10.18 (*OPC), §10.3 (*CLS); SCPI-99 vol. 1 ch. 9 and vol. 2 ch. 20
(register sets: condition, PTR/NTR transition filters, event, enable; PRESet).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Protocol

from drivers.scpi.codes import SCPI_ERRORS
from drivers.scpi.common import (
    EVENT_STATUS_BITS,
    REGISTER_MASK,
    STATUS_BYTE_BITS,
    event_status_bit,
)
from emulators.clock import Clock

_PON = 1 << EVENT_STATUS_BITS["PON"]
_OPC = 1 << EVENT_STATUS_BITS["OPC"]
_QUEUE_OVERFLOW = -350


class ErrorQueue:
    """The SCPI error/event queue: FIFO, bounded, last slot -350 on overflow
    (SCPI-99 vol. 2 §21.8.2)."""

    def __init__(self, size: int = 16):
        self.size = size
        self._queue: deque[tuple[int, str]] = deque()

    def push(self, code: int, text: str) -> bool:
        """Queue an entry; ``False`` when the queue was full and it was lost."""
        if len(self._queue) >= self.size:
            self._queue[-1] = (_QUEUE_OVERFLOW, SCPI_ERRORS[_QUEUE_OVERFLOW])
            return False
        self._queue.append((code, text))
        return True

    def pop(self) -> tuple[int, str]:
        return self._queue.popleft() if self._queue else (0, SCPI_ERRORS[0])

    def drain(self) -> list[tuple[int, str]]:
        items = list(self._queue)
        self._queue.clear()
        return items or [(0, SCPI_ERRORS[0])]

    def clear(self) -> None:
        self._queue.clear()

    def entries(self) -> list[tuple[int, str]]:
        """What is queued, oldest first, without taking it out."""
        return list(self._queue)

    def __len__(self) -> int:
        return len(self._queue)


class ConditionSource(Protocol):
    def condition_at(self, when: float) -> int:
        """The condition register's value at device time ``when`` (0..32767)."""

    def condition_changes(self, start: float, end: float) -> Iterable[float]:
        """Device times in ``(start, end]`` at which the condition may have changed."""


class NoConditions:
    """A register set whose conditions never arise."""

    def condition_at(self, when: float) -> int:
        return 0

    def condition_changes(self, start: float, end: float) -> Iterable[float]:
        return ()


class RegisterSet:
    """One SCPI-99 status register set: condition -> transition filters -> event -> enable."""

    def __init__(self, source: ConditionSource, clock: Clock):
        self.source = source
        self.clock = clock
        self.enable = 0
        self.positive = REGISTER_MASK  # PTRansition: 0 -> 1 latches
        self.negative = 0  # NTRansition: 1 -> 0 latches
        self._event = 0
        self._seen = 0  # the condition as last sampled
        self._seen_at = clock.now()
        self._sample(self._seen_at)  # a new set starts from nothing: what holds is new

    def _sample(self, moment: float) -> None:
        value = self.source.condition_at(moment) & REGISTER_MASK
        rising, falling = value & ~self._seen, self._seen & ~value
        self._event |= (rising & self.positive) | (falling & self.negative)
        self._seen = value

    def _update(self) -> None:
        """Latch every transition since the last look, at the moments it happened."""
        now = self.clock.now()
        moments = sorted(t for t in self.source.condition_changes(self._seen_at, now)
                         if self._seen_at < t <= now)
        for moment in [*moments, now]:
            self._sample(moment)
        self._seen_at = now

    def condition(self) -> int:
        self._update()
        return self._seen

    def read_event(self) -> int:
        """The event register; reading it clears it (SCPI-99 vol. 2 §20.1.4)."""
        self._update()
        event, self._event = self._event, 0
        return event

    def summary(self) -> bool:
        """The summary bit this set gives the status byte."""
        self._update()
        return bool(self._event & self.enable)

    def clear_event(self) -> None:
        self._update()
        self._event = 0

    def preset(self) -> None:
        """``:STATus:PRESet``: enable 0, every positive transition, no negative one."""
        self._update()
        self.enable, self.positive, self.negative = 0, REGISTER_MASK, 0

    def restart(self) -> None:
        """As at power-on: preset, no event, and conditions that hold count as new."""
        self.preset()
        self._event = 0
        self._seen = 0
        self._sample(self._seen_at)


class ClientStatus:
    """The status reporting of one client, as IEEE 488.2 and SCPI-99 describe it.

    A new one is in the state of a device just powered on: PON set in the event
    status register, enables 0, empty error queue.
    """

    def __init__(self, clock: Clock, *, operation: ConditionSource | None = None,
                 questionable: ConditionSource | None = None, queue_size: int = 16,
                 on_report: Callable[[int, str], None] | None = None):
        self.clock = clock
        self.on_report = on_report  # the device counting errors, for tests and diagnostics
        self.errors = ErrorQueue(queue_size)
        self.operation = RegisterSet(operation or NoConditions(), clock)
        self.questionable = RegisterSet(questionable or NoConditions(), clock)
        self.event_status_enable = 0
        self.service_request_enable = 0
        self.message_available = False  # set by the parser while it builds a response
        self._event_status = _PON
        self._operation_done_at: float | None = None  # *OPC armed until then

    # ---- errors and events --------------------------------------------------------------

    def report(self, code: int, text: str) -> None:
        """Queue an error/event and set the ESR bit of its class."""
        if self.on_report is not None:
            self.on_report(code, text)
        codes = [code] if self.errors.push(code, text) else [code, _QUEUE_OVERFLOW]
        for each in codes:
            bit = event_status_bit(each)
            if bit is not None:
                self._event_status |= 1 << bit

    def arm_operation_complete(self, done_at: float) -> None:
        """``*OPC``: set ESR bit 0 once the device's pending work ends at ``done_at``."""
        self._operation_done_at = done_at

    def _settle_operation_complete(self) -> None:
        if self._operation_done_at is not None and self.clock.now() >= self._operation_done_at:
            self._event_status |= _OPC
            self._operation_done_at = None

    def event_status(self) -> int:
        """The standard event status register without clearing it, 0..255."""
        self._settle_operation_complete()
        return self._event_status

    def read_event_status(self) -> int:
        """``*ESR?``: the register, then cleared (IEEE 488.2 §11.5.1.2)."""
        value = self.event_status()
        self._event_status = 0
        return value

    def status_byte(self) -> int:
        """``*STB?``: the status byte, with MSS (not RQS) in bit 6 (IEEE 488.2 §11.2.2.2)."""
        bits = 0
        if len(self.errors):
            bits |= 1 << STATUS_BYTE_BITS["EAV"]
        if self.questionable.summary():
            bits |= 1 << STATUS_BYTE_BITS["QUES"]
        if self.message_available:
            bits |= 1 << STATUS_BYTE_BITS["MAV"]
        if self.event_status() & self.event_status_enable:
            bits |= 1 << STATUS_BYTE_BITS["ESB"]
        if self.operation.summary():
            bits |= 1 << STATUS_BYTE_BITS["OPER"]
        if bits & self.service_request_enable:
            bits |= 1 << STATUS_BYTE_BITS["MSS"]
        return bits

    # ---- clearing -----------------------------------------------------------------------

    def clear(self) -> None:
        """``*CLS``: error queue, event registers and a pending ``*OPC`` are cleared;
        enables and transition filters are kept (IEEE 488.2 §10.3)."""
        self.errors.clear()
        self._event_status = 0
        self._operation_done_at = None
        self.operation.clear_event()
        self.questionable.clear_event()

    def cancel_operation_complete(self) -> None:
        """``*RST`` leaves the registers alone but forgets a pending ``*OPC`` (§10.32)."""
        self._operation_done_at = None

    def power_on(self) -> None:
        """The device has (re)started: everything as at power-on, PON set."""
        self.clear()
        self.event_status_enable = 0
        self.service_request_enable = 0
        self.operation.restart()
        self.questionable.restart()
        self._event_status = _PON
