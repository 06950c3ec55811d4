"""Lab instruments for OCS acceptance testing: a tunable laser and a multiport power meter.

SCPI over VISA (TCP socket, serial) or a serial port, in the conventions of
the common lightwave instruments; see :mod:`drivers.instruments.commands`.

The names below are loaded when first used, not when the package is: the emulated
instruments import :mod:`drivers.instruments.commands` for the conventions they answer
in, and a lab must not pay for pyvisa, which only a driver uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from drivers.lazy import names_on_first_use

if TYPE_CHECKING:
    from drivers.features import Features
    from drivers.instruments.connect import open_laser, open_meter
    from drivers.instruments.laser import LaserDriver
    from drivers.instruments.meter import MeterDriver
    from drivers.instruments.types import Identity, LaserRange, LaserSettings, PowerTrace

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

_HOMES = {"Features": "drivers.features",
          "open_laser": "drivers.instruments.connect",
          "open_meter": "drivers.instruments.connect",
          "LaserDriver": "drivers.instruments.laser",
          "MeterDriver": "drivers.instruments.meter",
          "Identity": "drivers.instruments.types",
          "LaserRange": "drivers.instruments.types",
          "LaserSettings": "drivers.instruments.types",
          "PowerTrace": "drivers.instruments.types"}

__getattr__ = names_on_first_use(__name__, _HOMES)
