"""What every emulated SCPI device keeps: an identity (a serial number made from its
name unless given), the clock and lock of the optical model it sits in, the SCPI
status registers it answers from (error queue, event status enable), its fault
injector and the listeners told when its power goes off or comes back — what a
``LineDevice`` of :mod:`emulators.scpi.server` needs. It is always powered unless
the device says otherwise (the OCS reboots; the bench instruments do not)."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from emulators.clock import Clock
from emulators.faults import FaultInjector
from emulators.optics.model import OpticalModel
from emulators.scpi.parser import ErrorQueue


class ScpiDevice:
    """Base of the OCS, the tunable laser and the power meter."""

    SERIAL_PREFIX = "SD"

    def __init__(self, name: str, optics: OpticalModel, *, serial: str | None, firmware: str):
        self.name = name
        self.serial = serial or f"{self.SERIAL_PREFIX}{zlib.crc32(name.encode()) % 10**8:08d}"
        self.firmware = firmware
        self.optics = optics
        self.clock: Clock = optics.clock
        self.lock = optics.lock
        self.errors = ErrorQueue()
        self.event_status_enable = 0
        self.faults = FaultInjector(name)
        self.power_listeners: list[Callable[[bool], None]] = []

    def is_up(self) -> bool:
        return True

    def seconds_until_up(self) -> float:
        return 0.0
