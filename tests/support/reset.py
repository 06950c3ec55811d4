"""Put a lab shared by a module's tests back as a new lab has it, and check that it is.

:func:`reset_lab` resets every device the lab serves and then checks each from what the
device itself holds (and each OCS over SCPI, through a client of its own): a reset that
left anything behind raises :class:`LabNotReset`, naming every device and what was left,
so that the test after it never runs on a lab it did not expect.

What is put back: each OCS (connections, port states, boot mode, switching history,
reply form and power monitors as the topology has them, the LC cell's heater and
ambient), each amplifier (controls, thresholds, latched flags, ALS, pumps: as
delivered), each fiber (uncut), every fault on every device and management face (the
switches' NETCONF and SNMP, the CPO/CPC telemetry, the instruments), the transmitters'
launch powers, each switch's datastores (the factory configuration, no lock, no pending
confirmed commit) and congestion model, the journal (removed) and the inventory (written
again). What no reset reaches (a NETCONF or SCPI session a test left open, say) is the
test's to close; what a reset cannot put back, the check reports.
"""

from __future__ import annotations

import time

from lxml import etree

from drivers.errors import DeviceUnreachable
from drivers.ocs import BootMode, OcsDriver, PortState
from drivers.ocs.connect import open_ocs
from emulators.amp.registers import DEFAULTS, read_controls
from emulators.gnmi.server import GnmiServer
from emulators.lab import JOURNAL_FILE, Lab
from emulators.netconf.datastore import empty
from emulators.switch.xmldata import to_xml
from tests.support.journal import remove_journal
from tests.support.lab import ocs_endpoint

AMBIENT_CELSIUS = 25.0
RECONNECT_SECONDS = 5.0


class LabNotReset(AssertionError):
    """What a reset of a shared lab left behind, device by device."""


def reset_lab(lab: Lab) -> None:
    """Put ``lab`` back as a new lab has it and check it (see the module's docstring).

    Raises :class:`LabNotReset` naming what was left when the check fails.
    """
    for name in lab.fibers:
        lab.clear(name, "fiber_cut")
    for bank, port in list(lab._launch_overrides):
        lab.override_launch_power(bank, port, None)
    for spec in lab.topology.ocs:
        device = lab.ocs[spec.name]
        device.faults.clear()
        device.factory_reset()
        device.reply_form = spec.reply_form
        device.power_monitors = spec.power_monitors
        device.alarms_supported = spec.alarms
        device.extensions = spec.extensions
        device.error_extras = spec.error_queries == "all"
        device.heater_on = True
        device.ambient_celsius = AMBIENT_CELSIUS
    for module in lab.amps.values():
        module.factory_reset()
    for name, switch in lab.switches.items():
        switch.factory_reset()
        if name in lab.telemetry:  # a gNMI switch serves no telemetry
            lab.telemetry[name].faults.clear()
    for instrument in lab.instruments.values():
        instrument.faults.clear()
    for server in lab.hosts.values():
        server.factory_reset()
    for spec in lab.topology.test_sets:  # what each instrument has, as the topology says
        laser, meter = lab.instruments[spec.laser], lab.instruments[spec.meter]
        laser.range_queries = spec.laser_range
        meter.all_ports, meter.logging_supported = spec.meter_all_ports, spec.meter_logging
        laser.error_extras = meter.error_extras = spec.error_queries == "all"
    remove_journal(lab.state_dir / JOURNAL_FILE)
    lab.write_inventory()
    left = what_is_left(lab)
    if left:
        raise LabNotReset("the shared lab was not reset: " + "; ".join(left))


def what_is_left(lab: Lab) -> list[str]:
    """What in ``lab`` differs from a new lab, one line per device and thing (empty when
    nothing does)."""
    left: list[str] = []
    for name, fiber in lab.fibers.items():
        if fiber.cut:
            left.append(f"{name}: cut")
    for spec in lab.topology.ocs:
        left += [f"{spec.name}: {what}" for what in _ocs_left(lab, spec.name)]
    for name, module in lab.amps.items():
        if module.faults.active():
            left.append(f"{name}: faults {module.faults.active()}")
        if read_controls(module.memory) != DEFAULTS:
            left.append(f"{name}: controls {read_controls(module.memory)}")
    for name, switch in lab.switches.items():
        if switch.faults.active():
            left.append(f"{name}: faults {switch.faults.active()}")
        if name in lab.telemetry and lab.telemetry[name].faults.active():
            left.append(f"{name}: telemetry faults {lab.telemetry[name].faults.active()}")
        if isinstance(switch.server, GnmiServer):
            if switch.face is None or switch.server.config != switch.face.factory():
                left.append(f"{name}: configuration is not the factory one")
            if switch.server.pending_commit is not None:
                left.append(f"{name}: a confirmed commit is pending")
        elif etree.tostring(switch.datastores.stores["running"]) != _factory_running(lab, name):
            left.append(f"{name}: running configuration is not the factory one")
    for name, instrument in lab.instruments.items():
        if instrument.faults.active():
            left.append(f"{name}: faults {instrument.faults.active()}")
    for name, server in lab.hosts.items():
        if not server.is_factory():
            left.append(f"{name}: faults {server.faults.active()} or GPU state changed")
    if lab._launch_overrides:
        left.append(f"launch powers overridden: {sorted(lab._launch_overrides)}")
    if (lab.state_dir / JOURNAL_FILE).exists():
        left.append(f"{JOURNAL_FILE}: still there")
    return left


def _factory_running(lab: Lab, name: str) -> bytes:
    """Switch ``name``'s running datastore as the switch holds it out of the box."""
    spec = next(s for s in lab.topology.switches if s.name == name)
    holder = empty()
    holder.append(to_xml({"switch": {"ports": {"port": [
        {"name": port, "speed": spec.speed}
        for port in spec.port_names + spec.host_port_names]}}}))
    return bytes(etree.tostring(holder))


def _connect(name: str, kind: str, address: str) -> OcsDriver:
    """A driver for the OCS, once its network port listens again: after a reboot its
    server reopens the port when the device is up (within its 50 ms poll)."""
    deadline = time.monotonic() + RECONNECT_SECONDS
    while True:
        try:
            return open_ocs(name, kind, address, timeout_seconds=2.0)
        except DeviceUnreachable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _ocs_left(lab: Lab, name: str) -> list[str]:
    """What OCS ``name`` still holds, read over SCPI by a client of its own."""
    device = lab.ocs[name]
    left = [f"faults {device.faults.active()}"] if device.faults.active() else []
    kind, address = ocs_endpoint(lab, name, "visa-tcp")
    check = _connect(name, kind, address)
    try:
        if dict(check.port_map()):
            left.append(f"connections {dict(check.port_map())}")
        states = set(check.port_states().values())
        if states != {PortState.ENABLED}:
            left.append(f"port states {sorted(str(s) for s in states)}")
        if device.boot_mode != "restore":  # read on the model: a plain unit has no query
            left.append(f"boot mode {device.boot_mode}")
        if check.features().has("boot_mode") and check.boot_mode() is not BootMode.RESTORE:
            left.append(f"boot mode {check.boot_mode()}")
        if device.last_switch_seconds is not None:
            left.append("a switching history")
        if check.session.query("*TST?") != "0":
            left.append("a failed self-test")
    finally:
        check.close()
    return left
