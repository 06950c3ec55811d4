"""A gNMI target (gNMI 0.10) for one emulated device, its data model behind a face.

The server holds the device's configuration as a JSON tree (RFC 7951), starting from
``face.factory()``, and knows nothing of the model: the face checks and applies every
configuration (:mod:`emulators.gnmi.face`). Every face call is made with :attr:`lock`
held (the device that owns the face may pass its own lock to change its model from
other threads).

- **Capabilities**: the face's models and encodings (JSON_IETF, and JSON where the face
  lists it), gNMI version :data:`GNMI_VERSION`; with ``commit_confirmed`` the response's
  ``extension`` holds one (empty) ``commit`` extension: that is how a client learns it.
- **Get**: each path (prefix + path, :mod:`emulators.gnmi.paths`) is one Notification,
  one Update per node it selects (wildcards expanded) with the node's subtree in the
  request's encoding. ``type`` CONFIG reads the stored configuration; ALL (and an unset
  type) the operational tree (``face.operational``); STATE and OPERATIONAL the
  operational tree without its ``config`` containers (this server cannot tell state
  from operational data). A path that selects nothing is NOT_FOUND (a wildcard path
  that selects nothing is an empty Notification). An encoding the face does not list is
  UNIMPLEMENTED. ``use_models`` is not applied (one face, its models all served).
- **Set**: deletes, then replaces, then updates (gNMI 3.4), applied to a copy of the
  configuration (:mod:`emulators.gnmi.tree` states the merge rules); then the face
  commits the copy whole, or its :class:`~emulators.gnmi.face.FaceError` is the
  answer (its code, its text) and nothing changed. A change to a top-level member the
  face does not call writable is INVALID_ARGUMENT. ``union_replace`` is UNIMPLEMENTED.
  The response holds one UpdateResult per operation, in the request's order
  (deletes, replaces, updates), with its path as sent and the prefix reflected.
- **Commit Confirmed** (``gnmi_ext.Commit``, only with ``commit_confirmed``; otherwise a
  Set carrying it is UNIMPLEMENTED): :mod:`emulators.gnmi.commit`. A ``confirm``,
  ``cancel`` or ``set_rollback_duration`` carries no operations (INVALID_ARGUMENT).
- **Subscribe**: :mod:`emulators.gnmi.subscribe`.
- **Timestamps** are nanoseconds since the Unix epoch (gNMI 2.2.1) that move with the
  emulator's clock: the wall time at construction plus the clock's time since then.
- **Authentication**: with ``users``, every RPC's metadata carries ``username`` and
  ``password`` matching one of them, else UNAUTHENTICATED; no users, no check.
- **TLS**: :class:`GnmiTls`; with a client CA, client certificates are required.
  Without TLS the server is plaintext (labs), which the spec does not allow of a real
  target (gNMI 3.1).

Transport faults (:mod:`emulators.faults`), per RPC (and per message of a Subscribe):

| kind     | effect                                                                |
|----------|-----------------------------------------------------------------------|
| latency  | the reply is held back ``seconds`` of real time                       |
| drop     | the request is read, not carried out, never answered (the client's    |
|          | deadline fires); a stream stops sending                               |
| reset    | UNAVAILABLE instead of an answer, the request not carried out         |
| freeze   | nothing is carried out nor answered until the fault is cleared        |
| garbage  | INTERNAL "garbled reply" instead of the reply                          |
| truncate | as garbage                                                            |

gRPC frames and checks every message, so line noise or a cut reply cannot reach a
client as such: its library reports INTERNAL, which is what garbage and truncate give.
A Subscribe's notifications also take the stream faults of
:mod:`emulators.gnmi.streamfaults` (``malformed`` values, a ``stream_stop`` in the middle
of a notification), which the server registers on its injector.

**On demand.** A face with ``operational_for(config, tops)`` builds part of its
operational tree only for the top-level members a request reads (a telemetry tree): the
server passes the first element of each path it reads (``*`` for the root or a
wildcard), for a Get and for each round of a subscription. A face with ``leaf_kind``
names the scalar TypedValue a leaf read alone goes in (:func:`values.leaf_value`).
As in the NETCONF server, garbage and truncate spoil the reply of a request that was
carried out. Counted faults are consumed one per reply.

Lifecycle: :meth:`GnmiServer.start` / :meth:`GnmiServer.stop` from asyncio. The server
is gRPC's asyncio server on the loop that started it: a call, and a stream between its
messages, holds no thread, so one process serves thousands of open subscriptions. The
work of a request (the face's calls, building a reply) runs in a small pool of threads
shared by every server of the process (:data:`WORK_THREADS`), so that a face waiting on
its device's lock never holds up the loop. :meth:`GnmiServer.factory_reset` puts the
factory configuration back (through the face) and drops a waiting commit; open
subscriptions stay and report the change.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hmac
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import grpc
from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc

from emulators.clock import Clock
from emulators.faults import FaultInjector
from emulators.gnmi import streamfaults
from emulators.gnmi import tree as trees
from emulators.gnmi.commit import ConfirmedCommit, rollback_seconds
from emulators.gnmi.errors import GnmiError
from emulators.gnmi.face import Face, FaceError, Tree
from emulators.gnmi.paths import Elem, concrete, format_path, from_proto, joined, rooted
from emulators.gnmi.subscribe import SubscriptionCall, tops_of
from emulators.gnmi.values import ENCODINGS, decoded, encoding_name, leaf_value

log = logging.getLogger(__name__)
T = TypeVar("T")

GNMI_VERSION = "0.10.0"
STOP_GRACE_SECONDS = 0.5
_POLL_SECONDS = 0.05  # how often a held RPC looks at the fault or its client again
WORK_THREADS = 8
"""Threads of the pool in which every server of a process does its requests' work."""
_UNANSWERED = GnmiError("UNAVAILABLE", "no reply (injected fault, or the server stopped)")
_Op = gnmi_pb2.UpdateResult.Operation
_DataType = gnmi_pb2.GetRequest.DataType


@dataclass(frozen=True)
class GnmiTls:
    """The server's certificate chain and key (PEM); with ``client_ca_pem`` clients must
    present a certificate that CA signed."""

    cert_pem: bytes
    key_pem: bytes
    client_ca_pem: bytes | None = None


@dataclass
class _Operation:
    op: int
    path: gnmi_pb2.Path
    elems: list[Elem]
    value: Any = None


class GnmiServer:
    """A gNMI target serving ``face`` (module docstring).

    ``users`` maps user names to passwords (none: no authentication); ``tls`` None serves
    plaintext; ``faults`` is the device's injector (a new one by default);
    ``commit_confirmed`` offers the Commit Confirmed extension. ``lock`` (an RLock; a
    new one by default) is held around every face call and the server's own state; the
    device that owns the face passes its own to change its model from other threads.
    """

    def __init__(self, name: str, face: Face, *, clock: Clock,
                 users: Mapping[str, str] | None = None, tls: GnmiTls | None = None,
                 faults: FaultInjector | None = None, commit_confirmed: bool = False,
                 host: str = "127.0.0.1", port: int = 0,
                 lock: threading.RLock | None = None):
        self.name = name
        self.face = face
        self.clock = clock
        self.host = host
        self.port = port
        self.tls = tls
        self.faults = faults if faults is not None else FaultInjector(name)
        streamfaults.register(self.faults)
        self.lock = lock if lock is not None else threading.RLock()
        self.commit_confirmed = commit_confirmed
        self._users = dict(users or {})
        self._encodings = {encoding: ENCODINGS[encoding] for encoding in face.encodings
                           if encoding in ENCODINGS}
        with self.lock:
            self._factory = copy.deepcopy(face.factory())
        self._config: Tree = copy.deepcopy(self._factory)
        self._modules = ({module for top in self._factory if (module := trees.module_of(top))}
                         | {model.name for model in face.models})
        self._served_origins = frozenset({"", face.name})
        self._epoch_ns = time.time_ns() - round(clock.now() * 1e9)
        self._commits = ConfirmedCommit(name, clock, self.lock, self._roll_back)
        self._streams: set[_Call] = set()
        self._streams_lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: grpc.aio.Server | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on ``host:port`` (an ephemeral port by default; :attr:`port` after)."""
        if self._server is not None:
            raise RuntimeError(f"{self.name} is already serving")
        self._stopping.clear()
        server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
        gnmi_pb2_grpc.add_gNMIServicer_to_server(_Servicer(self), server)
        host = f"[{self.host}]" if ":" in self.host else self.host
        address = f"{host}:{self.port}"
        if self.tls is None:
            bound = server.add_insecure_port(address)
        else:
            credentials = grpc.ssl_server_credentials(
                [(self.tls.key_pem, self.tls.cert_pem)],
                root_certificates=self.tls.client_ca_pem,
                require_client_auth=self.tls.client_ca_pem is not None)
            bound = server.add_secure_port(address, credentials)
        if not bound:
            raise OSError(f"{self.name}: cannot listen on {address}")
        await server.start()
        self.port = bound
        self._server = server
        self._commits.open()

    async def stop(self) -> None:
        """End the subscriptions, stop listening; waits off the event loop."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        self._wake_streams()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._commits.close)
        await server.stop(STOP_GRACE_SECONDS)

    def factory_reset(self) -> None:
        """The factory configuration back (committed through the face), no commit waiting.
        Open subscriptions stay, and report the change."""
        with self.lock:
            self._commits.finish()
            factory = copy.deepcopy(self._factory)
            self.face.commit(copy.deepcopy(factory))
            self._config = factory
        self._wake_streams()

    def expire_due(self) -> None:
        """Roll back a waiting commit whose time is up (called as every RPC begins)."""
        with self.lock:
            self._commits.expire_due()

    @property
    def config(self) -> Tree:
        """A copy of the stored configuration."""
        with self.lock:
            return copy.deepcopy(self._config)

    @property
    def pending_commit(self) -> str | None:
        """The id of the commit waiting for confirmation, if any."""
        with self.lock:
            self._commits.expire_due()
            return None if self._commits.pending is None else self._commits.pending.commit_id

    @property
    def active_subscriptions(self) -> int:
        with self._streams_lock:
            return len(self._streams)

    async def work(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in the pool of threads the process's servers share."""
        return await asyncio.get_running_loop().run_in_executor(_work_pool(), function, *args)

    def timestamp_ns(self) -> int:
        """Now, as a gNMI timestamp (module docstring)."""
        return self._epoch_ns + round(self.clock.now() * 1e9)

    # ---- the trees ------------------------------------------------------------------------

    def config_tree(self) -> Tree:
        return self.config

    def operational_tree(self, tops: frozenset[str] | None = None) -> Tree:
        """The face's operational tree; with ``tops`` (the top-level members a request
        reads), what the face builds on demand for them as well."""
        with self.lock:
            self._commits.expire_due()
            partial = getattr(self.face, "operational_for", None)
            if partial is not None and tops is not None:
                return partial(copy.deepcopy(self._config), tops)  # type: ignore[no-any-return]
            return self.face.operational(copy.deepcopy(self._config))

    def leaf(self, path: str, value: Any, encoding: int) -> gnmi_pb2.TypedValue:
        """``value`` at ``path`` as sent: a scalar where the face names one for the leaf."""
        kind_of = getattr(self.face, "leaf_kind", None)
        kind = kind_of(path) if kind_of is not None and not isinstance(value, dict | list) \
            else None
        return leaf_value(value, kind, encoding)

    def resolve(self, prefix: gnmi_pb2.Path, path: gnmi_pb2.Path
                ) -> tuple[list[Elem], list[Elem]]:
        """The elements of prefix + path to read the tree with (origin folded in), and as
        the client named them."""
        origin, shown = joined(prefix, path)
        if any(elem.wild for elem in from_proto(prefix)):
            raise GnmiError("UNIMPLEMENTED", "wildcards in a prefix are not implemented")
        return rooted(origin, shown, served=self._served_origins, modules=self._modules), shown

    def _view(self, data_type: int, tops: frozenset[str]) -> Tree:
        if data_type == _DataType.CONFIG:
            return self.config
        operational = self.operational_tree(tops)
        if data_type in (_DataType.STATE, _DataType.OPERATIONAL):
            return trees.pruned(operational, "config")  # type: ignore[no-any-return]
        return operational

    def _encoding(self, encoding: int) -> int:
        if encoding not in self._encodings.values():
            raise GnmiError("UNIMPLEMENTED", f"encoding {encoding_name(encoding)} is not "
                            f"supported (supported: {', '.join(self._encodings)})")
        return encoding

    # ---- Capabilities, Get ----------------------------------------------------------------

    def capabilities(self, request: gnmi_pb2.CapabilityRequest) -> gnmi_pb2.CapabilityResponse:
        extensions = ([gnmi_ext_pb2.Extension(commit=gnmi_ext_pb2.Commit())]
                      if self.commit_confirmed else [])
        return gnmi_pb2.CapabilityResponse(
            supported_models=[gnmi_pb2.ModelData(name=model.name,
                                                 organization=model.organization,
                                                 version=model.version)
                              for model in self.face.models],
            supported_encodings=list(self._encodings.values()),
            gNMI_version=GNMI_VERSION, extension=extensions)

    def get(self, request: gnmi_pb2.GetRequest) -> gnmi_pb2.GetResponse:
        encoding = self._encoding(request.encoding)
        wanted = [(path, *self.resolve(request.prefix, path)) for path in request.path]
        view = self._view(request.type, tops_of([elems for _, elems, _ in wanted]))
        stamp = self.timestamp_ns()
        prefix_length = len(from_proto(request.prefix))
        notifications = []
        for path, elems, shown in wanted:
            found = trees.select(view, elems)
            wild = any(elem.wild for elem in elems)
            if not found and not wild:
                raise GnmiError("NOT_FOUND", f"{format_path(shown)}: no such node")
            updates = [gnmi_pb2.Update(path=concrete(shown, trail, skip=prefix_length,
                                                     origin=path.origin),
                                       val=self.leaf(format_path(trail), value, encoding))
                       for trail, value in found]
            notifications.append(gnmi_pb2.Notification(
                timestamp=stamp, prefix=_reflected(request), update=updates))
        return gnmi_pb2.GetResponse(notification=notifications)

    # ---- Set --------------------------------------------------------------------------------

    def set(self, request: gnmi_pb2.SetRequest) -> gnmi_pb2.SetResponse:
        commit = self._commit_extension(request)
        if request.union_replace:
            raise GnmiError("UNIMPLEMENTED", "union_replace is not implemented by this target")
        operations = self._operations(request)
        with self.lock:
            self._commits.expire_due()
            action = None if commit is None else commit.WhichOneof("action")
            if commit is None:
                self._commits.refuse_plain_set()
                self._apply(operations)
            elif action == "commit":
                assert commit is not None
                self._commits.check_begin(commit.id)
                seconds = rollback_seconds(commit)
                before = copy.deepcopy(self._config)
                self._apply(operations)
                self._commits.begin(commit.id, before, seconds)
            else:
                assert commit is not None
                self._settle(commit, action, operations)
            stamp = self.timestamp_ns()
        return gnmi_pb2.SetResponse(
            prefix=_reflected(request), timestamp=stamp,
            response=[gnmi_pb2.UpdateResult(timestamp=stamp, path=operation.path,
                                            op=operation.op)
                      for operation in operations])

    def _commit_extension(self, request: gnmi_pb2.SetRequest) -> gnmi_ext_pb2.Commit | None:
        commits = [extension.commit for extension in request.extension
                   if extension.WhichOneof("ext") == "commit"]
        if not commits:
            return None
        if not self.commit_confirmed:
            raise GnmiError("UNIMPLEMENTED", "this target does not offer the commit "
                                             "confirmed extension")
        if len(commits) > 1:
            raise GnmiError("INVALID_ARGUMENT", "a SetRequest carries one commit extension")
        commit = commits[0]
        if not commit.id:
            raise GnmiError("INVALID_ARGUMENT", "a commit extension needs an id")
        if commit.WhichOneof("action") is None:
            raise GnmiError("INVALID_ARGUMENT", f"commit {commit.id!r} names no action")
        return commit

    def _settle(self, commit: gnmi_ext_pb2.Commit, action: str | None,
                operations: list[_Operation]) -> None:
        """confirm, cancel or set_rollback_duration of the waiting commit."""
        if operations:
            raise GnmiError("INVALID_ARGUMENT", f"a commit {action} carries no operations")
        pending = self._commits.ongoing(commit.id)
        if action == "confirm":
            self._commits.finish()
        elif action == "cancel":
            self._commit_tree(copy.deepcopy(pending.before))
            self._commits.finish()
        else:
            self._commits.restart(commit.id, rollback_seconds(commit))

    def _operations(self, request: gnmi_pb2.SetRequest) -> list[_Operation]:
        operations = []
        for path in request.delete:
            elems, _ = self.resolve(request.prefix, path)
            operations.append(_Operation(_Op.DELETE, path, elems))
        for op, updates in ((_Op.REPLACE, request.replace), (_Op.UPDATE, request.update)):
            for update in updates:
                elems, shown = self.resolve(request.prefix, update.path)
                where = format_path(shown)
                value = _value(update, where)
                scalar = getattr(self.face, "scalar", None)
                if scalar is not None and update.HasField("val") and \
                        update.val.WhichOneof("value") in SCALAR_KINDS:
                    value = scalar(where, value)
                operations.append(_Operation(op, update.path, elems, value))
        return operations

    def _apply(self, operations: list[_Operation]) -> None:
        """Carry out the operations on a copy of the configuration and commit it whole."""
        if not operations:
            return
        candidate = copy.deepcopy(self._config)
        top_names = list(self._factory)
        for operation in operations:
            if operation.op == _Op.DELETE:
                trees.delete(candidate, operation.elems)
            elif operation.op == _Op.REPLACE:
                trees.replace(candidate, operation.elems, operation.value, top_names=top_names)
            else:
                trees.update(candidate, operation.elems, operation.value, top_names=top_names)
        for top in sorted(set(candidate) | set(self._config)):
            if candidate.get(top) != self._config.get(top) and not self.face.writable(top):
                raise GnmiError("INVALID_ARGUMENT", f"/{top} is read-only on this target")
        self._commit_tree(candidate)

    def _commit_tree(self, candidate: Tree) -> None:
        """The face commits ``candidate``, which becomes the configuration (lock held)."""
        try:
            self.face.commit(copy.deepcopy(candidate))
        except FaceError as error:
            raise GnmiError(error.code, str(error)) from error
        self._config = candidate
        self._wake_streams()

    def _roll_back(self, before: Tree) -> None:
        """A waiting commit's deadline passed (lock held)."""
        try:
            self._commit_tree(copy.deepcopy(before))
        except GnmiError as error:
            log.error("%s: the rollback was refused: %s", self.name, error.message)

    # ---- Subscribe ------------------------------------------------------------------------

    def subscription(self, request: gnmi_pb2.SubscribeRequest) -> SubscriptionCall:
        self.expire_due()
        if request.WhichOneof("request") != "subscribe":
            raise GnmiError("INVALID_ARGUMENT", "a Subscribe call begins with a "
                                                "SubscriptionList (gNMI 3.5.1.1)")
        return SubscriptionCall(self, request.subscribe, encodings=self._encodings)

    def _register_stream(self, call: _Call) -> None:
        with self._streams_lock:
            self._streams.add(call)

    def _unregister_stream(self, call: _Call) -> None:
        with self._streams_lock:
            self._streams.discard(call)

    def _wake_streams(self) -> None:
        """Wake every open stream (from any thread)."""
        with self._streams_lock:
            calls = list(self._streams)
        for call in calls:
            call.notify()

    # ---- authentication and faults ----------------------------------------------------------

    def authenticate(self, context: grpc.aio.ServicerContext) -> None:
        if not self._users:
            return
        metadata = {item[0]: item[1] for item in context.invocation_metadata() or ()}
        username, password = metadata.get("username"), metadata.get("password")
        expected = self._users.get(username) if isinstance(username, str) else None
        if expected is None or not isinstance(password, str) or not hmac.compare_digest(
                expected.encode("utf-8"), password.encode("utf-8")):
            raise GnmiError("UNAUTHENTICATED", "username and password metadata required "
                                               "and matching a user of this target")

    def stopping(self) -> bool:
        return self._stopping.is_set()


class _Call:
    """One RPC's side of the faults: waits that end when the call or the server does."""

    def __init__(self, server: GnmiServer, context: grpc.aio.ServicerContext):
        self.server = server
        self.context = context
        self.wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._ended = False
        context.add_done_callback(self._end)

    def _end(self, _context: Any) -> None:
        self._ended = True
        self.wake.set()

    def notify(self) -> None:
        """Set :attr:`wake` from any thread (nothing if the loop has closed)."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self.wake.set)

    def over(self) -> bool:
        return self._ended or self.server.stopping() or self.context.done()

    async def pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self.over() and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, _POLL_SECONDS))

    async def hold_while_frozen(self) -> None:
        while self.server.faults.is_active("freeze") and not self.over():
            await asyncio.sleep(_POLL_SECONDS)

    async def silence(self) -> None:
        """Answer nothing: wait for the client to give up (or the server to stop)."""
        while not self.over():
            await asyncio.sleep(_POLL_SECONDS)

    async def abort(self, error: GnmiError) -> NoReturn:
        code = getattr(grpc.StatusCode, error.code, grpc.StatusCode.UNKNOWN)
        await self.context.abort(code, error.message)
        raise AssertionError("grpc's abort raises")

    async def before(self) -> bool:
        """The faults that keep a request from being carried out (a freeze held, a drop:
        ``False``, a reset: aborted); a reply is held to them as well (:meth:`after`)."""
        faults = self.server.faults
        await self.hold_while_frozen()
        if self.over():
            return False
        if faults.consume("drop") is not None:
            await self.silence()
            return False
        if faults.consume("reset") is not None:
            await self.abort(GnmiError("UNAVAILABLE", "connection reset (injected fault)"))
        return True

    async def after(self) -> bool:
        """The faults of one reply; ``False``: the reply is not sent."""
        faults = self.server.faults
        latency = faults.consume("latency")
        if latency is not None and latency.seconds:
            await self.pause(latency.seconds)
        if not await self.before():
            return False
        if faults.consume("garbage") is not None or faults.consume("truncate") is not None:
            await self.abort(GnmiError("INTERNAL", "garbled reply (injected fault)"))
        return True


class _Servicer(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    """gRPC's entry points: authentication, faults and errors around the server's work."""

    def __init__(self, server: GnmiServer):
        self._server = server

    async def _unary(self, context: grpc.aio.ServicerContext, work: Callable[[], T]) -> T:
        call = _Call(self._server, context)
        if not await call.before():
            await call.abort(_UNANSWERED)  # reaches no client: it has gone (or the server stops)
        try:
            self._server.authenticate(context)
            reply: T = await self._server.work(self._expired_then, work)
        except GnmiError as error:
            await call.abort(error)
        if not await call.after():
            await call.abort(_UNANSWERED)
        return reply

    def _expired_then(self, work: Callable[[], T]) -> T:
        self._server.expire_due()
        return work()

    async def Capabilities(self, request: gnmi_pb2.CapabilityRequest,
                           context: grpc.aio.ServicerContext) -> gnmi_pb2.CapabilityResponse:
        return await self._unary(context, lambda: self._server.capabilities(request))

    async def Get(self, request: gnmi_pb2.GetRequest,
                  context: grpc.aio.ServicerContext) -> gnmi_pb2.GetResponse:
        return await self._unary(context, lambda: self._server.get(request))

    async def Set(self, request: gnmi_pb2.SetRequest,
                  context: grpc.aio.ServicerContext) -> gnmi_pb2.SetResponse:
        return await self._unary(context, lambda: self._server.set(request))

    async def Subscribe(self, request_iterator: AsyncIterator[gnmi_pb2.SubscribeRequest],
                        context: grpc.aio.ServicerContext
                        ) -> AsyncIterator[gnmi_pb2.SubscribeResponse]:
        server = self._server
        call = _Call(server, context)
        server._register_stream(call)
        try:
            first = await _first_request(request_iterator)
            if first is None or not await call.before():
                return
            try:
                server.authenticate(context)
                subscription = await server.work(server.subscription, first)
                responses = subscription.run(request_iterator, ended=call.over,
                                             wake=call.wake, work=server.work)
                async with contextlib.aclosing(responses):
                    async for response in responses:
                        if not await call.after():
                            return
                        response, stop = streamfaults.spoiled(response, server.faults)
                        yield response
                        if stop:
                            await call.abort(GnmiError("UNAVAILABLE", "the stream stopped "
                                                                      "(injected fault)"))
            except GnmiError as error:
                await call.abort(error)
        finally:
            server._unregister_stream(call)


async def _first_request(requests: AsyncIterator[gnmi_pb2.SubscribeRequest]
                         ) -> gnmi_pb2.SubscribeRequest | None:
    """A Subscribe call's first request; None if the client closed its side first."""
    try:
        return await anext(aiter(requests), None)
    except grpc.RpcError:
        return None


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _work_pool() -> ThreadPoolExecutor:
    """The process's pool for the servers' work (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORK_THREADS, thread_name_prefix="gnmi-work")
        return _pool


def _forget_pool() -> None:
    """A forked child has none of its parent's threads: it makes its own pool."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


SCALAR_KINDS = frozenset({"string_val", "int_val", "uint_val", "bool_val", "double_val",
                          "float_val", "decimal_val"})
"""TypedValue kinds a face may want to put in its own JSON form (Face.scalar)."""


def _value(update: gnmi_pb2.Update, where: str) -> Any:
    if update.HasField("val"):
        return decoded(update.val, where)
    if update.HasField("value"):  # the deprecated Value message
        if update.value.type not in (gnmi_pb2.JSON, gnmi_pb2.JSON_IETF):
            raise GnmiError("UNIMPLEMENTED", f"{where}: a value of type "
                            f"{encoding_name(update.value.type)} is not implemented")
        return decoded(gnmi_pb2.TypedValue(json_val=update.value.value), where)
    raise GnmiError("INVALID_ARGUMENT", f"{where}: the update carries no value")



def _reflected(request: Any) -> gnmi_pb2.Path | None:
    """The request's prefix, for its response (none when it had none: gNMI 2.2.2.1)."""
    return request.prefix if request.HasField("prefix") else None
