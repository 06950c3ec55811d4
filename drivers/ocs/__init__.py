"""Optical circuit switch (OCS) driver: SCPI over VISA (TCP) or a serial console."""

from drivers.ocs.driver import OcsDriver
from drivers.ocs.types import BootMode, Connection, Identity, LcStatus, PortMap, PortState

__all__ = [
    "BootMode",
    "Connection",
    "Identity",
    "LcStatus",
    "OcsDriver",
    "PortMap",
    "PortState",
]
