"""End-to-end light on the fabric's links: the power budget per hop against what the
devices measure now, and the first hop where the light is lost.

A link (:mod:`msoctl.links`) carries light both ways. One direction, from the ``a``
end to the ``b`` end over the span it is on, passes these hops (``b`` to ``a`` is
the mirror image, over the span's ``b_to_a`` fiber)::

    1 sw-a  Ethernet1 tx   launch: the switch port's CPO Tx power (mean of its lanes)
    2 ocs-a port 1 in      the near OCS's ingress monitor           = launch
    3 ocs-a port 121 out   its egress monitor                       - insertion loss
    4 amp-1 in             the amplifier's input monitor            - span fiber loss
    5 amp-1 out            the amplifier's output monitor           + amplifier gain
    6 ocs-b port 61 in     the far OCS's ingress monitor            (- fiber loss, no amp)
    7 ocs-b port 65 out    its egress monitor                       - insertion loss
    8 sw-b  Ethernet1 rx   the far switch port's CPO Rx power       = hop 7

The expected power (the link budget) starts from the launch power: the switch
port's measured Tx power when its CPO telemetry answers (and shows light), else the
link's ``tx_power_dbm`` from the inventory. Each hop then adds its term:

- OCS insertion loss: the actual connection's, as the OCS reports it (``:OXC:SWITch:
  CONNect:LOSS?``, :meth:`drivers.ocs.OcsDriver.connections`), else the typical
  figure :data:`TYPICAL_OCS_INSERTION_LOSS_DB` (1.5 dB, the typical insertion loss
  published for commercial OCS units; LC engines publish 1.58-1.85 dB);
- span fiber loss: :attr:`msoctl.links.Span.fiber_loss_db`, length x loss per km
  plus the connectors;
- amplifier gain: its measured gain while it amplifies, else its target gain (or, in
  constant output power mode, its target output power).

Patch cords between a switch and its OCS count as lossless.

Each measured hop gets a status: ``dark`` (below ``dark_below_dbm``, default
-30 dBm: no light worth the name), ``low`` (more than ``tolerance_db`` under the
budget), ``high`` (more than ``tolerance_db`` above it), ``ok``, or ``unknown``
(nothing measured: the device does not report it, or did not answer). The light is
lost at the first ``dark`` or ``low`` hop.

Which span a direction is on is read from the OCS cross-connects: ``working`` or
``protection`` when both ends connect the link to that span's fiber, ``none`` when
neither end connects it to either span, ``mixed`` otherwise (one end only, or the
ends on different spans), ``null`` when an OCS did not answer. Its hops follow the
span the near end is connected to (else the far end's, else the working span).

All devices are read at once (a thread per OCS and amplifier, one event loop for the
switches' SNMP); a device that does not answer leaves its hops with ``null``
measurements and an ``error``, and the rest is still shown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from drivers.amp.types import AmpStatus
from drivers.errors import DeviceError
from drivers.ocs.types import Connection
from drivers.snmp.session import SnmpTarget
from msoctl.access import Devices
from msoctl.fabric.cpo_power import PortPower
from msoctl.links import Link, LinkEnd, Span, SpanFiber

TYPICAL_OCS_INSERTION_LOSS_DB = 1.5
"""Insertion loss of commercial piezo beam-steering OCS units (the Polatis family's
datasheets): typically 1.5 dB, at most 2.7 dB."""
DEFAULT_TOLERANCE_DB = 4.0
"""How far from the budget a hop may read before it is low or high: an OCS power
monitor is good to +-1 dB, a typical insertion loss may be 1.2 dB off the actual one,
and a fiber's loss per km is an estimate."""
DARK_BELOW_DBM = -30.0
"""Below this a monitor sees no light (the OCS and amplifier LOS thresholds)."""
DIRECTIONS = ("a_to_b", "b_to_a")
ROLES = ("working", "protection")


# ---- what the devices say ---------------------------------------------------------------


@dataclass
class OcsReading:
    connections: dict[int, Connection] | None = None  # by ingress port
    powers: dict[int, float | None] = field(default_factory=dict)
    error: str | None = None


@dataclass
class AmpReading:
    status: AmpStatus | None = None
    error: str | None = None


@dataclass
class SwitchReading:
    ports: dict[str, PortPower] = field(default_factory=dict)
    error: str | None = None
    has_telemetry: bool = True


@dataclass
class FabricReadings:
    ocs: dict[str, OcsReading] = field(default_factory=dict)
    amps: dict[str, AmpReading] = field(default_factory=dict)
    switches: dict[str, SwitchReading] = field(default_factory=dict)

    def errors(self) -> dict[str, str]:
        """Device -> why it gave no reading, for every device that did not answer."""
        found: dict[str, str] = {}
        for group in (self.ocs, self.amps, self.switches):
            for name, reading in group.items():
                if reading.error is not None:
                    found[name] = reading.error
        return found


def _wanted_ports(links: Iterable[Link]) -> tuple[dict[str, set[int]], set[str],
                                                  dict[str, set[str]]]:
    ocs_ports: dict[str, set[int]] = {}
    amps: set[str] = set()
    switch_ports: dict[str, set[str]] = {}
    for link in links:
        for end in (link.a, link.b):
            ocs_ports.setdefault(end.tx.ocs, set()).update((end.tx.port, end.rx.port))
            switch_ports.setdefault(end.switch, set()).add(end.port)
        for span in (link.working, link.protection):
            if span is None:
                continue
            for fiber in (span.a_to_b, span.b_to_a):
                ocs_ports.setdefault(fiber.start.ocs, set()).add(fiber.start.port)
                ocs_ports.setdefault(fiber.end.ocs, set()).add(fiber.end.port)
                if fiber.amplifier is not None:
                    amps.add(fiber.amplifier)
    return ocs_ports, amps, switch_ports


def _why(error: DeviceError) -> str:
    return error.message


def read_fabric(devices: Devices, links: Sequence[Link]) -> FabricReadings:
    """Read every device the ``links`` pass through, all at once."""
    ocs_ports, amps, switch_ports = _wanted_ports(links)
    readings = FabricReadings()

    def read_ocs(name: str) -> None:
        reading = OcsReading()
        try:
            driver = devices.ocs(name)
            try:
                reading.connections = {c.ingress: c for c in driver.connections()}
                reading.powers = driver.power(sorted(ocs_ports[name]))
            finally:
                driver.close()
        except DeviceError as error:
            reading.error = _why(error)
        readings.ocs[name] = reading

    def read_amp(name: str) -> None:
        reading = AmpReading()
        try:
            driver = devices.amp(name)
            try:
                reading.status = driver.status()
            finally:
                driver.close()
        except DeviceError as error:
            reading.error = _why(error)
        readings.amps[name] = reading

    def read_switches() -> None:
        from drivers.snmp.session import run  # pysnmp only where SNMP is spoken
        from msoctl.fabric.cpo_power import read_port_powers

        targets: dict[str, SnmpTarget] = {}
        for name in switch_ports:
            if devices.inventory.devices[name].snmp is None:
                readings.switches[name] = SwitchReading(has_telemetry=False)
            else:
                try:
                    targets[name] = devices.snmp_target(name)
                except DeviceError as error:  # a secret that cannot be read, say
                    readings.switches[name] = SwitchReading(error=_why(error))

        async def one(name: str) -> None:
            reading = SwitchReading()
            try:
                reading.ports = await read_port_powers(targets[name],
                                                       sorted(switch_ports[name]))
            except DeviceError as error:
                reading.error = _why(error)
            readings.switches[name] = reading

        async def every() -> None:
            import asyncio

            await asyncio.gather(*(one(name) for name in targets))

        if targets:
            run(every())

    work: list[Callable[[], None]] = [read_switches]
    work += [lambda name=name: read_ocs(name) for name in ocs_ports]  # type: ignore[misc]
    work += [lambda name=name: read_amp(name) for name in sorted(amps)]  # type: ignore[misc]
    with ThreadPoolExecutor(max_workers=len(work), thread_name_prefix="path") as pool:
        for future in [pool.submit(task) for task in work]:
            future.result()
    return readings


# ---- the budget, hop by hop -----------------------------------------------------------------


@dataclass
class Hop:
    device: str
    point: str  # "Ethernet1 tx", "port 1 in", "in", ...
    kind: str  # switch_tx, ocs_in, ocs_out, amp_in, amp_out, switch_rx
    port: int | str | None
    expected_dbm: float | None
    measured_dbm: float | None
    step_db: float | None = None  # what this hop adds to the budget
    step: str | None = None  # and why
    error: str | None = None
    status: str = "unknown"

    @property
    def difference_db(self) -> float | None:
        if self.expected_dbm is None or self.measured_dbm is None:
            return None
        return round(self.measured_dbm - self.expected_dbm, 2)

    def as_dict(self, number: int) -> dict[str, Any]:
        return {"hop": number, "device": self.device, "point": self.point,
                "kind": self.kind, "port": self.port,
                "expected_power_dbm": _round(self.expected_dbm),
                "measured_power_dbm": self.measured_dbm,
                "difference_db": self.difference_db,
                "budget_step_db": _round(self.step_db), "budget_step": self.step,
                "status": self.status, "error": self.error}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


@dataclass
class Direction:
    direction: str  # a_to_b | b_to_a
    source: str  # "sw-a:Ethernet1"
    destination: str
    span: str | None  # working | protection | none | mixed | None (an OCS did not answer)
    span_name: str  # the span its hops follow
    launch_dbm: float | None
    launch_source: str | None  # cpo | inventory | None
    hops: list[Hop]
    notes: list[str] = field(default_factory=list)

    @property
    def lost_at(self) -> int | None:
        """Index (0-based) of the first hop where the light is lost."""
        return next((i for i, hop in enumerate(self.hops) if hop.status in ("dark", "low")),
                    None)

    @property
    def light(self) -> str:
        """``lost``; ``arrives`` when the receiver, or (a switch without telemetry) the
        far OCS port that feeds it, reads the light; else ``unknown``."""
        if self.lost_at is not None:
            return "lost"
        seen = [i for i, hop in enumerate(self.hops) if hop.status in ("ok", "high")]
        return "arrives" if seen and seen[-1] >= len(self.hops) - 2 else "unknown"

    def as_dict(self) -> dict[str, Any]:
        lost = self.lost_at
        return {
            "direction": self.direction, "from": self.source, "to": self.destination,
            "span": self.span, "span_name": self.span_name,
            "launch_power_dbm": self.launch_dbm, "launch_source": self.launch_source,
            "expected_rx_power_dbm": _round(self.hops[-1].expected_dbm),
            "measured_rx_power_dbm": self.hops[-1].measured_dbm,
            "light": self.light,
            "lost_at": None if lost is None else {
                "hop": lost + 1, "device": self.hops[lost].device,
                "point": self.hops[lost].point, "status": self.hops[lost].status},
            "notes": self.notes,
            "hops": [hop.as_dict(i + 1) for i, hop in enumerate(self.hops)],
        }


@dataclass
class LinkPath:
    link: str
    directions: list[Direction]

    @property
    def span(self) -> str | None:
        states = {d.span for d in self.directions}
        if None in states:
            return None
        return states.pop() if len(states) == 1 else "mixed"

    @property
    def light(self) -> str:
        states = {d.light for d in self.directions}
        return "lost" if "lost" in states else ("arrives" if states == {"arrives"}
                                                else "unknown")

    def as_dict(self) -> dict[str, Any]:
        spans = {d.span_name for d in self.directions}
        return {"link": self.link, "span": self.span,
                "span_name": spans.pop() if len(spans) == 1 else None,
                "light": self.light,
                "directions": [d.as_dict() for d in self.directions]}


def _ends(link: Link, direction: str) -> tuple[LinkEnd, LinkEnd]:
    return (link.a, link.b) if direction == "a_to_b" else (link.b, link.a)


def _fiber(span: Span, direction: str) -> SpanFiber:
    return span.a_to_b if direction == "a_to_b" else span.b_to_a


def _spans(link: Link) -> dict[str, Span]:
    return {role: span for role, span in (("working", link.working),
                                          ("protection", link.protection))
            if span is not None}


def span_in_use(link: Link, direction: str, readings: FabricReadings
                ) -> tuple[str | None, str | None, list[str]]:
    """(state, the role the hops follow or None, notes) for one direction of ``link``."""
    near, far = _ends(link, direction)
    notes: list[str] = []
    near_reading, far_reading = readings.ocs.get(near.tx.ocs), readings.ocs.get(far.rx.ocs)
    near_map = None if near_reading is None else near_reading.connections
    far_map = None if far_reading is None else far_reading.connections
    near_role = far_role = None
    if near_map is not None:
        egress = near_map[near.tx.port].egress if near.tx.port in near_map else None
        near_role = next((role for role, span in _spans(link).items()
                          if _fiber(span, direction).start.port == egress), None)
        if egress is None:
            notes.append(f"{near.tx.ocs} port {near.tx.port} is not connected")
        elif near_role is None:
            notes.append(f"{near.tx.ocs} port {near.tx.port} goes to {egress}, not to a span "
                         f"of {link.name}")
    if far_map is not None:
        ingress = next((c.ingress for c in far_map.values() if c.egress == far.rx.port), None)
        far_role = next((role for role, span in _spans(link).items()
                         if _fiber(span, direction).end.port == ingress), None)
        if ingress is None:
            notes.append(f"{far.rx.ocs} port {far.rx.port} is not connected")
        elif far_role is None:
            notes.append(f"{far.rx.ocs} port {far.rx.port} is fed from {ingress}, not from a "
                         f"span of {link.name}")
    follow = near_role or far_role
    if near_map is None or far_map is None:
        return None, follow, notes
    if near_role is not None and near_role == far_role:
        return near_role, follow, notes
    if near_role is None and far_role is None:
        return "none", None, notes
    return "mixed", follow, notes


class _Budget:
    """Builds one direction's hops, carrying the expected power along."""

    def __init__(self, readings: FabricReadings):
        self.readings = readings
        self.hops: list[Hop] = []
        self.expected: float | None = None

    def add(self, hop: Hop) -> None:
        self.hops.append(hop)

    def step(self, step_db: float) -> None:
        if self.expected is not None:
            self.expected += step_db

    def ocs_port(self, ocs: str, port: int, kind: str, step_db: float,
                 step: str | None) -> None:
        reading = self.readings.ocs.get(ocs, OcsReading(error="not read"))
        self.step(step_db)
        direction = "in" if kind == "ocs_in" else "out"
        self.add(Hop(ocs, f"port {port} {direction}", kind, port, self.expected,
                     reading.powers.get(port), step_db, step, reading.error))

    def insertion_loss(self, ocs: str, ingress: int, egress: int) -> tuple[float, str]:
        reading = self.readings.ocs.get(ocs)
        connections = None if reading is None else reading.connections
        found = None if connections is None else connections.get(ingress)
        if found is not None and found.egress == egress and found.insertion_loss_db is not None:
            return found.insertion_loss_db, f"insertion loss {ingress}->{egress} ({ocs})"
        return TYPICAL_OCS_INSERTION_LOSS_DB, f"insertion loss {ingress}->{egress} (typical)"


def trace(link: Link, direction: str, readings: FabricReadings, *,
          tolerance_db: float = DEFAULT_TOLERANCE_DB,
          dark_below_dbm: float = DARK_BELOW_DBM) -> Direction:
    """One direction of ``link``: its hops, the budget and the measurements."""
    near, far = _ends(link, direction)
    state, role, notes = span_in_use(link, direction, readings)
    span = link.span(role or "working")
    fiber = _fiber(span, direction)
    budget = _Budget(readings)

    # 1: the launch
    near_switch = readings.switches.get(near.switch, SwitchReading(error="not read"))
    tx_port = near_switch.ports.get(near.port)
    measured_tx = None if tx_port is None else tx_port.tx_power_dbm
    launch: float | None
    source: str | None
    if measured_tx is not None and measured_tx >= dark_below_dbm:
        launch, source = measured_tx, "cpo"
    elif link.tx_power_dbm is not None:
        launch, source = link.tx_power_dbm, "inventory"
    else:
        launch, source = measured_tx, ("cpo" if measured_tx is not None else None)
    budget.add(Hop(near.switch, f"{near.port} tx", "switch_tx", near.port, link.tx_power_dbm,
                   measured_tx, None,
                   "launch: measured Tx power (CPO)" if source == "cpo" else
                   "launch: the link's tx_power_dbm" if source == "inventory" else None,
                   near_switch.error))
    budget.expected = launch

    # 2-3: the near OCS
    budget.ocs_port(near.tx.ocs, near.tx.port, "ocs_in", 0.0, None)
    loss, why = budget.insertion_loss(near.tx.ocs, near.tx.port, fiber.start.port)
    budget.ocs_port(fiber.start.ocs, fiber.start.port, "ocs_out", -loss, why)

    # 4-5: the span, and its amplifier
    fiber_loss = span.fiber_loss_db
    fiber_why = (f"{span.name} fiber: {span.length_km:g} km x {span.loss_db_per_km:g} dB/km "
                 f"+ {span.connector_loss_db:g} dB")
    step_db: float = -fiber_loss
    step_why: str | None = fiber_why
    if fiber.amplifier is not None:
        _amplifier(budget, fiber.amplifier, step_db, fiber_why)
        step_db, step_why = 0.0, None  # the amplifier's output is patched to the far OCS

    # 6-7: the far OCS
    budget.ocs_port(fiber.end.ocs, fiber.end.port, "ocs_in", step_db, step_why)
    loss, why = budget.insertion_loss(far.rx.ocs, fiber.end.port, far.rx.port)
    budget.ocs_port(far.rx.ocs, far.rx.port, "ocs_out", -loss, why)

    # 8: the far receiver
    far_switch = readings.switches.get(far.switch, SwitchReading(error="not read"))
    rx_port = far_switch.ports.get(far.port)
    budget.add(Hop(far.switch, f"{far.port} rx", "switch_rx", far.port, budget.expected,
                   None if rx_port is None else rx_port.rx_power_dbm, 0.0, None,
                   far_switch.error))

    for hop in budget.hops:
        hop.status = _status(hop, tolerance_db, dark_below_dbm)
    for name in dict.fromkeys((near.switch, far.switch)):
        if not readings.switches.get(name, SwitchReading()).has_telemetry:
            notes.append(f"{name} has no snmp section in the inventory: no CPO telemetry")
    return Direction(direction, f"{near.switch}:{near.port}", f"{far.switch}:{far.port}",
                     state, span.name, _round(launch), source, budget.hops, notes)


def _amplifier(budget: _Budget, name: str, fiber_step_db: float, fiber_why: str) -> None:
    reading = budget.readings.amps.get(name, AmpReading(error="not read"))
    status = reading.status
    monitors = None if status is None else status.monitors
    settings = None if status is None else status.settings
    budget.step(fiber_step_db)
    budget.add(Hop(name, "in", "amp_in", None, budget.expected,
                   None if monitors is None else monitors.input_power_dbm,
                   fiber_step_db, fiber_why, reading.error))
    gain: float | None = None
    why: str | None = None
    if monitors is not None and monitors.gain_db is not None:
        gain, why = monitors.gain_db, f"{name} gain (measured)"
    elif settings is not None and settings.mode == "power" \
            and settings.target_output_power_dbm is not None and budget.expected is not None:
        gain = settings.target_output_power_dbm - budget.expected
        why = f"{name} target output power {settings.target_output_power_dbm:g} dBm"
    elif settings is not None and settings.target_gain_db is not None:
        gain, why = settings.target_gain_db, f"{name} gain (target)"
    else:
        why = f"{name} gain unknown"
    budget.expected = None if gain is None or budget.expected is None \
        else budget.expected + gain
    budget.add(Hop(name, "out", "amp_out", None, budget.expected,
                   None if monitors is None else monitors.output_power_dbm,
                   gain, why, reading.error))


def _status(hop: Hop, tolerance_db: float, dark_below_dbm: float) -> str:
    measured = hop.measured_dbm
    if measured is None or not math.isfinite(measured):
        return "unknown"
    if measured < dark_below_dbm:
        return "dark"
    if hop.expected_dbm is None:
        return "ok"
    if measured < hop.expected_dbm - tolerance_db:
        return "low"
    if measured > hop.expected_dbm + tolerance_db:
        return "high"
    return "ok"


def trace_link(link: Link, readings: FabricReadings, *,
               tolerance_db: float = DEFAULT_TOLERANCE_DB,
               dark_below_dbm: float = DARK_BELOW_DBM) -> LinkPath:
    return LinkPath(link.name, [trace(link, direction, readings, tolerance_db=tolerance_db,
                                      dark_below_dbm=dark_below_dbm)
                                for direction in DIRECTIONS])


@dataclass
class PathReport:
    links: list[LinkPath]
    errors: dict[str, str]
    tolerance_db: float
    dark_below_dbm: float

    def as_dict(self) -> dict[str, Any]:
        return {"tolerance_db": self.tolerance_db, "dark_below_dbm": self.dark_below_dbm,
                "typical_ocs_insertion_loss_db": TYPICAL_OCS_INSERTION_LOSS_DB,
                "links": [link.as_dict() for link in self.links],
                "errors": [{"device": device, "error": error}
                           for device, error in self.errors.items()]}


def show(devices: Devices, links: Sequence[Link], *,
         tolerance_db: float = DEFAULT_TOLERANCE_DB,
         dark_below_dbm: float = DARK_BELOW_DBM) -> PathReport:
    """Read the devices of ``links`` and trace every one, both ways."""
    readings = read_fabric(devices, links)
    traced = [trace_link(link, readings, tolerance_db=tolerance_db,
                         dark_below_dbm=dark_below_dbm) for link in links]
    return PathReport(traced, readings.errors(), tolerance_db, dark_below_dbm)
