"""The OpenConfig face's documents against Google's OpenConfig bindings (oc-config-validate).

oc-config-validate ships pyangbind bindings generated from openconfig/public
(``oc_config_validate.models.qos`` from openconfig-qos 2026-01-16,
``.interfaces`` from openconfig-interfaces 2024-12-05 with openconfig-if-ethernet):
written independently of this project, they refuse an unknown member and a value their
type does not take. Every document the face returns is loaded into them: the factory
configuration and the operational tree of the full configuration (after a congestion
burst, so the counters are not zero), with both sets of augments.

Augment members are stripped before loading: every member whose module prefix is not an
``openconfig-*`` module (``msoctl-qos-augments:...``, ``arista-qos-augments:...``), with
everything under it. The bindings know only OpenConfig's modules; the augments are
checked by the face's own schema (tests/conformance/test_switch_faces.py).

State (config false) nodes: pyangbind's ``load_ietf_json`` sets them as it does config
nodes (the loaded counters are read back below), with the same type checks.

pyangbind takes a uint64 as a JSON number as readily as a string, where RFC 7951
(section 6.1) wants a string; so each leaf's JSON value is also checked against the
YANG type the bindings give it (``_yang_type``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.switch.faces.openconfig import OpenConfigFace
from emulators.switch.model import SwitchModel
from tests.support.oc_bindings import load, openconfig_only
from tests.support.switch_faces import LONG, PORTS, oc_full, queue_name

Tree = dict[str, Any]


def _walk_members(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for entry in value:
            yield from _walk_members(entry)
    elif isinstance(value, dict):
        for member, child in value.items():
            yield member
            yield from _walk_members(child)


def documents(augments: str) -> dict[str, Tree]:
    clock = SteppedClock()
    model = SwitchModel(clock, PORTS)
    face = OpenConfigFace(model, PORTS, augments="arista" if augments == "arista" else "msoctl")
    factory = face.factory()
    face.commit(factory)
    found = {"factory": factory}
    full = oc_full(face)
    face.commit(full)
    model.faults.inject(Fault("congestion", target=f"{LONG}@3", seconds=2e-3, count=4))
    clock.advance(5e-3)
    found["full operational"] = face.operational(full)
    return found


AUGMENTS = ("msoctl", "arista")


@pytest.mark.parametrize("augments", AUGMENTS)
def test_every_document_loads_into_the_bindings_state_and_counters_included(
        augments: str) -> None:
    docs = documents(augments)
    roots = {}
    for name, doc in docs.items():
        try:
            roots[name] = load(openconfig_only(doc))
        except Exception as error:  # pyangbind raises what it likes
            pytest.fail(f"{augments}, {name}: {type(error).__name__}: {error}")
    op = docs["full operational"]
    augment = "msoctl-qos-augments:headroom"
    assert augment in set(_walk_members(op))
    assert augment not in set(_walk_members(openconfig_only(op)))
    name = queue_name(op, 3)
    loaded = roots["full operational"]
    queue = loaded["openconfig-qos:qos"].qos.interfaces.interface[LONG].output.queues \
        .queue[name]
    state = next(q for i in op["openconfig-qos:qos"]["interfaces"]["interface"]
                 if i["interface-id"] == LONG for q in i["output"]["queues"]["queue"]
                 if q["name"] == name)["state"]
    assert int(state["ecn-marked-pkts"]) > 0
    assert int(queue.state.ecn_marked_pkts) == int(state["ecn-marked-pkts"])
    assert int(queue.state.max_queue_len) == int(state["max-queue-len"])
    assert queue.state.queue_management_profile == "roce-ecn"
    interface = loaded["openconfig-interfaces:interfaces"].interfaces.interface[LONG]
    assert interface.state.type.endswith("ethernetCsmacd")
    assert interface.ethernet.state.port_speed.endswith("SPEED_400GB")


def _qos_only(doc: Tree) -> Tree:
    return {"openconfig-qos:qos": doc["openconfig-qos:qos"]}


def test_the_bindings_refuse_a_bad_document() -> None:
    # The QoS tree alone: loading an interface into the bindings takes a quarter second.
    doc = _qos_only(openconfig_only(documents("msoctl")["full operational"]))
    unknown = copy.deepcopy(doc)
    unknown["openconfig-qos:qos"]["queues"]["queue"][0]["config"]["colour"] = "green"
    mistyped = copy.deepcopy(doc)
    mistyped["openconfig-qos:qos"]["queues"]["queue"][0]["config"]["queue-id"] = 300
    bad_counter = copy.deepcopy(doc)
    bad_counter["openconfig-qos:qos"]["interfaces"]["interface"][0]["output"]["queues"][
        "queue"][0]["state"]["dropped-pkts"] = "many"
    unstripped = _qos_only(documents("msoctl")["full operational"])
    for bad in (unknown, mistyped, bad_counter, unstripped):
        with pytest.raises(Exception):  # noqa: B017 - pyangbind's own error types
            load(bad)


def test_a_uint64_as_a_json_number_is_caught_here_though_the_bindings_take_it() -> None:
    doc = _qos_only(openconfig_only(documents("msoctl")["factory"]))
    doc["openconfig-qos:qos"]["queue-management-profiles"] = {"queue-management-profile": [{
        "name": "p", "config": {"name": "p"},
        "wred": {"uniform": {"config": {"min-threshold": 1000}}}}]}
    with pytest.raises(AssertionError, match="uint64"):
        load(doc)
