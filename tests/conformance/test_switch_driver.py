"""The switch driver (drivers/switch/netconf.py) against the NETCONF emulator.

The whole change sequence (plan, confirmed commit with persist, confirm or
cancel from a new session, the server's rollback when nobody confirms), the
fallback for a server without :candidate, rpc-errors as NetconfRejected with
their tag, app-tag and path, bad input refused before anything is sent, host
key verification, and every failure bounded by the timeout with the session
closed. The same sequence against Debian's netconfd is in
tests/interop/test_switch_driver_interop.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drivers.errors import (
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ValidationError,
)
from drivers.switch.netconf import (
    BASE_CAPABILITIES,
    NUDGE_SECONDS,
    NetconfRejected,
    NetconfTarget,
    SwitchSession,
)
from drivers.switch.tree import check, diff, from_xml, merge, to_xml, unmet
from emulators.faults import Fault
from tests.support.lab import wait_until
from tests.support.netconf import PASSWORD, TOKEN, USER, Loop, Switch, leaf, netconf, want


@pytest.fixture
def switch(loop: Loop) -> Iterator[Switch]:
    running = Switch(loop)
    yield running
    running.stop()


@pytest.fixture
def known_hosts(switch: Switch, tmp_path: Path) -> Path:
    path = tmp_path / "known_hosts"
    switch.server.write_known_hosts(path)
    return path


def target(switch: Switch, known_hosts: Path | None, **changes: Any) -> NetconfTarget:
    settings: dict[str, Any] = {
        "name": "sw-t", "host": "127.0.0.1", "port": switch.server.port, "username": USER,
        "password": PASSWORD, "known_hosts": known_hosts, "timeout_seconds": 3.0}
    settings.update(changes)
    return NetconfTarget(**settings)


def session(switch: Switch, known_hosts: Path | None, **changes: Any) -> SwitchSession:
    return SwitchSession(target(switch, known_hosts, **changes))


def running_xoff(switch: Switch) -> str | None:
    with netconf(switch.server.port) as client:
        return leaf(client, "ports/port/pfc/xoff-bytes")


# ---- the change sequence ------------------------------------------------------------


def test_capabilities_and_module(switch: Switch, known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        caps = s.capabilities
    assert caps.candidate and caps.persist and caps.validate and caps.rollback_on_error
    assert caps.module_revision == "2026-11-30"


def test_the_drivers_hello_names_the_base_protocols_only(switch: Switch,
                                                         known_hosts: Path) -> None:
    """RFC 6241 section 8.1: a client's hello lists the base protocols it speaks; the
    other capabilities are the server's to announce. A short hello also keeps clear of
    netconfd 2.13 leaving a first RPC unanswered when it comes in one read with the
    hello's tail (docs/dialects/netconf.md)."""
    with session(switch, known_hosts) as s:
        s.get_config()  # answered: the server has taken the hello in before it
        (seen,) = [served.client_capabilities for served in switch.server.sessions.values()]
    assert tuple(seen) == BASE_CAPABILITIES == (
        "urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1")


def test_plan_shows_the_servers_diff_and_changes_nothing(switch: Switch,
                                                         known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        plan = s.plan(want())
        assert plan.method == "candidate"
        paths = {c.path: c for c in plan.changes}
        xoff = paths["/switch/ports/port[name='Ethernet1']/pfc/xoff-bytes"]
        assert (xoff.kind, xoff.before, xoff.after) == ("add", None, 24_000_000)
        assert s.get_config("candidate") == s.get_config("running") == {"switch": {}}
    assert switch.datastores.locks == {}


def test_apply_confirm_from_a_new_session(switch: Switch, known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        applied = s.apply(want(), confirm_timeout_seconds=30, persist_id=TOKEN)
    assert applied.pending and applied.method == "confirmed-commit"
    assert running_xoff(switch) == "24000000"
    with session(switch, known_hosts) as s:
        s.verify(want())
        s.confirm(TOKEN)
    switch.clock.advance(60)
    assert running_xoff(switch) == "24000000"  # confirmed: the timeout no longer applies
    assert switch.datastores.pending is None


def test_apply_cancel_from_a_new_session_restores_running(switch: Switch,
                                                          known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        s.apply(want(), persist_id=TOKEN)
        s.confirm(TOKEN)
        s.apply(want(xoff=30_000_000), persist_id="second")
    assert running_xoff(switch) == "30000000"
    with session(switch, known_hosts) as s:
        s.cancel("second")
        assert s.get_config()["switch"]["ports"]["port"][0]["pfc"]["xoff-bytes"] == 24_000_000


def test_unconfirmed_commit_is_rolled_back_by_the_server(switch: Switch,
                                                         known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        s.apply(want(), confirm_timeout_seconds=20, persist_id=TOKEN)
    switch.clock.advance(19)
    assert running_xoff(switch) == "24000000"
    switch.clock.advance(2)
    assert running_xoff(switch) is None
    with session(switch, known_hosts) as s, pytest.raises(NetconfRejected) as refused:
        s.confirm(TOKEN)
    assert refused.value.tags == ("invalid-value",)


def test_a_second_apply_of_the_same_want_changes_nothing(switch: Switch,
                                                         known_hosts: Path) -> None:
    with session(switch, known_hosts) as s:
        s.apply(want(), persist_id=TOKEN)
        s.confirm(TOKEN)
        again = s.apply(want(), persist_id="again")
    assert (again.method, again.pending, again.changes) == ("none", False, [])
    assert switch.datastores.pending is None


def test_ports_are_replaced_whole_and_other_ports_left_alone(switch: Switch,
                                                             known_hosts: Path) -> None:
    both = want()
    both["switch"]["ports"]["port"].append(want(port="Ethernet2")["switch"]["ports"]["port"][0])
    smaller = {"switch": {"ports": {"port": [{"name": "Ethernet1", "speed": "400G"}]}}}
    with session(switch, known_hosts) as s:
        s.apply(both, persist_id=TOKEN)
        s.confirm(TOKEN)
        plan = s.plan(smaller)
        removed = {c.path for c in plan.changes if c.kind == "remove"}
        assert "/switch/ports/port[name='Ethernet1']/pfc/xoff-bytes" in removed
        assert not any("Ethernet2" in c.path for c in plan.changes)


def test_must_violation_is_rejected_with_its_app_tag_and_path(switch: Switch,
                                                              known_hosts: Path) -> None:
    with session(switch, known_hosts) as s, pytest.raises(NetconfRejected) as refused:
        s.plan(want(xoff=20_000, xon=30_000))
    error = refused.value.rpc_errors[0]
    assert (error.tag, error.app_tag) == ("operation-failed", "pfc-xon-not-below-xoff")
    assert error.path is not None and "xon-bytes" in error.path
    assert "pfc-xon-not-below-xoff" in str(refused.value)
    assert switch.datastores.locks == {}
    assert running_xoff(switch) is None


def test_bad_want_is_refused_before_anything_is_sent(switch: Switch,
                                                     known_hosts: Path) -> None:
    bad = want()
    bad["switch"]["ports"]["port"][0]["pfc"]["xoff-bytes"] = "lots"
    with session(switch, known_hosts) as s:
        with pytest.raises(ValidationError, match=r"pfc/xoff-bytes: 'lots' is not"):
            s.apply(bad, persist_id=TOKEN)
        with pytest.raises(ValidationError, match="is state data"):
            s.plan({"switch": {"buffer": {"total-bytes": 1}}})
    assert switch.commits == []


def test_lock_held_by_another_session_is_reported(switch: Switch, known_hosts: Path) -> None:
    with netconf(switch.server.port) as other:
        other.lock(target="candidate")
        with session(switch, known_hosts) as s, pytest.raises(NetconfRejected) as refused:
            s.apply(want(), persist_id=TOKEN)
    assert refused.value.tags == ("lock-denied",)
    assert running_xoff(switch) is None


def test_stale_candidate_changes_of_a_gone_session_are_discarded(switch: Switch,
                                                                 known_hosts: Path) -> None:
    with netconf(switch.server.port) as other:
        other.edit_config(target="candidate", config=to_xml(want(xoff=99_000_000)))
    with session(switch, known_hosts) as s:
        applied = s.apply(want(), persist_id=TOKEN)
        s.confirm(TOKEN)
    assert applied.pending
    assert running_xoff(switch) == "24000000"


def test_writable_running_fallback(loop: Loop, tmp_path: Path) -> None:
    switch = Switch(loop, candidate=False)
    try:
        hosts = tmp_path / "known_hosts"
        switch.server.write_known_hosts(hosts)
        with session(switch, hosts) as s:
            assert not s.capabilities.candidate
            plan = s.plan(want())
            assert plan.method == "local" and plan.changes
            applied = s.apply(want(), persist_id=TOKEN)
            assert (applied.method, applied.pending) == ("running", False)
            with pytest.raises(ValidationError, match=r"confirmed-commit:1\.1"):
                s.confirm(TOKEN)
        assert running_xoff(switch) == "24000000"
    finally:
        switch.stop()


# ---- trust and reachability ----------------------------------------------------------


def test_unknown_host_key_is_refused(switch: Switch, tmp_path: Path) -> None:
    other = tmp_path / "other_hosts"
    other.write_text(f"[127.0.0.1]:{switch.server.port} ssh-ed25519 "
                     "AAAAC3NzaC1lZDI1NTE5AAAAIBs1e5HAkkL2D6p0tG2n7Z4Rxw8kQm3bX2bqK9Q5x2Xy\n")
    with pytest.raises(DeviceUnreachable, match="not trusted"):
        session(switch, other)
    with session(switch, other, accept_unknown_host_keys=True) as s:
        assert s.capabilities.candidate
    with pytest.raises(ValidationError, match="does not exist"):
        session(switch, tmp_path / "missing")


def test_wrong_password_is_rejected(switch: Switch, known_hosts: Path) -> None:
    with pytest.raises(DeviceRejected, match="authentication failed"):
        session(switch, known_hosts, password="wrong")


def test_nothing_listening_is_unreachable(known_hosts: Path) -> None:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DeviceUnreachable, match="cannot connect"):
        SwitchSession(NetconfTarget(name="x", host="127.0.0.1", port=port, username=USER,
                                    password=PASSWORD, known_hosts=known_hosts))


# ---- faults: bounded, typed, session closed --------------------------------------------


def sessions_end(switch: Switch) -> None:
    switch.wait_sessions_ended()
    assert switch.server.sessions == {}


LOST = "get: the NETCONF session was lost"
NO_REPLY = "get: no reply within 1 s$"


@pytest.mark.parametrize(("kind", "error", "says"), [
    ("drop", DeviceUnreachable, LOST), ("reset", DeviceUnreachable, LOST),
    ("freeze", DeviceTimeout, NO_REPLY), ("garbage", DeviceTimeout, NO_REPLY),
    ("truncate", DeviceTimeout, NO_REPLY),
])
def test_transport_faults_are_typed_and_bounded(switch: Switch, known_hosts: Path,
                                                kind: str, error: type[Exception],
                                                says: str) -> None:
    """Bounded, told by what ended the RPC rather than by a clock (a loaded machine
    stretches one): the session's close, or the session's own 1 s timeout."""
    with session(switch, known_hosts, timeout_seconds=1.0) as s:
        switch.server.faults.inject(Fault(kind))
        with pytest.raises(error, match=says):
            s.get_state()
    switch.server.faults.clear()
    sessions_end(switch)


def test_slow_rpc_within_the_timeout_succeeds_and_past_it_times_out(
        switch: Switch, known_hosts: Path) -> None:
    with session(switch, known_hosts, timeout_seconds=1.0) as s:
        switch.server.faults.inject(Fault("latency", seconds=0.3))
        assert s.get_state()["switch"]["buffer"]["total-bytes"] == 8589934592
        switch.server.faults.clear("latency")
        switch.server.faults.inject(Fault("latency", seconds=1.5))
        with pytest.raises(DeviceTimeout, match="within 1 s"):
            s.get_config()
    switch.server.faults.clear()
    sessions_end(switch)


def test_a_first_reply_held_past_the_nudge_gets_one_read_behind_it(
        switch: Switch, known_hosts: Path) -> None:
    """first_reply_nudged: a session's first reply held back past NUDGE_SECONDS brings
    one get-config that selects nothing behind it (netconfd 2.13 answers a first RPC
    read with the hello's tail only once more input comes: tests/interop). Its reply
    is dropped and the first RPC gets its own; a later slow RPC brings none."""
    held = Fault("latency", seconds=NUDGE_SECONDS + 0.5, count=1)
    with session(switch, known_hosts, timeout_seconds=5.0) as s:
        [served] = switch.server.sessions.values()
        switch.server.faults.inject(held)
        assert s.get_state()["switch"]["buffer"]["total-bytes"] == 8589934592
        wait_until(lambda: served.counters.in_rpcs == 2, "the nudge to be read")
        switch.server.faults.inject(held)
        assert s.get_config() is not None
        assert served.counters.in_rpcs == 3
    switch.server.faults.clear()
    sessions_end(switch)


def test_a_drop_mid_apply_leaves_running_unchanged(switch: Switch, known_hosts: Path) -> None:
    """The session dies between the edit and the commit: the server discards the
    locked candidate with the session, running never changed."""
    with session(switch, known_hosts) as s:
        original = s._rpc

        def drop_before_commit(operation: str, *args: Any, **kwargs: Any) -> Any:
            if operation.startswith("commit"):
                switch.server.faults.inject(Fault("drop", count=1))
            return original(operation, *args, **kwargs)

        s._rpc = drop_before_commit  # type: ignore[method-assign]
        with pytest.raises(DeviceUnreachable):
            s.apply(want(), persist_id=TOKEN)
    switch.server.faults.clear()
    sessions_end(switch)
    assert running_xoff(switch) is None
    assert switch.datastores.locks == {}


# ---- trees ----------------------------------------------------------------------------


def test_tree_round_trip_and_diff() -> None:
    tree = check(want())
    xml = to_xml(tree, replace=[("switch", "ports", "port")])
    port = xml[0][1][0]
    assert port.get("{urn:ietf:params:xml:ns:netconf:base:1.0}operation") == "replace"
    assert port[0].tag.endswith("}name")  # the key first
    assert from_xml(xml) == tree
    assert diff(tree, tree) == []
    changed = merge(tree, {"switch": {"fast-cnp": {"enabled": False}}})
    assert [(c.path, c.before, c.after) for c in diff(tree, changed)] == [
        ("/switch/fast-cnp/enabled", True, False)]
    assert unmet({"switch": {"fast-cnp": {"enabled": True}}}, tree) == []


@pytest.mark.parametrize(("bad", "message"), [
    ({"switch": {"nope": 1}}, "unknown; known here"),
    ({"sw": {}}, "one key, 'switch'"),
    ({"switch": {"ports": {"port": [{"speed": "400G"}]}}}, "needs its key name"),
    ({"switch": {"ports": {"port": [{"name": "E1"}, {"name": "E1"}]}}}, "given twice"),
    ({"switch": {"ports": {"port": [{"name": "E1", "speed": "300G"}]}}}, "not one of"),
    ({"switch": {"fast-cnp": {"cnp-dscp": 64}}}, "out of range 0..63"),
    ({"switch": {"fast-cnp": {"enabled": "yes"}}}, "not true or false"),
])
def test_tree_check_names_the_path(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        check(bad)


def test_verify_names_what_running_lacks(switch: Switch, known_hosts: Path) -> None:
    """The read-back before a confirmation: a commit that changed nothing (netconfd's
    fault after a validate, which the driver steps around) would be caught here."""
    from drivers.errors import VerificationFailed

    with session(switch, known_hosts) as s, pytest.raises(
            VerificationFailed, match=r"fast-cnp/enabled is None, wanted True; .*\(and 9 more\)"):
        s.verify(want())
