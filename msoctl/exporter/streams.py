"""The exporter's gNMI telemetry: one STREAM subscription per gNMI switch, kept open.

A switch reached over gNMI pushes its optics and FEC (OpenConfig's platform-transceiver
and if-ethernet paths, or SONiC's STATE_DB and COUNTERS_DB: :mod:`drivers.optics.gnmi`):
monitors and counters sampled every :attr:`OpticsStreams.sample_seconds`, states on
change. A thread per switch holds the subscription and keeps the last value of every
leaf (:class:`~drivers.optics.gnmi.OpticsAccumulator`); a probe answers from those
values, with their age, and never waits on the switch:

- the first probe of a switch starts its stream and waits up to its budget for the
  first values, all of them (the target's sync_response: one wait per exporter start);
- a stream that ends or fails is subscribed again, after 1 s once it has brought
  something, else after a wait that doubles up to 30 s;
- values older than :attr:`OpticsStreams.stale_seconds` (three sample intervals: a
  stream that has gone silent) make the probe fail, ``msoctl_up 0``, until the stream
  brings values again.

The switch's model comes from its inventory ``model:`` or, with ``auto``, from its
Capabilities when the stream starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drivers.errors import DeviceError, DeviceTimeout
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
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    accumulator: Any = None
    """The OpticsAccumulator, once the session knows the switch's model."""
    error: str | None = None
    """Why the session could not be opened, last time it was tried."""
    ready: threading.Event = field(default_factory=threading.Event)
    """Set once the accumulator exists (or opening failed once)."""


class OpticsStreams:
    """Every gNMI switch's stream (see the module). Thread-safe; :meth:`close` when done."""

    def __init__(self, *, sample_seconds: float = DEFAULT_SAMPLE_SECONDS,
                 open_session: Callable[[Device], Any] | None = None):
        """``open_session(device)``: a GnmiSwitchSession for the switch (tests may pass
        their own); by default from its inventory entry."""
        if sample_seconds <= 0:
            raise ValueError("sample_seconds must be positive")
        self.sample_seconds = sample_seconds
        self.stale_seconds = STALE_SAMPLES * sample_seconds
        self._open = open_session or _open_session
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()

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
            stream = self._streams.get(device.name)
            if stream is not None and stream.device != device:  # the inventory changed
                stream.stop.set()
                stream = None
            if stream is None:
                stream = _Stream(device)
                stream.thread = threading.Thread(target=self._run, args=(stream,),
                                                 name=f"gnmi-stream-{device.name}", daemon=True)
                self._streams[device.name] = stream
                stream.thread.start()
            return stream

    def _run(self, stream: _Stream) -> None:
        from drivers.optics.gnmi import OpticsAccumulator, follow

        wait = OPEN_RETRY_SECONDS[0]
        while not stream.stop.is_set():
            try:
                session = self._open(stream.device)
            except Exception as error:  # unreachable, refused, a secret not readable ...
                stream.error = str(error)
                stream.ready.set()
                log.info("%s: gNMI session not opened: %s", stream.device.name, error)
                stream.stop.wait(wait)
                wait = min(OPEN_RETRY_SECONDS[1], wait * 2)
                continue
            try:
                model = session.model.name
                if model not in ("openconfig", "sonic"):
                    stream.error = f"its model {model} has no telemetry paths"
                    stream.ready.set()
                    return
                if stream.accumulator is None or stream.accumulator.model != model:
                    stream.accumulator = OpticsAccumulator(stream.device.name, model)
                stream.error = None
                stream.ready.set()
                follow(session.client, stream.accumulator, stop=stream.stop,
                       sample_seconds=self.sample_seconds)
            finally:
                session.close()

    def close(self) -> None:
        """Stop every stream and wait a little for their threads."""
        with self._lock:
            streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            stream.stop.set()
        for stream in streams:
            if stream.thread is not None:
                stream.thread.join(5)


def _open_session(device: Device) -> Any:
    from drivers.switch.gnmi import GnmiSwitchSession
    from msoctl.access import gnmi_target

    return GnmiSwitchSession(gnmi_target(device))
