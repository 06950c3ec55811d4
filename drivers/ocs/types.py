"""Typed values the OCS driver returns, and the port map with its rules."""

from __future__ import annotations

import enum
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass

from drivers.errors import ValidationError


class PortState(enum.Enum):
    ENABLED = "enabled"
    DISABLED = "disabled"
    FAILED = "failed"


class BootMode(enum.Enum):
    DARK = "dark"
    RESTORE = "restore"


@dataclass(frozen=True)
class Identity:
    manufacturer: str
    model: str
    serial: str
    firmware: str


@dataclass(frozen=True)
class Connection:
    ingress: int
    egress: int
    insertion_loss_db: float | None


@dataclass(frozen=True)
class LcStatus:
    """Liquid-crystal engine figures; ``None`` where the unit does not report them."""

    cell_temperature_celsius: float | None
    last_switching_seconds: float | None


@dataclass(frozen=True)
class LosEvent:
    """A loss-of-light alarm the OCS pushed: ``port`` lost its light (``lost``) or has it
    back, as its detector read ``power_dbm`` (``None``: a failed port, no reading) at
    device time ``device_seconds``; ``sequence`` numbers the unit's events from 1 after
    each power-on."""

    device: str
    port: int
    lost: bool
    power_dbm: float | None
    device_seconds: float
    sequence: int


@dataclass(frozen=True)
class MapDiff:
    """What turns one map into another. A re-pointed ingress is a removal and an addition."""

    add: dict[int, int]
    remove: dict[int, int]
    keep: dict[int, int]

    @property
    def empty(self) -> bool:
        return not self.add and not self.remove


class PortMap(Mapping[int, int]):
    """Ingress port -> egress port, for an N x N switch (ingress 1..N, egress N+1..2N).

    Construction enforces the switch's rules, so a map that exists is a map the
    switch can hold: every port in range, each egress fed by at most one ingress.
    """

    def __init__(self, pairs: Mapping[int, int] | Iterable[tuple[int, int]], size: int):
        self.size = size
        if isinstance(pairs, Mapping):
            given = pairs  # its ingress ports are distinct already
        else:
            items = list(pairs)
            given = dict(items)
            if len(given) != len(items):
                given = {}  # an ingress listed twice: the loop below names it
        if given:
            # The common case checked set-wise (a whole map of a large switch is built at
            # every read and every change); the loop below names the first fault.
            outs = set(given.values())
            if (len(outs) == len(given) and min(given) >= 1
                    and max(given) <= size < min(outs) and max(outs) <= 2 * size):
                self._map: dict[int, int] = {i: given[i] for i in sorted(given)}
                return
        items = list(pairs.items()) if isinstance(pairs, Mapping) else items
        mapping: dict[int, int] = {}
        feeders: dict[int, int] = {}
        for ingress, egress in items:
            if not 1 <= ingress <= size:
                raise ValidationError(f"ingress port {ingress} is out of range 1..{size}")
            if not size < egress <= 2 * size:
                raise ValidationError(
                    f"egress port {egress} is out of range {size + 1}..{2 * size}"
                )
            if ingress in mapping and mapping[ingress] != egress:
                raise ValidationError(
                    f"ingress port {ingress} is sent to both {mapping[ingress]} and {egress}"
                )
            if egress in feeders and feeders[egress] != ingress:
                raise ValidationError(
                    f"egress port {egress} is fed by both {feeders[egress]} and {ingress}"
                )
            mapping[ingress] = egress
            feeders[egress] = ingress
        self._map = dict(sorted(mapping.items()))

    def __getitem__(self, ingress: int) -> int:
        return self._map[ingress]

    def __iter__(self) -> Iterator[int]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    # The views of the map itself: those Mapping makes look each port up again, one
    # call per port (a whole map is rendered into every command that replaces it).
    def keys(self) -> KeysView[int]:
        return self._map.keys()

    def values(self) -> ValuesView[int]:
        return self._map.values()

    def items(self) -> ItemsView[int, int]:
        return self._map.items()

    def __repr__(self) -> str:
        return f"PortMap({self._map!r}, size={self.size})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PortMap):
            return self._map == other._map
        if isinstance(other, Mapping):
            return dict(self._map) == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._map.items()))

    def diff(self, wanted: Mapping[int, int]) -> MapDiff:
        """What to change to go from this map to ``wanted``."""
        add = {i: e for i, e in wanted.items() if self._map.get(i) != e}
        remove = {i: e for i, e in self._map.items() if wanted.get(i) != e}
        keep = {i: e for i, e in self._map.items() if wanted.get(i) == e}
        return MapDiff(add=add, remove=remove, keep=keep)
