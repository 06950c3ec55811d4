"""The switch emulator's datastores and operations, driven by a real ncclient client:
edit-config's operations and error-options, locks between sessions, validation
against the YANG module (libyang when installed, and always the documented
fallback), commit, confirmed commit with its rollback on a stepped clock,
persist across sessions, cancel-commit."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError

from drivers.switch.schema import NAMESPACE
from emulators.netconf.datastore import CAPABILITIES
from emulators.netconf.edit import ERROR_OPTIONS
from emulators.netconf.validation import MustRules, check_structure, default_validator, prefixed
from emulators.netconf.yangdata import to_tree
from emulators.switch.config import parse
from tests.support.netconf import (
    NC,
    NS,
    PORT,
    Loop,
    Switch,
    config,
    leaf,
    netconf,
    port,
    switch_text,
)
from tests.support.yang import CASES, Case, document, unprefixed


@pytest.fixture
def switch(loop: Loop) -> Iterator[Switch]:
    running = Switch(loop)
    yield running
    running.stop()


@pytest.fixture(params=["default", "fallback"])
def any_switch(loop: Loop, request: pytest.FixtureRequest) -> Iterator[Switch]:
    """The emulator with libyang when it imports, and with the fallback must rules."""
    running = Switch(loop, validator=MustRules() if request.param == "fallback" else None)
    yield running
    running.stop()


FAST_CNP_ON = config("<fast-cnp><enabled>true</enabled><cnp-priority>6</cnp-priority></fast-cnp>")


# ---- capabilities, reading -------------------------------------------------------------


def test_hello_advertises_the_datastore_capabilities(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        for capability in CAPABILITIES:
            assert capability in session.server_capabilities
        assert ":candidate" in session.server_capabilities
        assert ":confirmed-commit:1.1" in session.server_capabilities


def test_get_merges_operational_state_and_filters_subtrees(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.commit()
        reply = session.get()
        assert reply.data.find(f".//{{{NAMESPACE}}}total-bytes").text == "8589934592"
        assert reply.data.find(f".//{{{NAMESPACE}}}cnp-priority").text == "6"
        only_buffer = session.get(filter=("subtree", f"<switch {NS}><buffer/></switch>"))
        assert only_buffer.data.find(f".//{{{NAMESPACE}}}fast-cnp") is None
        assert only_buffer.data.find(f".//{{{NAMESPACE}}}total-bytes") is not None
        configured = session.get_config(
            source="running", filter=("subtree", f"<switch {NS}><fast-cnp/></switch>"))
        assert configured.data.find(f".//{{{NAMESPACE}}}enabled").text == "true"
        assert configured.data.find(f".//{{{NAMESPACE}}}buffer") is None
        nothing = session.get_config(source="running",
                                     filter=("subtree", '<other xmlns="urn:x"/>'))
        assert len(nothing.data) == 0


# ---- edit-config -----------------------------------------------------------------------


def test_merge_replace_create_delete_remove(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=config(
            port("<speed>400G</speed><cable-length-meters>30000</cable-length-meters>")))
        session.edit_config(target="candidate", config=config(port("<speed>800G</speed>")))
        assert leaf(session, "ports/port/speed", "candidate") == "800G"
        assert leaf(session, "ports/port/cable-length-meters", "candidate") == "30000"
        assert leaf(session, "ports/port/speed") is None  # running is untouched
        # replace: the port holds only what the edit gives
        session.edit_config(target="candidate", config=config(
            f'<ports><port nc:operation="replace">{PORT}<speed>100G</speed></port></ports>'))
        assert leaf(session, "ports/port/cable-length-meters", "candidate") is None
        with pytest.raises(RPCError) as exists:
            session.edit_config(target="candidate", config=config(
                f'<ports><port nc:operation="create">{PORT}</port></ports>'))
        assert exists.value.tag == "data-exists"
        assert unprefixed(exists.value.path) == "/switch/ports/port[name='Ethernet1']"
        session.edit_config(target="candidate", config=config(
            port('<speed nc:operation="delete"/>')))
        assert leaf(session, "ports/port/speed", "candidate") is None
        with pytest.raises(RPCError) as missing:
            session.edit_config(target="candidate", config=config(
                port('<speed nc:operation="delete"/>')))
        assert missing.value.tag == "data-missing"
        assert unprefixed(missing.value.path) == "/switch/ports/port[name='Ethernet1']/speed"
        session.edit_config(target="candidate", config=config(  # remove: no error
            port('<speed nc:operation="remove"/>')))
        session.edit_config(target="candidate", config=config(
            port("<lossless-priorities>3</lossless-priorities>"
                 "<lossless-priorities>4</lossless-priorities><pfc><xoff-bytes>9</xoff-bytes>"
                 "</pfc>")))
        session.edit_config(target="candidate", config=config(
            port('<lossless-priorities nc:operation="delete">3</lossless-priorities>')))
        text = switch_text(session, "candidate")
        assert "<lossless-priorities>4</lossless-priorities>" in text
        assert "<lossless-priorities>3</lossless-priorities>" not in text


def test_default_operation_none_and_replace(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.edit_config(target="candidate", default_operation="none", config=config(
            '<fast-cnp><enabled>false</enabled>'
            '<cnp-dscp nc:operation="merge">26</cnp-dscp></fast-cnp>'))
        assert leaf(session, "fast-cnp/enabled", "candidate") == "true"  # none: untouched
        assert leaf(session, "fast-cnp/cnp-dscp", "candidate") == "26"
        session.edit_config(target="candidate", default_operation="replace",
                            config=config(port("<speed>400G</speed>")))
        assert leaf(session, "fast-cnp/enabled", "candidate") is None
        assert leaf(session, "ports/port/speed", "candidate") == "400G"


TWO_EDITS = config(port("<speed>400G</speed>", "Ethernet2")
                   + f'<ports><port nc:operation="create">{PORT}</port></ports>')


@pytest.mark.parametrize("error_option", ERROR_OPTIONS)
def test_a_refused_edit_keeps_nothing_whatever_the_error_option(switch: Switch,
                                                                error_option: str) -> None:
    """RFC 6241 7.2: under rollback-on-error the target is restored to its state at the
    start of the edit; the emulator (like netconfd) does the same under stop-on-error and
    continue-on-error, so a refused edit never leaves half of itself behind."""
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=config(port("<speed>100G</speed>")))
        before = switch_text(session, "candidate")
        with pytest.raises(RPCError) as refused:
            session.edit_config(target="candidate", config=TWO_EDITS, error_option=error_option)
        assert refused.value.tag == "data-exists"
        assert switch_text(session, "candidate") == before  # Ethernet2 was not kept


def test_continue_on_error_reports_every_error(switch: Switch) -> None:
    """RFC 6241 7.2: continue-on-error goes on past an error and records each one; the
    edit is still refused as a whole."""
    edits = config(f'<ports><port nc:operation="create">{PORT}</port></ports>'
                   + port("<speed>400G</speed>", "Ethernet2")
                   + port('<speed nc:operation="delete"/>', "Ethernet3"))
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=config(port("<speed>100G</speed>")))
        before = switch_text(session, "candidate")
        for option, tags in (("stop-on-error", ["data-exists"]),
                             ("continue-on-error", ["data-exists", "data-missing"])):
            with pytest.raises(RPCError) as refused:
                session.edit_config(target="candidate", config=edits, error_option=option)
            errors = getattr(refused.value, "errors", None) or [refused.value]
            assert [error.tag for error in errors] == tags
            assert switch_text(session, "candidate") == before


MISSING_LEAF = port('<speed nc:operation="delete"/>', "Ethernet9")  # a port not there


@pytest.mark.parametrize("candidate", [True, False], ids=["candidate", "writable-running"])
@pytest.mark.parametrize("error_option", ERROR_OPTIONS)
def test_a_failed_delete_leaves_the_target_lockable(loop: Loop, candidate: bool,
                                                   error_option: str) -> None:
    """RFC 6241 7.2 (the target as it was before a failed edit-config) and 7.5 (a lock is
    refused when the candidate has changes not committed; a failed edit made none): the
    delete of a leaf of a port that does not exist is data-missing, and no list entry
    for that port is left behind, so another session's lock succeeds."""
    running = Switch(loop, candidate=candidate)
    target = "candidate" if candidate else "running"
    try:
        with netconf(running.server.port) as first, netconf(running.server.port) as second:
            before = switch_text(first, target)
            with pytest.raises(RPCError) as refused:
                first.edit_config(target=target, config=config(MISSING_LEAF),
                                  error_option=error_option)
            assert refused.value.tag == "data-missing"
            assert unprefixed(refused.value.path) == \
                "/switch/ports/port[name='Ethernet9']/speed"
            assert switch_text(first, target) == before
            second.lock(target)
            second.unlock(target)
    finally:
        running.stop()


@pytest.mark.parametrize(("body", "tag", "path"), [
    ("<fast-cnp><cnp-priority>8</cnp-priority></fast-cnp>", "invalid-value",
     "/switch/fast-cnp/cnp-priority"),
    (port("<speed>300G</speed>"), "invalid-value", "/switch/ports/port[name='Ethernet1']/speed"),
    ("<fast-cnp><enabled>yes</enabled></fast-cnp>", "invalid-value", "/switch/fast-cnp/enabled"),
    ("<fast-cnp><colour>red</colour></fast-cnp>", "unknown-element", "/switch/fast-cnp"),
    ("<buffer><total-bytes>1</total-bytes></buffer>", "invalid-value", "/switch/buffer"),
])
def test_bad_values_are_refused_at_the_edit(switch: Switch, body: str, tag: str,
                                            path: str) -> None:
    with netconf(switch.server.port) as session:
        with pytest.raises(RPCError) as refused:
            session.edit_config(target="candidate", config=config(body))
        assert (refused.value.tag, unprefixed(refused.value.path)) == (tag, path)
        assert switch_text(session, "candidate") == ""


# ---- validation: the must rules ----------------------------------------------------------


def candidate_document(case: Case) -> str:
    return f'<config {NC}>{document(case.config)}</config>'


@pytest.mark.parametrize("case", [c for c in CASES if c.app_tag], ids=lambda c: c.name)
def test_a_must_violation_is_reported_by_validate_and_commit(any_switch: Switch,
                                                             case: Case) -> None:
    with netconf(any_switch.server.port) as session:
        session.lock("candidate")
        session.edit_config(target="candidate", config=candidate_document(case),
                            error_option="rollback-on-error")
        for refuse in (lambda: session.validate("candidate"), session.commit):
            with pytest.raises(RPCError) as refused:
                refuse()
            error = refused.value
            assert (error.tag, error.app_tag, unprefixed(error.path)) == (
                "operation-failed", case.app_tag, case.path)
            assert error.path.startswith("/msocc:switch/msocc:ports")
        assert switch_text(session) == ""
        session.discard_changes()
        assert switch_text(session, "candidate") == ""
        session.unlock("candidate")


@pytest.mark.parametrize("validator", [MustRules(), default_validator()],
                         ids=lambda v: v.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_fallback_and_libyang_agree_with_netconfd(validator: Any, case: Case) -> None:
    """The same documents tests/interop/test_yang.py gives netconfd and libyang."""
    root = etree.fromstring(candidate_document(case))
    assert check_structure(root) == []
    errors = [(e.tag, e.app_tag, unprefixed(e.path or "")) for e in validator.must_errors(root)]
    assert errors == ([] if case.app_tag is None
                      else [("operation-failed", case.app_tag, case.path)])


def test_libyang_paths_are_written_in_the_module_prefix() -> None:
    assert prefixed("/msoctl-congestion:switch/ports/port[name='E1']/lossless-priorities[.='6']") \
        == "/msocc:switch/msocc:ports/msocc:port[msocc:name='E1']/msocc:lossless-priorities[.='6']"


def test_test_only_edit_checks_the_must_rules_and_changes_nothing(switch: Switch) -> None:
    broken = next(case for case in CASES if case.app_tag == "ecn-without-thresholds")
    with netconf(switch.server.port) as session:
        with pytest.raises(RPCError) as refused:
            session.edit_config(target="candidate", config=candidate_document(broken),
                                test_option="test-only")
        assert refused.value.app_tag == "ecn-without-thresholds"
        session.edit_config(target="candidate", config=FAST_CNP_ON, test_option="test-only")
        assert switch_text(session, "candidate") == ""


def test_validate_an_inline_config(switch: Switch) -> None:
    broken = next(case for case in CASES if case.app_tag == "pfc-xon-not-below-xoff")
    with netconf(switch.server.port) as session:
        with pytest.raises(RPCError) as refused:
            session.validate(source=etree.fromstring(candidate_document(broken)))
        assert refused.value.app_tag == "pfc-xon-not-below-xoff"
        session.validate(source=etree.fromstring(candidate_document(CASES[0])))


# ---- locks -------------------------------------------------------------------------------


def test_a_lock_held_by_another_session(switch: Switch) -> None:
    with netconf(switch.server.port) as first, netconf(switch.server.port) as second:
        first.lock("candidate")
        with pytest.raises(RPCError) as denied:
            second.lock("candidate")
        assert denied.value.tag == "lock-denied"
        assert denied.value.info is not None and f">{first.session_id}<" in denied.value.info
        with pytest.raises(RPCError) as in_use:
            second.edit_config(target="candidate", config=FAST_CNP_ON)
        assert in_use.value.tag == "in-use"
        with pytest.raises(RPCError):
            second.unlock("candidate")
        second.lock("running")  # locks are per datastore
        with pytest.raises(RPCError) as commit_refused:
            first.commit()
        assert commit_refused.value.tag == "in-use"
        second.unlock("running")
        first.edit_config(target="candidate", config=FAST_CNP_ON)
    switch.wait_sessions_ended()
    with netconf(switch.server.port) as third:
        third.lock("candidate")  # released at the holder's session end ...
        assert switch_text(third, "candidate") == ""  # ... and its changes discarded


def test_killing_the_holder_releases_its_lock(switch: Switch) -> None:
    with netconf(switch.server.port) as holder, netconf(switch.server.port) as other:
        holder.lock("running")
        with pytest.raises(RPCError):
            other.lock("running")
        other.kill_session(holder.session_id)
        other.lock("running")
        other.unlock("running")


def test_a_changed_candidate_cannot_be_locked(switch: Switch) -> None:
    with netconf(switch.server.port) as first, netconf(switch.server.port) as second:
        first.edit_config(target="candidate", config=FAST_CNP_ON)
        with pytest.raises(RPCError) as denied:
            second.lock("candidate")
        assert denied.value.tag == "lock-denied"
        first.discard_changes()
        second.lock("candidate")


# ---- commit, copy, delete ----------------------------------------------------------------


def test_commit_applies_candidate_and_calls_back_with_the_tree(switch: Switch) -> None:
    valid = candidate_document(CASES[0])
    with netconf(switch.server.port) as session:
        session.lock("candidate")
        session.discard_changes()
        session.edit_config(target="candidate", config=valid, error_option="rollback-on-error")
        session.validate("candidate")
        session.commit()
        session.unlock("candidate")
        assert leaf(session, "fast-cnp/enabled") == "true"
    wanted = parse(switch.commits[-1])
    port_config = wanted.port("Ethernet1")
    assert wanted.fast_cnp.enabled and port_config.lossless_priorities == {3}
    assert port_config.xoff_bytes == 24_000_000 and port_config.queue(3).fast_cnp
    assert port_config.queue(3).wred.max_threshold_bytes == 30_000_000


def test_copy_config_and_delete_config_of_startup(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.commit()
        session.copy_config(source="running", target="startup")
        assert leaf(session, "fast-cnp/enabled", "startup") == "true"
        session.delete_config(target="startup")
        assert switch_text(session, "startup") == ""
        with pytest.raises(RPCError) as refused:
            session.delete_config(target="running")
        assert refused.value.tag == "invalid-value"


def test_edit_running_without_candidate(loop: Loop) -> None:
    switch = Switch(loop, candidate=False)
    try:
        with netconf(switch.server.port) as session:
            assert ":candidate" not in session.server_capabilities
            session.edit_config(target="running", config=FAST_CNP_ON)
            assert leaf(session, "fast-cnp/enabled") == "true"
            broken = next(case for case in CASES if case.app_tag == "wred-min-not-below-max")
            with pytest.raises(RPCError) as refused:
                session.edit_config(target="running", config=candidate_document(broken))
            assert refused.value.app_tag == "wred-min-not-below-max"
            assert "Ethernet1" not in switch_text(session)
        assert switch.commits and parse(switch.commits[-1]).fast_cnp.enabled
    finally:
        switch.stop()


# ---- confirmed commit --------------------------------------------------------------------


def test_an_unconfirmed_commit_is_rolled_back_when_the_timeout_expires(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=config(port("<speed>100G</speed>")))
        session.commit()
        before = switch_text(session)
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.commit(confirmed=True, timeout="30")
        assert leaf(session, "fast-cnp/enabled") == "true"
        switch.clock.advance(29)
        assert leaf(session, "fast-cnp/enabled") == "true"
        switch.clock.advance(2)
        assert switch_text(session) == before
        assert switch_text(session, "candidate") == before
        assert to_tree(etree.fromstring(config(port("<speed>100G</speed>")))) \
            == switch.commits[-1]


def test_the_clock_alone_rolls_back(switch: Switch) -> None:
    """No RPC after the timeout: the task sleeping on the clock does it."""
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.commit(confirmed=True, timeout="10", persist="tok")
    switch.clock.advance(11)

    async def rolled_back() -> None:
        # Read in the worker thread, after the expiry queued there: a rollback is not
        # atomic to another thread (pending is cleared before running is stored).
        while await switch.server.in_worker(lambda: switch.datastores.pending) is not None:
            await asyncio.sleep(0.005)
    switch.loop.run(rolled_back())
    assert switch.commits[-1] == {}


def test_confirming_commit_and_persist_across_sessions(switch: Switch) -> None:
    with netconf(switch.server.port) as first:
        first.lock("candidate")
        first.edit_config(target="candidate", config=FAST_CNP_ON,
                          error_option="rollback-on-error")
        first.validate("candidate")
        first.commit(confirmed=True, timeout="30", persist="tok")
    switch.wait_sessions_ended()
    switch.clock.advance(10)
    with netconf(switch.server.port) as second:
        assert leaf(second, "fast-cnp/enabled") == "true"  # survived the session's end
        with pytest.raises(RPCError) as wrong:
            second.commit(persist_id="other")
        assert wrong.value.tag == "invalid-value"
        second.commit(persist_id="tok")
    switch.clock.advance(3600)
    with netconf(switch.server.port) as third:
        assert leaf(third, "fast-cnp/enabled") == "true"
        assert switch.datastores.pending is None


def test_a_confirmed_commit_without_persist_dies_with_its_session(switch: Switch) -> None:
    with netconf(switch.server.port) as first:
        first.edit_config(target="candidate", config=FAST_CNP_ON)
        first.commit(confirmed=True, timeout="30")
        with netconf(switch.server.port) as other:
            with pytest.raises(RPCError) as refused:
                other.commit()
            assert refused.value.tag == "in-use"
    switch.wait_sessions_ended()
    with netconf(switch.server.port) as second:
        assert switch_text(second) == ""


def test_cancel_commit_restores_running(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session.edit_config(target="candidate", config=FAST_CNP_ON)
        session.commit(confirmed=True, timeout="30", persist="tok")
        session.edit_config(target="candidate", config=config(port("<speed>400G</speed>")))
        session.commit(confirmed=True, timeout="60", persist_id="tok")  # extends it
        assert leaf(session, "ports/port/speed") == "400G"
        with pytest.raises(RPCError):
            session.cancel_commit(persist_id="nope")
        session.cancel_commit(persist_id="tok")
        assert switch_text(session) == ""
        with pytest.raises(RPCError) as nothing:
            session.cancel_commit()
        assert nothing.value.tag == "operation-failed"  # no parameter of it is wrong
