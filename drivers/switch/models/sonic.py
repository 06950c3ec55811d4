"""SONiC's CONFIG_DB over gNMI, as sonic-gnmi applies a Set under
``/sonic-db:CONFIG_DB/localhost/TABLE/KEY``.

Where each part of the intent goes (every value a string, as the database holds it):

| intent              | CONFIG_DB                                                      |
|---------------------|----------------------------------------------------------------|
| speed               | PORT|P speed (Mb/s)                                            |
| cable length        | CABLE_LENGTH|<its key> P: "30010m"                             |
| lossless priorities | PORT_QOS_MAP|P pfc_enable "3,4"                                |
| xoff / xon          | BUFFER_PROFILE|msoctl_P_lossless (pool: the unit's lossless    |
|                     | ingress pool; size = xon), bound by BUFFER_PG|P|3-4            |
| PFC watchdog        | PFC_WD|P (action, detection_time, restoration_time in ms);     |
|                     | PORT_QOS_MAP|P pfcwd_sw_enable                                  |
| queue ecn / wred    | WRED_PROFILE|msoctl_P_qN (green, yellow and red alike; ecn      |
|                     | ecn_all to mark, ecn_none to drop), bound by QUEUE|P|N          |
|                     | wred_profile                                                   |
| fast CNP            | no table: refused when asked for                               |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drivers.errors import ValidationError
from drivers.switch.intent import FastCnp, Intent, Port, Queue, Thresholds, Watchdog
from drivers.switch.jsontree import DevicePath, Edit, Trees, path
from drivers.switch.models.base import Counters, Where, refuse

NAME = "sonic"
CONFIG_DB = path("sonic-db:CONFIG_DB", "localhost")
COLOURS = ("green", "yellow", "red")
PREFIX = "msoctl_"
SPEED_MBPS = {"100G": "100000", "200G": "200000", "400G": "400000", "800G": "800000"}
DEFAULT_CABLE_KEY = "AZURE"


def _table(table: str, key: str | None = None) -> DevicePath:
    return path(*CONFIG_DB, table) if key is None else path(*CONFIG_DB, table, key)


def _ranges(priorities: tuple[int, ...]) -> list[str]:
    """BUFFER_PG keys' priority parts: runs of consecutive priorities as ``3-4``."""
    runs: list[list[int]] = []
    for priority in priorities:
        if runs and priority == runs[-1][-1] + 1:
            runs[-1].append(priority)
        else:
            runs.append([priority])
    return [f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]


def _priorities(text: str) -> tuple[int, ...]:
    found: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        found.update(range(int(low), int(high or low) + 1))
    return tuple(sorted(found))


class Sonic:
    """CONFIG_DB tables of community SONiC (sonic-yang-models)."""

    name: str = NAME
    read_paths: tuple[DevicePath, ...] = (CONFIG_DB,)
    state_path: DevicePath = path("sonic-db:COUNTERS_DB", "localhost")
    list_keys: Mapping[str, tuple[str, ...]] = {}

    def __init__(self, *, device: str = "switch"):
        self.device = device

    def edit(self, want: Intent, current: Trees) -> Edit:
        db = current.get(CONFIG_DB) or {}
        missing = []
        if want.fast_cnp is not None and want.fast_cnp.enabled:
            missing.append("fast_cnp (switch-generated CNPs)")
        missing += [f"{name} queue {number} fast_cnp" for name, port in want.ports.items()
                    for number, queue in port.queues.items() if queue.fast_cnp]
        if missing:
            raise refuse("SONiC CONFIG_DB", self.device, missing)
        ports = db.get("PORT") or {}
        lacking = [name for name in want.ports if name not in ports]
        if lacking:
            raise ValidationError(f"the switch has no port {', '.join(lacking)} (its PORT "
                                  f"table has {len(ports)})", device=self.device)
        edit = Edit()
        for name, port in want.ports.items():
            self._port(edit, db, name, port)
        return edit

    def _port(self, edit: Edit, db: Mapping[str, Any], name: str, port: Port) -> None:
        if port.speed is not None:
            edit.update.append((_table("PORT", name), {"speed": SPEED_MBPS[port.speed]}))
        if port.cable_length_m is not None:
            key = next(iter(db.get("CABLE_LENGTH") or {}), DEFAULT_CABLE_KEY)
            edit.update.append((_table("CABLE_LENGTH", key), {name: f"{port.cable_length_m}m"}))
        # Queues: the port's WRED bindings and profiles, replaced.
        wred = db.get("WRED_PROFILE") or {}
        wanted = set()
        for number, queue in port.queues.items():
            thresholds = queue.thresholds
            queue_key = f"{name}|{number}"
            if thresholds is None:
                continue
            profile = f"{PREFIX}{name}_q{number}"
            wanted.add(profile)
            edit.replace.append((_table("WRED_PROFILE", profile),
                                 _wred(thresholds, marks=queue.ecn is not None)))
            edit.update.append((_table("QUEUE", queue_key), {"wred_profile": profile}))
        for queue_key, entry in (db.get("QUEUE") or {}).items():
            bound = str((entry or {}).get("wred_profile", ""))
            if queue_key.startswith(f"{name}|") and bound.startswith(PREFIX) \
                    and bound not in wanted:
                edit.delete.append(path(*_table("QUEUE", queue_key), "wred_profile"))
        edit.delete += [_table("WRED_PROFILE", profile) for profile in wred
                        if profile.startswith(f"{PREFIX}{name}_q") and profile not in wanted]
        # PFC: priorities, headroom profile and its priority groups, the watchdog.
        qos_map: dict[str, Any] = {}
        for pg_key, entry in (db.get("BUFFER_PG") or {}).items():
            if pg_key.startswith(f"{name}|") and str((entry or {}).get("profile", "")
                                                     ).startswith(PREFIX):
                edit.delete.append(_table("BUFFER_PG", pg_key))
        profile = f"{PREFIX}{name}_lossless"
        if port.xoff_bytes is not None and port.xon_bytes is not None \
                and port.lossless_priorities:
            edit.replace.append((_table("BUFFER_PROFILE", profile), {
                "pool": self._lossless_pool(db), "size": str(port.xon_bytes),
                "xon": str(port.xon_bytes), "xoff": str(port.xoff_bytes), "dynamic_th": "0"}))
            for part in _ranges(port.lossless_priorities):
                edit.replace.append((_table("BUFFER_PG", f"{name}|{part}"),
                                     {"profile": profile}))
        elif profile in (db.get("BUFFER_PROFILE") or {}):
            edit.delete.append(_table("BUFFER_PROFILE", profile))
        priorities = ",".join(str(p) for p in port.lossless_priorities)
        dog = port.pfc_watchdog
        for field, value in (("pfc_enable", priorities),
                             ("pfcwd_sw_enable", priorities if dog and dog.enabled else "")):
            if value:
                qos_map[field] = value
            elif field in ((db.get("PORT_QOS_MAP") or {}).get(name) or {}):
                edit.delete.append(path(*_table("PORT_QOS_MAP", name), field))
        if qos_map:
            edit.update.append((_table("PORT_QOS_MAP", name), qos_map))
        if dog is not None and dog.enabled:
            edit.replace.append((_table("PFC_WD", name), {
                "action": dog.action, "detection_time": str(dog.detection_ms),
                "restoration_time": str(dog.restoration_ms)}))
        elif name in (db.get("PFC_WD") or {}):
            edit.delete.append(_table("PFC_WD", name))

    def _lossless_pool(self, db: Mapping[str, Any]) -> str:
        pools = db.get("BUFFER_POOL") or {}
        found = [name for name, entry in pools.items()
                 if "lossless" in name and (entry or {}).get("type", "ingress") == "ingress"]
        if not found:
            raise ValidationError(f"the switch has no lossless ingress buffer pool (its "
                                  f"BUFFER_POOL has {', '.join(pools) or 'none'})",
                                  device=self.device)
        return str(found[0])

    def parse(self, current: Trees) -> Intent:
        db = current.get(CONFIG_DB) or {}
        tables: list[Mapping[str, Any]] = list((db.get("CABLE_LENGTH") or {}).values())
        cable = tables[0] if tables else {}
        profiles = db.get("BUFFER_PROFILE") or {}
        ports: dict[str, Port] = {}
        for name, entry in sorted((db.get("PORT") or {}).items()):
            speed = next((k for k, v in SPEED_MBPS.items()
                          if v == str((entry or {}).get("speed"))), None)
            qos_map = (db.get("PORT_QOS_MAP") or {}).get(name) or {}
            priorities = _priorities(str(qos_map.get("pfc_enable", "")))
            xoff = xon = None
            for pg_key, pg in (db.get("BUFFER_PG") or {}).items():
                port_name, _, groups = pg_key.partition("|")
                if port_name == name and set(_priorities(groups)) & set(priorities):
                    found = profiles.get(str((pg or {}).get("profile"))) or {}
                    if "xoff" in found:
                        xoff, xon = int(found["xoff"]), int(found.get("xon", 0))
            wd = (db.get("PFC_WD") or {}).get(name)
            dog = None if wd is None else Watchdog(
                enabled=True, detection_ms=int(wd.get("detection_time", 200)),
                restoration_ms=int(wd.get("restoration_time", 200)),
                action=str(wd.get("action", "drop")))
            queues = {}
            for queue_key, queue in (db.get("QUEUE") or {}).items():
                port_name, _, number = queue_key.partition("|")
                profile = (db.get("WRED_PROFILE") or {}).get(str((queue or {}).get(
                    "wred_profile")))
                if port_name != name or not number.isdigit() or not profile:
                    continue
                thresholds = Thresholds(int(profile.get("green_min_threshold", 0)),
                                        int(profile.get("green_max_threshold", 0)),
                                        int(profile.get("green_drop_probability", 100)))
                marks = profile.get("ecn", "ecn_none") != "ecn_none"
                queues[int(number)] = Queue(ecn=thresholds if marks else None,
                                            wred=None if marks else thresholds)
            length = str(cable.get(name, "")).rstrip("m")
            ports[name] = Port(speed=speed,
                               cable_length_m=int(length) if length.isdigit() else None,
                               lossless_priorities=priorities, xoff_bytes=xoff, xon_bytes=xon,
                               pfc_watchdog=dog, queues=dict(sorted(queues.items())))
        # SONiC generates no CNPs of its own: that feature is off on every such switch
        return Intent(ports=ports, fast_cnp=FastCnp(enabled=False))

    def counters(self, config: Trees, state: Any) -> Counters:
        """COUNTERS_DB: each queue's SAI statistics through COUNTERS_QUEUE_NAME_MAP
        (``Ethernet0:3`` -> its oid), the port's PFC frames per priority through
        COUNTERS_PORT_NAME_MAP, the queue's watermark from PERSISTENT_WATERMARKS."""
        db = state or {}
        counters, watermarks = db.get("COUNTERS") or {}, db.get("PERSISTENT_WATERMARKS") or {}
        ports = db.get("COUNTERS_PORT_NAME_MAP") or {}
        found: Counters = {}
        for key, oid in (db.get("COUNTERS_QUEUE_NAME_MAP") or {}).items():
            port, _, number = str(key).rpartition(":")
            if not number.isdigit():
                continue
            stats = counters.get(oid) or {}
            pfc = counters.get(ports.get(port)) or {}
            shown = {"dropped-packets": stats.get("SAI_QUEUE_STAT_DROPPED_PACKETS"),
                     "ecn-marked-packets": stats.get("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"),
                     "buffer-watermark-bytes": (watermarks.get(oid) or {}).get(
                         "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"),
                     "pfc-pause-frames-sent": pfc.get(f"SAI_PORT_STAT_PFC_{number}_TX_PKTS"),
                     "pfc-pause-frames-received": pfc.get(
                         f"SAI_PORT_STAT_PFC_{number}_RX_PKTS")}
            found.setdefault(port, {})[int(number)] = {
                k: int(v) for k, v in shown.items() if v is not None}
        return found

    def where(self, text: str) -> Where:
        parts = text.split("/")
        table = parts[3] if len(parts) > 3 else ""
        key = parts[4] if len(parts) > 4 else ""
        port = key.split("|", 1)[0] if "|" in key or table in ("PORT", "PORT_QOS_MAP",
                                                               "PFC_WD") else None
        if table == "CABLE_LENGTH" and len(parts) > 5:
            port = parts[5]
        if table in ("WRED_PROFILE", "BUFFER_PROFILE") and key.startswith(PREFIX):
            port = key[len(PREFIX):].rsplit("_", 1)[0]
        aspect = {"PORT": "speed", "CABLE_LENGTH": "cable_length_m",
                  "PORT_QOS_MAP": "lossless_priorities", "PFC_WD": "pfc_watchdog",
                  "BUFFER_PG": "xoff_bytes", "BUFFER_PROFILE": "xoff_bytes",
                  "QUEUE": "queues", "WRED_PROFILE": "queues"}.get(table, table)
        return Where(port, aspect)


def _wred(thresholds: Thresholds, *, marks: bool) -> dict[str, str]:
    entry = {"ecn": "ecn_all" if marks else "ecn_none"}
    for colour in COLOURS:
        entry.update({f"wred_{colour}_enable": "true",
                      f"{colour}_min_threshold": str(thresholds.min_bytes),
                      f"{colour}_max_threshold": str(thresholds.max_bytes),
                      f"{colour}_drop_probability": str(thresholds.probability_percent)})
    return entry
