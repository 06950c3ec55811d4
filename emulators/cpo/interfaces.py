"""The switch ports the CPO/CPC tables index, as IF-MIB (RFC 2863) describes them.

An :class:`Interface` is what does not change while the agent runs: the ifIndex
the CPO and CPC rows are indexed by, the port's name and description, its IANA
interface type and its nominal speed. Its operational status comes from the
optical lanes' light, at each reading (:func:`oper_status`):

- ``up`` while every optical lane of the port transmits (its laser is on and its
  engine works) and receives more than :data:`RX_LOS_DBM`;
- ``down`` otherwise: a dark transmitter or a receiver below the loss-of-signal
  threshold anywhere on the port takes the whole port down, as a multi-lane
  Ethernet PMD does (one lane out is a link out).

The copper lanes do not enter it: a falling SNR shows as pre-FEC BER and FEC
counters (MSO-CPC-MIB), the link stays up until frames are lost, and the emulator
does not model a PCS losing lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from emulators.cpo.optical import OpticalLaneReading

RX_LOS_DBM = -20.0
"""The receive power at or below which a lane has lost its signal (this emulator's
figure: well below a healthy lane's -2 dBm, above a dark fiber's crosstalk)."""
ELECTRICAL_LANE_BPS = 200e9
"""The Ethernet data rate one 224G SerDes lane carries (212.5 Gb/s with FEC)."""
ETHERNET = "ethernetCsmacd"
"""IANAifType for every Ethernet-like interface, whatever its speed (RFC 3635)."""
MBPS = 1_000_000  # ifHighSpeed counts units of 1,000,000 bits per second
DEFAULT_MTU = 9100
"""ifMtu of a port unless its :class:`Interface` says otherwise: the largest IP packet
it carries, SONiC's default port MTU (a RoCE fabric's jumbo frames)."""


@dataclass(frozen=True)
class Interface:
    """One port: ``index`` (ifIndex, 1..2147483647), ``name`` (ifName), ``speed_bps``
    (the nominal bandwidth in bits per second), ``descr`` (ifDescr) and ``if_type``
    (an IANAifType-MIB name)."""

    index: int
    name: str
    speed_bps: float
    descr: str = ""
    if_type: str = ETHERNET
    mtu: int = DEFAULT_MTU

    def __post_init__(self) -> None:
        if not 1 <= self.index <= 2147483647:
            raise ValueError(f"an ifIndex is 1..2147483647, not {self.index}")
        if self.speed_bps < 0:
            raise ValueError("an interface's speed is 0 or more bits per second")


@dataclass(frozen=True)
class InterfaceRow:
    """One row of ifTable and ifXTable at one reading: the attributes the agent serves."""

    index: int
    name: str
    descr: str
    if_type: str
    speed_bps: float
    speed_mbps: int
    oper_status: str
    mtu: int
    admin_status: str = "up"  # the emulated switch has no port shut down by its operator
    last_change: float | None = None
    """The device time the port entered ``oper_status``; ``None`` when it has been in it
    since the agent started (ifLastChange 0)."""


def default_interfaces(ports: Iterable[int], electrical_lanes_per_port: int) -> list[Interface]:
    """``portN`` for each ifIndex N, at 200 Gb/s per electrical lane."""
    speed = ELECTRICAL_LANE_BPS * electrical_lanes_per_port
    return [Interface(port, f"port{port}", speed) for port in ports]


def describe(interface: Interface, switch: str) -> str:
    """ifDescr: the interface's own description, else one naming the switch and port."""
    if interface.descr:
        return interface.descr
    gigabits = interface.speed_bps / 1e9
    return (f"msoctl emulated switch {switch}, {interface.name}, {gigabits:g}G Ethernet "
            f"on co-packaged optics")


def oper_status(lanes: Iterable[OpticalLaneReading]) -> str:
    """IF-MIB ifOperStatus name of a port from its optical lanes (see the module)."""
    lanes = list(lanes)
    if not lanes:
        return "down"
    lit = all(lane.tx_power_dbm != float("-inf") and lane.rx_power_dbm > RX_LOS_DBM
              for lane in lanes)
    return "up" if lit else "down"


def rows(interfaces: Iterable[Interface], lanes: Iterable[OpticalLaneReading],
         switch: str) -> list[InterfaceRow]:
    """Every interface's row at the reading whose optical lanes are ``lanes``."""
    by_port: dict[int, list[OpticalLaneReading]] = {}
    for lane in lanes:
        by_port.setdefault(lane.port, []).append(lane)
    return [InterfaceRow(index=interface.index, name=interface.name,
                         descr=describe(interface, switch), if_type=interface.if_type,
                         speed_bps=interface.speed_bps,
                         speed_mbps=round(interface.speed_bps / MBPS),
                         oper_status=oper_status(by_port.get(interface.index, ())),
                         mtu=interface.mtu)
            for interface in interfaces]


def check_covers(interfaces: Iterable[Interface], ports: Iterable[int]) -> None:
    """Raise ValueError unless ``interfaces`` are exactly the ifIndex values ``ports``."""
    indexes = [interface.index for interface in interfaces]
    if len(set(indexes)) != len(indexes):
        raise ValueError("two interfaces have the same ifIndex")
    if set(indexes) != set(ports):
        raise ValueError(f"the interfaces ({sorted(indexes)}) must be the ports the "
                         f"telemetry indexes ({sorted(set(ports))})")
