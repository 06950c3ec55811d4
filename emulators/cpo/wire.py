"""The agent's variable bindings in BER, written directly, and spliced into pysnmp's responses.

Why: a GETBULK response of a 64-port switch is thousands of variable bindings, and
pysnmp builds a pyasn1 object for each (a VarBind, its name, its value) and encodes
them through pyasn1's generic BER encoder: measured, some two thirds of the agent's
CPU per walk, four times what the manager spends decoding the same bindings.

What is written here is the whole of what a binding can hold in this agent
(RFC 3416 section 3; the ObjectSyntax of RFC 2578 section 7.1.1), by X.690's basic
encoding rules: a SEQUENCE of an OBJECT IDENTIFIER and one of INTEGER (Integer32,
enumerations), OCTET STRING (text, octets, BITS), OBJECT IDENTIFIER, Counter32
([APPLICATION 1]), Gauge32 and Unsigned32 ([APPLICATION 2]), TimeTicks
([APPLICATION 3]) and Counter64 ([APPLICATION 6]), or the exception endOfMibView
([2] IMPLICIT NULL). Lengths are definite and minimal, as pyasn1 writes them, so
that the bytes on the wire are the ones pysnmp would have sent.

How it fits in: pysnmp keeps doing everything else (message processing, USM
authentication and privacy, the size check). :func:`install` wraps the BER encoder
of pysnmp's USM. A responder that has its bindings encoded calls :func:`sending`
around pysnmp's ``send_varbinds`` with an empty binding list: when USM encodes the
scopedPDU of that response (authPriv, where the scopedPDU is encoded on its own to
be encrypted), the bindings are put in place of the empty list
(:func:`splice`). Should the response be encoded any other way, or pyasn1's output
not have the expected shape, the bindings are set in the PDU as pysnmp values (the
responder's ``fallback``) and pyasn1 encodes the message whole, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pyasn1.error import PyAsn1Error
from pysnmp.proto import rfc1905
from pysnmp.proto.api import v2c

Oid = tuple[int, ...]

SEQUENCE, INTEGER, OCTET_STRING, OBJECT_IDENTIFIER = 0x30, 0x02, 0x04, 0x06
RESPONSE_PDU = 0xA2  # [2] IMPLICIT PDU (RFC 3416 section 3)
END_OF_MIB_VIEW = b"\x82\x00"  # [2] IMPLICIT NULL
EMPTY_BINDINGS = b"\x30\x00"

TAGS: dict[str, int] = {
    "Integer32": INTEGER,
    "Counter32": 0x41,
    "Gauge32": 0x42,
    "Unsigned32": 0x42,  # the same tag as Gauge32 (RFC 2578 section 7.1.11)
    "TimeTicks": 0x43,
    "Counter64": 0x46,
    "OCTET STRING": OCTET_STRING,
    "BITS": OCTET_STRING,  # BITS is an OCTET STRING on the wire (RFC 2578 section 7.1.4)
    "OBJECT IDENTIFIER": OBJECT_IDENTIFIER,
}
"""The BER tag of each base type the agent serves."""

_UNSIGNED = frozenset({0x41, 0x42, 0x43, 0x46})
_LIMITS = {0x41: 2**32, 0x42: 2**32, 0x43: 2**32, 0x46: 2**64}


def length(size: int) -> bytes:
    """A definite length: one octet below 128, else 0x80 + the count of octets that follow."""
    if size < 0x80:
        return bytes((size,))
    octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(octets),)) + octets


def tlv(tag: int, content: bytes) -> bytes:
    return bytes((tag,)) + length(len(content)) + content


def integer_content(number: int) -> bytes:
    """Two's complement in the fewest octets (X.690 8.3)."""
    return number.to_bytes(number.bit_length() // 8 + 1, "big", signed=True)


def oid_content(arcs: Sequence[int]) -> bytes:
    """X.690 8.19: the first two arcs in one subidentifier, each in base 128."""
    if len(arcs) < 2 or arcs[0] > 2 or (arcs[0] < 2 and arcs[1] > 39) \
            or any(arc < 0 for arc in arcs):
        raise ValueError(f"not an OBJECT IDENTIFIER BER can carry: {tuple(arcs)}")
    content = bytearray()
    for arc in (arcs[0] * 40 + arcs[1], *arcs[2:]):
        septets = [arc & 0x7F]
        arc >>= 7
        while arc:
            septets.append(0x80 | (arc & 0x7F))
            arc >>= 7
        content.extend(reversed(septets))
    return bytes(content)


def name(arcs: Sequence[int]) -> bytes:
    """The OBJECT IDENTIFIER TLV of a binding's name."""
    return tlv(OBJECT_IDENTIFIER, oid_content(arcs))


def value(base_type: str, raw: int | bytes | Oid) -> bytes:
    """The TLV of ``raw`` as ``base_type`` (a key of :data:`TAGS`); ValueError when the
    value does not fit the type."""
    tag = TAGS[base_type]
    if tag == OCTET_STRING:
        if not isinstance(raw, bytes):
            raise ValueError(f"{base_type} takes octets, not {raw!r}")
        return tlv(tag, raw)
    if tag == OBJECT_IDENTIFIER:
        if not isinstance(raw, tuple):
            raise ValueError(f"{base_type} takes arcs, not {raw!r}")
        return tlv(tag, oid_content(raw))
    if not isinstance(raw, int):
        raise ValueError(f"{base_type} takes an integer, not {raw!r}")
    if tag in _UNSIGNED and not 0 <= raw < _LIMITS[tag]:
        raise ValueError(f"{base_type} out of range: {raw}")
    if tag == INTEGER and not -(2**31) <= raw < 2**31:
        raise ValueError(f"Integer32 out of range: {raw}")
    return tlv(tag, integer_content(raw))


def binding(encoded_name: bytes, encoded_value: bytes) -> bytes:
    """One VarBind: SEQUENCE { name, value }."""
    return tlv(SEQUENCE, encoded_name + encoded_value)


def _read_header(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, where the content starts, where it ends) of the TLV at ``at``; ValueError
    when it is not a definite-length TLV within ``data``."""
    if at + 2 > len(data):
        raise ValueError("truncated")
    tag, first = data[at], data[at + 1]
    at += 2
    if first < 0x80:
        size = first
    else:
        count = first & 0x7F
        if count == 0 or at + count > len(data):
            raise ValueError("indefinite or truncated length")
        size = int.from_bytes(data[at:at + count], "big")
        at += count
    if at + size > len(data):
        raise ValueError("content runs past the end")
    return tag, at, at + size


def splice(scoped_pdu: bytes, bindings: bytes) -> bytes | None:
    """``scoped_pdu`` (a ScopedPDU whose Response-PDU has no binding) with the
    concatenated VarBinds ``bindings`` as its binding list; None when it is not that
    shape (RFC 3412 section 6: SEQUENCE { contextEngineID, contextName, PDU }; RFC 3416
    section 3: the PDU's request-id, error-status, error-index, then the bindings)."""
    try:
        tag, start, end = _read_header(scoped_pdu, 0)
        if tag != SEQUENCE or end != len(scoped_pdu):
            return None
        at = start
        for _ in range(2):  # contextEngineID, contextName
            tag, _, at = _read_header(scoped_pdu, at)
            if tag != OCTET_STRING:
                return None
        context = scoped_pdu[start:at]
        tag, pdu_start, pdu_end = _read_header(scoped_pdu, at)
        if tag != RESPONSE_PDU or pdu_end != end:
            return None
        at = pdu_start
        for _ in range(3):  # request-id, error-status, error-index
            tag, _, at = _read_header(scoped_pdu, at)
            if tag != INTEGER:
                return None
        if scoped_pdu[at:pdu_end] != EMPTY_BINDINGS:
            return None
    except ValueError:
        return None
    header = scoped_pdu[pdu_start:at]
    return tlv(SEQUENCE, context + tlv(RESPONSE_PDU, header + tlv(SEQUENCE, bindings)))


class _Pending:
    def __init__(self, request_id: int, bindings: bytes,
                 fallback: Callable[[], Sequence[tuple[Any, Any]]]):
        self.request_id = request_id
        self.bindings = bindings
        self.fallback = fallback


class _SplicingEncoder:
    """pyasn1's BER encoder, with the pending response's bindings put in place."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.local = threading.local()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)

    def encode(self, value: Any, **options: Any) -> bytes:
        pending: _Pending | None = getattr(self.local, "pending", None)
        found = None if pending is None else _response_pdu(value)
        if pending is None or found is None \
                or int(v2c.apiPDU.get_request_id(found[1])) != pending.request_id:
            return bytes(self.inner.encode(value, **options))
        scoped, pdu = found
        self.local.pending = None
        if scoped and not len(v2c.apiPDU.get_varbinds(pdu)):
            spliced = splice(bytes(self.inner.encode(value, **options)), pending.bindings)
            if spliced is not None:
                return spliced
        v2c.apiPDU.set_varbinds(pdu, pending.fallback())
        return bytes(self.inner.encode(value, **options))


def _response_pdu(value: Any) -> tuple[bool, Any] | None:
    """(whether ``value`` is the ScopedPDU itself, the Response-PDU) when ``value`` is a
    ScopedPDU or a plaintext SNMPv3 message carrying a Response-PDU; None otherwise."""
    try:
        names = value.componentType.getNameByPosition
        if names(2) == "data":  # ScopedPDU: contextEngineId, contextName, data
            pdu = value.getComponentByPosition(2).getComponent()
            scoped = True
        elif names(3) == "msgData":  # SNMPv3Message: plaintext scopedPDU
            data = value.getComponentByPosition(3).getComponent()
            pdu = data.getComponentByPosition(2).getComponent()
            scoped = False
        else:
            return None
    except (AttributeError, IndexError, KeyError, PyAsn1Error):  # anything else it encodes
        return None
    if pdu.tagSet != rfc1905.ResponsePDU.tagSet:
        return None
    return scoped, pdu


_installed: _SplicingEncoder | None = None
_install_lock = threading.Lock()


def install() -> _SplicingEncoder:
    """Wrap the BER encoder of pysnmp's USM, once per process."""
    global _installed
    with _install_lock:
        if _installed is None:
            from pysnmp.proto.secmod.rfc3414 import service
            _installed = _SplicingEncoder(service.encoder)
            service.encoder = _installed
        return _installed


@contextmanager
def sending(request_id: int, bindings: Sequence[bytes],
            fallback: Callable[[], Sequence[tuple[Any, Any]]]) -> Iterator[None]:
    """While pysnmp sends the response to ``request_id`` with an empty binding list,
    have its encoded scopedPDU carry ``bindings`` (or, another way, ``fallback()``'s
    pysnmp bindings set in the PDU)."""
    encoder = install()
    encoder.local.pending = _Pending(request_id, b"".join(bindings), fallback)
    try:
        yield
    finally:
        encoder.local.pending = None
