"""A switch's optics and FEC from gNMI notifications, OpenConfig or SONiC.

Paths are in :mod:`.gnmi_paths`, the leaves and the judging of each value in
:mod:`.gnmi_samples`. :class:`OpticsAccumulator` keeps the last good value of every
leaf with the time it came (deletes remove what lies under their path) and builds an
:class:`~drivers.optics.readings.OpticsReading` on demand, ``source`` ``openconfig`` or
``sonic``; :func:`optics_reading` does the same for the notifications of one Get.
:func:`read` gets them with :class:`~drivers.transports.gnmi.GnmiClient`,
:func:`follow_async` keeps a STREAM subscription feeding an accumulator on an event loop
(many of them on one: the exporter), subscribing again when it ends or goes silent;
:func:`follow` runs it in a thread of the caller's.

Ports: OpenConfig's are the interfaces, each joined to its transceiver component by the
interface's ``state/transceiver``; SONiC's are the tables' keys. ``PortOptics.port`` is
the port's position among the reading's ports in their names' natural order (Ethernet2
before Ethernet10), counted from 1; ``port_name`` its name. Lanes are the channels
(OpenConfig) or ``txN``/``rxN`` fields (SONiC). External lasers come from SONiC's
``TRANSCEIVER_ELS_*`` tables only (OpenConfig has no model of them): the modules are
told apart by their ``serial`` and numbered from 1 in the order of the first port each
feeds, their lasers by the fields' numbers; a laser emits (``on``) while its
``txoutput_statusN`` is True.

A bad sample (see :mod:`.gnmi_samples`) is dropped and counted in ``dropped`` by reason,
over the accumulator's life; a transceiver component no interface names is dropped as
``unassociated``. Nothing here raises on what a target sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from drivers.errors import DeviceError
from drivers.optics import gnmi_paths as P
from drivers.optics.gnmi_paths import subscription_paths
from drivers.optics.gnmi_samples import (
    Path,
    covered,
    judged,
    leaves,
    names,
    parse_pattern,
    quantity_of,
)
from drivers.optics.readings import (
    LEVELS,
    ExternalLaser,
    LaneOptics,
    OpticsReading,
    PortFec,
    PortOptics,
    Thresholds,
)

log = logging.getLogger(__name__)

__all__ = ["OpticsAccumulator", "follow", "follow_async", "optics_reading", "read",
           "subscription_paths"]


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part
                 for part in re.split(r"([0-9]+)", name))


class OpticsAccumulator:
    """The last value of every leaf of one switch's telemetry (module docstring).

    ``subscribed``: the path strings asked for (default: :func:`subscription_paths` of
    ``model``); a leaf under none of them is dropped as ``unsubscribed``. ``clock`` gives
    the seconds (monotonic) by which ages are measured. Thread-safe."""

    def __init__(self, device: str, model: str, *, subscribed: Iterable[str] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        if model not in P.MODELS:
            raise ValueError(f"model: one of {', '.join(P.MODELS)}, not {model!r}")
        self.device = device
        self.model = model
        paths = list(subscribed) if subscribed is not None else \
            [wanted.path for wanted in subscription_paths(model)]
        self._patterns = [parse_pattern(path) for path in paths]
        self._clock = clock
        self._lock = threading.Lock()
        self._values: dict[Path, Any] = {}
        self._dropped: Counter[str] = Counter()
        self._last: float | None = None
        self._judges: dict[Path, str | None] = {}
        """Per leaf path: what it holds (its Unit), or None when no subscribed path covers
        it; the same paths come every interval, so each is worked out once."""
        self._reading: OpticsReading | None = None
        """The last reading built, kept until something new comes (:attr:`_version`)."""
        self._version = 0
        self.synced = threading.Event()
        """Set once a stream feeding it has had the target's sync_response: every path
        subscribed has sent its values once (gNMI 3.5.2.3)."""

    def add(self, notification: Any) -> None:
        """Take one ``gnmi_pb2.Notification``: its deletes, then its updates."""
        try:
            self._add(notification)
        except Exception as error:  # a message not shaped as a Notification
            log.debug("%s: notification not read: %s", self.device, error)
            with self._lock:
                self._dropped["undecodable"] += 1
                self._reading = None
                self._version += 1

    def _add(self, notification: Any) -> None:
        from drivers.optics.gnmi_samples import elems_of

        prefix = elems_of(notification.prefix)
        gone = [tuple(prefix + elems_of(path)) for path in notification.delete]
        found = list(leaves(notification))
        with self._lock:
            self._last = self._clock()
            for path in gone:
                for stored in [p for p in self._values if p[:len(path)] == path]:
                    del self._values[stored]
            self._reading = None
            self._version += 1
            for path, value, reason in found:
                unit: str | None = None
                if reason is None:
                    if path not in self._judges:
                        self._judges[path] = (quantity_of(path)
                                              if covered(path, self._patterns) else None)
                    unit = self._judges[path]
                    if unit is None:
                        reason = "unsubscribed"
                if reason is None and unit is not None:
                    kept, reason = judged(unit, value)
                    if reason is None:
                        if kept is not None:
                            self._values[path] = kept
                        else:
                            self._values.pop(path, None)
                if reason is not None:
                    self._dropped[reason] += 1

    def reading(self) -> OpticsReading:
        """The reading of what has come so far; ``age_seconds`` since the last
        notification (None before the first)."""
        with self._lock:
            age = None if self._last is None else max(0.0, self._clock() - self._last)
            built, version = self._reading, self._version
            values = dict(self._values) if built is None else {}
            dropped = Counter(self._dropped)
        if built is None:
            build = _openconfig if self.model == "openconfig" else _sonic
            ports, fec, lasers = build(values, dropped)
            built = OpticsReading(self.device, self.model, ports=ports, fec=fec,
                                  lasers=lasers, dropped=dict(dropped))
            with self._lock:
                if self._version == version:  # nothing came meanwhile
                    self._reading = built
        return replace(built, age_seconds=age)


def optics_reading(device: str, model: str, notifications: Iterable[Any], *,
                   paths: Iterable[str] | None = None) -> OpticsReading:
    """The reading of one Get's (or one ONCE subscription's) notifications; ``paths``
    those asked for (default: the model's subscription paths). ``age_seconds`` None."""
    accumulator = OpticsAccumulator(device, model, subscribed=paths)
    for notification in notifications:
        accumulator.add(notification)
    reading = accumulator.reading()
    return OpticsReading(reading.device, reading.source, ports=reading.ports,
                         fec=reading.fec, lasers=reading.lasers, dropped=reading.dropped)


def read(client: Any, model: str) -> OpticsReading:
    """Get the model's paths from ``client`` (a GnmiClient), all in one GetRequest (a
    notification per path), and read them. Raises the client's
    :class:`~drivers.errors.DeviceError` when the Get fails."""
    paths = [wanted.path for wanted in subscription_paths(model)]
    notifications = client.get_notifications(paths, data_type="STATE")
    return optics_reading(client.name, model, notifications, paths=paths)


def follow(client: Any, accumulator: OpticsAccumulator, *, stop: threading.Event,
           **options: float) -> None:
    """:func:`follow_async` on an event loop of its own, in the caller's thread, until
    ``stop`` is set (``options``: its keyword arguments)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stopped = asyncio.Event()

        def watch() -> None:
            stop.wait()
            loop.call_soon_threadsafe(stopped.set)

        threading.Thread(target=watch, name=f"follow {accumulator.device}", daemon=True).start()
        runner = asyncio.ensure_future(follow_async(client, accumulator, stop=stopped,
                                                    **options))
        await stopped.wait()
        runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runner

    asyncio.run(main())


async def follow_async(client: Any, accumulator: OpticsAccumulator, *, stop: asyncio.Event,
                       sample_seconds: float = P.SAMPLE_SECONDS, retry_seconds: float = 1.0,
                       max_retry_seconds: float = 30.0, silence_samples: float = 3.0) -> None:
    """Feed ``accumulator`` from a STREAM of its model's paths (:mod:`drivers.transports.
    gnmi_aio`: no thread of its own) until ``stop`` is set or the task is cancelled. The
    accumulator's :attr:`~OpticsAccumulator.synced` is set at the target's sync_response.
    A stream that ends, fails, or brings nothing for ``silence_samples`` sample intervals
    (a target gone quiet, or a connection lost without a word) is subscribed again:
    ``retry_seconds`` later after a stream that brought something, else twice the last
    wait, up to ``max_retry_seconds`` (a target that refuses every subscription is not
    asked again at once, forever). The accumulator's age grows meanwhile."""
    from drivers.transports.gnmi import StreamPath
    from drivers.transports.gnmi_aio import AsyncStream

    wanted = [StreamPath(path.path, path.mode, path.sample_interval_seconds)
              for path in subscription_paths(accumulator.model, sample_seconds=sample_seconds)]
    silence = silence_samples * sample_seconds
    wait = retry_seconds
    while not stop.is_set():
        brought = False
        try:
            async with AsyncStream(client, wanted, on_sync=accumulator.synced.set) as stream:
                notifications = stream.__aiter__()
                while not stop.is_set():
                    try:
                        notification = await asyncio.wait_for(notifications.__anext__(),
                                                              silence)
                    except StopAsyncIteration:
                        break
                    except TimeoutError:
                        log.info("%s: nothing streamed for %.3g s; subscribing again",
                                 accumulator.device, silence)
                        break
                    accumulator.add(notification)
                    brought = True
        except DeviceError as error:
            log.info("%s: the stream ended: %s", accumulator.device, error)
        wait = retry_seconds if brought else min(max_retry_seconds, wait * 2)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)


# ---- OpenConfig ----------------------------------------------------------------------

def _key(path: Path, name: str) -> str | None:
    for elem, keys in path:
        if elem == name:
            return dict(keys).get(P.LIST_KEYS[name])
    return None


def _thresholds(found: Mapping[str, Mapping[str, float]]) -> dict[str, Thresholds]:
    result = {}
    for quantity, levels in found.items():
        if levels:
            result[quantity] = Thresholds(**{level: levels.get(level) for level in LEVELS})
    return result


def _openconfig(values: Mapping[Path, Any], dropped: Counter[str]
                ) -> tuple[tuple[PortOptics, ...], tuple[PortFec, ...], tuple[()]]:
    components: dict[str, dict[str, Any]] = {}
    interfaces: dict[str, dict[str, Any]] = {}
    for path, value in values.items():
        steps = names(path)
        if steps[0] == "components":
            name = _key(path, "component")
            if name is not None:
                _component_leaf(components.setdefault(name, {}), path, steps, value)
        elif steps[0] == "interfaces":
            name = _key(path, "interface")
            if name is not None:
                interfaces.setdefault(name, {})["/".join(steps[2:])] = value
    owner = {fields["state/transceiver"]: name for name, fields in interfaces.items()
             if isinstance(fields.get("state/transceiver"), str)}
    optics: dict[str, dict[str, Any]] = {}
    for name, found in components.items():
        if name in owner:
            optics[owner[name]] = found
        elif found.get("monitors"):
            dropped["unassociated"] += 1
    fec_ports = {name: fields for name, fields in interfaces.items()
                 if any(k.startswith("ethernet/state/") and "port-speed" not in k
                        for k in fields)}
    order = sorted(set(optics) | set(fec_ports), key=_natural)
    position = {name: index for index, name in enumerate(order, start=1)}
    ports = tuple(_port_optics(position[name], name, optics[name])
                  for name in order if name in optics)
    fec = tuple(_openconfig_fec(position[name], name, fields)
                for name, fields in fec_ports.items())
    return ports, tuple(sorted(fec, key=lambda item: item.port)), ()


def _component_leaf(found: dict[str, Any], path: Path, steps: tuple[str, ...],
                    value: Any) -> None:
    text = "/".join(steps)
    monitors = found.setdefault("monitors", {})
    if text.endswith("state/temperature/instant"):
        monitors["temperature_celsius"] = value
    elif text.endswith("supply-voltage/instant") and "thresholds" not in steps:
        monitors["supply_voltage_volts"] = value
    elif "physical-channels" in steps and steps[-1] == "instant":
        lane = _key(path, "channel")
        quantity = P.CHANNEL_QUANTITIES.get(steps[-2])
        if lane is not None and lane.isdigit() and quantity is not None:
            monitors.setdefault("lanes", {}).setdefault(int(lane), {})[quantity] = value
    elif "thresholds" in steps and steps[-2] == "state":
        severity = (_key(path, "threshold") or "").rpartition(":")[2]
        level = P.SEVERITY_LEVELS.get(severity)
        stem, _, side = steps[-1].rpartition("-")
        quantity = P.THRESHOLD_STEMS.get(stem)
        if level is not None and quantity is not None and side in ("upper", "lower"):
            rank = 0 if severity in ("CRITICAL", "WARNING") else 1
            slot = f"{'high' if side == 'upper' else 'low'}_{level}"
            held = found.setdefault("thresholds", {}).setdefault(quantity, {})
            if rank < held.get(f"{slot}#rank", 2):
                held[slot], held[f"{slot}#rank"] = value, rank


def _port_optics(position: int, name: str, found: Mapping[str, Any]) -> PortOptics:
    monitors = found.get("monitors", {})
    lanes = tuple(LaneOptics(lane, **{quantity: value for quantity, value in fields.items()})
                  for lane, fields in sorted(monitors.get("lanes", {}).items()))
    thresholds = {quantity: {level: value for level, value in held.items()
                             if "#" not in level}
                  for quantity, held in found.get("thresholds", {}).items()}
    return PortOptics(position, name, temperature_celsius=monitors.get("temperature_celsius"),
                      supply_voltage_volts=monitors.get("supply_voltage_volts"), lanes=lanes,
                      thresholds=_thresholds(thresholds))


def _openconfig_fec(position: int, name: str, fields: Mapping[str, Any]) -> PortFec:
    speed = fields.get("ethernet/state/port-speed")
    return PortFec(
        position, name,
        speed_mbps=P.SPEEDS_MBPS.get(speed.rpartition(":")[2]) if isinstance(speed, str)
        else None,
        corrected_total=fields.get("ethernet/state/counters/fec-corrected-blocks"),
        uncorrectable_total=fields.get("ethernet/state/counters/fec-uncorrectable-blocks"),
        pre_fec_ber=fields.get("ethernet/state/pre-fec-ber/instant"),
        post_fec_ber=fields.get("ethernet/state/post-fec-ber/instant"))


# ---- SONiC ---------------------------------------------------------------------------

def _sonic(values: Mapping[Path, Any], dropped: Counter[str]
           ) -> tuple[tuple[PortOptics, ...], tuple[PortFec, ...], tuple[ExternalLaser, ...]]:
    tables: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for path, value in values.items():
        steps = names(path)
        if len(steps) == 5:
            db, _, table, key, field = steps
            tables.setdefault((db, table), {}).setdefault(key, {})[field] = value
        elif len(steps) == 4:  # a name map: key -> value
            db, _, table, key = steps
            tables.setdefault((db, table), {}).setdefault(key, {})[""] = value
    sensors = tables.get(("STATE_DB", "TRANSCEIVER_DOM_SENSOR"), {})
    limits = tables.get(("STATE_DB", "TRANSCEIVER_DOM_THRESHOLD"), {})
    oids = {name: row[""] for name, row in
            tables.get(("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP"), {}).items()}
    counters = tables.get(("COUNTERS_DB", "COUNTERS"), {})
    rates = tables.get(("COUNTERS_DB", "RATES"), {})
    fec_ports = [name for name, oid in oids.items() if oid in counters or oid in rates]
    order = sorted(set(sensors) | set(fec_ports), key=_natural)
    position = {name: index for index, name in enumerate(order, start=1)}
    ports = tuple(_sonic_port(position[name], name, sensors[name], limits.get(name, {}))
                  for name in order if name in sensors)
    speeds = tables.get(("CONFIG_DB", "PORT"), {})
    fec = tuple(_sonic_fec(position[name], name, counters.get(oids[name], {}),
                           rates.get(oids[name], {}), speeds.get(name, {}).get("speed"))
                for name in order if name in fec_ports)
    return ports, fec, _lasers(order, tables)


def _sonic_port(position: int, name: str, sensor: Mapping[str, Any],
                limits: Mapping[str, Any]) -> PortOptics:
    lanes = []
    for lane in range(1, P.DOM_LANES + 1):
        fields = {"tx_power_dbm": sensor.get(f"tx{lane}power"),
                  "rx_power_dbm": sensor.get(f"rx{lane}power"),
                  "tx_bias_ma": sensor.get(f"tx{lane}bias")}
        if any(value is not None for value in fields.values()):
            lanes.append(LaneOptics(lane, **fields))
    thresholds = {quantity: {level: limits[f"{stem}{suffix}"]
                             for suffix, level in P.DOM_THRESHOLD_LEVELS.items()
                             if f"{stem}{suffix}" in limits}
                  for stem, quantity in P.DOM_THRESHOLD_STEMS.items()}
    return PortOptics(position, name, temperature_celsius=sensor.get("temperature"),
                      supply_voltage_volts=sensor.get("voltage"), lanes=tuple(lanes),
                      thresholds=_thresholds(thresholds))


def _sonic_fec(position: int, name: str, counters: Mapping[str, Any],
               rates: Mapping[str, Any], speed: Any) -> PortFec:
    bins = tuple(counters.get(f"{P.FEC_CODEWORDS}{index}") for index in range(P.FEC_BINS))
    return PortFec(
        position, name, speed_mbps=speed if isinstance(speed, int) else None,
        corrected_total=counters.get(P.FEC_CORRECTABLE),
        uncorrectable_total=counters.get(P.FEC_UNCORRECTABLE),
        codewords_total=bins if any(value is not None for value in bins) else None,
        **{field: rates.get(key) for key, field in P.RATE_FIELDS.items()})


def _lasers(order: list[str], tables: Mapping[tuple[str, str], Mapping[str, Any]]
            ) -> tuple[ExternalLaser, ...]:
    info = tables.get(("STATE_DB", "TRANSCEIVER_ELS_INFO"), {})
    sensors = tables.get(("STATE_DB", "TRANSCEIVER_ELS_DOM_SENSOR"), {})
    status = tables.get(("STATE_DB", "TRANSCEIVER_ELS_STATUS"), {})
    modules: dict[str, str] = {}  # serial -> the first port it feeds
    for name in order:
        serial = info.get(name, {}).get("serial")
        if isinstance(serial, str) and name in sensors:
            modules.setdefault(serial, name)
    lasers = []
    for module, port in enumerate(modules.values(), start=1):
        sensor, state = sensors[port], status.get(port, {})
        numbers = sorted({int(match.group(2)) for field in sensor
                          if (match := re.fullmatch(r"([a-z_]+?)([0-9]+)", field))
                          and match.group(1) in P.ELS_MONITORS})
        for lane in numbers:
            emitting = state.get(f"txoutput_status{lane}")
            lasers.append(ExternalLaser(
                module, lane, temperature_celsius=sensor.get("temperature"),
                state=None if emitting not in ("True", "False")
                else "on" if emitting == "True" else "off",
                **{field: sensor.get(f"{stem}{lane}") for stem, field in P.ELS_MONITORS.items()}))
    return tuple(lasers)
