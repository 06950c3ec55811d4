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
from typing import Any, Protocol

from drivers.errors import Unsupported
from drivers.switch.intent import Intent
from drivers.switch.jsontree import DevicePath, Edit, Trees, changes
from drivers.switch.tree import Change

COUNTER_NAMES = ("ecn-marked-packets", "switch-generated-cnps", "pfc-pause-frames-sent",
                 "pfc-pause-frames-received", "dropped-packets", "buffer-watermark-bytes")
"""A queue's congestion counters, named as the msoctl module names them (the names
``msoctl switch counters`` shows)."""

Counters = dict[str, dict[int, dict[str, int]]]
"""Port -> queue id -> counter name -> value."""


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

    state_path: DevicePath
    """The tree whose state holds the switch's congestion counters."""

    def counters(self, config: Trees, state: Any) -> Counters:
        """Per port and queue, the counters the state tree at :attr:`state_path` holds
        (``config``: the configuration trees, for the names of the queues), in the
        names of :data:`COUNTER_NAMES`."""

    def where(self, path: str) -> Where:
        """What the device path ``path`` (as :func:`drivers.switch.jsontree.path_text`
        writes it) configures."""


def refuse(model: str, device: str, missing: list[str]) -> Unsupported:
    """One line: what the switch's model has no place for, so nothing was applied."""
    shown = "; ".join(missing[:4]) + (f"; and {len(missing) - 4} more" if len(missing) > 4
                                      else "")
    return Unsupported(f"{model} on this switch has no place for: {shown}; nothing was "
                       "applied", device=device)


def model_edit(model: DeviceModel, want: Intent, current: Trees, *,
               merge_only: bool = False) -> Edit:
    """The model's edit for ``want``; with ``merge_only`` nothing is replaced whole or
    deleted: every replace becomes an update, the deletes are dropped."""
    edit = model.edit(want, current)
    return Edit(update=edit.replace + edit.update) if merge_only else edit


def model_changes(model: DeviceModel, before: Trees, after: Trees) -> list[Change]:
    """Every leaf that differs, in the device's paths, each with the port and intent
    field the model says it configures."""
    found = []
    for where, old, new in changes(before, after):
        about = model.where(where)
        found.append(Change(where, old, new, port=about.port, aspect=about.aspect))
    return found


def counter_tree(counters: Counters, port: str | None = None) -> dict[str, Any]:
    """``counters`` as the msoctl module's state tree holds counters (what ``msoctl switch
    counters`` and the exporter read): per port the sums of its queues' counts and its
    largest queue watermark, and each queue's own."""
    ports = []
    for name, queues in sorted(counters.items()):
        if port is not None and name != port:
            continue
        totals: dict[str, int] = {}
        for values in queues.values():
            for key, value in values.items():
                totals[key] = max(totals.get(key, 0), value) if key == \
                    "buffer-watermark-bytes" else totals.get(key, 0) + value
        ports.append({"name": name, "counters": totals, "queues": {"queue": [
            {"queue-id": number, "counters": values}
            for number, values in sorted(queues.items())]}})
    return {"switch": {"ports": {"port": ports}}}
