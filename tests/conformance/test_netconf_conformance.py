"""One NETCONF conformance suite for two servers: the switch emulator and Debian's
netconfd (yuma123), both serving yang/msoctl-congestion.yang. Each test makes the same
ncclient requests of both and asserts the same outcome.

Where the two differed, RFC 6241 (NETCONF), RFC 6242 (over SSH) and RFC 7950 (YANG)
decided, and the emulator was made to follow them. What remains is listed under
"netconfd's differences" below: where netconfd departs from the RFCs, or where the
RFCs leave a choice open and the two chose differently. Each :class:`Difference` is
used only by the test it concerns, and netconfd's answer is asserted to be exactly
the documented one (a netconfd that changes shows up here), never skipped.

rpc-errors are compared field by field (error-tag, error-type, error-app-tag,
error-path, bad-element, session-id) after normalising what only spells things
differently (:func:`observed`):

- module prefixes go from error-path and bad-element (``msocc:`` and the like);
- netconfd names the node of an edit-config error inside the request
  (``/rpc/edit-config/config/switch/...``), the emulator in the datastore
  (``/switch/...``), as the example of RFC 6241 section 4.3 does: the request part
  goes;
- an error-path into an operation's parameters (netconfd's ``/rpc/commit/persist-id``)
  is not a data path and goes (the emulator names the parameter in bad-element);
- netconfd's own generic error-app-tags (``no-access``, ``data-invalid`` ...), defined
  by neither the RFCs nor the module, go.

error-tag and error-type are always compared; the other fields where both servers give
them (RFC 6241 makes most of them optional). The emulator is held to every field.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import ncclient.transport.session
import pytest
from lxml import etree
from lxml.etree import _Element
from ncclient import NCClientError
from ncclient.manager import Manager
from ncclient.operations.rpc import RPCError
from ncclient.transport.session import NetconfBase

from drivers.switch.schema import CAPABILITY, NAMESPACE
from emulators.netconf import NetconfServer
from emulators.netconf.capabilities import NETCONF_FEATURES, announced
from emulators.netconf.datastore import CAPABILITIES, Datastores
from tests.support.netconf import PASSWORD, USER, Loop, ncclient_session
from tests.support.netconfd import MODULE, PeerStartError, running_netconfd
from tests.support.yang import CASES, Case, document

TIMEOUT_SECONDS = 10.0
BASE = "urn:ietf:params:xml:ns:netconf:base:1.0"
NS = f'xmlns="{NAMESPACE}"'
NC = f'xmlns="{BASE}" xmlns:nc="{BASE}"'
PERSIST = "conformance-token"
SWITCH_FILTER = ("subtree", f"<switch {NS}/>")
SERVERS = ("emulator", "netconfd")


# ---- the two servers ------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def ncclient_polls_often() -> Iterator[None]:
    """ncclient's session thread sends a queued request only when its select() on the
    socket times out, every TICK (0.1 s): a tenth of a second per RPC, whatever the
    server. The suite makes several hundred RPCs; polling every 5 ms keeps it within a
    minute and changes nothing that goes over the wire."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ncclient.transport.session, "TICK", 0.005)
        yield



@dataclass
class Server:
    """A NETCONF server the suite talks to with ncclient, host key checked."""

    name: str
    options: dict[str, Any]
    _resets: ExitStack = field(default_factory=ExitStack)
    _reset_session: Manager | None = None

    @contextmanager
    def session(self) -> Iterator[Manager]:
        """An ncclient session that is always closed, every RPC bounded, settled first
        (a first RPC of netconfd's left unanswered is nudged out)."""
        with ncclient_session(TIMEOUT_SECONDS, settle=True, **self.options) as session:
            yield session

    def reset(self) -> None:
        """Empty running and candidate of the module's data; no confirmed commit pending.

        Over one session kept open for the resets (a new SSH session for each of the
        suite's tests cost netconfd an sshd and a subsystem process each, about a third
        of the module's time); it holds no lock and issues no commit a test could see,
        and a test that ends it (kill-session) gets a new one for the next reset."""
        try:
            self._reset_over(self._kept())
        except (NCClientError, OSError):
            self.close()
            self._reset_over(self._kept())

    def _kept(self) -> Manager:
        if self._reset_session is None or not self._reset_session.connected:
            self.close()
            self._reset_session = self._resets.enter_context(self.session())
        return self._reset_session

    def close(self) -> None:
        self._reset_session = None
        with suppress(NCClientError, OSError):
            self._resets.close()

    @staticmethod
    def _reset_over(session: Manager) -> None:
        try:
            session.cancel_commit(persist_id=PERSIST)
        except RPCError:
            pass  # none was pending: the usual case
        session.discard_changes()
        session.edit_config(target="candidate", config=(
            f'<config {NC}><switch {NS} nc:operation="remove"/></config>'))
        session.commit()
        assert switch_of(session, "running") is None
        assert switch_of(session, "candidate") is None


def _known_hosts_options(directory: Path, known_hosts_line: str) -> dict[str, str]:
    known_hosts = directory / "known_hosts"
    known_hosts.write_text(known_hosts_line + "\n", encoding="ascii")
    ssh_config = directory / "ssh_config"
    ssh_config.write_text(f"Host *\n  UserKnownHostsFile {known_hosts}\n", encoding="ascii")
    return {"ssh_config": str(ssh_config)}


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The emulator's NETCONF server and datastores, on the real clock (like netconfd)."""
    loop = Loop()
    datastores = Datastores()
    server = NetconfServer(name="sw-conformance", users={USER: PASSWORD},
                           capabilities=CAPABILITIES, on_session_end=datastores.session_ended)
    datastores.register(server)
    loop.run(server.start())
    options: dict[str, Any] = {
        "host": server.host, "port": server.port, "username": USER, "password": PASSWORD,
        "hostkey_verify": True, "allow_agent": False, "look_for_keys": False,
        **_known_hosts_options(tmp_path_factory.mktemp("emulator"),
                               server.known_hosts_line()),
    }
    served = Server("emulator", options)
    try:
        yield served
    finally:
        served.close()
        loop.run(server.stop())
        loop.loop.call_soon_threadsafe(datastores.close)
        loop.close()


@pytest.fixture(scope="module")
def netconfd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Debian's netconfd with the module, behind a private sshd (tests/netconfd_peer.py)."""
    with running_netconfd(tmp_path_factory.mktemp("netconfd")) as peer:
        served = Server("netconfd", peer.ncclient_options())
        try:
            yield served
        finally:
            served.close()


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Server:
    """Each server in turn, its datastores emptied first (the servers live per module)."""
    chosen: Server = request.getfixturevalue(str(request.param))
    chosen.reset()
    return chosen


# ---- reading data ---------------------------------------------------------------------

Canonical = tuple[str, str, tuple[Any, ...]]


def canonical(element: _Element) -> Canonical:
    """An element as (name, text, sorted children): servers may order leaves and list
    entries differently (netconfd sorts them, RFC 7950 lets a server order a list that
    is ordered-by system)."""
    children = tuple(sorted(canonical(child) for child in element
                            if isinstance(child.tag, str)))
    text = "" if children else (element.text or "").strip()
    return str(etree.QName(element).localname), text, children


def switch_of(session: Manager, source: str) -> Canonical | None:
    """The module's ``<switch>`` in ``source``, canonical; ``None`` when there is none."""
    reply = session.get_config(source=source, filter=SWITCH_FILTER)
    found = reply.data.find(f"{{{NAMESPACE}}}switch")
    return None if found is None else canonical(found)


def switch(body: str) -> Canonical:
    return canonical(etree.fromstring(f"<switch {NS}>{body}</switch>"))


def config(body: str, *, switch_attributes: str = "") -> str:
    return f"<config {NC}><switch {NS}{switch_attributes}>{body}</switch></config>"


def port(body: str, name: str = "Ethernet1") -> str:
    return f"<ports><port><name>{name}</name>{body}</port></ports>"


# ---- rpc-errors -----------------------------------------------------------------------

FIELDS = ("tag", "type", "app_tag", "path", "bad_element", "session_id")
# netconfd's own error-app-tags for errors the RFCs and the module give none.
NETCONFD_GENERIC_APP_TAGS = frozenset({
    "no-access", "data-invalid", "data-incomplete", "not-in-range", "not-in-value-set",
    "general-error", "outstanding-confirmed-commit",
})
_PREFIX = re.compile(r"(?<=[/\[])[A-Za-z_][\w.-]*:")
_REQUEST = re.compile(r"^/rpc/[\w-]+/config(?=/|$)")


@dataclass(frozen=True)
class Error:
    """One rpc-error, normalised (see the module docstring); ``None`` is "not given"."""

    tag: str
    type: str
    app_tag: str | None = None
    path: str | None = None
    bad_element: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class Difference:
    """Where netconfd answers otherwise than the emulator, and why the emulator keeps its
    answer. ``fields`` are netconfd's values of the rpc-error fields that differ."""

    why: str
    fields: tuple[tuple[str, str | None], ...] = ()

    def apply(self, expected: Error) -> Error:
        values = asdict(expected)
        values.update(self.fields)
        return Error(**values)


def observed(error: RPCError) -> list[Error]:
    """The rpc-errors of a refusal, normalised."""
    errors = getattr(error, "errors", None) or [error]
    return [_normalised(etree.fromstring(item.xml) if isinstance(item.xml, (str, bytes))
                        else item.xml) for item in errors]


def _normalised(rpc_error: _Element) -> Error:
    def text(name: str, parent: _Element = rpc_error) -> str | None:
        found = parent.find(f"{{{BASE}}}{name}")
        return None if found is None or found.text is None else found.text.strip()

    info = rpc_error.find(f"{{{BASE}}}error-info")
    app_tag = text("error-app-tag")
    if app_tag in NETCONFD_GENERIC_APP_TAGS:
        app_tag = None
    path = text("error-path")
    if path is not None:
        path = _REQUEST.sub("", _PREFIX.sub("", path))
        if path.startswith("/rpc/") or path == "":
            path = None  # a parameter of the operation, not a node of the data
    bad_element = None if info is None else text("bad-element", info)
    if bad_element is not None:
        bad_element = bad_element.rpartition(":")[2]
    return Error(tag=text("error-tag") or "", type=text("error-type") or "", app_tag=app_tag,
                 path=path, bad_element=bad_element,
                 session_id=None if info is None else text("session-id", info))


def refusal(call: Callable[[], object]) -> Error:
    """The one rpc-error with which ``call`` is refused."""
    with pytest.raises(RPCError) as caught:
        call()
    errors = observed(caught.value)
    assert len(errors) == 1, errors
    return errors[0]


def assert_refused(server: Server, call: Callable[[], object], expected: Error,
                   *differences: Difference) -> None:
    """``call`` is refused as ``expected``: exactly by the emulator; by netconfd in every
    field both give, and in the fields of ``differences`` exactly as documented."""
    got = refusal(call)
    if server.name == "emulator":
        assert got == expected
        return
    wanted = expected
    documented: set[str] = set()
    for difference in differences:
        wanted = difference.apply(wanted)
        documented.update(name for name, _ in difference.fields)
    for name in FIELDS:
        want, have = getattr(wanted, name), getattr(got, name)
        if name in ("tag", "type") or name in documented or (
                want is not None and have is not None):
            assert have == want, (
                f"netconfd {name}: {have!r}, expected {want!r} "
                f"({'; '.join(d.why for d in differences) or 'no documented difference'})"
                f"\nwhole error: {got}")


def deviates(server: Server, difference: Difference) -> bool:
    """Whether ``server`` answers by ``difference`` (netconfd) rather than the RFC."""
    assert difference.why
    return server.name == "netconfd"


# ---- netconfd's differences (yuma123 2.13, Debian bookworm) ---------------------------

CONTENT_LAYER = Difference(
    "netconfd files an unknown element or a bad value inside <config> under error-type "
    "protocol; RFC 6241 appendix A allows protocol or application, and the emulator "
    "reports the layer the error is in (RFC 6241 4.3: application is the content "
    "layer), as the invalid-value example of RFC 6241 4.3 does",
    (("type", "protocol"),))
LOCK_LAYER = Difference(
    "netconfd files in-use for an edit of a datastore another session locked under "
    "error-type application; RFC 6241 appendix A allows protocol or application, and "
    "locks belong to the operations layer (protocol), where the emulator reports them",
    (("type", "application"),))
NOT_A_NUMBER = Difference(
    "netconfd answers a leaf value that is not a number with error-tag bad-element; "
    "RFC 7950 8.3.1 says a value that does not match its type MUST be answered with "
    "invalid-value",
    (("tag", "bad-element"), ("type", "protocol")))
UNLOCK_OF_ANOTHER_SESSION = Difference(
    "netconfd refuses the unlock of a lock another session holds with in-use (and with "
    "operation-failed when nobody holds it); RFC 6241 7.6 names no tag for either, and "
    "the emulator answers operation-failed for both",
    (("tag", "in-use"),))
MODIFIED_CANDIDATE_LOCK = Difference(
    "netconfd refuses the lock of a modified candidate with resource-denied; RFC 6241 "
    "8.3.5.1 forbids the lock but names no tag, and the emulator answers lock-denied "
    "with session-id 0 (RFC 6241 7.5: the lock is held by no NETCONF session), the one "
    "tag RFC 6241 defines for a lock that cannot be granted",
    (("tag", "resource-denied"), ("session_id", None)))
CANCEL_OF_ANOTHER_SESSION = Difference(
    "netconfd refuses a cancel-commit from a session other than the confirmed commit's "
    "with operation-failed; RFC 6241 8.4.4.1 requires the same session and names no "
    "tag, and the emulator answers in-use (the confirmed commit belongs to another "
    "session), as both servers do for a commit from another session",
    (("tag", "operation-failed"), ("session_id", None)))
PERSIST_ID_OF_NOTHING = Difference(
    "netconfd refuses a persist-id when no confirmed commit is pending with "
    "operation-failed; RFC 6241 8.4.4.1 and 8.4.5.1: a persist-id that does not match "
    "fails with invalid-value",
    (("tag", "operation-failed"),))
MUST_AT_EDIT = Difference(
    "netconfd enforces the module's must rules at every edit-config of the candidate "
    "(test-option test-then-set); RFC 7950 8.3.3: for the candidate, constraint "
    "enforcement is delayed until validate or commit, which the emulator does (so "
    "a change may pass through invalid states, as the driver's safe change does)")
VALIDATE_THEN_COMMIT = Difference(
    "netconfd answers <ok/> to a commit that directly follows a <validate> of the "
    "candidate, yet applies nothing: running stays as it was and the candidate is "
    "reset to it (an edit between the validate and the commit avoids it; a confirmed "
    "commit is affected alike); RFC 6241 8.3.4.1: commit makes the candidate running")
CONFIRM_TIMER_WHEN_IDLE = Difference(
    "netconfd rolls back an unconfirmed commit only when no request has reached it for "
    "about a second (its timers run when its select() loop times out): a client that "
    "polls more often than once a second postpones the rollback for as long as it "
    "polls; RFC 6241 8.4: the server reverts when the timeout expires, as the emulator "
    "does whatever the traffic")
NONE_SETS_LEAVES = Difference(
    "netconfd writes a leaf's new value under default-operation none when a sibling "
    "carries an operation; RFC 6241 7.2: under none the target is unaffected by the "
    "data unless and until an operation attribute asks otherwise, and the emulator "
    "leaves the leaf as it was")
NONE_WITHOUT_OPERATION = Difference(
    "netconfd accepts default-operation none with data whose parent level is missing "
    "in the target when nothing below asks for an operation; RFC 6241 7.2: data with no "
    "corresponding level in the target is answered with data-missing, as the emulator "
    "does (and netconfd too, once an operation below needs the missing level)")
PERSIST_ID_MISSING = Difference(
    "netconfd takes a commit without persist-id from the session of a persistent "
    "confirmed commit as its confirming commit, and refuses it from any other session "
    "with in-use; RFC 6241 8.4.1: once <persist> was given, a follow-up or confirming "
    "commit from any session MUST include a persist-id, and the emulator refuses one "
    "without it with missing-element (RFC 6241 appendix A: an expected element is "
    "missing), naming persist-id",
    (("tag", "in-use"), ("bad_element", None)))
FEATURE_WITHOUT_CAPABILITY = Difference(
    "netconfd (--target=candidate) lists ietf-netconf's writable-running feature with the "
    "module in its hello without announcing :writable-running; ietf-netconf@2011-06-01: "
    "if the server advertises the capability the feature must be enabled, otherwise it "
    "must not be, and the emulator lists exactly the features of its capabilities")
REFUSED_RPC_IS_BAD = Difference(
    "netconfd counts an <rpc> it refuses for what it asks (an unlock of a lock not held) "
    "in in-bad-rpcs, not in in-rpcs; RFC 6022: in-bad-rpcs counts messages that were "
    "not correct <rpc> messages (XML parse errors and errors on the rpc layer), and the "
    "emulator counts a correct <rpc> in in-rpcs whatever its answer")
GET_SCHEMA_NO_MATCH = Difference(
    "netconfd answers a get-schema that matches no schema (an unknown identifier or "
    "version) with operation-failed and error-app-tag no-matches; RFC 6022 3.1: if the "
    "requested schema does not exist, the error-tag is invalid-value",
    (("tag", "operation-failed"),))


# ---- hello, reading -------------------------------------------------------------------


def test_hello_advertises_the_same_capabilities(server: Server) -> None:
    with server.session() as session:
        capabilities = set(session.server_capabilities)
        assert {
            "urn:ietf:params:netconf:base:1.0",
            "urn:ietf:params:netconf:base:1.1",
            "urn:ietf:params:netconf:capability:candidate:1.0",
            "urn:ietf:params:netconf:capability:confirmed-commit:1.1",
            "urn:ietf:params:netconf:capability:validate:1.1",
            "urn:ietf:params:netconf:capability:rollback-on-error:1.0",
            "urn:ietf:params:netconf:capability:startup:1.0",
            CAPABILITY,
        } <= capabilities
        assert session._session._base == NetconfBase.BASE_11  # RFC 6242 chunked framing
        assert session.session_id and session.session_id.isdigit()


def test_an_initial_datastore_holds_none_of_the_module(server: Server) -> None:
    with server.session() as session:
        for source in ("running", "candidate", "startup"):
            assert switch_of(session, source) is None, source
        # Unfiltered too: other modules' data (netconfd's NACM) may be there, ours not.
        whole = session.get_config(source="running").data
        assert whole.find(f"{{{NAMESPACE}}}switch") is None


@pytest.mark.parametrize(("parameter", "expected"), [
    (f'<colour xmlns="{BASE}">red</colour>',
     Error("unknown-element", "protocol", bad_element="colour")),
    ('<colour xmlns="urn:example:paint">red</colour>',
     Error("unknown-namespace", "protocol", bad_element="colour")),
], ids=["element", "namespace"])
def test_a_parameter_the_operation_does_not_take_is_refused(server: Server, parameter: str,
                                                            expected: Error) -> None:
    """RFC 6241 appendix A: an unexpected element is unknown-element, an element in an
    unexpected namespace unknown-namespace."""
    request = etree.fromstring(f'<get-config xmlns="{BASE}"><source><running/></source>'
                               f"{parameter}</get-config>")
    with server.session() as session:
        assert_refused(server, lambda: session.dispatch(request), expected)


# ---- edit-config ----------------------------------------------------------------------


def test_merge_and_replace(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(
            port("<speed>400G</speed><cable-length-meters>30000</cable-length-meters>")))
        session.edit_config(target="candidate", config=config(port("<speed>800G</speed>")))
        assert switch_of(session, "candidate") == switch(port(
            "<speed>800G</speed><cable-length-meters>30000</cable-length-meters>"))
        assert switch_of(session, "running") is None  # the candidate only
        session.edit_config(target="candidate", config=config(
            '<ports><port nc:operation="replace"><name>Ethernet1</name>'
            "<speed>100G</speed></port></ports>"))
        assert switch_of(session, "candidate") == switch(port("<speed>100G</speed>"))


def test_create_delete_and_remove(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        assert_refused(server, lambda: session.edit_config(target="candidate", config=config(
            '<ports><port nc:operation="create"><name>Ethernet1</name></port></ports>')),
            Error("data-exists", "application", path="/switch/ports/port[name='Ethernet1']"))
        session.edit_config(target="candidate", config=config(
            port('<speed nc:operation="delete"/>')))
        assert_refused(server, lambda: session.edit_config(target="candidate", config=config(
            port('<speed nc:operation="delete"/>'))),
            Error("data-missing", "application",
                  path="/switch/ports/port[name='Ethernet1']/speed"))
        session.edit_config(target="candidate", config=config(  # remove: no error
            port('<speed nc:operation="remove"/>')))
        session.edit_config(target="candidate", config=config(
            '<ports><port nc:operation="create"><name>Ethernet2</name></port></ports>'))
        assert switch_of(session, "candidate") == switch(
            "<ports><port><name>Ethernet1</name></port>"
            "<port><name>Ethernet2</name></port></ports>")


def test_default_operation_none(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(
            "<fast-cnp><enabled>true</enabled><cnp-priority>6</cnp-priority></fast-cnp>"))
        session.edit_config(target="candidate", default_operation="none", config=config(
            '<fast-cnp><enabled>false</enabled><cnp-dscp nc:operation="merge">26</cnp-dscp>'
            "</fast-cnp>"))
        enabled = "false" if deviates(server, NONE_SETS_LEAVES) else "true"  # untouched
        wanted = switch(f"<fast-cnp><enabled>{enabled}</enabled><cnp-priority>6</cnp-priority>"
                        "<cnp-dscp>26</cnp-dscp></fast-cnp>")
        assert switch_of(session, "candidate") == wanted
        # An operation below a level the target lacks: none does not create the level.
        assert_refused(server, lambda: session.edit_config(
            target="candidate", default_operation="none",
            config=config(port('<speed nc:operation="merge">400G</speed>'))),
            Error("data-missing", "application", path="/switch/ports"))
        assert switch_of(session, "candidate") == wanted


def test_default_operation_none_with_a_missing_level_and_no_operation(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(
            "<fast-cnp><enabled>true</enabled></fast-cnp>"))
        edit = config(port("<speed>400G</speed>"))
        if deviates(server, NONE_WITHOUT_OPERATION):
            session.edit_config(target="candidate", default_operation="none", config=edit)
        else:
            assert_refused(server, lambda: session.edit_config(
                target="candidate", default_operation="none", config=edit),
                Error("data-missing", "application", path="/switch/ports"))
        assert switch_of(session, "candidate") == switch(
            "<fast-cnp><enabled>true</enabled></fast-cnp>")


def test_rollback_on_error_leaves_the_target_as_it_was(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>100G</speed>")))
        before = switch_of(session, "candidate")
        assert_refused(server, lambda: session.edit_config(
            target="candidate", error_option="rollback-on-error", config=config(
                "<ports><port><name>Ethernet2</name><speed>400G</speed></port>"
                '<port nc:operation="create"><name>Ethernet1</name></port></ports>')),
            Error("data-exists", "application", path="/switch/ports/port[name='Ethernet1']"))
        assert switch_of(session, "candidate") == before  # Ethernet2 was not kept


def test_an_unknown_element_is_refused(server: Server) -> None:
    with server.session() as session:
        assert_refused(server, lambda: session.edit_config(
            target="candidate", config=config(port("<colour>red</colour>"))),
            Error("unknown-element", "application",
                  path="/switch/ports/port[name='Ethernet1']", bad_element="colour"),
            CONTENT_LAYER)
        assert switch_of(session, "candidate") is None


@pytest.mark.parametrize(("body", "path", "differences"), [
    (port("<speed>300G</speed>"), "/switch/ports/port[name='Ethernet1']/speed",
     (CONTENT_LAYER,)),
    ("<fast-cnp><cnp-priority>8</cnp-priority></fast-cnp>", "/switch/fast-cnp/cnp-priority",
     (CONTENT_LAYER,)),
    ("<fast-cnp><cnp-priority>six</cnp-priority></fast-cnp>",
     "/switch/fast-cnp/cnp-priority", (NOT_A_NUMBER,)),
], ids=["enumeration", "range", "not-a-number"])
def test_a_value_not_of_its_type_is_invalid_value(server: Server, body: str, path: str,
                                                  differences: tuple[Difference, ...]) -> None:
    leaf_name = path.rpartition("/")[2]
    with server.session() as session:
        assert_refused(server, lambda: session.edit_config(target="candidate",
                                                           config=config(body)),
                       Error("invalid-value", "application", path=path,
                             bad_element=leaf_name), *differences)
        assert switch_of(session, "candidate") is None


def test_a_list_entry_without_its_key_is_missing_element(server: Server) -> None:
    with server.session() as session:
        assert_refused(server, lambda: session.edit_config(target="candidate", config=config(
            port("<queues><queue><wred><min-threshold>1</min-threshold></wred></queue>"
                 "</queues>"))),
            Error("missing-element", "application",
                  path="/switch/ports/port[name='Ethernet1']/queues/queue[1]",
                  bad_element="queue-id"))
        assert switch_of(session, "candidate") is None


@pytest.mark.parametrize("error_option", ["stop-on-error", "continue-on-error"])
def test_a_refused_edit_keeps_nothing_under_any_error_option(server: Server,
                                                             error_option: str) -> None:
    """RFC 6241 7.2 leaves a partial edit under stop-on-error or continue-on-error to
    the server; both servers keep none: the target stays as it was."""
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>100G</speed>")))
        before = switch_of(session, "candidate")
        assert_refused(server, lambda: session.edit_config(
            target="candidate", error_option=error_option, config=config(
                "<ports><port><name>Ethernet2</name><speed>400G</speed></port>"
                '<port nc:operation="create"><name>Ethernet1</name></port></ports>')),
            Error("data-exists", "application", path="/switch/ports/port[name='Ethernet1']"))
        assert switch_of(session, "candidate") == before


@pytest.mark.parametrize("error_option", ["stop-on-error", "rollback-on-error",
                                          "continue-on-error"])
def test_a_failed_delete_leaves_the_candidate_lockable(server: Server,
                                                       error_option: str) -> None:
    """RFC 6241 7.2 and 7.5: the delete of a leaf of a port that does not exist is
    data-missing and leaves no entry for that port behind, so the candidate has no
    changes and another session's lock is granted."""
    with server.session() as first, server.session() as second:
        assert_refused(server, lambda: first.edit_config(
            target="candidate", error_option=error_option,
            config=config(port('<speed nc:operation="delete"/>', "Ethernet9"))),
            Error("data-missing", "application",
                  path="/switch/ports/port[name='Ethernet9']/speed"))
        assert switch_of(first, "candidate") is None
        second.lock("candidate")
        second.unlock("candidate")


# ---- locks, sessions -----------------------------------------------------------------


def test_lock_unlock_lock_denied_and_in_use(server: Server) -> None:
    with server.session() as first, server.session() as second:
        first.lock("candidate")
        assert_refused(server, lambda: second.lock("candidate"),
                       Error("lock-denied", "protocol", session_id=first.session_id))
        assert_refused(server, lambda: second.unlock("candidate"),
                       Error("operation-failed", "protocol"), UNLOCK_OF_ANOTHER_SESSION)
        assert_refused(server, lambda: second.edit_config(
            target="candidate", config=config(port("<speed>400G</speed>"))),
            Error("in-use", "protocol", session_id=first.session_id), LOCK_LAYER)
        assert_refused(server, second.discard_changes,
                       Error("in-use", "protocol", session_id=first.session_id))
        first.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        first.commit()
        first.unlock("candidate")
        second.lock("candidate")
        second.unlock("candidate")
        assert switch_of(second, "running") == switch(port("<speed>400G</speed>"))


def test_a_modified_candidate_cannot_be_locked(server: Server) -> None:
    with server.session() as first, server.session() as second:
        first.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        assert_refused(server, lambda: second.lock("candidate"),
                       Error("lock-denied", "protocol", session_id="0"),
                       MODIFIED_CANDIDATE_LOCK)
        first.discard_changes()
        second.lock("candidate")
        second.unlock("candidate")


def test_kill_session_ends_another_session_and_its_lock(server: Server) -> None:
    with server.session() as victim, server.session() as killer:
        victim.lock("running")
        assert_refused(server, lambda: killer.kill_session(killer.session_id),
                       Error("invalid-value", "protocol", bad_element="session-id"))
        killer.kill_session(victim.session_id)
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while victim.connected:
            assert time.monotonic() < deadline, "the killed session stayed connected"
            time.sleep(0.02)
        killer.lock("running")  # the lock went with its session
        killer.unlock("running")


def test_discard_changes_makes_the_candidate_running_again(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        session.commit()
        session.edit_config(target="candidate", config=config(
            port("<speed>100G</speed>") + "<fast-cnp><enabled>true</enabled></fast-cnp>"))
        session.discard_changes()
        assert switch_of(session, "candidate") == switch(port("<speed>400G</speed>"))


# ---- validation -----------------------------------------------------------------------

MUST_CASES = [case for case in CASES if case.app_tag is not None]


def candidate_document(case: Case) -> str:
    return f"<config {NC}>{document(case.config)}</config>"


@pytest.mark.parametrize("case", MUST_CASES, ids=lambda case: case.name)
def test_validate_and_commit_report_a_must_violation(server: Server, case: Case) -> None:
    broken = Error("operation-failed", "application", app_tag=case.app_tag, path=case.path)
    with server.session() as session:
        # test-option set: netconfd would refuse the edit itself (see MUST_AT_EDIT).
        session.edit_config(target="candidate", config=candidate_document(case),
                            test_option="set")
        assert_refused(server, lambda: session.validate("candidate"), broken)
        assert_refused(server, session.commit, broken)
        assert switch_of(session, "running") is None


def test_an_edit_of_the_candidate_leaves_the_must_rules_to_validate(server: Server) -> None:
    case = next(case for case in MUST_CASES if case.app_tag == "pfc-xon-not-below-xoff")
    broken = Error("operation-failed", "application", app_tag=case.app_tag, path=case.path)
    with server.session() as session:
        edit = candidate_document(case)
        if deviates(server, MUST_AT_EDIT):
            assert_refused(server, lambda: session.edit_config(target="candidate",
                                                               config=edit), broken)
            assert switch_of(session, "candidate") is None
        else:
            session.edit_config(target="candidate", config=edit)
            assert_refused(server, lambda: session.validate("candidate"), broken)


# ---- commit, confirmed commit ---------------------------------------------------------

FAST_CNP = "<fast-cnp><enabled>true</enabled><cnp-dscp>26</cnp-dscp></fast-cnp>"


def test_commit_and_a_confirmed_commit_confirmed(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        session.commit()
        assert switch_of(session, "running") == switch(port("<speed>400G</speed>"))
        session.edit_config(target="candidate", config=config(FAST_CNP))
        session.commit(confirmed=True, timeout="60")
        wanted = switch(port("<speed>400G</speed>") + FAST_CNP)
        assert switch_of(session, "running") == wanted
        session.commit()  # the confirming commit
        assert switch_of(session, "running") == wanted
        # Nothing is pending any more: nothing to cancel.
        assert_refused(server, session.cancel_commit, Error("operation-failed", "protocol"))
        assert switch_of(session, "running") == wanted


def test_a_commit_after_validate_applies_the_candidate(server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        session.validate("candidate")
        session.commit()
        if deviates(server, VALIDATE_THEN_COMMIT):
            assert switch_of(session, "running") is None
            assert switch_of(session, "candidate") is None  # the edit is lost
        else:
            assert switch_of(session, "running") == switch(port("<speed>400G</speed>"))
            assert switch_of(session, "candidate") == switch(port("<speed>400G</speed>"))


def test_persistent_confirmed_commit_confirmed_from_a_new_session(server: Server) -> None:
    with server.session() as first:
        first.edit_config(target="candidate", config=config(FAST_CNP))
        first.commit(confirmed=True, timeout="60", persist=PERSIST)
    with server.session() as second:
        assert switch_of(second, "running") == switch(FAST_CNP)  # survived its session
        assert_refused(server, second.commit,
                       Error("missing-element", "protocol", bad_element="persist-id"),
                       PERSIST_ID_MISSING)
        assert_refused(server, lambda: second.commit(persist_id="another-token"),
                       Error("invalid-value", "protocol", bad_element="persist-id"))
        second.commit(persist_id=PERSIST)
        assert switch_of(second, "running") == switch(FAST_CNP)
        assert_refused(server, lambda: second.cancel_commit(persist_id=PERSIST),
                       Error("invalid-value", "protocol", bad_element="persist-id"),
                       PERSIST_ID_OF_NOTHING)
        assert switch_of(second, "running") == switch(FAST_CNP)


def test_a_persistent_confirmed_commit_is_confirmed_only_with_its_persist_id(
        server: Server) -> None:
    with server.session() as session:
        session.edit_config(target="candidate", config=config(FAST_CNP))
        session.commit(confirmed=True, timeout="60", persist=PERSIST)
        if deviates(server, PERSIST_ID_MISSING):
            session.commit()  # confirmed, without the token
            assert_refused(server, lambda: session.cancel_commit(persist_id=PERSIST),
                           Error("invalid-value", "protocol", bad_element="persist-id"),
                           PERSIST_ID_OF_NOTHING)
            assert switch_of(session, "running") == switch(FAST_CNP)
        else:
            assert_refused(server, session.commit,
                           Error("missing-element", "protocol", bad_element="persist-id"))
            session.cancel_commit(persist_id=PERSIST)
            assert switch_of(session, "running") is None


def test_cancel_commit_restores_running(server: Server) -> None:
    with server.session() as owner, server.session() as other:
        owner.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        owner.commit()
        before = switch(port("<speed>400G</speed>"))
        owner.edit_config(target="candidate", config=config(port("<speed>800G</speed>")
                                                            + FAST_CNP))
        owner.commit(confirmed=True, timeout="60")
        assert switch_of(owner, "running") == switch(port("<speed>800G</speed>") + FAST_CNP)
        assert_refused(server, other.cancel_commit,
                       Error("in-use", "protocol", session_id=owner.session_id),
                       CANCEL_OF_ANOTHER_SESSION)
        owner.cancel_commit()
        assert switch_of(owner, "running") == before
        assert switch_of(owner, "candidate") == before


def test_an_unconfirmed_commit_is_rolled_back_when_its_timeout_expires(server: Server) -> None:
    timeout_seconds = 2
    with server.session() as session:
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        session.commit()
        before = switch(port("<speed>400G</speed>"))
        session.edit_config(target="candidate", config=config(port("<speed>800G</speed>")))
        committed = time.monotonic()
        session.commit(confirmed=True, timeout=str(timeout_seconds))
        assert switch_of(session, "running") == switch(port("<speed>800G</speed>"))
        time.sleep(max(0.0, committed + timeout_seconds / 2 - time.monotonic()))
        assert switch_of(session, "running") != before  # not before its time
        if deviates(server, CONFIRM_TIMER_WHEN_IDLE):
            time.sleep(max(0.0, committed + timeout_seconds + 1.5 - time.monotonic()))
            assert switch_of(session, "running") == before  # after a quiet second
        else:
            deadline = committed + timeout_seconds + 1
            while switch_of(session, "running") != before:  # rolled back while polled
                assert time.monotonic() < deadline, "the confirmed commit was not rolled back"
                time.sleep(0.05)
        assert time.monotonic() - committed >= timeout_seconds
        assert switch_of(session, "candidate") == before


# ---- module discovery -----------------------------------------------------------------

MONITORING_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
YANG_LIBRARY_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
YANG_LIBRARY_1_0 = "urn:ietf:params:netconf:capability:yang-library:1.0"
YANG_LIBRARY_1_1 = "urn:ietf:params:netconf:capability:yang-library:1.1"
NMDA_YANG_LIBRARY = "2019-01-04"  # RFC 8525's revision, which RFC 8526 2 announces as 1.1


def _get_schema(identifier: str, **parameters: str) -> _Element:
    operation = etree.Element(f"{{{MONITORING_NS}}}get-schema", nsmap={None: MONITORING_NS})
    etree.SubElement(operation, f"{{{MONITORING_NS}}}identifier").text = identifier
    for name, value in parameters.items():
        etree.SubElement(operation, f"{{{MONITORING_NS}}}{name}").text = value
    return operation


def test_get_schema_returns_the_module(server: Server) -> None:
    """RFC 6022 3.1: both servers answer get-schema with yang/msoctl-congestion.yang
    (netconfd pretty-prints its reply, so its text comes wrapped in white space)."""
    text = MODULE.read_text(encoding="utf-8").strip()
    with server.session() as session:
        assert session.get_schema("msoctl-congestion").data.strip() == text
        reply = session.get_schema("msoctl-congestion", version="2026-11-30")
        assert reply.data.strip() == text


@pytest.mark.parametrize("parameters", [{"identifier": "no-such-module"},
                                        {"identifier": "msoctl-congestion",
                                         "version": "1999-01-01"}],
                         ids=["identifier", "version"])
def test_get_schema_of_a_schema_not_there(server: Server, parameters: dict[str, str]) -> None:
    """RFC 6022 3.1: a requested schema that does not exist is invalid-value (the
    emulator names the parameter that matched nothing)."""
    ruled_out = "version" if "version" in parameters else "identifier"
    with server.session() as session:
        assert_refused(server, lambda: session.dispatch(_get_schema(**parameters)),
                       Error("invalid-value", "protocol", bad_element=ruled_out),
                       GET_SCHEMA_NO_MATCH)


def test_get_schema_in_a_format_not_served(server: Server) -> None:
    """RFC 6022 3.1: the module exists in YANG only; asked in YIN it does not exist."""
    with server.session() as session:
        assert_refused(server, lambda: session.dispatch(_get_schema(
            "msoctl-congestion", format="yin")),
            Error("invalid-value", "protocol", bad_element="format"))


def test_the_schema_list_names_the_module(server: Server) -> None:
    """RFC 6022 2.1.3: /netconf-state/schemas lists the module: identifier, version,
    format (an identity: compared by name), namespace, location NETCONF."""
    subtree = (f'<netconf-state xmlns="{MONITORING_NS}"><schemas><schema>'
               "<identifier>msoctl-congestion</identifier></schema></schemas></netconf-state>")
    with server.session() as session:
        data = session.get(filter=("subtree", subtree)).data
        [entry] = data.iterfind(f".//{{{MONITORING_NS}}}schema")
        fields = {str(etree.QName(child).localname): (child.text or "").strip()
                  for child in entry}
        fields["format"] = fields["format"].rpartition(":")[2]
        assert fields == {"identifier": "msoctl-congestion", "version": "2026-11-30",
                          "format": "yang", "namespace": NAMESPACE, "location": "NETCONF"}


def test_the_yang_library_capability_is_the_form_of_the_revision_implemented(
        server: Server) -> None:
    """The hello names the ietf-yang-library revision the server implements and the id
    its tree holds: :yang-library:1.0 (RFC 7950 5.6.4) with the module-set-id of
    /modules-state, :yang-library:1.1 (RFC 8526 2) with the content-id of /yang-library;
    1.1 exactly when the revision is RFC 8525's (the emulator implements 2019-01-04 and
    announces both forms; netconfd implements RFC 7895's 2016-06-21 and announces 1.0).
    /modules-state lists msoctl-congestion as implemented."""
    def text(element: _Element, name: str) -> str:
        return (element.findtext(f"{{{YANG_LIBRARY_NS}}}{name}") or "").strip()

    with server.session() as session:
        announced = {uri.partition("?")[0]: dict(
            p.partition("=")[::2] for p in uri.partition("?")[2].split("&"))
            for uri in session.server_capabilities
            if uri.startswith((f"{YANG_LIBRARY_1_0}?", f"{YANG_LIBRARY_1_1}?"))}
        def read(top: str) -> _Element | None:
            subtree = f'<{top} xmlns="{YANG_LIBRARY_NS}"/>'
            return session.get(filter=("subtree", subtree)).data.find(
                f"{{{YANG_LIBRARY_NS}}}{top}")

        state = read("modules-state")
        assert state is not None and announced
        modules = {text(entry, "name"): (text(entry, "revision"),
                                         text(entry, "conformance-type"))
                   for entry in state.iterfind(f"{{{YANG_LIBRARY_NS}}}module")}
        revision, role = modules["ietf-yang-library"]
        assert role == "implement"
        assert modules["msoctl-congestion"] == ("2026-11-30", "implement")
        assert modules["ietf-netconf-monitoring"] == ("2010-10-04", "implement")
        assert all(parameters["revision"] == revision for parameters in announced.values())
        assert (YANG_LIBRARY_1_1 in announced) == (revision >= NMDA_YANG_LIBRARY)
        if YANG_LIBRARY_1_0 in announced:
            assert announced[YANG_LIBRARY_1_0]["module-set-id"] == text(state, "module-set-id")
        if YANG_LIBRARY_1_1 in announced:
            library = read("yang-library")
            assert library is not None
            assert announced[YANG_LIBRARY_1_1]["content-id"] == text(library, "content-id")


def test_ietf_netconf_lists_the_features_of_the_capabilities_announced(server: Server) -> None:
    """RFC 6020 5.6.4: ietf-netconf's URI in the hello carries its features, each of which
    ietf-netconf ties to a capability; confirmed-commit among them on both servers (what
    a generic client such as yangcli reads before it offers a confirmed commit)."""
    with server.session() as session:
        [uri] = [c for c in session.server_capabilities
                 if c.startswith(f"{BASE}?module=ietf-netconf&")]
        parameters = dict(p.partition("=")[::2] for p in uri.partition("?")[2].split("&"))
        assert parameters["revision"] == "2011-06-01"
        features = set(parameters["features"].split(","))
        present = announced(session.server_capabilities)
        enabled = {feature for feature, capability in NETCONF_FEATURES.items()
                   if capability in present}
        assert "confirmed-commit" in features
        if deviates(server, FEATURE_WITHOUT_CAPABILITY):
            assert features - enabled == {"writable-running"} and enabled <= features
        else:
            assert features == enabled


def _netconf_state(session: Manager, subtree: str) -> _Element:
    reply = session.get(filter=("subtree", f'<netconf-state xmlns="{MONITORING_NS}">'
                                f"{subtree}</netconf-state>"))
    found = reply.data.find(f"{{{MONITORING_NS}}}netconf-state")
    assert found is not None
    return found


def _own_counters(session: Manager) -> dict[str, int]:
    state = _netconf_state(session, f"<sessions><session><session-id>{session.session_id}"
                                    "</session-id></session></sessions>")
    [entry] = state.iterfind(f".//{{{MONITORING_NS}}}session")
    return {str(etree.QName(child).localname): int(child.text or 0) for child in entry
            if etree.QName(child).localname in ("in-rpcs", "in-bad-rpcs", "out-rpc-errors")}


def _uncached(server: Server, session: Manager) -> None:
    """netconfd answers /netconf-state from a cache of each session's that it refreshes
    every second (yuma123-mysession-cache's cache-timeout, 1 by default): a test that
    reads the counters twice within a second would see the first values again. 0 turns
    the cache off for the session."""
    if server.name == "netconfd":
        session.dispatch(etree.fromstring(
            '<set-my-session xmlns="http://netconfcentral.org/ns/yuma-mysession">'
            '<cache-timeout xmlns="http://yuma123.org/ns/yuma123-mysession-cache">0'
            "</cache-timeout></set-my-session>"))


def test_a_sessions_counters_count_its_rpcs_and_rpc_errors(server: Server) -> None:
    """RFC 6022 2.1.4: in-rpcs counts the session's correct <rpc>s, out-rpc-errors its
    replies holding an rpc-error. Of the two <get>s that read the counters each server
    counts one in the difference: the emulator counts a <get> as it arrives (the second
    read counts itself), netconfd once it is answered (the first is in the second's
    count); RFC 6022 leaves the moment open."""
    with server.session() as session:
        _uncached(server, session)
        before = _own_counters(session)
        for _ in range(5):
            session.get_config(source="running", filter=SWITCH_FILTER)
        with pytest.raises(RPCError):
            session.unlock("candidate")  # not locked by this session
        after = _own_counters(session)
        moved = {name: after[name] - before[name] for name in after}
        assert moved["in-rpcs"] + moved["in-bad-rpcs"] == 5 + 1 + 1
        assert moved["out-rpc-errors"] == 1
        refused_counted_bad = 1 if deviates(server, REFUSED_RPC_IS_BAD) else 0
        assert moved["in-bad-rpcs"] == refused_counted_bad


def test_a_lock_is_reported_as_a_global_lock_of_its_session(server: Server) -> None:
    """RFC 6022 2.1.2: a locked datastore's locks/global-lock names the session."""
    with server.session() as session:
        _uncached(server, session)
        session.lock("running")
        try:
            state = _netconf_state(session, "<datastores/>")
            locks = {entry.findtext(f"{{{MONITORING_NS}}}name"):
                     entry.findtext(f".//{{{MONITORING_NS}}}global-lock/"
                                    f"{{{MONITORING_NS}}}locked-by-session")
                     for entry in state.iterfind(f".//{{{MONITORING_NS}}}datastore")}
            assert locks == {"running": str(session.session_id), "candidate": None,
                             "startup": None}
        finally:
            session.unlock("running")


# ---- the netconfd peer itself ---------------------------------------------------------


def test_a_netconfd_that_does_not_start_is_reported_with_its_logs(tmp_path: Path) -> None:
    broken = tmp_path / "msoctl-congestion.yang"
    broken.write_text(MODULE.read_text().replace("type uint64;", "type uint64-typo;", 1))
    # reported when netconfd exited, not after the START_SECONDS wait for it ("was not
    # ready within"): told by the message, not by a clock
    with pytest.raises(PeerStartError, match=r"netconfd exited with status \d+ before it was "
                                             "ready") as failed, \
            running_netconfd(tmp_path / "peer", module=broken):
        pass
    assert "not ready within" not in str(failed.value)
    assert "uint64-typo" in str(failed.value), str(failed.value)  # netconfd's own log
    assert "sshd.log" in str(failed.value)
