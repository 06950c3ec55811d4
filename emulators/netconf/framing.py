"""NETCONF message framing over SSH (RFC 6242).

Two framings exist. NETCONF 1.0 ends each message with the end-of-message
marker ``]]>]]>``; NETCONF 1.1 sends a message as chunks, each
``\\n#<size>\\n<data>`` with ``size`` in bytes (1..4294967295, no leading
zero), and ends it with ``\\n##\\n``. Both peers start in 1.0 framing (the
hellos always are); they change to chunked framing only when both hellos list
``urn:ietf:params:netconf:base:1.1``.

A :class:`Decoder` is fed bytes as they arrive and hands out complete
messages one at a time, so that the caller can switch framing right after the
hello, before the bytes that follow it are decoded. A malformed chunk header
raises :class:`FramingError`: the stream cannot be resynchronised, so the
session must end.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

BASE_1_0 = "urn:ietf:params:netconf:base:1.0"
BASE_1_1 = "urn:ietf:params:netconf:base:1.1"

END_OF_MESSAGE = b"]]>]]>"
END_OF_CHUNKS = b"\n##\n"
MAX_CHUNK_BYTES = 4294967295
MAX_CHUNK_SIZE_DIGITS = len(str(MAX_CHUNK_BYTES))
# What one message may grow to before the session is given up; a guard against
# a peer that never ends its message, far above any configuration of a switch.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class Framing(Enum):
    END_OF_MESSAGE = "1.0"
    CHUNKED = "1.1"


class FramingError(ValueError):
    """The byte stream breaks the framing rules; the session cannot go on."""


def negotiate(local_capabilities: Iterable[str], peer_capabilities: Iterable[str]) -> Framing:
    """Chunked framing when both hellos list base:1.1, end-of-message framing otherwise."""
    both = set(local_capabilities) & set(peer_capabilities)
    return Framing.CHUNKED if BASE_1_1 in both else Framing.END_OF_MESSAGE


def encode(message: bytes, framing: Framing, *, max_chunk_bytes: int = MAX_CHUNK_BYTES) -> bytes:
    """One message framed for the wire.

    In chunked framing the message is cut into chunks of at most
    ``max_chunk_bytes`` bytes (1..4294967295). An empty message cannot be sent
    in chunked framing (a message has at least one chunk of at least one byte),
    and no message may contain ``]]>]]>`` in end-of-message framing: both raise
    ``ValueError``.
    """
    if framing is Framing.END_OF_MESSAGE:
        if END_OF_MESSAGE in message:
            raise ValueError("a message in NETCONF 1.0 framing cannot contain ]]>]]>")
        return message + END_OF_MESSAGE
    if not 1 <= max_chunk_bytes <= MAX_CHUNK_BYTES:
        raise ValueError(f"chunk size must be 1..{MAX_CHUNK_BYTES} bytes, not {max_chunk_bytes}")
    if not message:
        raise ValueError("an empty message cannot be sent in chunked framing")
    parts: list[bytes] = []
    for start in range(0, len(message), max_chunk_bytes):
        chunk = message[start:start + max_chunk_bytes]
        parts.append(b"\n#%d\n" % len(chunk))
        parts.append(chunk)
    parts.append(END_OF_CHUNKS)
    return b"".join(parts)


class Decoder:
    """Incremental decoder of one direction of a NETCONF session.

    ``feed`` appends received bytes; ``next_message`` returns the next complete
    message or ``None`` until more bytes arrive. ``framing`` may be changed
    between messages (after the hello). Raises :class:`FramingError` on a
    malformed chunk header or a message longer than ``max_message_bytes``.
    """

    def __init__(self, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES):
        self.framing = Framing.END_OF_MESSAGE
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()
        self._searched = 0  # end-of-message framing: where the marker search resumes
        self._message = bytearray()  # chunked framing: the chunks of this message so far
        self._chunk_left = 0  # chunked framing: data bytes of the current chunk still to come
        self._failed: FramingError | None = None

    def feed(self, data: bytes) -> None:
        self._buffer.extend(data)

    def messages(self) -> list[bytes]:
        """Every complete message buffered now, in the current framing."""
        found: list[bytes] = []
        while (message := self.next_message()) is not None:
            found.append(message)
        return found

    def next_message(self) -> bytes | None:
        if self._failed is not None:
            raise self._failed
        try:
            if self.framing is Framing.END_OF_MESSAGE:
                return self._next_end_of_message()
            return self._next_chunked()
        except FramingError as error:
            self._failed = error
            raise

    def _next_end_of_message(self) -> bytes | None:
        end = self._buffer.find(END_OF_MESSAGE, self._searched)
        if end < 0:
            # The marker may already have begun at the end of the buffer.
            self._searched = max(0, len(self._buffer) - len(END_OF_MESSAGE) + 1)
            if self._searched > self.max_message_bytes:
                raise FramingError(
                    f"no end of message in the first {self.max_message_bytes} bytes")
            return None
        message = bytes(self._buffer[:end])
        del self._buffer[:end + len(END_OF_MESSAGE)]
        self._searched = 0
        return message

    def _next_chunked(self) -> bytes | None:
        while True:
            if self._chunk_left:
                taken = self._buffer[:self._chunk_left]
                self._message.extend(taken)
                del self._buffer[:len(taken)]
                self._chunk_left -= len(taken)
                if self._chunk_left:
                    return None
            header = self._chunk_header()
            if header is None:
                return None
            if header == 0:  # end of chunks
                message = bytes(self._message)
                self._message.clear()
                return message
            if len(self._message) + header > self.max_message_bytes:
                raise FramingError(f"message longer than {self.max_message_bytes} bytes")
            self._chunk_left = header

    def _chunk_header(self) -> int | None:
        """The size in the chunk header at the buffer's start (taken out of the
        buffer), 0 for an end-of-chunks marker, ``None`` when incomplete."""
        buffer = self._buffer
        for index, expected in enumerate(b"\n#"):
            if len(buffer) <= index:
                return None
            if buffer[index] != expected:
                raise FramingError(f"chunk header expected, got {bytes(buffer[:16])!r}")
        if len(buffer) < 3:
            return None
        if buffer[2] == ord("#"):
            if len(buffer) < 4:
                return None
            if buffer[3] != ord("\n"):
                raise FramingError(f"malformed end of chunks {bytes(buffer[:4])!r}")
            if not self._message:
                raise FramingError("end of chunks before any chunk")
            del buffer[:4]
            return 0
        digits = bytearray()
        for byte in buffer[2:2 + MAX_CHUNK_SIZE_DIGITS + 1]:
            if byte == ord("\n"):
                break
            if not ord("0") <= byte <= ord("9") or (not digits and byte == ord("0")):
                raise FramingError(f"malformed chunk size in {bytes(buffer[:16])!r}")
            digits.append(byte)
        else:
            if len(digits) > MAX_CHUNK_SIZE_DIGITS:
                raise FramingError(f"chunk size too long in {bytes(buffer[:16])!r}")
            return None
        if not digits:
            raise FramingError("empty chunk size")
        size = int(digits)
        if size > MAX_CHUNK_BYTES:
            raise FramingError(f"chunk size {size} above {MAX_CHUNK_BYTES}")
        del buffer[:2 + len(digits) + 1]
        return size
