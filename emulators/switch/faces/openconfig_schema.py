"""The OpenConfig nodes the switch's OpenConfig face serves, restated from the published YANG.

One row per configuration node, keyed by its path in RFC 7951 member names (a member is
qualified by its module at the top and where an augment changes the module). A reviewer
holds this table beside ``pyang -f tree`` of the modules:

- openconfig-interfaces 3.8.1 (revision 2026-01-06) and its augment
  openconfig-if-ethernet 2.18.0 (2026-06-22): the interface's name, type, description,
  enabled, mtu and the Ethernet port speed;
- openconfig-qos 2.2.0 (2026-04-30; submodules -elements, -interfaces, -mem-mgmt):
  queues, queue-management profiles (WRED only: the chip has no RED, as EOS), buffer
  allocation profiles, and per interface the interface reference, the output's buffer
  profile and output queues;
- arista-qos-augments 0.0.4 (2020-11-30, aristanetworks/yang EOS-4.36.1F): its PFC
  containers only (the switch-wide watchdog, the interface's no-drop priorities);
- msoctl-qos-augments (2026-12-07, yang/msoctl-qos-augments.yang): fast CNP, headroom,
  and its PFC container where no vendor augment gives PFC.

Left out of every module (a member of them is refused as unknown): classifiers,
forwarding groups, scheduler policies, RED, the input side of an interface, VOQs,
packet trimming, subinterfaces and the rest of openconfig-interfaces; of Arista's module
its queue scheduling and ECN augments (the chip takes WRED from OpenConfig's profiles).

Every ``config`` container here has a ``state`` sibling (``config false``) in its module,
which mirrors it; a Set may not write one. :data:`COUNTERS` lists what the device adds
to the state containers from the chip's counters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["container", "list", "leaf", "leaf-list"]
JsonKind = Literal["number", "string", "boolean"]

OC = "openconfig"
ARISTA_PFC = "arista-pfc"
MSOCTL_FAST_CNP = "msoctl-fast-cnp"
MSOCTL_HEADROOM = "msoctl-headroom"
MSOCTL_PFC = "msoctl-pfc"
MSOCTL_PFC_COUNTERS = "msoctl-pfc-counters"
"""Parts of the table a face serves: OpenConfig's own, and each augment's."""

PARTS: dict[str, frozenset[str]] = {
    "msoctl": frozenset({OC, MSOCTL_FAST_CNP, MSOCTL_HEADROOM, MSOCTL_PFC, MSOCTL_PFC_COUNTERS}),
    "arista": frozenset({OC, ARISTA_PFC, MSOCTL_FAST_CNP, MSOCTL_HEADROOM, MSOCTL_PFC_COUNTERS}),
}
"""The parts served with each set of augments (``OpenConfigFace(augments=...)``): with
Arista's, PFC is Arista's and the msoctl module's ``pfc`` container is unknown."""

ARISTA = "arista-qos-augments"
MSOCTL = "msoctl-qos-augments"
IF_ETH = "openconfig-if-ethernet"


@dataclass(frozen=True)
class LeafType:
    """A leaf's YANG type, and the JSON value RFC 7951 section 6 writes for it."""

    name: str
    json: JsonKind
    low: int | None = None
    high: int | None = None
    enums: tuple[str, ...] = ()
    identities: tuple[str, ...] = ()
    """Qualified names ``module:IDENTITY`` an identityref takes."""
    identity_module: str | None = None
    """For an identityref whose identities are not listed: the module they belong to."""
    pattern: str | None = None
    length: tuple[int, int] | None = None
    fraction_digits: int | None = None


def _uint(bits: int, name: str | None = None, *, low: int = 0, high: int | None = None,
          ) -> LeafType:
    # RFC 7951 6.1: 64-bit integers are JSON strings, the others JSON numbers.
    return LeafType(name or f"uint{bits}", "string" if bits == 64 else "number", low,
                    (1 << bits) - 1 if high is None else high)


STRING = LeafType("string", "string")
BOOLEAN = LeafType("boolean", "boolean")
UINT8 = _uint(8)
UINT16 = _uint(16)
UINT32 = _uint(32)
UINT64 = _uint(64)
INT32 = LeafType("int32", "number", -(1 << 31), (1 << 31) - 1)
PERCENTAGE = _uint(8, "oc-types:percentage", high=100)
UINT64_PERCENT = _uint(64, "uint64 (0..100)", high=100)
DSCP = _uint(8, "oc-inet:dscp", high=63)
PRIORITY = _uint(8, "msoctl-qos-augments:priority", high=7)
HEX_BITMAP = LeafType("oc-yang:hex-string (1..2)", "string", pattern="[0-9a-fA-F]*",
                      length=(1, 2))
SECONDS_2 = LeafType("decimal64 (fraction-digits 2)", "string", fraction_digits=2)
SECONDS_3 = LeafType("decimal64 (fraction-digits 3)", "string", fraction_digits=3)
INTERFACE_TYPE = LeafType("identityref (ietf-if:interface-type)", "string",
                          identity_module="iana-if-type")
PORT_SPEED = LeafType("identityref (oc-eth:ETHERNET_SPEED)", "string", identities=tuple(
    f"{IF_ETH}:SPEED_{speed}" for speed in (
        "10MB", "100MB", "1GB", "2500MB", "5GB", "10GB", "25GB", "40GB", "50GB", "100GB",
        "200GB", "400GB", "600GB", "800GB", "1600GB", "UNKNOWN")))
SHARED_BUFFER_LIMIT_TYPE = LeafType(
    "identityref (oc-qos:SHARED_BUFFER_LIMIT_TYPE)", "string",
    identities=("openconfig-qos:STATIC", "openconfig-qos:DYNAMIC_BASED_ON_SCALING_FACTOR"))
ARISTA_WATCHDOG_ACTION = LeafType("arista-qos-augments:watchdog-action", "string", enums=(
    "INVALID", "ERROR_DISABLE", "DROP", "FORCED_DROP", "IGNORE_PFC", "NOTIFY_ONLY"))
MSOCTL_WATCHDOG_ACTION = LeafType("enumeration", "string", enums=("drop", "forward"))


@dataclass(frozen=True)
class Node:
    """One configuration node. A list's key member has the type of ``config/<key>``."""

    kind: Kind
    part: str = OC
    type: LeafType | None = None
    key: str | None = None
    ref: str | None = None
    """A reference (a leafref, or a name OpenConfig means to be one): the path of the
    list whose key it names."""
    mandatory: bool = False


def container(part: str = OC) -> Node:
    return Node("container", part)


def keyed(key: str, part: str = OC) -> Node:
    return Node("list", part, key=key)


def leaf(type_: LeafType, part: str = OC, *, ref: str | None = None,
         mandatory: bool = False) -> Node:
    return Node("leaf", part, type_, ref=ref, mandatory=mandatory)


IF = "/openconfig-interfaces:interfaces"
Q = "/openconfig-qos:qos"
QUEUES = f"{Q}/queues/queue"
PROFILES = f"{Q}/queue-management-profiles/queue-management-profile"
BUFFER_PROFILES = f"{Q}/buffer-allocation-profiles/buffer-allocation-profile"
QOS_IF = f"{Q}/interfaces/interface"
OUT_QUEUES = f"{QOS_IF}/output/queues/queue"
INTERFACES = f"{IF}/interface"

NODES: dict[str, Node] = {
    # openconfig-interfaces, openconfig-if-ethernet
    IF: container(),
    INTERFACES: keyed("name"),
    f"{INTERFACES}/config": container(),
    f"{INTERFACES}/config/name": leaf(STRING),
    f"{INTERFACES}/config/type": leaf(INTERFACE_TYPE, mandatory=True),
    f"{INTERFACES}/config/description": leaf(STRING),
    f"{INTERFACES}/config/enabled": leaf(BOOLEAN),
    f"{INTERFACES}/config/mtu": leaf(UINT16),
    f"{INTERFACES}/{IF_ETH}:ethernet": container(),
    f"{INTERFACES}/{IF_ETH}:ethernet/config": container(),
    f"{INTERFACES}/{IF_ETH}:ethernet/config/port-speed": leaf(PORT_SPEED),
    # openconfig-qos (-elements): queues
    Q: container(),
    f"{Q}/queues": container(),
    QUEUES: keyed("name"),
    f"{QUEUES}/config": container(),
    f"{QUEUES}/config/name": leaf(STRING),
    f"{QUEUES}/config/queue-id": leaf(UINT8),
    # openconfig-qos (-mem-mgmt): queue management profiles, WRED
    f"{Q}/queue-management-profiles": container(),
    PROFILES: keyed("name"),
    f"{PROFILES}/config": container(),
    f"{PROFILES}/config/name": leaf(STRING),
    f"{PROFILES}/wred": container(),
    f"{PROFILES}/wred/uniform": container(),
    f"{PROFILES}/wred/uniform/config": container(),
    f"{PROFILES}/wred/uniform/config/min-threshold": leaf(UINT64),
    f"{PROFILES}/wred/uniform/config/max-threshold": leaf(UINT64),
    f"{PROFILES}/wred/uniform/config/min-threshold-percent": leaf(UINT64_PERCENT),
    f"{PROFILES}/wred/uniform/config/max-threshold-percent": leaf(UINT64_PERCENT),
    f"{PROFILES}/wred/uniform/config/enable-ecn": leaf(BOOLEAN),
    f"{PROFILES}/wred/uniform/config/drop": leaf(BOOLEAN),
    f"{PROFILES}/wred/uniform/config/weight": leaf(UINT32),
    f"{PROFILES}/wred/uniform/config/max-drop-probability-percent": leaf(PERCENTAGE),
    # openconfig-qos (-mem-mgmt): buffer allocation profiles
    f"{Q}/buffer-allocation-profiles": container(),
    BUFFER_PROFILES: keyed("name"),
    f"{BUFFER_PROFILES}/config": container(),
    f"{BUFFER_PROFILES}/config/name": leaf(STRING),
    f"{BUFFER_PROFILES}/queues": container(),
    f"{BUFFER_PROFILES}/queues/queue": keyed("name"),
    f"{BUFFER_PROFILES}/queues/queue/config": container(),
    f"{BUFFER_PROFILES}/queues/queue/config/name": leaf(STRING, ref=QUEUES),
    f"{BUFFER_PROFILES}/queues/queue/config/dedicated-buffer": leaf(UINT64),
    f"{BUFFER_PROFILES}/queues/queue/config/use-shared-buffer": leaf(BOOLEAN),
    f"{BUFFER_PROFILES}/queues/queue/config/shared-buffer-limit-type":
        leaf(SHARED_BUFFER_LIMIT_TYPE),
    f"{BUFFER_PROFILES}/queues/queue/config/static-shared-buffer-limit": leaf(UINT32),
    f"{BUFFER_PROFILES}/queues/queue/config/dynamic-limit-scaling-factor": leaf(INT32),
    # openconfig-qos (-interfaces)
    f"{Q}/interfaces": container(),
    QOS_IF: keyed("interface-id"),
    f"{QOS_IF}/config": container(),
    f"{QOS_IF}/config/interface-id": leaf(STRING, ref=INTERFACES),
    f"{QOS_IF}/interface-ref": container(),
    f"{QOS_IF}/interface-ref/config": container(),
    f"{QOS_IF}/interface-ref/config/interface": leaf(STRING, ref=INTERFACES),
    f"{QOS_IF}/output": container(),
    f"{QOS_IF}/output/config": container(),
    f"{QOS_IF}/output/config/buffer-allocation-profile": leaf(STRING, ref=BUFFER_PROFILES),
    f"{QOS_IF}/output/queues": container(),
    OUT_QUEUES: keyed("name"),
    f"{OUT_QUEUES}/config": container(),
    f"{OUT_QUEUES}/config/name": leaf(STRING, ref=QUEUES),
    f"{OUT_QUEUES}/config/queue-management-profile": leaf(STRING, ref=PROFILES),
    # arista-qos-augments: PFC
    f"{Q}/{ARISTA}:pfc": container(ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog": container(ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config": container(ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config/default-timeout": leaf(SECONDS_2, ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config/default-recovery-time": leaf(SECONDS_2, ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config/default-polling-interval": leaf(SECONDS_3, ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config/action": leaf(ARISTA_WATCHDOG_ACTION, ARISTA_PFC),
    f"{Q}/{ARISTA}:pfc/watchdog/config/non-disruptive-priority": leaf(HEX_BITMAP, ARISTA_PFC),
    f"{QOS_IF}/output/{ARISTA}:pfc": container(ARISTA_PFC),
    f"{QOS_IF}/output/{ARISTA}:pfc/config": container(ARISTA_PFC),
    f"{QOS_IF}/output/{ARISTA}:pfc/config/priorities-no-drop": leaf(HEX_BITMAP, ARISTA_PFC),
    # msoctl-qos-augments: fast CNP, switch-wide and per output queue
    f"{Q}/{MSOCTL}:fast-cnp": container(MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config": container(MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/enabled": leaf(BOOLEAN, MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/cnp-dscp": leaf(DSCP, MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/cnp-priority": leaf(PRIORITY, MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/min-interval-microseconds":
        leaf(_uint(32, high=1_000_000), MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/flow-table-size": leaf(_uint(32, low=1), MSOCTL_FAST_CNP),
    f"{Q}/{MSOCTL}:fast-cnp/config/flow-aging-seconds":
        leaf(_uint(16, low=1, high=3600), MSOCTL_FAST_CNP),
    f"{OUT_QUEUES}/{MSOCTL}:fast-cnp": container(MSOCTL_FAST_CNP),
    f"{OUT_QUEUES}/{MSOCTL}:fast-cnp/config": container(MSOCTL_FAST_CNP),
    f"{OUT_QUEUES}/{MSOCTL}:fast-cnp/config/enabled": leaf(BOOLEAN, MSOCTL_FAST_CNP),
    # msoctl-qos-augments: headroom
    f"{QOS_IF}/{MSOCTL}:headroom": container(MSOCTL_HEADROOM),
    f"{QOS_IF}/{MSOCTL}:headroom/config": container(MSOCTL_HEADROOM),
    f"{QOS_IF}/{MSOCTL}:headroom/config/cable-length-meters": leaf(UINT32, MSOCTL_HEADROOM),
    f"{QOS_IF}/{MSOCTL}:headroom/config/xoff-bytes": leaf(UINT64, MSOCTL_HEADROOM),
    f"{QOS_IF}/{MSOCTL}:headroom/config/xon-bytes": leaf(UINT64, MSOCTL_HEADROOM),
    # msoctl-qos-augments: PFC and its watchdog
    f"{QOS_IF}/{MSOCTL}:pfc": container(MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/config": container(MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/config/lossless-priorities": Node("leaf-list", MSOCTL_PFC, PRIORITY),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog": container(MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog/config": container(MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog/config/enabled": leaf(BOOLEAN, MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog/config/detection-time-ms":
        leaf(_uint(32, low=1, high=60_000), MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog/config/restoration-time-ms":
        leaf(_uint(32, low=1, high=600_000), MSOCTL_PFC),
    f"{QOS_IF}/{MSOCTL}:pfc/watchdog/config/action": leaf(MSOCTL_WATCHDOG_ACTION, MSOCTL_PFC),
}


@dataclass(frozen=True)
class Counter:
    """A state leaf the device fills from a queue's counter in the chip's state tree
    (yang/msoctl-congestion.yang ``congestion-counters``); counter64, a JSON string."""

    state: str
    """The state container's path."""
    leaf: str
    """Its member name (qualified where an augment adds it to OpenConfig's container)."""
    chip: str
    part: str = OC


COUNTERS: tuple[Counter, ...] = (
    Counter(f"{OUT_QUEUES}/state", "max-queue-len", "buffer-watermark-bytes"),
    Counter(f"{OUT_QUEUES}/state", "dropped-pkts", "dropped-packets"),
    Counter(f"{OUT_QUEUES}/state", "ecn-marked-pkts", "ecn-marked-packets"),
    Counter(f"{OUT_QUEUES}/state", f"{MSOCTL}:pfc-pause-frames-sent", "pfc-pause-frames-sent",
            MSOCTL_PFC_COUNTERS),
    Counter(f"{OUT_QUEUES}/state", f"{MSOCTL}:pfc-pause-frames-received",
            "pfc-pause-frames-received", MSOCTL_PFC_COUNTERS),
    Counter(f"{OUT_QUEUES}/{MSOCTL}:fast-cnp/state", "switch-generated-cnps",
            "switch-generated-cnps", MSOCTL_FAST_CNP),
)
"""The chip counts no transmitted packets or octets, and no queue length average, so
``transmit-pkts``, ``*-octets`` and ``avg-queue-len`` are not shown."""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    organization: str
    version: str
    revision: str
    part: str = OC


MODELS: tuple[ModelInfo, ...] = (
    ModelInfo("openconfig-interfaces", "OpenConfig working group", "3.8.1", "2026-01-06"),
    ModelInfo("openconfig-if-ethernet", "OpenConfig working group", "2.18.0", "2026-06-22"),
    ModelInfo("openconfig-qos", "OpenConfig working group", "2.2.0", "2026-04-30"),
    ModelInfo(ARISTA, "Arista Networks, Inc.", "0.0.4", "2020-11-30", ARISTA_PFC),
    ModelInfo(MSOCTL, "MegaScaleOut", "2026-12-07", "2026-12-07", MSOCTL_HEADROOM),
)
"""Versions: ``oc-ext:openconfig-version`` where the module has one, else its revision;
revisions: the module's latest ``revision`` statement (NETCONF announces it)."""

NAMESPACES: dict[str, str] = {
    "openconfig-interfaces": "http://openconfig.net/yang/interfaces",
    IF_ETH: "http://openconfig.net/yang/interfaces/ethernet",
    "openconfig-qos": "http://openconfig.net/yang/qos",
    ARISTA: "http://arista.com/yang/openconfig/qos/augments",
    MSOCTL: "urn:megascaleout:yang:msoctl-qos-augments",
    "iana-if-type": "urn:ietf:params:xml:ns:yang:iana-if-type",
}
"""Each module's XML namespace (its ``namespace`` statement), for NETCONF; iana-if-type's
for the identities of an interface's ``type``."""


def nodes(parts: frozenset[str]) -> dict[str, Node]:
    """The table's rows of the parts given."""
    return {path: node for path, node in NODES.items() if node.part in parts}
