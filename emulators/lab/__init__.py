"""The emulated lab: builds a fabric from a topology and serves every device on loopback.

The names below are loaded when first used, not when the package is: a client of a
running lab (``msoctl lab status``, ``lab fault``) imports ``emulators.lab.constants``
and must not pay for every emulator of the lab (about a second of a command's start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from emulators.lab.constants import JOURNAL_FILE
    from emulators.lab.lab import Lab
    from emulators.lab.topology import Topology, load_topology

__all__ = ["JOURNAL_FILE", "Lab", "Topology", "load_topology"]

_HOMES = {"JOURNAL_FILE": "emulators.lab.constants", "Lab": "emulators.lab.lab",
          "Topology": "emulators.lab.topology", "load_topology": "emulators.lab.topology"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
