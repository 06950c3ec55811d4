"""One Subscribe call: its SubscriptionList, and the responses it gives rise to.

Values are read from the operational tree (``face.operational``: configuration and
state), one Update per node a subscribed path selects (the whole json_ietf subtree at
that node, not one Update per leaf), one Notification per subscription and round.

- **ONCE**: every path's current values, ``sync_response``, the end of the call.
- **POLL**: the same without the end; each ``poll`` request sends values and
  ``sync_response`` again. A second SubscriptionList is INVALID_ARGUMENT.
- **STREAM**, per Subscription:
  - ``SAMPLE``: values every ``sample_interval`` ns of real time (0: every
    :data:`DEFAULT_SAMPLE_SECONDS`; below :data:`MIN_SAMPLE_SECONDS` INVALID_ARGUMENT);
    ``suppress_redundant`` sends only the nodes that changed, at least every
    ``heartbeat_interval`` when one is given.
  - ``ON_CHANGE``: values when they change: at once after a Set (or a rollback), and
    otherwise as seen by reading the operational tree every
    :data:`ON_CHANGE_POLL_SECONDS` (counters); a node that disappears is sent as a
    ``delete``; ``heartbeat_interval`` resends everything that often.
  - ``TARGET_DEFINED``: ON_CHANGE for a path that selects configuration only (its
    operational nodes equal the configuration's: it changes only by a Set), else SAMPLE
    every :data:`DEFAULT_SAMPLE_SECONDS` (counters, state, or nothing yet); decided when
    the subscription is made. With a ``sample_interval`` it is INVALID_ARGUMENT (gNMI
    3.5.1.5.2).
  ``updates_only``: ``sync_response`` first, then only changes (a SAMPLE's first values
  at its first interval). A further SubscriptionList or a poll on the stream is
  INVALID_ARGUMENT.

A path that selects nothing sends nothing (and is watched: it may appear). Paths in
notifications are concrete (wildcards expanded, keys of entries found through a list
without keys as :func:`emulators.gnmi.tree.identity` reads them) and relative to the
SubscriptionList's prefix, which each Notification carries.

The call runs on the server's event loop (:meth:`SubscriptionCall.run`, an asynchronous
generator); what reads the tree and builds the notifications is handed to the server's
``work`` (its pool of threads), and a STREAM call between two rounds only waits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc
from gnmi_pb import gnmi_pb2

from emulators.gnmi import tree as trees
from emulators.gnmi.errors import GnmiError
from emulators.gnmi.paths import Elem, concrete, format_path, from_proto

DEFAULT_SAMPLE_SECONDS = 1.0
MIN_SAMPLE_SECONDS = 0.001
ON_CHANGE_POLL_SECONDS = 0.1

ListMode = gnmi_pb2.SubscriptionList.Mode
_MISSING = object()
Concrete = tuple[Elem, ...]
Responses = list[gnmi_pb2.SubscribeResponse]
Work = Callable[..., Awaitable[Any]]
"""Runs a function with its arguments away from the loop: the server's ``work``."""


class Source(Protocol):
    """What a subscription reads (the server)."""

    def operational_tree(self, tops: frozenset[str] | None = None) -> Any: ...

    def leaf(self, path: str, value: Any, encoding: int) -> gnmi_pb2.TypedValue:
        """A node's value as sent (a scalar where the face names one for the leaf)."""

    def config_tree(self) -> Any: ...

    def timestamp_ns(self) -> int: ...

    def resolve(self, prefix: gnmi_pb2.Path, path: gnmi_pb2.Path
                ) -> tuple[list[Elem], list[Elem]]:
        """(elements to read the tree with, the same as the client named them)."""


@dataclass
class _Watch:
    """One Subscription of the list, and what was last sent for it."""

    path: gnmi_pb2.Path
    elems: list[Elem]
    shown: list[Elem]
    on_change: bool
    interval: float
    heartbeat: float | None
    suppress_redundant: bool
    due: float = 0.0
    heartbeat_due: float = 0.0
    sent: dict[Concrete, Any] = field(default_factory=dict)

    def values(self, tree: Any) -> dict[Concrete, Any]:
        try:
            return {tuple(trail): value for trail, value in trees.select(tree, self.elems)}
        except GnmiError:  # the tree took a shape the path cannot address: nothing there
            return {}


class SubscriptionCall:
    """Run one Subscribe call after its first request (module docstring)."""

    def __init__(self, source: Source, request: gnmi_pb2.SubscriptionList, *,
                 encodings: dict[str, int]):
        self._source = source
        self._list = request
        if request.encoding not in encodings.values():
            raise GnmiError("UNIMPLEMENTED", f"encoding {request.encoding} is not supported "
                                             f"(supported: {', '.join(encodings)})")
        if not request.subscription:
            raise GnmiError("INVALID_ARGUMENT", "a SubscriptionList needs a subscription")
        self._prefix_length = len(from_proto(request.prefix))
        self._watches = [self._watch(subscription) for subscription in request.subscription]
        self._tops = tops_of([watch.elems for watch in self._watches])

    def _watch(self, subscription: gnmi_pb2.Subscription) -> _Watch:
        elems, shown = self._source.resolve(self._list.prefix, subscription.path)
        mode = subscription.mode
        interval_ns = subscription.sample_interval
        if mode == gnmi_pb2.TARGET_DEFINED and self._list.mode == ListMode.STREAM:
            if interval_ns:
                raise GnmiError("INVALID_ARGUMENT", "a TARGET_DEFINED subscription takes no "
                                                    "sample_interval (gNMI 3.5.1.5.2)")
            probe = _Watch(subscription.path, elems, shown, False, 0, None, False)
            configured = probe.values(self._source.config_tree())
            on_change = bool(configured) and configured == probe.values(
                self._source.operational_tree(tops_of([elems])))
        else:
            on_change = mode == gnmi_pb2.ON_CHANGE
        interval = interval_ns / 1e9 if interval_ns else DEFAULT_SAMPLE_SECONDS
        streamed = self._list.mode == ListMode.STREAM
        if streamed and not on_change and interval < MIN_SAMPLE_SECONDS:
            raise GnmiError("INVALID_ARGUMENT", f"sample_interval {interval_ns} ns is below "
                            f"this target's {MIN_SAMPLE_SECONDS * 1e9:.0f} ns")
        heartbeat = subscription.heartbeat_interval / 1e9 or None
        return _Watch(subscription.path, elems, shown, on_change, interval, heartbeat,
                      subscription.suppress_redundant)

    # ---- the responses ------------------------------------------------------------------

    async def run(self, requests: AsyncIterator[gnmi_pb2.SubscribeRequest], *,
                  ended: Callable[[], bool], wake: asyncio.Event, work: Work
                  ) -> AsyncGenerator[gnmi_pb2.SubscribeResponse, None]:
        """The call's responses; ``requests`` the client's after the SubscriptionList,
        ``ended`` whether the call is over, ``wake`` set when the configuration changes
        (or the call ends)."""
        mode = self._list.mode
        if mode == ListMode.STREAM:
            async for response in self._stream(requests, ended, wake, work):
                yield response
            return
        for response in await work(self._round, True):
            yield response
        if mode == ListMode.ONCE:
            return
        async for request in _until_cancelled(requests):
            if ended():
                return
            if request.WhichOneof("request") != "poll":
                raise GnmiError("INVALID_ARGUMENT", "a POLL subscription takes only poll "
                                                    "requests after its SubscriptionList")
            for response in await work(self._round, False):
                yield response

    def _round(self, initial: bool) -> Responses:
        """Every path's values and a sync_response (only the latter for updates_only)."""
        responses = []
        if not (initial and self._list.updates_only):
            tree = self._source.operational_tree(self._tops)
            for watch in self._watches:
                current = watch.values(tree)
                if current:
                    responses.append(self._notification(watch, current, ()))
        responses.append(gnmi_pb2.SubscribeResponse(sync_response=True))
        return responses

    async def _stream(self, requests: AsyncIterator[gnmi_pb2.SubscribeRequest],
                      ended: Callable[[], bool], wake: asyncio.Event, work: Work
                      ) -> AsyncIterator[gnmi_pb2.SubscribeResponse]:
        refused: list[str] = []
        reader = asyncio.create_task(_read_rest(requests, refused, wake))
        try:
            for response in await work(self._first_round):
                yield response
            woken = False
            while not ended():
                if refused:
                    raise GnmiError("INVALID_ARGUMENT", refused[0])
                for response in await work(self._due_round, woken):
                    yield response
                pause = min(watch.due for watch in self._watches) - time.monotonic()
                woken = await _woken(wake, pause)
                wake.clear()
        finally:
            reader.cancel()

    def _first_round(self) -> Responses:
        """A STREAM's first values (unless updates_only) and its sync_response."""
        responses = []
        tree = self._source.operational_tree(self._tops)
        now = time.monotonic()
        for watch in self._watches:
            current = watch.values(tree)
            if current and not self._list.updates_only:
                responses.append(self._notification(watch, current, ()))
            watch.sent = current
            watch.due = now + (ON_CHANGE_POLL_SECONDS if watch.on_change else watch.interval)
            watch.heartbeat_due = now + (watch.heartbeat or 0)
        responses.append(gnmi_pb2.SubscribeResponse(sync_response=True))
        return responses

    def _due_round(self, woken: bool) -> Responses:
        """The watches due now (and, ``woken`` by a change, every ON_CHANGE one)."""
        now = time.monotonic()
        due = [watch for watch in self._watches
               if now >= watch.due or (woken and watch.on_change)]
        if not due:
            return []
        tree = self._source.operational_tree(self._tops)
        return [response for watch in due
                if (response := self._tick(watch, tree, now)) is not None]

    def _tick(self, watch: _Watch, tree: Any, now: float) -> gnmi_pb2.SubscribeResponse | None:
        current = watch.values(tree)
        beat = watch.heartbeat is not None and now >= watch.heartbeat_due
        if beat:
            watch.heartbeat_due = now + (watch.heartbeat or 0)
        if watch.on_change:
            watch.due = now + ON_CHANGE_POLL_SECONDS
            send_all = beat
        else:
            watch.due = max(watch.due + watch.interval, now)
            send_all = beat or not watch.suppress_redundant
        changed = current if send_all else {
            path: value for path, value in current.items()
            if watch.sent.get(path, _MISSING) != value}
        gone = [path for path in watch.sent if path not in current]
        watch.sent = current
        if not changed and not gone:
            return None
        return self._notification(watch, changed, gone)

    def _notification(self, watch: _Watch, values: dict[Concrete, Any],
                      gone: Any) -> gnmi_pb2.SubscribeResponse:
        encoding = self._list.encoding
        updates = [gnmi_pb2.Update(path=concrete(watch.shown, list(trail), skip=self._prefix_length,
                                   origin=watch.path.origin),
                                   val=self._source.leaf(format_path(trail), value, encoding))
                   for trail, value in values.items()]
        deletes = [concrete(watch.shown, list(trail), skip=self._prefix_length,
                                   origin=watch.path.origin) for trail in gone]
        return gnmi_pb2.SubscribeResponse(update=gnmi_pb2.Notification(
            timestamp=self._source.timestamp_ns(),
            prefix=self._list.prefix if self._list.HasField("prefix") else None,
            update=updates, delete=deletes))


def tops_of(paths: list[list[Elem]]) -> frozenset[str]:
    """The top-level members the paths read (``*`` for the root or a wildcard)."""
    return frozenset(elems[0].name if elems and not elems[0].wild else "*" for elems in paths)


async def _woken(wake: asyncio.Event, seconds: float) -> bool:
    """Whether ``wake`` is set within ``seconds``."""
    if wake.is_set():
        return True
    if seconds <= 0:
        return False
    try:
        await asyncio.wait_for(wake.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def _until_cancelled(requests: AsyncIterator[gnmi_pb2.SubscribeRequest]
                           ) -> AsyncIterator[gnmi_pb2.SubscribeRequest]:
    """The client's requests until it closes its side or the call ends."""
    try:
        async for request in requests:
            yield request
    except grpc.RpcError:  # cancelled: the call is over
        return


async def _read_rest(requests: AsyncIterator[gnmi_pb2.SubscribeRequest], refused: list[str],
                     wake: asyncio.Event) -> None:
    """A STREAM call's later requests, each a protocol error; ends with the call."""
    async for request in _until_cancelled(requests):
        kind = request.WhichOneof("request")
        refused.append("a STREAM subscription takes no poll" if kind == "poll" else
                       "a Subscribe call takes one SubscriptionList (gNMI 3.5.1.1)")
        wake.set()
        return
