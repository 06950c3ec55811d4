"""NETCONF monitoring on the switch emulator (RFC 6022): /netconf-state's datastores with
their locks, its sessions and its statistics, read through a real ncclient client, and
the counters moved by what each counter's description in ietf-netconf-monitoring names
(correct and bad <rpc>s, rpc-errors, hellos, sessions dropped, closed and killed)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from lxml import etree
from lxml.etree import _Element
from ncclient.manager import Manager
from ncclient.operations.rpc import RPCError

from emulators.netconf.messages import NETCONF_NS
from emulators.netconf.monitoring import MONITORING_NS
from tests.support.lab import wait_until
from tests.support.netconf import Loop, Switch, netconf
from tests.support.netconf_raw import RawClient

COUNTERS = ("in-rpcs", "in-bad-rpcs", "out-rpc-errors", "out-notifications")
# yang:date-and-time (RFC 6991), as the server writes it: UTC, to the second
DATE_AND_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")


@pytest.fixture
def switch(loop: Loop) -> Iterator[Switch]:
    """A server of its own for each test: its statistics start from zero."""
    running = Switch(loop)
    yield running
    running.stop()


def m(local: str) -> str:
    return f"{{{MONITORING_NS}}}{local}"


def netconf_state(session: Manager) -> _Element:
    reply = session.get(filter=("subtree", f'<netconf-state xmlns="{MONITORING_NS}"/>'))
    found = reply.data.find(m("netconf-state"))
    assert found is not None
    return found


def statistics(session: Manager) -> dict[str, str]:
    found = netconf_state(session).find(m("statistics"))
    assert found is not None
    return {str(etree.QName(child).localname): child.text or "" for child in found}


def counts(session: Manager) -> dict[str, int]:
    """The server's statistics that are numbers."""
    return {name: int(value) for name, value in statistics(session).items()
            if name != "netconf-start-time"}


def sessions(session: Manager) -> dict[int, dict[str, str]]:
    """Each listed session's leaves, by session-id."""
    listed = netconf_state(session).iterfind(f"{m('sessions')}/{m('session')}")
    return {int(entry.findtext(m("session-id")) or 0):
            {str(etree.QName(child).localname): child.text or "" for child in entry}
            for entry in listed}


def own_counters(session: Manager) -> dict[str, int]:
    return {name: int(value) for name, value in sessions(session)[int(session.session_id)]
            .items() if name in COUNTERS}


def moment(text: str) -> datetime:
    assert DATE_AND_TIME.fullmatch(text), text
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def whole_seconds(when: datetime) -> datetime:
    return when.replace(microsecond=0)


# ---- the tree ----------------------------------------------------------------------------


def test_netconf_state_has_every_container_in_the_modules_order(switch: Switch) -> None:
    """RFC 6022 2.1: capabilities, datastores, schemas, sessions, statistics."""
    with netconf(switch.server.port) as session:
        state = netconf_state(session)
        assert [etree.QName(child).localname for child in state] == [
            "capabilities", "datastores", "schemas", "sessions", "statistics"]
        assert session.get_config(source="running").data.find(m("netconf-state")) is None


def test_datastores_show_a_global_lock_while_it_is_held(switch: Switch) -> None:
    """RFC 6022 2.1.2: each datastore the server has; locks/global-lock with the
    session holding it and when it took it, and no locks once it is released."""
    with netconf(switch.server.port) as session:
        def datastores() -> dict[str, _Element]:
            return {entry.findtext(m("name")) or "": entry for entry in netconf_state(session)
                    .iterfind(f"{m('datastores')}/{m('datastore')}")}

        assert list(datastores()) == ["running", "candidate", "startup"]
        assert all(entry.find(m("locks")) is None for entry in datastores().values())
        before = whole_seconds(datetime.now(UTC))
        session.lock("candidate")
        after = datetime.now(UTC)
        try:
            lock = datastores()["candidate"].find(f"{m('locks')}/{m('global-lock')}")
            assert lock is not None
            assert lock.findtext(m("locked-by-session")) == str(session.session_id)
            assert before <= moment(lock.findtext(m("locked-time")) or "") <= after
            assert datastores()["running"].find(m("locks")) is None
        finally:
            session.unlock("candidate")
        assert datastores()["candidate"].find(m("locks")) is None


def test_a_server_without_candidate_lists_running_and_startup(loop: Loop) -> None:
    switch = Switch(loop, candidate=False)
    try:
        with netconf(switch.server.port) as session:
            names = [entry.findtext(m("name")) for entry in netconf_state(session)
                     .iterfind(f"{m('datastores')}/{m('datastore')}")]
            assert names == ["running", "startup"]
    finally:
        switch.stop()


def test_every_open_session_is_listed(switch: Switch) -> None:
    """RFC 6022 2.1.4: session-id, transport, username, source-host, login-time and the
    four counters of each session open now."""
    before = whole_seconds(datetime.now(UTC))
    with netconf(switch.server.port) as first, netconf(switch.server.port) as second:
        listed = sessions(first)
        assert sorted(listed) == sorted([int(first.session_id), int(second.session_id)])
        for entry in listed.values():
            assert entry["transport"] == "netconf-ssh"
            assert entry["username"] == "admin"
            assert entry["source-host"] == "127.0.0.1"
            assert before <= moment(entry["login-time"]) <= datetime.now(UTC)
            assert set(COUNTERS) <= set(entry)
    # both ended on the server's side too
    wait_until(lambda: not switch.server.sessions, "the sessions ended")
    with netconf(switch.server.port) as third:
        switch_sessions = sessions(third)
        assert list(switch_sessions) == [int(third.session_id)]


# ---- the counters ------------------------------------------------------------------------


def test_n_rpcs_move_in_rpcs_by_n(switch: Switch) -> None:
    """in-rpcs counts correct <rpc> messages, per session and for the server; the <get>
    that reads them is one (counted before it runs)."""
    with netconf(switch.server.port) as session:
        mine, server = own_counters(session), counts(session)
        for _ in range(7):
            session.get_config(source="running")
        mine_after, server_after = own_counters(session), counts(session)
        # the first reads in own_counters and counts saw themselves; then 7 get-configs,
        # the read of own_counters after them (and the read of counts, 1 more for it)
        assert mine_after["in-rpcs"] - mine["in-rpcs"] == 7 + 2
        assert server_after["in-rpcs"] - server["in-rpcs"] == 7 + 2
        assert mine_after["out-rpc-errors"] == mine["out-rpc-errors"] == 0
        assert mine_after["in-bad-rpcs"] == 0
        assert server_after["out-notifications"] == 0


def test_an_rpc_error_moves_out_rpc_errors(switch: Switch) -> None:
    """out-rpc-errors counts replies holding an <rpc-error>; the request was a correct
    <rpc> all the same (in-rpcs)."""
    with netconf(switch.server.port) as session:
        mine = own_counters(session)
        with pytest.raises(RPCError):
            session.get_config(source="nowhere")
        with pytest.raises(RPCError):
            session.dispatch(etree.Element("{urn:example:nothing}frobnicate"))
        after = own_counters(session)
        assert after["out-rpc-errors"] - mine["out-rpc-errors"] == 2
        assert after["in-rpcs"] - mine["in-rpcs"] == 3  # the two, and this read
        assert after["in-bad-rpcs"] == 0
        assert counts(session)["out-rpc-errors"] == 2


def test_a_malformed_rpc_moves_in_bad_rpcs(switch: Switch, loop: Loop) -> None:
    """in-bad-rpcs counts messages that are not correct <rpc>s: an XML parse error and
    an <rpc> without message-id (errors on the rpc layer); each answered with an
    rpc-error, which out-rpc-errors counts too."""
    client = RawClient(switch.server.port)
    raw_id = loop.run(client.open())
    try:
        loop.run(client.exchange(b"<rpc message-id='1'><get-config>"))
        loop.run(client.exchange(f'<rpc xmlns="{NETCONF_NS}"><get/></rpc>'.encode()))
        loop.run(client.exchange(f'<rpc xmlns="{NETCONF_NS}" message-id="3"><get-config>'
                                 "<source><running/></source></get-config></rpc>".encode()))
        with netconf(switch.server.port) as session:
            raw = sessions(session)[raw_id]
            assert (raw["in-bad-rpcs"], raw["in-rpcs"], raw["out-rpc-errors"]) == \
                ("2", "1", "2")
            server = counts(session)
            assert (server["in-bad-rpcs"], server["out-rpc-errors"]) == (2, 2)
    finally:
        client.close()


def test_a_dropped_session_moves_dropped_sessions(switch: Switch) -> None:
    """dropped-sessions counts sessions ended abnormally (here: the client's transport
    closed without close-session)."""
    with netconf(switch.server.port) as session:
        session._session.close()  # the SSH connection goes, no close-session
    wait_until(lambda: not switch.server.sessions, "the sessions ended")
    with netconf(switch.server.port) as session:
        assert counts(session)["dropped-sessions"] == 1
        assert counts(session)["in-sessions"] == 2


def test_close_session_and_kill_session_are_not_dropped_sessions(switch: Switch) -> None:
    """RFC 6022: dropped-sessions "is not incremented when a session is properly closed
    by a <close-session> operation, or killed by a <kill-session> operation"."""
    with netconf(switch.server.port) as session:
        session.close_session()
    with netconf(switch.server.port) as victim, netconf(switch.server.port) as killer:
        killer.kill_session(victim.session_id)
        server = counts(killer)
        assert server["dropped-sessions"] == 0
        assert server["in-sessions"] == 3


def test_a_bad_hello_moves_in_bad_hellos_and_in_sessions(switch: Switch, loop: Loop) -> None:
    """in-sessions counts every server hello sent; in-bad-hellos the sessions dropped for
    an invalid client hello (here: no base version in common), which are not counted
    as dropped sessions as well: in-sessions - in-bad-hellos is the sessions started."""
    client = RawClient(switch.server.port)
    try:
        loop.run(client.open(("urn:example:no-base",)))
        assert loop.run(client.closed())
    finally:
        client.close()
    wait_until(lambda: not switch.server.sessions, "the sessions ended")
    with netconf(switch.server.port) as session:
        server = counts(session)
        assert (server["in-bad-hellos"], server["in-sessions"], server["dropped-sessions"]) \
            == (1, 2, 0)


def test_the_start_time_is_when_the_server_started(loop: Loop) -> None:
    before = whole_seconds(datetime.now(UTC))
    switch = Switch(loop)
    try:
        with netconf(switch.server.port) as session:
            started = moment(statistics(session)["netconf-start-time"])
            assert before <= started <= datetime.now(UTC)
    finally:
        switch.stop()
