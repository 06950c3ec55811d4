"""What the protection controller decides from: light levels with hysteresis, the state
of each span direction, where a link runs now, and the map that moves it.

Pure functions and small state holders, no I/O: the controller (controller.py)
and ``msoctl protect status`` both use them.

Where light is looked at, per span direction (a span fiber from OCS X to OCS Y):

- the *source*: the ingress monitor, at X, of the port that feeds the fiber (the
  link's transmitter, or an idle probe). A dark source is not a fault of the span:
  switching spans would not bring light back.
- the *far end*: the ingress monitor, at Y, of the port the fiber arrives on. When an
  amplifier sits at the end of the fiber, this monitor sees its output, which with
  no signal in is still amplified spontaneous emission (ASE, about -35 dBm + gain:
  -15 dBm at 20 dB). So behind an amplifier the threshold is raised by the
  amplifier's gain: the threshold is what reaches the end of the fiber, wherever it
  is measured, and ASE stays below it.

A direction is ``lit`` (source lit, far end lit), ``lost`` (source lit, far end dark:
the span lost the light), ``unlit`` (nothing lit feeds it: its health is unknown) or
``unknown`` (a device did not answer recently).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from drivers.errors import ValidationError
from drivers.ocs.types import PortMap
from msoctl.links import Link, Span, SpanFiber

LIT, LOST, UNLIT, UNKNOWN = "lit", "lost", "unlit", "unknown"
ROLES = ("working", "protection")
DIRECTIONS = ("a_to_b", "b_to_a")
DIRECTION_NAMES = {"a_to_b": "a->b", "b_to_a": "b->a"}
NOMINAL_INSERTION_LOSS_DB = 2.0
"""The most an OCS cross-connect loses (factory tables: 1.5-2.0 dB)."""
RECEIVER_TOLERANCE_DB = 3.0
"""How far below (far end - insertion loss) a receiver's egress may read: two monitors
at +-1 dB, and margin (the same rule as ``ocs apply``'s light check)."""


class LevelDetector:
    """Lit or dark, with hysteresis: a lit point goes dark below ``threshold``; a dark
    point is lit again only at ``threshold + hysteresis`` or above, so a level that
    wanders around the threshold does not flap. No reading (``None``: a failed port)
    is dark. The first reading decides against the bare threshold."""

    def __init__(self, hysteresis_db: float):
        self.hysteresis_db = hysteresis_db
        self.lit: bool | None = None

    def update(self, power_dbm: float | None, threshold_dbm: float) -> bool:
        if power_dbm is None:
            self.lit = False
        else:
            rise = self.hysteresis_db if self.lit is False else 0.0
            self.lit = power_dbm >= threshold_dbm + rise
        return self.lit


@dataclass(frozen=True)
class AmpReading:
    """What the controller last read from an amplifier."""

    taken: float  # monotonic seconds
    module_state: str | None
    input_dbm: float | None
    output_dbm: float | None
    gain_db: float | None
    target_gain_db: float | None
    als_state: str | None
    conditions: tuple[str, ...]

    @property
    def output_off(self) -> bool:
        return (self.module_state != "ModuleReady" or "pump_failure" in self.conditions
                or self.als_state in ("shutdown", "output-disabled"))

    def describe(self) -> str:
        parts = [self.module_state or "state unknown", f"ALS {self.als_state}"]
        parts += [c for c in self.conditions if c != "als_shutdown"]
        return ", ".join(parts)


class DirectionLight(NamedTuple):
    """One direction of a span, as seen now (a named tuple: the controller makes four
    for every link at each changed reading of its ports, and a frozen dataclass costs
    six times as much to make)."""

    span: str
    direction: str  # "a_to_b" or "b_to_a"
    fiber: SpanFiber
    state: str  # LIT, LOST, UNLIT, UNKNOWN
    feeder: int | None  # the ingress port at the start OCS that feeds the fiber
    source_dbm: float | None
    far_end_dbm: float | None
    far_end_threshold_dbm: float
    amplifier: str | None
    amp: AmpReading | None
    silent: str | None = None  # UNKNOWN: the OCS that is not answering

    @property
    def reason(self) -> str:
        """Why it is in its state, in words. Put into words only when asked: the
        controller judges every direction of a link at each changed reading, and reads
        the words of the few that change state."""
        start, end = self.fiber.start, self.fiber.end
        if self.state == UNKNOWN:
            return f"{self.silent} is not answering"
        if self.state == UNLIT:
            if self.feeder is None:
                return f"nothing feeds {start}"
            return f"its source {start.ocs}:{self.feeder} is dark ({_dbm(self.source_dbm)})"
        if self.state == LIT:
            return f"{end} {_dbm(self.far_end_dbm)}"
        behind = f" behind {self.amplifier}" if self.amplifier else ""
        reason = f"{end} {_dbm(self.far_end_dbm)} < {_dbm(self.far_end_threshold_dbm)}{behind}"
        if self.amp is not None:
            reason += f" ({self.amplifier}: {self.amp.describe()})"
        return reason

    def as_dict(self) -> dict[str, Any]:
        amp = self.amp
        return {
            "span": self.span, "direction": self.direction, "state": self.state,
            "from": str(self.fiber.start), "to": str(self.fiber.end),
            "feeder_port": self.feeder, "source_power_dbm": self.source_dbm,
            "far_end_power_dbm": self.far_end_dbm,
            "far_end_threshold_dbm": self.far_end_threshold_dbm,
            "amplifier": self.amplifier,
            "amplifier_input_power_dbm": None if amp is None else amp.input_dbm,
            "amplifier_als_state": None if amp is None else amp.als_state,
            "amplifier_module_state": None if amp is None else amp.module_state,
            "amplifier_conditions": None if amp is None else list(amp.conditions),
            "reason": self.reason,
        }


def span_state(directions: Iterable[DirectionLight]) -> str:
    """A span is lost if either direction is, lit only if both are."""
    states = [d.state for d in directions]
    if LOST in states:
        return LOST
    if UNKNOWN in states:
        return UNKNOWN
    if all(s == LIT for s in states):
        return LIT
    return UNLIT


@dataclass
class LightJudge:
    """Judges span directions from monitor readings, keeping each point's hysteresis.

    ``powers`` maps an OCS name to its latest monitor readings (``None`` when the
    OCS did not answer recently); ``maps`` likewise its port map; ``amps`` an
    amplifier's latest reading (``None`` when unknown).
    """

    threshold_dbm: float
    hysteresis_db: float
    _detectors: dict[tuple[str, str, int], LevelDetector] = field(default_factory=dict)
    _gains: dict[str, float] = field(default_factory=dict)
    _feeders: dict[str, tuple[Mapping[int, int], dict[int, int]]] = field(default_factory=dict)

    def detector(self, kind: str, ocs: str, port: int) -> LevelDetector:
        key = (kind, ocs, port)
        found = self._detectors.get(key)
        if found is None:
            found = self._detectors[key] = LevelDetector(self.hysteresis_db)
        return found

    def feeder(self, ocs: str, port_map: Mapping[int, int], egress: int) -> int | None:
        """The ingress port that feeds ``egress`` in ``port_map`` (the map of ``ocs``): a
        lookup in the map's reverse, made once per map read."""
        cached = self._feeders.get(ocs)
        if cached is None or cached[0] is not port_map:
            cached = self._feeders[ocs] = (port_map, {e: i for i, e in port_map.items()})
        return cached[1].get(egress)

    def amp_gain_db(self, name: str, reading: AmpReading | None) -> float | None:
        """The gain that the far-end threshold is raised by: the amplifier's gain as last
        seen carrying a signal, else its target gain."""
        if reading is not None and reading.gain_db is not None and not reading.output_off \
                and reading.input_dbm is not None and reading.input_dbm >= self.threshold_dbm:
            self._gains[name] = reading.gain_db
        if name in self._gains:
            return self._gains[name]
        return None if reading is None else reading.target_gain_db

    def direction(self, span: Span, direction: str, *,
                  powers: Mapping[str, Mapping[int, float | None] | None],
                  maps: Mapping[str, Mapping[int, int] | None],
                  amps: Mapping[str, AmpReading | None]) -> DirectionLight:
        """One direction of ``span``, judged from the readings of its two ends' OCSes
        and the map of its start OCS, no more (:func:`touched_links` relies on it), and
        from its amplifier's reading."""
        fiber: SpanFiber = getattr(span, direction)
        start, end = fiber.start, fiber.end
        amplifier = fiber.amplifier
        amp = amps.get(amplifier) if amplifier else None
        threshold = self.threshold_dbm
        if amplifier:
            threshold += self.amp_gain_db(amplifier, amp) or 0.0
        start_powers, end_powers = powers.get(start.ocs), powers.get(end.ocs)
        start_map = maps.get(start.ocs)
        feeder = None if start_map is None else self.feeder(start.ocs, start_map, start.port)
        source = None if start_powers is None or feeder is None else start_powers.get(feeder)
        far = None if end_powers is None else end_powers.get(end.port)
        silent = None
        if start_powers is None or start_map is None:
            state, silent = UNKNOWN, start.ocs
        elif end_powers is None:
            state, silent = UNKNOWN, end.ocs
        else:
            far_lit = self.detector("far", end.ocs, end.port).update(far, threshold)
            if feeder is None or not self.detector("source", start.ocs, feeder).update(
                    source, self.threshold_dbm):
                state = UNLIT
            else:
                state = LIT if far_lit else LOST
        return DirectionLight(span.name, direction, fiber, state, feeder, source, far,
                              threshold, amplifier, amp, silent)

    def span(self, span: Span, **readings: Any) -> list[DirectionLight]:
        return [self.direction(span, d, **readings) for d in DIRECTIONS]


def _dbm(value: float | None) -> str:
    return "no reading" if value is None else f"{round(value, 1) + 0.0:.1f} dBm"


def touched_links(links_at: Mapping[int, Iterable[str]],
                  before: Mapping[int, float | None], after: Mapping[int, float | None],
                  map_before: Mapping[int, int], map_after: Mapping[int, int]) -> set[str]:
    """The links a new reading of one OCS can judge otherwise: those through a port whose
    reading changed from ``before`` to ``after``, those through the egress port that a
    changed ingress port feeds (a span's source light is read on the port feeding it,
    a probe's as well as a link's transmitter), and those through either port of a
    cross-connect that ``map_after`` has and ``map_before`` has not, or the other way
    round (where a link is connected, and what feeds its spans). ``links_at[port]``:
    the links through ``port`` of that OCS.

    A direction is judged from its end OCSes' readings and its start OCS's map only
    (:meth:`LightJudge.direction`), a link's span from its maps (:func:`link_role`),
    and a level detector fed the same power again keeps its state: a link of none of
    these ports is judged as it was."""
    ports = {port for port, _ in after.items() ^ before.items()}
    fed = {map_after.get(port) for port in ports}
    if map_after is not map_before:
        for ingress, egress in map_after.items() ^ map_before.items():
            ports.update((ingress, egress))
    found: set[str] = set()
    for port in ports | fed:
        if port is not None:
            found.update(links_at.get(port, ()))
    return found


# ---- maps -------------------------------------------------------------------------------


def link_role(link: Link, maps: Mapping[str, Mapping[int, int] | None]) -> str | None:
    """``working`` or ``protection`` when every cross-connect of that span is in place at
    both ends; ``None`` otherwise (not connected, half-moved, or a map unknown)."""
    for role in ROLES:
        if role == "protection" and link.protection is None:
            continue
        if all(_has(maps.get(ocs), pairs) for ocs, pairs in link.connections(role).items()):
            return role
    return None


def _has(port_map: Mapping[int, int] | None, pairs: Iterable[tuple[int, int]]) -> bool:
    return port_map is not None and all(port_map.get(i) == e for i, e in pairs)


def link_ports(link: Link) -> dict[str, set[int]]:
    """Every port of ``link``'s two OCSes that the controller watches or moves."""
    ports: dict[str, set[int]] = {link.a.tx.ocs: set(), link.b.tx.ocs: set()}
    for end in (link.a, link.b):
        ports[end.tx.ocs].update((end.tx.port, end.rx.port))
    for span in (link.working, link.protection):
        if span is None:
            continue
        for fiber in (span.a_to_b, span.b_to_a):
            ports[fiber.start.ocs].add(fiber.start.port)
            ports[fiber.end.ocs].add(fiber.end.port)
    return ports


class MoveConflict(ValidationError):
    """The map cannot move the link without breaking another connection."""


@dataclass(frozen=True)
class Move:
    """Link ``link`` from the span of ``from_role`` to the span of ``to_role``."""

    link: Link
    from_role: str
    to_role: str

    @property
    def from_span(self) -> Span:
        return self.link.span(self.from_role)

    @property
    def to_span(self) -> Span:
        return self.link.span(self.to_role)


def plan_moves(moves: Iterable[Move], ocs: str, current: Mapping[int, int], size: int, *,
               tx_owner: Mapping[int, str] | None = None,
               rx_owner: Mapping[int, str] | None = None) -> PortMap:
    """The whole map of ``ocs`` once ``moves`` are made, one after the other: each link's
    cross-connects re-pointed from one span to the other, and whatever idle light fed
    its new span (a probe) moved onto the span it leaves, so that span stays lit and
    can be watched. One copy of the map for all of them, with its reverse kept beside
    it (a cable cut moves dozens of links on one OCS).

    ``tx_owner[port]`` / ``rx_owner[port]``: the link whose transmitter / receiver is on
    that port of ``ocs``. Raises :class:`MoveConflict` when a new span carries another
    link (its start port is fed by another link's transmitter, or its end port feeds
    another receiver), or when the map would not be one.
    """
    wanted = dict(current)
    feeding = {e: i for i, e in wanted.items()}  # egress -> the ingress feeding it
    moves = list(moves)
    for move in moves:
        _plan_one(move, ocs, wanted, feeding, tx_owner or {}, rx_owner or {})
    try:
        return PortMap(wanted, size)
    except ValidationError as error:
        names = ", ".join(m.link.name for m in moves)
        raise MoveConflict(f"cannot move {names} at {ocs}: {error.message}",
                           device=ocs) from None


def _plan_one(move: Move, ocs: str, wanted: dict[int, int], feeding: dict[int, int],
              tx_owner: Mapping[int, str], rx_owner: Mapping[int, str]) -> None:
    """:func:`plan_moves` for one move, on ``wanted`` and its reverse ``feeding``."""
    link, source, target = move.link, move.from_span, move.to_span

    def drop(ingress: int) -> None:
        egress = wanted.pop(ingress)
        if feeding.get(egress) == ingress:
            del feeding[egress]

    for ingress, egress in link.connections(move.from_role).get(ocs, []):
        if wanted.get(ingress) == egress:
            drop(ingress)
    target_start = _fiber_leaving(target, ocs).start.port
    source_start = _fiber_leaving(source, ocs).start.port
    target_end = _fiber_arriving(target, ocs).end.port
    idle = feeding.get(target_start)
    if idle is not None:
        if tx_owner.get(idle, link.name) != link.name:
            raise MoveConflict(f"{target.name} carries another link ({ocs}:{idle} feeds "
                               f"{ocs}:{target_start})", device=ocs)
        drop(idle)
    arriving = wanted.get(target_end)
    if arriving is not None:
        if rx_owner.get(arriving, link.name) != link.name:
            raise MoveConflict(f"{target.name} carries another link ({ocs}:{target_end} feeds "
                               f"{ocs}:{arriving})", device=ocs)
        drop(target_end)
    for ingress, egress in link.connections(move.to_role).get(ocs, []):
        if ingress in wanted:
            drop(ingress)
        wanted[ingress] = egress
        feeding[egress] = ingress  # a second ingress on one egress: PortMap refuses it
    if idle is not None and source_start not in feeding and idle not in wanted:
        wanted[idle] = source_start
        feeding[source_start] = idle


def _fiber_leaving(span: Span, ocs: str) -> SpanFiber:
    return span.a_to_b if span.a_to_b.start.ocs == ocs else span.b_to_a


def _fiber_arriving(span: Span, ocs: str) -> SpanFiber:
    return span.a_to_b if span.a_to_b.end.ocs == ocs else span.b_to_a


def map_changes(before: Mapping[int, int], after: Mapping[int, int]) -> list[str]:
    """``-1:121 +1:122``-style list of what differs."""
    removed = [f"-{i}:{e}" for i, e in sorted(before.items()) if after.get(i) != e]
    added = [f"+{i}:{e}" for i, e in sorted(after.items()) if before.get(i) != e]
    return removed + added
