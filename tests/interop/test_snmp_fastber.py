"""The fast decode path of response bindings (drivers/snmp/fastber.py).

Vectors are BER written by hand from X.690 (section 8.3 INTEGER, 8.7 OCTET STRING,
8.19 OBJECT IDENTIFIER, 8.1.3 length forms) for the SMIv2 types of RFC 2578 section 7.1
(IpAddress [APPLICATION 0], Counter32 [1], Gauge32 [2], TimeTicks [3], Opaque [4],
Counter64 [6]) and RFC 3416's exceptions (noSuchObject [0], noSuchInstance [1],
endOfMibView [2]); each is also decoded by pyasn1 with pysnmp's VarBindList, which
must agree. Then the whole path under pysnmp's USM, against net-snmp's reading of the
same agent, and against pysnmp's own decoding of the same responses.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pyasn1.codec.ber import decoder
from pyasn1.type import univ
from pysnmp.proto import rfc1905

from drivers.snmp import fastber, mibs
from drivers.snmp.session import SnmpSession, close_engines
from tests.support.snmp_agents import CREDENTIALS, AgentUnderTest, net_snmp

OID_PREFIX = bytes([0x06, 0x03, 0x2B, 0x06, 0x01])  # 1.3.6.1


def length(count: int) -> bytes:
    """X.690 8.1.3: the short form below 128, else the long form."""
    if count < 0x80:
        return bytes([count])
    octets = count.to_bytes((count.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


def binding(value: bytes, name: bytes = OID_PREFIX) -> bytes:
    body = name + value
    return b"\x30" + length(len(body)) + body


VECTORS: list[tuple[bytes, int, Any]] = [
    (b"\x02\x01\x00", 0x02, 0),
    (b"\x02\x02\xd8\xf0", 0x02, -10000),
    (b"\x02\x04\x7f\xff\xff\xff", 0x02, 2**31 - 1),
    (b"\x02\x04\x80\x00\x00\x00", 0x02, -2**31),
    (b"\x04\x03OE1", 0x04, b"OE1"),
    (b"\x04\x00", 0x04, b""),
    (b"\x06\x08\x2b\x06\x01\x04\x01\x81\xfd\x59", 0x06, (1, 3, 6, 1, 4, 1, 32473)),
    (b"\x40\x04\x7f\x00\x00\x01", 0x40, b"\x7f\x00\x00\x01"),
    (b"\x41\x05\x00\xff\xff\xff\xff", 0x41, 2**32 - 1),
    (b"\x42\x01\x07", 0x42, 7),
    (b"\x43\x03\x01\x86\xa0", 0x43, 100000),
    (b"\x46\x09\x00" + b"\xff" * 8, 0x46, 2**64 - 1),
    (b"\x46\x01\x00", 0x46, 0),
]


@pytest.mark.parametrize(("encoded", "tag", "expected"), VECTORS)
def test_values_decode_as_written_and_as_pyasn1_reads_them(
        encoded: bytes, tag: int, expected: Any) -> None:
    data = binding(encoded)
    [(name, value)] = fastber.decode_varbinds(data)
    assert name == (1, 3, 6, 1)
    assert value.tag == tag
    assert value.value == expected
    theirs, rest = decoder.decode(b"\x30" + length(len(data)) + data,
                                  asn1Spec=rfc1905.VarBindList())
    assert rest == b""
    their_value = theirs[0][1]
    while isinstance(their_value, univ.Choice):  # _BindValue, ObjectSyntax, Simple/Application
        their_value = their_value.getComponent()
    assert value.tagSet == their_value.tagSet
    if isinstance(expected, int):
        assert int(value) == int(their_value)
    elif isinstance(expected, tuple):
        assert tuple(value) == tuple(their_value)
    else:
        assert value.asOctets() == their_value.asOctets()


def test_exceptions_are_pysnmps_own_and_long_lengths_are_read() -> None:
    data = (binding(b"\x80\x00") + binding(b"\x81\x00") + binding(b"\x82\x00")
            + binding(b"\x04\x81\x90" + b"x" * 0x90))
    values = [value for _, value in fastber.decode_varbinds(data)]
    assert values[:3] == [rfc1905.noSuchObject, rfc1905.noSuchInstance, rfc1905.endOfMibView]
    assert isinstance(values[2], rfc1905.EndOfMibView)
    assert values[3].asOctets() == b"x" * 0x90


@pytest.mark.parametrize("encoded", [
    b"\x02\x02\x00\x01",        # non-minimal INTEGER
    b"\x02\x02\xff\x80",        # non-minimal negative INTEGER
    b"\x02\x00",                # empty INTEGER
    b"\x02\x05\x01\x00\x00\x00\x00",  # outside Integer32
    b"\x42\x01\xff",            # a negative Gauge32
    b"\x46\x0a\x01" + b"\x00" * 9,  # past Counter64
    b"\x05\x00",                # NULL as a response value
    b"\x40\x03\x01\x02\x03",    # a short IpAddress
    b"\x80\x01\x00",            # an exception with content
    b"\x99\x00",                # an unknown tag
    b"\x04\x80",                # indefinite length
])
def test_what_it_is_not_sure_of_is_left_to_pyasn1(encoded: bytes) -> None:
    with pytest.raises(fastber.Unsure):
        fastber.decode_varbinds(binding(encoded))


def test_a_report_or_truncated_scoped_pdu_is_not_split() -> None:
    pdu_fields = b"\x02\x01\x05\x02\x01\x00\x02\x01\x00"
    varbinds = binding(b"\x02\x01\x07")
    for pdu_tag in (0xA8, 0xA2):
        body = pdu_fields + bytes([0x30, len(varbinds)]) + varbinds
        pdu = bytes([pdu_tag, len(body)]) + body
        inner = b"\x04\x00\x04\x00" + pdu
        scoped = bytes([0x30, len(inner)]) + inner
        split = fastber.split_response(scoped)
        if pdu_tag == 0xA8:  # Report-PDU: pysnmp handles it whole
            assert split is None
        else:
            assert split is not None
            stripped, request_id, bindings = split
            assert request_id == 5 and bindings == [((1, 3, 6, 1),
                                                     fastber.WireValue(0x02, 7))]
            assert stripped.endswith(b"\x30\x00") and len(stripped) == len(scoped) - len(
                varbinds)
            assert fastber.split_response(scoped[:-1]) is None


# ---- under pysnmp, against net-snmp --------------------------------------------------------

@pytest.fixture(scope="module")
def harness() -> Any:
    agent = AgentUnderTest()
    yield agent
    agent.close()


ROOTS = ((1, 3, 6, 1, 4, 1, 32473), (*mibs.table("IF-MIB", "ifXTable").column("ifName").oid,))


def _walk(harness: AgentUnderTest) -> dict[tuple[int, ...], Any]:
    async def walk() -> dict[tuple[int, ...], Any]:
        try:
            session = SnmpSession(harness.target())
            walked, _ = await session.walk(ROOTS)
            return {oid: value for values in walked.values() for oid, value in values}
        finally:
            await close_engines()

    return asyncio.run(walk())


def _net_snmp(harness: AgentUnderTest) -> dict[tuple[int, ...], str]:
    found: dict[tuple[int, ...], str] = {}
    for root in ROOTS:
        completed = net_snmp(
            "snmpbulkwalk", "-v3", "-l", "authPriv", "-u", CREDENTIALS.user, "-a", "SHA-256",
            "-A", CREDENTIALS.auth_key, "-x", "AES", "-X", CREDENTIALS.priv_key, "-m", "",
            "-On", "-Oqtx", "-Cr50", f"127.0.0.1:{harness.agent.port}", ".".join(map(str, root)))
        assert completed.returncode == 0, completed.stderr
        for line in completed.stdout.splitlines():
            name, _, text = line.partition(" ")
            found[tuple(int(arc) for arc in name.strip(".").split("."))] = text.strip()
    return found


def _as_net_snmp_prints(value: Any) -> str:
    if isinstance(value.value, bytes):  # -Ox: every string in hex, a space after each octet
        return '"' + "".join(f"{octet:02X} " for octet in value.value) + '"' \
            if value.value else '""'
    if isinstance(value.value, tuple):
        return "." + ".".join(map(str, value.value))
    return str(value.value)


def test_every_value_agrees_with_net_snmp_and_with_pysnmps_own_decoding(
        harness: AgentUnderTest) -> None:
    """The whole path: pysnmp's USM (RFC 3414 authPriv, SHA-256 RFC 7860, AES RFC 3826)
    decrypts, the fast path decodes; every variable of the CPO/CPC subtree and ifName is
    what net-snmp reads from the same agent, and what pyasn1 decodes without the fast
    path (the agent's clock does not move between the reads)."""
    fast = _walk(harness)
    assert all(isinstance(value, fastber.WireValue) for value in fast.values())
    theirs = _net_snmp(harness)
    assert len(fast) > 500 and fast.keys() == theirs.keys()
    for oid, value in fast.items():
        assert _as_net_snmp_prints(value) == theirs[oid], (oid, value, theirs[oid])
    fastber.ENABLED = False
    try:
        slow = _walk(harness)
    finally:
        fastber.ENABLED = True
    assert not any(isinstance(value, fastber.WireValue) for value in slow.values())
    assert slow.keys() == fast.keys()
    for oid, value in slow.items():
        assert value.tagSet == fast[oid].tagSet
        mine = fast[oid].value
        if isinstance(mine, int):
            assert int(value) == mine
        elif isinstance(mine, tuple):
            assert tuple(value) == mine
        else:
            assert bytes(value.asOctets()) == mine


def test_another_pysnmp_manager_in_the_process_still_gets_its_bindings(
        harness: AgentUnderTest) -> None:
    """Only the responses to msoctl's own requests go the fast way: pysnmp's high-level
    API, in the same process after a fast walk, gets its bindings from pyasn1 whole."""
    from tests.support.snmp_agents import Client

    assert _walk(harness)

    async def theirs() -> list[tuple[tuple[int, ...], Any]]:
        return await Client(harness).bulk(10, ROOTS[0])

    answers = asyncio.run(theirs())
    assert len(answers) == 10
    assert not any(isinstance(value, fastber.WireValue) for _, value in answers)
