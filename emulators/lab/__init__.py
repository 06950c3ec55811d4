"""The emulated lab: builds a fabric from a topology and serves every device on loopback.

The names below are loaded when first used, not when the package is: a client of a
running lab (``msoctl lab status``, ``lab fault``) imports ``emulators.lab.constants``
and must not pay for every emulator of the lab (about a second of a command's start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from drivers.lazy import names_on_first_use

if TYPE_CHECKING:
    from emulators.lab.constants import JOURNAL_FILE
    from emulators.lab.lab import Lab
    from emulators.lab.topology import Topology, load_topology

__all__ = ["JOURNAL_FILE", "Lab", "Topology", "load_topology"]

_HOMES = {"JOURNAL_FILE": "emulators.lab.constants", "Lab": "emulators.lab.lab",
          "Topology": "emulators.lab.topology", "load_topology": "emulators.lab.topology"}

__getattr__ = names_on_first_use(__name__, _HOMES)
