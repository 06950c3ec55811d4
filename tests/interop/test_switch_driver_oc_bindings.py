"""Every OpenConfig document the switch driver writes loads into Google's OpenConfig
bindings (oc-config-validate's pyangbind bindings: :mod:`tests.support.oc_bindings`).

For each set of augments a unit may announce ({openconfig-qos, arista-qos-augments,
msoctl-qos-augments} and {openconfig-qos, msoctl-qos-augments}) the driver's OpenConfig
model (``drivers.switch.models.build("openconfig", announced)``) renders a full intent
(every field of a port, ECN and WRED queues, fast CNP) onto the factory configuration
an emulated OpenConfig switch serves, read over gNMI the way the driver reads it
(:meth:`GnmiSwitchSession.read`). The whole document after the edit
(``openconfig-qos:qos`` and ``openconfig-interfaces:interfaces``) is loaded into the
bindings, and each leaf's RFC 7951 JSON form is checked against its YANG type there
(uint64 and decimal64 as strings).

Augment members are stripped before loading: every member whose module prefix is not an
``openconfig-*`` module (``msoctl-qos-augments:...``, ``arista-qos-augments:...``), with
everything under it. The bindings know only OpenConfig's modules; the augments are
checked by the emulator's schema when the driver's edits are applied to it
(tests/e2e/test_switch_models_cli.py).

A deliberately wrong document shows that both checks can fail.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from drivers.switch.gnmi import GnmiSwitchSession, GnmiSwitchTarget
from drivers.switch.intent import FastCnp, Intent, Port, Queue, Thresholds, Watchdog
from drivers.switch.models import build
from drivers.switch.models.openconfig import INTERFACES, QOS
from drivers.transports.gnmi import GnmiTarget
from emulators.clock import SteppedClock
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort
from tests.support.gnmi_switch import factory_reset_checked, serving
from tests.support.netconf import PASSWORD, USER
from tests.support.oc_bindings import load, openconfig_only

Tree = dict[str, Any]

PORTS = {name: PhysicalPort("400G", 30_010.0) for name in ("Ethernet1", "Ethernet2")}
ANNOUNCED = {
    "arista": frozenset({"openconfig-qos", "arista-qos-augments", "msoctl-qos-augments"}),
    "msoctl": frozenset({"openconfig-qos", "msoctl-qos-augments"}),
}
"""The augments of the emulated switch -> the models the driver's model is built for."""
STRIPPED = {
    "arista": {"msoctl-qos-augments:headroom", "msoctl-qos-augments:fast-cnp",
               "arista-qos-augments:pfc"},
    "msoctl": {"msoctl-qos-augments:headroom", "msoctl-qos-augments:fast-cnp",
               "msoctl-qos-augments:pfc"},
}
"""The augment members the driver writes, which :func:`openconfig_only` takes out."""
ECN = Thresholds(1_500_000, 15_000_000, 5)
WRED = Thresholds(100_000, 900_000, 20)


def full_intent() -> Intent:
    """Every field the intent has, on both ports."""
    dog = Watchdog(enabled=True, detection_ms=200, restoration_ms=400, action="drop")
    return Intent(
        ports={name: Port(speed="400G", cable_length_m=30_010 + i, lossless_priorities=(3, 4),
                          xoff_bytes=16_094_208 + i, xon_bytes=8192, pfc_watchdog=dog,
                          queues={3: Queue(ecn=ECN, fast_cnp=True), 1: Queue(wred=WRED)})
               for i, name in enumerate(PORTS)},
        fast_cnp=FastCnp(enabled=True, cnp_dscp=48, cnp_priority=6, min_interval_us=50,
                         flow_table_size=4096, flow_aging_s=10))


@pytest.fixture(scope="module")
def switches() -> Iterator[Mapping[str, SwitchDevice]]:
    devices = {augments: SwitchDevice(f"sw-{augments}", PORTS, clock=SteppedClock(),
                                      users={USER: PASSWORD}, face="openconfig",
                                      augments=augments) for augments in ANNOUNCED}
    with serving(devices) as served:
        yield served


def driver_document(device: SwitchDevice, announced: frozenset[str]) -> Tree:
    """The whole OpenConfig document the driver makes of the switch's factory
    configuration and :func:`full_intent`."""
    factory_reset_checked(device)
    target = GnmiSwitchTarget(GnmiTarget(device.name, "127.0.0.1", device.port,
                                         username=USER, password=PASSWORD, insecure=True),
                              model="openconfig")
    with GnmiSwitchSession(target) as session:
        assert announced <= {model.name for model in session.capabilities.models}
        factory = session.read()
    model = build("openconfig", announced, device=device.name)
    after = factory.apply(model.edit(full_intent(), factory))
    return {"openconfig-qos:qos": after.get(QOS),
            "openconfig-interfaces:interfaces": after.get(INTERFACES)}


def members(value: Any) -> set[str]:
    """Every member name in ``value``, at any depth."""
    if isinstance(value, list):
        return set().union(*(members(entry) for entry in value))
    if isinstance(value, dict):
        return set(value).union(*(members(child) for child in value.values()))
    return set()


@pytest.mark.parametrize("augments", ANNOUNCED)
def test_the_drivers_whole_document_loads_into_the_bindings(
        switches: Mapping[str, SwitchDevice], augments: str) -> None:
    doc = driver_document(switches[augments], ANNOUNCED[augments])
    augment_members = {m for m in members(doc)
                       if ":" in m and not m.startswith(("openconfig-", "iana-"))}
    assert augment_members == STRIPPED[augments]
    stripped = openconfig_only(doc)
    assert not members(stripped) & augment_members
    try:
        roots = load(stripped)
    except Exception as error:  # pyangbind raises what it likes
        pytest.fail(f"{augments}: {type(error).__name__}: {error}")

    qos = roots["openconfig-qos:qos"].qos
    profiles = qos.queue_management_profiles.queue_management_profile
    for port in PORTS:
        ecn = profiles[f"msoctl-{port}-q3"].wred.uniform.config
        assert (int(ecn.min_threshold), int(ecn.max_threshold)) == (ECN.min_bytes, ECN.max_bytes)
        assert ecn.enable_ecn and not ecn.drop
        assert int(ecn.max_drop_probability_percent) == ECN.probability_percent
        wred = profiles[f"msoctl-{port}-q1"].wred.uniform.config
        assert wred.drop and not wred.enable_ecn
        assert int(wred.min_threshold) == WRED.min_bytes
        queues = qos.interfaces.interface[port].output.queues.queue
        assert queues["queue3"].config.queue_management_profile == f"msoctl-{port}-q3"
        interface = roots["openconfig-interfaces:interfaces"].interfaces.interface[port]
        assert interface.ethernet.config.port_speed.endswith("SPEED_400GB")
        assert interface.config.type.endswith("ethernetCsmacd")


def test_a_wrong_document_fails_the_bindings_or_the_json_forms(
        switches: Mapping[str, SwitchDevice]) -> None:
    # The QoS tree alone: loading an interface into the bindings takes a quarter second.
    whole = driver_document(switches["msoctl"], ANNOUNCED["msoctl"])
    doc = {"openconfig-qos:qos": openconfig_only(whole)["openconfig-qos:qos"]}
    load(doc)  # the control: as the driver wrote it, it loads

    def profile_config(tree: Tree) -> Tree:
        profile = tree["openconfig-qos:qos"]["queue-management-profiles"][
            "queue-management-profile"][0]
        config: Tree = profile["wred"]["uniform"]["config"]
        return config

    unknown = copy.deepcopy(doc)
    profile_config(unknown)["colour"] = "green"
    mistyped = copy.deepcopy(doc)
    profile_config(mistyped)["max-drop-probability-percent"] = 101
    unstripped = {"openconfig-qos:qos": whole["openconfig-qos:qos"]}
    with pytest.raises(AttributeError, match="colour"):
        load(unknown)
    with pytest.raises(ValueError, match="oc-types:percentage"):
        load(mistyped)
    with pytest.raises(AttributeError, match=r"\((fast-cnp|headroom|pfc)\)"):
        load(unstripped)
    as_number = copy.deepcopy(doc)  # RFC 7951 6.1: a uint64 is a JSON string
    profile_config(as_number)["min-threshold"] = ECN.min_bytes
    with pytest.raises(AssertionError, match="uint64"):
        load(as_number)
