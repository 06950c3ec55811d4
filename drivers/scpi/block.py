"""IEEE 488.2 definite-length arbitrary block data, as instruments send binary results.

A block is ``#``, one digit *d* (1..9), *d* digits giving the byte count *n*,
then *n* bytes of payload: ``#18ABCDEFGH``. A response message of several
queries holds several blocks separated by ``;`` and ends with the terminator.
The payload may contain the terminator byte, so a reply is read until the
counted bytes are in, not until the first terminator.
"""

from __future__ import annotations

from drivers.errors import ProtocolError

MAX_BLOCK_BYTES = 64 * 1024 * 1024
"""Refuse a header that announces more than this: a garbled header, not real data."""


def parse_blocks(data: bytes, count: int, terminator: bytes) -> list[bytes] | None:
    """The payloads of ``count`` blocks in ``data``, or ``None`` while bytes are missing.

    Raises :class:`ProtocolError` when ``data`` cannot become a valid reply:
    no ``#``, an indefinite-length block (``#0``), a bad length, a separator
    other than ``;`` between blocks, or bytes after the last block.
    """
    payloads: list[bytes] = []
    position = 0
    for index in range(count):
        if index:
            if position >= len(data):
                return None
            if data[position:position + 1] != b";":
                raise ProtocolError(f"expected ';' between blocks, got {data[position:][:16]!r}")
            position += 1
        if position + 2 > len(data):
            return None
        if data[position:position + 1] != b"#":
            raise ProtocolError(f"expected block data starting '#', got {data[position:][:16]!r}")
        digits_char = data[position + 1:position + 2]
        if not digits_char.isdigit() or digits_char == b"0":
            raise ProtocolError(f"unsupported block header {data[position:][:16]!r} "
                                "(only definite-length blocks are read)")
        digits = int(digits_char)
        start = position + 2 + digits
        if start > len(data):
            return None
        length_text = data[position + 2:start]
        if not length_text.isdigit():
            raise ProtocolError(f"bad block length {length_text!r}")
        length = int(length_text)
        if length > MAX_BLOCK_BYTES:
            raise ProtocolError(f"block of {length} bytes announced; refusing more than "
                                f"{MAX_BLOCK_BYTES}")
        end = start + length
        if end > len(data):
            return None
        payloads.append(data[start:end])
        position = end
    rest = data[position:]
    if len(rest) < len(terminator) and terminator.startswith(rest):
        return None
    # A serial console may end a reply with CR LF where LF is awaited, or vice versa.
    if rest.strip(b"\r\n") or not rest.endswith(terminator):
        raise ProtocolError(f"unexpected bytes after block data: {rest[:16]!r}")
    return payloads
