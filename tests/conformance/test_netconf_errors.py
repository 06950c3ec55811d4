"""A refusal is answered in bounded size, however many errors the request holds: at most
100 rpc-errors in a reply, the last saying how many were left out, each error-message
cut short; an edit-config of 40,000 list entries that all fail is answered in tens of
kilobytes (it was megabytes), through a real ncclient client."""

from __future__ import annotations

from lxml import etree
from ncclient.operations.rpc import RaiseMode

from emulators.netconf.messages import (
    MAX_ERROR_MESSAGE_CHARS,
    MAX_RPC_ERRORS,
    NETCONF_NS,
    RpcError,
    error_reply,
    qname,
)
from emulators.netconf.validation import MustRules
from tests.support.netconf import NC, NS, Loop, Switch, netconf

ENTRIES = 40_000
REPLY_BOUND_BYTES = 128 * 1024  # 100 errors with their paths and messages fit well in it


def rpc_errors(reply: bytes) -> list[etree._Element]:
    return etree.fromstring(reply).findall(qname("rpc-error"))


def messages_of(errors: list[etree._Element]) -> list[str]:
    return [error.findtext(qname("error-message")) or "" for error in errors]


# ---- the reply itself ------------------------------------------------------------------------


def test_at_most_100_rpc_errors_the_last_saying_how_many_were_left_out() -> None:
    errors = [RpcError("invalid-value", f"value {n} is wrong") for n in range(ENTRIES)]
    errors += [RpcError("data-missing", "gone", error_type="protocol")] * 5
    reply = error_reply((("message-id", "1"),), errors)
    listed = rpc_errors(reply)
    assert len(listed) == MAX_RPC_ERRORS
    assert messages_of(listed)[:3] == ["value 0 is wrong", "value 1 is wrong",
                                       "value 2 is wrong"]
    last = listed[-1]
    assert last.findtext(qname("error-tag")) == "invalid-value"  # the first left out's
    assert last.findtext(qname("error-type")) == "application"
    left_out = ENTRIES + 5 - (MAX_RPC_ERRORS - 1)
    assert messages_of([last])[0] == (f"{left_out} more errors left out (a reply lists at "
                                      f"most 100): invalid-value {left_out - 5}, "
                                      "data-missing 5")
    assert len(reply) < 32 * 1024


def test_exactly_100_errors_are_all_listed() -> None:
    errors = [RpcError("invalid-value", f"value {n}") for n in range(MAX_RPC_ERRORS)]
    assert messages_of(rpc_errors(error_reply((), errors))) == [
        f"value {n}" for n in range(MAX_RPC_ERRORS)]


def test_an_error_message_is_cut_short() -> None:
    long = "x" * 1_000_000
    [listed] = rpc_errors(error_reply((), [RpcError("operation-failed", long)]))
    text = messages_of([listed])[0]
    assert len(text) == MAX_ERROR_MESSAGE_CHARS
    assert text.endswith("… (1000000 characters in all)")


# ---- 40,000 failing list entries over NETCONF --------------------------------------------------


def many_ports(body: str) -> str:
    ports = "".join(f"<port><name>Ethernet{n}</name>{body}</port>" for n in range(ENTRIES))
    return f"<config {NC}><switch {NS}><ports>{ports}</ports></switch></config>"


def test_an_edit_of_40000_bad_entries_is_answered_in_bounded_size(loop: Loop) -> None:
    """Every entry's speed is not of its type (invalid-value at the edit, RFC 7950
    8.3.1): 40,000 errors found, 100 reported."""
    switch = Switch(loop)
    try:
        with netconf(switch.server.port, timeout=60) as session:
            session.raise_mode = RaiseMode.NONE
            reply = session.edit_config(target="candidate", config=many_ports(
                "<speed>1T</speed>"), error_option="continue-on-error")
            raw = reply.xml.encode()
            assert len(raw) < REPLY_BOUND_BYTES, len(raw)
            listed = rpc_errors(raw)
            assert len(listed) == MAX_RPC_ERRORS
            assert {e.findtext(qname("error-tag")) for e in listed} == {"invalid-value"}
            assert messages_of(listed)[-1].startswith(
                f"{ENTRIES - (MAX_RPC_ERRORS - 1)} more errors left out")
    finally:
        switch.stop()


def test_a_validate_of_40000_entries_breaking_a_must_rule_is_bounded(loop: Loop) -> None:
    """Each entry has lossless priorities and no PFC headroom (the module's
    lossless-without-headroom rule, found for every entry by the fallback rules, which
    report them all): validate of the candidate answers 100 errors."""
    switch = Switch(loop, validator=MustRules())
    try:
        with netconf(switch.server.port, timeout=60) as session:
            session.edit_config(target="candidate", config=many_ports(
                "<lossless-priorities>3</lossless-priorities>"))
            session.raise_mode = RaiseMode.NONE
            reply = session.validate(source="candidate")
            raw = reply.xml.encode()
            assert len(raw) < REPLY_BOUND_BYTES, len(raw)
            listed = rpc_errors(raw)
            assert len(listed) == MAX_RPC_ERRORS
            assert {e.findtext(qname("error-app-tag")) for e in listed[:-1]} == {
                "lossless-without-headroom"}
            session.discard_changes()
    finally:
        switch.stop()


def test_the_reply_stays_in_the_base_namespace() -> None:
    reply = error_reply((("message-id", "7"),), [RpcError("in-use")] * 500)
    root = etree.fromstring(reply)
    assert root.tag == f"{{{NETCONF_NS}}}rpc-reply" and root.get("message-id") == "7"
