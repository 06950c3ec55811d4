"""OpenConfig over NETCONF on the emulated switch (emulators/netconf/openconfig.py), with
ncclient as the client: the hello and the YANG library name each module the face serves
with its revision; the datastores hold the face's factory tree in the published
namespaces; edit-config's operations and subtree filters work on OpenConfig's trees as
on the msoctl module's; a commit reaches the chip through the face and ``<get>`` shows
its state; what the model or the chip refuses is an rpc-error with its path; confirmed
commits are cancelled, or rolled back when the device's clock passes their timeout.

Two switches: OpenConfig with Arista's augments (and the project's), and with the
project's alone; both on stepped clocks, put back to factory before each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lxml import etree
from ncclient.manager import Manager
from ncclient.operations.rpc import RPCError

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.netconf.library import MSOCTL_MODULES, YANG_LIBRARY_NS
from emulators.netconf.monitoring import MONITORING_NS
from emulators.netconf.openconfig import OpenConfigSchema, derived_nodes
from emulators.switch.device import SwitchDevice
from emulators.switch.faces import openconfig_schema as table
from emulators.switch.faces.openconfig import Augments, OpenConfigFace
from emulators.switch.faces.openconfig_schema import NAMESPACES
from emulators.switch.model import PhysicalPort
from tests.support.netconf import BASE, PASSWORD, USER, Loop, netconf

PORTS = {f"Ethernet{n}": PhysicalPort("400G", 30_010.0) for n in range(1, 5)}
QOS = NAMESPACES["openconfig-qos"]
IF = NAMESPACES["openconfig-interfaces"]
ETH = NAMESPACES["openconfig-if-ethernet"]
IANA = NAMESPACES["iana-if-type"]
MSO = NAMESPACES["msoctl-qos-augments"]
NC = f'xmlns="{BASE}" xmlns:nc="{BASE}"'
AUGMENTS: tuple[Augments, ...] = ("arista", "msoctl")


@pytest.fixture(scope="module")
def devices(loop: Loop) -> Iterator[dict[str, SwitchDevice]]:
    found: dict[str, SwitchDevice] = {augments: SwitchDevice(f"sw-oc-{augments}", PORTS,
                                    clock=SteppedClock(jump_on_sleep=False),
                                    users={USER: PASSWORD}, face="openconfig",
                                    augments=augments, transport="netconf")
             for augments in AUGMENTS}
    for device in found.values():
        loop.run(device.start())
    yield found
    for device in found.values():
        loop.run(device.stop())


@pytest.fixture(params=AUGMENTS)
def switch(devices: dict[str, SwitchDevice], request: pytest.FixtureRequest) -> SwitchDevice:
    device = devices[request.param]
    device.factory_reset()
    return device


@pytest.fixture
def arista(devices: dict[str, SwitchDevice]) -> SwitchDevice:
    device = devices["arista"]
    device.factory_reset()
    return device


def q(local: str) -> str:
    return f"{{{QOS}}}{local}"


def config(body: str) -> str:
    return f"<config {NC}>{body}</config>"


def qos(body: str) -> str:
    return config(f'<qos xmlns="{QOS}">{body}</qos>')


PROFILE = ("<queue-management-profiles><queue-management-profile nc:operation='replace'>"
           "<name>roce-ecn</name><config><name>roce-ecn</name></config><wred><uniform><config>"
           "<min-threshold>3787879</min-threshold><max-threshold>30303030</max-threshold>"
           "<max-drop-probability-percent>20</max-drop-probability-percent>"
           "<enable-ecn>true</enable-ecn></config></uniform></wred>"
           "</queue-management-profile></queue-management-profiles>")
BINDING = ("<interfaces><interface><interface-id>Ethernet1</interface-id>"
           "<config><interface-id>Ethernet1</interface-id></config><output><queues>"
           "<queue nc:operation='replace'><name>queue3</name><config><name>queue3</name>"
           "<queue-management-profile>roce-ecn</queue-management-profile></config></queue>"
           "</queues></output></interface></interfaces>")


def edit(session: Manager, body: str, **options: Any) -> None:
    session.edit_config(target="candidate", config=body, **options)


def data(session: Manager, source: str = "running", flt: str | None = None) -> etree._Element:
    reply = session.get_config(source=source, filter=("subtree", flt) if flt else None)
    return reply.data


def profile(session: Manager, source: str = "running") -> etree._Element | None:
    found: etree._Element | None = data(session, source).find(
        f"{q('qos')}/{q('queue-management-profiles')}/{q('queue-management-profile')}")
    return found


def chip_queue3(switch: SwitchDevice) -> Any:
    return switch.model.config.port("Ethernet1").queue(3).wred


# ---- the hello and the library ----------------------------------------------------------


def test_the_hello_and_the_library_name_each_module_with_its_revision(
        switch: SwitchDevice) -> None:
    served = [m for m in table.MODELS if m.part in table.PARTS[switch.augments]]
    with netconf(switch.port) as session:
        capabilities = list(session.server_capabilities)
        for model in served:
            assert f"{NAMESPACES[model.name]}?module={model.name}&revision={model.revision}" \
                in capabilities
        assert ("arista-qos-augments" in {m.name for m in served}) is \
            (switch.augments == "arista")
        assert not any(MSOCTL_MODULES[0].namespace in c for c in capabilities)
        assert any(c.endswith(":confirmed-commit:1.1") for c in capabilities)
        reply = session.get(filter=("subtree", f'<modules-state xmlns="{YANG_LIBRARY_NS}"/>'))
        library = {e.findtext(f"{{{YANG_LIBRARY_NS}}}name"): e.findtext(
            f"{{{YANG_LIBRARY_NS}}}revision") for e in reply.data.iterfind(
            f"{{{YANG_LIBRARY_NS}}}modules-state/{{{YANG_LIBRARY_NS}}}module")}
        assert {m.name: m.revision for m in served}.items() <= library.items()
        schemas = session.get(filter=("subtree", f'<netconf-state xmlns="{MONITORING_NS}">'
                                                 "<schemas/></netconf-state>"))
        listed = {e.text for e in schemas.data.iter(f"{{{MONITORING_NS}}}identifier")}
        # the texts the server carries: the project's augments, not OpenConfig's
        assert "msoctl-qos-augments" in listed
        assert not listed & {"openconfig-qos", "openconfig-interfaces", "arista-qos-augments"}
        text = session.get_schema("msoctl-qos-augments").data
        assert "module msoctl-qos-augments {" in text
        assert f"revision {library['msoctl-qos-augments']} {{" in text  # the one announced
        with pytest.raises(RPCError) as missing:
            session.get_schema("openconfig-qos")
        assert missing.value.tag == "invalid-value"


def test_sonic_has_no_netconf_and_the_msoctl_module_no_gnmi() -> None:
    clock = SteppedClock()
    with pytest.raises(ValueError, match="community SONiC has no NETCONF"):
        SwitchDevice("sw", PORTS, clock=clock, face="sonic", transport="netconf")
    with pytest.raises(ValueError, match="NETCONF only"):
        SwitchDevice("sw", PORTS, clock=clock, face="msoctl", transport="gnmi")
    assert SwitchDevice("sw", PORTS, clock=clock, face="openconfig").transport == "gnmi"


def test_the_datastores_schema_is_the_faces_table() -> None:
    """The guard of the derived schema: every row of the face's table is a configuration
    node at its path, every list's key leaf has its config/<key>'s type, every config
    container has a state mirror, and nothing else is configuration."""
    for augments in AUGMENTS:
        nodes, types = derived_nodes(augments)
        rows = table.nodes(table.PARTS[augments])
        config = {"/" + "/".join(path) for path, node in nodes.items() if node.config}
        keys = {f"{path}/{row.key}" for path, row in rows.items() if row.kind == "list"}
        assert config == set(rows) | keys
        for path, row in rows.items():
            node = nodes[tuple(path[1:].split("/"))]
            assert (node.kind, node.keys) == (row.kind, (row.key,) if row.key else ())
            if "/config" in path:
                mirror = nodes[tuple(path.replace("/config", "/state", 1)[1:].split("/"))]
                assert (mirror.kind, mirror.config) == (row.kind, False)
        for key in keys:
            parent, _, name = key.rpartition("/")
            assert types[tuple(key[1:].split("/"))] == rows[f"{parent}/config/{name}"].type


# ---- reading ----------------------------------------------------------------------------


def test_every_datastore_holds_the_factory_tree(switch: SwitchDevice) -> None:
    assert isinstance(switch.face, OpenConfigFace)
    schema = OpenConfigSchema(switch.face.augments)
    with netconf(switch.port) as session:
        for source in ("running", "candidate", "startup"):
            found = data(session, source)
            assert schema.to_tree(found) == switch.face.factory(), source
        interface = found.find(f"{{{IF}}}interfaces/{{{IF}}}interface")
        assert interface is not None and interface.findtext(f"{{{IF}}}name") == "Ethernet1"
        speed = interface.find(f"{{{ETH}}}ethernet/{{{ETH}}}config/{{{ETH}}}port-speed")
        assert speed is not None
        prefix, _, name = str(speed.text).partition(":")
        assert (speed.nsmap[prefix], name) == (ETH, "SPEED_400GB")  # RFC 7950 9.10.3
        kind = interface.find(f"{{{IF}}}config/{{{IF}}}type")
        assert kind is not None
        prefix, _, name = str(kind.text).partition(":")
        assert (kind.nsmap[prefix], name) == (IANA, "ethernetCsmacd")
        queues = found.findall(f"{q('qos')}/{q('queues')}/{q('queue')}")
        assert [(e.findtext(q("name")), e.findtext(f"{q('config')}/{q('queue-id')}"))
                for e in queues] == [(f"queue{n}", str(n)) for n in range(8)]


def test_subtree_filters_select_within_openconfigs_trees(switch: SwitchDevice) -> None:
    with netconf(switch.port) as session:
        edit(session, qos(PROFILE + BINDING))
        session.commit()
        one = data(session, flt=f'<interfaces xmlns="{IF}"><interface><name>Ethernet2</name>'
                                "</interface></interfaces>")
        assert [e.findtext(f"{{{IF}}}name") for e in one.iter(f"{{{IF}}}interface")] == \
            ["Ethernet2"]
        assert one.find(q("qos")) is None
        queue = data(session, flt=f'<qos xmlns="{QOS}"><queues><queue><name>queue3</name>'
                                  "</queue></queues></qos>")
        assert [e.findtext(q("name")) for e in queue.iter(q("queue"))] == ["queue3"]
        speeds = data(session, flt=f'<interfaces xmlns="{IF}"><interface><name/><ethernet '
                                   f'xmlns="{ETH}"><config><port-speed/></config></ethernet>'
                                   "</interface></interfaces>")
        assert len(list(speeds.iter(f"{{{ETH}}}port-speed"))) == len(PORTS)
        assert speeds.find(f".//{{{IF}}}config") is None
        state = session.get(filter=("subtree", f'<qos xmlns="{QOS}"><interfaces><interface>'
                                               "<interface-id>Ethernet1</interface-id><output>"
                                               "<queues><queue><name>queue3</name><state/>"
                                               "</queue></queues></output></interface>"
                                               "</interfaces></qos>")).data
        [held] = state.iter(q("state"))
        assert held.findtext(q("queue-management-profile")) == "roce-ecn"
        assert state.find(f".//{q('config')}") is None


# ---- changing -------------------------------------------------------------------------


def test_replace_commit_and_get_shows_state_and_counters(switch: SwitchDevice) -> None:
    with netconf(switch.port) as session:
        edit(session, qos(PROFILE + BINDING))
        assert profile(session) is None  # the candidate holds it, running not yet
        session.commit()
        held = profile(session)
        assert held is not None and held.findtext(
            f"{q('wred')}/{q('uniform')}/{q('config')}/{q('min-threshold')}") == "3787879"
        wred = chip_queue3(switch)
        assert (wred.min_threshold_bytes, wred.max_threshold_bytes, wred.enable_ecn) == (
            3_787_879, 30_303_030, True)
        switch.faults.inject(Fault("congestion", target="Ethernet1@3", seconds=2e-3))
        assert isinstance(switch.clock, SteppedClock)
        switch.clock.advance(5e-3)
        reply = session.get(filter=("subtree", f'<qos xmlns="{QOS}"><interfaces/></qos>')).data
        [interface] = [e for e in reply.iter(q("interface"))
                       if e.findtext(q("interface-id")) == "Ethernet1"]
        [queue] = [e for e in interface.iter(q("queue")) if e.findtext(q("name")) == "queue3"]
        state = queue.find(q("state"))
        assert state is not None
        assert state.findtext(q("queue-management-profile")) == "roce-ecn"  # mirrors config
        assert state.findtext(q("name")) == "queue3"
        assert int(str(state.findtext(q("ecn-marked-pkts")))) > 0
        assert int(str(state.findtext(q("max-queue-len")))) > 0
        assert state.findtext(f"{{{MSO}}}pfc-pause-frames-sent") is not None
        assert interface.find(f"{q('state')}/{q('interface-id')}") is not None
        # and the operations on list entries and containers: merge, create, delete, remove
        edit(session, qos(PROFILE.replace("nc:operation='replace'", "nc:operation='create'")
                          .replace("roce-ecn", "second")))
        with pytest.raises(RPCError) as exists:
            edit(session, qos(PROFILE.replace("nc:operation='replace'",
                                              "nc:operation='create'")))
        assert exists.value.tag == "data-exists"
        assert exists.value.path == (
            "/openconfig-qos:qos/openconfig-qos:queue-management-profiles/"
            "openconfig-qos:queue-management-profile[openconfig-qos:name='roce-ecn']")
        gone = ("<queue-management-profiles><queue-management-profile nc:operation='{op}'>"
                "<name>{name}</name></queue-management-profile></queue-management-profiles>")
        edit(session, qos(gone.format(op="delete", name="second")))
        edit(session, qos(gone.format(op="remove", name="second")))  # nothing to remove: fine
        with pytest.raises(RPCError) as missing:
            edit(session, qos(gone.format(op="delete", name="second")))
        assert missing.value.tag == "data-missing"
        edit(session, config(f'<interfaces xmlns="{IF}"><interface><name>Ethernet2</name>'
                             f'<config><description>to the far hall</description></config>'
                             "</interface></interfaces>"))
        session.commit()
        ethernet2 = data(session, flt=f'<interfaces xmlns="{IF}"><interface><name>Ethernet2'
                                      "</name></interface></interfaces>")
        assert ethernet2.findtext(f".//{{{IF}}}description") == "to the far hall"
        assert ethernet2.findtext(f".//{{{IF}}}type") is not None  # merged, not replaced


@pytest.mark.parametrize(("body", "tag", "path", "bad"), [
    pytest.param(qos("<queue-management-profiles><queue-management-profile><name>p</name>"
                     "<wred><uniform><config><min-threshold>many</min-threshold></config>"
                     "</uniform></wred></queue-management-profile></queue-management-profiles>"),
                 "invalid-value",
                 "/openconfig-qos:qos/openconfig-qos:queue-management-profiles/"
                 "openconfig-qos:queue-management-profile[openconfig-qos:name='p']/"
                 "openconfig-qos:wred/openconfig-qos:uniform/openconfig-qos:config/"
                 "openconfig-qos:min-threshold", "min-threshold", id="uint64 not a number"),
    pytest.param(qos("<queues><queue><name>queue3</name><config><queue-id>300</queue-id>"
                     "</config></queue></queues>"), "invalid-value",
                 "/openconfig-qos:qos/openconfig-qos:queues/openconfig-qos:queue"
                 "[openconfig-qos:name='queue3']/openconfig-qos:config/openconfig-qos:queue-id",
                 "queue-id", id="uint8 out of range"),
    pytest.param(qos("<queues><queue><name>queue3</name><config><colour>red</colour>"
                     "</config></queue></queues>"), "unknown-element",
                 "/openconfig-qos:qos/openconfig-qos:queues/openconfig-qos:queue"
                 "[openconfig-qos:name='queue3']/openconfig-qos:config", "colour",
                 id="unknown leaf"),
    pytest.param(qos("<queues><queue><name>queue3</name><state><queue-id>3</queue-id>"
                     "</state></queue></queues>"), "invalid-value",
                 "/openconfig-qos:qos/openconfig-qos:queues/openconfig-qos:queue"
                 "[openconfig-qos:name='queue3']/openconfig-qos:state", "state",
                 id="state data"),
    pytest.param(config(f'<interfaces xmlns="{IF}"><interface><name>Ethernet1</name>'
                        f'<ethernet xmlns="{ETH}"><config><port-speed>eth:SPEED_400GB'
                        "</port-speed></config></ethernet></interface></interfaces>"),
                 "invalid-value",
                 "/openconfig-interfaces:interfaces/openconfig-interfaces:interface"
                 "[openconfig-interfaces:name='Ethernet1']/openconfig-if-ethernet:ethernet/"
                 "openconfig-if-ethernet:config/openconfig-if-ethernet:port-speed",
                 "port-speed", id="identity with a prefix not declared"),
    pytest.param(config(f'<interfaces xmlns="{IF}"><interface><name>Ethernet1</name>'
                        f'<ethernet xmlns="{ETH}"><config><port-speed>openconfig-if-ethernet:'
                        "SPEED_400GB</port-speed></config></ethernet></interface></interfaces>"),
                 "invalid-value",
                 "/openconfig-interfaces:interfaces/openconfig-interfaces:interface"
                 "[openconfig-interfaces:name='Ethernet1']/openconfig-if-ethernet:ethernet/"
                 "openconfig-if-ethernet:config/openconfig-if-ethernet:port-speed",
                 "port-speed", id="identity in RFC 7951's form, its prefix not declared"),
])
def test_a_leaf_that_does_not_fit_is_refused_with_its_path(
        arista: SwitchDevice, body: str, tag: str, path: str, bad: str) -> None:
    with netconf(arista.port) as session:
        before = etree.tostring(data(session, "candidate"))
        with pytest.raises(RPCError) as refused:
            edit(session, body, error_option="rollback-on-error")
        assert (refused.value.tag, refused.value.path) == (tag, path)
        assert f"<bad-element>{bad}</bad-element>" in str(refused.value.info)
        assert etree.tostring(data(session, "candidate")) == before


def test_an_identity_is_read_in_the_prefix_the_request_declares(arista: SwitchDevice) -> None:
    with netconf(arista.port) as session:
        edit(session, config(f'<interfaces xmlns="{IF}" xmlns:x="{ETH}"><interface>'
                             f'<name>Ethernet2</name><ethernet xmlns="{ETH}"><config>'
                             "<port-speed>x:SPEED_800GB</port-speed></config></ethernet>"
                             "</interface></interfaces>"))
        session.commit()
        assert arista.model.config.port("Ethernet2").speed == "800G"
        [speed] = [e for e in data(session).iter(f"{{{ETH}}}port-speed")
                   if e.getparent().getparent().getparent().findtext(f"{{{IF}}}name") ==
                   "Ethernet2"]
        prefix, _, name = str(speed.text).partition(":")
        assert (speed.nsmap[prefix], name) == (ETH, "SPEED_800GB")


def test_what_the_model_or_the_chip_refuses_at_commit_is_an_rpc_error(
        arista: SwitchDevice) -> None:
    with netconf(arista.port) as session:
        edit(session, config(f'<interfaces xmlns="{IF}"><interface><name>Ethernet1</name>'
                             f'<ethernet xmlns="{ETH}" xmlns:eth="{ETH}"><config><port-speed>'
                             "eth:SPEED_10GB</port-speed></config></ethernet></interface>"
                             "</interfaces>"))
        with pytest.raises(RPCError) as refused:
            session.commit()
        assert refused.value.tag == "operation-failed"
        assert refused.value.path == (
            "/openconfig-interfaces:interfaces/openconfig-interfaces:interface"
            "[openconfig-interfaces:name='Ethernet1']/openconfig-if-ethernet:ethernet/"
            "openconfig-if-ethernet:config/openconfig-if-ethernet:port-speed")
        assert "the chip's ports run at" in str(refused.value.message)
        session.discard_changes()
        edit(session, qos(BINDING))  # a profile nobody defined
        with pytest.raises(RPCError) as dangling:
            session.validate(source="candidate")
        assert dangling.value.tag == "operation-failed"
        assert str(dangling.value.path).endswith(
            "openconfig-qos:config/openconfig-qos:queue-management-profile")
        assert "roce-ecn" in str(dangling.value.message)
        with pytest.raises(RPCError):
            session.commit()
    assert arista.model.config.port("Ethernet1").speed == "400G"
    assert chip_queue3(arista).has_thresholds is False


# ---- confirmed commits ------------------------------------------------------------------


def test_confirmed_commit_is_cancelled_or_rolled_back_on_the_devices_clock(
        switch: SwitchDevice) -> None:
    clock = switch.clock
    assert isinstance(clock, SteppedClock)
    with netconf(switch.port) as session:
        edit(session, qos(PROFILE + BINDING))
        session.commit(confirmed=True, timeout="60", persist="oc-1")
    with netconf(switch.port) as other:
        assert profile(other) is not None
        assert chip_queue3(switch).enable_ecn is True
        other.cancel_commit(persist_id="oc-1")
        assert profile(other) is None
        assert profile(other, "candidate") is None
    assert chip_queue3(switch).has_thresholds is False
    with netconf(switch.port) as session:
        edit(session, qos(PROFILE + BINDING))
        session.commit(confirmed=True, timeout="30")
        assert chip_queue3(switch).enable_ecn is True
        clock.advance(31)
        assert profile(session) is None  # rolled back before this RPC ran
    assert chip_queue3(switch).has_thresholds is False


def test_factory_reset_puts_every_datastore_and_the_chip_back(arista: SwitchDevice) -> None:
    with netconf(arista.port) as session:
        edit(session, qos(PROFILE + BINDING))
        session.commit()
        session.copy_config(source="running", target="startup")
        assert profile(session, "startup") is not None
    arista.factory_reset()
    assert chip_queue3(arista).has_thresholds is False
    with netconf(arista.port) as session:
        assert all(profile(session, source) is None
                   for source in ("running", "candidate", "startup"))
