"""Open the CMIS memory of a pluggable module over any of the three I2C transports.

| transport  | address                                            | page selection    |
|------------|----------------------------------------------------|-------------------|
| optoe      | the optoe file: /sys/bus/i2c/devices/3-0050/eeprom | by the kernel     |
| i2c-dev    | a bus number (3) or /dev/i2c-3                     | PagedIo, verified |
| i2c-bridge | a pyserial URL: /dev/ttyACM0, a pty, socket://h:p  | PagedIo, verified |

On the two raw transports every msoctl process of the user on this machine
takes turns at a module's page select (:mod:`drivers.transports.buslock`).
"""

from __future__ import annotations

from drivers.cmis.io import CmisIo, PagedIo, latched_bytes
from drivers.cmis.pages import STANDARD_FIELDS
from drivers.errors import ValidationError
from drivers.transports.buslock import BusLock
from drivers.transports.i2c_bridge import BridgeBus
from drivers.transports.i2c_bus import check_device_address
from drivers.transports.i2c_optoe import OptoeIo
from drivers.transports.i2c_smbus import SmbusBus

TRANSPORTS = ("optoe", "i2c-dev", "i2c-bridge")
DEFAULT_DEVICE_ADDRESS = 0x50


def open_cmis_io(
    transport: str,
    address: str,
    *,
    device_address: int = DEFAULT_DEVICE_ADDRESS,
    timeout_seconds: float = 2.0,
    latched: frozenset[tuple[int, int]] | None = None,
) -> CmisIo:
    """Open the module's memory and return it ready to use (close it when done).

    ``device_address`` is the module's 7-bit I2C address; the optoe driver is
    bound to its own, so with optoe only the default 0x50 is accepted.
    ``latched`` lists the (page, byte) of clear-on-read bytes, which page
    checks must not read by accident (see :class:`~drivers.cmis.io.PagedIo`);
    by default those of the standard CMIS pages. Pass the vendor pages' too.

    Raises :class:`ValidationError` for an unknown transport or a bad
    address, :class:`DeviceUnreachable` when the file, bus or serial line
    cannot be opened, and for the bridge whatever its version check raises.
    """
    check_device_address(device_address)
    if transport == "optoe":
        if device_address != DEFAULT_DEVICE_ADDRESS:
            raise ValidationError(f"optoe reaches the module at the address its driver is "
                                  f"bound to; device address {device_address:#04x} cannot "
                                  "be chosen here")
        optoe = OptoeIo(address, timeout_seconds=timeout_seconds)
        _open(optoe)
        return optoe
    bus: SmbusBus | BridgeBus
    if transport == "i2c-dev":
        bus = SmbusBus(address, device_address=device_address, timeout_seconds=timeout_seconds)
    elif transport == "i2c-bridge":
        bus = BridgeBus(address, device_address=device_address, timeout_seconds=timeout_seconds)
    else:
        raise ValidationError(f"unknown I2C transport {transport!r}; use one of "
                              f"{', '.join(TRANSPORTS)}")
    _open(bus)
    if latched is None:
        latched = latched_bytes(STANDARD_FIELDS)
    return PagedIo(bus, latched=latched, lock=BusLock(bus.address))


def _open(link: OptoeIo | SmbusBus | BridgeBus) -> None:
    try:
        link.open()
    except BaseException:
        link.close()
        raise
