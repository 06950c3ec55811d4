"""drivers/switch/xmljson.py: a device model's JSON edit as NETCONF XML, and XML back as
the model's JSON trees (RFC 7950 section 7, RFC 7951)."""

from __future__ import annotations

from lxml import etree

from drivers.switch.jsontree import Trees, path
from drivers.switch.models import build
from drivers.switch.models.openconfig import INTERFACES, NAMESPACES, QOS, XML_SHAPE
from drivers.switch.xmljson import NETCONF_NS, edit_config, read_trees, subtree_filter
from tests.support.switch_models import full_intent, oc_factory

QOS_NS = NAMESPACES["openconfig-qos"]
AUGMENTS = ("openconfig-qos", "arista-qos-augments", "msoctl-qos-augments")


def _through_the_wire(element: etree._Element) -> etree._Element:
    """What the server parses: the serialized text, as a reply's <data> would carry it."""
    text = etree.tostring(element).replace(b"nc:config", b"nc:data")
    return etree.fromstring(text)


def test_an_edit_reads_back_as_the_same_json() -> None:
    model = build("openconfig", AUGMENTS, device="sw")
    factory = Trees({QOS: {}, INTERFACES: {}}, list_keys=model.list_keys)
    edit = model.edit(full_intent(fast=True), Trees(oc_factory(), list_keys=model.list_keys))
    expected = factory.apply(edit)
    back = Trees(read_trees(_through_the_wire(edit_config(edit, XML_SHAPE)), (QOS, INTERFACES),
                            XML_SHAPE), list_keys=model.list_keys)
    assert back.leaves() == expected.leaves()
    assert model.parse(back).ports == model.parse(expected).ports


def test_operations_keys_first_and_namespaces() -> None:
    model = build("openconfig", AUGMENTS, device="sw")
    edit = model.edit(full_intent(fast=True), Trees(oc_factory(), list_keys=model.list_keys))
    edit.delete.append(path("openconfig-qos:qos", "queue-management-profiles",
                            ("queue-management-profile", (("name", "old"),))))
    config = edit_config(edit, XML_SHAPE)
    operation = f"{{{NETCONF_NS}}}operation"
    profiles = config.findall(
        f".//{{{QOS_NS}}}queue-management-profiles/{{{QOS_NS}}}queue-management-profile")
    assert {p.get(operation) for p in profiles} == {"replace", "remove"}
    removed = next(p for p in profiles if p.get(operation) == "remove")
    assert [etree.QName(c).localname for c in removed] == ["name"]
    for entry in config.iter(f"{{{QOS_NS}}}interface"):
        assert etree.QName(entry[0]).localname == "interface-id"  # the key comes first
    headroom = config.find(f".//{{{NAMESPACES['msoctl-qos-augments']}}}headroom")
    assert headroom is not None and headroom.getparent().tag == f"{{{QOS_NS}}}interface"
    # an identity of the leaf's own namespace goes without a prefix (RFC 7950 9.10.3), so
    # no declaration can be lost when the document is put into the RPC
    speed = next(config.iter(f"{{{NAMESPACES['openconfig-if-ethernet']}}}port-speed"))
    assert speed.text == "SPEED_400GB"
    assert etree.QName(speed).namespace == NAMESPACES["openconfig-if-ethernet"]
    rpc = etree.Element(f"{{{NETCONF_NS}}}edit-config", nsmap={None: NETCONF_NS})
    rpc.append(config)
    sent = etree.fromstring(etree.tostring(rpc))
    read = read_trees(sent.find(f"{{{NETCONF_NS}}}config"), (INTERFACES,), XML_SHAPE)
    assert "openconfig-if-ethernet:SPEED_400GB" in str(read[INTERFACES])


def test_a_reply_without_the_tree_reads_as_none_and_the_filter_names_each_top() -> None:
    data = etree.fromstring(f'<data xmlns="{NETCONF_NS}"/>')
    assert read_trees(data, (QOS, INTERFACES), XML_SHAPE) == {QOS: None, INTERFACES: None}
    tops = subtree_filter((QOS, INTERFACES), XML_SHAPE)
    assert [(etree.QName(t).namespace, etree.QName(t).localname) for t in tops] == [
        (QOS_NS, "qos"), (NAMESPACES["openconfig-interfaces"], "interfaces")]
