"""The base of the per-family collectors: one probe of one device.

A collector is registered in a fresh registry per probe. ``describe()`` gives
the families from the family's table (so registering never touches the
device); ``collect()`` opens the device, reads it, closes it, and yields what
it read followed by ``msoctl_up`` and ``msoctl_probe_duration_seconds``. Any
error is caught here and exported as ``msoctl_up 0`` with nothing read from
the device: a failing device never fails the scrape itself.

Closing a device can be slow (pyserial's ``socket://`` close sleeps 0.3 s), so
``collect()`` only queues the close in :attr:`DeviceCollector.cleanups`; the
prober runs it after the response has gone.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import ClassVar

from prometheus_client.core import Metric

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
)
from drivers.yamlfile import YamlFileError
from msoctl.exporter.families import GAUGE, Families, MetricSpec, describe
from msoctl.exporter.sessions import SessionPool
from msoctl.inventory import Device

log = logging.getLogger(__name__)

UP = MetricSpec("msoctl_up", GAUGE,
                "1 when the device answered the probe completely, 0 when it did not.")
PROBE_DURATION = MetricSpec("msoctl_probe_duration_seconds", GAUGE,
                            "How long the probe of the device took.")
COMMON = (UP, PROBE_DURATION)


def failure_reason(error: BaseException) -> str:
    """A short, bounded word for the exporter's own error counter."""
    for kind, reason in ((DeviceTimeout, "timeout"), (DeviceUnreachable, "unreachable"),
                         (DeviceRejected, "rejected"), (ProtocolError, "protocol"),
                         (DeviceError, "device"), (YamlFileError, "inventory")):
        if isinstance(error, kind):
            return reason
    return "internal"


def status_families(device: str, up: bool, seconds: float) -> Families:
    """``msoctl_up`` and ``msoctl_probe_duration_seconds`` of one probe."""
    families = Families(COMMON)
    families.add(UP.name, up, device=device)
    families.add(PROBE_DURATION.name, seconds, device=device)
    return families


class DeviceCollector(ABC):
    """One probe of one device. Subclasses set ``kind`` and ``METRICS`` and implement
    :meth:`read`, which fills the families from the device (raising on failure)."""

    kind: ClassVar[str]
    METRICS: ClassVar[tuple[MetricSpec, ...]]

    def __init__(self, device: Device, *, timeout_seconds: float,
                 sessions: SessionPool | None = None):
        """``timeout_seconds`` bounds each exchange with the device: the smaller of the
        inventory's timeout and what is left of the scrape's budget. ``sessions``: the
        connections held between probes, for the kinds that keep them (None: a new
        connection for every probe)."""
        self.device = device
        self.sessions = sessions
        self.timeout_seconds = min(device.timeout_seconds, timeout_seconds)
        self.error: BaseException | None = None
        self.cleanups: list[Callable[[], None]] = []

    def describe(self) -> Iterator[Metric]:
        yield from describe((*self.METRICS, *COMMON))

    def collect(self) -> Iterator[Metric]:
        families, status = self._read()
        yield from families
        yield from status

    def exposition(self) -> bytes:
        """Read the device; what :meth:`collect` yields, in the text exposition (what
        ``generate_latest`` of a registry with this collector alone writes)."""
        families, status = self._read()
        return families.text() + status.text()

    def _read(self) -> tuple[Families, Families]:
        start = time.monotonic()
        families = Families(self.METRICS)
        try:
            self.read(families)
        except Exception as error:  # every failure of one device is that device's up 0
            self.error = error
            families = Families(self.METRICS)
            if failure_reason(error) == "internal":
                log.exception("%s: probe failed", self.device.name)
            else:
                log.info("%s: probe failed: %s", self.device.name, error)
        return families, status_families(self.device.name, self.error is None,
                                         time.monotonic() - start)

    @abstractmethod
    def read(self, families: Families) -> None:
        """Read the device into ``families`` (each device family's collector)."""

    def close_later(self, close: Callable[[], None]) -> None:
        """Have the prober run ``close`` once the response has been sent."""
        self.cleanups.append(close)

    def run_cleanups(self) -> None:
        for close in self.cleanups:
            try:
                close()
            except Exception:  # a device that fails to close is closed anyway
                log.debug("%s: close", self.device.name, exc_info=True)
        self.cleanups.clear()
