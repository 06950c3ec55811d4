"""The switch's active configuration, read from a tree in the names of yang/msoctl-congestion.yang.

The tree is the plain-dict shape ``msoctl switch plan -o json`` prints under
``"config"`` (and the NETCONF layer builds from a datastore)::

    {"switch": {"fast-cnp": {...}, "ports": {"port": [{"name": ..., "queues":
        {"queue": [{"queue-id": ..., "wred": {...}, "fast-cnp": {...}}]}}]}}}

Values may be ints, bools or the strings YANG's XML encoding gives ("400G",
"true", "24000000"). Absent leaves take the module's defaults. The YANG
``must`` rules are the NETCONF layer's job; this module only refuses what the
model cannot run at all (a port the chip does not have, a value of the wrong
type), with :class:`ConfigError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

QUEUES_PER_PORT = 8
DEFAULT_CNP_DSCP = 48
DEFAULT_CNP_PRIORITY = 6
DEFAULT_CNP_INTERVAL_MICROSECONDS = 50
DEFAULT_WATCHDOG_MS = 200


class ConfigError(ValueError):
    """A configuration the switch model cannot apply."""


@dataclass(frozen=True)
class FastCnpConfig:
    enabled: bool = False
    cnp_dscp: int = DEFAULT_CNP_DSCP
    cnp_priority: int = DEFAULT_CNP_PRIORITY
    min_interval_seconds: float = DEFAULT_CNP_INTERVAL_MICROSECONDS * 1e-6
    flow_table_size: int | None = None  # None: the chip's own


@dataclass(frozen=True)
class WredConfig:
    min_threshold_bytes: int | None = None
    max_threshold_bytes: int | None = None
    max_probability_percent: int = 100
    enable_ecn: bool = False

    @property
    def has_thresholds(self) -> bool:
        return self.min_threshold_bytes is not None and self.max_threshold_bytes is not None


@dataclass(frozen=True)
class QueueConfig:
    wred: WredConfig = field(default_factory=WredConfig)
    fast_cnp: bool = False


@dataclass(frozen=True)
class WatchdogConfig:
    enabled: bool = True
    detection_seconds: float = DEFAULT_WATCHDOG_MS / 1000
    restoration_seconds: float = DEFAULT_WATCHDOG_MS / 1000
    action: str = "drop"


@dataclass(frozen=True)
class PortConfig:
    name: str
    speed: str | None = None
    cable_length_meters: int | None = None
    lossless_priorities: frozenset[int] = frozenset()
    xoff_bytes: int | None = None
    xon_bytes: int | None = None
    watchdog: WatchdogConfig = field(default_factory=WatchdogConfig)
    queues: Mapping[int, QueueConfig] = field(default_factory=dict)

    def queue(self, queue_id: int) -> QueueConfig:
        return self.queues.get(queue_id, _NO_QUEUE_CONFIG)


@dataclass(frozen=True)
class SwitchConfig:
    fast_cnp: FastCnpConfig = field(default_factory=FastCnpConfig)
    ports: Mapping[str, PortConfig] = field(default_factory=dict)

    def port(self, name: str) -> PortConfig:
        return self.ports.get(name) or PortConfig(name)


_NO_QUEUE_CONFIG = QueueConfig()


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    raise ConfigError(f"{where}: {value!r} is not a boolean")


def _int(value: Any, where: str, *, low: int = 0, high: int | None = None) -> int:
    if isinstance(value, bool):
        raise ConfigError(f"{where}: {value!r} is not an integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: {value!r} is not an integer") from None
    if number < low or (high is not None and number > high):
        raise ConfigError(f"{where}: {number} out of range")
    return number


def _opt_int(node: Mapping[str, Any], key: str, where: str, **limits: int) -> int | None:
    value = node.get(key)
    return None if value is None else _int(value, f"{where}/{key}", **limits)


def _dict(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a container")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, Mapping):  # a one-entry list, as some XML-to-dict readers give it
        return [value]
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list")
    return value


def _queue(node: Mapping[str, Any], where: str) -> tuple[int, QueueConfig]:
    queue_id = _int(node.get("queue-id"), f"{where}/queue-id", high=QUEUES_PER_PORT - 1)
    where = f"{where}[queue-id={queue_id}]"
    wred_node = _dict(node.get("wred"), f"{where}/wred")
    wred = WredConfig(
        min_threshold_bytes=_opt_int(wred_node, "min-threshold", f"{where}/wred"),
        max_threshold_bytes=_opt_int(wred_node, "max-threshold", f"{where}/wred"),
        max_probability_percent=_int(wred_node.get("max-drop-probability-percent", 100),
                                     f"{where}/wred/max-drop-probability-percent", high=100),
        enable_ecn=_bool(wred_node.get("enable-ecn", False), f"{where}/wred/enable-ecn"),
    )
    fast = _dict(node.get("fast-cnp"), f"{where}/fast-cnp")
    return queue_id, QueueConfig(wred, _bool(fast.get("enabled", False),
                                             f"{where}/fast-cnp/enabled"))


def _port(node: Mapping[str, Any]) -> PortConfig:
    name = node.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("/switch/ports/port: a port needs a name")
    where = f"/switch/ports/port[name={name}]"
    pfc = _dict(node.get("pfc"), f"{where}/pfc")
    dog = _dict(pfc.get("watchdog"), f"{where}/pfc/watchdog")
    action = dog.get("action", "drop")
    if action not in ("drop", "forward"):
        raise ConfigError(f"{where}/pfc/watchdog/action: {action!r} is not drop or forward")
    watchdog = WatchdogConfig(
        enabled=_bool(dog.get("enabled", True), f"{where}/pfc/watchdog/enabled"),
        detection_seconds=_int(dog.get("detection-time-ms", DEFAULT_WATCHDOG_MS),
                               f"{where}/pfc/watchdog/detection-time-ms", low=1) / 1000,
        restoration_seconds=_int(dog.get("restoration-time-ms", DEFAULT_WATCHDOG_MS),
                                 f"{where}/pfc/watchdog/restoration-time-ms", low=1) / 1000,
        action=str(action),
    )
    priorities = frozenset(_int(p, f"{where}/lossless-priorities", high=7)
                           for p in _list(node.get("lossless-priorities"), where))
    queues = dict(_queue(_dict(q, f"{where}/queues/queue"), f"{where}/queues/queue")
                  for q in _list(_dict(node.get("queues"), f"{where}/queues").get("queue"),
                                 f"{where}/queues/queue"))
    speed = node.get("speed")
    return PortConfig(
        name=name,
        speed=None if speed is None else str(speed),
        cable_length_meters=_opt_int(node, "cable-length-meters", where),
        lossless_priorities=priorities,
        xoff_bytes=_opt_int(pfc, "xoff-bytes", f"{where}/pfc"),
        xon_bytes=_opt_int(pfc, "xon-bytes", f"{where}/pfc"),
        watchdog=watchdog,
        queues=queues,
    )


def parse(tree: Mapping[str, Any]) -> SwitchConfig:
    """Read a configuration tree; an empty tree (or ``{}``) is the factory configuration."""
    switch = _dict(_dict(tree, "/").get("switch"), "/switch")
    fast = _dict(switch.get("fast-cnp"), "/switch/fast-cnp")
    fast_cnp = FastCnpConfig(
        enabled=_bool(fast.get("enabled", False), "/switch/fast-cnp/enabled"),
        cnp_dscp=_int(fast.get("cnp-dscp", DEFAULT_CNP_DSCP), "/switch/fast-cnp/cnp-dscp",
                      high=63),
        cnp_priority=_int(fast.get("cnp-priority", DEFAULT_CNP_PRIORITY),
                          "/switch/fast-cnp/cnp-priority", high=7),
        min_interval_seconds=_int(
            fast.get("min-interval-microseconds", DEFAULT_CNP_INTERVAL_MICROSECONDS),
            "/switch/fast-cnp/min-interval-microseconds", high=1_000_000) * 1e-6,
        flow_table_size=_opt_int(fast, "flow-table-size", "/switch/fast-cnp", low=1),
    )
    ports: dict[str, PortConfig] = {}
    for node in _list(_dict(switch.get("ports"), "/switch/ports").get("port"),
                      "/switch/ports/port"):
        port = _port(_dict(node, "/switch/ports/port"))
        if port.name in ports:
            raise ConfigError(f"/switch/ports/port[name={port.name}]: named twice")
        ports[port.name] = port
    return SwitchConfig(fast_cnp, ports)
