"""Lab instruments for OCS acceptance testing: a tunable laser and a multiport power meter.

SCPI over VISA (TCP socket, serial) or a serial port, in the conventions of
the common lightwave instruments; see :mod:`drivers.instruments.commands`.
"""

from drivers.features import Features
from drivers.instruments.connect import open_laser, open_meter
from drivers.instruments.laser import LaserDriver
from drivers.instruments.meter import MeterDriver
from drivers.instruments.types import (
    Identity,
    LaserRange,
    LaserSettings,
    PowerTrace,
)

__all__ = [
    "Features",
    "Identity",
    "LaserDriver",
    "LaserRange",
    "LaserSettings",
    "MeterDriver",
    "PowerTrace",
    "open_laser",
    "open_meter",
]
