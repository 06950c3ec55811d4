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

Data = bytes | bytearray


class BlockScanner:
    """Finds the blocks of a reply as it grows, without rescanning what it has seen."""

    def __init__(self, count: int):
        self.count = count
        self.spans: list[tuple[int, int]] = []  # payload start and end of each block found
        self.position = 0  # where the next block (or the terminator) begins

    @property
    def complete(self) -> bool:
        return len(self.spans) == self.count

    def scan(self, data: Data) -> int:
        """Read on in ``data``; the length the reply has at least, without its terminator.

        Raises :class:`ProtocolError` for what can never become a valid reply.
        """
        while len(self.spans) < self.count:
            position = self.position
            if self.spans:
                if position >= len(data):
                    return position + 1
                if data[position] != 0x3B:  # ";"
                    raise ProtocolError(f"expected ';' between blocks, got "
                                        f"{bytes(data[position:position + 16])!r}")
                position += 1
            if position + 2 > len(data):
                return position + 2
            if data[position] != 0x23:  # "#"
                raise ProtocolError("expected block data starting '#', got "
                                    f"{bytes(data[position:position + 16])!r}")
            digits_char = bytes(data[position + 1:position + 2])
            if not digits_char.isdigit() or digits_char == b"0":
                raise ProtocolError(
                    f"unsupported block header {bytes(data[position:position + 16])!r}"
                    " (only definite-length blocks are read)")
            start = position + 2 + int(digits_char)
            if start > len(data):
                return start
            length_text = bytes(data[position + 2:start])
            if not length_text.isdigit():
                raise ProtocolError(f"bad block length {length_text!r}")
            length = int(length_text)
            if length > MAX_BLOCK_BYTES:
                raise ProtocolError(f"block of {length} bytes announced; refusing more than "
                                    f"{MAX_BLOCK_BYTES}")
            self.spans.append((start, start + length))
            self.position = start + length
        return self.position

    def payloads(self, data: Data, terminator: bytes) -> list[bytes] | None:
        """The payloads once ``data`` holds the whole reply; ``None`` before."""
        length = self.scan(data)
        if not self.complete or length > len(data):
            return None
        rest = bytes(data[length:])
        if len(rest) < len(terminator) and terminator.startswith(rest):
            return None
        # A serial console may end a reply with CR LF where LF is awaited, or vice versa.
        if rest.strip(b"\r\n") or not rest.endswith(terminator):
            raise ProtocolError(f"unexpected bytes after block data: {rest[:16]!r}")
        return [bytes(data[a:b]) for a, b in self.spans]


def parse_blocks(data: Data, count: int, terminator: bytes) -> list[bytes] | None:
    """The payloads of ``count`` blocks in ``data``, or ``None`` while bytes are missing.

    Raises :class:`ProtocolError` when ``data`` cannot become a valid reply:
    no ``#``, an indefinite-length block (``#0``), a bad length, a separator
    other than ``;`` between blocks, or bytes after the last block.
    """
    return BlockScanner(count).payloads(data, terminator)
