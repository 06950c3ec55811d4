"""The switch's gNMI faces, one suite over every face: OpenConfig with msoctl's augments,
OpenConfig with Arista's, SONiC's CONFIG_DB.

Each face is driven at its seam (``factory``, ``commit``, ``operational``), its switch
model on a stepped clock: the factory tree, one configuration (lossless priorities 3 and
4 with their headroom, ECN on queue 3, the PFC watchdog, fast CNP where the model has
it) and the chip configuration it makes, field by field; the operational tree mirroring
it; counters moving under the model's faults; and every kind of refusal, with its path
and code, each leaving the chip as it was. Then each face served by the switch device
over gNMI (raw stubs): Capabilities, a Set, a refused Set, counters in a Get, a factory
reset.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from gnmi_pb import gnmi_pb2, gnmi_pb2_grpc

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.gnmi.face import Face, FaceError
from emulators.loopthread import LoopThread
from emulators.switch.device import SwitchDevice
from emulators.switch.faces.openconfig import OpenConfigFace
from emulators.switch.faces.sonic import SonicFace
from emulators.switch.model import SwitchModel
from tests.support.switch_faces import (
    ARISTA,
    CONFIG_DB,
    ECN_MAX,
    ECN_MIN,
    ECN_PERCENT,
    LONG,
    MSO,
    PORTS,
    QOS,
    SHORT,
    XOFF,
    XON,
    Tree,
    oc_counters,
    oc_full,
    oc_queue_state,
    queue_name,
)


def sonic_full(face: Face) -> Tree:
    doc = face.factory()
    db = doc["CONFIG_DB"]["localhost"]
    db["CABLE_LENGTH"] = {"AZURE": {LONG: "30000m", SHORT: "300m"}}
    db["BUFFER_POOL"] = {"ingress_lossless_pool": {"type": "ingress", "mode": "static",
                                                   "size": "4000000000"}}
    db["BUFFER_PROFILE"] = {"pg_lossless_30km": {"pool": "ingress_lossless_pool", "size": "0",
                                                 "xoff": str(XOFF), "xon": str(XON)}}
    db["BUFFER_PG"] = {f"{LONG}|3-4": {"profile": "pg_lossless_30km"}}
    db["WRED_PROFILE"] = {"ROCE_ECN": {
        "wred_green_enable": "true", "ecn": "ecn_all", "green_min_threshold": str(ECN_MIN),
        "green_max_threshold": str(ECN_MAX), "green_drop_probability": str(ECN_PERCENT)}}
    db["SCHEDULER"] = {"scheduler.0": {"type": "DWRR", "weight": "50"}}
    db["QUEUE"] = {f"{LONG}|3": {"wred_profile": "ROCE_ECN", "scheduler": "scheduler.0"}}
    db["PORT_QOS_MAP"] = {LONG: {"pfc_enable": "3,4", "pfcwd_sw_enable": "3,4"}}
    db["PFC_WD"] = {LONG: {"action": "drop", "detection_time": "200",
                           "restoration_time": "400"},
                    "GLOBAL": {"POLL_INTERVAL": "100"}}
    return doc


def sonic_counters(op: Tree, port: str, queue_id: int) -> dict[str, int]:
    db = op["COUNTERS_DB"]["localhost"]
    queue = db["COUNTERS"][db["COUNTERS_QUEUE_NAME_MAP"][f"{port}:{queue_id}"]]
    port_counters = db["COUNTERS"][db["COUNTERS_PORT_NAME_MAP"][port]]
    return {"ecn-marked": int(queue["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"]),
            "dropped": int(queue["SAI_QUEUE_STAT_DROPPED_PACKETS"]),
            "watermark": int(queue["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"]),
            "pauses-received": int(port_counters[f"SAI_PORT_STAT_PFC_{queue_id}_RX_PKTS"]),
            "pauses-sent": int(port_counters[f"SAI_PORT_STAT_PFC_{queue_id}_TX_PKTS"])}


# ---- refusals ------------------------------------------------------------------------

@dataclass(frozen=True)
class Refusal:
    name: str
    change: Callable[[Tree], None]
    path: str
    code: str = "INVALID_ARGUMENT"


def _qos(doc: Tree) -> Tree:
    qos: Tree = doc["openconfig-qos:qos"]
    return qos


def _uniform(doc: Tree) -> Tree:
    config: Tree = _qos(doc)["queue-management-profiles"]["queue-management-profile"][0][
        "wred"]["uniform"]["config"]
    return config


def _interface(doc: Tree) -> Tree:
    interface: Tree = _qos(doc)["interfaces"]["interface"][0]
    return interface


def _out_queue(doc: Tree) -> Tree:
    queue: Tree = _interface(doc)["output"]["queues"]["queue"][0]
    return queue


def _factory_queue(doc: Tree, queue_id: int) -> Tree:
    queue: Tree = next(q for q in _qos(doc)["queues"]["queue"]
                       if q["config"]["queue-id"] == queue_id)
    return queue


def _set(mapping: Tree, key: str, value: Any) -> None:
    mapping[key] = value


PROFILE = f"{QOS}/queue-management-profiles/queue-management-profile[name=roce-ecn]"
UNIFORM = f"{PROFILE}/wred/uniform/config"
OC_IF = f"{QOS}/interfaces/interface[interface-id={LONG}]"
OUT_Q3 = f"{OC_IF}/output/queues/queue[name=queue3]"

OC_REFUSALS = (
    Refusal("unknown member", lambda d: _set(_uniform(d), "colour", "green"),
            f"{UNIFORM}/colour"),
    Refusal("member qualified where its module does not change",
            lambda d: _set(_qos(d), "openconfig-qos:queues", _qos(d).pop("queues")),
            f"{QOS}/openconfig-qos:queues"),
    Refusal("uint64 as a JSON number", lambda d: _set(_uniform(d), "min-threshold", ECN_MIN),
            f"{UNIFORM}/min-threshold"),
    Refusal("uint8 as a JSON string",
            lambda d: _set(_factory_queue(d, 3)["config"], "queue-id", "3"),
            f"{QOS}/queues/queue[name=queue3]/config/queue-id"),
    Refusal("boolean as a string", lambda d: _set(_uniform(d), "enable-ecn", "true"),
            f"{UNIFORM}/enable-ecn"),
    Refusal("percentage out of range",
            lambda d: _set(_uniform(d), "max-drop-probability-percent", 101),
            f"{UNIFORM}/max-drop-probability-percent"),
    Refusal("uint64 that is not a number",
            lambda d: _set(_uniform(d), "max-threshold", "30 MB"), f"{UNIFORM}/max-threshold"),
    Refusal("identity of no such speed",
            lambda d: _set(d["openconfig-interfaces:interfaces"]["interface"][0][
                "openconfig-if-ethernet:ethernet"]["config"], "port-speed",
                "openconfig-if-ethernet:SPEED_401GB"),
            f"/openconfig-interfaces:interfaces/interface[name={LONG}]"
            "/openconfig-if-ethernet:ethernet/config/port-speed"),
    Refusal("interface type unqualified (its identity is another module's)",
            lambda d: _set(d["openconfig-interfaces:interfaces"]["interface"][0]["config"],
                           "type", "ethernetCsmacd"),
            f"/openconfig-interfaces:interfaces/interface[name={LONG}]/config/type"),
    Refusal("mandatory interface type left out",
            lambda d: d["openconfig-interfaces:interfaces"]["interface"][0]["config"].pop(
                "type"),
            f"/openconfig-interfaces:interfaces/interface[name={LONG}]/config/type"),
    Refusal("list entry without its key", lambda d: _factory_queue(d, 5).pop("name"),
            f"{QOS}/queues/queue"),
    Refusal("key differing from config's",
            lambda d: _set(_factory_queue(d, 5)["config"], "name", "other"),
            f"{QOS}/queues/queue[name=queue5]/config/name"),
    Refusal("the same key twice",
            lambda d: _qos(d)["queues"]["queue"].append(copy.deepcopy(_factory_queue(d, 5))),
            f"{QOS}/queues/queue[name=queue5]"),
    Refusal("state data", lambda d: _set(_factory_queue(d, 3), "state", {"name": "queue3"}),
            f"{QOS}/queues/queue[name=queue3]/state"),
    Refusal("a profile that is not there",
            lambda d: _set(_out_queue(d)["config"], "queue-management-profile", "nope"),
            f"{OUT_Q3}/config/queue-management-profile", "FAILED_PRECONDITION"),
    Refusal("an output queue not in /qos/queues",
            lambda d: _qos(d)["queues"]["queue"].remove(_factory_queue(d, 3)),
            f"{OUT_Q3}/name", "FAILED_PRECONDITION"),
    Refusal("an interface-id that is no interface",
            lambda d: _set(_interface(d), "interface-id", "Ethernet99") or _set(
                _interface(d)["config"], "interface-id", "Ethernet99"),
            f"{QOS}/interfaces/interface[interface-id=Ethernet99]/interface-id",
            "FAILED_PRECONDITION"),
    Refusal("a port the switch does not have",
            lambda d: d["openconfig-interfaces:interfaces"]["interface"].append(
                {"name": "Ethernet99", "config": {"name": "Ethernet99",
                                                  "type": "iana-if-type:ethernetCsmacd"}}),
            "/openconfig-interfaces:interfaces/interface[name=Ethernet99]",
            "FAILED_PRECONDITION"),
    Refusal("a speed the chip does not run",
            lambda d: _set(d["openconfig-interfaces:interfaces"]["interface"][0][
                "openconfig-if-ethernet:ethernet"]["config"], "port-speed",
                "openconfig-if-ethernet:SPEED_25GB"),
            f"/openconfig-interfaces:interfaces/interface[name={LONG}]"
            "/openconfig-if-ethernet:ethernet/config/port-speed", "FAILED_PRECONDITION"),
    Refusal("two names for one queue-id",
            lambda d: _set(_factory_queue(d, 5)["config"], "queue-id", 3),
            f"{QOS}/queues/queue[name=queue5]/config/queue-id", "FAILED_PRECONDITION"),
    Refusal("thresholds in percent", lambda d: _set(_uniform(d), "min-threshold-percent", "5"),
            f"{UNIFORM}/min-threshold-percent", "FAILED_PRECONDITION"),
    Refusal("WRED minimum not below maximum (the chip's rule)",
            lambda d: _set(_uniform(d), "min-threshold", str(ECN_MAX)),
            f"{UNIFORM}/min-threshold", "FAILED_PRECONDITION"),
    Refusal("xon not below xoff (the chip's rule)",
            lambda d: _set(_interface(d)[f"{MSO}:headroom"]["config"], "xon-bytes", str(XOFF)),
            f"{OC_IF}/{MSO}:headroom/config/xon-bytes", "FAILED_PRECONDITION"),
    Refusal("fast CNP on a queue but not switch-wide (the chip's rule)",
            lambda d: _set(_qos(d)[f"{MSO}:fast-cnp"]["config"], "enabled", False),
            f"{OUT_Q3}/{MSO}:fast-cnp/config/enabled", "FAILED_PRECONDITION"),
    Refusal("CNP priority lossless (the chip's rule)",
            lambda d: _set(_qos(d)[f"{MSO}:fast-cnp"]["config"], "cnp-priority", 4),
            "lossless", "FAILED_PRECONDITION"),
)

MSOCTL_REFUSALS = (
    Refusal("watchdog action not of the enumeration",
            lambda d: _set(_interface(d)[f"{MSO}:pfc"]["watchdog"]["config"], "action", "alert"),
            f"{OC_IF}/{MSO}:pfc/watchdog/config/action"),
    Refusal("a priority above 7",
            lambda d: _set(_interface(d)[f"{MSO}:pfc"]["config"], "lossless-priorities", [3, 8]),
            f"{OC_IF}/{MSO}:pfc/config/lossless-priorities"),
    Refusal("lossless without headroom (the chip's rule)",
            lambda d: _interface(d).pop(f"{MSO}:headroom"),
            f"{OC_IF}/{MSO}:pfc/config/lossless-priorities", "FAILED_PRECONDITION"),
    Refusal("a watchdog slower than the chip's",
            lambda d: _set(_interface(d)[f"{MSO}:pfc"]["watchdog"]["config"],
                           "detection-time-ms", 60_001),
            f"{OC_IF}/{MSO}:pfc/watchdog/config/detection-time-ms"),
)

ARISTA_WATCHDOG = f"{QOS}/{ARISTA}:pfc/watchdog/config"
ARISTA_REFUSALS = (
    Refusal("msoctl's pfc container where Arista's is served",
            lambda d: _set(_interface(d), f"{MSO}:pfc",
                           {"config": {"lossless-priorities": [3, 4]}}),
            f"{OC_IF}/{MSO}:pfc"),
    Refusal("decimal64 as a JSON number",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"], "default-timeout",
                           0.2),
            f"{ARISTA_WATCHDOG}/default-timeout"),
    Refusal("decimal64 with more fraction digits than its type",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"], "default-timeout",
                           "0.205"),
            f"{ARISTA_WATCHDOG}/default-timeout"),
    Refusal("hex bitmap that is not hex",
            lambda d: _set(_interface(d)["output"][f"{ARISTA}:pfc"]["config"],
                           "priorities-no-drop", "1g"),
            f"{OC_IF}/output/{ARISTA}:pfc/config/priorities-no-drop"),
    Refusal("hex bitmap longer than its type",
            lambda d: _set(_interface(d)["output"][f"{ARISTA}:pfc"]["config"],
                           "priorities-no-drop", "018"),
            f"{OC_IF}/output/{ARISTA}:pfc/config/priorities-no-drop"),
    Refusal("an action of no such name",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"], "action", "drop"),
            f"{ARISTA_WATCHDOG}/action"),
    Refusal("an action the chip's watchdog does not have",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"], "action",
                           "NOTIFY_ONLY"),
            f"{ARISTA_WATCHDOG}/action", "FAILED_PRECONDITION"),
    Refusal("non-disruptive priorities",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"],
                           "non-disruptive-priority", "08"),
            f"{ARISTA_WATCHDOG}/non-disruptive-priority", "FAILED_PRECONDITION"),
    Refusal("a timeout under the chip's millisecond",
            lambda d: _set(_qos(d)[f"{ARISTA}:pfc"]["watchdog"]["config"], "default-timeout",
                           "0"),
            f"{ARISTA_WATCHDOG}/default-timeout", "FAILED_PRECONDITION"),
    Refusal("lossless without headroom (the chip's rule)",
            lambda d: _interface(d).pop(f"{MSO}:headroom"),
            f"{OC_IF}/output/{ARISTA}:pfc/config/priorities-no-drop", "FAILED_PRECONDITION"),
)


def _db(doc: Tree) -> Tree:
    db: Tree = doc["CONFIG_DB"]["localhost"]
    return db


def _row(doc: Tree, table: str, key: str) -> Tree:
    row: Tree = _db(doc)[table][key]
    return row


SONIC_REFUSALS = (
    Refusal("unknown table", lambda d: _set(_db(d), "FAST_CNP", {"global": {}}),
            f"{CONFIG_DB}/FAST_CNP"),
    Refusal("unknown field", lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "colour", "x"),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/colour"),
    Refusal("a value that is not a string",
            lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "green_min_threshold", ECN_MIN),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/green_min_threshold"),
    Refusal("a uint64 that is not a number",
            lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "green_max_threshold", "30MB"),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/green_max_threshold"),
    Refusal("not of the enumeration",
            lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "ecn", "ecn_maybe"),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/ecn"),
    Refusal("out of range", lambda d: _set(_row(d, "PFC_WD", LONG), "detection_time", "50"),
            f"{CONFIG_DB}/PFC_WD/{LONG}/detection_time"),
    Refusal("not of the pattern",
            lambda d: _set(_row(d, "PORT_QOS_MAP", LONG), "pfc_enable", "3;4"),
            f"{CONFIG_DB}/PORT_QOS_MAP/{LONG}/pfc_enable"),
    Refusal("a cable length without its unit",
            lambda d: _set(_row(d, "CABLE_LENGTH", "AZURE"), LONG, "30000"),
            f"{CONFIG_DB}/CABLE_LENGTH/AZURE/{LONG}"),
    Refusal("a key of the wrong shape",
            lambda d: _set(_db(d)["QUEUE"], LONG, {"wred_profile": "ROCE_ECN"}),
            f"{CONFIG_DB}/QUEUE/{LONG}"),
    Refusal("a priority group key out of its pattern",
            lambda d: _set(_db(d)["BUFFER_PG"], f"{LONG}|8", {"profile": "NULL"}),
            f"{CONFIG_DB}/BUFFER_PG/{LONG}|8"),
    Refusal("a mandatory field left out",
            lambda d: _row(d, "BUFFER_PROFILE", "pg_lossless_30km").pop("pool"),
            f"{CONFIG_DB}/BUFFER_PROFILE/pg_lossless_30km/pool"),
    Refusal("must: maximum threshold below the minimum",
            lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "green_max_threshold", "1000"),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/green_max_threshold"),
    Refusal("must: detection faster than the polling",
            lambda d: _set(_row(d, "PFC_WD", "GLOBAL"), "POLL_INTERVAL", "300"),
            f"{CONFIG_DB}/PFC_WD/{LONG}/detection_time"),
    Refusal("must: a port's field on GLOBAL",
            lambda d: _set(_row(d, "PFC_WD", "GLOBAL"), "action", "drop"),
            f"{CONFIG_DB}/PFC_WD/GLOBAL/action"),
    Refusal("a WRED profile that is not there",
            lambda d: _set(_row(d, "QUEUE", f"{LONG}|3"), "wred_profile", "NOPE"),
            f"{CONFIG_DB}/QUEUE/{LONG}|3/wred_profile", "FAILED_PRECONDITION"),
    Refusal("a buffer profile that is not there",
            lambda d: _set(_row(d, "BUFFER_PG", f"{LONG}|3-4"), "profile", "NOPE"),
            f"{CONFIG_DB}/BUFFER_PG/{LONG}|3-4/profile", "FAILED_PRECONDITION"),
    Refusal("a buffer pool that is not there",
            lambda d: _set(_row(d, "BUFFER_PROFILE", "pg_lossless_30km"), "pool", "NOPE"),
            f"{CONFIG_DB}/BUFFER_PROFILE/pg_lossless_30km/pool", "FAILED_PRECONDITION"),
    Refusal("a port not in PORT",
            lambda d: _set(_db(d)["PFC_WD"], "Ethernet99", {"detection_time": "200"}),
            f"{CONFIG_DB}/PFC_WD/Ethernet99", "FAILED_PRECONDITION"),
    Refusal("a port the switch does not have",
            lambda d: _set(_db(d)["PORT"], "Ethernet99", {"lanes": "99", "speed": "400000"}),
            f"{CONFIG_DB}/PORT/Ethernet99", "FAILED_PRECONDITION"),
    Refusal("a speed the chip does not run",
            lambda d: _set(_row(d, "PORT", LONG), "speed", "25000"),
            f"{CONFIG_DB}/PORT/{LONG}/speed", "FAILED_PRECONDITION"),
    Refusal("a lossless priority without a priority group",
            lambda d: _set(_db(d), "BUFFER_PG", {f"{LONG}|3": {"profile": "pg_lossless_30km"}}),
            f"{CONFIG_DB}/PORT_QOS_MAP/{LONG}/pfc_enable", "FAILED_PRECONDITION"),
    Refusal("overlapping priority groups",
            lambda d: _set(_db(d)["BUFFER_PG"], f"{LONG}|4", {"profile": "NULL"}),
            f"{CONFIG_DB}/BUFFER_PG/{LONG}|4", "FAILED_PRECONDITION"),
    Refusal("a dynamic headroom",
            lambda d: _set(_row(d, "BUFFER_PROFILE", "pg_lossless_30km"), "headroom_type",
                           "dynamic"),
            f"{CONFIG_DB}/BUFFER_PROFILE/pg_lossless_30km/headroom_type",
            "FAILED_PRECONDITION"),
    Refusal("a watchdog that only alerts",
            lambda d: _set(_row(d, "PFC_WD", LONG), "action", "alert"),
            f"{CONFIG_DB}/PFC_WD/{LONG}/action", "FAILED_PRECONDITION"),
    Refusal("a watchdog on some lossless priorities only",
            lambda d: _set(_row(d, "PORT_QOS_MAP", LONG), "pfcwd_sw_enable", "3"),
            f"{CONFIG_DB}/PORT_QOS_MAP/{LONG}/pfcwd_sw_enable", "FAILED_PRECONDITION"),
    Refusal("equal WRED thresholds (SONiC's rule allows them, the chip's does not)",
            lambda d: _set(_row(d, "WRED_PROFILE", "ROCE_ECN"), "green_max_threshold",
                           str(ECN_MIN)),
            f"{CONFIG_DB}/WRED_PROFILE/ROCE_ECN/green_min_threshold", "FAILED_PRECONDITION"),
    Refusal("a CPU queue", lambda d: _set(_db(d)["QUEUE"], "CPU|0", {}),
            f"{CONFIG_DB}/QUEUE/CPU|0", "FAILED_PRECONDITION"),
    Refusal("a queue the chip does not have",
            lambda d: _set(_db(d)["QUEUE"], f"{LONG}|8", {"wred_profile": "ROCE_ECN"}),
            f"{CONFIG_DB}/QUEUE/{LONG}|8", "FAILED_PRECONDITION"),
)


# ---- the faces -----------------------------------------------------------------------

@dataclass(frozen=True)
class Flavour:
    name: str
    make: Callable[[SwitchModel], Face]
    full: Callable[[Face], Tree]
    counters: Callable[[Tree, str, int], dict[str, int]]
    refusals: tuple[Refusal, ...]
    fast_cnp: bool
    watchdog_by_default: bool
    """Whether a port with no watchdog configured has the chip's (msoctl's default)."""
    short_cable_m: int | None
    models: set[str] = field(default_factory=set)


FLAVOURS = (
    Flavour("openconfig-msoctl",
            lambda m: OpenConfigFace(m, PORTS, augments="msoctl"), oc_full, oc_counters,
            OC_REFUSALS + MSOCTL_REFUSALS, True, True, None,
            {"openconfig-interfaces", "openconfig-if-ethernet", "openconfig-qos", MSO}),
    Flavour("openconfig-arista",
            lambda m: OpenConfigFace(m, PORTS, augments="arista"), oc_full, oc_counters,
            OC_REFUSALS + ARISTA_REFUSALS, True, False, None,
            {"openconfig-interfaces", "openconfig-if-ethernet", "openconfig-qos", MSO, ARISTA}),
    Flavour("sonic", lambda m: SonicFace(m, PORTS), sonic_full, sonic_counters,
            SONIC_REFUSALS, False, False, 300, {"sonic-db"}),
)


@dataclass
class Rig:
    flavour: Flavour
    clock: SteppedClock
    model: SwitchModel
    face: Face


@pytest.fixture(params=FLAVOURS, ids=lambda f: f.name)
def rig(request: pytest.FixtureRequest) -> Rig:
    clock = SteppedClock()
    model = SwitchModel(clock, PORTS)
    flavour: Flavour = request.param
    return Rig(flavour, clock, model, flavour.make(model))


def test_models_and_encodings_announced(rig: Rig) -> None:
    assert {m.name for m in rig.face.models} == rig.flavour.models
    if rig.flavour.name == "sonic":
        assert rig.face.encodings == ("JSON", "JSON_IETF")
        assert rig.face.models[0].organization == "SONiC"
    else:
        assert rig.face.encodings == ("JSON_IETF",)
        organizations = {m.name: m.organization for m in rig.face.models}
        assert organizations[MSO] == "MegaScaleOut"
        assert organizations.get(ARISTA, "Arista Networks, Inc.") == "Arista Networks, Inc."
        assert {m.name: m.version for m in rig.face.models}["openconfig-qos"] == "2.2.0"


def test_writable_tops(rig: Rig) -> None:
    tops = list(rig.face.factory())
    assert tops and all(rig.face.writable(top) for top in tops)
    assert not rig.face.writable("COUNTERS_DB")
    assert not rig.face.writable("openconfig-platform:components")


def test_factory_tree_holds_every_port_and_speed_and_nothing_else(rig: Rig) -> None:
    factory = rig.face.factory()
    if rig.flavour.name == "sonic":  # and the chip's buffer pools, as SONiC's templates
        chip = rig.model
        assert factory == {"CONFIG_DB": {"localhost": {
            "PORT": {LONG: {"lanes": "0,1,2,3,4,5,6,7", "speed": "400000"},
                     SHORT: {"lanes": "8,9,10,11,12,13,14,15", "speed": "400000"}},
            "BUFFER_POOL": {
                "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic",
                                          "size": str(chip.lossless_pool_bytes)},
                "egress_lossy_pool": {"type": "egress", "mode": "dynamic", "size": str(
                    chip.total_bytes - chip.lossless_pool_bytes)}}}}}
    else:
        assert [i["name"] for i in factory["openconfig-interfaces:interfaces"]["interface"]] \
            == [LONG, SHORT]
        for interface in factory["openconfig-interfaces:interfaces"]["interface"]:
            assert interface["config"] == {"name": interface["name"],
                                           "type": "iana-if-type:ethernetCsmacd"}
            assert interface["openconfig-if-ethernet:ethernet"] == {
                "config": {"port-speed": "openconfig-if-ethernet:SPEED_400GB"}}
        queues = factory["openconfig-qos:qos"]["queues"]["queue"]
        assert sorted(q["config"]["queue-id"] for q in queues) == list(range(8))
        assert all(q["name"] != str(q["config"]["queue-id"]) for q in queues)
        assert set(factory["openconfig-qos:qos"]) == {"queues"}


def test_factory_tree_commits_to_ports_with_their_speeds(rig: Rig) -> None:
    rig.face.commit(rig.face.factory())
    config = rig.model.config
    assert set(config.ports) == set(PORTS)
    assert not config.fast_cnp.enabled
    for name in PORTS:
        port = config.port(name)
        assert port.speed == "400G"
        assert port.lossless_priorities == frozenset()
        assert port.xoff_bytes is None and port.queues == {}
        assert port.watchdog.enabled is rig.flavour.watchdog_by_default


def test_full_configuration_reaches_the_chip_field_by_field(rig: Rig) -> None:
    rig.face.commit(rig.flavour.full(rig.face))
    config = rig.model.config
    assert config.fast_cnp.enabled is rig.flavour.fast_cnp
    assert config.fast_cnp.cnp_priority == 6 and config.fast_cnp.cnp_dscp == 48
    port = config.port(LONG)
    assert port.speed == "400G"
    assert port.cable_length_meters == 30_000
    assert port.lossless_priorities == frozenset({3, 4})
    assert (port.xoff_bytes, port.xon_bytes) == (XOFF, XON)
    assert port.watchdog.enabled is True
    assert port.watchdog.detection_seconds == pytest.approx(0.2)
    assert port.watchdog.restoration_seconds == pytest.approx(0.4)
    assert port.watchdog.action == "drop"
    assert set(port.queues) == {3}
    wred = port.queue(3).wred
    assert (wred.min_threshold_bytes, wred.max_threshold_bytes) == (ECN_MIN, ECN_MAX)
    assert wred.max_probability_percent == ECN_PERCENT
    assert wred.enable_ecn is True
    assert port.queue(3).fast_cnp is rig.flavour.fast_cnp
    assert port.queue(4).wred.has_thresholds is False
    short = config.port(SHORT)
    assert short.speed == "400G"
    assert short.cable_length_meters == rig.flavour.short_cable_m
    assert short.lossless_priorities == frozenset() and short.queues == {}


def test_a_refused_commit_of_the_full_configuration_changes_nothing(rig: Rig) -> None:
    rig.face.commit(rig.face.factory())
    before = rig.model.config
    doc = rig.flavour.full(rig.face)
    rig.flavour.refusals[-1].change(doc)
    with pytest.raises(FaceError):
        rig.face.commit(doc)
    assert rig.model.config is before


def _pairs(value: Any, path: str = "") -> Iterator[tuple[str, Tree, Tree]]:
    """Every (path, config, state) pair of containers under ``value``."""
    if isinstance(value, list):
        for index, entry in enumerate(value):
            yield from _pairs(entry, f"{path}[{index}]")
    elif isinstance(value, dict):
        if isinstance(value.get("config"), dict):
            yield path, value["config"], value.get("state")
        for member, child in value.items():
            if member not in ("config", "state"):
                yield from _pairs(child, f"{path}/{member}")


def test_operational_state_mirrors_the_configuration(rig: Rig) -> None:
    doc = rig.flavour.full(rig.face)
    rig.face.commit(doc)
    op = rig.face.operational(copy.deepcopy(doc))
    if rig.flavour.name == "sonic":
        assert op["CONFIG_DB"] == doc["CONFIG_DB"]
        counters = op["COUNTERS_DB"]["localhost"]
        assert set(counters["COUNTERS_PORT_NAME_MAP"]) == set(PORTS)
        assert len(counters["COUNTERS_QUEUE_NAME_MAP"]) == 8 * len(PORTS)
        oid = counters["COUNTERS_QUEUE_NAME_MAP"][f"{LONG}:3"]
        assert counters["COUNTERS_QUEUE_INDEX_MAP"][oid] == "3"
        assert counters["COUNTERS_QUEUE_PORT_MAP"][oid] == \
            counters["COUNTERS_PORT_NAME_MAP"][LONG]
        assert set(counters["COUNTERS"][oid]) == {
            "SAI_QUEUE_STAT_DROPPED_PACKETS", "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS",
            "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"}
        return
    pairs = list(_pairs(op))
    assert len(pairs) > 10
    for path, config, state in pairs:
        assert state is not None, path
        assert {k: state.get(k) for k in config} == config, path
    state = oc_queue_state(op, LONG, 3)
    assert state["name"] == queue_name(op, 3)
    assert state["queue-management-profile"] == "roce-ecn"
    assert all(isinstance(state[leaf], str) for leaf in
               ("ecn-marked-pkts", "dropped-pkts", "max-queue-len"))
    # the counters of every port's every named queue, configured or not
    assert oc_counters(op, SHORT, 0)["dropped"] == 0


def test_counters_move_under_congestion(rig: Rig) -> None:
    rig.face.commit(rig.flavour.full(rig.face))
    before = rig.flavour.counters(rig.face.operational(rig.flavour.full(rig.face)), LONG, 3)
    assert before["ecn-marked"] == 0 and before["watermark"] == 0
    rig.model.faults.inject(Fault("congestion", target=f"{LONG}@3", seconds=2e-3, count=4))
    rig.clock.advance(5e-3)
    after = rig.flavour.counters(rig.face.operational(rig.flavour.full(rig.face)), LONG, 3)
    assert after["ecn-marked"] > 0
    assert after["watermark"] > 0
    assert after["ecn-marked"] == rig.model.counters(LONG, 3)["ecn-marked-packets"]
    if rig.flavour.fast_cnp:
        assert after["switch-cnps"] > 0
    quiet = rig.flavour.counters(rig.face.operational(rig.flavour.full(rig.face)), SHORT, 3)
    assert quiet["ecn-marked"] == 0


def test_pause_counters_move_under_a_pfc_storm(rig: Rig) -> None:
    rig.face.commit(rig.flavour.full(rig.face))
    rig.model.faults.inject(Fault("pfc_storm", target=f"{LONG}@4"))
    rig.clock.advance(1e-3)
    counters = rig.flavour.counters(rig.face.operational(rig.flavour.full(rig.face)), LONG, 4)
    assert counters["pauses-received"] > 20  # one per 41.9 us at 400G
    assert counters["pauses-received"] == \
        rig.model.counters(LONG, 4)["pfc-pause-frames-received"]


def _refusal_cases() -> list[Any]:
    return [pytest.param(flavour, refusal, id=f"{flavour.name}: {refusal.name}")
            for flavour in FLAVOURS for refusal in flavour.refusals]


@pytest.mark.parametrize(("flavour", "refusal"), _refusal_cases())
def test_refusal_names_the_node_and_leaves_the_chip_as_it_was(flavour: Flavour,
                                                             refusal: Refusal) -> None:
    model = SwitchModel(SteppedClock(), PORTS)
    face = flavour.make(model)
    good = flavour.full(face)
    face.commit(good)
    before = model.config
    doc = copy.deepcopy(good)
    refusal.change(doc)
    with pytest.raises(FaceError) as raised:
        face.commit(doc)
    error = raised.value
    assert error.code == refusal.code, error
    if refusal.path == "lossless":  # the priority list's node, whichever model has it
        assert error.path is not None and (error.path.endswith("lossless-priorities")
                                           or error.path.endswith("priorities-no-drop")), error
    else:
        assert error.path == refusal.path, error
    assert model.config is before
    face.commit(good)  # and the device takes the good one again


def test_state_data_anywhere_is_refused(rig: Rig) -> None:
    if rig.flavour.name == "sonic":
        doc = rig.face.factory()
        doc["COUNTERS_DB"] = {"localhost": {}}
        with pytest.raises(FaceError) as raised:
            rig.face.commit(doc)
        assert raised.value.code == "INVALID_ARGUMENT"
        assert raised.value.path == "/sonic-db:COUNTERS_DB"
        return
    doc = rig.flavour.full(rig.face)
    op = rig.face.operational(copy.deepcopy(doc))
    with pytest.raises(FaceError) as raised:
        rig.face.commit(op)
    assert raised.value.code == "INVALID_ARGUMENT"
    assert raised.value.path is not None and raised.value.path.endswith("/state")
    assert "state data" in raised.value.message


def test_a_list_entry_may_leave_its_config_key_out(rig: Rig) -> None:
    if rig.flavour.name == "sonic":
        pytest.skip("CONFIG_DB rows carry their key only in the key")
    doc = rig.flavour.full(rig.face)
    del _out_queue(doc)["config"]["name"]
    rig.face.commit(doc)
    assert rig.model.config.port(LONG).queue(3).wred.enable_ecn is True
    assert oc_queue_state(rig.face.operational(doc), LONG, 3)["name"] == queue_name(doc, 3)


def test_the_face_follows_a_model_given_as_a_callable() -> None:
    clock = SteppedClock()
    models = [SwitchModel(clock, PORTS)]
    face = OpenConfigFace(lambda: models[-1], PORTS)
    face.commit(oc_full(face))
    models.append(SwitchModel(clock, PORTS))
    face.commit(face.factory())
    assert models[0].config.port(LONG).lossless_priorities == frozenset({3, 4})
    assert models[1].config.port(LONG).lossless_priorities == frozenset()


# ---- the faces served by the device ----------------------------------------------------

USER, PASSWORD = "admin", "s3cret"
AUTH = (("username", USER), ("password", PASSWORD))


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("switch-faces")
    thread.start()
    yield thread
    thread.stop()


def _gnmi_path(*elems: str) -> gnmi_pb2.Path:
    return gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=elem) for elem in elems])


def _get(stub: gnmi_pb2_grpc.gNMIStub, top: str, data_type: int) -> Tree:
    response = stub.Get(gnmi_pb2.GetRequest(path=[_gnmi_path(top)], type=data_type,
                                            encoding=gnmi_pb2.JSON_IETF),
                        metadata=AUTH, timeout=5.0)
    [notification] = response.notification
    [update] = notification.update
    value: Tree = json.loads(update.val.json_ietf_val)
    return {top: value} if top not in value else value


def _replace(stub: gnmi_pb2_grpc.gNMIStub, doc: Tree) -> None:
    replaces = [gnmi_pb2.Update(path=_gnmi_path(top), val=gnmi_pb2.TypedValue(
        json_ietf_val=json.dumps(value).encode())) for top, value in doc.items()]
    stub.Set(gnmi_pb2.SetRequest(replace=replaces), metadata=AUTH, timeout=5.0)


@pytest.mark.parametrize("flavour", FLAVOURS, ids=lambda f: f.name)
def test_the_device_serves_its_face_over_gnmi(loop: LoopThread, flavour: Flavour) -> None:
    clock = SteppedClock()
    face, _, augments = flavour.name.partition("-")
    device = SwitchDevice("sw-faces", PORTS, clock=clock, users={USER: PASSWORD},
                          face=face, augments=augments or "msoctl")
    assert device.datastores is None and device.face is not None
    assert device.model.config.port(LONG).speed == "400G"  # the face's factory, committed
    with pytest.raises(RuntimeError, match="gNMI"):
        device.known_hosts_line()
    loop.call(device.start())
    try:
        with grpc.insecure_channel(f"127.0.0.1:{device.port}") as channel:
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            capabilities = stub.Capabilities(gnmi_pb2.CapabilityRequest(), metadata=AUTH,
                                             timeout=5.0)
            assert {m.name for m in capabilities.supported_models} == flavour.models
            assert len(capabilities.extension) == 1  # commit confirmed offered
            top = next(iter(device.face.factory()))
            full = flavour.full(device.face)
            _replace(stub, full)
            port = device.model.config.port(LONG)
            assert port.lossless_priorities == frozenset({3, 4}) and port.xoff_bytes == XOFF
            assert port.queue(3).wred.enable_ecn is True
            bad = copy.deepcopy(full)
            flavour.refusals[0].change(bad)
            with pytest.raises(grpc.RpcError) as raised:
                _replace(stub, bad)
            assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
            assert flavour.refusals[0].path in raised.value.details()  # type: ignore[attr-defined]
            assert device.model.config.port(LONG) is port
            device.faults.inject(Fault("congestion", target=f"{LONG}@3", seconds=2e-3))
            clock.advance(5e-3)
            everything = _get(stub, "COUNTERS_DB" if face == "sonic" else "openconfig-qos:qos",
                              gnmi_pb2.GetRequest.ALL)
            view = {**full, **everything}
            assert flavour.counters(view, LONG, 3)["ecn-marked"] > 0
            device.factory_reset()
            assert device.model.config.port(LONG).lossless_priorities == frozenset()
            assert _get(stub, top, gnmi_pb2.GetRequest.CONFIG)[top] == \
                device.face.factory()[top]
    finally:
        loop.call(device.stop())
    assert device.server is None


def test_a_switch_serves_one_face() -> None:
    with pytest.raises(ValueError, match="face one of"):
        SwitchDevice("sw", PORTS, clock=SteppedClock(), face="netconf")
    with pytest.raises(ValueError, match="augments one of"):
        SwitchDevice("sw", PORTS, clock=SteppedClock(), face="openconfig", augments="nokia")
    netconf = SwitchDevice("sw", PORTS, clock=SteppedClock())
    assert netconf.face is None and netconf.datastores is not None
