"""Loss-of-light alarms of an OCS: arming them over SCPI, and the stream the unit pushes.

The dialect is the project's own extension (docs/dialects/ocs.md, "Loss-of-light
alarms"; the commands are :data:`~drivers.ocs.commands.ALARM_COMMANDS`). A unit that
does not have it answers "Undefined header": :meth:`OcsDriver.alarm_support
<drivers.ocs.driver.OcsDriver.alarm_support>` is then false, and whoever watches the
unit polls its monitors instead.

Arming (:func:`arm_los`) sets the unit's hysteresis, each port's threshold and the
enable switch in one program message, then reads all three back; :func:`los_states`
reads the state of armed ports now.

:class:`OcsAlarmStream` reads the alarm connection in a thread of its own:

- on every (re)connection the unit first sends a snapshot of every armed port
  (``on_snapshot(device, {port: lost})``), so a client that was away reconciles
  instead of trusting events it may have missed;
- then ``on_events([LosEvent, ...])`` for the changes, in the unit's order, each
  numbered one more than the last: every event already received when the first was
  read comes in the same call (a cable cut's fibers, one burst), so a consumer takes
  a burst in once instead of once per port;
- a heartbeat every half second carries the last number, so silence, a gap in the
  numbers or a closed connection each mean the stream is lost: ``on_lost(device,
  reason)`` once per loss (the caller falls back to polling), then reconnection
  with exponential backoff, until :meth:`~OcsAlarmStream.close`;
- the unit announces its map after the snapshot and whenever it changes, by its
  CRC-32 (:func:`map_digest` computes the same of a map read): ``on_map(device,
  MapLine)``, and :attr:`~OcsAlarmStream.map_line` is the last one;
- :attr:`~OcsAlarmStream.heard` is when the last line came, and
  :attr:`~OcsAlarmStream.lag` how much later than the promptest of this connection it
  came, by the unit's own clock in the lines: a stream that delivers every line late
  (a congested path, a unit falling behind) is told apart from a prompt one, which
  silence alone does not do; one late from its very first line is not.

Callbacks run in the stream's thread, one at a time; one that raises is logged and
the stream goes on.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    ProtocolError,
    ValidationError,
    VerificationFailed,
)
from drivers.ocs.commands import (
    ALARM_COMMANDS,
    LOS_HYSTERESIS_RANGE_DB,
    LOS_THRESHOLD_RANGE_DBM,
    NOT_A_NUMBER,
    POWER_QUERY_MAX_PORTS,
)
from drivers.ocs.types import LosEvent
from drivers.scpi.session import channel_list, render
from drivers.transports.tcp import TcpTransport

if TYPE_CHECKING:
    from drivers.ocs.driver import OcsDriver

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 2.0
"""Silence after which the stream counts as lost: four of the unit's heartbeats."""
BACKOFF_SECONDS = (0.05, 2.0)
"""The first wait before reconnecting, and the longest; it doubles between the two."""
SETTING_TOLERANCE = 0.005
"""Read-back slack: the unit answers with two decimals."""
CLOCK_DRIFT = 1e-3
"""How fast the unit's clock may fall behind this host's (s/s), far above a crystal's:
the promptest line's offset is let rise this fast, so that a drift is not taken for a
growing lag (and a lasting delay of D seconds is taken for none after D / CLOCK_DRIFT
seconds)."""

EventCallback = Callable[[list[LosEvent]], None]
SnapshotCallback = Callable[[str, dict[int, bool]], None]
LostCallback = Callable[[str, str], None]
MapCallback = Callable[[str, "MapLine"], None]


# ---- commands ------------------------------------------------------------------------------


def alarm_port(driver: OcsDriver) -> int | None:
    """The TCP port of the unit's alarm connection, 0 when it does not serve them now;
    ``None`` when the unit has no alarms (the header is undefined)."""
    reply = driver.session.query_if_supported(ALARM_COMMANDS["alarm_port"].short())
    if reply is None:
        return None
    try:
        port = int(reply.strip())
    except ValueError:
        raise ProtocolError(f"bad alarm port reply {reply!r}", device=driver.name) from None
    if not 0 <= port <= 65535:
        raise ProtocolError(f"alarm port {port} out of range", device=driver.name)
    return port


def _chunks(ports: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ports), POWER_QUERY_MAX_PORTS):
        yield ports[start:start + POWER_QUERY_MAX_PORTS]


def _items(reply: str, what: str, device: str) -> list[str]:
    body = reply.strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise ProtocolError(f"bad {what} reply {reply!r}", device=device)
    inner = body[1:-1].strip()
    return [item.strip() for item in inner.split(",")] if inner else []


def _query_list(driver: OcsDriver, key: str, ports: list[int], what: str) -> list[str]:
    """A per-port alarm query in chunks; DeviceRejected when the unit refuses it."""
    values: list[str] = []
    for chunk in _chunks(ports):
        command = render(ALARM_COMMANDS[key], channel_list(chunk))
        reply, entries = driver.session.query_checked(command)
        if entries or reply is None:
            text = "; ".join(f"{code} {message}" for code, message in entries) or "no reply"
            raise DeviceRejected(f"{what} refused: {text}", device=driver.name,
                                 errors=tuple(f"{code},{message}" for code, message in entries))
        items = _items(reply, what, driver.name)
        if len(items) != len(chunk):
            raise ProtocolError(f"{len(items)} {what} values for {len(chunk)} ports",
                                device=driver.name)
        values.extend(items)
    return values


def los_thresholds(driver: OcsDriver, ports: Iterable[int]) -> dict[int, float | None]:
    """Each port's loss-of-light threshold in dBm; ``None`` where it is not armed.
    :class:`~drivers.errors.Unsupported` on a unit without alarms."""
    chosen = driver.check_ports(ports)
    _require(driver)
    values = _query_list(driver, "alarm_threshold", chosen, "LOS threshold")
    found: dict[int, float | None] = {}
    for port, text in zip(chosen, values, strict=True):
        try:
            value = float(text)
        except ValueError:
            raise ProtocolError(f"bad LOS threshold {text!r}", device=driver.name) from None
        found[port] = None if abs(value) >= NOT_A_NUMBER * 0.99 else value
    return found


def los_states(driver: OcsDriver, ports: Iterable[int]) -> dict[int, bool]:
    """Loss of light now on each of ``ports`` (True: lost). Raises
    :class:`DeviceRejected` for a port that is not armed, and on a unit without
    alarms."""
    chosen = driver.check_ports(ports)
    if not chosen:
        return {}
    _require(driver)
    values = _query_list(driver, "alarm_state", chosen, "LOS state")
    if any(v not in ("0", "1") for v in values):
        raise ProtocolError(f"bad LOS states {values!r}", device=driver.name)
    return {port: value == "1" for port, value in zip(chosen, values, strict=True)}


@dataclass(frozen=True)
class AlarmSettings:
    """The unit-wide settings of its loss-of-light alarms."""

    enabled: bool
    hysteresis_db: float
    port: int | None
    """The TCP port of the alarm connection; ``None`` when the unit does not serve it now."""


def alarm_settings(driver: OcsDriver) -> AlarmSettings:
    """Enable switch, hysteresis and alarm port, in one program message (one round trip).
    :class:`~drivers.errors.Unsupported` on a unit without alarms."""
    _require(driver)
    keys = ("alarm_enable", "alarm_hysteresis", "alarm_port")
    reply = driver.session.query(";".join(ALARM_COMMANDS[key].short() for key in keys))
    parts = [part.strip() for part in reply.split(";")]
    if len(parts) != len(keys) or parts[0] not in ("0", "1"):
        raise ProtocolError(f"bad alarm settings reply {reply!r}", device=driver.name)
    try:
        hysteresis, port = float(parts[1]), int(parts[2])
    except ValueError:
        raise ProtocolError(f"bad alarm settings reply {reply!r}", device=driver.name) from None
    return AlarmSettings(parts[0] == "1", hysteresis, port or None)


def _require(driver: OcsDriver) -> None:
    driver.require("alarms")


def _in_range(value: float, limits: tuple[float, float], what: str, unit: str,
              device: str) -> None:
    low, high = limits
    if not (math.isfinite(value) and low <= value <= high):
        raise ValidationError(f"{what} {value:g} {unit} is out of range {low:g}..{high:g}",
                              device=device)


def arm_los(driver: OcsDriver, ports: Iterable[int], threshold_dbm: float,
            hysteresis_db: float) -> dict[int, bool]:
    """Arm loss of light on ``ports`` at ``threshold_dbm`` (-60..10 dBm), clearing
    ``hysteresis_db`` (0..10 dB, one value for the whole unit) above it, and enable the
    alarms; verified by reading back every setting. Returns each port's state at once
    (True: lost).

    Raises :class:`ValidationError` for a value out of range (nothing sent),
    :class:`DeviceRejected` when the unit refuses (a unit without alarms too) and
    :class:`VerificationFailed` when the read-back differs.
    """
    chosen = driver.check_ports(ports)
    _in_range(threshold_dbm, LOS_THRESHOLD_RANGE_DBM, "LOS threshold", "dBm", driver.name)
    _in_range(hysteresis_db, LOS_HYSTERESIS_RANGE_DB, "LOS hysteresis", "dB", driver.name)
    if not chosen:
        return {}
    _require(driver)
    messages = [render(ALARM_COMMANDS["alarm_hysteresis_set"], f"{hysteresis_db:.2f}")]
    messages += [render(ALARM_COMMANDS["alarm_threshold_set"], channel_list(chunk),
                        f"{threshold_dbm:.2f}") for chunk in _chunks(chosen)]
    messages.append(render(ALARM_COMMANDS["alarm_enable_set"], "ON"))
    driver.session.change(";".join(messages), "arm loss-of-light alarms")

    hysteresis = driver.session.query(ALARM_COMMANDS["alarm_hysteresis"].short())
    enabled = driver.session.query(ALARM_COMMANDS["alarm_enable"].short()).strip()
    thresholds = los_thresholds(driver, chosen)
    wrong = [port for port, value in thresholds.items()
             if value is None or abs(value - threshold_dbm) > SETTING_TOLERANCE]
    try:
        hysteresis_ok = abs(float(hysteresis) - hysteresis_db) <= SETTING_TOLERANCE
    except ValueError:
        raise ProtocolError(f"bad LOS hysteresis {hysteresis!r}", device=driver.name) from None
    if wrong or not hysteresis_ok or enabled != "1":
        raise VerificationFailed(
            f"LOS alarms read back otherwise: thresholds of {wrong or 'none'} differ, "
            f"hysteresis {hysteresis.strip()} dB, enabled {enabled}", device=driver.name)
    return los_states(driver, chosen)


def disarm_los(driver: OcsDriver, ports: Iterable[int]) -> None:
    """No loss-of-light alarm on ``ports`` any more; verified by reading back."""
    chosen = driver.check_ports(ports)
    if not chosen:
        return
    _require(driver)
    driver.session.change(";".join(render(ALARM_COMMANDS["alarm_disarm"], channel_list(chunk))
                                   for chunk in _chunks(chosen)), "disarm loss-of-light alarms")
    left = [port for port, value in los_thresholds(driver, chosen).items() if value is not None]
    if left:
        raise VerificationFailed(f"ports {left} are still armed", device=driver.name)


# ---- the alarm connection ---------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """``SNAPSHOT <sequence>,<count>``: ``count`` port lines follow."""

    sequence: int
    count: int


@dataclass(frozen=True)
class PortLine:
    """``PORT <port>,LOS|OK,<dBm>,<seconds>``: an armed port's state in a snapshot."""

    port: int
    lost: bool
    power_dbm: float | None
    device_seconds: float


@dataclass(frozen=True)
class Heartbeat:
    """``HEARTBEAT <sequence>,<seconds>``: nothing new since event ``sequence``."""

    sequence: int
    device_seconds: float


@dataclass(frozen=True)
class MapLine:
    """``MAP <crc>,<count>,<seconds>``: the unit's map now (after a snapshot, after each
    change): the CRC-32 of its text (:func:`map_digest`) and its connections."""

    digest: int
    count: int
    device_seconds: float


AlarmLine = Snapshot | PortLine | LosEvent | Heartbeat | MapLine


def map_digest(connections: Mapping[int, int]) -> int:
    """The CRC-32 a ``MAP`` line gives for ``connections`` (ingress -> egress): of the
    text listing every connection as ``ingress:egress``, in ascending ingress, joined
    by commas."""
    pairs = [f"{ingress}:{connections[ingress]}" for ingress in sorted(connections)]
    return zlib.crc32(",".join(pairs).encode("ascii"))


def _number(text: str, line: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ProtocolError(f"bad number {text!r} in alarm line {line!r}") from None
    if not math.isfinite(value):
        raise ProtocolError(f"bad number {text!r} in alarm line {line!r}")
    return value


def _count(text: str, line: str) -> int:
    if not text.isdigit():
        raise ProtocolError(f"bad integer {text!r} in alarm line {line!r}")
    return int(text)


def _dbm(text: str, line: str) -> float | None:
    value = _number(text, line)
    return None if abs(value) >= NOT_A_NUMBER * 0.99 else value


def parse_alarm_line(line: str, device: str = "") -> AlarmLine | None:
    """One line of the alarm connection, without its LF; ``None`` for a line of a kind
    this driver does not know (a later firmware's), which is skipped. Raises
    :class:`ProtocolError` for a known kind it cannot read."""
    kind, _, rest = line.strip().partition(" ")
    fields = [f.strip() for f in rest.split(",")] if rest else []
    shapes = {"SNAPSHOT": 2, "PORT": 4, "EVENT": 5, "HEARTBEAT": 2, "MAP": 3}
    if kind not in shapes:
        return None
    if len(fields) != shapes[kind]:
        raise ProtocolError(f"alarm line {line!r} has {len(fields)} fields, expected "
                            f"{shapes[kind]}", device=device or None)
    if kind == "SNAPSHOT":
        return Snapshot(_count(fields[0], line), _count(fields[1], line))
    if kind == "HEARTBEAT":
        return Heartbeat(_count(fields[0], line), _number(fields[1], line))
    if kind == "MAP":
        digest = fields[0]
        if len(digest) != 8 or any(c not in "0123456789ABCDEFabcdef" for c in digest):
            raise ProtocolError(f"bad map CRC {digest!r} in alarm line {line!r}",
                                device=device or None)
        return MapLine(int(digest, 16), _count(fields[1], line), _number(fields[2], line))
    if kind == "PORT":
        if fields[1] not in ("LOS", "OK"):
            raise ProtocolError(f"bad port state in alarm line {line!r}", device=device or None)
        return PortLine(_count(fields[0], line), fields[1] == "LOS", _dbm(fields[2], line),
                        _number(fields[3], line))
    if fields[2] not in ("SET", "CLEAR"):
        raise ProtocolError(f"bad event state in alarm line {line!r}", device=device or None)
    return LosEvent(device, _count(fields[1], line), fields[2] == "SET", _dbm(fields[3], line),
                    _number(fields[4], line), _count(fields[0], line))


class OcsAlarmStream:
    """The alarm connection of OCS ``name`` at ``host``:``port``, read in a background
    thread (see the module docstring). ``timeout_seconds``: connecting, and the longest
    silence before the stream counts as lost."""

    def __init__(self, name: str, host: str, port: int, *, on_events: EventCallback,
                 on_snapshot: SnapshotCallback, on_lost: LostCallback,
                 on_map: MapCallback | None = None,
                 timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
                 backoff_seconds: tuple[float, float] = BACKOFF_SECONDS):
        if timeout_seconds <= 0:
            raise ValidationError("the alarm stream's timeout must be more than 0 s",
                                  device=name)
        self.name = name
        self.host = host
        self.port = port
        self.timeout_seconds = timeout_seconds
        self.backoff_seconds = backoff_seconds
        self._on_events = on_events
        self._on_snapshot = on_snapshot
        self._on_lost = on_lost
        self._on_map = on_map
        self._stop = threading.Event()
        self._live = threading.Event()
        self._transport: TcpTransport | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.sequence = 0
        """The number of the last event received (from the last snapshot on)."""
        self.connections = 0
        """How many times a snapshot was received: the first connection and every
        reconnection."""
        self.map_line: MapLine | None = None
        """The last map the unit announced on this connection (``None``: none since the
        last snapshot; a unit without the announcement sends none)."""
        self.heard = 0.0
        """When the last line arrived (monotonic)."""
        self.lag = 0.0
        """How much later than the promptest line of this connection the last timed line
        (event, heartbeat, map) arrived, seconds: arrival time minus the unit's time in
        the line, against the least such difference (see :data:`CLOCK_DRIFT`)."""
        self._promptest: tuple[float, float] | None = None  # (offset, when it was set)

    @property
    def live(self) -> bool:
        """Connected, and the snapshot received: events are arriving as they happen."""
        return self._live.is_set()

    def wait_live(self, timeout_seconds: float) -> bool:
        """Wait up to ``timeout_seconds`` for the stream to be live; whether it is."""
        return self._live.wait(timeout_seconds)

    def start(self) -> OcsAlarmStream:
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: the alarm stream is already started")
        self._thread = threading.Thread(target=self._run, name=f"alarms-{self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop reading and close the connection; no callback runs after this returns
        (unless it is called from a callback)."""
        self._stop.set()
        with self._lock:
            transport = self._transport
        if transport is not None:
            transport.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.timeout_seconds + 5.0)

    def __enter__(self) -> OcsAlarmStream:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the reader ------------------------------------------------------------------------

    def _run(self) -> None:
        delay = self.backoff_seconds[0]
        reported = False  # whether the present outage has been reported
        while not self._stop.is_set():
            transport = TcpTransport(self.host, self.port, timeout_seconds=self.timeout_seconds)
            with self._lock:
                self._transport = transport
            reason = "closed"
            try:
                transport.open()
                self._read(transport)
            except DeviceError as error:
                reason = error.message
            finally:
                with self._lock:
                    self._transport = None
                transport.close()
            was_live = self._live.is_set()
            self._live.clear()
            self.map_line = None
            if self._stop.is_set():
                break
            if was_live:
                delay, reported = self.backoff_seconds[0], False
            if not reported:
                reported = True
                self._call(self._on_lost, self.name, reason)
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, self.backoff_seconds[1])

    def _line(self, transport: TcpTransport) -> AlarmLine | None:
        raw = transport.read_until(b"\n")
        heard = self.heard = time.monotonic()
        try:
            line = parse_alarm_line(raw.decode("ascii"), self.name)
        except UnicodeDecodeError:
            raise ProtocolError(f"alarm line not ASCII: {raw[:80]!r}") from None
        # A snapshot's port lines carry the time each port was last judged, not now.
        if isinstance(line, LosEvent | Heartbeat | MapLine):
            offset = heard - line.device_seconds
            promptest = self._promptest
            if promptest is not None:
                base = promptest[0] + (heard - promptest[1]) * CLOCK_DRIFT
                if base < offset:
                    self.lag = offset - base
                    return line
            self._promptest, self.lag = (offset, heard), 0.0
        return line

    def _read(self, transport: TcpTransport) -> None:
        first = self._line(transport)
        if not isinstance(first, Snapshot):
            raise ProtocolError(f"the alarm connection began with {first!r}, not a snapshot")
        states: dict[int, bool] = {}
        while len(states) < first.count:
            line = self._line(transport)
            if not isinstance(line, PortLine):
                raise ProtocolError(f"{line!r} inside a snapshot of {first.count} ports")
            states[line.port] = line.lost
        self.sequence = first.sequence
        self.connections += 1
        self.map_line = None
        self._promptest, self.lag = None, 0.0  # another connection: its own delays
        self._live.set()
        self._call(self._on_snapshot, self.name, states)
        while not self._stop.is_set():
            events: list[LosEvent] = []
            try:
                self._burst(transport, events)
            finally:  # those before a broken line were received in order
                if events:
                    self._call(self._on_events, events)

    def _burst(self, transport: TcpTransport, events: list[LosEvent]) -> None:
        """Read a line, and every whole line that came with it, the events into
        ``events``."""
        line = self._line(transport)
        while True:
            if isinstance(line, LosEvent):
                if line.sequence != self.sequence + 1:
                    raise ProtocolError(f"event {line.sequence} after event {self.sequence}: "
                                        "events were lost")
                self.sequence = line.sequence
                events.append(line)
            elif isinstance(line, Heartbeat) and line.sequence != self.sequence:
                raise ProtocolError(f"the unit is at event {line.sequence}, the last received "
                                    f"is {self.sequence}: events were lost")
            elif isinstance(line, MapLine):
                self.map_line = line
                if self._on_map is not None:
                    self._call(self._on_map, self.name, line)
            elif isinstance(line, Snapshot | PortLine):
                raise ProtocolError(f"{line!r} outside a snapshot")
            if not transport.has_line(b"\n"):
                return
            line = self._line(transport)

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        try:
            callback(*args)
        except Exception:  # the caller's bug must not end the stream
            log.exception("%s: alarm stream callback %s failed", self.name,
                          getattr(callback, "__name__", callback))
