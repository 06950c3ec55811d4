"""The switch's co-packaged optics in OpenConfig: platform components and interface state.

Restated from openconfig/public (release/models, commit 94f58962, 2026-07-21):
openconfig-platform 0.32.0 (a component's ``state/temperature``,
avg-min-max-instant-stats-precision1-celsius of openconfig-platform-types),
openconfig-platform-transceiver 1.0.0 (augmenting the component with ``transceiver``:
``state/supply-voltage`` precision2-volts, ``state/pre-fec-ber`` and ``post-fec-ber``
precision18-ber of openconfig-transport-types, ``physical-channels/channel[index]/state``
with ``output-power``, ``input-power`` (precision2-dBm) and ``laser-bias-current``
(precision2-mA) of openconfig-types, ``thresholds/threshold[severity]/state`` with the
``*-upper``/``*-lower`` leaves, severity an OPENCONFIG_ALARM_SEVERITY identity of
openconfig-alarm-types; and the interface's ``state/transceiver`` and
``state/physical-channel``), openconfig-platform-port 1.0.1 (the interface's
``state/hardware-port``) and openconfig-if-ethernet 2.18.0 (``ethernet/state/counters``
``fec-corrected-blocks``, ``fec-uncorrectable-blocks``, ``ethernet/state/pre-fec-ber``,
``post-fec-ber``).

Per port ``EthernetN`` (:mod:`.optics`): a component ``EthernetN`` of type PORT whose
subcomponent is the transceiver component ``transceiver-EthernetN`` (type TRANSCEIVER,
parent the port); the interface names both (``hardware-port``, ``transceiver``) and its
channels. Thresholds: the alarm levels as severity CRITICAL, the warning levels as
WARNING.

Values are as RFC 7951 writes them in the tree: a decimal64 as a string with its
fraction digits, a 64-bit counter as a string. A leaf read alone (a path that selects a
leaf) goes as a scalar TypedValue (:func:`leaf_kind`): decimals as ``double_val``,
counters and the statistics interval as ``uint_val``. A dark receiver or transmitter
reads :data:`DARK_DBM` (decimal64 has no -infinity; receivers report their floor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from emulators.cpo.datasheet import THRESHOLDS
from emulators.switch.faces.optics import STATS_SECONDS, PortView

PLATFORM = "openconfig-platform"
PLATFORM_TYPES = "openconfig-platform-types"
TRANSCEIVER = "openconfig-platform-transceiver"
PORT = "openconfig-platform-port"
ALARM_TYPES = "openconfig-alarm-types"
TRANSPORT_TYPES = "openconfig-transport-types"
IF_ETH = "openconfig-if-ethernet"
COMPONENTS = f"{PLATFORM}:components"
DARK_DBM = -40.0
SEVERITIES = (("CRITICAL", "alarm"), ("WARNING", "warning"))
"""OpenConfig severity, and the :data:`~.optics.THRESHOLDS` level pair it carries."""

THRESHOLD_LEAVES = (
    ("module-temperature", "temperature_celsius", 1),
    ("supply-voltage", "supply_voltage_volts", 2),
    ("output-power", "tx_power_dbm", 2),
    ("input-power", "rx_power_dbm", 2),
    ("laser-bias-current", "tx_bias_ma", 2),
)
"""(leaf stem, quantity, fraction digits) of transceiver-threshold-state."""

CHANNEL_MONITORS = (
    ("output-power", "tx_power_dbm", 2),
    ("input-power", "rx_power_dbm", 2),
    ("laser-bias-current", "tx_bias_ma", 2),
)
"""(container, quantity, fraction digits) of a physical channel's state."""

STATS = ("instant", "avg", "min", "max")
LEAF_KINDS: Mapping[str, str] = {
    **{f"components/component/state/temperature/{s}": "double_val" for s in STATS},
    **{f"components/component/transceiver/state/{c}/{s}": "double_val"
       for c in ("supply-voltage", "pre-fec-ber", "post-fec-ber") for s in STATS},
    **{f"components/component/transceiver/physical-channels/channel/state/{c}/{s}":
       "double_val" for c, _, _ in CHANNEL_MONITORS for s in STATS},
    **{f"components/component/transceiver/thresholds/threshold/state/{stem}-{side}":
       "double_val" for stem, _, _ in THRESHOLD_LEAVES for side in ("upper", "lower")},
    **{f"interfaces/interface/ethernet/state/{c}/{s}": "double_val"
       for c in ("pre-fec-ber", "post-fec-ber") for s in STATS},
    "interfaces/interface/ethernet/state/counters/fec-corrected-blocks": "uint_val",
    "interfaces/interface/ethernet/state/counters/fec-uncorrectable-blocks": "uint_val",
}
"""Telemetry leaves sent as scalars when read alone, by path without keys or modules."""

_KEYS = re.compile(r"\[[^\]]*\]")


def leaf_kind(path: str) -> str | None:
    """The TypedValue field a telemetry leaf at ``path`` (gNMI path string) goes in."""
    steps = _KEYS.sub("", path).strip("/").split("/")
    stripped = "/".join(step.rpartition(":")[2] for step in steps)
    if stripped.endswith("/interval") and "/components/" in f"/{stripped}":
        return "uint_val"
    return LEAF_KINDS.get(stripped)


def transceiver_name(port: str) -> str:
    return f"transceiver-{port}"


def _decimal(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def _power(value: float) -> float:
    return value if value > DARK_DBM else DARK_DBM


def _stats(view: PortView, quantity: str, instant: float, digits: int, *,
           power: bool = False) -> dict[str, str]:
    shown = _power if power else float
    leaves = {"instant": _decimal(shown(instant), digits)}
    if quantity in view.stats:
        avg, low, high = view.stats[quantity]
        leaves.update(avg=_decimal(shown(avg), digits), min=_decimal(shown(low), digits),
                      max=_decimal(shown(high), digits))
    leaves["interval"] = str(round(STATS_SECONDS * 1e9))
    return leaves


def components(views: list[PortView]) -> dict[str, Any]:
    """``openconfig-platform:components``: a PORT and a TRANSCEIVER component per port."""
    entries: list[dict[str, Any]] = []
    for view in views:
        xcvr = transceiver_name(view.name)
        entries.append({
            "name": view.name,
            "state": {"name": view.name, "type": f"{PLATFORM_TYPES}:PORT"},
            "subcomponents": {"subcomponent": [{"name": xcvr, "state": {"name": xcvr}}]},
        })
        entries.append({"name": xcvr, "state": _component_state(view, xcvr),
                        f"{TRANSCEIVER}:transceiver": _transceiver(view)})
    return {"component": entries}


def _component_state(view: PortView, xcvr: str) -> dict[str, Any]:
    engine = view.engine
    return {
        "name": xcvr, "type": f"{PLATFORM_TYPES}:TRANSCEIVER", "parent": view.name,
        "oper-status": f"{PLATFORM_TYPES}:{'INACTIVE' if engine.status == 'failed' else 'ACTIVE'}",
        "temperature": {
            **_stats(view, "temperature_celsius", engine.temperature_celsius, 1),
            "alarm-status": engine.status == "overTemperature",
            "alarm-threshold": round(THRESHOLDS["temperature_celsius"].high_alarm),
            "alarm-severity": f"{ALARM_TYPES}:CRITICAL",
        },
    }


def _transceiver(view: PortView) -> dict[str, Any]:
    fec = view.fec
    state = {
        "present": "PRESENT",
        "module-functional-type": f"{TRANSPORT_TYPES}:TYPE_STANDARD_OPTIC",
        "fault-condition": view.engine.status == "failed",
        "supply-voltage": _stats(view, "supply_voltage_volts",
                                 view.engine.supply_voltage_volts, 2),
        "pre-fec-ber": {"instant": _decimal(fec.pre_fec_ber, 18)},
        "post-fec-ber": {"instant": _decimal(fec.post_fec_ber, 18)},
    }
    channels = []
    for lane in view.lanes:
        channel_state: dict[str, Any] = {"index": lane.lane}
        for container, quantity, digits in CHANNEL_MONITORS:
            value = {"tx_power_dbm": lane.tx_power_dbm, "rx_power_dbm": lane.rx_power_dbm,
                     "tx_bias_ma": lane.tx_bias_ma}[quantity]
            channel_state[container] = _stats(view, f"{quantity}/{lane.lane}", value, digits,
                                              power=quantity.endswith("_dbm"))
        channels.append({"index": lane.lane, "state": channel_state})
    thresholds = []
    for severity, level in SEVERITIES:
        leaves: dict[str, Any] = {"severity": f"{ALARM_TYPES}:{severity}"}
        for stem, quantity, digits in THRESHOLD_LEAVES:
            limits = THRESHOLDS[quantity]
            leaves[f"{stem}-upper"] = _decimal(getattr(limits, f"high_{level}"), digits)
            leaves[f"{stem}-lower"] = _decimal(getattr(limits, f"low_{level}"), digits)
        thresholds.append({"severity": leaves["severity"], "state": leaves})
    return {"state": state, "physical-channels": {"channel": channels},
            "thresholds": {"threshold": thresholds}}


def add_interfaces(tree: dict[str, Any], views: list[PortView]) -> None:
    """Each port's interface (in the operational tree ``tree``): its hardware port, its
    transceiver and channels, its FEC counters and BER."""
    interfaces = tree.setdefault("openconfig-interfaces:interfaces", {}) \
        .setdefault("interface", [])
    by_name = {entry.get("name"): entry for entry in interfaces}
    for view in views:
        entry = by_name.get(view.name)
        if entry is None:
            entry = {"name": view.name, "state": {"name": view.name}}
            interfaces.append(entry)
        state = entry.setdefault("state", {"name": view.name})
        state[f"{PORT}:hardware-port"] = view.name
        state[f"{TRANSCEIVER}:transceiver"] = transceiver_name(view.name)
        state[f"{TRANSCEIVER}:physical-channel"] = [lane.lane for lane in view.lanes]
        ethernet = entry.setdefault(f"{IF_ETH}:ethernet", {}).setdefault("state", {})
        ethernet["counters"] = {
            **ethernet.get("counters", {}),
            "fec-corrected-blocks": str(view.fec.corrected),
            "fec-uncorrectable-blocks": str(view.fec.uncorrectable)}
        ethernet["pre-fec-ber"] = {"instant": _decimal(view.fec.pre_fec_ber, 18)}
        ethernet["post-fec-ber"] = {"instant": _decimal(view.fec.post_fec_ber, 18)}
