"""A fast decode path for the variable bindings of SNMPv3 responses, under pysnmp.

Why: a CPO/CPC collection is thousands of variable bindings, and pysnmp decodes
each through pyasn1's generic BER decoder, which builds several objects per
value: measured, some 85 % of the CPU of a collection. The bindings' syntax is
small and fixed (RFC 3416 section 3, the ``ObjectSyntax`` of RFC 2578 section 7.1.1):
a SEQUENCE of (OBJECT IDENTIFIER, value), the value an INTEGER, OCTET STRING,
OBJECT IDENTIFIER, IpAddress, Counter32, Gauge32/Unsigned32, TimeTicks, Opaque,
Counter64, NULL, or one of the three exceptions noSuchObject, noSuchInstance,
endOfMibView. This module decodes exactly that, with plain integer arithmetic.

How it fits in: pysnmp keeps doing everything else: message processing, USM
authentication, decryption, timeliness, discovery, reports, retries
(RFC 3412, 3414, 3826, 7860). :func:`install` wraps the BER decoder that pysnmp's
USM uses on a decrypted scopedPDU: for a Response-PDU, the variable bindings are
cut out and decoded here (:func:`split_response`), pyasn1 decodes the rest of the
scopedPDU with an empty binding list (a few objects), and the decoded bindings are
kept by request-id until the command generator's callback takes them
(:func:`take`); only responses to requests registered with :func:`want` are
decoded so, so that another pysnmp manager in the process is not affected.
Anything else (a Report-PDU, a message this module does not
understand, an encoding it would read differently from pyasn1, such as a
non-minimal length it does accept or an unsigned type's negative value) goes
through pyasn1 whole, as before: the fast path is taken only when it is sure.

Values come back as :class:`WireValue` (tag, Python value), which answer what the
collector asks of pysnmp's values (``tagSet``, ``int()``, ``asOctets()``, iterating
an OID, ``str()``); the three exceptions come back as pysnmp's own singletons.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from pysnmp.proto import rfc1902, rfc1905

Oid = tuple[int, ...]

RESPONSE_PDU = 0xA2
"""[2] IMPLICIT PDU: Response-PDU (RFC 3416 section 3)."""
SEQUENCE, INTEGER, OCTET_STRING, NULL, OBJECT_IDENTIFIER = 0x30, 0x02, 0x04, 0x05, 0x06
KEPT = 4096
"""Decoded responses kept for callbacks not yet run (a response whose request was
abandoned is never taken; the oldest go first)."""

_UNSIGNED_RANGES = {0x41: 2**32, 0x42: 2**32, 0x43: 2**32, 0x46: 2**64}
_TAG_SETS: dict[int, Any] = {
    INTEGER: rfc1902.Integer32.tagSet,
    OCTET_STRING: rfc1902.OctetString.tagSet,
    OBJECT_IDENTIFIER: rfc1902.ObjectIdentifier.tagSet,
    0x40: rfc1902.IpAddress.tagSet,
    0x41: rfc1902.Counter32.tagSet,
    0x42: rfc1902.Gauge32.tagSet,  # Unsigned32 has the same tag
    0x43: rfc1902.TimeTicks.tagSet,
    0x44: rfc1902.Opaque.tagSet,
    0x46: rfc1902.Counter64.tagSet,
}
_EXCEPTIONS = {0x80: rfc1905.noSuchObject, 0x81: rfc1905.noSuchInstance,
               0x82: rfc1905.endOfMibView}


class Unsure(Exception):
    """The encoding is not one this module is sure to read as pyasn1 would."""


class WireValue:
    """One decoded value: its BER tag's pysnmp ``tagSet`` and its Python value (int,
    bytes, or an OID tuple)."""

    __slots__ = ("tag", "tagSet", "value")

    def __init__(self, tag: int, value: int | bytes | Oid):
        self.tag = tag
        self.tagSet = _TAG_SETS[tag]
        self.value = value

    def __int__(self) -> int:
        if not isinstance(self.value, int):
            raise TypeError(f"not an integer value: {self!r}")
        return self.value

    __index__ = __int__

    def asOctets(self) -> bytes:  # pyasn1's name: the collector calls it
        if not isinstance(self.value, bytes):
            raise TypeError(f"not a string value: {self!r}")
        return self.value

    def __iter__(self) -> Iterator[int]:
        if not isinstance(self.value, tuple):
            raise TypeError(f"not an OID value: {self!r}")
        return iter(self.value)

    def __str__(self) -> str:
        if isinstance(self.value, bytes):
            return self.value.decode("utf-8", errors="replace")
        if isinstance(self.value, tuple):
            return ".".join(map(str, self.value))
        return str(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WireValue):
            return self.tag == other.tag and self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.tag, self.value))

    def __repr__(self) -> str:
        return f"WireValue({self.tag:#04x}, {self.value!r})"


def _length(data: bytes, position: int) -> tuple[int, int]:
    """(content length, position of the content) of the TLV whose length is at
    ``position``: short form, or long form in 1..4 octets, minimal, as pyasn1 reads."""
    first = data[position]
    if first < 0x80:
        return first, position + 1
    count = first & 0x7F
    if not 1 <= count <= 4:
        raise Unsure("indefinite or over-long length")
    end = position + 1 + count
    length = int.from_bytes(data[position + 1:end], "big")
    return length, end


def _header(data: bytes, position: int, tag: int, limit: int) -> tuple[int, int]:
    """Check the tag at ``position``; (start, end) of its content within ``limit``."""
    if position >= limit or data[position] != tag:
        raise Unsure(f"expected tag {tag:#04x}")
    length, start = _length(data, position + 1)
    end = start + length
    if end > limit:
        raise Unsure("content past its container")
    return start, end


_OIDS: dict[bytes, Oid] = {}
OID_CACHE = 65536
"""Encoded OIDs remembered: a switch's instance OIDs are the same at every scrape, and
the same on every switch of a model."""


def _oid(content: bytes) -> Oid:
    known = _OIDS.get(content)
    if known is not None:
        return known
    decoded = _decode_oid(content)
    if len(_OIDS) >= OID_CACHE:
        _OIDS.clear()
    _OIDS[bytes(content)] = decoded
    return decoded


def _decode_oid(content: bytes) -> Oid:
    if not content or content[-1] & 0x80:
        raise Unsure("empty or unterminated OID")
    arcs: list[int] = []
    number = 0
    for octet in content:
        if number == 0 and octet == 0x80:
            raise Unsure("non-minimal OID arc")
        number = (number << 7) | (octet & 0x7F)
        if not octet & 0x80:
            arcs.append(number)
            number = 0
    first = arcs[0]
    head = (0, first) if first < 40 else (1, first - 40) if first < 80 else (2, first - 80)
    return (*head, *arcs[1:])


def _value(tag: int, content: bytes) -> Any:
    if tag in _EXCEPTIONS:
        if content:
            raise Unsure("an exception with content")
        return _EXCEPTIONS[tag]
    if tag == NULL:
        raise Unsure("NULL value in a response")
    if tag in (OCTET_STRING, 0x40, 0x44):
        if tag == 0x40 and len(content) != 4:
            raise Unsure("IpAddress of other than 4 octets")
        return WireValue(tag, bytes(content))
    if tag == OBJECT_IDENTIFIER:
        return WireValue(tag, _oid(content))
    if tag == INTEGER or tag in _UNSIGNED_RANGES:
        if not content or (len(content) > 1 and (
                (content[0] == 0 and not content[1] & 0x80)
                or (content[0] == 0xFF and content[1] & 0x80))):
            raise Unsure("empty or non-minimal integer")
        number = int.from_bytes(content, "big", signed=True)
        if tag == INTEGER:
            if not -2**31 <= number < 2**31:
                raise Unsure("INTEGER outside Integer32")
        elif not 0 <= number < _UNSIGNED_RANGES[tag]:
            raise Unsure("unsigned value outside its type's range")
        return WireValue(tag, number)
    raise Unsure(f"unknown value tag {tag:#04x}")


def decode_varbinds(data: bytes, start: int = 0, end: int | None = None
                    ) -> list[tuple[Oid, Any]]:
    """The VarBindList in ``data[start:end]`` (its content: the bindings one after the
    other). Raises :class:`Unsure` for anything it does not decode with certainty."""
    limit = len(data) if end is None else end
    bindings: list[tuple[Oid, Any]] = []
    position = start
    try:
        while position < limit:
            inner, after = _header(data, position, SEQUENCE, limit)
            name_start, name_end = _header(data, inner, OBJECT_IDENTIFIER, after)
            name = _oid(data[name_start:name_end])
            if name_end >= after:
                raise Unsure("a binding without a value")
            tag = data[name_end]
            value_start, value_end = _header(data, name_end, tag, after)
            if value_end != after:
                raise Unsure("trailing octets in a binding")
            bindings.append((name, _value(tag, data[value_start:value_end])))
            position = after
    except IndexError:
        raise Unsure("truncated") from None
    return bindings


def split_response(scoped_pdu: bytes) -> tuple[bytes, int, list[tuple[Oid, Any]]] | None:
    """A decrypted scopedPDU (RFC 3412 section 6) holding a Response-PDU, split: the
    same scopedPDU with an empty binding list, the request-id, the decoded bindings.
    ``None`` for any other scopedPDU, or one this module is not sure of."""
    try:
        outer_start, outer_end = _header(scoped_pdu, 0, SEQUENCE, len(scoped_pdu))
        if outer_end != len(scoped_pdu):
            return None
        engine_start, engine_end = _header(scoped_pdu, outer_start, OCTET_STRING, outer_end)
        _, name_end = _header(scoped_pdu, engine_end, OCTET_STRING, outer_end)
        pdu_start, pdu_end = _header(scoped_pdu, name_end, RESPONSE_PDU, outer_end)
        if pdu_end != outer_end:
            return None
        id_start, id_end = _header(scoped_pdu, pdu_start, INTEGER, pdu_end)
        request_id = int.from_bytes(scoped_pdu[id_start:id_end], "big", signed=True)
        _, status_end = _header(scoped_pdu, id_end, INTEGER, pdu_end)
        _, index_end = _header(scoped_pdu, status_end, INTEGER, pdu_end)
        list_start, list_end = _header(scoped_pdu, index_end, SEQUENCE, pdu_end)
        if list_end != pdu_end:
            return None
        bindings = decode_varbinds(scoped_pdu, list_start, list_end)
    except (Unsure, IndexError):
        return None
    del engine_start
    head = scoped_pdu[pdu_start:index_end] + b"\x30\x00"  # the PDU's fields, no bindings
    pdu = bytes([RESPONSE_PDU]) + _encode_length(len(head)) + head
    body = scoped_pdu[outer_start:name_end] + pdu
    return bytes([SEQUENCE]) + _encode_length(len(body)) + body, request_id, bindings


def _encode_length(length: int) -> bytes:
    if length < 0x80:
        return bytes([length])
    octets = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(octets)]) + octets


# ---- installation under pysnmp ------------------------------------------------------------

ENABLED = os.environ.get("MSOCTL_SNMP_FAST_DECODE", "1") != "0"
"""Off (``MSOCTL_SNMP_FAST_DECODE=0``): every response through pyasn1 alone, as before;
tests and bench/exporter_fleet.py compare both paths."""
_wanted: OrderedDict[int, None] = OrderedDict()
_decoded: OrderedDict[int, list[tuple[Oid, Any]]] = OrderedDict()


def want(request_id: int) -> None:
    """Decode the response to ``request_id`` the fast way: only requests whose sender
    calls :func:`take` for their answer (another pysnmp manager in the same process
    gets its responses from pyasn1 whole, as before)."""
    with _lock:
        _wanted[request_id] = None
        while len(_wanted) > KEPT:
            _wanted.popitem(last=False)
_lock = threading.Lock()
_installed = False


def take(request_id: int) -> list[tuple[Oid, Any]] | None:
    """The bindings decoded here for the response with ``request_id`` (once), or
    ``None`` when this module did not decode that response."""
    with _lock:
        _wanted.pop(request_id, None)
        return _decoded.pop(request_id, None)


class _Decoder:
    """pyasn1's BER decoder, but scopedPDUs of responses go the fast way."""

    def __init__(self, decoder: Any):
        self._decoder = decoder
        from pysnmp.proto.mpmod.rfc3412 import ScopedPDU

        self._scoped_pdu = ScopedPDU

    def decode(self, substrate: Any, *args: Any, **options: Any) -> Any:
        spec = options.get("asn1Spec")
        if ENABLED and isinstance(spec, self._scoped_pdu) and not args and isinstance(
                substrate, (bytes, bytearray)):
            split = split_response(bytes(substrate))
            if split is not None:
                stripped, request_id, bindings = split
                with _lock:
                    if request_id not in _wanted:
                        return self._decoder.decode(substrate, *args, **options)
                    _decoded[request_id] = bindings
                    while len(_decoded) > KEPT:
                        _decoded.popitem(last=False)
                return self._decoder.decode(stripped, **options)
        return self._decoder.decode(substrate, *args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._decoder, name)


def install() -> None:
    """Put the fast path under pysnmp's USM (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from pysnmp.proto.secmod.rfc3414 import service

        service.decoder = _Decoder(service.decoder)
        _installed = True
