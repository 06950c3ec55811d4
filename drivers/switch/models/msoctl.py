"""The first rounds' own module, yang/msoctl-congestion.yang, spoken over NETCONF by the
lab's switches that take it: the intent as that module's ``switch:`` tree and back.

The NETCONF session (:class:`drivers.switch.netconf.SwitchSession`) edits this tree
with the module's schema (:mod:`drivers.switch.tree`); this module only turns the
operator's words into the module's names (:func:`to_tree`) and back
(:func:`drivers.switch.intent.from_legacy`).
"""

from __future__ import annotations

from typing import Any

from drivers.switch.intent import (
    Intent,
    Port,
    fast_cnp_leaves,
    from_legacy,
    watchdog_leaves,
)

NAME = "msoctl"
NAMESPACE = "urn:megascaleout:yang:msoctl-congestion"

__all__ = ["NAME", "NAMESPACE", "from_legacy", "to_tree"]


def _port(name: str, port: Port) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if port.speed is not None:
        entry["speed"] = port.speed
    if port.cable_length_m is not None:
        entry["cable-length-meters"] = port.cable_length_m
    if port.lossless_priorities:
        entry["lossless-priorities"] = list(port.lossless_priorities)
    pfc: dict[str, Any] = {}
    if port.xoff_bytes is not None:
        pfc["xoff-bytes"] = port.xoff_bytes
    if port.xon_bytes is not None:
        pfc["xon-bytes"] = port.xon_bytes
    dog = port.pfc_watchdog
    if dog is not None:
        pfc["watchdog"] = watchdog_leaves(dog)
    if pfc:
        entry["pfc"] = pfc
    queues = []
    for number, queue in port.queues.items():
        item: dict[str, Any] = {"queue-id": number}
        thresholds = queue.thresholds
        if thresholds is not None:
            item["wred"] = {"min-threshold": thresholds.min_bytes,
                            "max-threshold": thresholds.max_bytes,
                            "max-drop-probability-percent": thresholds.probability_percent,
                            "enable-ecn": queue.ecn is not None}
        if queue.fast_cnp is not None:
            item["fast-cnp"] = {"enabled": queue.fast_cnp}
        queues.append(item)
    if queues:
        entry["queues"] = {"queue": queues}
    return entry


def to_tree(intent: Intent) -> dict[str, Any]:
    """The ``switch:`` tree of yang/msoctl-congestion.yang that holds ``intent``."""
    top: dict[str, Any] = {}
    fast = intent.fast_cnp
    if fast is not None:
        top["fast-cnp"] = fast_cnp_leaves(fast)
    if intent.ports:
        top["ports"] = {"port": [_port(name, port) for name, port in intent.ports.items()]}
    return {"switch": top}
