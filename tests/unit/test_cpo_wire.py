"""The CPO/CPC agent's own BER for its variable bindings (emulators/cpo/wire.py): every value
the same bytes as pyasn1 writes for pysnmp's type, a binding list spliced into a scopedPDU
the same bytes as pyasn1's whole encoding, and pysnmp's values where the splice cannot go."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyasn1.codec.ber import encoder
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.proto.api import v2c
from pysnmp.proto.mpmod import rfc3412

from emulators.cpo import wire

TYPES: dict[str, Any] = {
    "Integer32": rfc1902.Integer32, "Counter32": rfc1902.Counter32,
    "Gauge32": rfc1902.Gauge32, "Unsigned32": rfc1902.Unsigned32,
    "TimeTicks": rfc1902.TimeTicks, "Counter64": rfc1902.Counter64,
    "OCTET STRING": rfc1902.OctetString, "BITS": rfc1902.Bits,
    "OBJECT IDENTIFIER": rfc1902.ObjectIdentifier,
}
EDGES: dict[str, list[Any]] = {
    "Integer32": [0, 1, -1, 127, 128, -128, -129, 255, 256, 2**31 - 1, -(2**31)],
    "Counter32": [0, 127, 128, 255, 2**31, 2**32 - 1],
    "Gauge32": [0, 1, 2**32 - 1],
    "Unsigned32": [0, 2**24, 2**32 - 1],
    "TimeTicks": [0, 100, 2**32 - 1],
    "Counter64": [0, 2**63, 2**64 - 1],
    "OCTET STRING": [b"", b"Ethernet1", bytes(127), bytes(128), bytes(300), bytes(65535)],
    "BITS": [b"\x00", b"\x80\x01"],
    "OBJECT IDENTIFIER": [(0, 0), (1, 3, 6, 1, 4, 1, 64000, 1), (1, 39), (2, 999, 3),
                          (1, 3, 2**32 - 1, 128, 16383, 16384)],
}
OUT_OF_RANGE = [("Integer32", 2**31), ("Integer32", -(2**31) - 1), ("Counter32", -1),
                ("Counter32", 2**32), ("Counter64", 2**64), ("TimeTicks", -5),
                ("OCTET STRING", 5), ("Integer32", b"x"), ("OBJECT IDENTIFIER", (3, 1)),
                ("OBJECT IDENTIFIER", (1, 40)), ("OBJECT IDENTIFIER", (1,))]


def pyasn1(base_type: str, raw: Any) -> bytes:
    return bytes(encoder.encode(TYPES[base_type](raw)))


@pytest.mark.parametrize(("base_type", "raw"),
                         [(t, raw) for t, values in EDGES.items() for raw in values])
def test_each_value_is_the_bytes_pyasn1_writes(base_type: str, raw: Any) -> None:
    assert wire.value(base_type, raw) == pyasn1(base_type, raw)


@given(st.sampled_from(["Integer32", "Counter32", "Gauge32", "TimeTicks", "Counter64"])
       .flatmap(lambda t: st.tuples(st.just(t), st.integers(
           *{"Integer32": (-(2**31), 2**31 - 1), "Counter64": (0, 2**64 - 1)}.get(
               t, (0, 2**32 - 1))))))
def test_any_number_in_range_is_the_bytes_pyasn1_writes(case: tuple[str, int]) -> None:
    assert wire.value(*case) == pyasn1(*case)


@given(st.tuples(st.integers(0, 1), st.integers(0, 39)),
       st.lists(st.integers(0, 2**40), max_size=20))
def test_any_name_is_the_bytes_pyasn1_writes(first: tuple[int, int], rest: list[int]) -> None:
    arcs = (*first, *rest)
    assert wire.name(arcs) == bytes(encoder.encode(rfc1902.ObjectName(arcs)))


@pytest.mark.parametrize(("base_type", "raw"), OUT_OF_RANGE)
def test_a_value_the_type_cannot_hold_is_refused(base_type: str, raw: Any) -> None:
    with pytest.raises(ValueError):
        wire.value(base_type, raw)


def response(request_id: int, bindings: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """A ScopedPDU holding a Response-PDU with ``bindings``, and that PDU."""
    pdu = v2c.ResponsePDU()
    v2c.apiPDU.set_defaults(pdu)
    v2c.apiPDU.set_request_id(pdu, request_id)
    v2c.apiPDU.set_varbinds(pdu, bindings)
    scoped = rfc3412.ScopedPDU()
    scoped.setComponentByPosition(0, b"\x80\x00\x4f\xb8\x05agent")
    scoped.setComponentByPosition(1, b"")
    scoped.setComponentByPosition(2)
    scoped.getComponentByPosition(2).setComponentByType(
        pdu.tagSet, pdu, verifyConstraints=False, matchTags=False, matchConstraints=False)
    return scoped, pdu


def bindings(count: int, text: bytes = b"lane") -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    for index in range(count):
        found.append((rfc1902.ObjectName((1, 3, 6, 1, 4, 1, 64000, 1, 2, index)),
                      rfc1902.Counter64(2**63 + index) if index % 3 else
                      rfc1902.OctetString(text * (index % 7))))
    found.append((rfc1902.ObjectName((1, 3, 6, 1, 9)), rfc1905.endOfMibView))
    return found


def ours(found: list[tuple[Any, Any]]) -> bytes:
    encoded = b""
    for name, value in found:
        if value is rfc1905.endOfMibView:
            encoded_value = wire.END_OF_MIB_VIEW
        elif isinstance(value, rfc1902.Counter64):
            encoded_value = wire.value("Counter64", int(value))
        else:
            encoded_value = wire.value("OCTET STRING", value.asOctets())
        encoded += wire.binding(wire.name(tuple(name)), encoded_value)
    return encoded


@pytest.mark.parametrize("count", [0, 1, 3, 10, 200, 3000])
def test_a_spliced_binding_list_is_the_bytes_pyasn1_writes_for_the_whole(count: int) -> None:
    """Across every length form: the bindings alone, the PDU and the scopedPDU each
    crossing 127, 255 and 65,535 octets as ``count`` grows."""
    found = bindings(count)
    whole, _ = response(4711, found)
    empty, _ = response(4711, [])
    assert wire.splice(bytes(encoder.encode(empty)), ours(found)) == bytes(encoder.encode(whole))


def test_what_is_not_a_response_without_bindings_is_not_spliced() -> None:
    full, _ = response(1, bindings(2))
    assert wire.splice(bytes(encoder.encode(full)), b"") is None  # it has bindings
    empty = bytes(encoder.encode(response(1, [])[0]))
    assert wire.splice(empty + b"\x00", b"") is None  # something after it
    assert wire.splice(empty[:-1], b"") is None  # cut short
    request = empty.replace(b"\xa2", b"\xa0", 1)  # a GetRequest-PDU
    assert wire.splice(request, b"") is None
    assert wire.splice(b"", b"") is None


def test_the_usm_encoder_splices_the_pending_response_and_nothing_else() -> None:
    found = bindings(5)
    expected = bytes(encoder.encode(response(99, found)[0]))
    encoding = wire.install()
    other, _ = response(98, [])
    with wire.sending(99, [ours(found)], lambda: pytest.fail("no fallback is needed")):
        assert encoding.encode(other) == bytes(encoder.encode(other))  # another request's
        assert encoding.encode(rfc1902.Integer32(5)) == b"\x02\x01\x05"
        scoped, pdu = response(99, [])
        assert encoding.encode(scoped) == expected
        assert not len(v2c.apiPDU.get_varbinds(pdu))  # the PDU itself was left as it was
        again, _ = response(99, [])
        assert encoding.encode(again) == bytes(encoder.encode(again))  # once only
    scoped, _ = response(99, [])
    assert encoding.encode(scoped) == bytes(encoder.encode(scoped))  # nothing pending


def test_a_response_encoded_another_way_gets_pysnmps_values() -> None:
    """The SNMPv3 message encoded whole (no privacy: the scopedPDU is not encoded on its
    own) carries the bindings as pysnmp values, set in the PDU from the fallback."""
    found = bindings(4)
    message = rfc3412.SNMPv3Message()
    message.setComponentByPosition(0, 3)
    header = message.setComponentByPosition(1).getComponentByPosition(1)
    for position, part in enumerate((7, 65507, b"\x04", 3)):
        header.setComponentByPosition(position, part)
    message.setComponentByPosition(2, b"")
    scoped, pdu = response(12, [])
    message.setComponentByPosition(3).getComponentByPosition(3).setComponentByType(
        scoped.tagSet, scoped, verifyConstraints=False, matchTags=False, matchConstraints=False)
    with wire.sending(12, [ours(found)], lambda: found):
        encoded = wire.install().encode(message)
    assert len(v2c.apiPDU.get_varbinds(pdu)) == len(found)
    assert encoded == bytes(encoder.encode(message))
    assert ours(found) in encoded
