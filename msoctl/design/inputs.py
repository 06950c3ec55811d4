"""What a fabric study starts from: the GPUs, the server shape and the switch.

Every link of a fabric runs at the NIC port speed. A switch port faster than
that is split (breakout) into ``switch_speed / nic_speed`` ports, so a switch of
``radix`` ports counts as ``link_radix = radix x switch_speed / nic_speed`` ports
at the link speed: 64 ports of 800G make 128 of 400G. The ratio must be a whole
number, and a NIC port may not be faster than a switch port.

Raises :class:`DesignError` (a :class:`~drivers.errors.ValidationError`: exit 2 on
the command line) for inputs no architecture can use.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from drivers.errors import ValidationError

SPEEDS_GBPS = (100, 200, 400, 800, 1600)
"""The port speeds a study may name (Gb/s)."""

MIN_RADIX, MAX_RADIX = 4, 1024
MAX_OVERSUBSCRIPTION = 16.0
_SPEED = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[GT]?)", re.IGNORECASE)


class DesignError(ValidationError):
    """A study that cannot be computed as asked: bad inputs, a missing price, a baseline
    that cannot build a requested scale. One line, exit 2."""


def speed_text(gbps: int) -> str:
    """``400`` -> ``'400G'``, ``1600`` -> ``'1.6T'``."""
    return f"{gbps / 1000:g}T" if gbps >= 1000 else f"{gbps}G"


def parse_speed(text: str) -> int:
    """A port speed written ``400G``, ``800g``, ``1.6T`` or ``400`` (Gb/s), as Gb/s.

    Raises :class:`DesignError` for anything but one of :data:`SPEEDS_GBPS`.
    """
    match = _SPEED.fullmatch(text.strip())
    known = ", ".join(speed_text(s) for s in SPEEDS_GBPS)
    if match is None:
        raise DesignError(f"speed {text!r}: write it as one of {known}")
    number = float(match["number"]) * (1000 if match["unit"].upper() == "T" else 1)
    if number not in SPEEDS_GBPS:
        raise DesignError(f"speed {text!r}: one of {known}")
    return int(number)


@dataclass(frozen=True)
class FabricInputs:
    """One fabric to size.

    ``gpus`` GPUs in servers of ``gpus_per_server``; each GPU has ``nics_per_gpu`` NIC
    ports of ``nic_speed_gbps``; switches have ``radix`` ports of ``switch_speed_gbps``.
    ``oversubscription`` is the leaf's downlink to uplink ratio (1.0: non-blocking;
    3.0: 48 down and 16 up on 64 ports). ``planes`` is the plane count of the
    multi-plane and big-switch fabrics (None: their own default, see those modules).
    """

    gpus: int
    gpus_per_server: int = 8
    nics_per_gpu: int = 1
    nic_speed_gbps: int = 400
    radix: int = 64
    switch_speed_gbps: int = 400
    oversubscription: float = 1.0
    planes: int | None = None

    @property
    def endpoint_ports(self) -> int:
        """NIC ports the fabric connects: one link each."""
        return self.gpus * self.nics_per_gpu

    @property
    def servers(self) -> int:
        """Servers, the last one counted whole when ``gpus`` is not a multiple."""
        return math.ceil(self.gpus / self.gpus_per_server)

    @property
    def ports_per_server(self) -> int:
        return self.gpus_per_server * self.nics_per_gpu

    @property
    def breakout(self) -> int:
        """Link-speed ports per switch port (1 when the speeds are equal)."""
        return self.switch_speed_gbps // self.nic_speed_gbps

    @property
    def link_radix(self) -> int:
        """Switch ports at the link (NIC) speed."""
        return self.radix * self.breakout

    def leaf_split(self) -> tuple[int, int]:
        """(down, up) ports of a leaf at the link speed for ``oversubscription``.

        down = floor(k x r / (r + 1)), up = k - down, with k the link radix and r the
        ratio: 1:1 on 64 ports is 32/32, 3:1 is 48/16, 2:1 is 42/22 (really 1.91:1,
        which is what the study reports).
        """
        ratio = self.oversubscription
        down = math.floor(self.link_radix * ratio / (ratio + 1) + 1e-9)
        return down, self.link_radix - down

    def check(self) -> None:
        """Refuse inputs no architecture can build from. Raises :class:`DesignError`."""
        for name, value, low in (("gpus", self.gpus, 1),
                                 ("gpus per server", self.gpus_per_server, 1),
                                 ("NIC ports per GPU", self.nics_per_gpu, 1)):
            if value < low:
                raise DesignError(f"{name} must be at least {low}, got {value}")
        if self.nic_speed_gbps not in SPEEDS_GBPS or self.switch_speed_gbps not in SPEEDS_GBPS:
            raise DesignError("speeds must be one of "
                              + ", ".join(speed_text(s) for s in SPEEDS_GBPS))
        if not MIN_RADIX <= self.radix <= MAX_RADIX or self.radix % 2:
            raise DesignError(f"radix {self.radix} cannot build a fat-tree: an even number of "
                              f"ports from {MIN_RADIX} to {MAX_RADIX}")
        if self.nic_speed_gbps > self.switch_speed_gbps:
            raise DesignError(
                f"a {speed_text(self.nic_speed_gbps)} NIC port does not fit a "
                f"{speed_text(self.switch_speed_gbps)} switch port; every link runs at the "
                "NIC speed")
        if self.switch_speed_gbps % self.nic_speed_gbps:
            raise DesignError(
                f"a {speed_text(self.switch_speed_gbps)} switch port does not split into "
                f"{speed_text(self.nic_speed_gbps)} ports")
        if not math.isfinite(self.oversubscription) or \
                not 1.0 <= self.oversubscription <= MAX_OVERSUBSCRIPTION:
            raise DesignError(f"oversubscription {self.oversubscription:g} must be from 1 to "
                              f"{MAX_OVERSUBSCRIPTION:g} (down:up at the leaf)")
        down, up = self.leaf_split()
        if down < 1 or up < 1:
            raise DesignError(f"radix {self.link_radix} at oversubscription "
                              f"{self.oversubscription:g}:1 leaves a leaf no uplink")
        if self.planes is not None and (self.planes < 1
                                        or self.ports_per_server % self.planes):
            raise DesignError(
                f"{self.planes} planes: a server has {self.ports_per_server} NIC ports, "
                "and each plane takes the same number of them (give a divisor)")
