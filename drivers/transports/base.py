"""The byte-stream transport interface that line-based sessions (SCPI) run over."""

from __future__ import annotations

from typing import Protocol


class StreamTransport(Protocol):
    """A bidirectional byte stream with one timeout.

    Every method raises :class:`drivers.errors.DeviceUnreachable` when the
    link is lost or cannot be opened and :class:`drivers.errors.DeviceTimeout`
    when ``timeout_seconds`` passes without the wanted bytes.
    """

    timeout_seconds: float

    @property
    def address(self) -> str:
        """Where it connects, for messages."""

    def open(self) -> None: ...

    def close(self) -> None: ...

    def write(self, data: bytes) -> None: ...

    def read_until(self, terminator: bytes) -> bytes:
        """Bytes up to and including ``terminator``."""

    def discard_input(self) -> None:
        """Drop whatever has arrived and not been read."""
