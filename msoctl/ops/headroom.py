"""PFC headroom, RTT, bandwidth-delay product and ECN thresholds for a link.

The headroom formula is the one SONiC's dynamic headroom calculation uses (sonic-swss
``cfgmgr/buffer_headroom_*.lua``; pause quanta per speed from IEEE 802.3 Annex 31B):

    bytes_on_cable = 2 * L * speed / v / 8             (v ~ 1.98e8 m/s in fiber)
    peer_response  = pause quanta * 512 / 8            (905 quanta at 400G = 57,920 B)
    xoff = lossless MTU + (port MTU + bytes_on_cable + peer_response + PHY delay)
                          * cell occupancy
    xon  = pipeline latency

Cell occupancy is the worst-case buffer-cell use of small packets: a packet
smaller than a cell still takes a whole one. With ``small`` percent of the
lossless traffic in minimum-size packets,

    factor    = cell / min_packet           if cell > 2 * min_packet
              = 2 * cell / (1 + cell)        otherwise
    occupancy = (100 - small + small * factor) / 100

ECN thresholds follow the long-link rule of thumb: mark from a fraction of
the bandwidth-delay product, always mark by a small multiple of it (Kmax at
2-3 x BDP).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from drivers.errors import ValidationError
from drivers.switch.link import (
    FIBER_VELOCITY_M_PER_S,
    PAUSE_QUANTUM_BITS,
    PEER_RESPONSE_QUANTA_400G,
    PORT_SPEEDS_BPS,
)

SPEEDS_BPS = PORT_SPEEDS_BPS
MAX_DISTANCE_M = 20_000_000.0
"""The longest cable a headroom is worked out for (20,000 km, as the inventory's spans)."""
MAX_BUFFER_BYTES = 2**48
"""The largest byte count taken for a buffer, delay or latency (256 TB)."""
MAX_PAUSE_QUANTA = 65535
"""A PAUSE frame's pause_time is two octets (IEEE 802.3 Annex 31B)."""


@dataclass(frozen=True)
class LinkParameters:
    distance_m: float
    speed_bps: float
    port_mtu_bytes: int = 9216
    lossless_mtu_bytes: int = 9216
    cell_bytes: int = 144
    min_packet_bytes: int = 64
    small_packet_percent: float = 45.0
    phy_delay_bytes: int = 1024
    pipeline_latency_bytes: int = 20480
    peer_response_quanta: float | None = None  # default: 905 at 400G, same time elsewhere
    ecn_min_bdp: float = 0.25
    ecn_max_bdp: float = 2.0
    ecn_max_probability_percent: int = 20


@dataclass(frozen=True)
class Headroom:
    distance_m: float
    speed_bps: float
    rtt_seconds: float
    bdp_bytes: int
    bytes_on_cable: int
    peer_response_bytes: int
    cell_occupancy: float
    xoff_bytes: int
    xon_bytes: int
    ecn_min_threshold_bytes: int
    ecn_max_threshold_bytes: int
    ecn_max_probability_percent: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def cell_occupancy(cell_bytes: int, min_packet_bytes: int, small_packet_percent: float) -> float:
    if cell_bytes > 2 * min_packet_bytes:
        factor = cell_bytes / min_packet_bytes
    else:
        factor = 2 * cell_bytes / (1 + cell_bytes)
    return (100 - small_packet_percent + small_packet_percent * factor) / 100


def compute(p: LinkParameters) -> Headroom:
    """Every term of the headroom formula for one link."""
    numbers = (p.distance_m, p.speed_bps, p.small_packet_percent, p.ecn_min_bdp,
               p.ecn_max_bdp, p.peer_response_quanta or 0.0)
    if not all(math.isfinite(n) for n in numbers):
        raise ValidationError("every link parameter must be a finite number")
    if not 0 <= p.distance_m <= MAX_DISTANCE_M or p.speed_bps <= 0:
        raise ValidationError(f"distance must be 0..{MAX_DISTANCE_M / 1000:g} km and speed > 0")
    if not 0 <= (p.peer_response_quanta or 0) <= MAX_PAUSE_QUANTA:
        raise ValidationError(f"peer response must be 0..{MAX_PAUSE_QUANTA} pause quanta")
    sizes = (p.port_mtu_bytes, p.lossless_mtu_bytes, p.phy_delay_bytes, p.pipeline_latency_bytes)
    if not all(0 <= n <= MAX_BUFFER_BYTES for n in sizes):
        raise ValidationError(f"MTUs, PHY delay and pipeline latency must be 0..{MAX_BUFFER_BYTES}"
                              " bytes")
    if not 0 <= p.small_packet_percent <= 100:
        raise ValidationError("small packet percentage must be 0..100")
    if p.cell_bytes < 1 or p.min_packet_bytes < 1:
        raise ValidationError("cell and packet sizes must be positive")
    if not 0 < p.ecn_min_bdp < p.ecn_max_bdp:
        raise ValidationError("the ECN minimum must be below the maximum")
    rtt = 2 * p.distance_m / FIBER_VELOCITY_M_PER_S
    bytes_on_cable = 2 * p.distance_m * p.speed_bps / FIBER_VELOCITY_M_PER_S / 8
    quanta = p.peer_response_quanta
    if quanta is None:
        quanta = PEER_RESPONSE_QUANTA_400G * p.speed_bps / SPEEDS_BPS["400G"]
    peer_response = quanta * PAUSE_QUANTUM_BITS / 8
    occupancy = cell_occupancy(p.cell_bytes, p.min_packet_bytes, p.small_packet_percent)
    xoff = p.lossless_mtu_bytes + (p.port_mtu_bytes + bytes_on_cable + peer_response
                                   + p.phy_delay_bytes) * occupancy
    bdp = p.speed_bps * rtt / 8
    return Headroom(
        distance_m=p.distance_m,
        speed_bps=p.speed_bps,
        rtt_seconds=rtt,
        bdp_bytes=round(bdp),
        bytes_on_cable=round(bytes_on_cable),
        peer_response_bytes=round(peer_response),
        cell_occupancy=round(occupancy, 4),
        xoff_bytes=round(xoff),
        xon_bytes=p.pipeline_latency_bytes,
        ecn_min_threshold_bytes=round(bdp * p.ecn_min_bdp),
        ecn_max_threshold_bytes=round(bdp * p.ecn_max_bdp),
        ecn_max_probability_percent=p.ecn_max_probability_percent,
    )


_DISTANCE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(km|m)?\s*", re.IGNORECASE)


def parse_distance(text: str) -> float:
    """``30km``, ``500m``, ``2.5 km`` -> metres, 0..20,000 km.

    The unit is required: a bare ``30`` could be 30 m or 30 km, a thousandfold
    difference in headroom. Raises :class:`ValidationError`.
    """
    match = _DISTANCE.fullmatch(text)
    if not match:
        raise ValidationError(f"distance {text!r}: write it like 30km or 500m")
    if match.group(2) is None:
        raise ValidationError(f"distance {text!r} has no unit: write {match.group(1)}m or "
                              f"{match.group(1)}km")
    value = float(match.group(1)) * (1000 if match.group(2).lower() == "km" else 1)
    if not value <= MAX_DISTANCE_M:  # also refuses the infinity that 400 digits make
        raise ValidationError(f"distance {text!r}: at most {MAX_DISTANCE_M / 1000:g} km")
    return value


def parse_speed(text: str) -> float:
    key = text.strip().upper()
    if key not in SPEEDS_BPS:
        raise ValidationError(f"speed {text!r}: one of {', '.join(SPEEDS_BPS)}")
    return SPEEDS_BPS[key]
