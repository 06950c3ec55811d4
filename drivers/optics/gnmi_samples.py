"""gNMI notifications as leaf samples, each judged on its own (the reader's first half).

A notification's updates are turned into leaves: the prefix joined with the update's
path, a JSON value (json_ietf_val, json_val) walked down to its leaves (OpenConfig list
entries keyed by :data:`~.gnmi_paths.LIST_KEYS`), a scalar as it is. Names lose their
module (``openconfig-platform-transceiver:transceiver`` is ``transceiver``;
:func:`local`). Each leaf is then classified by where it is (:func:`quantity_of`) and
its value checked for that quantity; a bad one is dropped with a reason, never raised:

| reason         | what came                                                      |
|----------------|----------------------------------------------------------------|
| nan            | a NaN (as a double, or a JSON NaN)                             |
| not a number   | a string or a bool where a number belongs                      |
| out of range   | a number outside what the quantity can physically be           |
| not text       | a number or object where a name or state belongs               |
| unsubscribed   | a leaf under none of the paths subscribed (or asked for)       |
| unknown field  | a field a SONiC table the reader knows does not have            |
| undecodable    | a value that is not JSON, or of a TypedValue kind not read     |

``N/A`` (SONiC's "not available") is kept as None, not dropped. A power is held to
:data:`~drivers.optics.readings.NO_LIGHT_DBM` from below, SONiC's ``-inf`` (no light)
included, as every surface's reader gives it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from drivers.optics import gnmi_paths as P
from drivers.optics.readings import NO_LIGHT_DBM, dbm
from drivers.transports.gnmi_path import parse_path

Elem = tuple[str, tuple[tuple[str, str], ...]]
Path = tuple[Elem, ...]
Unit = str
"""``celsius``, ``volts``, ``dbm``, ``ma``, ``ber``, ``count``, ``text``, ``ignored``,
or ``unknown field``."""

RANGES = {"celsius": (-70.0, 200.0), "volts": (0.0, 60.0), "dbm": (-200.0, 40.0),
          "ma": (0.0, 2000.0), "ber": (0.0, 1.0)}
"""What each quantity can physically read; outside it a value is out of range."""
NOT_AVAILABLE = "N/A"
_LANE_FIELD = re.compile(r"(tx|rx)([0-9]+)(power|bias)")
_NUMBERED = re.compile(r"([a-z_]+?)([0-9]+)")


_MODULE = re.compile(r"[A-Za-z][A-Za-z0-9_.]*-[A-Za-z0-9_.-]+")


def local(name: str) -> str:
    """``name`` without its YANG module (``openconfig-platform:components``); a prefix
    that is no module name (SONiC's ``oid:0x...`` keys: a module name has a hyphen) stays."""
    module, colon, rest = name.partition(":")
    return rest if colon and _MODULE.fullmatch(module) else name


def elems_of(path: Any) -> list[Elem]:
    return [(local(elem.name), tuple(sorted((k, str(v)) for k, v in elem.key.items())))
            for elem in path.elem]


def parse_pattern(text: str) -> Path:
    """A subscription path string as a pattern (``*`` keys match any value)."""
    return tuple(elems_of(parse_path(text)))


def covered(path: Path, patterns: Iterable[Path]) -> bool:
    """Whether ``path`` lies under one of ``patterns``."""
    for pattern in patterns:
        if len(pattern) > len(path):
            continue
        if all(name == elem[0] and all(value == "*" or dict(elem[1]).get(key) == value
                                       for key, value in keys)
               for (name, keys), elem in zip(pattern, path, strict=False)):
            return True
    return False


def leaves(notification: Any) -> Iterator[tuple[Path, Any, str | None]]:
    """(leaf path, value, None) for each leaf of the notification's updates, or
    (path, None, reason) for an update that cannot be decoded."""
    prefix = elems_of(notification.prefix)
    for update in notification.update:
        base = tuple(prefix + elems_of(update.path))
        kind = update.val.WhichOneof("value")
        if kind in ("json_ietf_val", "json_val"):
            try:
                value = json.loads(getattr(update.val, kind))
            except (ValueError, RecursionError):
                yield base, None, "undecodable"
                continue
            yield from ((path, leaf, None) for path, leaf in _walk(base, value))
        elif kind in ("double_val", "float_val", "int_val", "uint_val", "string_val",
                      "bool_val"):
            yield base, getattr(update.val, kind), None
        elif kind == "decimal_val":
            decimal = update.val.decimal_val
            if decimal.precision > 18:
                yield base, None, "undecodable"
            else:
                yield base, decimal.digits / 10 ** decimal.precision, None
        else:
            yield base, None, "undecodable"


def _walk(base: Path, value: Any) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for member, child in value.items():
            name = local(member)
            key = P.LIST_KEYS.get(name)
            if isinstance(child, list) and key is not None and \
                    all(isinstance(entry, dict) for entry in child):
                for entry in child:
                    keys = ((key, str(entry.get(key, entry.get(f"{name}:{key}")))),)
                    yield from _walk((*base, (name, keys)), entry)
            else:
                yield from _walk((*base, (name, ())), child)
    else:
        yield base, value


def names(path: Path) -> tuple[str, ...]:
    return tuple(name for name, _ in path)


def quantity_of(path: Path) -> Unit:
    """What the leaf at ``path`` holds (module docstring)."""
    steps = names(path)
    if steps and steps[0] in ("STATE_DB", "COUNTERS_DB", "CONFIG_DB"):
        return _sonic_quantity(steps)
    return _openconfig_quantity(steps)


def _openconfig_quantity(steps: tuple[str, ...]) -> Unit:
    text = "/".join(steps)
    last = steps[-1] if steps else ""
    if text.endswith("state/temperature/instant") and steps[0] == "components":
        return "celsius"
    if "/supply-voltage/instant" in text:
        return "volts"
    if "/physical-channels/" in text and text.endswith("/instant"):
        quantity = P.CHANNEL_QUANTITIES.get(steps[-2])
        return {"tx_bias_ma": "ma", None: "ignored"}.get(quantity, "dbm")
    if "/thresholds/" in text:
        stem, _, side = last.rpartition("-")
        quantity = P.THRESHOLD_STEMS.get(stem)
        if side in ("upper", "lower") and quantity is not None:
            return _unit(quantity)
        return "text" if last == "severity" else "ignored"
    if text.endswith(("pre-fec-ber/instant", "post-fec-ber/instant")):
        return "ber"
    if last in ("fec-corrected-blocks", "fec-uncorrectable-blocks"):
        return "count"
    if text.endswith(("state/transceiver", "state/hardware-port", "state/port-speed")):
        return "text"
    return "ignored"


def _unit(quantity: str) -> Unit:
    return {"temperature_celsius": "celsius", "supply_voltage_volts": "volts",
            "tx_power_dbm": "dbm", "rx_power_dbm": "dbm", "tx_bias_ma": "ma"}[quantity]


def _sonic_quantity(steps: tuple[str, ...]) -> Unit:
    if len(steps) == 4 and steps[2] == "COUNTERS_PORT_NAME_MAP":
        return "text"
    if len(steps) != 5:
        return "ignored" if len(steps) < 5 else "unknown field"
    db, _, table, _, field = steps
    if table == "TRANSCEIVER_DOM_SENSOR":
        match = _LANE_FIELD.fullmatch(field)
        if match is not None and 1 <= int(match.group(2)) <= P.DOM_LANES:
            return "ma" if match.group(3) == "bias" else "dbm"
        return {"temperature": "celsius", "laser_temperature": "celsius",
                "voltage": "volts"}.get(field, "unknown field")
    if table in ("TRANSCEIVER_DOM_THRESHOLD", "TRANSCEIVER_ELS_DOM_THRESHOLD"):
        for level in P.DOM_THRESHOLD_LEVELS:
            stem = field[:-len(level)] if field.endswith(level) else ""
            if stem in P.DOM_THRESHOLD_STEMS:
                return _unit(P.DOM_THRESHOLD_STEMS[stem])
            if stem in ("lasertemp", "prefecber", "postfecber"):
                return "ignored"
        return "unknown field"
    if table == "TRANSCEIVER_ELS_DOM_SENSOR":
        match = _NUMBERED.fullmatch(field)
        if match is not None and match.group(1) in P.ELS_MONITORS:
            return {"bias_current_monitor": "ma", "opt_power_monitor": "dbm",
                    "voltage_monitor": "volts"}[match.group(1)]
        stem = match.group(1) if match is not None else field
        if field in ("temperature",):
            return "celsius"
        return "ignored" if stem in P.ELS_SENSOR_FIELDS else "unknown field"
    if table == "TRANSCEIVER_ELS_INFO":
        return "text" if field in P.ELS_INFO_FIELDS else "unknown field"
    if table == "TRANSCEIVER_ELS_STATUS":
        return "text"
    if db == "COUNTERS_DB" and table == "COUNTERS":
        return "count" if field.startswith(P.FEC_CODEWORDS) or field in (
            P.FEC_CORRECTABLE, P.FEC_UNCORRECTABLE) else "ignored"
    if db == "COUNTERS_DB" and table == "RATES":
        return "ber" if field in P.RATE_FIELDS else "ignored"
    if db == "CONFIG_DB" and table == "PORT" and field == "speed":
        return "count"
    return "ignored"


def judged(unit: Unit, value: Any) -> tuple[Any, str | None]:
    """(the value as the reader keeps it, None) or (None, the reason it is dropped)."""
    if unit == "ignored":
        return None, None
    if unit == "unknown field":
        return None, "unknown field"
    if unit == "text":
        return (value, None) if isinstance(value, str) else (None, "not text")
    if isinstance(value, str) and value.strip() == NOT_AVAILABLE:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None, "not a number"
    if unit == "count":
        if isinstance(value, float):
            return (None, "nan") if math.isnan(value) else (None, "not a number")
        try:
            number = int(value)
        except ValueError:
            return None, "not a number"
        return (number, None) if number >= 0 else (None, "out of range")
    try:
        number_f = float(value)
    except ValueError:
        return None, "not a number"
    if math.isnan(number_f):
        return None, "nan"
    if unit == "dbm" and number_f == -math.inf:
        return NO_LIGHT_DBM, None  # no light, as SONiC writes it
    low, high = RANGES[unit]
    if not low <= number_f <= high:
        return None, "out of range"
    return (dbm(number_f) if unit == "dbm" else number_f), None
