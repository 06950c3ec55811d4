"""The operator's congestion-control intent for one switch, in the operator's words.

A WANT file says, per port and queue, what the operator means, whatever model the
switch speaks; a device model (:mod:`drivers.switch.models`) renders it into the
switch's own documents and parses them back::

    congestion_control:
      fast_cnp: {enabled: true, cnp_dscp: 48, cnp_priority: 6, min_interval_us: 50}
      ports:
        Ethernet1:
          speed: 400G
          cable_length_m: 30010
          lossless_priorities: [3]
          xoff_bytes: 16094208          # PFC headroom per lossless priority
          xon_bytes: 8192
          pfc_watchdog: {enabled: true, detection_ms: 200, restoration_ms: 200, action: drop}
          queues:
            3:
              ecn: {min_bytes: 1500000, max_bytes: 15000000, probability_percent: 5}
              fast_cnp: true

A queue's thresholds are either ``ecn`` (packets are marked) or ``wred`` (dropped).
Each port a WANT names gets exactly what it gives: what it leaves out is not
configured there. The switch-wide ``fast_cnp`` is set when given and left alone
otherwise. Ports the WANT does not name are left alone.

WANT files of the first rounds hold a ``switch:`` tree of yang/msoctl-congestion.yang;
:func:`load` reads them too (:func:`from_legacy`), and ``msoctl switch want convert``
rewrites them.

Everything here is data and checking: :func:`load` refuses a bad document with one
:class:`~drivers.errors.ValidationError` naming the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from drivers.errors import ValidationError, VerificationFailed
from drivers.switch.link import PORT_SPEEDS_BPS
from drivers.yamlfile import shown, unsafe_character

TOP = "congestion_control"
LEGACY_TOP = "switch"
SPEEDS = tuple(PORT_SPEEDS_BPS)
WATCHDOG_ACTIONS = ("drop", "forward")
MAX_BYTES = 2**48
PORT_NAME_LENGTH = 64


@dataclass(frozen=True)
class FastCnp:
    """Switch-generated CNPs, switch-wide; ``None``: the device's default."""

    enabled: bool
    cnp_dscp: int | None = None
    cnp_priority: int | None = None
    min_interval_us: int | None = None
    flow_table_size: int | None = None
    flow_aging_s: int | None = None


@dataclass(frozen=True)
class Thresholds:
    """WRED thresholds of a queue, in bytes, and the probability at ``max_bytes``."""

    min_bytes: int
    max_bytes: int
    probability_percent: int


@dataclass(frozen=True)
class Watchdog:
    enabled: bool = True
    detection_ms: int = 200
    restoration_ms: int = 200
    action: str = "drop"


@dataclass(frozen=True)
class Queue:
    """An egress queue; queue n carries IEEE 802.1p priority n."""

    ecn: Thresholds | None = None  # marks
    wred: Thresholds | None = None  # drops
    fast_cnp: bool | None = None

    @property
    def thresholds(self) -> Thresholds | None:
        return self.ecn or self.wred


@dataclass(frozen=True)
class Port:
    speed: str | None = None
    cable_length_m: int | None = None
    lossless_priorities: tuple[int, ...] = ()
    xoff_bytes: int | None = None
    xon_bytes: int | None = None
    pfc_watchdog: Watchdog | None = None
    queues: Mapping[int, Queue] = field(default_factory=dict)


@dataclass(frozen=True)
class Intent:
    ports: Mapping[str, Port] = field(default_factory=dict)
    fast_cnp: FastCnp | None = None

    def only(self, ports: set[str] | frozenset[str]) -> Intent:
        """The same intent for the ports named (the switch-wide part kept)."""
        return replace(self, ports={n: p for n, p in self.ports.items() if n in ports})


@dataclass(frozen=True)
class Difference:
    """One field of the intent a device does not hold: its path in the WANT's words."""

    path: str
    wanted: Any
    found: Any

    def describe(self) -> str:
        return f"{self.path} is {self.found!r}, wanted {self.wanted!r}"


# ---- reading a document ----------------------------------------------------------------


class _Where:
    """Where a value sits: the file (with the key's line when known) and the field."""

    def __init__(self, source: str, steps: tuple[str, ...] = (), mapping: Any = None,
                 key: str | None = None):
        self.source, self.steps = source, steps
        line_of = getattr(mapping, "line_of", None)
        self.line = line_of(key) if line_of is not None and key is not None else None

    def child(self, mapping: Any, key: Any) -> _Where:
        where = _Where(self.source, (*self.steps, str(key)), mapping, str(key))
        if where.line is None:
            where.line = self.line
        return where

    def error(self, problem: str) -> ValidationError:
        at = self.source if self.line is None else f"{self.source}:{self.line}"
        path = ".".join(self.steps) or "the document"
        return ValidationError(f"{at}: {path}: {problem}")


def _mapping(value: Any, where: _Where, known: tuple[str, ...]) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error(f"must be a mapping, got {shown(value)}")
    for key in value:
        if key not in known:
            raise where.child(value, key).error(f"unknown; known here: {', '.join(known)}")
    return value


def _int(value: Any, where: _Where, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise where.error(f"{shown(value)} is not a whole number")
    text = str(value).strip()
    if isinstance(value, str) and not (text.isascii() and text.isdigit()):
        raise where.error(f"{shown(value)} is not a whole number")
    number = int(text)
    if not low <= number <= high:
        raise where.error(f"{number} is out of range {low}..{high}")
    return number


def _bool(value: Any, where: _Where) -> bool:
    if isinstance(value, bool):
        return value
    raise where.error(f"{shown(value)} is not true or false")


def _choice(value: Any, where: _Where, choices: tuple[str, ...]) -> str:
    text = str(value).upper() if choices is SPEEDS else str(value)
    if isinstance(value, bool) or not isinstance(value, str | int) or text not in choices:
        raise where.error(f"{shown(value)} is not one of {', '.join(choices)}")
    return text


def _optional(node: Mapping[Any, Any], key: str, where: _Where, read: Any,
              *args: Any) -> Any:
    value = node.get(key)
    return None if value is None else read(value, where.child(node, key), *args)


def _fast_cnp(value: Any, where: _Where) -> FastCnp:
    node = _mapping(value, where, tuple(f.name for f in fields(FastCnp)))
    if "enabled" not in node:
        raise where.error("needs enabled (true or false)")
    return FastCnp(
        enabled=_bool(node["enabled"], where.child(node, "enabled")),
        cnp_dscp=_optional(node, "cnp_dscp", where, _int, 0, 63),
        cnp_priority=_optional(node, "cnp_priority", where, _int, 0, 7),
        min_interval_us=_optional(node, "min_interval_us", where, _int, 0, 1_000_000),
        flow_table_size=_optional(node, "flow_table_size", where, _int, 1, 2**32 - 1),
        flow_aging_s=_optional(node, "flow_aging_s", where, _int, 1, 3600))


def _thresholds(value: Any, where: _Where) -> Thresholds:
    node = _mapping(value, where, ("min_bytes", "max_bytes", "probability_percent"))
    missing = [k for k in ("min_bytes", "max_bytes", "probability_percent") if k not in node]
    if missing:
        raise where.error(f"needs {', '.join(missing)}")
    found = Thresholds(_int(node["min_bytes"], where.child(node, "min_bytes"), 0, MAX_BYTES),
                       _int(node["max_bytes"], where.child(node, "max_bytes"), 0, MAX_BYTES),
                       _int(node["probability_percent"],
                            where.child(node, "probability_percent"), 0, 100))
    if found.min_bytes > found.max_bytes:
        raise where.error(f"min_bytes {found.min_bytes} is above max_bytes {found.max_bytes}")
    return found


def _watchdog(value: Any, where: _Where) -> Watchdog:
    node = _mapping(value, where, tuple(f.name for f in fields(Watchdog)))
    default = Watchdog()
    return Watchdog(
        enabled=_bool(node.get("enabled", True), where.child(node, "enabled")),
        detection_ms=_int(node.get("detection_ms", default.detection_ms),
                          where.child(node, "detection_ms"), 1, 60_000),
        restoration_ms=_int(node.get("restoration_ms", default.restoration_ms),
                            where.child(node, "restoration_ms"), 1, 600_000),
        action=_choice(node.get("action", default.action), where.child(node, "action"),
                       WATCHDOG_ACTIONS))


def _queue(value: Any, where: _Where) -> Queue:
    node = _mapping(value, where, ("ecn", "wred", "fast_cnp"))
    if node.get("ecn") is not None and node.get("wred") is not None:
        raise where.error("give ecn (mark) or wred (drop), not both")
    return Queue(ecn=_optional(node, "ecn", where, _thresholds),
                 wred=_optional(node, "wred", where, _thresholds),
                 fast_cnp=_optional(node, "fast_cnp", where, _bool))


def _port(value: Any, where: _Where) -> Port:
    node = _mapping(value, where, tuple(f.name for f in fields(Port)))
    priorities: tuple[int, ...] = ()
    if node.get("lossless_priorities") is not None:
        listed = node["lossless_priorities"]
        at = where.child(node, "lossless_priorities")
        if not isinstance(listed, list):
            raise at.error(f"must be a list of priorities 0..7, got {shown(listed)}")
        priorities = tuple(sorted(_int(p, at, 0, 7) for p in listed))
        if len(set(priorities)) != len(priorities):
            raise at.error("a priority is given twice")
    queues: dict[int, Queue] = {}
    listed_queues = node.get("queues")
    if listed_queues is not None:
        at = where.child(node, "queues")
        if not isinstance(listed_queues, Mapping):
            raise at.error(f"must map queue numbers 0..7 to queues, got {shown(listed_queues)}")
        for key, queue in listed_queues.items():
            number = _int(key, at.child(listed_queues, key), 0, 7)
            if number in queues:
                raise at.child(listed_queues, key).error("is given twice")
            queues[number] = _queue(queue, at.child(listed_queues, key))
    port = Port(
        speed=_optional(node, "speed", where, _choice, SPEEDS),
        cable_length_m=_optional(node, "cable_length_m", where, _int, 0, 2**32 - 1),
        lossless_priorities=priorities,
        xoff_bytes=_optional(node, "xoff_bytes", where, _int, 0, MAX_BYTES),
        xon_bytes=_optional(node, "xon_bytes", where, _int, 0, MAX_BYTES),
        pfc_watchdog=_optional(node, "pfc_watchdog", where, _watchdog),
        queues=dict(sorted(queues.items())))
    if (port.xoff_bytes is None) != (port.xon_bytes is None):
        raise where.error("give xoff_bytes and xon_bytes together")
    return port


def from_dict(document: Any, *, source: str = "want") -> Intent:
    """The intent in ``document`` (``{congestion_control: {...}}``, or its inside), or
    :class:`ValidationError` naming ``source``, the line and the field."""
    where = _Where(source)
    if isinstance(document, Mapping) and TOP in document:
        top = _mapping(document, where, (TOP,))
        where = where.child(top, TOP)
        document = top[TOP]
    node = _mapping(document, where, ("fast_cnp", "ports"))
    ports: dict[str, Port] = {}
    listed = node.get("ports") or {}
    at = where.child(node, "ports")
    if not isinstance(listed, Mapping):
        raise at.error(f"must map port names to ports, got {shown(listed)}")
    for name, port in listed.items():
        text = str(name)
        if (isinstance(name, bool) or not isinstance(name, str | int)
                or not 1 <= len(text) <= PORT_NAME_LENGTH or unsafe_character(text) is not None
                or text != text.strip()):
            raise at.child(listed, name).error("a port name is 1 to 64 printable characters")
        ports[text] = _port(port, at.child(listed, name))
    return Intent(ports=ports, fast_cnp=_optional(node, "fast_cnp", where, _fast_cnp))


# ---- writing ---------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, Thresholds | Watchdog | FastCnp | Queue):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)
                if getattr(value, f.name) is not None}
    return value


def to_dict(intent: Intent) -> dict[str, Any]:
    """The document :func:`from_dict` reads (``None`` fields left out)."""
    ports: dict[str, Any] = {}
    for name, port in intent.ports.items():
        entry: dict[str, Any] = {}
        for item in fields(Port):
            value = getattr(port, item.name)
            if item.name == "queues":
                value = {number: _plain(queue) for number, queue in value.items()} or None
            elif item.name == "lossless_priorities":
                value = list(value) or None
            if value is not None:
                entry[item.name] = _plain(value)
        ports[name] = entry
    body: dict[str, Any] = {}
    if intent.fast_cnp is not None:
        body["fast_cnp"] = _plain(intent.fast_cnp)
    body["ports"] = ports
    return {TOP: body}


# ---- the project's YANG names ------------------------------------------------------------
# msoctl-congestion and its rewrite as OpenConfig augments (msoctl-qos-augments) give fast
# CNP and the PFC watchdog the same leaves; these four read and write them.


def fast_cnp_leaves(fast: FastCnp) -> dict[str, Any]:
    """``fast`` in the project's YANG leaf names (those it leaves to the device left out)."""
    leaves: dict[str, Any] = {"enabled": fast.enabled}
    for key, value in (("cnp-dscp", fast.cnp_dscp), ("cnp-priority", fast.cnp_priority),
                       ("min-interval-microseconds", fast.min_interval_us),
                       ("flow-table-size", fast.flow_table_size),
                       ("flow-aging-seconds", fast.flow_aging_s)):
        if value is not None:
            leaves[key] = value
    return leaves


def fast_cnp_of(leaves: Mapping[str, Any]) -> FastCnp:
    """Fast CNP from the project's YANG leaves."""
    return FastCnp(enabled=bool(leaves.get("enabled", False)),
                   cnp_dscp=leaves.get("cnp-dscp"), cnp_priority=leaves.get("cnp-priority"),
                   min_interval_us=leaves.get("min-interval-microseconds"),
                   flow_table_size=leaves.get("flow-table-size"),
                   flow_aging_s=leaves.get("flow-aging-seconds"))


def watchdog_leaves(dog: Watchdog) -> dict[str, Any]:
    """The PFC watchdog in the project's YANG leaf names."""
    return {"enabled": dog.enabled, "detection-time-ms": dog.detection_ms,
            "restoration-time-ms": dog.restoration_ms, "action": dog.action}


def watchdog_of(leaves: Mapping[str, Any]) -> Watchdog:
    """The PFC watchdog from the project's YANG leaves, their defaults where left out."""
    default = Watchdog()
    return Watchdog(enabled=leaves.get("enabled", default.enabled),
                    detection_ms=leaves.get("detection-time-ms", default.detection_ms),
                    restoration_ms=leaves.get("restoration-time-ms", default.restoration_ms),
                    action=leaves.get("action", default.action))


# ---- the first rounds' WANT files ------------------------------------------------------


def from_legacy(tree: Mapping[str, Any]) -> Intent:
    """The intent of a checked ``switch:`` tree of yang/msoctl-congestion.yang
    (:func:`drivers.switch.tree.check`): the module's names turned into the operator's."""
    top = tree.get(LEGACY_TOP) or {}
    fast = top.get("fast-cnp")
    fast_cnp = None if fast is None else fast_cnp_of(fast)
    ports = {}
    for entry in (top.get("ports") or {}).get("port") or []:
        pfc = entry.get("pfc") or {}
        dog = pfc.get("watchdog")
        queues = {}
        for queue in (entry.get("queues") or {}).get("queue") or []:
            wred = queue.get("wred") or {}
            thresholds = None
            if "min-threshold" in wred and "max-threshold" in wred:
                thresholds = Thresholds(wred["min-threshold"], wred["max-threshold"],
                                        wred.get("max-drop-probability-percent", 100))
            marks = bool(wred.get("enable-ecn", False))
            fast_queue = (queue.get("fast-cnp") or {}).get("enabled")
            queues[queue["queue-id"]] = Queue(ecn=thresholds if marks else None,
                                              wred=None if marks else thresholds,
                                              fast_cnp=fast_queue)
        ports[entry["name"]] = Port(
            speed=entry.get("speed"), cable_length_m=entry.get("cable-length-meters"),
            lossless_priorities=tuple(sorted(entry.get("lossless-priorities") or ())),
            xoff_bytes=pfc.get("xoff-bytes"), xon_bytes=pfc.get("xon-bytes"),
            pfc_watchdog=None if dog is None else watchdog_of(dog),
            queues=dict(sorted(queues.items())))
    return Intent(ports=ports, fast_cnp=fast_cnp)


def as_intent(want: Intent | Mapping[str, Any]) -> Intent:
    """An intent, from an intent or a first round's checked ``switch:`` tree."""
    return want if isinstance(want, Intent) else from_legacy(want)


# ---- comparing -------------------------------------------------------------------------


def not_held(where: str, missing: Sequence[str], *, device: str) -> VerificationFailed:
    """The error of a read-back that lacks ``missing`` (each described): the first three,
    and how many more."""
    more = f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""
    return VerificationFailed(f"{where} does not hold the change: {'; '.join(missing[:3])}"
                              f"{more}", device=device)


def unmet(want: Intent, have: Intent) -> list[Difference]:
    """What of ``want`` ``have`` does not hold: every field ``want`` gives, of every port
    it names, must be equal in ``have``; a queue or watchdog it gives must be there."""
    found: list[Difference] = []
    if want.fast_cnp is not None and not want.fast_cnp.enabled:
        # the settings of a feature turned off are not asked of a switch that lacks it
        if have.fast_cnp is not None and have.fast_cnp.enabled:
            found.append(Difference("fast_cnp.enabled", False, True))
    elif want.fast_cnp is not None:
        found += _unmet_fields("fast_cnp", want.fast_cnp, have.fast_cnp)
    for name, port in want.ports.items():
        other = have.ports.get(name)
        where = f"ports.{name}"
        if other is None:
            found.append(Difference(where, "configured", None))
            continue
        for item in fields(Port):
            wanted, got = getattr(port, item.name), getattr(other, item.name)
            if item.name == "queues":
                for number, queue in wanted.items():
                    found += _unmet_fields(f"{where}.queues.{number}", queue, got.get(number))
            elif item.name == "pfc_watchdog" and wanted is not None:
                found += _unmet_fields(f"{where}.pfc_watchdog", wanted, got)
            elif wanted not in (None, ()) and wanted != got:
                found.append(Difference(f"{where}.{item.name}", wanted, got))
    return found


def _unmet_fields(where: str, wanted: Any, got: Any) -> list[Difference]:
    found = []
    for item in fields(wanted):
        value = getattr(wanted, item.name)
        other = None if got is None else getattr(got, item.name)
        if value is False and other is None:
            continue  # asked off, and the switch has none of it: off
        if value is not None and value != other:
            found.append(Difference(f"{where}.{item.name}", _plain(value), _plain(other)))
    return found
