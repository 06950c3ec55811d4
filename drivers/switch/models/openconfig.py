"""OpenConfig QoS (openconfig-qos 2.x) with the augments a unit announces.

Where each part of the intent goes (json_ietf; uint64 and decimal64 leaves are JSON
strings, RFC 7951 section 6.1):

| intent                         | OpenConfig path                                                |
|--------------------------------|----------------------------------------------------------------|
| speed                          | /interfaces/interface[name]/ethernet/config/port-speed         |
| queue ecn / wred               | /qos/queue-management-profiles/queue-management-profile[name]/ |
|                                | wred/uniform/config (enable-ecn / drop), bound at              |
|                                | /qos/interfaces/interface[interface-id]/output/queues/         |
|                                | queue[name]/config/queue-management-profile                    |
| lossless priorities (Arista)   | .../interface/output/arista-qos-augments:pfc/config/           |
|                                | priorities-no-drop (hex bitmap, bit n = priority n)            |
| PFC watchdog (Arista)          | /qos/arista-qos-augments:pfc/watchdog/config: one per switch   |
| lossless priorities, watchdog  | .../interface/msoctl-qos-augments:pfc (config, watchdog)       |
| (msoctl augments)              |                                                                |
| cable length, xoff/xon         | .../interface/msoctl-qos-augments:headroom/config              |
| fast CNP                       | /qos/msoctl-qos-augments:fast-cnp/config; per output queue     |
|                                | .../queue/msoctl-qos-augments:fast-cnp/config/enabled          |

Queue n is the queue whose ``queue-id`` is n; its name is the unit's own, read from
``/qos/queues``. The project's WRED profiles are named ``msoctl-PORT-qN``; a port's
profiles that its WANT no longer uses are deleted with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drivers.errors import ValidationError
from drivers.switch.intent import (
    Intent,
    Port,
    Queue,
    Thresholds,
    Watchdog,
    fast_cnp_leaves,
    fast_cnp_of,
    watchdog_leaves,
    watchdog_of,
)
from drivers.switch.jsontree import DevicePath, Edit, Trees, elem, keyed, member_of, path
from drivers.switch.models.base import Counters, Where, refuse
from drivers.switch.xmljson import XmlShape

NAME = "openconfig"
QOS_MODULE = "openconfig-qos"
ARISTA = "arista-qos-augments"
MSOCTL = "msoctl-qos-augments"
QOS = path(f"{QOS_MODULE}:qos")
INTERFACES = path("openconfig-interfaces:interfaces")
ETHERNET = "openconfig-if-ethernet:ethernet"
SPEEDS = {"100G": "SPEED_100GB", "200G": "SPEED_200GB", "400G": "SPEED_400GB",
          "800G": "SPEED_800GB"}
ARISTA_ACTIONS = {"drop": "DROP", "forward": "IGNORE_PFC"}
PROFILE_PREFIX = "msoctl-"
LIST_KEYS = {"queue": ("name",), "queue-management-profile": ("name",),
             "interface": ("interface-id", "name"), "buffer-allocation-profile": ("name",)}
NAMESPACES = {
    "openconfig-qos": "http://openconfig.net/yang/qos",
    "openconfig-interfaces": "http://openconfig.net/yang/interfaces",
    "openconfig-if-ethernet": "http://openconfig.net/yang/interfaces/ethernet",
    "iana-if-type": "urn:ietf:params:xml:ns:yang:iana-if-type",
    ARISTA: "http://arista.com/yang/openconfig/qos/augments",
    MSOCTL: "urn:megascaleout:yang:msoctl-qos-augments",
}
XML_SHAPE = XmlShape(
    NAMESPACES, LIST_KEYS, leaf_lists=frozenset({"lossless-priorities"}),
    # uint8..uint32 leaves the model reads (uint64 and decimal64 stay strings)
    numbers=frozenset({"queue-id", "max-drop-probability-percent", "weight", "mtu",
                       "cable-length-meters", "detection-time-ms", "restoration-time-ms",
                       "cnp-dscp", "cnp-priority", "min-interval-microseconds",
                       "flow-table-size", "flow-aging-seconds", "lossless-priorities"}),
    booleans=frozenset({"enable-ecn", "drop", "enabled"}),
    identities=frozenset({"port-speed", "type"}))
"""What OpenConfig's XML needs beyond its JSON, for NETCONF (drivers.switch.xmljson)."""


def _profile(port: str, queue: int) -> str:
    return f"{PROFILE_PREFIX}{port}-q{queue}"


def _uint64(value: Any) -> int:
    return int(value)


class OpenConfig:
    """OpenConfig QoS, with Arista's published augments and/or the project's."""

    name: str = NAME
    read_paths: tuple[DevicePath, ...] = (QOS, INTERFACES)
    state_path: DevicePath = path(*QOS, "interfaces")
    list_keys: Mapping[str, tuple[str, ...]] = LIST_KEYS

    def __init__(self, augments: frozenset[str], *, device: str = "switch"):
        self.arista = ARISTA in augments
        self.msoctl = MSOCTL in augments
        self.device = device

    # ---- rendering ------------------------------------------------------------------

    def edit(self, want: Intent, current: Trees) -> Edit:
        self._refuse_what_has_no_place(want)
        interfaces = {str(e.get("name")) for e in _entries(current.get(INTERFACES), "interface")}
        lacking = [name for name in want.ports if name not in interfaces]
        if lacking:
            raise ValidationError(f"the switch has no port {', '.join(lacking)} (its "
                                  f"/interfaces lists {len(interfaces)})", device=self.device)
        qos = current.get(QOS) or {}
        names = _queue_names(qos)
        edit = Edit()
        for number in sorted({n for port in want.ports.values() for n in port.queues}):
            if number not in names:
                names[number] = f"{PROFILE_PREFIX}q{number}"
                edit.replace.append((path(*QOS, "queues", elem("queue", name=names[number])),
                                     {"name": names[number], "config": {
                                         "name": names[number], "queue-id": number}}))
        existing = [str(e.get("name")) for e in _entries(
            qos.get("queue-management-profiles"), "queue-management-profile")]
        for port_name, port in want.ports.items():
            wanted_profiles = set()
            for number, queue in port.queues.items():
                if queue.thresholds is not None:
                    profile = _profile(port_name, number)
                    wanted_profiles.add(profile)
                    edit.replace.append((self._profile_path(profile),
                                         _profile_value(profile, queue)))
            stale = [p for p in existing if p.startswith(f"{PROFILE_PREFIX}{port_name}-q")
                     and p not in wanted_profiles]
            edit.delete += [self._profile_path(p) for p in stale]
            edit.replace.append((path(*QOS, "interfaces", keyed("interface", {
                "interface-id": port_name})), self._interface(port_name, port, names)))
            if port.speed is not None:
                edit.update.append((path(*INTERFACES, elem("interface", name=port_name),
                                         ETHERNET, "config"),
                                    {"port-speed": f"openconfig-if-ethernet:{SPEEDS[port.speed]}"}))
        if want.fast_cnp is not None:
            edit.replace.append((path(*QOS, f"{MSOCTL}:fast-cnp", "config"),
                                 fast_cnp_leaves(want.fast_cnp)))
        if self.arista:
            dog = _one_watchdog(want, self.device)
            if dog is not None:
                edit.replace.append((path(*QOS, f"{ARISTA}:pfc", "watchdog", "config"), {
                    "default-timeout": f"{dog.detection_ms / 1000:.2f}",
                    "default-recovery-time": f"{dog.restoration_ms / 1000:.2f}",
                    "action": ARISTA_ACTIONS[dog.action]}))
        return edit

    def _profile_path(self, profile: str) -> DevicePath:
        return path(*QOS, "queue-management-profiles",
                    elem("queue-management-profile", name=profile))

    def _interface(self, name: str, port: Port, queue_names: Mapping[int, str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"interface-id": name, "config": {"interface-id": name}}
        queues = []
        for number, queue in port.queues.items():
            queue_name = queue_names[number]
            config: dict[str, Any] = {"name": queue_name}
            if queue.thresholds is not None:
                config["queue-management-profile"] = _profile(name, number)
            item: dict[str, Any] = {"name": queue_name, "config": config}
            if queue.fast_cnp is not None:
                item[f"{MSOCTL}:fast-cnp"] = {"config": {"enabled": queue.fast_cnp}}
            queues.append(item)
        output: dict[str, Any] = {}
        if queues:
            output["queues"] = {"queue": queues}
        if self.arista and port.lossless_priorities:
            bitmap = sum(1 << p for p in port.lossless_priorities)
            output[f"{ARISTA}:pfc"] = {"config": {"priorities-no-drop": f"{bitmap:x}"}}
        if output:
            entry["output"] = output
        headroom: dict[str, Any] = {}
        if port.cable_length_m is not None:
            headroom["cable-length-meters"] = port.cable_length_m
        if port.xoff_bytes is not None and port.xon_bytes is not None:
            headroom["xoff-bytes"] = str(port.xoff_bytes)
            headroom["xon-bytes"] = str(port.xon_bytes)
        if headroom:
            entry[f"{MSOCTL}:headroom"] = {"config": headroom}
        if not self.arista and (port.lossless_priorities or port.pfc_watchdog):
            pfc: dict[str, Any] = {"config": {"lossless-priorities": list(
                port.lossless_priorities)}}
            if port.pfc_watchdog is not None:
                pfc["watchdog"] = {"config": watchdog_leaves(port.pfc_watchdog)}
            entry[f"{MSOCTL}:pfc"] = pfc
        return entry

    def _refuse_what_has_no_place(self, want: Intent) -> None:
        missing = []
        if not self.msoctl:
            if want.fast_cnp is not None and want.fast_cnp.enabled:
                missing.append("fast_cnp (switch-generated CNPs)")
            for name, port in want.ports.items():
                if port.xoff_bytes is not None or port.cable_length_m is not None:
                    missing.append(f"{name} headroom (xoff/xon, cable length)")
                if any(q.fast_cnp for q in port.queues.values()):
                    missing.append(f"{name} queue fast_cnp")
                if not self.arista and (port.lossless_priorities or port.pfc_watchdog):
                    missing.append(f"{name} PFC (lossless priorities, watchdog)")
        if self.arista:
            for name, port in want.ports.items():
                dog = port.pfc_watchdog
                if dog is not None and not dog.enabled:
                    missing.append(f"{name} pfc_watchdog disabled (Arista's watchdog is "
                                   "switch-wide, with no switch to turn it off)")
                elif dog is not None and (dog.detection_ms % 10 or dog.restoration_ms % 10):
                    missing.append(f"{name} pfc_watchdog in milliseconds not a multiple of "
                                   "10 (Arista takes hundredths of a second)")
        if missing:
            augments = " + ".join(a for a, on in ((ARISTA, self.arista), (MSOCTL, self.msoctl))
                                  if on) or "no augments"
            raise refuse(f"OpenConfig QoS ({augments})", self.device, missing)

    # ---- parsing --------------------------------------------------------------------

    def parse(self, current: Trees) -> Intent:
        qos = current.get(QOS) or {}
        ids = {name: number for number, name in _queue_names(qos).items()}
        profiles = {str(e.get("name")): e for e in _entries(
            qos.get("queue-management-profiles"), "queue-management-profile")}
        speeds = {}
        for entry in _entries(current.get(INTERFACES), "interface"):
            ethernet = _get(entry, ETHERNET) or {}
            speed = (_get(ethernet, "config") or {}).get("port-speed")
            if speed is not None:
                local = str(speed).rpartition(":")[2]
                speeds[str(entry.get("name"))] = next(
                    (k for k, v in SPEEDS.items() if v == local), local)
        global_dog = None
        arista_pfc = _get(qos, f"{ARISTA}:pfc")
        if arista_pfc is not None:
            config = (_get(arista_pfc, "watchdog") or {}).get("config") or {}
            if "default-timeout" in config:
                global_dog = Watchdog(
                    enabled=True, detection_ms=round(float(config["default-timeout"]) * 1000),
                    restoration_ms=round(float(config.get("default-recovery-time",
                                                          config["default-timeout"])) * 1000),
                    action=next((k for k, v in ARISTA_ACTIONS.items()
                                 if v == config.get("action")), "drop"))
        ports: dict[str, Port] = {}
        for entry in _entries(qos.get("interfaces"), "interface"):
            name = str(entry.get("interface-id"))
            ports[name] = self._port(entry, ids, profiles, speeds.get(name), global_dog)
        for name, speed in speeds.items():
            ports.setdefault(name, Port(speed=speed))
        fast = (_get(qos, f"{MSOCTL}:fast-cnp") or {}).get("config")
        fast_cnp = None if fast is None else fast_cnp_of(fast)
        return Intent(ports=dict(sorted(ports.items())), fast_cnp=fast_cnp)

    def _port(self, entry: Mapping[str, Any], ids: Mapping[str, int],
              profiles: Mapping[str, Any], speed: str | None,
              global_dog: Watchdog | None) -> Port:
        queues: dict[int, Queue] = {}
        output = entry.get("output") or {}
        for item in _entries(output.get("queues"), "queue"):
            number = ids.get(str(item.get("name")))
            if number is None:
                continue
            config = item.get("config") or {}
            thresholds, marks = _thresholds(profiles.get(str(config.get(
                "queue-management-profile"))))
            fast = ((_get(item, f"{MSOCTL}:fast-cnp") or {}).get("config") or {}).get("enabled")
            queues[number] = Queue(ecn=thresholds if marks else None,
                                   wred=None if marks else thresholds, fast_cnp=fast)
        headroom = (_get(entry, f"{MSOCTL}:headroom") or {}).get("config") or {}
        priorities: tuple[int, ...] = ()
        dog = None
        arista = ((_get(output, f"{ARISTA}:pfc") or {}).get("config") or {}).get(
            "priorities-no-drop")
        if arista is not None:
            bitmap = int(str(arista), 16)
            priorities = tuple(p for p in range(8) if bitmap >> p & 1)
            dog = global_dog if priorities else None
        pfc = _get(entry, f"{MSOCTL}:pfc")
        if pfc is not None:
            priorities = tuple(sorted((pfc.get("config") or {}).get("lossless-priorities")
                                      or ()))
            config = (pfc.get("watchdog") or {}).get("config")
            if config is not None:
                dog = watchdog_of(config)
        xoff, xon = headroom.get("xoff-bytes"), headroom.get("xon-bytes")
        return Port(speed=speed, cable_length_m=headroom.get("cable-length-meters"),
                    lossless_priorities=priorities,
                    xoff_bytes=None if xoff is None else _uint64(xoff),
                    xon_bytes=None if xon is None else _uint64(xon),
                    pfc_watchdog=dog, queues=dict(sorted(queues.items())))

    def counters(self, config: Trees, state: Any) -> Counters:
        """Each output queue's ``state`` (``ecn-marked-pkts``, ``dropped-pkts``,
        ``max-queue-len``; the project's augments add the PFC frames and the CNPs the
        switch sent); counter64 values arrive as strings (RFC 7951)."""
        ids = {name: number for number, name in _queue_names(config.get(QOS) or {}).items()}
        found: Counters = {}
        for entry in _entries(state, "interface"):
            port = found.setdefault(str(entry.get("interface-id")), {})
            for item in _entries((entry.get("output") or {}).get("queues"), "queue"):
                number = ids.get(str(item.get("name")))
                if number is None:
                    continue
                values = item.get("state") or {}
                fast = (_get(item, f"{MSOCTL}:fast-cnp") or {}).get("state") or {}
                shown = {"ecn-marked-packets": values.get("ecn-marked-pkts"),
                         "dropped-packets": values.get("dropped-pkts"),
                         "buffer-watermark-bytes": values.get("max-queue-len"),
                         "pfc-pause-frames-sent": _get(values, f"{MSOCTL}:pfc-pause-frames-sent"),
                         "pfc-pause-frames-received": _get(
                             values, f"{MSOCTL}:pfc-pause-frames-received"),
                         "switch-generated-cnps": fast.get("switch-generated-cnps")}
                port[number] = {k: int(v) for k, v in shown.items() if v is not None}
        return found

    def where(self, text: str) -> Where:
        port = None
        for marker in ("/interface[interface-id=", "/interface[name=",
                       f"/queue-management-profile[name={PROFILE_PREFIX}"):
            if marker in text:
                port = text.split(marker, 1)[1].split("]", 1)[0]
                if marker.endswith(PROFILE_PREFIX):
                    port = port.rsplit("-q", 1)[0]
                break
        leaf = text.rsplit("/", 1)[-1]
        aspect = {"port-speed": "speed", "priorities-no-drop": "lossless_priorities",
                  "lossless-priorities": "lossless_priorities",
                  "cable-length-meters": "cable_length_m", "xoff-bytes": "xoff_bytes",
                  "xon-bytes": "xon_bytes"}.get(leaf)
        if aspect is None:
            aspect = ("fast_cnp" if "fast-cnp" in text else "pfc_watchdog" if "watchdog" in text
                      else "queues" if "queue" in text else leaf)
        return Where(port, aspect)


# ---- reading helpers ------------------------------------------------------------------


def _get(node: Mapping[str, Any], name: str) -> Any:
    """A member by its name, module-qualified or not (:func:`drivers.switch.jsontree.member_of`)."""
    found = member_of(node, name)
    return None if found is None else node[found]


def _entries(container: Any, name: str) -> list[Mapping[str, Any]]:
    if not isinstance(container, Mapping):
        return []
    found = _get(container, name)
    return [e for e in found if isinstance(e, Mapping)] if isinstance(found, list) else []


def _queue_names(qos: Mapping[str, Any]) -> dict[int, str]:
    names = {}
    for entry in _entries(qos.get("queues"), "queue"):
        queue_id = (entry.get("config") or {}).get("queue-id")
        if queue_id is not None:
            names[int(queue_id)] = str(entry.get("name"))
    return names


def _thresholds(profile: Any) -> tuple[Thresholds | None, bool]:
    if not isinstance(profile, Mapping):
        return None, False
    config = ((profile.get("wred") or {}).get("uniform") or {}).get("config") or {}
    if "min-threshold" not in config or "max-threshold" not in config:
        return None, False
    return (Thresholds(_uint64(config["min-threshold"]), _uint64(config["max-threshold"]),
                       int(config.get("max-drop-probability-percent", 100))),
            bool(config.get("enable-ecn", False)))


def _profile_value(name: str, queue: Queue) -> dict[str, Any]:
    thresholds = queue.thresholds
    assert thresholds is not None
    marks = queue.ecn is not None
    return {"name": name, "config": {"name": name}, "wred": {"uniform": {"config": {
        "min-threshold": str(thresholds.min_bytes), "max-threshold": str(thresholds.max_bytes),
        "max-drop-probability-percent": thresholds.probability_percent,
        "enable-ecn": marks, "drop": not marks}}}}


def _one_watchdog(want: Intent, device: str) -> Watchdog | None:
    """Arista's watchdog is one per switch: every port that gives one must agree."""
    given = {name: port.pfc_watchdog for name, port in want.ports.items()
             if port.pfc_watchdog is not None}
    if len(set(given.values())) > 1:
        shown = ", ".join(f"{name} {dog.detection_ms}/{dog.restoration_ms} ms {dog.action}"
                          for name, dog in given.items())
        raise refuse("OpenConfig QoS (arista-qos-augments)", device,
                     [f"a PFC watchdog per port ({shown}): Arista's is one per switch"])
    return next(iter(given.values()), None)
