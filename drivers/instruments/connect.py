"""Open an instrument driver over VISA or a serial port.

| transport | address                                  |
|-----------|------------------------------------------|
| visa      | ``TCPIP::host::5025::SOCKET`` (raw SCPI), ``TCPIP::host::INSTR`` (VXI-11), |
|           | ``ASRL/dev/ttyUSB0::INSTR``, ``GPIB0::20::INSTR`` with a GPIB backend |
| serial    | ``/dev/ttyUSB0``, a pty, ``socket://host:5025``                |

Lines end in LF both ways; a serial line runs at 115200 baud, 8N1 (set the
instrument's RS-232 port to match).
"""

from __future__ import annotations

from drivers.instruments.laser import LaserDriver
from drivers.instruments.meter import MeterDriver
from drivers.scpi.session import ScpiSession, opened
from drivers.transports.base import StreamTransport
from drivers.transports.serial import SerialTransport
from drivers.transports.visa import VisaTransport

INSTRUMENT_BAUD = 115200
TRANSPORTS = ("visa", "serial")


def _session(name: str, transport: str, address: str, timeout_seconds: float) -> ScpiSession:
    link: StreamTransport
    if transport == "visa":
        link = VisaTransport(address, baudrate=INSTRUMENT_BAUD, timeout_seconds=timeout_seconds)
    elif transport == "serial":
        link = SerialTransport(address, baudrate=INSTRUMENT_BAUD,
                               timeout_seconds=timeout_seconds)
    else:
        raise ValueError(f"unknown instrument transport {transport!r}; use one of {TRANSPORTS}")
    # Many such instruments have no :SYST:ERR:ALL?: the session learns whether this one
    # has it in the write that asks what the unit has, the first the driver sends.
    return ScpiSession(link, device=name)


def open_laser(name: str, transport: str, address: str, *, timeout_seconds: float = 5.0,
               source: int = 1) -> LaserDriver:
    """Connect, clear stale errors and ask what the laser has (nothing is changed); close
    it when done."""
    return opened(LaserDriver(_session(name, transport, address, timeout_seconds),
                              source=source))


def open_meter(name: str, transport: str, address: str, *, channels: int,
               timeout_seconds: float = 5.0) -> MeterDriver:
    """Connect, clear stale errors and ask what the meter has (nothing is changed: the
    first request that needs it sets the ports idle and in watts); close it when done."""
    return opened(MeterDriver(_session(name, transport, address, timeout_seconds),
                              channels=channels))
