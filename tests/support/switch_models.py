"""What the switch model tests share: factory configurations of an OpenConfig and a SONiC
switch as each holds them out of the box (written from the published models), and a
full intent."""

from __future__ import annotations

from typing import Any

from drivers.switch.intent import FastCnp, Intent, Port, Queue, Thresholds, Watchdog
from drivers.switch.models.openconfig import INTERFACES, QOS
from drivers.switch.models.sonic import CONFIG_DB

PORTS = ("Ethernet1", "Ethernet2")


def oc_factory() -> dict[Any, Any]:
    """Queues named by the unit (TC0..TC7), ports listed, nothing else."""
    return {
        QOS: {"queues": {"queue": [{"name": f"TC{n}", "config": {"name": f"TC{n}",
                                                                 "queue-id": n}}
                                   for n in range(8)]}},
        INTERFACES: {"interface": [{"name": name, "config": {"name": name}} for name in PORTS]},
    }


def sonic_factory() -> dict[Any, Any]:
    """Ports, the lossless pool, cable lengths and queues' schedulers, as a SONiC
    switch's minigraph leaves them."""
    return {CONFIG_DB: {
        "PORT": {name: {"speed": "100000", "admin_status": "up"} for name in PORTS},
        "BUFFER_POOL": {"ingress_lossless_pool": {"type": "ingress", "mode": "dynamic",
                                                  "size": "4000000000"}},
        "CABLE_LENGTH": {"AZURE": {name: "5m" for name in PORTS}},
        "QUEUE": {f"{name}|{n}": {"scheduler": "scheduler.0"} for name in PORTS
                  for n in range(8)},
    }}


def full_intent(*, fast: bool) -> Intent:
    """Two ports, both lossless priorities 3 and 4 with headroom and a watchdog, ECN on
    queue 3, WRED on queue 1; fast CNP when ``fast``."""
    dog = Watchdog(enabled=True, detection_ms=200, restoration_ms=400, action="drop")
    ports = {
        name: Port(speed="400G", cable_length_m=30_010 + i, lossless_priorities=(3, 4),
                   xoff_bytes=16_094_208 + i, xon_bytes=8192, pfc_watchdog=dog,
                   queues={3: Queue(ecn=Thresholds(1_500_000, 15_000_000, 5),
                                    fast_cnp=True if fast else None),
                           1: Queue(wred=Thresholds(100_000, 900_000, 20))})
        for i, name in enumerate(PORTS)}
    return Intent(ports=ports, fast_cnp=FastCnp(enabled=True, cnp_dscp=48, cnp_priority=6,
                                                min_interval_us=50) if fast else None)



WANT: dict[str, Any] = {"congestion_control": {"ports": {
    name: {"speed": "400G", "cable_length_m": 30_010, "lossless_priorities": [3, 4],
           "xoff_bytes": 23_789_958, "xon_bytes": 20_480,
           "pfc_watchdog": {"enabled": True, "detection_ms": 200, "restoration_ms": 200,
                            "action": "drop"},
           "queues": {3: {"ecn": {"min_bytes": 3_787_879, "max_bytes": 30_303_030,
                                  "probability_percent": 20}},
                      1: {"wred": {"min_bytes": 100_000, "max_bytes": 900_000,
                                   "probability_percent": 50}}}}
    for name in ("Ethernet1", "Ethernet2")}}}
"""One WANT document in the operator's words, for two ports (no fast CNP: every model
takes it)."""

FAST: dict[str, Any] = {"congestion_control": {
    "fast_cnp": {"enabled": True, "cnp_dscp": 48, "cnp_priority": 6},
    "ports": {"Ethernet1": {"speed": "400G", "lossless_priorities": [3],
                            "xoff_bytes": 23_789_958, "xon_bytes": 20_480,
                            "queues": {3: {"fast_cnp": True}}}}}}
"""A WANT document with fast CNP, which a SONiC switch refuses."""
