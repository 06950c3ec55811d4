"""Probing inventory devices within a scrape's budget, and the exporter's own metrics.

A probe (``/probe?target=NAME[&module=M]``) runs its collector in a thread of
its own and waits at most the budget: Prometheus's
``X-Prometheus-Scrape-Timeout-Seconds`` less an offset (so that the answer
arrives before Prometheus gives up), or a default when the header is absent.
Each exchange with the device is also bounded by that budget (or the
inventory's shorter timeout), so a thread that overruns ends soon after. A
device that does not answer in time yields ``msoctl_up 0`` at the end of the
budget; nothing is shared between devices but the process, so a slow or frozen
device never delays another's probe.

Probes of one device (and module) share one reading. The rule: a probe that
arrives while a reading of its device is being taken waits for that reading
(within its own budget) instead of starting another; so does a probe that arrives
at most ``share_seconds`` (``--share-seconds``, 2 s by default: far shorter than
any scrape interval) after a reading was complete, and it gets that reading's
exposition as it was (its ``msoctl_probe_duration_seconds`` is the reading's).
Later, a new reading. So at most one reading of a device runs at a time: an
amplifier's I2C bus cannot interleave two hosts' page selections anyway, a device
in trouble is not sent a pile of parallel requests, and Prometheus servers in an
HA pair, or 200 clients asking for 5 devices at once, cost the devices one reading
each, not one per request. A reading that every waiter gave up on before it began
is not taken.

At most ``max_readings`` (``--max-readings``, 32) readings are taken at a time; a
reading beyond that waits for a turn, within its probe's budget less a reserve
(:data:`TURN_RESERVE_SECONDS`), and a free turn goes to the waiting reading with the
most budget left (see :mod:`msoctl.exporter.turns`). The exporter's
readings share one interpreter: with a thread for every probe, a host short of CPU
(a fleet's scrapes, a busy machine) would serve every reading in flight a sliver of
it, until every probe ended at its budget, and the readings Prometheus had given
up on would still use the CPU that the next ones needed. With a bounded number at
a time, the readings taken finish at the speed of the CPU there is, and a probe
that cannot have its turn within its budget costs nothing but its ``msoctl_up 0``
(reason ``budget``). A device that does not answer holds its turn for at most the
probe's budget.

Modules: a device's own kind (``ocs``, ``amp``, ``switch``) is the default;
``cpo`` is a switch's CPO/CPC telemetry over SNMP (its inventory ``snmp:``
section), see :mod:`msoctl.exporter.cpo`.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from drivers.yamlfile import YamlFileError
from msoctl.exporter import (
    DEFAULT_MAX_READINGS,
    DEFAULT_SHARE_SECONDS,
    DEFAULT_TIMEOUT_OFFSET_SECONDS,
    cpo,
    sd,
)
from msoctl.exporter.amp import AmpCollector
from msoctl.exporter.collector import DeviceCollector, failure_reason, status_families
from msoctl.exporter.exposition import render
from msoctl.exporter.families import Families
from msoctl.exporter.ocs import OcsCollector
from msoctl.exporter.sessions import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_SESSIONS, SessionPool
from msoctl.exporter.switch import SwitchCollector
from msoctl.exporter.turns import Turns
from msoctl.inventory import Device, Inventory, load_inventory

log = logging.getLogger(__name__)

DEFAULT_SCRAPE_TIMEOUT_SECONDS = 10.0
"""Prometheus's default scrape timeout: the budget when a request does not say."""
MIN_BUDGET_SECONDS = 0.05
MAX_SCRAPE_TIMEOUT_SECONDS = 600.0
"""A longer scrape timeout in the header is taken as this: a probe that may wait
longer holds a thread and a device lock for nothing (and 1e308 s is more than a
thread can wait)."""
TIMEOUT_HEADER = "X-Prometheus-Scrape-Timeout-Seconds"
TURN_RESERVE_SECONDS = 1.0
"""A reading is begun only with this much of its probe's budget left (a quarter of
the budget when that is less): one begun later would mostly end after Prometheus
gave up (see :mod:`msoctl.exporter.turns`)."""

COLLECTORS: dict[tuple[str, str], type[DeviceCollector]] = {
    ("ocs", "ocs"): OcsCollector,
    ("amp", "amp"): AmpCollector,
    ("switch", "switch"): SwitchCollector,
    ("switch", "cpo"): cpo.CpoCollector,
}
"""(device kind, module) -> collector."""
assert {kind for kind, _ in COLLECTORS} == set(sd.EXPORTED_KINDS)
MODULES = sorted({module for _, module in COLLECTORS})
DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, math.inf)


class ProbeRefused(Exception):
    """A probe request that names no device, an unknown one, or an unknown module.
    ``status`` is the HTTP status to answer with; the message is the body."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class ProbeResult:
    body: bytes
    up: bool
    seconds: float
    reason: str | None = None  # why up is 0: timeout, unreachable, ..., budget


@dataclass
class _Reading:
    """One reading of one device (and module), shared by the probes that wait for it."""

    collector: DeviceCollector
    registry: CollectorRegistry
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: threading.Event = field(default_factory=threading.Event)
    waiters: int = 0  # probes still waiting for it
    taken: bool = False  # False when nobody was left to wait for it when it could begin
    body: bytes = b""
    finished: float = math.inf  # time.monotonic() when it was complete

    def shareable(self, now: float, share_seconds: float) -> bool:
        """Whether a probe arriving ``now`` may wait for this reading or use it."""
        if not self.done.is_set():
            return True
        return self.taken and now - self.finished <= share_seconds


class _StateCollector:
    """The exporter's figures read at collection time: devices in the inventory per kind,
    and the CPU time of its SNMP worker process (not in ``process_cpu_seconds_total``)."""

    def __init__(self, prober: Prober):
        self.prober = prober

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, CounterMetricFamily]:
        return (GaugeMetricFamily("msoctl_exporter_inventory_devices",
                                  "Devices in the inventory the exporter probes, per kind.",
                                  labels=["kind"]),
                CounterMetricFamily("msoctl_exporter_snmp_worker_cpu_seconds",
                                    "CPU time of the SNMP worker process (CPO/CPC probes), "
                                    "as of its last answer."))

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        devices, cpu = self._families()
        counts: dict[str, int] = {}
        for device in self.prober.inventory().devices.values():
            counts[device.kind] = counts.get(device.kind, 0) + 1
        for kind, count in sorted(counts.items()):
            devices.add_metric([kind], count)
        cpu.add_metric([], cpo.SNMP_WORKER.cpu_seconds)
        yield devices
        yield cpu


class Prober:
    """Probes devices of an inventory file (reloaded when the file changes)."""

    def __init__(self, inventory_path: Path, *,
                 timeout_offset_seconds: float = DEFAULT_TIMEOUT_OFFSET_SECONDS,
                 default_scrape_timeout_seconds: float = DEFAULT_SCRAPE_TIMEOUT_SECONDS,
                 share_seconds: float = DEFAULT_SHARE_SECONDS,
                 max_readings: int = DEFAULT_MAX_READINGS,
                 session_idle_seconds: float = DEFAULT_IDLE_SECONDS,
                 max_sessions: int = DEFAULT_MAX_SESSIONS):
        """``share_seconds``: see the module's rule (0: share only readings in flight);
        ``max_readings``: readings taken at once, at most (0: no limit). ValueError for
        a negative one. ``session_idle_seconds``: a device connection held between
        probes (see :mod:`msoctl.exporter.sessions`) is closed after this long unused
        (ValueError unless more than 0); ``max_sessions``: such connections held at
        most (0: none, a new connection for every probe)."""
        if max_readings < 0:
            raise ValueError(f"max_readings {max_readings}: 0 (no limit) or more")
        self.inventory_path = Path(inventory_path)
        self.share_seconds = share_seconds
        self.max_readings = max_readings
        self._turns = Turns(max_readings) if max_readings else None
        self.timeout_offset_seconds = timeout_offset_seconds
        self.default_scrape_timeout_seconds = default_scrape_timeout_seconds
        self._inventory = load_inventory(self.inventory_path)  # a bad file stops the start
        self._stamp = self._file_stamp()
        self._inventory_lock = threading.Lock()
        self._device_locks: dict[tuple[str, str], threading.Lock] = {}
        self._readings: dict[tuple[str, str], _Reading] = {}
        self._locks_lock = threading.Lock()
        self.sessions = SessionPool(idle_seconds=session_idle_seconds,
                                    max_sessions=max_sessions)

        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(_StateCollector(self))
        self.probes = Counter("msoctl_exporter_probes", "Probes answered, per device kind.",
                              ["kind"], registry=self.registry)
        self.failures = Counter("msoctl_exporter_probe_failures",
                                "Probes that gave msoctl_up 0, per device kind and reason "
                                "(timeout, unreachable, rejected, protocol, device, inventory, "
                                "internal; budget: no answer within the scrape's budget).",
                                ["kind", "reason"], registry=self.registry)
        self.durations = Histogram("msoctl_exporter_probe_duration_seconds",
                                   "How long probes took to answer, per device kind.", ["kind"],
                                   buckets=DURATION_BUCKETS, registry=self.registry)
        self.shared = Counter("msoctl_exporter_probes_shared",
                              "Probes answered with a reading that another probe of the same "
                              "device started (in flight, or complete within the share "
                              "window), per device kind.", ["kind"], registry=self.registry)
        self.readings = Counter("msoctl_exporter_readings",
                                "Readings of devices taken (probes that shared one count "
                                "once), per device kind.", ["kind"], registry=self.registry)
        self.in_flight = Gauge("msoctl_exporter_probes_in_flight",
                               "Probes being answered now.", registry=self.registry)
        self.reloads = Counter("msoctl_exporter_inventory_reloads",
                               "Inventory reloads after the file changed, per result.",
                               ["result"], registry=self.registry)
        for _kind, module in COLLECTORS:  # every kind's counters exist from the start, at 0
            self.probes.labels(module)
            self.shared.labels(module)
            self.readings.labels(module)

    def warm_up(self) -> None:
        """Start the SNMP worker now if the inventory has SNMP agents, so that it has
        imported pysnmp before the first CPO probe (it starts at that probe otherwise)."""
        if any(device.snmp for device in self._inventory.devices.values()):
            cpo.SNMP_WORKER.start()

    # ---- inventory --------------------------------------------------------------------

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self.inventory_path)
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def inventory(self) -> Inventory:
        """The inventory, reloaded if its file changed; a bad new file keeps the old one."""
        stamp = self._file_stamp()
        if stamp is None or stamp == self._stamp:
            return self._inventory
        with self._inventory_lock:
            if stamp != self._stamp:
                try:
                    self._inventory = load_inventory(self.inventory_path)
                    self.reloads.labels("success").inc()
                    log.info("inventory %s reloaded: %d devices", self.inventory_path,
                             len(self._inventory.devices))
                except YamlFileError as error:
                    self.reloads.labels("failure").inc()
                    log.error("inventory not reloaded, keeping the previous one: %s", error)
                self._stamp = stamp
        return self._inventory

    # ---- probing ----------------------------------------------------------------------

    def budget(self, scrape_timeout: str | None) -> float:
        """Seconds a probe may take: the scrape timeout less the offset (but at least half
        of it), the default timeout when the header is absent or unreadable (not a
        positive finite number), at most :data:`MAX_SCRAPE_TIMEOUT_SECONDS`. Never
        raises, whatever the header holds."""
        timeout = self.default_scrape_timeout_seconds
        if scrape_timeout:
            try:
                given = float(scrape_timeout)
            except (ValueError, TypeError, AttributeError):
                given = math.nan
            if math.isfinite(given) and given > 0:
                timeout = min(given, MAX_SCRAPE_TIMEOUT_SECONDS)
        return max(MIN_BUDGET_SECONDS, timeout - self.timeout_offset_seconds, timeout / 2)

    def resolve(self, target: str | None, module: str | None) -> tuple[Device, str]:
        """The device and module a request names; ProbeRefused when it cannot be probed."""
        if not target:
            raise ProbeRefused(400, "missing parameter: target (a device name of the "
                                    "inventory, e.g. /probe?target=ocs-a)")
        inventory = self.inventory()
        device = inventory.devices.get(target)
        if device is None:
            known = ", ".join(sorted(inventory.devices)) or "none"
            raise ProbeRefused(404, f"unknown target {target!r}: not in the inventory "
                                    f"{inventory.path} (devices: {known})")
        chosen = module or device.kind
        if (device.kind, chosen) not in COLLECTORS:
            offered = sorted(m for kind, m in COLLECTORS if kind == device.kind)
            if not offered:
                kinds = sorted({kind for kind, _ in COLLECTORS})
                raise ProbeRefused(400, f"target {target!r} is a {device.kind}: the exporter "
                                        f"has no collector for it (kinds: {', '.join(kinds)})")
            raise ProbeRefused(400, f"target {target!r} is a {device.kind}: module "
                                    f"{chosen!r} does not apply (modules: {', '.join(offered)})")
        if chosen == "cpo" and device.snmp is None and device.gnmi is None:
            raise ProbeRefused(400, f"target {target!r} has neither an snmp section nor "
                                    "gNMI in the inventory: no telemetry to probe")
        return device, chosen

    def probe(self, target: str | None, module: str | None = None,
              scrape_timeout: str | None = None) -> ProbeResult:
        """Probe one device; ProbeRefused for a request that names nothing probeable."""
        device, chosen = self.resolve(target, module)
        budget = self.budget(scrape_timeout)
        start = time.monotonic()
        reading, own = self._join(device, chosen, budget, start)
        with self.in_flight.track_inprogress():
            finished = reading.done.wait(budget)
            with reading.lock:
                reading.waiters -= 1
            seconds = time.monotonic() - start
            if finished and reading.taken:
                error = reading.collector.error
                result = ProbeResult(reading.body, error is None, seconds,
                                     None if error is None else failure_reason(error))
            else:
                log.info("%s: no answer within the budget of %.3g s", device.name, budget)
                fallback = CollectorRegistry()
                fallback.register(_Fixed(status_families(device.name, False, seconds)))
                result = ProbeResult(render(fallback.collect()), False, seconds, "budget")
        self.probes.labels(chosen).inc()
        if not own:
            self.shared.labels(chosen).inc()
        self.durations.labels(chosen).observe(seconds)
        if result.reason is not None:
            self.failures.labels(chosen, result.reason).inc()
        return result

    def _join(self, device: Device, module: str, budget: float,
              start: float) -> tuple[_Reading, bool]:
        """The reading this probe waits for, and whether this probe started it."""
        key = (device.name, module)
        with self._locks_lock:
            reading = self._readings.get(key)
            own = reading is None or not reading.shareable(start, self.share_seconds)
            if own:
                collector = COLLECTORS[(device.kind, module)](device, timeout_seconds=budget,
                                                              sessions=self.sessions)
                registry = CollectorRegistry()
                registry.register(collector)
                reading = self._readings[key] = _Reading(collector, registry)
                lock = self._device_locks.setdefault(key, threading.Lock())
            assert reading is not None
            with reading.lock:
                reading.waiters += 1
        if own:
            threading.Thread(target=self._run, args=(reading, lock, start + budget,
                                                     min(TURN_RESERVE_SECONDS, budget / 4), key),
                             name=f"probe-{device.name}", daemon=True).start()
        return reading, own

    def _run(self, reading: _Reading, lock: threading.Lock, deadline: float, reserve: float,
             key: tuple[str, str]) -> None:
        try:
            self._take(reading, lock, deadline, reserve, key[1])
        finally:
            # Keep the reading for the share window only: a fleet's switches' CPO/CPC
            # expositions are a megabyte or more each.
            if reading.taken and self.share_seconds > 0:
                time.sleep(max(0.0, reading.finished + self.share_seconds - time.monotonic()))
            with self._locks_lock:
                if self._readings.get(key) is reading:
                    del self._readings[key]

    def _take(self, reading: _Reading, lock: threading.Lock, deadline: float, reserve: float,
              module: str) -> None:
        # the device lock is held through the close too: the next reading waits for it
        if not lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            reading.done.set()  # the device's previous reading is still closing: up 0
            return
        try:
            turns = self._turns
            if turns is not None and not turns.acquire(deadline - reserve):
                reading.done.set()  # no turn in time: up 0, nothing read
                return
            try:
                with reading.lock:
                    if reading.waiters == 0:
                        reading.done.set()  # everybody gave up waiting: not taken
                        return
                self.readings.labels(module).inc()
                body = reading.collector.exposition()  # the device is read here
                with reading.lock:
                    reading.body, reading.taken = body, True
                    reading.finished = time.monotonic()
                    reading.done.set()
            finally:
                if turns is not None:
                    turns.release()  # before the close: closing uses no CPU to speak of
        finally:
            reading.collector.run_cleanups()
            lock.release()

    def metrics(self) -> bytes:
        """The exporter's own metrics (``/metrics``)."""
        return generate_latest(self.registry)

    def close(self) -> None:
        """Stop what probes share: the SNMP worker process, the held device sessions."""
        cpo.SNMP_WORKER.close()
        cpo.STREAMS.close()
        self.sessions.close()


class _Fixed:
    """A collector of families already made."""

    def __init__(self, families: Families):
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families
