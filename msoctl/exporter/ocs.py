"""The OCS collector: port power and state, the connection map, the LC engine.

One probe is one SCPI session and six queries: identity, size, the power of every
port, the state of every port, the map with its insertion losses, and the LC
figures (those two are extension queries; a unit without them reports nothing
for them, not 0).
"""

from __future__ import annotations

from drivers.ocs.types import PortState
from msoctl.access import open_ocs
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import GAUGE, INFO, Families, MetricSpec

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

METRICS = (INFO_METRIC, PORTS, PORT_POWER, PORT_STATE, CONNECTIONS, CONNECTION,
           INSERTION_LOSS, LC_TEMPERATURE, LAST_SWITCHING)


class OcsCollector(DeviceCollector):
    kind = "ocs"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        device = self.device
        driver = open_ocs(device, at_most_seconds=self.timeout_seconds)
        self.close_later(driver.close)
        name = device.name
        identity = driver.identity()
        size = driver.size
        power = driver.power()
        states = driver.port_states()
        connections = driver.connections()
        lc = driver.lc_status()

        families.info(INFO_METRIC.name, {
            "manufacturer": identity.manufacturer, "model": identity.model,
            "serial": identity.serial, "firmware": identity.firmware}, device=name)
        families.add(PORTS.name, 2 * size, device=name)
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


def _direction(port: int, size: int) -> str:
    return "ingress" if port <= size else "egress"
