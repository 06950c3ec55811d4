"""The switch emulator's NETCONF protocol layer: framing, messages, and the SSH server
answering a real ncclient client (and a raw asyncssh client for what ncclient hides)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree
from ncclient.operations.errors import TimeoutExpiredError
from ncclient.operations.rpc import RPCError
from ncclient.transport.errors import AuthenticationError, SSHUnknownHostError, TransportError
from ncclient.transport.session import NetconfBase

from emulators.faults import Fault
from emulators.netconf import NetconfServer, NetconfSession, RpcError, RpcErrors, messages
from emulators.netconf.framing import (
    BASE_1_0,
    BASE_1_1,
    MAX_CHUNK_BYTES,
    Decoder,
    Framing,
    FramingError,
    encode,
    negotiate,
)
from emulators.netconf.messages import NETCONF_NS, EnvelopeError, qname
from tests.support.lab import wait_until
from tests.support.netconf import PASSWORD, USER, Loop, netconf
from tests.support.netconf_raw import RawClient

TEST_NS = "urn:msoctl:test"
# A capability URI with a query string: the & must reach the client intact.
MODULE_CAPABILITY = (
    "urn:megascaleout:yang:msoctl-congestion?module=msoctl-congestion&revision=2026-11-30"
)


# ---- framing -----------------------------------------------------------------------------


def decode_all(data: bytes, framing: Framing, pieces: list[int] | None = None) -> list[bytes]:
    decoder = Decoder()
    decoder.framing = framing
    found: list[bytes] = []
    cuts = [0, *(pieces or []), len(data)]
    for start, end in pairwise(cuts):
        decoder.feed(data[start:end])
        found.extend(decoder.messages())
    return found


MESSAGE = b'<rpc message-id="1" xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><get/></rpc>'


@pytest.mark.parametrize("framing", list(Framing))
def test_every_split_point_decodes_the_same_messages(framing: Framing) -> None:
    second = "<rpc message-id='2'>ünïcödé ]]> #</rpc>".encode()
    wire = encode(MESSAGE, framing, max_chunk_bytes=7) if framing is Framing.CHUNKED \
        else encode(MESSAGE, framing)
    wire += encode(second, framing)
    for cut in range(len(wire) + 1):
        assert decode_all(wire, framing, [cut]) == [MESSAGE, second], cut
    assert decode_all(wire, framing, list(range(1, len(wire)))) == [MESSAGE, second]


@given(
    st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=4),
    st.integers(min_value=1, max_value=64),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_chunked_round_trip_of_any_bytes(
    bodies: list[bytes], chunk: int, cuts: list[int]
) -> None:
    wire = b"".join(encode(body, Framing.CHUNKED, max_chunk_bytes=chunk) for body in bodies)
    pieces = sorted({cut for cut in cuts if cut < len(wire)})
    assert decode_all(wire, Framing.CHUNKED, pieces) == bodies


@given(st.lists(st.binary(max_size=300).filter(lambda b: b"]]>]]>" not in b), min_size=1,
                max_size=4),
       st.lists(st.integers(min_value=0, max_value=1300), max_size=12))
def test_end_of_message_round_trip(bodies: list[bytes], cuts: list[int]) -> None:
    wire = b"".join(encode(body, Framing.END_OF_MESSAGE) for body in bodies)
    pieces = sorted({cut for cut in cuts if cut < len(wire)})
    decoded = decode_all(wire, Framing.END_OF_MESSAGE, pieces)
    # A body ending in part of the marker can merge with it; the rest must be exact.
    if not any(body.endswith((b"]", b"]]", b"]]>", b"]]>]", b"]]>]]")) for body in bodies):
        assert decoded == bodies


def test_chunk_sizes_count_bytes_and_split_multi_chunk_messages() -> None:
    body = "é".encode() * 5  # 10 bytes, 5 characters
    assert encode(body, Framing.CHUNKED) == b"\n#10\n" + body + b"\n##\n"
    assert encode(body, Framing.CHUNKED, max_chunk_bytes=4) == (
        b"\n#4\n" + body[:4] + b"\n#4\n" + body[4:8] + b"\n#2\n" + body[8:] + b"\n##\n")
    assert decode_all(b"\n#3\nabc\n#1\nd\n#2\nef\n##\n", Framing.CHUNKED) == [b"abcdef"]


def test_the_largest_chunk_size_is_accepted_and_one_more_is_not() -> None:
    decoder = Decoder(max_message_bytes=2**40)
    decoder.framing = Framing.CHUNKED
    decoder.feed(b"\n#%d\nabc" % MAX_CHUNK_BYTES)
    assert decoder.next_message() is None
    too_big = Decoder()
    too_big.framing = Framing.CHUNKED
    too_big.feed(b"\n#%d\n" % (MAX_CHUNK_BYTES + 1))
    with pytest.raises(FramingError):
        too_big.next_message()


@pytest.mark.parametrize("wire", [
    b"#3\nabc\n##\n",          # no LF before the hash
    b"\n3\nabc\n##\n",         # no hash
    b"\n#0\n\n##\n",           # zero-length chunk
    b"\n#03\nabc\n##\n",       # leading zero
    b"\n#x\nabc\n##\n",        # not a number
    b"\n#-3\nabc\n##\n",
    b"\n# 3\nabc\n##\n",
    b"\n#\nabc\n##\n",         # empty size
    b"\n#12345678901\n",       # eleven digits
    b"\n#3\nabc\n##x",         # bad end of chunks
    b"\n#3\nabcd\n##\n",       # more data than the chunk said
    b"\n##\n",                 # end of chunks before any chunk
])
def test_malformed_chunk_headers_are_refused(wire: bytes) -> None:
    decoder = Decoder()
    decoder.framing = Framing.CHUNKED
    decoder.feed(wire)
    with pytest.raises(FramingError):
        decoder.messages()
    with pytest.raises(FramingError):  # and the decoder stays broken
        decoder.next_message()


def test_framing_switches_only_after_the_hello_and_only_when_both_speak_1_1() -> None:
    assert negotiate([BASE_1_0, BASE_1_1], [BASE_1_0, BASE_1_1]) is Framing.CHUNKED
    assert negotiate([BASE_1_0, BASE_1_1], [BASE_1_0]) is Framing.END_OF_MESSAGE
    assert negotiate([BASE_1_0], [BASE_1_0, BASE_1_1]) is Framing.END_OF_MESSAGE
    decoder = Decoder()
    decoder.feed(b"<hello/>]]>]]>\n#4\n<a/>\n##\n")
    assert decoder.next_message() == b"<hello/>"
    decoder.framing = Framing.CHUNKED
    assert decoder.next_message() == b"<a/>"


def test_encoding_refuses_what_the_framing_cannot_carry() -> None:
    with pytest.raises(ValueError):
        encode(b"", Framing.CHUNKED)
    with pytest.raises(ValueError):
        encode(b"a]]>]]>b", Framing.END_OF_MESSAGE)


# ---- messages ----------------------------------------------------------------------------


def test_hello_escapes_capabilities_and_parses_back() -> None:
    wire = messages.hello([BASE_1_0, MODULE_CAPABILITY], session_id=7)
    assert b"&amp;revision" in wire
    parsed = messages.parse_hello(wire)
    assert parsed.capabilities == (BASE_1_0, MODULE_CAPABILITY)
    assert parsed.session_id == 7


def test_rpc_attributes_are_copied_message_id_first_in_the_base_namespace() -> None:
    rpc = messages.parse_rpc(
        b'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" xmlns:ex="urn:ex"'
        b' ex:user-id="fred" message-id="101"><get/></rpc>')
    assert rpc.attributes == (("message-id", "101"), ("{urn:ex}user-id", "fred"))
    assert rpc.operation_name == "get"
    root = etree.fromstring(messages.reply(rpc.attributes))
    assert root.tag == qname("rpc-reply")
    assert list(root.attrib.items()) == [("message-id", "101"), ("{urn:ex}user-id", "fred")]
    assert root[0].tag == qname("ok")


def test_an_rpc_without_message_id_or_operation_is_an_envelope_error() -> None:
    with pytest.raises(EnvelopeError) as missing:
        messages.parse_rpc(f'<rpc xmlns="{NETCONF_NS}"><get/></rpc>'.encode())
    assert missing.value.error.tag == "missing-attribute"
    with pytest.raises(EnvelopeError) as empty:
        messages.parse_rpc(f'<rpc xmlns="{NETCONF_NS}" message-id="1"/>'.encode())
    assert empty.value.error.tag == "missing-element"
    assert empty.value.attributes == (("message-id", "1"),)


def test_rpc_error_element_carries_every_field() -> None:
    error = RpcError("invalid-value", "min must be below max", app_tag="wred-min-not-below-max",
                     path="/t:switch/t:min", path_namespaces={"t": TEST_NS},
                     info={"bad-element": "min"})
    element = error.to_element()
    fields = {etree.QName(child).localname: child for child in element}
    assert [etree.QName(child).localname for child in element] == [
        "error-type", "error-tag", "error-severity", "error-app-tag", "error-path",
        "error-message", "error-info"]
    assert fields["error-path"].nsmap["t"] == TEST_NS
    assert fields["error-info"][0].tag == qname("bad-element")
    with pytest.raises(ValueError):
        RpcError("no-such-tag")


# ---- the server, with ncclient -----------------------------------------------------------


class Switch:
    """A server with two test handlers and a record of ended sessions."""

    def __init__(self, loop: Loop, *, base_1_1: bool = True,
                 authorized_keys: dict[str, list[str]] | None = None):
        self.loop = loop
        self.ended: list[int] = []
        self.seen: list[tuple[int, str]] = []
        self.server = NetconfServer(
            name="sw-test", users={USER: PASSWORD}, authorized_keys=authorized_keys,
            capabilities=[MODULE_CAPABILITY], base_1_1=base_1_1,
            on_session_end=lambda session: self.ended.append(session.session_id),
        )
        self.server.handle("get-config", self.get_config)
        self.server.handle("refuse", self.refuse, namespace=TEST_NS)
        loop.run(self.server.start())

    def get_config(self, session: NetconfSession, rpc: Any) -> Any:
        self.seen.append((session.session_id, str(rpc.get("message-id"))))
        top = etree.Element(f"{{{TEST_NS}}}switch")
        etree.SubElement(top, f"{{{TEST_NS}}}name").text = "sw-a"
        return messages.data(top)

    async def refuse(self, session: NetconfSession, rpc: Any) -> None:
        raise RpcErrors([
            RpcError("invalid-value", "min-threshold must be below max-threshold",
                     app_tag="wred-min-not-below-max",
                     path="/t:switch/t:ports/t:port[t:name='eth1']/t:min-threshold",
                     path_namespaces={"t": TEST_NS}),
            RpcError("data-missing", "no such port", error_type="application",
                     path="/t:switch/t:ports/t:port[t:name='eth9']",
                     path_namespaces={"t": TEST_NS}),
        ])

    def stop(self) -> None:
        self.loop.run(self.server.stop())


@pytest.fixture
def switch(loop: Loop) -> Iterator[Switch]:
    running = Switch(loop)
    yield running
    running.stop()


def refuse_rpc() -> Any:
    return etree.Element(f"{{{TEST_NS}}}refuse")


def test_hello_negotiates_chunked_framing_and_lists_capabilities(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        assert session._session._base == NetconfBase.BASE_11
        assert MODULE_CAPABILITY in session.server_capabilities
        reply = session.get_config(source="running")
        assert reply.ok
        assert reply.data.find(f"{{{TEST_NS}}}switch/{{{TEST_NS}}}name").text == "sw-a"
        # connect() returns once the client's hello is sent; the reply proves it was read.
        served = switch.server.sessions[int(session.session_id)]
        assert served.framing is Framing.CHUNKED
        assert BASE_1_1 in served.client_capabilities


def test_a_1_0_server_keeps_end_of_message_framing(loop: Loop) -> None:
    switch = Switch(loop, base_1_1=False)
    try:
        with netconf(switch.server.port) as session:
            assert session._session._base == NetconfBase.BASE_10
            assert session.get_config(source="running").ok
            assert switch.server.sessions[int(session.session_id)].framing \
                is Framing.END_OF_MESSAGE
    finally:
        switch.stop()


def test_the_reply_carries_the_message_id_of_the_request(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        reply = session.get_config(source="running")
        root = etree.fromstring(reply.xml.encode())
        assert root.tag == qname("rpc-reply")
        session_id, message_id = switch.seen[-1]
        assert session_id == int(session.session_id)
        assert root.get("message-id") == message_id


def test_rpc_errors_reach_ncclient_with_tag_path_app_tag_and_message(switch: Switch) -> None:
    with netconf(switch.server.port) as session, pytest.raises(RPCError) as raised:
        session.dispatch(refuse_rpc())
    error = raised.value
    first, second = error.errors
    assert first.tag == "invalid-value"
    assert first.app_tag == "wred-min-not-below-max"
    assert first.path == "/t:switch/t:ports/t:port[t:name='eth1']/t:min-threshold"
    assert first.message == "min-threshold must be below max-threshold"
    assert first.severity == "error"
    assert first.type == "application"
    assert second.tag == "data-missing"


def test_unknown_operation_is_not_supported(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        with pytest.raises(RPCError) as raised:
            session.dispatch(etree.Element(qname("frobnicate")))
        assert raised.value.tag == "operation-not-supported"
        assert session.get_config(source="running").ok  # the session goes on


def test_close_session_ends_the_session_and_calls_the_hook(switch: Switch) -> None:
    with netconf(switch.server.port) as session:
        session_id = int(session.session_id)
        session.close_session()
        assert not session.connected
    wait_until(lambda: session_id in switch.ended, "session_id in switch.ended")
    assert session_id not in switch.server.sessions
    assert switch.ended.count(session_id) == 1


def test_kill_session_from_another_session(switch: Switch) -> None:
    with netconf(switch.server.port) as victim, netconf(switch.server.port) as killer:
        victim_id = int(victim.session_id)
        assert killer.kill_session(str(victim_id)).ok
        assert victim_id in switch.ended  # its locks are gone before the ok
        wait_until(lambda: not victim.connected, "not victim.connected")
        with pytest.raises((TransportError, TimeoutExpiredError)):
            victim.get_config(source="running")
        with pytest.raises(RPCError) as unknown:
            killer.kill_session("4242")
        assert unknown.value.tag == "invalid-value"
        with pytest.raises(RPCError) as itself:
            killer.kill_session(killer.session_id)
        assert itself.value.tag == "invalid-value"
        assert killer.get_config(source="running").ok


def test_a_bad_password_is_refused(switch: Switch) -> None:
    with pytest.raises(AuthenticationError), netconf(switch.server.port, password="wrong"):
        pass


def test_public_key_login_and_host_key_checked_against_a_known_hosts_file(
    loop: Loop, tmp_path: Path
) -> None:
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    key_file = tmp_path / "id_ed25519"
    key_file.write_bytes(client_key.export_private_key("openssh"))
    key_file.chmod(0o600)
    public = client_key.export_public_key("openssh").decode()
    switch = Switch(loop, authorized_keys={USER: [public]})
    try:
        known_hosts = tmp_path / "known_hosts"
        switch.server.write_known_hosts(known_hosts)
        config = tmp_path / "ssh_config"
        config.write_text(f"Host *\n  UserKnownHostsFile {known_hosts}\n")
        with netconf(switch.server.port, password="", key_filename=str(key_file),
                     hostkey_verify=True, ssh_config=str(config)) as session:
            assert session.get_config(source="running").ok
        other = tmp_path / "other_known_hosts"
        other.write_text(f"[127.0.0.1]:{switch.server.port} "
                         f"{NetconfServer().host_public_key}\n")
        config.write_text(f"Host *\n  UserKnownHostsFile {other}\n")
        with pytest.raises(SSHUnknownHostError), netconf(
                switch.server.port, hostkey_verify=True, ssh_config=str(config)):
            pass
    finally:
        switch.stop()


def test_only_the_netconf_subsystem_is_served(switch: Switch, loop: Loop) -> None:
    async def attempt(**request: Any) -> None:
        async with asyncssh.connect(
            "127.0.0.1", switch.server.port, username=USER, password=PASSWORD,
            known_hosts=None, client_keys=None,
        ) as connection:
            await connection.open_session(encoding=None, **request)

    for request in ({"subsystem": "sftp"}, {"subsystem": "shell"}, {"command": "id"}, {}):
        with pytest.raises(asyncssh.ChannelOpenError):
            loop.run(attempt(**request))


# ---- the server, raw -------------------------------------------------------------------


def error_tag(reply: Any) -> str:
    return str(reply.find(f"{qname('rpc-error')}/{qname('error-tag')}").text)


def test_raw_malformed_xml_and_envelope_errors(switch: Switch, loop: Loop) -> None:
    client = RawClient(switch.server.port)
    loop.run(client.open())
    try:
        reply = loop.run(client.exchange(b"<rpc message-id='1'><get-config>"))
        assert error_tag(reply) == "malformed-message"
        reply = loop.run(client.exchange(f'<rpc xmlns="{NETCONF_NS}"><get/></rpc>'.encode()))
        assert error_tag(reply) == "missing-attribute"
        reply = loop.run(client.exchange(
            f'<rpc xmlns="{NETCONF_NS}" xmlns:ex="urn:ex" message-id="77" ex:user="fred">'
            f'<get-config><source><running/></source></get-config></rpc>'.encode()))
        assert list(reply.attrib.items()) == [("message-id", "77"), ("{urn:ex}user", "fred")]
        assert reply.find(qname("data")) is not None
    finally:
        client.close()


def test_raw_a_bad_chunk_header_ends_the_session(switch: Switch, loop: Loop) -> None:
    client = RawClient(switch.server.port)
    session_id = loop.run(client.open())
    try:
        client.writer.write(b"\n#0x10\n<rpc/>\n##\n")
        assert loop.run(client.closed())
        wait_until(lambda: session_id in switch.ended, "session_id in switch.ended")
    finally:
        client.close()


def test_raw_a_client_hello_with_a_session_id_ends_the_session(
    switch: Switch, loop: Loop
) -> None:
    async def hello_with_session_id() -> bool:
        client = RawClient(switch.server.port)
        client.connection = await asyncssh.connect(
            "127.0.0.1", switch.server.port, username=USER, password=PASSWORD,
            known_hosts=None, client_keys=None)
        client.writer, client.reader, _ = await client.connection.open_session(
            subsystem="netconf", encoding=None)
        await client.receive()
        client.writer.write(encode(messages.hello([BASE_1_0], session_id=3),
                                   Framing.END_OF_MESSAGE))
        try:
            return await client.closed()
        finally:
            client.close()

    assert loop.run(hello_with_session_id())


CLOSE_SESSION = f'<rpc xmlns="{NETCONF_NS}" message-id="1"><close-session/></rpc>'.encode()
# A request after close-session big enough to be still on its way when the server
# closes: unread input at a close is what makes a TCP stack reset the stream.
PIPELINED = (f'<rpc xmlns="{NETCONF_NS}" message-id="2"><get-config><source><running/>'
             f"</source><!-- {'x' * 1024 * 1024} --></get-config></rpc>").encode()
CLOSE_SESSIONS = 10  # per framing and client behaviour


async def close_session_answer(port: int, capabilities: tuple[str, ...], then: str) -> bytes:
    """What a raw client receives after sending close-session and then either another
    request (``"pipeline"``) or its EOF (``"eof"``), until the server closes."""
    client = RawClient(port)
    await client.open(capabilities)
    try:
        client.writer.write(encode(CLOSE_SESSION, client.decoder.framing))
        if then == "pipeline":
            client.writer.write(encode(PIPELINED, client.decoder.framing))
        else:
            client.writer.write_eof()
        try:
            return await client.receive()
        except (EOFError, asyncssh.Error, ConnectionError) as lost:
            return repr(lost).encode()
    finally:
        client.close()


@pytest.mark.parametrize("capabilities", [(BASE_1_0, BASE_1_1), (BASE_1_0,)],
                         ids=["chunked", "end-of-message"])
def test_the_ok_to_close_session_always_arrives(switch: Switch,
                                                capabilities: tuple[str, ...]) -> None:
    """RFC 6241 7.8: the server answers close-session with <ok/> and then closes the
    session; the reply reaches the client first, in either framing (RFC 6242 4.1 and
    4.2), even when the client has sent more (a pipelined request, its EOF) that the
    server then never reads. Before the server waited for its channel to close, a
    third of the sessions (with a request pipelined, all of them) lost the reply to a
    reset of the TCP stream."""
    async def many() -> list[bytes]:
        return [await close_session_answer(switch.server.port, capabilities, then)
                for then in ("pipeline", "eof") for _ in range(CLOSE_SESSIONS)]

    answers = asyncio.run(many())  # the clients on a loop of their own, not the server's
    lost = [answer for answer in answers if b"<ok/>" not in answer]
    assert not lost, f"{len(lost)} of {len(answers)} sessions lost the reply: {lost[:3]}"


def test_ncclient_close_session_gets_its_ok_every_time(switch: Switch) -> None:
    """RFC 6241 7.8 with ncclient, which waits for the reply before it closes."""
    for _ in range(8):
        with netconf(switch.server.port) as session:
            assert session.close_session().ok
            assert not session.connected


# ---- the work of a server is done off its event loop ---------------------------------------


def test_a_blocked_operation_stalls_neither_the_loop_nor_another_server(loop: Loop) -> None:
    """One server's operation that does not return (a handler waiting on an event)
    runs in that server's worker thread: a second server on the same event loop keeps
    answering meanwhile (RFC 6241 7.8 close-session included), and the first answers
    once the operation ends."""
    release = threading.Event()
    entered = threading.Event()

    def blocked(session: NetconfSession, rpc: Any) -> Any:
        entered.set()
        assert release.wait(30)
        return messages.data()

    slow, fast = Switch(loop), Switch(loop)
    slow.server.handle("block", blocked, namespace=TEST_NS)
    try:
        with netconf(slow.server.port, timeout=30) as waiting:
            outcome: list[Any] = []
            caller = threading.Thread(target=lambda: outcome.append(
                waiting.dispatch(etree.Element(f"{{{TEST_NS}}}block"))))
            caller.start()
            assert entered.wait(10)
            with netconf(fast.server.port, timeout=5) as other:
                assert other.get_config(source="running").ok
            assert loop.run(asyncio.sleep(0, result=True), timeout=5)  # the loop is free
            assert caller.is_alive()  # still blocked: nothing was cut short
            release.set()
            caller.join(10)
            assert outcome and outcome[0].ok
    finally:
        release.set()
        slow.stop()
        fast.stop()


# ---- faults ----------------------------------------------------------------------------


def test_latency_holds_the_reply(switch: Switch) -> None:
    switch.server.faults.inject(Fault("latency", seconds=0.2, count=1))
    with netconf(switch.server.port) as session:
        assert session.get_config(source="running").ok
    assert not switch.server.faults.is_active("latency")


@pytest.mark.parametrize("kind", ["drop", "reset"])
def test_drop_and_reset_close_the_connection_mid_rpc(switch: Switch, kind: str) -> None:
    switch.server.faults.inject(Fault(kind, count=1))
    with netconf(switch.server.port, timeout=3) as session:
        session_id = int(session.session_id)
        with pytest.raises((TransportError, TimeoutExpiredError)):
            session.get_config(source="running")
        wait_until(lambda: not session.connected, "not session.connected")
    wait_until(lambda: session_id in switch.ended, "session_id in switch.ended")
    with netconf(switch.server.port) as session:  # the fault was used up
        assert session.get_config(source="running").ok


@pytest.mark.parametrize("kind", ["garbage", "truncate"])
def test_a_spoiled_reply_never_reaches_the_caller(switch: Switch, kind: str) -> None:
    switch.server.faults.inject(Fault(kind, count=1))
    with netconf(switch.server.port, timeout=1) as session, pytest.raises(TimeoutExpiredError):
        session.get_config(source="running")


def test_raw_garbage_is_a_framed_message_that_is_not_xml(switch: Switch, loop: Loop) -> None:
    client = RawClient(switch.server.port)
    loop.run(client.open())
    try:
        switch.server.faults.inject(Fault("garbage", count=1))
        with pytest.raises(etree.XMLSyntaxError):
            loop.run(client.exchange(f'<rpc xmlns="{NETCONF_NS}" message-id="1">'
                                     f'<get-config/></rpc>'.encode()))
    finally:
        client.close()


def test_freeze_answers_nothing_until_cleared(switch: Switch) -> None:
    with netconf(switch.server.port, timeout=1) as session:
        switch.server.faults.inject(Fault("freeze"))
        with pytest.raises(TimeoutExpiredError):
            session.get_config(source="running")
        switch.server.faults.clear("freeze")
        assert session.get_config(source="running").ok
