"""The OCS collector: port power and state, the connection map, the LC engine, and which
optional features the unit has.

One probe is ``*CLS`` and six queries: identity, size, the power of every port, the
state of every port, the map with its insertion losses, and the LC figures (those two
are extension queries; a unit without them reports nothing for them, not 0). What the
unit has is asked once per connection (``OcsDriver.features()``): a feature it lacks
is never asked, and ``msoctl_ocs_feature_supported`` says which.

Over a network endpoint (VISA ``TCPIP::host::port::SOCKET``) the connection is kept
between probes in the prober's :class:`~msoctl.exporter.sessions.SessionPool`: the
unit sees one long-lived connection, not one per scrape. A probe on a held
connection that finds it closed by the unit (the first exchange fails as
unreachable) reads once more on a new one. A serial console is opened per probe.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.errors import DeviceUnreachable
from drivers.features import Features
from drivers.ocs.connect import ocs_session
from drivers.ocs.driver import OcsDriver
from drivers.ocs.types import Connection, Identity, LcStatus, PortState
from drivers.scpi.session import ScpiSession
from msoctl.access import timeout_seconds
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import GAUGE, INFO, Families, MetricSpec
from msoctl.exporter.sessions import SessionPool

PORT = ("device", "port", "direction")
PATH = ("device", "ingress", "egress")
PORT_STATES = tuple(state.value for state in PortState)

INFO_METRIC = MetricSpec("msoctl_ocs_info", INFO,
                         "Identity of the OCS (*IDN?): manufacturer, model, serial, firmware.",
                         ("device",))
PORT_POWER = MetricSpec("msoctl_ocs_port_power_dbm", GAUGE,
                        "Optical power at the port's monitor, in dBm.", PORT)
PORT_STATE = MetricSpec("msoctl_ocs_port_state", GAUGE,
                        "1 for the port's current state (enabled, disabled, failed), else 0.",
                        (*PORT, "state"))
CONNECTION = MetricSpec("msoctl_ocs_connection_info", INFO,
                        "One series per connection of the map: ingress port feeds egress port.",
                        PATH)
INSERTION_LOSS = MetricSpec("msoctl_ocs_connection_insertion_loss_db", GAUGE,
                            "Factory insertion loss of the connection's path, in dB.", PATH)
CONNECTIONS = MetricSpec("msoctl_ocs_connections", GAUGE,
                         "Number of connections in the map.")
LC_TEMPERATURE = MetricSpec("msoctl_ocs_lc_cell_temperature_celsius", GAUGE,
                            "Temperature of the liquid-crystal cell.")
LAST_SWITCHING = MetricSpec("msoctl_ocs_last_switching_duration_seconds", GAUGE,
                            "How long the last reconfiguration took to settle.")
PORTS = MetricSpec("msoctl_ocs_ports", GAUGE, "Ports of the switch, ingress and egress.")
FEATURE = MetricSpec("msoctl_ocs_feature_supported", GAUGE,
                     "1 when the unit has the optional feature (power monitors, boot mode, "
                     "LC figures, loss-of-light alarms), else 0.", ("device", "feature"))

METRICS = (INFO_METRIC, PORTS, PORT_POWER, PORT_STATE, CONNECTIONS, CONNECTION,
           INSERTION_LOSS, LC_TEMPERATURE, LAST_SWITCHING, FEATURE)


class OcsCollector(DeviceCollector):
    kind = "ocs"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        device = self.device
        name = device.name
        reading = self._reading()
        identity, size, power = reading.identity, reading.size, reading.power
        states, connections, lc = reading.states, reading.connections, reading.lc

        families.info(INFO_METRIC.name, {
            "manufacturer": identity.manufacturer, "model": identity.model,
            "serial": identity.serial, "firmware": identity.firmware}, device=name)
        families.add(PORTS.name, 2 * size, device=name)
        for feature in reading.features.known:
            families.add(FEATURE.name, int(reading.features.has(feature)), device=name,
                         feature=feature)
        for port, dbm in power.items():
            families.add(PORT_POWER.name, dbm, device=name, port=port,
                         direction=_direction(port, size))
        for port, state in states.items():
            families.state(PORT_STATE.name, state.value, PORT_STATES, device=name, port=port,
                           direction=_direction(port, size))
        families.add(CONNECTIONS.name, len(connections), device=name)
        for connection in connections:
            path = {"ingress": connection.ingress, "egress": connection.egress}
            families.info(CONNECTION.name, {}, device=name, **path)
            families.add(INSERTION_LOSS.name, connection.insertion_loss_db, device=name, **path)
        families.add(LC_TEMPERATURE.name, lc.cell_temperature_celsius, device=name)
        families.add(LAST_SWITCHING.name, lc.last_switching_seconds, device=name)


    def _reading(self) -> _Reading:
        device = self.device
        endpoint = device.endpoint
        seconds = timeout_seconds(device, self.timeout_seconds)
        pool = self.sessions
        key = (device.name, endpoint.transport, endpoint.address.strip())
        if pool is None or not _held_kind(endpoint.transport, endpoint.address):
            pool = None
        held = pool.take(key) if pool is not None else None
        if held is not None:
            held.transport.timeout_seconds = seconds
            try:
                return self._read_on(held, pool, key)
            except DeviceUnreachable:
                pass  # the unit closed it while it was held: once more, on a new one
        session = ocs_session(device.name, endpoint.transport, endpoint.address,
                              timeout_seconds=seconds)
        return self._read_on(session, pool, key)

    def _read_on(self, session: ScpiSession, pool: SessionPool | None,
                 key: tuple[str, str, str]) -> _Reading:
        """Read over ``session``; then give it back to ``pool`` (None: close it), or close
        it if anything failed -- either once the response has gone."""
        try:
            driver = OcsDriver(session, shared_error_queue=self.device.shared_error_queue)
            driver.open()  # *CLS, as on a new connection
            reading = _Reading(driver.identity(), driver.size, driver.power(),
                               driver.port_states(), driver.connections(), driver.lc_status(),
                               driver.features())
        except BaseException:
            self.close_later(session.close)
            raise
        if pool is None:
            self.close_later(session.close)
        else:
            self.close_later(lambda: pool.give_back(key, session))
        return reading


@dataclass
class _Reading:
    identity: Identity
    size: int
    power: dict[int, float | None]
    states: dict[int, PortState]
    connections: list[Connection]
    lc: LcStatus
    features: Features


def _held_kind(transport: str, address: str) -> bool:
    """Whether a connection of this endpoint is kept between probes: a TCP socket."""
    upper = address.strip().upper()
    return transport == "visa" and upper.startswith("TCPIP") and upper.endswith("::SOCKET")


def _direction(port: int, size: int) -> str:
    return "ingress" if port <= size else "egress"
