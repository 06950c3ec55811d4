"""gNMI Subscribe STREAM and Capabilities on an asyncio event loop (``grpc.aio``).

For a process that keeps many subscriptions open at once (the exporter: one per gNMI
switch): a call here holds no thread of its own. :class:`GnmiClient`'s blocking STREAM
(:meth:`~drivers.transports.gnmi.GnmiClient.subscribe_paths`) takes two threads per
call, a reader and grpc's request sender, and grpc's blocking iterator wakes every
0.1 s; past a few hundred streams in one process those threads queue for the
interpreter and starve everything else (bench/README.md, ``telemetry_surfaces.py``).

The request is :meth:`~drivers.transports.gnmi.GnmiClient.stream_request`'s, the
channel the client's settings (:meth:`~drivers.transports.gnmi.GnmiClient.aio_channel`),
and every failure the client's error mapping: the same target, checks and errors as the
blocking calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc
from gnmi_pb import gnmi_pb2, gnmi_pb2_grpc

from drivers.transports.gnmi import GnmiCapabilities, GnmiClient, StreamPath, capabilities_of

STREAM = "Subscribe STREAM"


async def capabilities(client: GnmiClient) -> GnmiCapabilities:
    """The target's Capabilities, within the client's timeout."""
    channel = client.aio_channel()
    try:
        reply = await gnmi_pb2_grpc.gNMIStub(channel).Capabilities(
            gnmi_pb2.CapabilityRequest(), timeout=client.target.timeout_seconds,
            metadata=client.metadata)
    except grpc.aio.AioRpcError as error:
        raise client.rpc_error("Capabilities", error) from None
    finally:
        await channel.close()
    return capabilities_of(reply)


class AsyncStream:
    """One Subscribe STREAM of ``paths``: ``async with`` it, then ``async for`` its
    notifications (``gnmi_pb2.Notification``, undecoded). :attr:`synced` turns True at
    the target's sync_response, and ``on_sync`` is called then. Iteration ends when the
    target ends the call; a failure is the client's :mod:`drivers.errors` exception.
    Leaving the ``async with`` cancels the call and closes its channel."""

    def __init__(self, client: GnmiClient, paths: Sequence[StreamPath], *,
                 on_sync: Any = None):
        self.client = client
        self.request = client.stream_request(paths)
        self.synced = False
        self._on_sync = on_sync
        self._channel: Any = None
        self._call: Any = None
        self._closing = asyncio.Event()

    async def __aenter__(self) -> AsyncStream:
        self._channel = self.client.aio_channel()
        stub = gnmi_pb2_grpc.gNMIStub(self._channel)
        self._call = stub.Subscribe(self._requests(), metadata=self.client.metadata)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        if self._call is not None:
            self._call.cancel()
        if self._channel is not None:
            await self._channel.close()

    async def _requests(self) -> AsyncIterator[Any]:
        yield self.request
        await self._closing.wait()  # the request stream stays open while the call lasts

    def __aiter__(self) -> AsyncStream:
        return self

    async def __anext__(self) -> Any:
        while True:
            try:
                response = await self._call.read()
            except grpc.aio.AioRpcError as error:
                raise self.client.rpc_error(STREAM, error) from None
            except asyncio.CancelledError:
                if self._closing.is_set():
                    raise StopAsyncIteration from None
                raise
            if response is grpc.aio.EOF:
                raise StopAsyncIteration
            kind = response.WhichOneof("response")
            if kind == "update":
                return response.update
            if kind == "sync_response" and response.sync_response and not self.synced:
                self.synced = True
                if self._on_sync is not None:
                    self._on_sync()
            elif kind == "error":
                raise self.client.response_error(STREAM, response.error)
