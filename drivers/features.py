"""What a unit has: the optional features a driver found it to have, by key of the
driver's own table of them (the OCS's ``OPTIONAL_FEATURES``, the instruments'
``LASER_FEATURES`` and ``METER_FEATURES``). Each driver asks once per session and
returns one of these; a feature it lacks is never asked for again."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Features:
    """The optional features a unit has."""

    present: frozenset[str]
    known: tuple[str, ...]
    """Every feature asked about, in the table's order."""

    def has(self, key: str) -> bool:
        return key in self.present

    @property
    def supported(self) -> list[str]:
        return [key for key in self.known if key in self.present]

    @property
    def missing(self) -> list[str]:
        return [key for key in self.known if key not in self.present]
