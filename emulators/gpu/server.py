"""The HTTP endpoints a GPU server's state is scraped from: its vendor's GPU exporter and
node_exporter (its NICs), each on a port of its own, ``GET /metrics`` in the Prometheus
text format (version 0.0.4), as the real ones serve it.

Transport faults of the server's injector (:mod:`emulators.faults`), per request:
latency (the answer held back ``seconds``), drop (read, never answered: the client's
timeout fires), reset (the connection closed without an answer), freeze (nothing
answered until cleared), garbage (the body replaced by bytes that are not the text
format), truncate (the body cut in the middle of a line, the connection closed).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from emulators.faults import FaultInjector
from emulators.gpu.model import GpuServer, Snapshot
from emulators.http import (
    MAX_HEADER_BYTES,
    HttpError,
    read_request,
    reset_connection,
    response_head,
)

log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
READ_TIMEOUT_SECONDS = 5.0
_POLL_SECONDS = 0.05
GARBLED = b"\x00\xff<html>not metrics</html>\x07\n"

Render = Callable[[Snapshot], str]


@dataclass
class Endpoint:
    """One exporter of the server: what it renders, where it listens."""

    role: str  # "gpu" or "node"
    render: Render
    port: int = 0
    server: asyncio.Server | None = None


class ExporterServer:
    """The exporters of ``model``: ``endpoints`` maps a role to its renderer."""

    def __init__(self, model: GpuServer, endpoints: dict[str, Render], *,
                 host: str = "127.0.0.1", faults: FaultInjector | None = None):
        self.model = model
        self.host = host
        self.faults = faults if faults is not None else model.faults
        self.endpoints = {role: Endpoint(role, render) for role, render in endpoints.items()}
        self._handlers: set[asyncio.Task[None]] = set()

    def url(self, role: str) -> str:
        return f"http://{self.host}:{self.endpoints[role].port}/metrics"

    async def start(self) -> None:
        for endpoint in self.endpoints.values():
            endpoint.server = await asyncio.start_server(
                functools.partial(self._serve, endpoint), self.host, endpoint.port,
                limit=MAX_HEADER_BYTES)
            endpoint.port = endpoint.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening, and end the requests still held (by a freeze or a drop)."""
        servers = [e.server for e in self.endpoints.values() if e.server is not None]
        for endpoint in self.endpoints.values():
            endpoint.server = None
        for server in servers:
            server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        for server in servers:
            await server.wait_closed()

    async def _serve(self, endpoint: Endpoint, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            try:
                method, target, _, _ = await asyncio.wait_for(read_request(reader),
                                                              READ_TIMEOUT_SECONDS)
                if target.split("?", 1)[0] != "/metrics":
                    raise HttpError(HTTPStatus.NOT_FOUND, "the metrics are at /metrics")
                if method != "GET":
                    raise HttpError(HTTPStatus.METHOD_NOT_ALLOWED, "/metrics takes GET")
            except HttpError as error:
                body = f"{error.message}\n".encode()
                writer.write(response_head(error.status, "text/plain", len(body)) + body)
                await writer.drain()
                return
            if not await self._transport_faults(writer):
                return
            body = endpoint.render(self.model.snapshot()).encode("utf-8")
            if self.faults.consume("garbage") is not None:
                body = GARBLED
            if self.faults.consume("truncate") is not None:
                cut = body[: len(body) // 2]
                writer.write(response_head(HTTPStatus.OK, CONTENT_TYPE, len(body)) + cut)
                await writer.drain()
                return
            writer.write(response_head(HTTPStatus.OK, CONTENT_TYPE, len(body)) + body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client went away, or sent nothing
        finally:
            self._handlers.discard(task)
            writer.close()

    async def _transport_faults(self, writer: asyncio.StreamWriter) -> bool:
        """Carry out latency, freeze, drop and reset; False: nothing is to be answered."""
        latency = self.faults.consume("latency")
        if latency is not None and latency.seconds:
            await asyncio.sleep(latency.seconds)
        while self.faults.is_active("freeze"):
            await asyncio.sleep(_POLL_SECONDS)
        if self.faults.consume("drop") is not None:
            await asyncio.sleep(READ_TIMEOUT_SECONDS * 6)  # longer than any client waits
            return False
        if self.faults.consume("reset") is not None:
            reset_connection(writer)
            return False
        return True
