"""What the switch faces' tests share: the ports of the rig, a full OpenConfig
configuration written from the published model, and finding a queue's name the way a
client does, by reading."""

from __future__ import annotations

from typing import Any

from emulators.gnmi.face import Face
from emulators.switch.faces.openconfig import OpenConfigFace
from emulators.switch.model import PhysicalPort

Tree = dict[str, Any]

LONG, SHORT = "Ethernet0", "Ethernet8"
PORTS = {LONG: PhysicalPort("400G", 30_000), SHORT: PhysicalPort("400G", 300)}
XOFF, XON = 23_789_958, 20_480
ECN_MIN, ECN_MAX, ECN_PERCENT = 3_787_879, 30_303_030, 20
MSO, ARISTA = "msoctl-qos-augments", "arista-qos-augments"
QOS = "/openconfig-qos:qos"
CONFIG_DB = "/sonic-db:CONFIG_DB/localhost"


# ---- the OpenConfig documents --------------------------------------------------------

def queue_name(doc: Tree, queue_id: int) -> str:
    """The name the device gives the queue ``queue_id``, as a client finds it: by reading."""
    name: str = next(q["name"] for q in doc["openconfig-qos:qos"]["queues"]["queue"]
                     if q["config"]["queue-id"] == queue_id)
    return name


def oc_full(face: Face) -> Tree:
    assert isinstance(face, OpenConfigFace)
    doc = face.factory()
    qos = doc["openconfig-qos:qos"]
    q3 = queue_name(doc, 3)
    qos["queue-management-profiles"] = {"queue-management-profile": [{
        "name": "roce-ecn", "config": {"name": "roce-ecn"},
        "wred": {"uniform": {"config": {
            "min-threshold": str(ECN_MIN), "max-threshold": str(ECN_MAX),
            "max-drop-probability-percent": ECN_PERCENT, "enable-ecn": True}}}}]}
    qos[f"{MSO}:fast-cnp"] = {"config": {"enabled": True, "cnp-dscp": 48, "cnp-priority": 6}}
    interface: Tree = {
        "interface-id": LONG, "config": {"interface-id": LONG},
        "output": {"queues": {"queue": [{
            "name": q3, "config": {"name": q3, "queue-management-profile": "roce-ecn"},
            f"{MSO}:fast-cnp": {"config": {"enabled": True}}}]}},
        f"{MSO}:headroom": {"config": {"cable-length-meters": 30_000,
                                       "xoff-bytes": str(XOFF), "xon-bytes": str(XON)}},
    }
    if face.augments == "msoctl":
        interface[f"{MSO}:pfc"] = {
            "config": {"lossless-priorities": [3, 4]},
            "watchdog": {"config": {"enabled": True, "detection-time-ms": 200,
                                    "restoration-time-ms": 400, "action": "drop"}}}
    else:
        interface["output"][f"{ARISTA}:pfc"] = {"config": {"priorities-no-drop": "18"}}
        qos[f"{ARISTA}:pfc"] = {"watchdog": {"config": {
            "default-timeout": "0.20", "default-recovery-time": "0.40",
            "default-polling-interval": "0.100", "action": "DROP"}}}
    qos["interfaces"] = {"interface": [interface]}
    return doc


def oc_queue_state(op: Tree, port: str, queue_id: int) -> Tree:
    name = queue_name(op, queue_id)
    interface = next(i for i in op["openconfig-qos:qos"]["interfaces"]["interface"]
                     if i["interface-id"] == port)
    state: Tree = next(q for q in interface["output"]["queues"]["queue"]
                       if q["name"] == name)["state"]
    return state


def oc_counters(op: Tree, port: str, queue_id: int) -> dict[str, int]:
    state = oc_queue_state(op, port, queue_id)
    queue = next(q for i in op["openconfig-qos:qos"]["interfaces"]["interface"]
                 if i["interface-id"] == port for q in i["output"]["queues"]["queue"]
                 if q["name"] == queue_name(op, queue_id))
    return {"ecn-marked": int(state["ecn-marked-pkts"]),
            "dropped": int(state["dropped-pkts"]),
            "watermark": int(state["max-queue-len"]),
            "pauses-received": int(state[f"{MSO}:pfc-pause-frames-received"]),
            "pauses-sent": int(state[f"{MSO}:pfc-pause-frames-sent"]),
            "switch-cnps": int(queue[f"{MSO}:fast-cnp"]["state"]["switch-generated-cnps"])}


# ---- the SONiC documents -------------------------------------------------------------
