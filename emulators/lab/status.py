"""What a running lab looks like, and which faults each of its parts can take.

:func:`lab_status` is the document behind ``msoctl lab status`` (the control
endpoint's ``GET /v1/status``): every device with its kind, the addresses it
serves, whether it is up, the faults active on it and the kinds it takes;
every fiber, cut or not; every cable with its spans and every span, each ``cut``
when all its fibers are; the processes that serve the lab; and the light on the
ports that matter. It is the lab's own view: ``power_dbm`` is what the optical
model carries (the truth), beside what a device's monitor would report
(``monitor_dbm``). A lab spread over processes (emulators/lab/spread.py) merges
the documents of its parts into this same shape.

Key ports: on an OCS, every port a span's fiber enters or leaves, every port
patched to a switch port that is on a link, every port in a connection now
and every port disabled or failed; on a switch, every port. A port is ``dark`` when less than
:data:`DARK_DBM` reaches it.

Fault targets and kinds (:func:`fault_kinds`) are read from the devices'
own injectors, never listed here: a device takes what its
:class:`~emulators.faults.FaultInjector` takes, a switch's SNMP agent
(``<switch>/snmp``) what its telemetry's injector takes; a cable takes
``cable_cut`` and ``fiber_cut`` (the same: every fiber of its spans), a span or a
single fiber ``fiber_cut`` -- and so does a span in a cable of its own, which
shares its name (the older topology form: the default's ``span-1``).

Values: dBm rounded to 0.01; ``None`` (JSON ``null``) for no light at all or a
value that is not available.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from drivers.amp.vendor_page import ALS_STATES
from drivers.cmis.codes import MODULE_STATE_CODES
from emulators.faults import Fault, FaultError
from emulators.lab.constants import SNMP_FACE

if TYPE_CHECKING:
    from emulators.lab.lab import Lab
    from emulators.lab.topology import Topology

FIBER_CUT = "fiber_cut"
CABLE_CUT = "cable_cut"
"""Cuts every fiber of every span of a cable at once (``fiber_cut`` on a cable does the
same; ``cable_cut`` says it is a cable, and refuses anything else)."""
CUT_KINDS = (FIBER_CUT, CABLE_CUT)
DARK_DBM = -40.0
"""Below this a port counts as dark (the amplifier's monitor floor; OCS monitors read
about -60 dBm with no light)."""
PORT_STATES = {"E": "enabled", "D": "disabled", "F": "failed"}
_MODULE_STATE_NAMES = {code: name for name, code in MODULE_STATE_CODES.items()}


# ---- fault targets ---------------------------------------------------------------------


def fault_targets(lab: Lab) -> dict[str, list[str]]:
    """Every fault target of ``lab`` and the kinds it takes: devices, each switch's SNMP
    agent, cables, spans (not already named as their cable), then fibers."""
    targets: dict[str, list[str]] = {}
    for name in [*lab.ocs, *lab.amps, *lab.switches, *lab.instruments, *lab.hosts]:
        targets[name] = lab.faults(name).kinds()
    for name in lab.telemetry:
        targets[f"{name}/{SNMP_FACE}"] = lab.faults(f"{name}/{SNMP_FACE}").kinds()
    spans = {s.name for s in lab.topology.spans}
    for cable in lab.topology.cables:
        # A span in a cable of its own shares its name and is listed as the span it is.
        targets[cable.name] = [FIBER_CUT] if cable.name in spans else [CABLE_CUT, FIBER_CUT]
    for span in lab.topology.spans:
        targets.setdefault(span.name, [FIBER_CUT])
    for fiber in lab.fibers:
        targets.setdefault(fiber, [FIBER_CUT])
    return targets


def listed_targets(targets: dict[str, list[str]], topology: Topology) -> list[str]:
    """The targets an error names: the devices, SNMP agents and cables (spans and fibers
    are too many; ``lab status`` lists them)."""
    fibers = {f.name for f in topology.fibers()} | {s.name for s in topology.spans}
    cables = {c.name for c in topology.cables}
    return [name for name in targets if name in cables or name not in fibers]


def fault_kinds(targets: dict[str, list[str]], topology: Topology, target: str) -> list[str]:
    """The fault kinds ``target`` takes; :class:`FaultError` naming the targets there are
    when there is no such target."""
    kinds = targets.get(target)
    if kinds is None:
        raise FaultError(f"no device, cable or fiber named {target!r}; targets: "
                         f"{', '.join(listed_targets(targets, topology))} (spans and fibers: "
                         "see lab status)")
    return kinds


def check_fault(targets: dict[str, list[str]], topology: Topology, target: str,
                kind: str) -> None:
    """Refuse (:class:`FaultError`) a kind that ``target`` does not take, listing those it
    does."""
    kinds = fault_kinds(targets, topology, target)
    if kind not in kinds:
        raise FaultError(f"{target} does not support fault {kind!r}; supported: "
                         f"{', '.join(kinds)}")


def fibers_of(topology: Topology, target: str) -> list[str]:
    """The fibers a cut on ``target`` cuts: the fiber itself, a span's, or a cable's (a
    name may be both a span and its own cable: the same fibers); [] for anything else."""
    cable = topology.cable(target)
    if cable is not None:
        return [f.name for f in cable.fibers]
    span = topology.span(target)
    if span is not None:
        return [f.name for f in span.fibers]
    return [f.name for f in topology.fibers() if f.name == target]


def fault_document(fault: Fault) -> dict[str, Any]:
    document = asdict(fault)
    if fault.kind != "reboot":
        del document["power_loss"]  # only a reboot reads it
    return document


# ---- status ----------------------------------------------------------------------------


def lab_status(lab: Lab) -> dict[str, Any]:
    """The status document (see the module docstring); JSON-ready."""
    fibers = _fibers(lab)
    return {
        "lab": {
            "topology": lab.topology.name,
            "state_dir": str(lab.state_dir.resolve()),
            "inventory": str((lab.state_dir / "inventory.yaml").resolve()),
            "pid": os.getpid(),
            "clock_seconds": round(lab.clock.now(), 3),
            "processes": [process_entry(lab)],
        },
        "devices": [*(_ocs(lab, name) for name in lab.ocs),
                    *(_amplifier(lab, name) for name in lab.amps),
                    *(_switch(lab, spec.name) for spec in lab.topology.switches),
                    *(_instrument(lab, name) for name in lab.instruments),
                    *(_host(lab, name) for name in lab.hosts)],
        "fibers": fibers,
        **cables_and_spans(lab.topology, fibers),
    }


def process_entry(lab: Lab) -> dict[str, Any]:
    """Which process serves which part of the lab: its pid and how much of it it holds."""
    return {"pid": os.getpid(), "role": "worker" if lab.worker else "lab",
            "ocs": len(lab.ocs), "switches": len(lab.topology.switches),
            "amplifiers": len(lab.amps), "links": len(lab.topology.links),
            "cpu_seconds": round(time.process_time(), 3)}


def cables_and_spans(topology: Topology, fibers: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``cables`` (each with its ``spans``) and ``spans`` of the status document, from
    its ``fibers``: a span or a cable is ``cut`` when every one of its fibers is, and
    ``fibers_cut`` counts those that are."""
    cut = {f["name"]: bool(f["cut"]) for f in fibers}
    spans = []
    for span in topology.spans:
        names = [f.name for f in span.fibers]
        ends = sorted({part.split(":")[0] for f in span.fibers
                       for part in (f.from_port, f.to_port)})
        spans.append({"name": span.name, "cable": span.cable, "role": span.role,
                      "length_km": span.length_km, "ocs": ends, "fibers": names,
                      "amplifiers": [f.amplifier for f in span.fibers if f.amplifier],
                      "cut": all(cut.get(n, False) for n in names),
                      "fibers_cut": sum(cut.get(n, False) for n in names)})
    cables = []
    for cable in topology.cables:
        names = [f.name for f in cable.fibers]
        cables.append({"name": cable.name, "role": cable.role, "length_km": cable.length_km,
                       "spans": list(cable.spans), "fibers": len(names),
                       "cut": all(cut.get(n, False) for n in names),
                       "fibers_cut": sum(cut.get(n, False) for n in names)})
    return {"cables": cables, "spans": spans}


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
    if name in lab.alarm_servers:
        serving["alarms"] = f"127.0.0.1:{lab.alarm_servers[name].port}"
    if name in lab.consoles:
        serving["console"] = lab.consoles[name].path
    connections = device.connection_map()
    peers = {**connections, **{egress: ingress for ingress, egress in connections.items()}}
    ports = []
    key_ports = sorted(_ocs_key_ports(lab, name, peers).items())
    powers = lab.optics.powers_dbm(f"{name}:{port}" for port, _ in key_ports)
    monitors = device.monitor_dbms([port for port, _ in key_ports])
    for (port, (peer, fiber, cable)), power, monitor in zip(key_ports, powers, monitors,
                                                            strict=True):
        ports.append({
            "port": port,
            "direction": "ingress" if device.is_ingress(port) else "egress",
            "peer": peer,
            "fiber": fiber,
            "cable": cable,
            "state": PORT_STATES.get(device.port_state(port), device.port_state(port)),
            "connected_to": peers.get(port),
            "power_dbm": _dbm(power),
            "monitor_dbm": _dbm(monitor),
            "dark": _dark(power),
        })
    requests = device.requests
    return {"name": name, "kind": "ocs", "serving": serving, "up": device.is_up(),
            **_faults(lab, name), "ports": ports,
            # what every client sent (program messages, whole-map replaces), for whoever
            # measures a controller's cost from outside the lab's processes
            "requests": {"messages": len(requests.times),
                         "replace_map": requests.commands["connect_only"]}}


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


def _host(lab: Lab, name: str) -> dict[str, Any]:
    """A GPU server: its exporters, and each GPU's and NIC's state as the model has it."""
    server = lab.hosts[name]
    exporters = lab.host_exporters.get(name)
    serving = ({} if exporters is None else
               {role: f"127.0.0.1:{endpoint.port}" for role, endpoint
                in exporters.endpoints.items() if endpoint.server is not None})
    snapshot = server.snapshot()
    return {
        "name": name, "kind": "host", "serving": serving, "up": bool(serving),
        **_faults(lab, name),
        "vendor": server.vendor, "model": server.model,
        "gpus": [{"index": gpu.index, "healthy": gpu.healthy, "on_bus": gpu.on_bus,
                  "xid": gpu.xid, "temperature_celsius": round(gpu.temperature_celsius, 1),
                  "utilisation": round(gpu.utilisation, 3)} for gpu in snapshot.gpus],
        "nics": [{"name": nic.name, "up": nic.up} for nic in snapshot.nics],
    }


def _amplifier(lab: Lab, name: str) -> dict[str, Any]:
    module = lab.amps[name]
    serving: dict[str, str] = {}
    bridge = lab.bridges.get(name)
    if bridge is not None:
        serving["i2c_bridge"] = f"127.0.0.1:{bridge.port}"
        if bridge.path:
            serving["console"] = bridge.path
    state = module.module_state
    spans = [f.span for f in lab.topology.fibers() if f.amplifier == name]
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
    device = lab.switches.get(name)
    serving: dict[str, str] = {}
    if device is not None and device.server is not None:
        protocol = device.transport
        serving[protocol] = f"127.0.0.1:{device.port}"
    agent = lab.snmp.get(name)
    if agent is not None:
        serving["snmp"] = f"udp 127.0.0.1:{agent.port}"
    if device is None:  # unmanaged: its optics only
        document: dict[str, Any] = {"name": name, "kind": "switch", "serving": serving,
                                    "up": True, "management": "none", "faults": [],
                                    "fault_kinds": []}
    else:
        document = {"name": name, "kind": "switch", "serving": serving,
                    "up": device.server is not None,
                    "management": device.transport,
                    "model": device.face_name,
                    **_faults(lab, name)}
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
            "name": spec.name, "cable": spec.cable, "span": spec.span,
            "from": spec.from_port, "to": spec.to_port,
            "amplifier": spec.amplifier, "length_km": spec.length_km, "cut": fiber.cut,
            "arriving_dbm": _dbm(arriving), "dark": _dark(arriving),
        })
    return found
