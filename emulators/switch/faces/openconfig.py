"""The switch over OpenConfig: interfaces and QoS, with Arista's or msoctl's augments.

:class:`OpenConfigFace` checks a configuration against the nodes of
:mod:`.openconfig_schema` and translates it into the chip's configuration:

- ``/interfaces/interface[name]``: a port of the chip (FAILED_PRECONDITION for another
  name, or a type other than ``iana-if-type:ethernetCsmacd``); its Ethernet
  ``port-speed`` ``SPEED_400GB`` is the chip's ``400G`` (100, 200, 400 and 800 Gb/s only).
  ``description``, ``enabled`` and ``mtu`` are kept and shown, and change nothing on the
  chip.
- ``/qos/queues/queue[name]``: a name for the chip's queue ``queue-id`` (0..7, each at
  most once). Queue n carries priority n.
- ``/qos/interfaces/interface[interface-id]/output/queues/queue[name]``: that queue of
  the port; its ``queue-management-profile``'s ``wred/uniform`` is the queue's WRED.
  With ``enable-ecn`` the chip marks between the thresholds (all RoCEv2 packets are
  ECN-capable, so ``drop`` adds nothing); with ``drop`` alone it drops there; with
  neither the profile does nothing and the chip's queue has no WRED. The chip takes
  thresholds in bytes and on the instantaneous depth: ``*-threshold-percent`` and a
  ``weight`` other than 0 are FAILED_PRECONDITION. Buffer allocation profiles and an
  interface's binding to one are checked and shown, and change nothing: the chip shares
  its buffer dynamically and reserves nothing per queue.
- msoctl augments: ``fast-cnp`` (switch-wide and per output queue), ``headroom``
  (the port's cable length, xoff and xon) and, with ``augments="msoctl"``, ``pfc``
  (lossless priorities, the port's watchdog) map one to one onto the chip's leaves.
- Arista's augments (``augments="arista"``): an interface's ``priorities-no-drop``
  bitmap (bit n: priority n) is the port's lossless priorities. Arista's watchdog is
  switch-wide (``/qos/pfc/watchdog``) where the chip's is per port, so it is applied to
  every configured port: it runs where ``default-timeout`` is set (EOS runs no watchdog
  without a timeout), detecting after the timeout, standing down after
  ``default-recovery-time`` (the chip's 200 ms when not set). ``DROP`` and
  ``FORCED_DROP`` drop, ``IGNORE_PFC`` forwards; ``NOTIFY_ONLY``, ``ERROR_DISABLE`` and
  ``INVALID`` and a ``non-disruptive-priority`` naming any priority are
  FAILED_PRECONDITION (the chip's watchdog drops or forwards, per port). The polling
  interval is shown and changes nothing (the chip's watchdog watches continuously).

Refusals: a document that does not fit the schema (an unknown member, a wrong JSON type
as RFC 7951 writes it, a value out of range or not of the enumeration, a list entry
without its key or whose ``config/<key>`` differs, a state node) is INVALID_ARGUMENT; a
reference to nothing (a profile, a queue, an interface) and whatever the chip cannot run
(:class:`~emulators.switch.faces.ChipTree`) FAILED_PRECONDITION, each with the gNMI
path of the node. A list entry may leave ``config/<key>`` out; the state shows it.

``operational`` adds to the configuration a ``state`` beside every ``config``, mirroring
it, and for every port and every queue named in ``/qos/queues`` the chip's counters
(:data:`~.openconfig_schema.COUNTERS`), integrated up to the moment of the call.

With the switch's CPO model (``telemetry``), ``operational_for`` adds its optics
(:mod:`.optics_openconfig`) where a request reads them: ``/components`` when it reads
that tree, and each interface's transceiver, FEC counters and BER when it reads
``/interfaces``; a request for anything else reads no optics.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

from emulators.gnmi.face import Model, Tree
from emulators.switch.config import DEFAULT_WATCHDOG_MS
from emulators.switch.faces import (
    CHIP_SPEEDS,
    ChipTree,
    ModelSource,
    failed,
    invalid,
    model_getter,
)
from emulators.switch.faces import openconfig_schema as schema
from emulators.switch.faces import optics_openconfig as optics
from emulators.switch.faces.openconfig_schema import (
    ARISTA,
    IF,
    IF_ETH,
    INTERFACES,
    MSOCTL,
    OUT_QUEUES,
    QOS_IF,
    LeafType,
    Node,
    Q,
)
from emulators.switch.faces.optics import OpticsView, TelemetrySource
from emulators.switch.model import PhysicalPort

Augments = Literal["arista", "msoctl"]

ETHERNET = "iana-if-type:ethernetCsmacd"
FACTORY_QUEUES = {f"queue{queue_id}": queue_id for queue_id in range(8)}
"""The queues a factory-fresh switch names: not their bare numbers, so that a client
reads ``queue-id`` to find a queue."""

ARISTA_ACTIONS = {"DROP": "drop", "FORCED_DROP": "drop", "IGNORE_PFC": "forward"}
"""Arista's watchdog actions the chip has (the others: FAILED_PRECONDITION)."""

_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def _speed_identity(chip_speed: str) -> str:
    return f"{IF_ETH}:SPEED_{chip_speed[:-1]}GB"


CHIP_SPEED_OF = {_speed_identity(speed): speed for speed in CHIP_SPEEDS}


def _elem(name: str, key: str | None = None, value: Any = None) -> str:
    if key is None:
        return f"/{name}"
    text = str(value).replace("\\", "\\\\").replace("]", "\\]")
    return f"/{name}[{key}={text}]"


class _Checker:
    """One pass over a candidate tree against the schema's nodes: raises at the first
    node that does not fit; collects the references, checked once the whole tree is."""

    def __init__(self, nodes: Mapping[str, Node]):
        self.nodes = nodes
        self.children: dict[str, list[str]] = {}
        for path in nodes:
            parent, _, name = path.rpartition("/")
            self.children.setdefault(parent, []).append(name)
        self.keys: dict[str, set[str]] = {}
        self.references: list[tuple[str, str, str]] = []

    def check(self, tree: Any) -> None:
        if not isinstance(tree, dict):
            raise invalid("/", "the configuration is a JSON object")
        self._members("", "", tree)
        for target, value, path in self.references:
            if value not in self.keys.get(target, set()):
                raise failed(path, f"{value!r} names no {target.rsplit('/', 1)[-1]} "
                                   f"(no {target}[{self.nodes[target].key}={value}])")

    def _members(self, schema_path: str, path: str, value: Any) -> None:
        if not isinstance(value, dict):
            raise invalid(path, "expected a JSON object (a container or list entry)")
        for member, child in value.items():
            child_schema = f"{schema_path}/{member}"
            if member == "state" and f"{schema_path}/config" in self.nodes:
                raise invalid(f"{path}/state", "state data (config false) cannot be set")
            node = self.nodes.get(child_schema)
            if node is None:
                raise invalid(f"{path}/{member}", "unknown member (not in the models this "
                                                  "device serves)")
            self._node(node, child_schema, f"{path}/{member}", child)
        for name in self.children.get(schema_path, ()):
            if name not in value:
                missing = self._mandatory(f"{schema_path}/{name}")
                if missing is not None:
                    raise invalid(f"{path}/{name}{missing}", "mandatory leaf missing")

    def _mandatory(self, schema_path: str) -> str | None:
        """Where a node left out would leave a mandatory leaf out: the node itself, or a
        leaf inside it through containers (which, without presence, exist whenever
        their parent does); None when nowhere."""
        node = self.nodes[schema_path]
        if node.mandatory:
            return ""
        if node.kind != "container":
            return None
        for name in self.children.get(schema_path, ()):
            below = self._mandatory(f"{schema_path}/{name}")
            if below is not None:
                return f"/{name}{below}"
        return None

    def _node(self, node: Node, schema_path: str, path: str, value: Any) -> None:
        if node.kind == "container":
            self._members(schema_path, path, value)
        elif node.kind == "list":
            self._list(node, schema_path, path, value)
        elif node.kind == "leaf-list":
            if not isinstance(value, list):
                raise invalid(path, "a leaf-list is a JSON array")
            for item in value:
                self._leaf(node, schema_path, path, item)
            if len({repr(item) for item in value}) != len(value):
                raise invalid(path, "a leaf-list's values are unique")
        else:
            self._leaf(node, schema_path, path, value)

    def _list(self, node: Node, schema_path: str, path: str, value: Any) -> None:
        if not isinstance(value, list):
            raise invalid(path, "a list is a JSON array of entries")
        key = str(node.key)
        key_node = self.nodes[f"{schema_path}/config/{key}"]
        known = self.keys.setdefault(schema_path, set())  # every instance's, for leafrefs
        seen: set[Any] = set()  # this instance's: the same key under two parents is fine
        parent, _, name = path.rpartition("/")
        for entry in value:
            if not isinstance(entry, dict) or key not in entry:
                raise invalid(path, f"a list entry needs its key {key!r}")
            entry_path = parent + _elem(name, key, entry[key])
            self._leaf(key_node, f"{schema_path}/{key}", f"{entry_path}/{key}", entry[key])
            if entry[key] in seen:
                raise invalid(entry_path, "the list has this key twice")
            seen.add(entry[key])
            known.add(entry[key])
            config = entry.get("config")
            if isinstance(config, dict) and key in config and config[key] != entry[key]:
                raise invalid(f"{entry_path}/config/{key}",
                              f"differs from the entry's key {entry[key]!r}")
            self._members(schema_path, entry_path, {m: v for m, v in entry.items() if m != key})

    def _leaf(self, node: Node, schema_path: str, path: str, value: Any) -> None:
        leaf_type = node.type
        assert leaf_type is not None
        check_value(leaf_type, _module_of(schema_path), path, value)
        if node.ref is not None:
            self.references.append((node.ref, value, path))


def _module_of(schema_path: str) -> str:
    qualified = [part for part in schema_path.split("/") if ":" in part]
    return qualified[-1].split(":")[0] if qualified else ""


def check_value(leaf_type: LeafType, module: str, path: str, value: Any) -> None:
    """Refuse ``value`` unless it is ``leaf_type`` as RFC 7951 encodes it (an identity
    without its module is read in ``module``); INVALID_ARGUMENT at ``path``."""
    if json_kind(value) != leaf_type.json:
        raise invalid(path, f"{leaf_type.name} is a JSON {leaf_type.json} (RFC 7951), "
                            f"not {json.dumps(value)}")
    if leaf_type.low is not None or leaf_type.high is not None:
        number = value
        if isinstance(value, str):
            if not _INTEGER.fullmatch(value):
                raise invalid(path, f"{value!r} is not a {leaf_type.name}")
            number = int(value)
        if (leaf_type.low is not None and number < leaf_type.low) or \
                (leaf_type.high is not None and number > leaf_type.high):
            raise invalid(path, f"{number} out of range for {leaf_type.name} "
                                f"({leaf_type.low}..{leaf_type.high})")
    if leaf_type.fraction_digits is not None:
        match = _DECIMAL.fullmatch(value)
        if match is None or len(match.group(1) or ".") - 1 > leaf_type.fraction_digits:
            raise invalid(path, f"{value!r} is not a {leaf_type.name}")
    if leaf_type.enums and value not in leaf_type.enums:
        raise invalid(path, f"{value!r} is none of {', '.join(leaf_type.enums)}")
    if leaf_type.identities or leaf_type.identity_module:
        _check_identity(leaf_type, module, path, value)
    if leaf_type.pattern is not None and not re.fullmatch(leaf_type.pattern, value):
        raise invalid(path, f"{value!r} does not match {leaf_type.pattern!r}")
    if leaf_type.length is not None and not \
            leaf_type.length[0] <= len(value) <= leaf_type.length[1]:
        raise invalid(path, f"{value!r}: length {leaf_type.length[0]}..{leaf_type.length[1]}")


def json_kind(value: Any) -> str:
    """``number``, ``string``, ``boolean``, or what else the JSON value is."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number"
    if isinstance(value, str):
        return "string"
    return {dict: "object", list: "array", float: "non-integer number"}.get(type(value), "null")


def _check_identity(leaf_type: LeafType, module: str, path: str, value: str) -> None:
    qualified = identity(value, module)
    if leaf_type.identity_module is not None:
        known = re.fullmatch(rf"{re.escape(leaf_type.identity_module)}:[A-Za-z_][\w.-]*",
                             qualified) is not None
    else:
        known = qualified in leaf_type.identities
    if not known:
        raise invalid(path, f"{value!r} is not an identity of {leaf_type.name}")


def identity(value: str, module: str) -> str:
    """An identityref's value qualified by its module (RFC 7951 6.8: it may go without
    the module where the identity's module is the leaf's)."""
    return value if ":" in value else f"{module}:{value}"


class OpenConfigFace:
    """The switch's OpenConfig face (see the module docstring)."""

    name: str = "openconfig"
    encodings: tuple[str, ...] = ("JSON_IETF",)
    models: tuple[Model, ...]

    def __init__(self, model: ModelSource, ports: Mapping[str, PhysicalPort], *,
                 augments: Augments = "msoctl", telemetry: TelemetrySource | None = None):
        if augments not in schema.PARTS:
            raise ValueError(f"augments: one of {', '.join(schema.PARTS)}")
        self._model = model_getter(model)
        self._ports = dict(ports)
        self._optics = OpticsView(telemetry or (lambda: None), list(self._ports),
                                  {name: int(port.speed[:-1]) * 1000
                                   for name, port in self._ports.items()})
        self.augments = augments
        self._parts = schema.PARTS[augments]
        self._nodes = schema.nodes(self._parts)
        self.models = tuple(Model(m.name, m.organization, m.version)
                            for m in schema.MODELS if m.part in self._parts)

    # ---- the Face protocol ------------------------------------------------------------

    def scalar(self, path: str, value: Any) -> Any:
        """A leaf's value sent as a scalar TypedValue, as RFC 7951 writes that leaf: a
        64-bit integer or a decimal64 as a JSON string; anything else as it came."""
        steps = re.sub(r"\[[^\]]*\]", "", path).strip("/").split("/")
        wanted = "/".join(step.rpartition(":")[2] for step in steps)
        for schema_path, node in self._nodes.items():
            local = "/".join(s.rpartition(":")[2] for s in schema_path.strip("/").split("/"))
            if local == wanted and node.type is not None:
                if node.type.json == "string" and isinstance(value, int | float) \
                        and not isinstance(value, bool):
                    digits = node.type.fraction_digits
                    return f"{value:.{digits}f}" if digits is not None else str(int(value))
                break
        return value

    def factory(self) -> Tree:
        """Every port with its type and speed; the queues queue0..queue7; nothing else."""
        return {
            IF[1:]: {"interface": [{
                "name": name,
                "config": {"name": name, "type": ETHERNET},
                f"{IF_ETH}:ethernet": {"config": {"port-speed": _speed_identity(port.speed)}},
            } for name, port in self._ports.items()]},
            Q[1:]: {"queues": {"queue": [
                {"name": name, "config": {"name": name, "queue-id": queue_id}}
                for name, queue_id in FACTORY_QUEUES.items()]}},
        }

    def writable(self, top: str) -> bool:
        return top in (IF[1:], Q[1:])

    def commit(self, config: Tree) -> None:
        _Checker(self._nodes).check(config)
        self._translate(config).apply(self._model())

    def check(self, config: Tree) -> None:
        """What :meth:`commit` refuses of ``config``, and nothing changed (a NETCONF
        ``<validate>``)."""
        _Checker(self._nodes).check(config)
        self._translate(config).check()

    def operational(self, config: Tree) -> Tree:
        tree = copy.deepcopy(config)
        _mirror(self._nodes, "", tree)
        self._add_counters(tree)
        return tree

    def operational_for(self, config: Tree, tops: frozenset[str]) -> Tree:
        """:meth:`operational`, with the optics of the trees ``tops`` names (module
        docstring)."""
        tree = self.operational(config)
        wanted = {top.rpartition(":")[2] for top in tops}
        if not wanted & {"*", "components", "interfaces"} or not self._optics.available:
            return tree
        read = self._optics.read()
        if read is None:
            return tree
        _, views = read
        if wanted & {"*", "components"}:
            tree[optics.COMPONENTS] = optics.components(views)
        if wanted & {"*", "interfaces"}:
            optics.add_interfaces(tree, views)
        return tree

    @staticmethod
    def leaf_kind(path: str) -> str | None:
        """The scalar TypedValue field a telemetry leaf read alone is sent in."""
        return optics.leaf_kind(path)

    # ---- configuration -> the chip ----------------------------------------------------

    def _translate(self, config: Tree) -> ChipTree:
        chip = ChipTree(self._ports)
        for entry in _entries(config, INTERFACES):
            self._interface(chip, entry)
        qos = config.get(Q[1:], {})
        queue_ids = self._queue_ids(qos)
        fast_cnp = qos.get(f"{MSOCTL}:fast-cnp", {}).get("config", {})
        for leaf, value in fast_cnp.items():
            chip.fast_cnp(leaf, value, f"{Q}/{MSOCTL}:fast-cnp/config/{leaf}")
        for entry in _entries(config, QOS_IF):
            self._qos_interface(chip, qos, queue_ids, entry)
        if self.augments == "arista":
            self._arista_watchdog(chip, qos, [e["name"] for e in _entries(config, INTERFACES)])
        return chip

    def _interface(self, chip: ChipTree, entry: Mapping[str, Any]) -> None:
        name = entry["name"]
        at = _elem("openconfig-interfaces:interfaces") + _elem("interface", "name", name)
        chip.port(name, at)
        config = entry.get("config", {})
        if identity(config.get("type", ETHERNET), "openconfig-interfaces") != ETHERNET:
            raise failed(f"{at}/config/type", f"{name} is an Ethernet port ({ETHERNET})")
        speed = entry.get(f"{IF_ETH}:ethernet", {}).get("config", {}).get("port-speed")
        if speed is not None:
            speed_at = f"{at}/{IF_ETH}:ethernet/config/port-speed"
            chip_speed = CHIP_SPEED_OF.get(identity(speed, IF_ETH))
            if chip_speed is None:
                raise failed(speed_at, f"the chip's ports run at {', '.join(CHIP_SPEEDS)}")
            chip.port_leaf(name, "speed", chip_speed, speed_at)

    @staticmethod
    def _queue_ids(qos: Mapping[str, Any]) -> dict[str, tuple[int | None, str]]:
        """Each queue's name -> its queue-id (None when not set) and that leaf's path."""
        found: dict[str, tuple[int | None, str]] = {}
        owner: dict[int, str] = {}
        for entry in qos.get("queues", {}).get("queue", []):
            at = f"{Q}/queues" + _elem("queue", "name", entry["name"]) + "/config/queue-id"
            queue_id = entry.get("config", {}).get("queue-id")
            if queue_id is not None and queue_id in owner:
                raise failed(at, f"queue-id {queue_id} is already queue {owner[queue_id]!r}'s")
            if queue_id is not None:
                owner[queue_id] = entry["name"]
            found[entry["name"]] = (queue_id, at)
        return found

    def _qos_interface(self, chip: ChipTree, qos: Mapping[str, Any],
                       queue_ids: Mapping[str, tuple[int | None, str]],
                       entry: Mapping[str, Any]) -> None:
        port = entry["interface-id"]
        at = f"{Q}/interfaces" + _elem("interface", "interface-id", port)
        chip.port(port, at)
        referenced = entry.get("interface-ref", {}).get("config", {}).get("interface", port)
        if referenced != port:
            raise failed(f"{at}/interface-ref/config/interface",
                         f"this switch applies an interface's QoS to the port named by its "
                         f"interface-id ({port!r}), not to {referenced!r}")
        profiles = {p["name"]: p for p in qos.get("queue-management-profiles", {})
                    .get("queue-management-profile", [])}
        for queue in entry.get("output", {}).get("queues", {}).get("queue", []):
            queue_at = f"{at}/output/queues" + _elem("queue", "name", queue["name"])
            queue_id, id_at = queue_ids[queue["name"]]
            if queue_id is None:
                raise failed(id_at, f"queue {queue['name']!r} needs a queue-id to run on "
                                    f"{port}")
            profile = queue.get("config", {}).get("queue-management-profile")
            if profile is not None:
                _wred(chip, port, queue_id, profiles[profile])
            enabled = queue.get(f"{MSOCTL}:fast-cnp", {}).get("config", {}).get("enabled")
            if enabled is not None:
                chip.queue_leaf(port, queue_id, "fast-cnp/enabled", enabled,
                                f"{queue_at}/{MSOCTL}:fast-cnp/config/enabled")
        headroom = entry.get(f"{MSOCTL}:headroom", {}).get("config", {})
        for leaf, chip_leaf in (("cable-length-meters", "cable-length-meters"),
                                ("xoff-bytes", "pfc/xoff-bytes"), ("xon-bytes", "pfc/xon-bytes")):
            if leaf in headroom:
                chip.port_leaf(port, chip_leaf, int(headroom[leaf]),
                               f"{at}/{MSOCTL}:headroom/config/{leaf}")
        pfc = entry.get(f"{MSOCTL}:pfc", {})
        if "lossless-priorities" in pfc.get("config", {}):
            chip.port_leaf(port, "lossless-priorities",
                           sorted(pfc["config"]["lossless-priorities"]),
                           f"{at}/{MSOCTL}:pfc/config/lossless-priorities")
        for leaf, value in pfc.get("watchdog", {}).get("config", {}).items():
            chip.port_leaf(port, f"pfc/watchdog/{leaf}", value,
                           f"{at}/{MSOCTL}:pfc/watchdog/config/{leaf}")
        bitmap = entry.get("output", {}).get(f"{ARISTA}:pfc", {}).get("config", {}) \
            .get("priorities-no-drop")
        if bitmap is not None:
            chip.port_leaf(port, "lossless-priorities", _priorities(bitmap),
                           f"{at}/output/{ARISTA}:pfc/config/priorities-no-drop")

    def _arista_watchdog(self, chip: ChipTree, qos: Mapping[str, Any], ports: list[str]) -> None:
        at = f"{Q}/{ARISTA}:pfc/watchdog/config"
        config = qos.get(f"{ARISTA}:pfc", {}).get("watchdog", {}).get("config", {})
        spared = config.get("non-disruptive-priority")
        if spared is not None and _priorities(spared):
            raise failed(f"{at}/non-disruptive-priority",
                         "the chip's watchdog acts on every lossless priority of a port")
        action = config.get("action", "DROP")
        if action not in ARISTA_ACTIONS:
            raise failed(f"{at}/action", f"the chip's watchdog drops or forwards "
                                         f"({', '.join(ARISTA_ACTIONS)}), not {action}")
        timeout = config.get("default-timeout")
        recovery = config.get("default-recovery-time")
        for port in ports:
            chip.port_leaf(port, "pfc/watchdog/enabled", timeout is not None,
                           f"{at}/default-timeout")
            if timeout is None:
                continue
            chip.port_leaf(port, "pfc/watchdog/detection-time-ms", _milliseconds(timeout),
                           f"{at}/default-timeout")
            chip.port_leaf(port, "pfc/watchdog/restoration-time-ms",
                           DEFAULT_WATCHDOG_MS if recovery is None else _milliseconds(recovery),
                           f"{at}/default-recovery-time")
            chip.port_leaf(port, "pfc/watchdog/action", ARISTA_ACTIONS[action], f"{at}/action")

    # ---- state ----------------------------------------------------------------------

    def _add_counters(self, tree: Tree) -> None:
        state = self._model().state_tree()["switch"]["ports"]["port"]
        qos = tree.setdefault(Q[1:], {})
        names = {entry.get("config", {}).get("queue-id"): entry["name"]
                 for entry in reversed(qos.get("queues", {}).get("queue", []))}
        interfaces = qos.setdefault("interfaces", {}).setdefault("interface", [])
        counters = [c for c in schema.COUNTERS if c.part in self._parts]
        for port in state:
            interface = _entry(interfaces, "interface-id", port["name"])
            queues = interface.setdefault("output", {}).setdefault("queues", {}) \
                .setdefault("queue", [])
            for chip_queue in port["queues"]["queue"]:
                name = names.get(chip_queue["queue-id"])
                if name is None:
                    continue
                queue = _entry(queues, "name", name)
                for counter in counters:
                    holder = queue
                    for member in counter.state[len(OUT_QUEUES) + 1:].split("/"):
                        holder = holder.setdefault(member, {})
                    holder[counter.leaf] = str(chip_queue["counters"][counter.chip])


def _entries(tree: Mapping[str, Any], list_path: str) -> list[dict[str, Any]]:
    """The entries of the list at ``list_path`` (a path of containers, then the list)."""
    node: Any = tree
    *containers, name = list_path[1:].split("/")
    for member in containers:
        node = node.get(member, {})
    entries: list[dict[str, Any]] = node.get(name, [])
    return entries


def _entry(entries: list[dict[str, Any]], key: str, value: str) -> dict[str, Any]:
    """The entry of ``entries`` whose ``key`` is ``value``, added (with its state's key
    leaf) when there is none."""
    for entry in entries:
        if entry.get(key) == value:
            entry.setdefault("state", {key: value})
            return entry
    entries.append({key: value, "state": {key: value}})
    return entries[-1]


def _wred(chip: ChipTree, port: str, queue_id: int, profile: Mapping[str, Any]) -> None:
    at = _elem("openconfig-qos:qos") + "/queue-management-profiles" + \
        _elem("queue-management-profile", "name", profile["name"]) + "/wred/uniform/config"
    config = profile.get("wred", {}).get("uniform", {}).get("config", {})
    for leaf in ("min-threshold-percent", "max-threshold-percent"):
        if leaf in config:
            raise failed(f"{at}/{leaf}", "the chip takes WRED thresholds in bytes")
    if config.get("weight", 0) != 0:
        raise failed(f"{at}/weight", "the chip marks on the queue's instantaneous depth "
                                     "(weight 0)")
    if not (config.get("enable-ecn") or config.get("drop")):
        return  # neither marks nor drops: no WRED on the chip's queue
    for leaf in ("min-threshold", "max-threshold"):
        if leaf in config:
            chip.queue_leaf(port, queue_id, f"wred/{leaf}", int(config[leaf]), f"{at}/{leaf}")
    if "max-drop-probability-percent" in config:
        chip.queue_leaf(port, queue_id, "wred/max-drop-probability-percent",
                        config["max-drop-probability-percent"],
                        f"{at}/max-drop-probability-percent")
    ecn = bool(config.get("enable-ecn"))
    chip.queue_leaf(port, queue_id, "wred/enable-ecn", ecn,
                    f"{at}/enable-ecn" if ecn else f"{at}/drop")


def _priorities(bitmap: str) -> list[int]:
    value = int(bitmap, 16)
    return [priority for priority in range(8) if value >> priority & 1]


def _milliseconds(seconds: str) -> int:
    return int(Decimal(seconds) * 1000)


def _mirror(nodes: Mapping[str, Node], schema_path: str, value: Any,
            skip: str | None = None) -> None:
    """Add a ``state`` beside every ``config`` in the container or list entry ``value``
    and under it: a copy of the config, with a list entry's key leaf."""
    if not isinstance(value, dict):
        return
    for member, child in list(value.items()):
        child_schema = f"{schema_path}/{member}"
        node = nodes.get(child_schema)
        if member in ("state", skip) or node is None:
            continue
        if member == "config":
            value.setdefault("state", copy.deepcopy(child))
        elif node.kind == "list" and isinstance(child, list):
            for entry in child:
                _mirror(nodes, child_schema, entry, skip=node.key)
                if isinstance(entry, dict) and f"{child_schema}/config" in nodes:
                    entry.setdefault("state", {}).setdefault(str(node.key), entry[node.key])
        elif node.kind == "container":
            _mirror(nodes, child_schema, child)
