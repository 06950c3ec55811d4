"""What every device model of the switch driver is: intent in, the device's documents out,
and back.

A model is a small renderer/parser pair over the model's own data (its paths and
names, in the model's module), built for one session from what the switch announced
(its gNMI models or NETCONF modules: a vendor's augments are used only where the unit
has them). Adding a vendor is a new module in this package and a line in
:data:`drivers.switch.models.MODELS`; nothing else of the driver changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from drivers.errors import Unsupported
from drivers.switch.intent import Intent
from drivers.switch.jsontree import DevicePath, Edit, Trees, changes
from drivers.switch.tree import Change


@dataclass(frozen=True)
class Where:
    """What a device path is about, in the intent's words: the port (``None`` for the
    switch as a whole) and the intent's field (``speed``, ``ecn``, ``fast_cnp``...)."""

    port: str | None
    aspect: str


class DeviceModel(Protocol):
    name: str
    """``openconfig``, ``sonic``, ..."""

    read_paths: tuple[DevicePath, ...]
    """The configuration trees the model reads (and edits within)."""

    list_keys: Mapping[str, tuple[str, ...]]
    """A list's name -> its key members (the first one an entry has)."""

    def edit(self, want: Intent, current: Trees) -> Edit:
        """The edit that makes ``current`` hold ``want`` (each port it names replaced
        whole). Raises :class:`~drivers.errors.Unsupported` naming what the unit's model
        cannot hold (one line), :class:`~drivers.errors.ValidationError` for a port the
        switch does not have."""

    def parse(self, current: Trees) -> Intent:
        """The intent ``current`` holds (every port with any configuration)."""

    def where(self, path: str) -> Where:
        """What the device path ``path`` (as :func:`drivers.switch.jsontree.path_text`
        writes it) configures."""


def refuse(model: str, device: str, missing: list[str]) -> Unsupported:
    """One line: what the switch's model has no place for, so nothing was applied."""
    shown = "; ".join(missing[:4]) + (f"; and {len(missing) - 4} more" if len(missing) > 4
                                      else "")
    return Unsupported(f"{model} on this switch has no place for: {shown}; nothing was "
                       "applied", device=device)


def model_changes(model: DeviceModel, before: Trees, after: Trees) -> list[Change]:
    """Every leaf that differs, in the device's paths, each with the port and intent
    field the model says it configures."""
    found = []
    for where, old, new in changes(before, after):
        about = model.where(where)
        found.append(Change(where, old, new, port=about.port, aspect=about.aspect))
    return found
