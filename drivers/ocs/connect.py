"""Open an OCS driver over either transport.

| transport | address                          | host sends | switch answers |
|-----------|----------------------------------|------------|----------------|
| visa      | ``TCPIP::host::5025::SOCKET``    | LF         | LF             |
| visa      | ``ASRL/dev/ttyUSB0::INSTR``      | CR LF      | CR             |
| serial    | ``/dev/ttyUSB0``, a pty          | CR LF      | CR             |
| serial    | ``socket://host:5025``           | LF         | LF             |

The serial console runs at 38400 baud, 8N1.
"""

from __future__ import annotations

from drivers.ocs.driver import OcsDriver
from drivers.scpi.session import ScpiSession, opened
from drivers.transports.base import StreamTransport
from drivers.transports.serial import SerialTransport
from drivers.transports.visa import VisaTransport

CONSOLE_BAUD = 38400
TRANSPORTS = ("visa", "serial")


def is_console(transport: str, address: str) -> bool:
    upper = address.upper()
    if transport == "visa":
        return upper.startswith("ASRL")
    return not address.startswith(("socket://", "rfc2217://"))


def open_ocs(
    name: str, transport: str, address: str, *, timeout_seconds: float = 5.0,
    shared_error_queue: bool = False,
) -> OcsDriver:
    """Connect, clear stale errors, and return a ready driver (close it when done).

    ``shared_error_queue``: the unit keeps one error queue for every client
    (see :class:`~drivers.ocs.driver.OcsDriver`); per-client queues by default.
    """
    session = ocs_session(name, transport, address, timeout_seconds=timeout_seconds)
    return opened(OcsDriver(session, shared_error_queue=shared_error_queue))


def ocs_session(name: str, transport: str, address: str, *,
                timeout_seconds: float = 5.0) -> ScpiSession:
    """The SCPI session of an OCS at ``address``, not yet connected (ValueError for an
    unknown transport). A caller that holds it across drivers (the exporter's pool)
    builds an :class:`OcsDriver` on it for each use."""
    link: StreamTransport
    if transport == "visa":
        link = VisaTransport(address, baudrate=CONSOLE_BAUD, timeout_seconds=timeout_seconds)
    elif transport == "serial":
        link = SerialTransport(address, baudrate=CONSOLE_BAUD, timeout_seconds=timeout_seconds)
    else:
        raise ValueError(f"unknown OCS transport {transport!r}; use one of {TRANSPORTS}")
    console = is_console(transport, address)
    return ScpiSession(
        link,
        device=name,
        write_termination=b"\r\n" if console else b"\n",
        read_termination=b"\r" if console else b"\n",
    )
