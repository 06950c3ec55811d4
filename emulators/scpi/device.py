"""What every emulated SCPI device keeps: an identity (a serial number made from its
name unless given), the clock and lock of the optical model it sits in, the status
of each client talking to it, what its clients sent (``requests``, a
:class:`~emulators.scpi.requests.RequestLog`), its fault injector and the listeners told when its
power goes off or comes back — what a ``LineDevice`` of :mod:`emulators.scpi.server`
needs. It is always powered unless the device says otherwise (the OCS reboots; the
test-set instruments do not).

Client status: every client (a TCP connection, the serial console) gets its own
error queue and status registers from :meth:`ScpiDevice.new_client_status`, so one
client never reads another's errors. A device built with ``shared_status`` models a
unit with one queue and one set of registers for everybody: every client then gets
the same :class:`~emulators.scpi.status.ClientStatus`.

A subclass says what the common commands mean for it: :meth:`model` (for
``*IDN?``), :meth:`reset` (``*RST``), :meth:`self_test` (``*TST?``),
:meth:`pending_until` (``*OPC``, ``*OPC?``, ``*WAI``) and the condition sources of
its OPERation and QUEStionable registers.
"""

from __future__ import annotations

import weakref
import zlib
from collections.abc import Callable

from emulators.clock import Clock
from emulators.faults import FaultInjector
from emulators.optics.model import OpticalModel
from emulators.scpi.requests import RequestLog
from emulators.scpi.status import ClientStatus, ConditionSource, NoConditions


class ScpiDevice:
    """Base of the OCS, the tunable laser and the power meter."""

    SERIAL_PREFIX = "SD"
    MANUFACTURER = "MegaScaleOut"

    def __init__(self, name: str, optics: OpticalModel, *, serial: str | None, firmware: str,
                 shared_status: bool = False, manufacturer: str | None = None):
        self.name = name
        self.manufacturer = manufacturer or self.MANUFACTURER
        self.serial = serial or f"{self.SERIAL_PREFIX}{zlib.crc32(name.encode()) % 10**8:08d}"
        self.firmware = firmware
        self.optics = optics
        self.clock: Clock = optics.clock
        self.lock = optics.lock
        self.shared_status = shared_status
        self.faults = FaultInjector(name)
        self.power_listeners: list[Callable[[bool], None]] = []
        self._statuses: weakref.WeakSet[ClientStatus] = weakref.WeakSet()
        self._shared: ClientStatus | None = None
        self.error_extras = True
        """Whether it answers SCPI-99's optional error-queue queries (``:SYST:ERR:ALL?``,
        ``:COUN?``, ``:CODE?``); a unit without them has only ``:SYST:ERR[:NEXT]?``."""
        self.requests = RequestLog()
        """What its clients sent: every program message, every command by its key."""
        self.errors_reported = 0
        """Errors any client has caused since the device was built (a closed connection's
        queue is gone with it; this count is not)."""

    # ---- client status ------------------------------------------------------------------

    def new_client_status(self) -> ClientStatus:
        """The status a new client talks to: its own, or the one shared status."""
        if self.shared_status and self._shared is not None:
            return self._shared
        status = ClientStatus(self.clock, operation=self.operation_conditions(),
                              questionable=self.questionable_conditions(),
                              on_report=self._count_error)
        self._statuses.add(status)
        if self.shared_status:
            self._shared = status
        return status

    def _count_error(self, code: int, text: str) -> None:
        with self.lock:
            self.errors_reported += 1

    def client_statuses(self) -> list[ClientStatus]:
        """The status of every client still connected (one when shared)."""
        return list(self._statuses)

    def power_on_status(self) -> None:
        """The device has restarted: every client's status is as at power-on."""
        for status in self.client_statuses():
            status.power_on()

    # ---- what the common commands mean for this device ---------------------------------

    def model(self) -> str:
        return type(self).__name__

    def identity(self) -> str:
        """The ``*IDN?`` reply: manufacturer, model, serial number, firmware."""
        return f"{self.manufacturer},{self.model()},{self.serial},{self.firmware}"

    def reset(self) -> None:
        """``*RST``: the device's own reset; nothing by default."""

    def self_test(self) -> int:
        """``*TST?``: 0 when the self-test passes, else a device-defined fault code."""
        return 0

    def pending_until(self) -> float:
        """Device time at which every operation started so far has completed."""
        return self.clock.now()

    def operation_conditions(self) -> ConditionSource:
        return NoConditions()

    def questionable_conditions(self) -> ConditionSource:
        return NoConditions()

    # ---- power ------------------------------------------------------------------------

    def is_up(self) -> bool:
        return True

    def seconds_until_up(self) -> float:
        return 0.0
