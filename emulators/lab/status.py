"""What a running lab looks like, and which faults each of its parts can take.

:func:`lab_status` is the document behind ``msoctl lab status`` (the control
endpoint's ``GET /v1/status``): every device with its kind, the addresses it
serves, whether it is up, the faults active on it and the kinds it takes;
every fiber, cut or not; and the light on the ports that matter. It is the
lab's own view: ``power_dbm`` is what the optical model carries (the truth),
beside what a device's monitor would report (``monitor_dbm``).

Key ports: on an OCS, every port a cable's fiber enters or leaves, every port
patched to a switch port that is on a link, every port in a connection now
and every port disabled or failed; on a switch, every port. A port is ``dark`` when less than
:data:`DARK_DBM` reaches it.

Fault targets and kinds (:func:`fault_kinds`) are read from the devices'
own injectors, never listed here: a device takes what its
:class:`~emulators.faults.FaultInjector` takes, a switch's SNMP agent
(``<switch>/snmp``) what its telemetry's injector takes, and a cable or a
single fiber of the optical model takes ``fiber_cut``.

Values: dBm rounded to 0.01; ``None`` (JSON ``null``) for no light at all or a
value that is not available.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from drivers.amp.vendor_page import ALS_STATES
from drivers.cmis.codes import MODULE_STATE_CODES
from emulators.faults import Fault, FaultError
from emulators.lab.constants import SNMP_FACE

if TYPE_CHECKING:
    from emulators.lab.lab import Lab

FIBER_CUT = "fiber_cut"
DARK_DBM = -40.0
"""Below this a port counts as dark (the amplifier's monitor floor; OCS monitors read
about -60 dBm with no light)."""
PORT_STATES = {"E": "enabled", "D": "disabled", "F": "failed"}
_MODULE_STATE_NAMES = {code: name for name, code in MODULE_STATE_CODES.items()}


# ---- fault targets ---------------------------------------------------------------------


def fault_targets(lab: Lab) -> dict[str, list[str]]:
    """Every fault target of ``lab`` and the kinds it takes: devices, each switch's SNMP
    agent, cables, then fibers."""
    targets: dict[str, list[str]] = {}
    for name in [*lab.ocs, *lab.amps, *lab.switches, *lab.instruments]:
        targets[name] = lab.faults(name).kinds()
    for name in lab.telemetry:
        targets[f"{name}/{SNMP_FACE}"] = lab.faults(f"{name}/{SNMP_FACE}").kinds()
    for cable in lab.topology.cables:
        targets[cable.name] = [FIBER_CUT]
    for fiber in lab.fibers:
        targets.setdefault(fiber, [FIBER_CUT])
    return targets


def fault_kinds(lab: Lab, target: str) -> list[str]:
    """The fault kinds ``target`` takes; :class:`FaultError` naming the targets there are
    when there is no such target."""
    kinds = fault_targets(lab).get(target)
    if kinds is None:
        raise FaultError(f"no device, cable or fiber named {target!r}; targets: "
                         f"{', '.join(_target_names(lab))} (fibers: see lab status)")
    return kinds


def check_fault(lab: Lab, target: str, kind: str) -> None:
    """Refuse (:class:`FaultError`) a kind that ``target`` does not take, listing those it
    does."""
    kinds = fault_kinds(lab, target)
    if kind not in kinds:
        raise FaultError(f"{target} does not support fault {kind!r}; supported: "
                         f"{', '.join(kinds)}")


def fibers_of(lab: Lab, target: str) -> list[str]:
    """The fibers a fiber cut on ``target`` cuts: the fiber itself, or a cable's."""
    if target in lab.fibers:
        return [target]
    return [f.name for cable in lab.topology.cables if cable.name == target
            for f in cable.fibers]


def _target_names(lab: Lab) -> list[str]:
    return [*lab.ocs, *lab.amps, *lab.switches, *lab.instruments,
            *(f"{name}/{SNMP_FACE}" for name in lab.telemetry),
            *(cable.name for cable in lab.topology.cables)]


def fault_document(fault: Fault) -> dict[str, Any]:
    document = asdict(fault)
    if fault.kind != "reboot":
        del document["power_loss"]  # only a reboot reads it
    return document


# ---- status ----------------------------------------------------------------------------


def lab_status(lab: Lab) -> dict[str, Any]:
    """The status document (see the module docstring); JSON-ready."""
    return {
        "lab": {
            "topology": lab.topology.name,
            "state_dir": str(lab.state_dir.resolve()),
            "inventory": str((lab.state_dir / "inventory.yaml").resolve()),
            "pid": os.getpid(),
            "clock_seconds": round(lab.clock.now(), 3),
        },
        "devices": [*(_ocs(lab, name) for name in lab.ocs),
                    *(_amplifier(lab, name) for name in lab.amps),
                    *(_switch(lab, name) for name in lab.switches),
                    *(_instrument(lab, name) for name in lab.instruments)],
        "fibers": _fibers(lab),
    }


def _dbm(value: float | None) -> float | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return round(value, 2)


def _dark(power_dbm: float) -> bool:
    return not power_dbm >= DARK_DBM


def _faults(lab: Lab, target: str) -> dict[str, Any]:
    return {"faults": [fault_document(f) for f in lab.faults(target).active()],
            "fault_kinds": lab.faults(target).kinds()}


def _ocs(lab: Lab, name: str) -> dict[str, Any]:
    device = lab.ocs[name]
    serving: dict[str, str] = {}
    if name in lab.tcp:
        serving["scpi"] = f"127.0.0.1:{lab.tcp[name].port}"
    if name in lab.consoles:
        serving["console"] = lab.consoles[name].path
    connections = device.connection_map()
    peers = {**connections, **{egress: ingress for ingress, egress in connections.items()}}
    ports = []
    for port, (peer, fiber, cable) in sorted(_ocs_key_ports(lab, name, peers).items()):
        power = lab.optics.power_dbm(f"{name}:{port}")
        ports.append({
            "port": port,
            "direction": "ingress" if device.is_ingress(port) else "egress",
            "peer": peer,
            "fiber": fiber,
            "cable": cable,
            "state": PORT_STATES.get(device.port_state(port), device.port_state(port)),
            "connected_to": peers.get(port),
            "power_dbm": _dbm(power),
            "monitor_dbm": _dbm(device.monitor_dbm(port)),
            "dark": _dark(power),
        })
    return {"name": name, "kind": "ocs", "serving": serving, "up": device.is_up(),
            **_faults(lab, name), "ports": ports}


def _ocs_key_ports(lab: Lab, name: str,
                   connected: dict[int, int]) -> dict[int, tuple[str | None, str | None,
                                                                 str | None]]:
    """Key ports of OCS ``name``: port -> (the port at the other end of its fiber, the
    fiber, the cable it belongs to)."""
    fibers_at: dict[int, tuple[str, str, str | None]] = {}
    for fiber in lab.topology.fibers():
        for here, there in ((fiber.to_port, fiber.from_port), (fiber.from_port, fiber.to_port)):
            element, _, port = here.partition(":")
            if element == name:
                fibers_at[int(port)] = (there, fiber.name, fiber.cable)
    wanted = {port for port, (_, _, cable) in fibers_at.items() if cable is not None}
    for link in lab.topology.links:
        for end in (link.a, link.b):
            for ocs_port in lab.topology.ocs_ports_of(end) or ():
                element, _, port = ocs_port.partition(":")
                if element == name:
                    wanted.add(int(port))
    wanted |= set(connected)
    device = lab.ocs[name]
    wanted |= {port for port in range(1, 2 * device.size + 1) if device.port_state(port) != "E"}
    return {port: fibers_at.get(port, (None, None, None)) for port in wanted}


def _amplifier(lab: Lab, name: str) -> dict[str, Any]:
    module = lab.amps[name]
    serving: dict[str, str] = {}
    bridge = lab.bridges.get(name)
    if bridge is not None:
        serving["i2c_bridge"] = f"127.0.0.1:{bridge.port}"
        if bridge.path:
            serving["console"] = bridge.path
    state = module.module_state
    spans = [f.cable for f in lab.topology.fibers() if f.amplifier == name]
    return {
        "name": name, "kind": "amp", "serving": serving,
        "up": _MODULE_STATE_NAMES.get(state) == "ModuleReady",
        **_faults(lab, name),
        "span": spans[0] if spans else None,
        "module_state": _MODULE_STATE_NAMES.get(state, str(state)),
        "als_state": ALS_STATES.get(module.als_state),
        "input_power_dbm": _dbm(module.input_dbm),
        "output_power_dbm": _dbm(module.output_dbm),
        "gain_db": _dbm(module.gain_db),
    }


def _switch(lab: Lab, name: str) -> dict[str, Any]:
    device = lab.switches[name]
    serving: dict[str, str] = {}
    if device.server is not None:
        serving["netconf"] = f"127.0.0.1:{device.port}"
    agent = lab.snmp.get(name)
    if agent is not None:
        serving["snmp"] = f"udp 127.0.0.1:{agent.port}"
    document: dict[str, Any] = {"name": name, "kind": "switch", "serving": serving,
                                "up": device.server is not None, **_faults(lab, name)}
    if name in lab.telemetry:
        face = f"{name}/{SNMP_FACE}"
        on_switch = lab.faults(name).active()
        # Hardware faults named on the switch are carried out by its telemetry: list
        # them once, on the switch.
        document["snmp"] = {
            "target": face,
            "up": agent is not None and agent.is_up,
            "faults": [fault_document(f) for f in lab.faults(face).active()
                       if f not in on_switch],
            "fault_kinds": lab.faults(face).kinds(),
        }
    links = {end: link.name for link in lab.topology.links for end in (link.a, link.b)}
    spec = next(s for s in lab.topology.switches if s.name == name)
    ports = []
    for number, port in enumerate(spec.port_names, start=1):
        rx = lab.optics.power_dbm(f"{name}:rx{number}")
        ports.append({"port": port, "link": links.get(f"{name}:{port}"),
                      "tx_power_dbm": _dbm(lab.optics.power_dbm(f"{name}:tx{number}")),
                      "rx_power_dbm": _dbm(rx), "dark": _dark(rx)})
    document["ports"] = ports
    return document


def _instrument(lab: Lab, name: str) -> dict[str, Any]:
    """A laser or power meter of an acceptance test set: where it serves, and on which OCS
    (the key ``bench``, its first name)."""
    test_set = next(t for t in lab.test_sets.values() if name in (t.laser.name, t.meter.name))
    server = test_set.servers.get(name)
    kind = "laser" if name == test_set.laser.name else "meter"
    return {"name": name, "kind": kind,
            "serving": {} if server is None else {"scpi": f"127.0.0.1:{server.port}"},
            "up": server is not None, **_faults(lab, name), "bench": test_set.ocs.name}


def _fibers(lab: Lab) -> list[dict[str, Any]]:
    found = []
    for spec in lab.topology.fibers():
        fiber = lab.fibers[spec.name]
        arriving = lab.optics.power_dbm(f"{spec.name}:out")
        found.append({
            "name": spec.name, "cable": spec.cable, "from": spec.from_port, "to": spec.to_port,
            "amplifier": spec.amplifier, "length_km": spec.length_km, "cut": fiber.cut,
            "arriving_dbm": _dbm(arriving), "dark": _dark(arriving),
        })
    return found
