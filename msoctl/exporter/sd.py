"""Prometheus file_sd targets from the inventory (``msoctl inventory sd``).

One target group per device the exporter has a collector for: the target is the device's name (what
``/probe?target=`` takes; deploy/prometheus.yml turns it into the probe
parameter and the ``instance`` label), its labels the inventory's labels plus
``kind``. A switch with an ``snmp:`` section gets a second group for its
CPO/CPC telemetry: ``kind: cpo`` and ``__param_module: cpo``, which
Prometheus sends as the ``module`` parameter of the probe.

Label names are made valid Prometheus label names (other characters become
``_``); an inventory label named ``kind``, ``job`` or ``instance``, or one that
begins with ``__`` (reserved), is exported as ``inventory_<name>``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from msoctl.inventory import Inventory

RESERVED = frozenset({"kind", "job", "instance"})
EXPORTED_KINDS = ("ocs", "amp", "switch")
"""Kinds the exporter has a collector for; lab instruments (laser, meter) are not listed."""
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def label_name(key: str) -> str:
    name = _INVALID.sub("_", key)
    if not name or name[0].isdigit():
        name = f"_{name}"
    if name in RESERVED or name.startswith("__"):
        name = f"inventory_{name.lstrip('_')}"
    return name


def targets(inventory: Inventory) -> list[dict[str, Any]]:
    """file_sd target groups for every device, and every switch's telemetry."""
    groups: list[dict[str, Any]] = []
    for device in inventory.devices.values():
        if device.kind not in EXPORTED_KINDS:
            continue
        labels = {label_name(key): value for key, value in sorted(device.labels.items())}
        groups.append({"targets": [device.name], "labels": {**labels, "kind": device.kind}})
        if device.kind == "switch" and device.snmp is not None:
            groups.append({"targets": [device.name],
                           "labels": {**labels, "kind": "cpo", "__param_module": "cpo"}})
    return groups


def render(groups: list[dict[str, Any]]) -> str:
    return json.dumps(groups, indent=2) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write then rename, so Prometheus never reads a half-written file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
