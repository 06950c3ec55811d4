"""The exporter's HTTP(S) server: ``/probe``, ``/jobs``, ``/metrics``, ``/-/healthy``, ``/``.

A thread per request (:class:`http.server.ThreadingHTTPServer`), so a slow
probe never holds up another. With TLS the handshake also happens in the
request's thread, bounded in time, so a client that stalls it holds up nobody.
Closing the server waits for the requests in flight (each bounded by its
budget): a SIGTERM ends the exporter gracefully.

As a server on a management network must, it bounds what a client can hold: the
request line and headers must arrive within :data:`HEADER_TIMEOUT_SECONDS` in all (a
client sending a byte now and then is cut off then, not at each byte's wait), and at
most :data:`MAX_CONNECTIONS` connections are served at once; one more is answered 503
and closed at once, without a thread.
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from drivers.errors import ValidationError
from drivers.yamlfile import YamlFileError, open_regular
from msoctl import __version__
from msoctl.exporter.probe import MODULES, TIMEOUT_HEADER, Prober, ProbeRefused

if TYPE_CHECKING:
    from msoctl.exporter.jobs import JobsReader

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_SECONDS = 5.0
HEADER_TIMEOUT_SECONDS = 10.0
"""How long a request's line and headers may take to arrive, in all."""
RESPONSE_TIMEOUT_SECONDS = 60.0
"""How long a response's write may wait for a client that does not read it."""
TLS_FILE_BYTES = 1 * 2**20
"""The largest certificate chain or key file read (a chain is a few kilobytes)."""
MAX_CONNECTIONS = 512
"""Connections served at once: well above a fleet's concurrent scrapes."""
_BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
         b"Content-Length: 38\r\nConnection: close\r\n\r\n"
         b"too many connections to this exporter\n")
TEXT = "text/plain; charset=utf-8"
EXPOSITION = "text/plain; version=0.0.4; charset=utf-8"
"""The text format ``generate_latest`` writes (our names are all classic names)."""
INDEX = """msoctl exporter {version}

/probe?target=NAME           metrics of inventory device NAME (its kind's collector)
/probe?target=NAME&module=M  the same with module M ({modules})
/jobs                        the kept jobs' state (msoctl job status), for PromQL joins
/metrics                     the exporter's own metrics
/-/healthy                   200 while the exporter runs

inventory: {inventory}
"""


def parse_listen(listen: str) -> tuple[str, int]:
    """``ADDR:PORT``, ``[V6ADDR]:PORT`` or ``:PORT`` (every IPv4 address)."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not re.fullmatch(r"[0-9]{1,5}", port_text) or not 0 <= int(port_text) <= 65535:
        raise ValidationError(f"--listen {listen!r}: write ADDR:PORT, [V6ADDR]:PORT or :PORT")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host or "0.0.0.0", int(port_text)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context (TLS 1.2 and later) with this certificate chain and key: each a
    regular file of at most TLS_FILE_BYTES (a FIFO would hold the start for ever)."""
    for path in (cert, key):
        try:
            open_regular(path, max_bytes=TLS_FILE_BYTES).close()
        except YamlFileError as error:
            raise ValidationError(f"TLS {'certificate' if path == cert else 'key'}: "
                                  f"{error}") from None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile=str(cert), keyfile=str(key))
    except (OSError, ssl.SSLError) as error:
        raise ValidationError(f"cannot use TLS certificate {cert} with key {key}: "
                              f"{getattr(error, 'strerror', None) or error}") from None
    return context


class _Deadlines:
    """One thread that cuts off the connections whose headers are late: it closes their
    reading side, and the handler's read ends at once (a thread per connection for this
    would double the threads a crowd of slow clients holds)."""

    def __init__(self) -> None:
        self._due: dict[socket.socket, float] = {}
        self._cut: set[socket.socket] = set()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, connection: socket.socket, seconds: float) -> None:
        with self._changed:
            self._due[connection] = time.monotonic() + seconds
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="header-deadlines",
                                                daemon=True)
                self._thread.start()
            self._changed.notify()

    def done(self, connection: socket.socket) -> bool:
        """Stop watching ``connection``; whether it was cut off (its headers came late:
        what was read of them is not a request to answer)."""
        with self._changed:
            self._due.pop(connection, None)
            if connection in self._cut:
                self._cut.discard(connection)
                return True
            return False

    def _run(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                late = [c for c, due in self._due.items() if due <= now]
                for connection in late:
                    del self._due[connection]
                    self._cut.add(connection)
                wait = min(self._due.values(), default=now + 60.0) - now
            for connection in late:
                try:
                    connection.shutdown(socket.SHUT_RD)
                except OSError:
                    pass
            with self._changed:
                if not late:
                    self._changed.wait(max(0.01, wait))


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = False
    # socketserver's default backlog is 5: a burst of scrapes (a Prometheus server
    # starting its scrape loops, or hundreds of clients at once) would overflow it, and
    # a refused SYN is retried by the client's kernel only after a second or more.
    request_queue_size = 1024
    block_on_close = True  # server_close() waits for the requests in flight

    def __init__(self, address: tuple[str, int], prober: Prober,
                 tls: ssl.SSLContext | None = None, *,
                 jobs: JobsReader | None = None,
                 header_timeout_seconds: float = HEADER_TIMEOUT_SECONDS,
                 max_connections: int = MAX_CONNECTIONS):
        """``jobs``: what answers ``/jobs`` (None: the page is not served)."""
        self.prober = prober
        self.jobs = jobs
        self.tls = tls
        self.header_timeout_seconds = header_timeout_seconds
        self.deadlines = _Deadlines()
        self._slots = threading.BoundedSemaphore(max_connections)
        self.refused_busy = 0
        """Connections answered 503 because every slot was taken."""
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, ProbeHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection while a slot is free; else 503, closed at once
        (written from the accepting thread: a small reply into a new socket's buffer)."""
        if not self._slots.acquire(blocking=False):
            self.refused_busy += 1
            try:
                request.setblocking(False)
                request.send(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        return f"{'https' if self.tls else 'http'}://{shown}:{port}"

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
        try:
            secured = self.tls.wrap_socket(request, server_side=True)
        except (OSError, ssl.SSLError) as error:
            log.info("TLS handshake with %s failed: %s", client_address[0], error)
            return
        try:
            secured.settimeout(None)
            super().finish_request(secured, client_address)
        finally:
            secured.close()


class ProbeHandler(BaseHTTPRequestHandler):
    server: ExporterServer
    server_version = f"msoctl-exporter/{__version__}"

    def setup(self) -> None:
        super().setup()
        # Each read waits at most the header time; the whole of the headers as long, by
        # the server's watchdog, which closes the connection's reading side if they are
        # not in by then.
        self.connection.settimeout(self.server.header_timeout_seconds)
        self.server.deadlines.watch(self.connection, self.server.header_timeout_seconds)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        late = self.server.deadlines.done(self.connection)  # the probe's budget bounds
        self.connection.settimeout(RESPONSE_TIMEOUT_SECONDS)  # the rest
        if late and parsed:
            self.send_error(HTTPStatus.REQUEST_TIMEOUT,
                            f"the request's headers took more than "
                            f"{self.server.header_timeout_seconds:g} s")
            return False
        return parsed

    def finish(self) -> None:
        self.server.deadlines.done(self.connection)
        super().finish()

    def do_GET(self) -> None:
        try:
            self._get()
        except Exception as error:  # one bad request must not leave a traceback behind
            log.error("%s %s: internal error: %s: %s", self.address_string(), self.path,
                      type(error).__name__, error, exc_info=log.isEnabledFor(logging.DEBUG))
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR,
                       f"internal error: {type(error).__name__}\n".encode(), TEXT)

    def _get(self) -> None:
        url = urlsplit(self.path)
        params = parse_qs(url.query)
        prober = self.server.prober
        if url.path == "/probe":
            try:
                result = prober.probe(_once(params, "target"), _once(params, "module"),
                                      self.headers.get(TIMEOUT_HEADER))
            except ProbeRefused as refused:
                self._send(refused.status, f"{refused}\n".encode(), TEXT)
                return
            self._send(HTTPStatus.OK, result.body, EXPOSITION)
        elif url.path == "/jobs" and self.server.jobs is not None:
            budget = prober.budget(self.headers.get(TIMEOUT_HEADER))
            self._send(HTTPStatus.OK, self.server.jobs.exposition(budget), EXPOSITION)
        elif url.path == "/metrics":
            self._send(HTTPStatus.OK, prober.metrics(), EXPOSITION)
        elif url.path == "/-/healthy":
            self._send(HTTPStatus.OK, b"ok\n", TEXT)
        elif url.path == "/":
            self._send(HTTPStatus.OK, INDEX.format(
                version=__version__, modules=", ".join(MODULES),
                inventory=prober.inventory_path).encode(), TEXT)
        else:
            self._send(HTTPStatus.NOT_FOUND,
                       f"no such page {url.path!r}; see / for what there is\n".encode(), TEXT)

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            log.debug("client went away before the response")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


def _once(params: dict[str, list[str]], key: str) -> str | None:
    """The value of query parameter ``key``; refused (400) when given more than once: a
    probe reads one device with one module, and taking the first would answer for one
    while the caller asked for several."""
    values = params.get(key)
    if values and len(values) > 1:
        raise ProbeRefused(400, f"{key} given {len(values)} times "
                                f"({', '.join(repr(v) for v in values)}): give it once")
    return values[0] if values else None
