"""The switch emulator's operations take the parameters of the capabilities it announces,
and no others (RFC 6241 appendix A, unknown-element): <with-defaults> without
:with-defaults (RFC 6243), <persist> without :confirmed-commit:1.1, an element no
operation has; and the table of parameters held against ietf-netconf@2011-06-01 and
ietf-netconf-monitoring as libyang reads them from the texts the server carries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from lxml import etree
from lxml.etree import _Element
from ncclient.manager import Manager
from ncclient.operations.rpc import RPCError

from emulators.netconf import NetconfServer
from emulators.netconf.capabilities import NETCONF_FEATURES, WITH_DEFAULTS
from emulators.netconf.datastore import Datastores, capabilities
from emulators.netconf.messages import NETCONF_NS
from emulators.netconf.monitoring import MONITORING_NS
from emulators.netconf.parameters import OPERATIONS, WITH_DEFAULTS_NS
from tests.support.netconf import PASSWORD, USER, Loop, netconf
from tests.support.paths import YANG
from tests.support.peers import require_module


@contextmanager
def serving(loop: Loop, **announce: bool) -> Iterator[Manager]:
    """An ncclient session to a server announcing ``capabilities(**announce)``."""
    datastores = Datastores(candidate=announce.get("candidate", True))
    server = NetconfServer(name="sw-parameters", users={USER: PASSWORD},
                           capabilities=capabilities(**announce),
                           on_session_end=datastores.session_ended)
    datastores.register(server)
    loop.run(server.start())
    try:
        with netconf(server.port) as session:
            yield session
    finally:
        loop.run(server.stop())
        loop.loop.call_soon_threadsafe(datastores.close)


@pytest.fixture(scope="module")
def session(loop: Loop) -> Iterator[Manager]:
    with serving(loop) as opened:
        yield opened


def operation(name: str, *parameters: tuple[str, str | None], namespace: str = NETCONF_NS,
              ) -> _Element:
    """``<name>`` holding each ``(clark name, text)`` parameter."""
    element = etree.Element(f"{{{namespace}}}{name}")
    for tag, text in parameters:
        etree.SubElement(element, tag).text = text
    return element


def refusal(session: Manager, request: _Element) -> Any:
    with pytest.raises(RPCError) as refused:
        session.dispatch(request)
    return refused.value


def nc(local: str) -> str:
    return f"{{{NETCONF_NS}}}{local}"


def running_source() -> tuple[str, None]:
    return nc("source"), None


def with_running(request: _Element) -> _Element:
    source = request.find(nc("source"))
    assert source is not None
    etree.SubElement(source, nc("running"))
    return request


# ---- refused --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["get-config", "get", "copy-config"])
def test_with_defaults_without_its_capability_is_an_unknown_element(
        session: Manager, name: str) -> None:
    """RFC 6243 4.5 adds <with-defaults> to get, get-config and copy-config for a server
    that announces :with-defaults; this one does not, so the element is unknown."""
    assert WITH_DEFAULTS not in session.server_capabilities
    parameters: list[tuple[str, str | None]] = [] if name == "get" else [running_source()]
    if name == "copy-config":
        parameters.insert(0, (nc("target"), None))
    request = operation(name, *parameters, (f"{{{WITH_DEFAULTS_NS}}}with-defaults",
                                            "report-all"))
    if name != "get":
        with_running(request)
    if name == "copy-config":
        target = request.find(nc("target"))
        assert target is not None
        etree.SubElement(target, nc("startup"))
    error = refusal(session, request)
    assert (error.tag, error.type) == ("unknown-element", "protocol")
    assert error.info is not None and "<bad-element>with-defaults</bad-element>" in error.info


def test_an_element_the_operation_does_not_take_is_an_unknown_element(
        session: Manager) -> None:
    request = with_running(operation("get-config", running_source(), (nc("colour"), "red")))
    error = refusal(session, request)
    assert (error.tag, error.type) == ("unknown-element", "protocol")
    assert "<bad-element>colour</bad-element>" in error.info
    # a parameter's name in a namespace no parameter is in (RFC 6241 appendix A)
    request = with_running(operation("get-config", running_source(),
                                     ("{urn:example:x}source", None)))
    error = refusal(session, request)
    assert (error.tag, error.type) == ("unknown-namespace", "protocol")
    assert "<bad-namespace>urn:example:x</bad-namespace>" in error.info


@pytest.mark.parametrize("parameter", ["persist", "persist-id"])
def test_persist_without_confirmed_commit_1_1_is_an_unknown_element(
        loop: Loop, parameter: str) -> None:
    """persist and persist-id are :confirmed-commit:1.1's (RFC 6241 8.4.5.1,
    ietf-netconf's if-feature confirmed-commit); confirmed and confirm-timeout too, and
    cancel-commit is that capability's operation (operation-not-supported)."""
    with serving(loop, confirmed_commit=False) as session:
        assert ":confirmed-commit:1.1" not in session.server_capabilities
        for name in (parameter, "confirmed", "confirm-timeout"):
            error = refusal(session, operation("commit", (nc(name), "x")))
            assert (error.tag, error.type) == ("unknown-element", "protocol")
            assert f"<bad-element>{name}</bad-element>" in error.info
        assert refusal(session, operation("cancel-commit")).tag == "operation-not-supported"
        session.commit()  # a plain commit is :candidate's


def test_the_candidates_operations_need_candidate(loop: Loop) -> None:
    with serving(loop, candidate=False) as session:
        for name in ("commit", "discard-changes", "cancel-commit"):
            error = refusal(session, operation(name))
            assert (error.tag, error.type) == ("operation-not-supported", "protocol")


def test_the_parameters_announced_are_taken(session: Manager) -> None:
    """The table refuses nothing a client of the announced capabilities sends."""
    session.commit(confirmed=True, timeout="60", persist="token")
    session.commit(persist_id="token")
    session.edit_config(target="candidate", test_option="test-then-set",
                        error_option="rollback-on-error", default_operation="merge",
                        config=f'<config xmlns="{NETCONF_NS}"/>')
    session.validate(source="candidate")
    assert session.get_schema("ietf-netconf", version="2011-06-01", format="yang").data


# ---- the table against the modules ------------------------------------------------------------


def test_the_table_is_ietf_netconf_and_get_schema_as_libyang_reads_them() -> None:
    """Every rpc of yang/ietf-netconf@2011-06-01.yang the datastores answer (close-session
    and kill-session are the protocol layer's) and get-schema of
    ietf-netconf-monitoring@2010-10-04: the same parameters, each needing the capability
    of its if-feature (and the rpc that of its own); <with-defaults> (RFC 6243 4.5, a
    module the server does not implement) on get, get-config and copy-config only."""
    libyang = require_module("libyang", how_to_install="`make peers` installs it")
    context = libyang.Context(str(YANG))
    kinds = tuple(getattr(libyang.SNode, kind) for kind in (
        "CONTAINER", "LEAF", "LEAFLIST", "LIST", "ANYXML", "ANYDATA"))

    def capability(features: list[str]) -> tuple[str, ...]:
        return tuple(NETCONF_FEATURES[feature] for feature in features)

    try:
        read: dict[tuple[str, str], tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = {}
        for name, namespace in (("ietf-netconf", NETCONF_NS),
                                ("ietf-netconf-monitoring", MONITORING_NS)):
            module = context.load_module(name)
            module.feature_enable_all()
            for rpc in module.children(types=(libyang.SNode.RPC,)):
                needs = capability([str(f) for f in rpc.if_features()])
                inputs = {node.name(): capability([str(f) for f in node.if_features()])
                          for node in rpc.input().children(types=kinds)}
                read[(namespace, rpc.name())] = (needs, inputs)
    finally:
        context.destroy()
    answered = set(read) - {(NETCONF_NS, "close-session"), (NETCONF_NS, "kill-session")}
    assert set(OPERATIONS) == answered
    for key, spec in OPERATIONS.items():
        needs, inputs = read[key]
        assert set(needs) <= set(spec.needs), key
        assert needs or not spec.needs or key == (MONITORING_NS, "get-schema"), key
        own = {parameter.name: parameter.needs for parameter in spec.parameters
               if parameter.namespace == key[0]}
        assert set(own) == set(inputs), key
        for parameter, wanted in inputs.items():
            assert set(wanted) <= set(own[parameter]) and (wanted or not own[parameter]), \
                (key, parameter)
        augmented = {parameter.name for parameter in spec.parameters
                     if parameter.namespace == WITH_DEFAULTS_NS}
        assert augmented == ({"with-defaults"} if key[1] in ("get", "get-config",
                                                              "copy-config") else set())
    assert OPERATIONS[(MONITORING_NS, "get-schema")].needs == (MONITORING_NS,)
