"""Module discovery on the switch emulator, through a real ncclient client: the hello's
capabilities, ietf-netconf-monitoring's schema list and <get-schema> (every module of the
library, the standard ones included), the YANG library; and a client with no copy of
yang/ that fetches the modules, loads them and edits with them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from ncclient.manager import Manager
from ncclient.operations.rpc import RPCError

from drivers.switch.schema import MODULE, NAMESPACE, REVISION
from emulators.netconf import NetconfServer
from emulators.netconf.capabilities import NETCONF_FEATURES, announced
from emulators.netconf.datastore import Datastores, capabilities
from emulators.netconf.library import (
    MONITORING_CAPABILITY,
    YANG_LIBRARY_NS,
    YANG_LIBRARY_REVISION,
    Library,
    Module,
)
from emulators.netconf.messages import NETCONF_NS, RpcError
from emulators.netconf.monitoring import MONITORING_NS
from tests.support.netconf import NC, NS, PASSWORD, USER, Loop, Switch, leaf, netconf
from tests.support.paths import YANG
from tests.support.peers import missing, require_module

MODULE_FILE = YANG / f"{MODULE}.yang"
YANG_LIBRARY_1_0 = "urn:ietf:params:netconf:capability:yang-library:1.0"
YANG_LIBRARY_1_1 = "urn:ietf:params:netconf:capability:yang-library:1.1"
# pyang installs the IETF modules it knows here; ietf-netconf-monitoring is one
PYANG_MODULES = Path(sys.prefix) / "share" / "yang" / "modules" / "ietf"


@pytest.fixture(scope="module")
def switch(loop: Loop) -> Iterator[Switch]:
    """One emulator for the module: these tests only read, except the last, which
    discards what it committed."""
    running = Switch(loop)
    yield running
    running.stop()


def m(local: str) -> str:
    return f"{{{MONITORING_NS}}}{local}"


def y(local: str) -> str:
    return f"{{{YANG_LIBRARY_NS}}}{local}"


def parameters(uri: str) -> dict[str, str]:
    return dict(part.partition("=")[::2] for part in uri.partition("?")[2].split("&"))


def carried(identifier: str, version: str) -> Path:
    """The file of yang/ a listed schema should come from."""
    dated = YANG / f"{identifier}@{version}.yang"
    return dated if dated.is_file() else YANG / f"{identifier}.yang"


def listed_schemas(session: Manager) -> dict[str, str]:
    """/netconf-state/schemas: version by identifier (one version of each here)."""
    data = session.get(filter=("subtree", f'<netconf-state xmlns="{MONITORING_NS}">'
                               "<schemas/></netconf-state>")).data
    entries = [(entry.findtext(m("identifier")) or "", entry.findtext(m("version")) or "")
               for entry in data.iterfind(f".//{m('schema')}")]
    assert len(dict(entries)) == len(entries), entries
    return dict(entries)


def state(session: Manager, element: str) -> Any:
    """The one top-level element ``element`` (Clark name) of an unfiltered <get>."""
    found = session.get().data.find(element)
    assert found is not None, element
    return found


# ---- the hello ---------------------------------------------------------------------------


def test_the_hello_announces_monitoring_and_the_yang_library(switch: Switch) -> None:
    """RFC 6022 (the ietf-netconf-monitoring module's URI); RFC 8526 2: the revision
    implemented, 2019-01-04, announced as :yang-library:1.1 with the content-id of
    /yang-library; RFC 7950 5.6.4: :yang-library:1.0 with that revision and the
    module-set-id of /modules-state, which the revision keeps (deprecated)."""
    with netconf(switch.server.port) as session:
        capabilities = list(session.server_capabilities)
        assert MONITORING_CAPABILITY in capabilities
        [new] = [c for c in capabilities if c.startswith(f"{YANG_LIBRARY_1_1}?")]
        [old] = [c for c in capabilities if c.startswith(f"{YANG_LIBRARY_1_0}?")]
        assert set(parameters(new)) == {"revision", "content-id"}
        assert set(parameters(old)) == {"revision", "module-set-id"}
        assert parameters(new)["revision"] == parameters(old)["revision"] == \
            YANG_LIBRARY_REVISION
        yang_library = state(session, y("yang-library"))
        assert yang_library.findtext(y("content-id")) == parameters(new)["content-id"]
        modules_state = state(session, y("modules-state"))
        assert modules_state.findtext(y("module-set-id")) == parameters(old)["module-set-id"]
        implemented = {entry.findtext(y("name")): entry.findtext(y("revision"))
                       for entry in modules_state.iterfind(y("module"))
                       if entry.findtext(y("conformance-type")) == "implement"}
        assert implemented["ietf-yang-library"] == YANG_LIBRARY_REVISION
        assert implemented[MODULE] == REVISION
        assert implemented["ietf-netconf-monitoring"] == "2010-10-04"
        in_module_set = {entry.findtext(y("name")): entry.findtext(y("revision"))
                         for entry in yang_library.iterfind(f"{y('module-set')}/{y('module')}")}
        assert in_module_set == implemented


def test_each_id_changes_with_its_own_tree(loop: Loop) -> None:
    """RFC 8525: the content-id changes when anything /yang-library says does (here: the
    datastores, and ietf-netconf's features); the module-set-id when the module list
    does (the features)."""
    ids = []
    for candidate in (True, False):
        server = Switch(loop, candidate=candidate)
        try:
            with netconf(server.server.port) as session:
                ids.append((state(session, y("yang-library")).findtext(y("content-id")),
                            state(session, y("modules-state")).findtext(y("module-set-id"))))
        finally:
            server.stop()
    (content_with, set_with), (content_without, set_without) = ids
    assert content_with != content_without and set_with != set_without


@contextmanager
def serving(loop: Loop, **announce: bool) -> Iterator[int]:
    """A server announcing ``capabilities(**announce)``, its datastores registered; its
    port."""
    datastores = Datastores(candidate=announce.get("candidate", True))
    server = NetconfServer(name="sw-features", users={USER: PASSWORD},
                           capabilities=capabilities(**announce),
                           on_session_end=datastores.session_ended)
    datastores.register(server)
    loop.run(server.start())
    try:
        yield server.port
    finally:
        loop.run(server.stop())
        loop.loop.call_soon_threadsafe(datastores.close)


@pytest.mark.parametrize(("announce", "features"), [
    ({}, ["candidate", "confirmed-commit", "rollback-on-error", "validate", "startup"]),
    ({"confirmed_commit": False}, ["candidate", "rollback-on-error", "validate", "startup"]),
    ({"candidate": False}, ["writable-running", "rollback-on-error", "validate", "startup"]),
], ids=["candidate", "no-confirmed-commit", "writable-running"])
def test_ietf_netconf_is_announced_with_the_features_its_capabilities_enable(
        loop: Loop, announce: dict[str, bool], features: list[str]) -> None:
    """RFC 6020 5.6.4: the module's URI carries the features the server supports; each
    feature of ietf-netconf@2011-06-01 "must be enabled" when the server advertises its
    capability and "must not be enabled" otherwise. ncclient reads them from the hello
    (so a generic client offers a confirmed commit when, and only when, the
    confirmed-commit feature is there), and the YANG library lists the same ones."""
    with serving(loop, **announce) as port, netconf(port) as session:
        [uri] = [c for c in session.server_capabilities if c.startswith(f"{NETCONF_NS}?")]
        parsed = session.server_capabilities[uri].parameters
        assert (parsed["module"], parsed["revision"]) == ("ietf-netconf", "2011-06-01")
        assert parsed["features"].split(",") == features
        present = announced(session.server_capabilities)
        assert [feature for feature, capability in NETCONF_FEATURES.items()
                if capability in present] == features
        for tree, path in (("yang-library", f"{y('module-set')}/{y('module')}"),
                           ("modules-state", y("module"))):
            [entry] = [entry for entry in state(session, y(tree)).iterfind(path)
                       if entry.findtext(y("name")) == "ietf-netconf"]
            assert [feature.text for feature in entry.iterfind(y("feature"))] == features


def test_a_hello_and_a_library_that_disagree_are_refused(loop: Loop) -> None:
    """The datastores refuse a server whose hello lacks what their YANG library says."""
    datastores = Datastores()
    server = NetconfServer(name="sw-disagree", capabilities=capabilities(candidate=False))
    with pytest.raises(ValueError, match="does not announce"):
        Datastores(library=datastores.library).register(server)


# ---- ietf-netconf-monitoring ------------------------------------------------------------


def test_the_schema_list_names_what_get_schema_returns(switch: Switch) -> None:
    """RFC 6022 2.1.3: /netconf-state/schemas lists each schema with its identifier,
    version, format, namespace and where to get it (NETCONF: the get-schema operation);
    it is state data, absent from get-config."""
    schema_filter = (f'<netconf-state xmlns="{MONITORING_NS}"><schemas><schema>'
                     f"<identifier>{MODULE}</identifier></schema></schemas></netconf-state>")
    with netconf(switch.server.port) as session:
        reply = session.get(filter=("subtree", schema_filter))
        [entry] = reply.data.findall(f"{m('netconf-state')}/{m('schemas')}/{m('schema')}")
        assert {etree.QName(child).localname: child.text for child in entry} == {
            "identifier": MODULE, "version": REVISION, "format": "yang",
            "namespace": NAMESPACE, "location": "NETCONF"}
        assert session.get_config(source="running").data.find(m("netconf-state")) is None
        capabilities = [c.text for c in state(session, m("netconf-state")).iterfind(
            f"{m('capabilities')}/{m('capability')}")]
        assert capabilities == list(session.server_capabilities)


def test_get_schema_returns_the_module_file_itself(switch: Switch) -> None:
    """RFC 6022 3.1: get-schema by identifier, with or without version and format,
    answers the schema text: yang/msoctl-congestion.yang, byte for byte."""
    text = MODULE_FILE.read_text(encoding="utf-8")
    with netconf(switch.server.port) as session:
        assert session.get_schema(MODULE).data == text
        assert session.get_schema(MODULE, version=REVISION, format="yang").data == text
        prefixed = etree.Element(m("get-schema"), nsmap={"ncm": MONITORING_NS})
        etree.SubElement(prefixed, m("identifier")).text = MODULE
        etree.SubElement(prefixed, m("format")).text = "ncm:yang"
        reply = etree.fromstring(session.dispatch(prefixed).xml.encode())
        assert reply.findtext(m("data")) == text


def test_every_module_of_the_library_is_a_schema_get_schema_returns(switch: Switch) -> None:
    """RFC 6022 2.1.3 and 3.1: the schema list names every module of the YANG library
    (implemented or import-only: ietf-netconf, ietf-netconf-monitoring and
    ietf-yang-library themselves included), and <get-schema> answers each with the text
    the server carries, byte for byte; each text is the module and revision listed."""
    with netconf(switch.server.port) as session:
        schemas = listed_schemas(session)
        modules_state = state(session, y("modules-state"))
        library = {entry.findtext(y("name")): entry.findtext(y("revision"))
                   for entry in modules_state.iterfind(y("module"))}
        assert schemas == library
        assert {MODULE, "ietf-netconf", "ietf-netconf-monitoring", "ietf-yang-library"} \
            <= set(schemas)
        for identifier, version in schemas.items():
            text = session.get_schema(identifier, version=version, format="yang").data
            assert text == carried(identifier, version).read_text(encoding="utf-8"), identifier
            assert text.lstrip().startswith(f"module {identifier} {{"), identifier
            assert f"revision {version}" in text or f'revision "{version}"' in text
            assert session.get_schema(identifier).data == text  # one version of each


def test_the_fetched_schemas_compile_on_their_own(switch: Switch, tmp_path: Path) -> None:
    """What get-schema gives is a closed set: libyang, searching nothing but the files
    fetched, loads each module from them (its imports too) at the revision listed."""
    libyang = require_module("libyang", how_to_install="`make peers` installs it")
    with netconf(switch.server.port) as session:
        schemas = listed_schemas(session)
        for identifier, version in schemas.items():
            (tmp_path / f"{identifier}@{version}.yang").write_text(
                session.get_schema(identifier, version=version).data, encoding="utf-8")
    context = libyang.Context(str(tmp_path))
    try:
        for identifier in (MODULE, "ietf-netconf", "ietf-netconf-monitoring"):
            loaded = context.load_module(identifier)
            assert next(iter(loaded.revisions())).date() == schemas[identifier]
            assert Path(loaded.filepath()).parent == tmp_path  # the fetched text
    finally:
        context.destroy()


def test_a_module_whose_text_is_not_carried_is_never_a_schema(tmp_path: Path) -> None:
    """RFC 6022 2.1.3: the list holds what get-schema can return; a module the server
    lists in its YANG library without its text is not a schema, and a library that names
    a text it does not have is refused when it is built."""
    bare = Module("example-bare", "2020-01-01", "urn:example:bare")
    library = Library((Module(MODULE, REVISION, NAMESPACE, source=MODULE_FILE), bare))
    assert [schema.identifier for schema in library.schemas()] == [MODULE]
    request = etree.Element(m("get-schema"))
    etree.SubElement(etree.SubElement(request, m("get-schema")), m("identifier")).text = \
        "example-bare"
    with pytest.raises(RpcError) as refused:
        library.get_schema(None, request)
    assert refused.value.tag == "invalid-value"
    with pytest.raises(FileNotFoundError):
        Library((Module("example-gone", "2020-01-01", "urn:example:gone",
                        source=tmp_path / "example-gone.yang"),))


@pytest.mark.parametrize(("request_parameters", "bad_element"), [
    ({"identifier": "ietf-interfaces"}, "identifier"),
    ({"identifier": MODULE, "version": "1999-01-01"}, "version"),
    ({"identifier": "ietf-netconf", "version": "2006-12-01"}, "version"),
    ({"identifier": "ietf-yang-library", "version": "2016-06-21"}, "version"),
    ({"identifier": MODULE, "format": "yin"}, "format"),
    ({"identifier": MODULE, "format": "xsd"}, "format"),
])
def test_get_schema_of_a_schema_the_server_does_not_have_is_invalid_value(
        switch: Switch, request_parameters: dict[str, str], bad_element: str) -> None:
    """RFC 6022 3.1: "If requested schema does not exist, the <error-tag> is
    'invalid-value'" (an unknown identifier, a version or a format it is not in)."""
    with netconf(switch.server.port) as session, pytest.raises(RPCError) as refused:
        session.get_schema(**request_parameters)
    assert refused.value.tag == "invalid-value"
    assert refused.value.info is not None and bad_element in refused.value.info


def test_get_schema_without_identifier_or_with_a_foreign_format(switch: Switch) -> None:
    """RFC 6022 3.1: identifier is mandatory (missing-element, RFC 6241 appendix A);
    format is an identityref to ietf-netconf-monitoring's schema-format (RFC 7950
    9.10.3): a prefix of another namespace is invalid-value."""
    with netconf(switch.server.port) as session:
        with pytest.raises(RPCError) as without:
            session.dispatch(etree.Element(m("get-schema")))
        assert without.value.tag == "missing-element"
        foreign = etree.Element(m("get-schema"), nsmap={"x": "urn:example:other"})
        etree.SubElement(foreign, m("identifier")).text = MODULE
        etree.SubElement(foreign, m("format")).text = "x:yang"
        with pytest.raises(RPCError) as wrong:
            session.dispatch(foreign)
        assert wrong.value.tag == "invalid-value"


# ---- the served data is what the standard modules say ---------------------------------------


def test_monitoring_and_library_data_are_valid_by_the_ietf_modules(switch: Switch) -> None:
    """RFC 6022 (ietf-netconf-monitoring@2010-10-04) and RFC 8525
    (ietf-yang-library@2019-01-04, with its deprecated modules-state): libyang parses
    the emulator's /netconf-state, /yang-library and /modules-state strictly against
    those modules (libyang's own yang-library; pyang's copy of the monitoring module),
    mandatory nodes, keys, leafrefs and identities checked."""
    libyang = require_module("libyang", how_to_install="`make peers` installs it")
    if not (PYANG_MODULES / "ietf-netconf-monitoring.yang").is_file():
        missing(f"no ietf-netconf-monitoring.yang in {PYANG_MODULES} (pyang installs it)")
    context = libyang.Context(str(PYANG_MODULES))
    try:
        context.load_module("ietf-netconf-monitoring")
        with netconf(switch.server.port) as session:
            data = session.get().data
        for tags in ((m("netconf-state"),), (y("yang-library"), y("modules-state"))):
            document = "".join(etree.tostring(child, encoding="unicode")
                               for child in data if child.tag in tags)
            assert document.count("<") > 20, tags
            tree = context.parse_data_mem(document, "xml", strict=True, validate_present=True)
            assert tree is not None
            tree.free()
    finally:
        context.destroy()


# ---- a client that knows nothing but the server ------------------------------------------


def test_a_client_without_yang_fetches_the_module_and_edits_with_it(
        switch: Switch, tmp_path: Path) -> None:
    """RFC 6022 3.1 end to end: a client with no copy of yang/ finds the module in the
    schema list, fetches it with <get-schema>, loads it (pyang checks it with its own
    IETF modules, libyang compiles it from the text alone), builds an edit from the
    loaded schema, validates it there, and the switch accepts and commits it."""
    libyang = require_module("libyang", how_to_install="`make peers` installs it")
    with netconf(switch.server.port) as session:
        identifier, version = MODULE, listed_schemas(session)[MODULE]
        text = session.get_schema(identifier, version=version).data
        fetched = tmp_path / f"{identifier}@{version}.yang"
        fetched.write_text(text, encoding="utf-8")
        linted = subprocess.run(
            [str(Path(sys.executable).with_name("pyang")), "--strict", "-f", "tree",
             str(fetched)], capture_output=True, text=True, cwd=tmp_path, check=False)
        assert linted.returncode == 0 and linted.stderr == "", linted.stderr
        assert "+--rw port* [name]" in linted.stdout
        context = libyang.Context()  # no search path: nothing but the fetched text
        try:
            loaded = context.parse_module_str(text)
            prefix = f"/{loaded.name()}:switch"
            edit = context.create_data_path(
                f"{prefix}/ports/port[name='Ethernet7']/pfc/xoff-bytes", value="24000000")
            context.create_data_path(f"{prefix}/ports/port[name='Ethernet7']/pfc/xon-bytes",
                                     parent=edit, value="40000")
            context.create_data_path(
                f"{prefix}/ports/port[name='Ethernet7']/lossless-priorities", parent=edit,
                value="3")
            edit.validate(no_state=True)  # the module's own must rules, client side
            document = edit.print_mem("xml", with_siblings=True)
            edit.free()
        finally:
            context.destroy()
        session.lock("candidate")
        try:
            session.edit_config(target="candidate", config=f"<config {NC}>{document}</config>")
            session.commit()
            assert leaf(session, "ports/port/pfc/xoff-bytes") == "24000000"
            assert leaf(session, "ports/port/lossless-priorities") == "3"
            session.edit_config(target="candidate", config=(
                f'<config {NC}><switch {NS} nc:operation="remove"/></config>'))
            session.commit()
        finally:
            session.unlock("candidate")
