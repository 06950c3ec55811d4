"""HTTP/1.1 for the emulators' small servers (the lab's control endpoint, the GPU servers'
exporters): one request per connection, read with limits, answered and closed; and the
TCP reset every emulated server's ``reset`` fault sends.

Not a general server: enough of RFC 9112 for a client that sends one request with its
headers (and, for a POST, a ``Content-Length`` body) and reads one answer.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from http import HTTPStatus

from emulators.text import digits

MAX_HEADER_BYTES = 16 * 1024
MAX_BODY_BYTES = 64 * 1024


class HttpError(Exception):
    """A request answered with ``status`` and ``message`` instead of what it asked."""

    def __init__(self, status: HTTPStatus, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
    """(method, target, headers with lower-case names, body) of one request; HttpError for
    one that is not HTTP, too large, or a POST without a length. ``reader``'s limit is the
    largest head taken (start the server with ``limit=MAX_HEADER_BYTES``)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise HttpError(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                        "request headers too large") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise HttpError(HTTPStatus.BAD_REQUEST, "not an HTTP request")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(HTTPStatus.BAD_REQUEST, f"bad header line {line!r}")
            headers[name.strip().lower()] = value.strip()
    body = b""
    if parts[0] == "POST":
        length_text = headers.get("content-length")
        if length_text is None or not digits(length_text):
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise HttpError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                            f"request body over {MAX_BODY_BYTES} bytes")
        body = await reader.readexactly(length)
    return parts[0], parts[1], headers, body


def response_head(status: HTTPStatus, content_type: str, length: int,
                  extra: dict[str, str] | None = None) -> bytes:
    """A response's status line and headers, ``Connection: close`` (one request each)."""
    lines = [f"HTTP/1.1 {status.value} {status.phrase}", f"Content-Type: {content_type}",
             f"Content-Length: {length}", *(f"{k}: {v}" for k, v in (extra or {}).items()),
             "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def reset_connection(writer: asyncio.StreamWriter) -> None:
    """Close with RST, as a crashed or powered-off peer's kernel would."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()
