"""Which SNMP surfaces an agent serves its port optics on, and reading them.

Surfaces, most hardware first (:data:`SNMP_SURFACES`): ``entity-sensor`` (ENTITY-MIB +
ENTITY-SENSOR-MIB, with Arista's or Cisco's threshold table where the agent has one),
the vendor DOM MIBs ``hh3c``, ``juniper`` and ``huawei``, and the project's own
``mso-cpo`` (MSO-CPO-MIB), which also carries what no standard does: which engine lane
and which external laser feed each lane, the lasers themselves, and the copper's
(MSO-CPC-MIB) FEC histogram and eye.

:func:`probe` asks for each surface's first instance in one GETBULK (non-repeaters:
a GETNEXT each) and keeps those that answered within their subtree; an agent with none
of them answers with whatever follows, which probes as nothing. :func:`optics_surface`
picks the surface to read optics from; :func:`read_optics` reads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from drivers.errors import DeviceRejected, DeviceTimeout, ValidationError
from drivers.optics.readings import LaneOptics, OpticsReading, PortOptics, Thresholds
from drivers.snmp import entity, mibs, vendor_dom
from drivers.snmp.collector import DEFAULT_BUDGET_SECONDS, TelemetryCollector
from drivers.snmp.mibs import Oid
from drivers.snmp.session import SnmpSession, SnmpTarget
from drivers.snmp.telemetry import CpcTelemetry, CpoTelemetry, OpticalLane

SNMP_SURFACES = ("entity-sensor", "hh3c", "juniper", "huawei", "mso-cpo")
OPTICS_ORDER = SNMP_SURFACES
"""The surface optics are read from, when an agent serves several: the first it has."""
AUTO = "auto"


def _probe_roots() -> dict[str, Oid]:
    return {
        "entity-sensor": mibs.table("ENTITY-SENSOR-MIB", "entPhySensorTable").column(
            "entPhySensorValue").oid,
        "hh3c": vendor_dom.H3C_INFO.columns[0].oid,
        "juniper": vendor_dom.JUNIPER_CURRENT.columns[0].oid,
        "huawei": vendor_dom.HUAWEI_OPTICS.columns[0].oid,
        "mso-cpo": mibs.table("MSO-CPO-MIB", "msoCpoLaneTable").oid,
    }


def check_surfaces(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple of known SNMP surfaces (or ``("auto",)``); ValidationError
    for one this module does not know."""
    names = tuple(names)
    if names == (AUTO,):
        return names
    unknown = [name for name in names if name not in SNMP_SURFACES]
    if unknown or not names:
        raise ValidationError(f"unknown SNMP telemetry surface {', '.join(unknown) or '(none)'}"
                              f": use auto or any of {', '.join(SNMP_SURFACES)}")
    return names


async def probe(session: SnmpSession) -> tuple[str, ...]:
    """The surfaces the agent serves, in :data:`SNMP_SURFACES` order (one request)."""
    roots = _probe_roots()
    answers, _ = await session.bulk(list(roots.values()), [], 0)
    found = []
    for (name, root), (oid, value) in zip(roots.items(), answers, strict=False):
        if oid[:len(root)] == root and value is not None \
                and type(value).__name__ != "EndOfMibView":
            found.append(name)
    return tuple(found)


def optics_surface(served: Sequence[str]) -> str | None:
    """The surface to read port optics from, of those ``served``."""
    return next((name for name in OPTICS_ORDER if name in served), None)


async def read_optics(session: SnmpSession, device: str, surface: str) -> OpticsReading:
    """Port optics from ``surface`` (not ``mso-cpo``: see :func:`from_mso_cpo`)."""
    if surface == "entity-sensor":
        found, extra = await entity.walk(session, device, extra=vendor_dom.threshold_roots())
        vendor_dom.apply_thresholds(found, extra)
        return entity.reading(found, device)
    if surface in ("hh3c", "juniper"):
        if_name = mibs.table("IF-MIB", "ifXTable").column("ifName").oid
        walked = await vendor_dom.walk_dom(session, surface, extra=[if_name])
        names = entity.EntityWalk()
        entity.read_if_names(walked.get(if_name, ()), names, device)
        reader = vendor_dom.h3c_reading if surface == "hh3c" else vendor_dom.juniper_reading
        return reader(walked, device, names.if_names)
    if surface == "huawei":
        found, _ = await entity.walk(session, device)
        walked = await vendor_dom.walk_dom(session, "huawei")
        return vendor_dom.huawei_reading(walked, device, found)
    raise ValidationError(f"no optics reader for SNMP surface {surface!r}")


def from_mso_cpo(optics: CpoTelemetry) -> OpticsReading:
    """MSO-CPO-MIB's lanes as port optics: each port's temperature and supply voltage
    those of the engine carrying its first lane, and the engine's overTemperature
    threshold as the temperature's high alarm."""
    engines = {engine.index: engine for engine in optics.engines}
    by_port: dict[int, list[OpticalLane]] = {}
    for lane in optics.lanes:
        by_port.setdefault(lane.port, []).append(lane)
    ports = []
    for port, lanes in sorted(by_port.items()):
        lanes.sort(key=lambda lane: lane.lane)
        engine = engines.get(lanes[0].engine) if lanes[0].engine is not None else None
        high = engine.temperature_high_celsius if engine is not None else None
        ports.append(PortOptics(
            port, lanes[0].port_name,
            temperature_celsius=engine.temperature_celsius if engine else None,
            supply_voltage_volts=engine.supply_voltage_volts if engine else None,
            lanes=tuple(LaneOptics(lane.lane, tx_power_dbm=lane.tx_power_dbm,
                                   rx_power_dbm=lane.rx_power_dbm, tx_bias_ma=lane.tx_bias_ma)
                        for lane in lanes),
            thresholds={} if high is None else {
                "temperature_celsius": Thresholds(high_alarm=high)}))
    return OpticsReading(optics.info.device, "mso-cpo", ports=tuple(ports))


@dataclass(frozen=True)
class SnmpTelemetry:
    """One switch's telemetry over SNMP: its port optics from the best surface it serves,
    and, where it serves MSO-CPO-MIB and MSO-CPC-MIB, what only those carry."""

    served: tuple[str, ...]
    optics: OpticsReading | None
    cpo: CpoTelemetry | None
    cpc: CpcTelemetry | None


async def collect(target: SnmpTarget, *, surfaces: Sequence[str] = (AUTO,),
                  budget_seconds: float = DEFAULT_BUDGET_SECONDS,
                  served: Sequence[str] | None = None) -> SnmpTelemetry:
    """Everything ``target`` serves of ``surfaces`` (``auto``: what :func:`probe` finds,
    unless ``served`` says it already), within ``budget_seconds`` in all.

    Raises :class:`DeviceTimeout` past the budget, :class:`DeviceRejected` when the agent
    serves none of the surfaces asked for.
    """
    collector = TelemetryCollector(target, budget_seconds=budget_seconds)
    try:
        async with asyncio.timeout(budget_seconds):
            if tuple(surfaces) == (AUTO,):
                found = tuple(served) if served is not None else await probe(collector.session)
            else:
                found = check_surfaces(surfaces)
            source = optics_surface(found)
            if source is None:
                raise DeviceRejected(
                    f"{target.name} serves none of the SNMP telemetry surfaces "
                    f"({', '.join(surfaces)})", device=target.name)
            cpo = cpc = None
            if "mso-cpo" in found:
                cpo, cpc = await collector.collect()
            if source == "mso-cpo":
                assert cpo is not None
                optics = from_mso_cpo(cpo)
            else:
                optics = await read_optics(collector.session, target.name, source)
            return SnmpTelemetry(found, optics, cpo, cpc)
    except TimeoutError:
        raise DeviceTimeout(f"no complete answer from {target.address} within the "
                            f"{budget_seconds:g} s budget", device=target.name) from None
