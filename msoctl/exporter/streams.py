"""The exporter's gNMI telemetry: one STREAM subscription per gNMI switch, kept open.

A switch reached over gNMI pushes its optics and FEC (OpenConfig's platform-transceiver
and if-ethernet paths, or SONiC's STATE_DB and COUNTERS_DB: :mod:`drivers.optics.gnmi`):
monitors and counters sampled every :attr:`OpticsStreams.sample_seconds`, states on
change. Every subscription is a task on one event loop (``grpc.aio``), which keeps the
last value of every leaf (:class:`~drivers.optics.gnmi.OpticsAccumulator`); a probe
answers from those values, with their age, and never waits on the switch:

- the first probe of a switch starts its stream and waits up to its budget for the
  first values, all of them (the target's sync_response: one wait per exporter start);
- a stream that ends, fails, or brings nothing for three sample intervals is
  subscribed again, after 1 s once it has brought something, else after a wait that
  doubles up to 30 s;
- values older than :attr:`OpticsStreams.stale_seconds` (three sample intervals: a
  stream that has gone silent) make the probe fail, ``msoctl_up 0``, until the stream
  brings values again.

The switch's model comes from its inventory ``model:`` or, with ``auto``, from its
Capabilities when the stream starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drivers.errors import DeviceError, DeviceTimeout, ValidationError
from drivers.optics.readings import OpticsReading
from msoctl.inventory import Device

log = logging.getLogger(__name__)

DEFAULT_SAMPLE_SECONDS = 10.0
STALE_SAMPLES = 3.0
"""A stream whose newest value is older than this many sample intervals is silent."""
OPEN_RETRY_SECONDS = (1.0, 30.0)
"""The first and the longest wait before opening a session again after a failure."""


@dataclass
class _Stream:
    device: Device
    future: Any = None
    """The concurrent future of its coroutine on the streams' loop."""
    task: asyncio.Task[None] | None = None
    """The asyncio task itself, once it runs (what :meth:`OpticsStreams.close` waits
    for: a future's cancel returns before the task has unwound)."""
    accumulator: Any = None
    """The OpticsAccumulator, once the session knows the switch's model."""
    error: str | None = None
    """Why the session could not be opened, last time it was tried."""
    ready: threading.Event = field(default_factory=threading.Event)
    """Set once the accumulator exists (or opening failed once)."""


class OpticsStreams:
    """Every gNMI switch's stream (see the module), all on one event loop in a thread of
    its own (``grpc.aio``: no thread per stream). Thread-safe; :meth:`close` when done."""

    def __init__(self, *, sample_seconds: float = DEFAULT_SAMPLE_SECONDS,
                 open_client: Callable[[Device], Any] | None = None):
        """``open_client(device)``: a GnmiClient for the switch (tests may pass their
        own); by default from its inventory entry."""
        if sample_seconds <= 0:
            raise ValueError("sample_seconds must be positive")
        self.sample_seconds = sample_seconds
        self.stale_seconds = STALE_SAMPLES * sample_seconds
        self._open = open_client or _open_client
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def reading(self, device: Device, *, wait_seconds: float) -> OpticsReading:
        """The switch's optics as its stream last brought them. Starts the stream at the
        first call and waits up to ``wait_seconds`` for its first values.

        Raises :class:`DeviceTimeout` when no values came within the wait, or the newest
        is older than :attr:`stale_seconds`; :class:`DeviceError` (the session's) when the
        switch could not be reached at all."""
        stream = self._stream(device)
        deadline = time.monotonic() + wait_seconds
        stream.ready.wait(wait_seconds)
        accumulator = stream.accumulator
        if accumulator is None:
            raise DeviceError(stream.error or "the gNMI stream has not started",
                              device=device.name)
        # the first values whole: up to the target's sync_response (or, from a target
        # that never sends one, what came within the wait)
        accumulator.synced.wait(max(0.0, deadline - time.monotonic()))
        reading: OpticsReading = accumulator.reading()
        if reading.age_seconds is None:
            raise DeviceTimeout(f"no telemetry streamed within {wait_seconds:.3g} s",
                                device=device.name)
        if reading.age_seconds > self.stale_seconds:
            raise DeviceTimeout(f"the telemetry stream has been silent for "
                                f"{reading.age_seconds:.0f} s", device=device.name)
        return reading

    def _stream(self, device: Device) -> _Stream:
        with self._lock:
            loop = self._running_loop()
            stream = self._streams.get(device.name)
            if stream is not None and stream.device != device:  # the inventory changed
                stream.future.cancel()
                stream = None
            if stream is None:
                stream = _Stream(device)
                stream.future = asyncio.run_coroutine_threadsafe(self._run(stream), loop)
                self._streams[device.name] = stream
            return stream

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, name="gnmi-streams",
                                            daemon=True)
            self._thread.start()
            self._loop = loop
        return self._loop

    async def _run(self, stream: _Stream) -> None:
        from drivers.optics.gnmi import OpticsAccumulator, follow_async

        stream.task = asyncio.current_task()
        wait = OPEN_RETRY_SECONDS[0]
        stop = asyncio.Event()  # the task is cancelled to stop it
        while True:
            try:
                client = self._open(stream.device)
                try:
                    model = await _model(client, stream.device)
                    if stream.accumulator is None or stream.accumulator.model != model:
                        stream.accumulator = OpticsAccumulator(stream.device.name, model)
                    stream.error = None
                    stream.ready.set()
                    await follow_async(client, stream.accumulator, stop=stop,
                                       sample_seconds=self.sample_seconds)
                finally:
                    client.close()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # unreachable, refused, a secret not readable ...
                stream.error = str(error)
                stream.ready.set()
                log.info("%s: gNMI telemetry not streamed: %s", stream.device.name, error)
                await asyncio.sleep(wait)
                wait = min(OPEN_RETRY_SECONDS[1], wait * 2)

    def close(self) -> None:
        """Cancel every stream (their calls and channels close) and stop the loop."""
        with self._lock:
            streams, self._streams = list(self._streams.values()), {}
            loop, self._loop = self._loop, None
        if loop is None:
            return

        async def cancel_all() -> None:
            tasks = [stream.task for stream in streams if stream.task is not None]
            for stream in streams:
                stream.future.cancel()  # one that has not started yet never will
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        loop.close()


MODELS_STREAMED = ("openconfig", "sonic")


async def _model(client: Any, device: Device) -> str:
    """The switch's model, from its Capabilities: its inventory's if it announces it, or
    (``auto``) the one it announces. Asked at every (re)connection: a switch that cannot
    be reached, or refuses the credentials, fails here at once."""
    from drivers.switch.models import build
    from drivers.transports.gnmi_aio import capabilities

    announced = await capabilities(client)
    name = build(device.model, {model.name for model in announced.models},
                 device=device.name).name
    if name not in MODELS_STREAMED:
        raise ValidationError(f"its model {name} has no telemetry paths")
    return name


def _open_client(device: Device) -> Any:
    from drivers.transports.gnmi import GnmiClient
    from msoctl.access import gnmi_target

    return GnmiClient(gnmi_target(device).gnmi)
