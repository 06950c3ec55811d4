"""The OCS driver: the device's meaning on top of an SCPI session.

Every change is followed by a completion fence (``*OPC?``), an error-queue
check, and a read-back: a change that returns has been verified on the device. A
change to the map sends all four as program messages of one write (one round trip;
the read-back last, after the error query, so that a refused change still ends the
exchange in step); other changes read back in a second exchange.

Replies are read in both forms that units of the family send (see
:mod:`drivers.ocs.commands`): ``:OXC:SWIT:CONN:PORT?`` quoted (``"65"``) or bare
(``65``), ``:PMON:POW?`` parenthesised (``(-3.21,-4.02)``) or bare. Power queries
name at most 256 ports each; a unit without power monitors (the query is an
undefined header, or answers an error) gives ``None`` for every power.

What the unit has: its optional features (:data:`~drivers.ocs.commands.OPTIONAL_FEATURES`:
power monitors, boot mode, the LC engine figures, loss-of-light alarms) are asked once
per session, in the one write that opening the driver sends
(:meth:`~drivers.scpi.session.ScpiSession.probe`): no query of a feature the unit lacks
is ever sent, so none waits out a timeout. A reading of a missing feature is ``None``;
a change or a query that needs one raises :class:`~drivers.errors.Unsupported`, naming
it, before anything is sent.

Error queues: on a unit that keeps one queue per client, every error the
driver reads is its own. On a unit with one queue for every client (open it
with ``shared_error_queue=True``) an error another client caused while our
change ran can be read as ours; the driver then reads back, and takes the
error for another client's when the device holds exactly what was asked (it
logs a warning) -- a refusal of ours always leaves the device short of it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType

from drivers.errors import (
    DeviceRejected,
    ProtocolError,
    Unsupported,
    ValidationError,
    VerificationFailed,
)
from drivers.features import Features
from drivers.ocs import alarms
from drivers.ocs.commands import (
    BOOT_MODES,
    COMMANDS,
    NOT_A_NUMBER,
    OPTIONAL_FEATURES,
    PORT_STATES,
    POWER_QUERY_MAX_PORTS,
)
from drivers.ocs.types import (
    BootMode,
    Connection,
    Identity,
    LcStatus,
    PortMap,
    PortState,
)
from drivers.scpi.session import (
    UNDEFINED_HEADER,
    Pending,
    ScpiSession,
    channel_list,
    parse_channel_list,
    render,
)

log = logging.getLogger(__name__)


def _float(text: str, what: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        raise ProtocolError(f"{what}: expected a number, got {text!r}") from None
    if math.isnan(value) or abs(value) >= NOT_A_NUMBER * 0.99:
        return None
    return value


def unquoted(text: str) -> str:
    """``"65"`` -> ``65``: IEEE 488.2 string response data without its quotes (a bare
    reply is returned as it is)."""
    body = text.strip()
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        return body[1:-1].strip()
    return body


def list_items(text: str) -> list[str]:
    """``(-3.21,-4.02)`` or ``-3.21,-4.02`` -> ``['-3.21', '-4.02']``."""
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    return [item.strip() for item in body.split(",")] if body.strip() else []


@dataclass(frozen=True)
class MapReplacement:
    """A replace-map command checked and rendered ahead (:func:`map_replacement`)."""

    target: PortMap
    command: str
    read_back: str
    """The map query's reply that shows ``target`` exactly, as the dialect writes a map
    (ingress ascending, each list as the command gives it): a reply that is this text is
    the map asked for, taken without parsing it again (any other is parsed and
    compared)."""


def map_replacement(wanted: Mapping[int, int], size: int) -> MapReplacement:
    """The command that makes the map of a ``size`` x ``size`` unit exactly ``wanted``,
    checked (:class:`PortMap`: ``ValidationError``) and rendered now, for
    :meth:`OcsDriver.start_replace_map`: a caller that changes many units at once (a
    cable cut's sixteen) prepares every command first, so that they leave back to back
    (rendering a 128-port map takes longer than sending it). A unit of another size
    checks it again; a ``PortMap`` of this size was checked when it was made (a planned
    map is one) and is taken as it is."""
    target = (wanted if isinstance(wanted, PortMap) and wanted.size == size
              else PortMap(wanted, size))
    ingress, egress = channel_list(list(target)), channel_list(list(target.values()))
    return MapReplacement(target, render(COMMANDS["connect_only"], ingress, egress),
                          f"{ingress},{egress}")


class OcsDriver:
    """A 2N-port optical circuit switch: ingress 1..N, egress N+1..2N."""

    OPEN_MESSAGES = 3 + 2 * (1 + len(OPTIONAL_FEATURES))
    """Program messages :meth:`open` sends on a new session at most: ``*CLS``, the two
    error queries that tell whether ``:SYST:ERR:ALL?`` exists, and each probe with its
    error query (:meth:`features`)."""

    def __init__(self, session: ScpiSession, *, shared_error_queue: bool = False):
        self.session = session
        self.name = session.device
        self.shared_error_queue = shared_error_queue
        self._size: int | None = None
        self._features: Features | None = None
        self._has_monitors: bool | None = None  # False once :PMON:POW? is undefined

    # ---- lifecycle ----------------------------------------------------------------

    def open(self) -> OcsDriver:
        """Connect, and ask what the unit has (once per session); either way the error
        queue is cleared, so that errors left by someone else are not blamed on our first
        change."""
        self.session.open()
        if self.session.probed(_PROBES):
            self.session.write(COMMANDS["clear_status"].short())
        else:
            self.features()
        return self

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> OcsDriver:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _query(self, key: str, *args: str) -> str:
        return self.session.query(render(COMMANDS[key], *args))

    # ---- what the unit has ------------------------------------------------------------

    def features(self) -> Features:
        """The optional features the unit has: asked once per session, in one write with
        the size query (the session keeps the answers), and kept by the driver (a power
        read asks at every poll whether there are monitors)."""
        if self._features is None:
            answers = self.session.probe(_PROBES)
            size = answers.pop(_SIZE)
            if self._size is None and size.reply is not None:
                self._size = self._parse_size(size.reply)
            self._features = Features(
                frozenset(key for key, answer in answers.items() if answer.supported),
                tuple(OPTIONAL_FEATURES))
        return self._features

    def require(self, key: str) -> None:
        """Raise :class:`Unsupported`, naming the feature, when the unit lacks ``key``
        (a key of :data:`~drivers.ocs.commands.OPTIONAL_FEATURES`)."""
        if not self.features().has(key):
            raise Unsupported(unsupported_message(key), device=self.name)

    # ---- identity and size --------------------------------------------------------------

    def identity(self) -> Identity:
        reply = self._query("identify")
        fields = [f.strip() for f in reply.split(",")]
        if len(fields) != 4:
            raise ProtocolError(f"*IDN? reply has {len(fields)} fields, expected 4: {reply!r}",
                                device=self.name)
        return Identity(*fields)

    @property
    def size(self) -> int:
        """N, the number of ingress (and of egress) ports."""
        if self._size is None:
            self._size = self._parse_size(self._query("size"))
        return self._size

    def _parse_size(self, reply: str) -> int:
        try:
            ingress, egress = (int(p) for p in reply.split(","))
        except ValueError:
            raise ProtocolError(f"bad size reply {reply!r}", device=self.name) from None
        if ingress != egress or ingress < 1:
            raise ProtocolError(f"unsupported geometry {reply!r}: only NxN switches",
                                device=self.name)
        return ingress

    def check_ports(self, ports: Iterable[int]) -> list[int]:
        checked = list(ports)
        for port in checked:
            if not 1 <= port <= 2 * self.size:
                raise ValidationError(f"port {port} is out of range 1..{2 * self.size}",
                                      device=self.name)
        return checked

    # ---- the map --------------------------------------------------------------------------

    def port_map(self) -> PortMap:
        return self._parse_map(self._query("connect_state"))

    def start_port_map(self) -> Pending[PortMap]:
        """:meth:`port_map` in two steps (:class:`~drivers.scpi.session.Pending`): the
        query leaves now, the reply is read and parsed by ``finish()``."""
        sent = self.session.start_query(render(COMMANDS["connect_state"]))
        return Pending(lambda: self._parse_map(sent.finish()), sent.abandon)

    def _parse_map(self, reply: str) -> PortMap:
        ingress_text, sep, egress_text = reply.partition("),(")
        if not sep:
            raise ProtocolError(f"bad map reply {reply!r}", device=self.name)
        ingress = parse_channel_list(ingress_text + ")")
        egress = parse_channel_list("(" + egress_text)
        if len(ingress) != len(egress):
            raise ProtocolError(f"map reply lists differ in length: {reply!r}", device=self.name)
        try:
            return PortMap(zip(ingress, egress, strict=True), self.size)
        except ValidationError as error:
            raise ProtocolError(f"device reports an impossible map: {error}",
                                device=self.name) from None

    def connections(self) -> list[Connection]:
        """The map with each path's factory insertion loss (``None`` where not reported)."""
        current = self.port_map()
        losses: list[float | None] = [None] * len(current)
        if current and self.features().has("lc_figures"):
            reply = self._optional("insertion_loss", channel_list(list(current)),
                                   channel_list(list(current.values())))
            if reply is not None:
                values = reply.split(",")
                if len(values) != len(current):
                    raise ProtocolError(f"insertion loss reply has {len(values)} values for "
                                        f"{len(current)} paths", device=self.name)
                losses = [_float(v, "insertion loss") for v in values]
        return [Connection(i, e, loss)
                for (i, e), loss in zip(current.items(), losses, strict=True)]

    def connected_port(self, port: int) -> int | None:
        """The port ``port`` is connected to, ``None`` when unconnected."""
        self.check_ports([port])
        reply = self._query("connect_port", str(port))
        text = unquoted(reply)
        if text in ("", "0"):
            return None
        try:
            return int(text)
        except ValueError:
            raise ProtocolError(f"bad port reply {reply!r}", device=self.name) from None

    def _apply(self, command: str, what: str, problem: Callable[[str | None], str | None],
               *, read_back: str | None = None) -> None:
        """Send a change and verify it: ``problem(reply)`` says what is wrong, from the
        reply of ``read_back`` (a query sent in the change's own write) or, without one
        (``reply`` None), from what it reads back itself.

        Raises :class:`DeviceRejected` when the device refused it (on a unit with a
        shared error queue, only when the read-back shows it short of what was
        asked) and :class:`VerificationFailed` when the read-back disagrees.
        """
        self._verify(lambda: self.session.change(command, what, read_back=read_back),
                     what, problem)

    def _verify(self, replies: Callable[[], str | None], what: str,
                problem: Callable[[str | None], str | None]) -> None:
        """The verdict on a change whose replies ``replies()`` reads (:meth:`_apply`)."""
        try:
            reply = replies()
        except DeviceRejected as refused:
            if not self.shared_error_queue or problem(refused.read_back) is not None:
                raise
            log.warning("%s: %s reported %s, yet the device holds what was asked: taken "
                        "for another client's error (the unit has one error queue)",
                        self.name, what, "; ".join(refused.errors))
            return
        wrong = problem(reply)
        if wrong is not None:
            raise VerificationFailed(wrong, device=self.name)

    def _apply_to_map(self, command: str, what: str,
                      problem: Callable[[PortMap], str | None], *,
                      expected: MapReplacement | None = None) -> PortMap:
        """:meth:`_apply` of a change to the map, the map read back in the change's own
        write (its fourth message: one round trip for the change and its read-back);
        ``problem(map)`` says what is wrong with it. Returns the map read back.
        ``expected``: the replacement asked for, whose read-back text needs no parsing."""
        query, found, read = self._map_read_back(what, problem, expected)
        self._apply(command, what, read, read_back=query)
        return found[-1]

    def _start_apply_to_map(self, command: str, what: str,
                            problem: Callable[[PortMap], str | None], *,
                            expected: MapReplacement | None = None) -> Pending[PortMap]:
        """:meth:`_apply_to_map` in two steps: the change leaves now; ``finish()`` waits
        for it, verifies it and returns the map read back."""
        query, found, read = self._map_read_back(what, problem, expected)
        sent = self.session.start_change(command, what, read_back=query)

        def finish() -> PortMap:
            self._verify(sent.finish, what, read)
            return found[-1]

        return Pending(finish, sent.abandon)

    def _map_read_back(self, what: str, problem: Callable[[PortMap], str | None],
                       expected: MapReplacement | None = None
                       ) -> tuple[str, list[PortMap], Callable[[str | None], str | None]]:
        """The read-back query of a change to the map, where the map it reads is kept,
        and the ``problem`` of :meth:`_apply` that parses and judges it (a reply that is
        ``expected``'s read-back text, character for character, is its map: a cable
        cut's sixteen 128-port replies are not parsed again just as its light checks
        start)."""
        query = render(COMMANDS["connect_state"])
        found: list[PortMap] = []

        def read(reply: str | None) -> str | None:
            if reply is None:
                raise ProtocolError(f"no reply to {query} after {what}", device=self.name)
            if expected is not None and reply == expected.read_back:
                found.append(expected.target)
            else:
                found.append(self._parse_map(reply))
            return problem(found[-1])

        return query, found, read

    def wait_settled(self) -> None:
        """Wait until every reconfiguration the switch has accepted is complete.

        A change made by someone else (or by an msoctl that was killed) may
        still be switching when we look; its paths are dark until it settles.
        """
        self.session.fence()

    def connect(self, pairs: Mapping[int, int]) -> PortMap:
        """Add connections (bulk). Each named port must be free or already so connected."""
        wanted = PortMap(pairs, self.size)
        if not wanted:
            return self.port_map()

        def problem(found: PortMap) -> str | None:
            missing = {i: e for i, e in wanted.items() if found.get(i) != e}
            return f"connections {_pairs(missing)} absent after connect" if missing else None

        return self._apply_to_map(render(COMMANDS["connect_add"], channel_list(list(wanted)),
                                         channel_list(list(wanted.values()))),
                                  "connect", problem)

    def disconnect(self, ports: Iterable[int]) -> PortMap:
        """Remove every connection that involves one of ``ports``."""
        ports = self.check_ports(ports)
        if not ports:
            return self.port_map()
        named = set(ports)

        def problem(found: PortMap) -> str | None:
            left = {i: e for i, e in found.items() if i in named or e in named}
            return f"connections {_pairs(left)} remain after disconnect" if left else None

        return self._apply_to_map(render(COMMANDS["connect_subtract"], channel_list(ports),
                                         "(@)"), "disconnect", problem)

    def replace_map(self, wanted: Mapping[int, int] | MapReplacement) -> PortMap:
        """Make the map exactly ``wanted`` in one command; unchanged paths stay lit."""
        prepared, problem = self._replacing(wanted)
        return self._apply_to_map(prepared.command, "replace map", problem,
                                  expected=prepared)

    def start_replace_map(self, wanted: Mapping[int, int] | MapReplacement
                          ) -> Pending[PortMap]:
        """:meth:`replace_map` in two steps (:class:`~drivers.scpi.session.Pending`): the
        command leaves now; ``finish()`` waits for the switch, checks the error queue
        and the map read back, and returns that map. ``wanted`` may be prepared ahead
        (:func:`map_replacement`), so that many commands leave back to back."""
        prepared, problem = self._replacing(wanted)
        return self._start_apply_to_map(prepared.command, "replace map", problem,
                                        expected=prepared)

    def _replacing(self, wanted: Mapping[int, int] | MapReplacement
                   ) -> tuple[MapReplacement, Callable[[PortMap], str | None]]:
        """The command that makes the map ``wanted``, prepared for this unit, and what is
        wrong with a map read back after it."""
        if not isinstance(wanted, MapReplacement):
            prepared = map_replacement(wanted, self.size)
        elif wanted.target.size != self.size:  # prepared for another size: checked again
            prepared = map_replacement(wanted.target, self.size)
        else:
            prepared = wanted
        target = prepared.target

        def problem(found: PortMap) -> str | None:
            if found != target:
                return f"map after replace differs: {target.diff(found)}"
            return None

        return prepared, problem

    def disconnect_all(self) -> None:
        def problem(left: PortMap) -> str | None:
            return f"{len(left)} connections remain" if left else None

        self._apply_to_map(COMMANDS["disconnect_all"].short(), "disconnect all", problem)

    # ---- ports ----------------------------------------------------------------------------

    def _all_ports(self, ports: Iterable[int] | None) -> list[int]:
        return list(range(1, 2 * self.size + 1)) if ports is None else self.check_ports(ports)

    def port_states(self, ports: Iterable[int] | None = None) -> dict[int, PortState]:
        wanted = self._all_ports(ports)
        if not wanted:
            return {}
        reply = self._query("port_state", channel_list(wanted)).strip()
        if not (reply.startswith("(") and reply.endswith(")")):
            raise ProtocolError(f"bad port state reply {reply!r}", device=self.name)
        codes = [c.strip() for c in reply[1:-1].split(",")] if reply[1:-1] else []
        if len(codes) != len(wanted) or any(c not in PORT_STATES for c in codes):
            raise ProtocolError(f"bad port state reply {reply!r}", device=self.name)
        return {port: PortState(PORT_STATES[c]) for port, c in zip(wanted, codes, strict=True)}

    def set_ports_enabled(self, ports: Iterable[int], enabled: bool) -> dict[int, PortState]:
        chosen = self.check_ports(ports)
        if not chosen:
            return {}
        key = "port_enable" if enabled else "port_disable"
        want = PortState.ENABLED if enabled else PortState.DISABLED
        states: dict[int, PortState] = {}

        def problem(_: str | None) -> str | None:
            states.update(self.port_states(chosen))
            wrong = [p for p, s in states.items() if s != want]
            return f"ports {wrong} are not {want.value}" if wrong else None

        self._apply(render(COMMANDS[key], channel_list(chosen)),
                    "enable ports" if enabled else "disable ports", problem)
        return states

    def power(self, ports: Iterable[int] | None = None) -> dict[int, float | None]:
        """Monitor reading per port in dBm; ``None`` where the port has no reading, and
        for every port of a unit without power monitors.

        Asked :data:`~drivers.ocs.commands.POWER_QUERY_MAX_PORTS` ports per query.
        Raises :class:`ProtocolError` only for a reply that cannot be read.
        """
        wanted = self._all_ports(ports)
        readings: dict[int, float | None] = dict.fromkeys(wanted)
        for start in range(0, len(wanted), POWER_QUERY_MAX_PORTS):
            if not self.has_monitors():
                break
            chunk = wanted[start:start + POWER_QUERY_MAX_PORTS]
            readings.update(self._power_chunk(chunk))
        return readings

    def start_power(self, ports: Iterable[int]) -> Pending[dict[int, float | None]]:
        """:meth:`power` in two steps (:class:`~drivers.scpi.session.Pending`), for at most
        :data:`~drivers.ocs.commands.POWER_QUERY_MAX_PORTS` ports (one query): it leaves
        now, ``finish()`` reads the readings."""
        wanted = self.check_ports(ports)
        if len(wanted) > POWER_QUERY_MAX_PORTS:
            raise ValidationError(f"{len(wanted)} ports in one power query; at most "
                                  f"{POWER_QUERY_MAX_PORTS}", device=self.name)
        if not wanted or not self.has_monitors():
            return Pending(lambda: dict.fromkeys(wanted), lambda: None)
        command = render(COMMANDS["power"], channel_list(wanted))
        sent = self.session.start_query_checked(command)
        return Pending(lambda: self._powers_read(command, wanted, *sent.finish()),
                       sent.abandon)

    def has_monitors(self) -> bool:
        """Whether the unit has power monitors (asked once per session; a unit that
        disowns them later, its query an undefined header, has none from then on)."""
        return self._has_monitors is not False and self.features().has("power_monitors")

    def _power_chunk(self, ports: list[int]) -> dict[int, float | None]:
        command = render(COMMANDS["power"], channel_list(ports))
        return self._powers_read(command, ports, *self.session.query_checked(command))

    def _powers_read(self, command: str, ports: list[int], reply: str | None,
                     entries: list[tuple[int, str]]) -> dict[int, float | None]:
        """The readings of ``ports`` from the reply to the power query ``command`` and
        the errors queued behind it."""
        if entries or reply is None:
            codes = [code for code, _ in entries]
            if UNDEFINED_HEADER in codes:
                self._has_monitors = False
                log.debug("%s: no power monitors (%s is undefined)", self.name, command)
            else:
                log.warning("%s: power query answered %s: readings not available", self.name,
                            "; ".join(f"{code} {text}" for code, text in entries) or "nothing")
            return dict.fromkeys(ports)
        self._has_monitors = True
        values = list_items(reply)
        if len(values) != len(ports):
            raise ProtocolError(f"{len(values)} power readings for {len(ports)} ports",
                                device=self.name)
        return {port: _float(v, "power") for port, v in zip(ports, values, strict=True)}

    # ---- boot mode and LC figures -----------------------------------------------------------

    def boot_mode(self) -> BootMode:
        """What the map is after a power loss; :class:`Unsupported` on a unit without boot
        modes."""
        self.require("boot_mode")
        reply = self._query("boot_mode").strip().upper()
        for short, name in BOOT_MODES.items():
            if reply.startswith(short):
                return BootMode(name)
        raise ProtocolError(f"unknown boot mode {reply!r}", device=self.name)

    def set_boot_mode(self, mode: BootMode) -> None:
        self.require("boot_mode")
        short = next(s for s, name in BOOT_MODES.items() if name == mode.value)

        def problem(_: str | None) -> str | None:
            return None if self.boot_mode() == mode else f"boot mode did not change to {mode.value}"

        self._apply(render(COMMANDS["boot_mode_set"], short), "set boot mode", problem)

    def lc_status(self) -> LcStatus:
        """The LC engine's figures; ``None`` for each the unit does not have (not asked)."""
        if not self.features().has("lc_figures"):
            return LcStatus(None, None)
        temperature = self._optional("lc_temperature")
        switching = self._optional("lc_switch_time")
        return LcStatus(
            cell_temperature_celsius=None if temperature is None
            else _float(temperature, "LC temperature"),
            last_switching_seconds=None if switching is None
            else _float(switching, "switching time"),
        )

    # ---- loss-of-light alarms (drivers/ocs/alarms.py) -------------------------------------

    def alarm_port(self) -> int | None:
        """The TCP port of the unit's alarm connection; ``None`` when the unit has no
        loss-of-light alarms, or does not serve them now (it answers 0)."""
        if not self.alarm_support():
            return None
        return alarms.alarm_port(self) or None

    def alarm_support(self) -> bool:
        """Whether the unit has loss-of-light alarms (asked once per session)."""
        return self.features().has("alarms")

    def arm_los(self, ports: Iterable[int], threshold_dbm: float,
                hysteresis_db: float) -> dict[int, bool]:
        """Arm loss of light on ``ports`` (see :func:`drivers.ocs.alarms.arm_los`): verified
        by read-back; each port's state (True: lost). :class:`Unsupported` on a unit
        without alarms."""
        return alarms.arm_los(self, ports, threshold_dbm, hysteresis_db)

    def disarm_los(self, ports: Iterable[int]) -> None:
        alarms.disarm_los(self, ports)

    def los_states(self, ports: Iterable[int]) -> dict[int, bool]:
        """Loss of light now on each armed port of ``ports`` (True: lost)."""
        return alarms.los_states(self, ports)

    def los_thresholds(self, ports: Iterable[int] | None = None) -> dict[int, float | None]:
        """Each port's loss-of-light threshold, dBm; ``None`` where not armed (every port
        when ``ports`` is None)."""
        return alarms.los_thresholds(self, self._all_ports(ports))

    def _optional(self, key: str, *args: str) -> str | None:
        """A query of the LC extension; ``None`` on units that do not know it."""
        return self.session.query_if_supported(render(COMMANDS[key], *args))


_SIZE = "size"
_PROBES = {_SIZE: COMMANDS["size"].short(),
           **{key: feature.probe for key, feature in OPTIONAL_FEATURES.items()}}
"""What opening a session asks: the size, and each optional feature's probe."""


def unsupported_message(key: str) -> str:
    """What a refusal for lack of feature ``key`` says."""
    feature = OPTIONAL_FEATURES[key]
    return (f"{feature.title} not supported by this unit ({feature.probe.split()[0]} "
            "is an undefined header on it)")


def _pairs(mapping: Mapping[int, int]) -> str:
    return ", ".join(f"{i}:{e}" for i, e in mapping.items())
