"""The emulated lab: builds a fabric from a topology and serves every device on loopback."""

from emulators.lab.constants import JOURNAL_FILE
from emulators.lab.lab import Lab
from emulators.lab.topology import Topology, load_topology

__all__ = ["JOURNAL_FILE", "Lab", "Topology", "load_topology"]
