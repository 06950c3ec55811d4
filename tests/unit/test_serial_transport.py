"""The serial transport over a ``socket://`` URL (a serial server, the amplifier bridge's
emulator): a closed line is closed at the far end at once, and opens again."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from serial.urlhandler import protocol_socket

from drivers.transports.serial import SerialTransport


@pytest.fixture
def echo_server() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback server answering each line with itself; what each connection sent
    until its end (EOF) is appended to the list."""
    listener = socket.create_server(("127.0.0.1", 0))
    ended: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                received = b""
                while chunk := connection.recv(4096):
                    received += chunk
                    connection.sendall(chunk)
                ended.append(received)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], ended
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
    listener.close()
    thread.join(timeout=5)


def test_a_closed_line_ends_at_the_far_end_without_pyserials_reconnect_pause(
        echo_server: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch) -> None:
    port, ended = echo_server

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"the close slept {seconds} s")

    monkeypatch.setattr(protocol_socket.time, "sleep", no_sleep)
    line = SerialTransport(f"socket://127.0.0.1:{port}", timeout_seconds=5.0)
    for attempt in (b"one\n", b"two\n"):  # the second use opens the line again
        line.open()
        line.write(attempt)
        assert line.read_until(b"\n") == attempt
        line.close()
        line.close()  # a second close is a no-op
        for _ in range(500):
            if len(ended) == (1 if attempt == b"one\n" else 2):
                break
            threading.Event().wait(0.01)
        assert ended[-1] == attempt
