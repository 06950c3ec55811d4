"""The optical physical model shared by every emulator: see :mod:`.model`."""

from emulators.optics.model import (
    NO_LIGHT_DBM,
    Element,
    Fiber,
    OpticalModel,
    Receiver,
    Source,
    Transceivers,
    dbm_sum,
)

__all__ = [
    "NO_LIGHT_DBM",
    "Element",
    "Fiber",
    "OpticalModel",
    "Receiver",
    "Source",
    "Transceivers",
    "dbm_sum",
]
