"""What the emulated bench instruments share: an identity (serial number from the
name unless given), the clock and lock of the optical model they sit in, the SCPI
status they keep (error queue, event status enable) and their faults. Bench
instruments are always powered: they answer every line their SCPI server brings."""

from __future__ import annotations

import zlib
from collections.abc import Callable

from emulators.clock import Clock
from emulators.faults import FaultInjector
from emulators.optics.model import OpticalModel
from emulators.scpi.parser import ErrorQueue


class BenchInstrument:
    """Base of the laser and the power meter (a ``LineDevice`` of emulators/scpi)."""

    SERIAL_PREFIX = "IN"

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
