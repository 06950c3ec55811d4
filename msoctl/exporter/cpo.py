"""The CPO/CPC collector: a switch's co-packaged optics and copper, over SNMP.

EXTENSION POINT: the SNMP collector of drivers/snmp is not there yet, so
:data:`CpoCollector` is ``None`` and ``/probe?target=SW&module=cpo`` answers
400 with :data:`UNAVAILABLE`.
"""

from __future__ import annotations

from msoctl.exporter.collector import DeviceCollector

UNAVAILABLE = "the CPO/CPC collector (drivers/snmp) is not part of this build"

CpoCollector: type[DeviceCollector] | None = None
