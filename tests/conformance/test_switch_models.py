"""One suite over every device model of the switch driver (drivers/switch/models): the
same intent rendered into each model's documents, carried out on a factory-fresh
switch's configuration, and parsed back equal; what a model cannot hold refused in one
line before anything is sent.

The factory documents here are written from the published models (OpenConfig QoS and
interfaces, SONiC's CONFIG_DB), the way a switch of each kind holds them out of the box:
queue names the unit's own, ports listed, nothing of congestion control configured.
"""

from __future__ import annotations

from typing import Any

import pytest

from drivers.errors import Unsupported, ValidationError
from drivers.switch.intent import (
    FastCnp,
    Intent,
    Port,
    Queue,
    Thresholds,
    Watchdog,
    from_dict,
    from_legacy,
    to_dict,
    unmet,
)
from drivers.switch.jsontree import Trees, changes
from drivers.switch.models import build, detect
from drivers.switch.models.msoctl import to_tree
from drivers.switch.tree import check
from tests.support.switch_models import PORTS, full_intent, oc_factory, sonic_factory

pytestmark = pytest.mark.conformance

MODELS = {
    "openconfig+arista+msoctl": (("openconfig-qos", "arista-qos-augments",
                                  "msoctl-qos-augments"), oc_factory),
    "openconfig+msoctl": (("openconfig-qos", "msoctl-qos-augments"), oc_factory),
    "sonic": (("sonic-db",), sonic_factory),
}


def _session(name: str) -> tuple[Any, Trees]:
    announced, factory = MODELS[name]
    model = build("auto", announced, device="sw")
    return model, Trees(factory(), list_keys=model.list_keys)


@pytest.mark.parametrize("name", MODELS)
def test_the_same_intent_reads_back_equal_from_every_model(name: str) -> None:
    model, factory = _session(name)
    want = full_intent(fast=name != "sonic")
    after = factory.apply(model.edit(want, factory))
    have = model.parse(after)
    assert unmet(want, have) == []
    assert have.only(set(PORTS)).ports == want.ports
    # applying the same intent again changes nothing
    again = after.apply(model.edit(want, after))
    assert changes(after, again) == []


@pytest.mark.parametrize("name", MODELS)
def test_every_change_names_its_port_and_what_it_configures(name: str) -> None:
    model, factory = _session(name)
    after = factory.apply(model.edit(full_intent(fast=name != "sonic"), factory))
    found = changes(factory, after)
    assert found
    for where, _, _ in found:
        about = model.where(where)
        assert about.port in (*PORTS, None), where
        assert about.aspect, where
    speed = [w for w, _, _ in found if model.where(w).aspect == "speed"]
    assert {model.where(w).port for w in speed} == set(PORTS)


@pytest.mark.parametrize("name", MODELS)
def test_a_port_the_switch_lacks_is_refused_before_anything_is_sent(name: str) -> None:
    model, factory = _session(name)
    want = Intent(ports={"Ethernet9": Port(speed="400G")})
    with pytest.raises(ValidationError, match="has no port Ethernet9"):
        model.edit(want, factory)


@pytest.mark.parametrize("name", MODELS)
def test_replacing_a_port_removes_what_the_want_no_longer_gives(name: str) -> None:
    model, factory = _session(name)
    first = factory.apply(model.edit(full_intent(fast=False), factory))
    smaller = Intent(ports={"Ethernet1": Port(speed="400G", queues={
        3: Queue(ecn=Thresholds(1_000, 2_000, 10))})})
    second = first.apply(model.edit(smaller, first))
    port = model.parse(second).ports["Ethernet1"]
    assert port.queues == smaller.ports["Ethernet1"].queues
    assert port.lossless_priorities == ()
    assert port.pfc_watchdog is None
    assert model.parse(second).ports["Ethernet2"] == model.parse(first).ports["Ethernet2"]


def test_sonic_refuses_fast_cnp_in_one_line_naming_what_was_not_applied() -> None:
    model, factory = _session("sonic")
    with pytest.raises(Unsupported) as refused:
        model.edit(full_intent(fast=True), factory)
    text = str(refused.value)
    assert "SONiC CONFIG_DB" in text and "fast_cnp" in text and "nothing was applied" in text
    assert "Ethernet1 queue 3 fast_cnp" in text
    assert "\n" not in text


def test_openconfig_without_augments_refuses_pfc_headroom_and_fast_cnp() -> None:
    model = build("openconfig", ("openconfig-qos",), device="sw")
    factory = Trees(oc_factory(), list_keys=model.list_keys)
    with pytest.raises(Unsupported, match="headroom") as refused:
        model.edit(full_intent(fast=True), factory)
    assert "PFC" in str(refused.value) and "fast_cnp" in str(refused.value)
    # ECN alone is plain OpenConfig and goes through
    ecn_only = Intent(ports={"Ethernet1": Port(queues={3: Queue(ecn=Thresholds(1, 2, 3))})})
    after = factory.apply(model.edit(ecn_only, factory))
    assert model.parse(after).ports["Ethernet1"].queues == ecn_only.ports["Ethernet1"].queues


def test_arista_takes_one_watchdog_per_switch() -> None:
    model, factory = _session("openconfig+arista+msoctl")
    want = full_intent(fast=False)
    differing = Intent(ports={**want.ports, "Ethernet2": Port(
        lossless_priorities=(3,), pfc_watchdog=Watchdog(detection_ms=100))})
    with pytest.raises(Unsupported, match="one per switch"):
        model.edit(differing, factory)
    odd = Intent(ports={"Ethernet1": Port(lossless_priorities=(3,),
                                          pfc_watchdog=Watchdog(detection_ms=205))})
    with pytest.raises(Unsupported, match="hundredths"):
        model.edit(odd, factory)


def test_arista_no_drop_bitmap_is_hex_of_the_priorities() -> None:
    model, factory = _session("openconfig+arista+msoctl")
    want = Intent(ports={"Ethernet1": Port(lossless_priorities=(3, 4))})
    after = factory.apply(model.edit(want, factory))
    leaves = after.leaves()
    bitmap = [v for k, v in leaves.items() if k.endswith("priorities-no-drop")]
    assert bitmap == ["18"]


def test_detect_prefers_openconfig_then_sonic_then_msoctl() -> None:
    assert detect({"openconfig-qos", "sonic-db"}, device="sw") == "openconfig"
    assert detect({"sonic-db"}, device="sw") == "sonic"
    assert detect({"msoctl-congestion"}, device="sw") == "msoctl"
    with pytest.raises(Unsupported, match="none of the models"):
        detect({"openconfig-interfaces"}, device="sw")


def test_intent_documents_round_trip_and_old_want_files_convert() -> None:
    want = full_intent(fast=True)
    assert from_dict(to_dict(want)) == want
    legacy = check(to_tree(want))
    assert from_legacy(legacy) == want


@pytest.mark.parametrize(("document", "message"), [
    ({"congestion_control": {"ports": {"Ethernet1": {"sped": "400G"}}}},
     "ports.Ethernet1.sped: unknown"),
    ({"congestion_control": {"ports": {"Ethernet1": {"speed": "300G"}}}}, "not one of"),
    ({"congestion_control": {"ports": {"Ethernet1": {"queues": {9: {}}}}}}, "out of range 0..7"),
    ({"congestion_control": {"ports": {"Ethernet1": {"queues": {3: {
        "ecn": {"min_bytes": 5, "max_bytes": 4, "probability_percent": 1}}}}}}},
     "above max_bytes"),
    ({"congestion_control": {"ports": {"Ethernet1": {"xoff_bytes": 5}}}}, "together"),
    ({"congestion_control": {"fast_cnp": {"cnp_dscp": 48}}}, "needs enabled"),
])
def test_bad_intent_is_refused_naming_the_field(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        from_dict(document, source="want.yaml")


def test_fast_cnp_asked_off_is_met_by_a_switch_without_it() -> None:
    """SONiC has no switch-generated CNPs: a WANT that turns them off (with the DSCP and
    priority they would use) is met there; one that turns them on is not."""
    model, factory = _session("sonic")
    off = Intent(ports={"Ethernet1": Port(queues={3: Queue(
        ecn=Thresholds(1_000, 2_000, 5), fast_cnp=False)})},
        fast_cnp=FastCnp(enabled=False, cnp_dscp=48, cnp_priority=6))
    have = model.parse(factory.apply(model.edit(off, factory)))
    assert have.fast_cnp == FastCnp(enabled=False)
    assert unmet(off, have) == []
    on = Intent(fast_cnp=FastCnp(enabled=True))
    assert [d.path for d in unmet(on, have)] == ["fast_cnp.enabled"]
