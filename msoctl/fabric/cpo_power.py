"""The optical power of a few switch ports, read from their CPO lanes over SNMP.

A path view needs two numbers per switch port: what its transmitter launches and
what its receiver gets. The full CPO collection (:class:`drivers.snmp.collector.
TelemetryCollector`) walks every engine, laser and lane of the switch; this reads
only ``ifName`` (to find the ports' ifIndex) and then the ``msoCpoLaneTxPower`` and
``msoCpoLaneRxPower`` columns under the wanted ports' indexes — a few small GETBULKs,
decoded through the same MIB tables (:func:`drivers.snmp.collector.decode`).

A port's power is the mean, in dB, of its lanes' readings: every lane of a port
rides the same OCS path, so they differ only by the lanes' own offsets. A receiver
that sees no light reads ``-100.0`` dBm (``MsoPowerDbm``'s floor): that is a
measurement (dark), kept as such, not turned into ``None``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass

from drivers.errors import DeviceTimeout, ProtocolError
from drivers.snmp import mibs
from drivers.snmp.collector import CPO, IF_NAME, decode
from drivers.snmp.session import SnmpSession, SnmpTarget

LANE_TABLE = (CPO, "msoCpoLaneTable")
TX_POWER, RX_POWER = "msoCpoLaneTxPower", "msoCpoLaneRxPower"
DEFAULT_BUDGET_SECONDS = 5.0


@dataclass(frozen=True)
class PortPower:
    """One switch port's optical power, from its CPO lanes (``None``: not reported)."""

    port: str
    if_index: int | None
    lanes: int
    tx_power_dbm: float | None
    rx_power_dbm: float | None


def mean_dbm(values: Sequence[float | None]) -> float | None:
    """The mean of readings in dBm (their dB mean), ``None`` without any reading."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return None
    return round(sum(present) / len(present), 2)


async def read_port_powers(target: SnmpTarget, ports: Sequence[str], *,
                           budget_seconds: float = DEFAULT_BUDGET_SECONDS
                           ) -> dict[str, PortPower]:
    """Tx and Rx power of switch ports named ``ports`` (ifName), on the running loop.

    A port the agent does not list comes back with ``if_index`` ``None`` and no power.
    Raises :class:`DeviceTimeout` past ``budget_seconds``, or the session's errors.
    """
    try:
        async with asyncio.timeout(budget_seconds):
            return await _read(target, ports)
    except TimeoutError:
        raise DeviceTimeout(f"no complete answer from {target.address} within "
                            f"{budget_seconds:g} s", device=target.name) from None


async def _read(target: SnmpTarget, ports: Sequence[str]) -> dict[str, PortPower]:
    session = SnmpSession(target)
    names_table = mibs.table(*IF_NAME[:2])
    name_column = names_table.column(IF_NAME[2])
    found, _ = await session.walk([name_column.oid])
    indexes: dict[str, int] = {}
    for oid, value in found[tuple(name_column.oid)]:
        parsed = names_table.parse_instance(oid)
        if parsed is None:
            raise ProtocolError(f"{'.'.join(map(str, oid))} is not an ifName instance",
                                device=target.name)
        indexes[str(decode(parsed[0], value, device=target.name))] = parsed[1][0]
    lanes = mibs.table(*LANE_TABLE)
    columns = {TX_POWER: lanes.column(TX_POWER), RX_POWER: lanes.column(RX_POWER)}
    roots = [(*column.oid, indexes[port]) for port in ports if port in indexes
             for column in columns.values()]
    readings: dict[tuple[str, int], list[float | None]] = {}
    if roots:
        walked, _ = await session.walk(roots, concurrency=2)
        for var_binds in walked.values():
            for oid, value in var_binds:
                parsed = lanes.parse_instance(oid)
                if parsed is None:
                    raise ProtocolError(f"{'.'.join(map(str, oid))} is not a CPO lane "
                                        "instance", device=target.name)
                column, index = parsed
                decoded = decode(column, value, device=target.name)
                number = float(decoded) if isinstance(decoded, int | float) else None
                readings.setdefault((column.name, index[0]), []).append(number)
    result = {}
    for port in ports:
        if_index = indexes.get(port)
        tx = readings.get((TX_POWER, if_index or -1), [])
        rx = readings.get((RX_POWER, if_index or -1), [])
        result[port] = PortPower(port, if_index, max(len(tx), len(rx)), mean_dbm(tx),
                                 mean_dbm(rx))
    return result
