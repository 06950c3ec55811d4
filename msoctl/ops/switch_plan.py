"""Derive a switch's wanted congestion-control configuration from its links.

For every port: the PFC headroom its cable needs (xoff/xon, :mod:`.headroom`),
ECN thresholds from the link's bandwidth-delay product, and switch-generated
CNPs ("fast CNP") on its lossless queues. The result is a configuration tree
in the names of yang/msoctl-congestion.yang, ready for ``msoctl switch cc``.
A plan whose headroom does not fit the chip's lossless pool is refused, with
the numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from drivers.errors import ValidationError
from msoctl.ops.headroom import Headroom, LinkParameters, compute, parse_distance, parse_speed
from msoctl.words import counted

_PORT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_./:-]*)=(?P<distance>[^@]+)@(?P<speed>\S+)$")
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB)?\s*", re.IGNORECASE)
MAX_SIZE_BYTES = 2**48


@dataclass(frozen=True)
class PortLink:
    name: str
    distance: str
    speed: str

    @classmethod
    def parse(cls, text: str) -> PortLink:
        match = _PORT.match(text.strip())
        if not match:
            raise ValidationError(f"port {text!r}: write NAME=DISTANCE@SPEED, like "
                                  "Ethernet1=30km@400G")
        return cls(match["name"], match["distance"].strip(), match["speed"].upper())


@dataclass
class Plan:
    config: dict[str, Any]
    headroom: dict[str, Headroom]
    headroom_needed_bytes: int
    lossless_pool_bytes: int | None


def parse_size(text: str) -> int:
    """``32MB``, ``1.5GB``, ``4096`` -> bytes (decimal units, as buffer sizes are quoted),
    at most 2^48. Raises :class:`ValidationError`."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValidationError(f"size {text!r}: write it like 32MB or 33554432")
    unit = (match.group(2) or "B").upper()
    size = float(match.group(1)) * {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
    if not size <= MAX_SIZE_BYTES:  # also refuses the infinity that 400 digits make
        raise ValidationError(f"size {text!r}: at most {MAX_SIZE_BYTES} bytes (256 TB)")
    return round(size)


def derive(
    links: list[PortLink],
    *,
    lossless_priorities: tuple[int, ...] = (3,),
    lossless_pool_bytes: int | None = None,
    fast_cnp: bool = True,
    cnp_priority: int = 6,
    cnp_dscp: int = 48,
) -> Plan:
    if not links:
        raise ValidationError("a plan needs at least one port")
    names = [link.name for link in links]
    if len(set(names)) != len(names):
        raise ValidationError("a port is named twice")
    if not lossless_priorities or any(not 0 <= p <= 7 for p in lossless_priorities):
        raise ValidationError("lossless priorities are 0..7, at least one")
    if fast_cnp and cnp_priority in lossless_priorities:
        raise ValidationError(f"the CNP priority {cnp_priority} may not be a lossless priority "
                              "(CNPs would be paused with the traffic they are meant to slow)")
    ports: list[dict[str, Any]] = []
    headroom: dict[str, Headroom] = {}
    for link in links:
        result = compute(LinkParameters(distance_m=parse_distance(link.distance),
                                        speed_bps=parse_speed(link.speed)))
        headroom[link.name] = result
        ports.append({
            "name": link.name,
            "speed": link.speed,
            "cable-length-meters": round(result.distance_m),
            "lossless-priorities": sorted(lossless_priorities),
            "pfc": {"xoff-bytes": result.xoff_bytes, "xon-bytes": result.xon_bytes,
                    "watchdog": {"enabled": True}},
            "queues": {"queue": [{
                "queue-id": priority,
                "wred": {"min-threshold": result.ecn_min_threshold_bytes,
                         "max-threshold": result.ecn_max_threshold_bytes,
                         "max-drop-probability-percent": result.ecn_max_probability_percent,
                         "enable-ecn": True},
                "fast-cnp": {"enabled": fast_cnp},
            } for priority in sorted(lossless_priorities)]},
        })
    needed = sum(h.xoff_bytes for h in headroom.values()) * len(lossless_priorities)
    if lossless_pool_bytes is not None and needed > lossless_pool_bytes:
        worst = max(headroom.items(), key=lambda item: item[1].xoff_bytes)
        count = len(lossless_priorities)
        raise ValidationError(
            f"the plan needs {needed / 1e6:.2f} MB of PFC headroom "
            f"({counted(len(links), 'port')} x "
            f"{count} lossless priorit{'y' if count == 1 else 'ies'}, up to "
            f"{worst[1].xoff_bytes / 1e6:.2f} MB each on {worst[0]}), but the chip's "
            f"lossless pool holds {lossless_pool_bytes / 1e6:.2f} MB")
    config = {"switch": {
        "fast-cnp": {"enabled": fast_cnp, "cnp-dscp": cnp_dscp, "cnp-priority": cnp_priority},
        "ports": {"port": ports},
    }}
    return Plan(config, headroom, needed, lossless_pool_bytes)
