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
does not model a PCS losing lock. Frames lost to uncorrectable codewords show in
ifInErrors.

The counters (ifTable's and ifXTable's, 32 and 64 bits alike) are the port's
:class:`~.traffic.PortTrafficReading` at the reading; ifPhysAddress is a locally
administered MAC address made from the switch's name and the ifIndex
(:func:`mac_address`), the same for as long as the switch keeps its name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from emulators.cpo.optical import NO_LIGHT_DBM, OpticalLaneReading
from emulators.cpo.traffic import PortTrafficReading

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

_NO_TRAFFIC = PortTrafficReading(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, None)


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
    phys_address: bytes = b""
    admin_status: str = "up"  # the emulated switch has no port shut down by its operator
    last_change: float | None = None
    """The device time the port entered ``oper_status``; ``None`` when it has been in it
    since the agent started (ifLastChange 0)."""
    in_octets: int = 0
    in_ucast: int = 0
    in_multicast: int = 0
    in_broadcast: int = 0
    in_errors: int = 0
    out_octets: int = 0
    out_ucast: int = 0
    out_multicast: int = 0
    out_broadcast: int = 0
    counter_discontinuity_at: float | None = None
    """The device time of the last clear of the port's counters; ``None`` when there was
    none since the agent started (ifCounterDiscontinuityTime 0)."""
    in_discards: int = 0  # no congestion drops are modelled
    in_unknown_protos: int = 0  # every frame is RoCEv2 or a protocol the switch handles
    out_discards: int = 0
    out_errors: int = 0
    link_up_down_trap_enable: str = "disabled"  # the agent sends no linkUp/linkDown
    promiscuous_mode: str = "false"  # a switch port's MAC takes only what is addressed to it
    connector_present: str = "true"  # a front-panel fiber connector on every port


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


def lit(tx_power_dbm: float, rx_power_dbm: float) -> bool:
    """Whether an optical lane carries a link: it transmits, and receives more than
    :data:`RX_LOS_DBM`."""
    return tx_power_dbm != NO_LIGHT_DBM and rx_power_dbm > RX_LOS_DBM


def oper_status(lanes: Iterable[OpticalLaneReading]) -> str:
    """IF-MIB ifOperStatus name of a port from its optical lanes (see the module)."""
    lanes = list(lanes)
    if not lanes:
        return "down"
    up = all(lit(lane.tx_power_dbm, lane.rx_power_dbm) for lane in lanes)
    return "up" if up else "down"


def mac_address(switch: str, index: int) -> bytes:
    """ifPhysAddress of port ``index`` of ``switch``: a locally administered unicast MAC
    address (IEEE 802: the first octet's second bit set, its first clear), two octets
    of the name's SHA-256, then the ifIndex in three octets (distinct below 2^24)."""
    digest = hashlib.sha256(switch.encode("utf-8")).digest()
    return bytes((0x02, digest[0], digest[1])) + (index % 2**24).to_bytes(3, "big")


def rows(interfaces: Iterable[Interface], lanes: Iterable[OpticalLaneReading],
         switch: str, traffic: Mapping[int, PortTrafficReading] | None = None,
         phys_addresses: Mapping[int, bytes] | None = None) -> list[InterfaceRow]:
    """Every interface's row at the reading whose optical lanes are ``lanes`` and whose
    ports' counters are ``traffic`` (by ifIndex; counters 0 for a port without)."""
    by_port: dict[int, list[OpticalLaneReading]] = {}
    for lane in lanes:
        by_port.setdefault(lane.port, []).append(lane)
    traffic = traffic or {}
    phys_addresses = phys_addresses or {}
    found = []
    for interface in interfaces:
        counted = traffic.get(interface.index) or _NO_TRAFFIC
        found.append(InterfaceRow(
            index=interface.index, name=interface.name, descr=describe(interface, switch),
            if_type=interface.if_type, speed_bps=interface.speed_bps,
            speed_mbps=round(interface.speed_bps / MBPS),
            oper_status=oper_status(by_port.get(interface.index, ())), mtu=interface.mtu,
            phys_address=phys_addresses.get(interface.index)
            or mac_address(switch, interface.index),
            in_octets=counted.in_octets, in_ucast=counted.in_ucast,
            in_multicast=counted.in_multicast, in_broadcast=counted.in_broadcast,
            in_errors=counted.in_errors, out_octets=counted.out_octets,
            out_ucast=counted.out_ucast, out_multicast=counted.out_multicast,
            out_broadcast=counted.out_broadcast,
            counter_discontinuity_at=counted.discontinuity_at))
    return found


def check_covers(interfaces: Iterable[Interface], ports: Iterable[int]) -> None:
    """Raise ValueError unless ``interfaces`` are exactly the ifIndex values ``ports``."""
    indexes = [interface.index for interface in interfaces]
    if len(set(indexes)) != len(indexes):
        raise ValueError("two interfaces have the same ifIndex")
    if set(indexes) != set(ports):
        raise ValueError(f"the interfaces ({sorted(indexes)}) must be the ports the "
                         f"telemetry indexes ({sorted(set(ports))})")
