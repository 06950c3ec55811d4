"""Opening a device from its inventory entry: the one place msoctl does it.

Every caller — the CLI's commands, the exporter's collectors, the protection
controller's watches, fabric plans and applies, the acceptance test, the
benchmarks — opens devices here, so a device is reached the same way whoever
asks: the same transport, the same timeout, the same options.

Timeouts. Each device waits the inventory's ``timeout_seconds`` for an answer
(for SNMP, its ``snmp:`` section's). A caller with a budget of its own passes
``at_most_seconds``: the exporter its scrape's budget, the protection
controller its device timeout; the inventory's timeout holds when it is shorter.

Each family's driver is imported when a device of that family is opened, not
with this module: ``msoctl ocs status`` loads no NETCONF or SNMP library.

An OCS's loss-of-light alarm stream (:func:`open_alarm_stream`) is opened here too:
on the host of its network address, at the inventory's ``alarm_port`` or, without
one, at the port the unit gives (``:SYST:COMM:ALAR:PORT?``).

Errors are the drivers' (:mod:`drivers.errors`): :class:`ValidationError` for an
entry that cannot be opened that way (an OCS without a console, a device without
``snmp:``, alarms of an OCS reached only over its console), :class:`DeviceUnreachable`
and the rest when the device does not answer; a failed open names the device.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from drivers.errors import DeviceError, ValidationError
from msoctl.inventory import Device, Inventory

if TYPE_CHECKING:
    from drivers.amp.driver import AmpDriver
    from drivers.instruments import LaserDriver, MeterDriver
    from drivers.ocs import OcsDriver
    from drivers.ocs.alarms import (
        EventCallback,
        LostCallback,
        MapCallback,
        OcsAlarmStream,
        SnapshotCallback,
    )
    from drivers.snmp.session import SnmpTarget
    from drivers.switch.gnmi import GnmiSwitchTarget
    from drivers.switch.netconf import NetconfTarget


def timeout_seconds(device: Device, at_most_seconds: float | None = None) -> float:
    """How long ``device`` is waited for: its inventory timeout, or ``at_most_seconds``
    when that is shorter."""
    if at_most_seconds is None:
        return device.timeout_seconds
    return min(device.timeout_seconds, at_most_seconds)


def open_ocs(device: Device, *, console: bool = False,
             at_most_seconds: float | None = None) -> OcsDriver:
    """A ready driver for OCS ``device`` (close it when done): over its network
    endpoint, or its serial console with ``console``. Raises :class:`ValidationError`
    when ``console`` is asked of an entry without one."""
    from drivers.ocs.connect import open_ocs as connect

    endpoint = device.endpoint
    if console:
        if device.console is None:
            raise ValidationError(f"{device.name} has no console in the inventory")
        endpoint = device.console
    return connect(device.name, endpoint.transport, endpoint.address,
                   timeout_seconds=timeout_seconds(device, at_most_seconds),
                   shared_error_queue=device.shared_error_queue)


_VISA_SOCKET = re.compile(r"^TCPIP\d*::(?P<host>[^:]+)::\d+::SOCKET$", re.IGNORECASE)
_SOCKET_URL = re.compile(r"^socket://(?P<host>[^:/]+):\d+$")


def ocs_host(device: Device) -> str:
    """The host of OCS ``device``'s network address (its alarm connection is there);
    :class:`ValidationError` for an OCS reached only over a serial console."""
    address = device.endpoint.address.strip()
    match = _VISA_SOCKET.match(address) or _SOCKET_URL.match(address)
    if match is None:
        raise ValidationError(f"{device.name} is reached at {address!r}, not over TCP: its "
                              "alarm connection needs the unit's network address",
                              device=device.name)
    return match["host"]


def open_alarm_stream(device: Device, *, on_events: EventCallback,
                      on_snapshot: SnapshotCallback,
                      on_lost: LostCallback, on_map: MapCallback | None = None,
                      timeout_seconds: float | None = None,
                      at_most_seconds: float | None = None) -> OcsAlarmStream | None:
    """The loss-of-light alarm stream of OCS ``device``, started (close it when done);
    ``None`` when the unit has no alarms, or serves none now: poll its monitors instead.

    The port is the inventory's ``alarm_port``, else asked of the unit over SCPI (within
    ``at_most_seconds``). ``timeout_seconds``: the silence after which the stream counts
    as lost (default :data:`drivers.ocs.alarms.DEFAULT_TIMEOUT_SECONDS`). The callbacks
    are :class:`~drivers.ocs.alarms.OcsAlarmStream`'s, called in its thread.
    """
    from drivers.ocs.alarms import DEFAULT_TIMEOUT_SECONDS, OcsAlarmStream

    host = ocs_host(device)
    port = device.alarm_port
    if port is None:
        driver = open_ocs(device, at_most_seconds=at_most_seconds)
        try:
            port = driver.alarm_port()
        finally:
            driver.close()
        if port is None:
            return None
    stream = OcsAlarmStream(device.name, host, port, on_events=on_events,
                            on_snapshot=on_snapshot, on_lost=on_lost, on_map=on_map,
                            timeout_seconds=timeout_seconds or DEFAULT_TIMEOUT_SECONDS)
    return stream.start()


def open_amp(device: Device, *, at_most_seconds: float | None = None) -> AmpDriver:
    """A driver for amplifier ``device`` over its I2C transport (close it when done);
    the transport is told which bytes of the memory map clear when read."""
    from drivers.amp import vendor_page
    from drivers.amp.driver import AmpDriver
    from drivers.cmis.io import latched_bytes
    from drivers.cmis.module import CmisModule
    from drivers.cmis.pages import STANDARD_FIELDS
    from drivers.transports.i2c import open_cmis_io

    try:
        io = open_cmis_io(device.endpoint.transport, device.endpoint.address,
                          device_address=device.i2c_address,
                          timeout_seconds=timeout_seconds(device, at_most_seconds),
                          latched=latched_bytes((*STANDARD_FIELDS, *vendor_page.FIELDS)))
    except DeviceError as error:
        error.device = error.device or device.name
        raise
    return AmpDriver(CmisModule(io, name=device.name, extra_fields=vendor_page.FIELDS))


def netconf_target(device: Device, *, at_most_seconds: float | None = None) -> NetconfTarget:
    """How to reach switch ``device`` over NETCONF, its password read now (raises
    :class:`~msoctl.inventory.InventoryError` when the secret cannot be read)."""
    from drivers.switch.netconf import NetconfTarget

    access = device.netconf
    if access is None:
        raise ValidationError(f"{device.name} is not reached over NETCONF")
    password = device.secrets.get("password")
    return NetconfTarget(
        name=device.name, host=access.host, port=access.port, username=access.username,
        password=None if password is None else password.resolve(),
        key_file=access.key_file, known_hosts=access.known_hosts,
        accept_unknown_host_keys=access.accept_unknown_host_keys,
        timeout_seconds=timeout_seconds(device, at_most_seconds), model=device.model)


def gnmi_target(device: Device, *, at_most_seconds: float | None = None) -> GnmiSwitchTarget:
    """How to reach switch ``device`` over gNMI and which model it speaks, its password
    read now."""
    from drivers.switch.gnmi import GnmiSwitchTarget
    from drivers.transports.gnmi import GnmiTarget

    access = device.gnmi
    if access is None:
        raise ValidationError(f"{device.name} is not reached over gNMI")
    password = device.secrets.get("password")
    return GnmiSwitchTarget(GnmiTarget(
        name=device.name, host=access.host, port=access.port, username=access.username,
        password=None if password is None else password.resolve(),
        insecure=access.insecure, ca_file=access.ca_file, cert_file=access.cert_file,
        key_file=access.key_file, server_name=access.server_name,
        timeout_seconds=timeout_seconds(device, at_most_seconds)), model=device.model)


def switch_target(device: Device, *,
                  at_most_seconds: float | None = None) -> NetconfTarget | GnmiSwitchTarget:
    """How to reach switch ``device`` for its configuration, over its transport."""
    if device.gnmi is not None:
        return gnmi_target(device, at_most_seconds=at_most_seconds)
    if device.netconf is None:
        raise ValidationError(f"{device.name} is not managed (transport none)")
    return netconf_target(device, at_most_seconds=at_most_seconds)


def snmp_target(device: Device, *, at_most_seconds: float | None = None) -> SnmpTarget:
    """How to reach the SNMP agent of ``device``, its keys read now; each request waits
    the ``snmp:`` section's timeout, or ``at_most_seconds`` when shorter. Raises
    :class:`ValidationError` when the entry has no ``snmp:``."""
    from drivers.snmp.session import SnmpTarget

    access = device.snmp
    if access is None:
        raise ValidationError(f"{device.name} has no snmp section in the inventory; its "
                              "CPO/CPC telemetry is read over SNMP")
    wait = access.timeout_seconds if at_most_seconds is None else min(
        access.timeout_seconds, at_most_seconds)
    return SnmpTarget(
        name=device.name, host=access.host, port=access.port, version=access.version,
        user=access.user,
        auth_key=None if access.auth_key is None else access.auth_key.resolve(),
        priv_key=None if access.priv_key is None else access.priv_key.resolve(),
        auth_protocol=access.auth_protocol, priv_protocol=access.priv_protocol,
        community=None if access.community is None else access.community.resolve(),
        timeout_seconds=wait, retries=access.retries)


def open_laser(device: Device, *, at_most_seconds: float | None = None) -> LaserDriver:
    """A ready driver for tunable laser ``device`` (close it when done)."""
    from drivers.instruments import open_laser as connect

    return connect(device.name, device.endpoint.transport, device.endpoint.address,
                   timeout_seconds=timeout_seconds(device, at_most_seconds))


def open_meter(device: Device, *, at_most_seconds: float | None = None) -> MeterDriver:
    """A ready driver for power meter ``device`` on its wired ports (close it when done)."""
    from drivers.instruments import open_meter as connect

    assert device.channels is not None  # the inventory requires it of a meter
    return connect(device.name, device.endpoint.transport, device.endpoint.address,
                   channels=device.channels,
                   timeout_seconds=timeout_seconds(device, at_most_seconds))


class Devices:
    """The devices of one inventory, opened by name (each name checked for its kind).

    ``at_most_seconds`` bounds every device's timeout (see the module docstring).
    Raises :class:`~msoctl.inventory.InventoryError` for a name the inventory does not
    have, or of another kind.
    """

    def __init__(self, inventory: Inventory, *, at_most_seconds: float | None = None):
        self.inventory = inventory
        self.at_most_seconds = at_most_seconds

    def ocs(self, name: str, *, console: bool = False) -> OcsDriver:
        return open_ocs(self.inventory.device(name, "ocs"), console=console,
                        at_most_seconds=self.at_most_seconds)

    def alarm_stream(self, name: str, *, on_events: EventCallback,
                     on_snapshot: SnapshotCallback, on_lost: LostCallback,
                     on_map: MapCallback | None = None,
                     timeout_seconds: float | None = None) -> OcsAlarmStream | None:
        """:func:`open_alarm_stream` for the inventory's OCS ``name``."""
        return open_alarm_stream(self.inventory.device(name, "ocs"), on_events=on_events,
                                 on_snapshot=on_snapshot, on_lost=on_lost, on_map=on_map,
                                 timeout_seconds=timeout_seconds,
                                 at_most_seconds=self.at_most_seconds)

    def amp(self, name: str) -> AmpDriver:
        return open_amp(self.inventory.device(name, "amp"), at_most_seconds=self.at_most_seconds)

    def switch_target(self, name: str) -> NetconfTarget | GnmiSwitchTarget:
        return switch_target(self.inventory.device(name, "switch"),
                             at_most_seconds=self.at_most_seconds)

    def snmp_target(self, name: str) -> SnmpTarget:
        device = self.inventory.device(name)
        if device.snmp is None:
            raise ValidationError(
                f"{name} has no snmp section in the inventory ({self.inventory.path}); "
                "its CPO/CPC telemetry is read over SNMP")
        return snmp_target(device, at_most_seconds=self.at_most_seconds)

    def laser(self, name: str) -> LaserDriver:
        return open_laser(self.inventory.device(name, "laser"),
                          at_most_seconds=self.at_most_seconds)

    def meter(self, name: str) -> MeterDriver:
        return open_meter(self.inventory.device(name, "meter"),
                          at_most_seconds=self.at_most_seconds)
