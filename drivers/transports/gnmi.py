"""A gNMI client (gNMI 0.10): Capabilities, Get, Set with the Commit extension, and
Subscribe ONCE, POLL and STREAM, over grpcio's blocking stubs.

One :class:`GnmiClient` is one gRPC channel to one target (an OpenConfig or SONiC
switch); use it as a context manager. Building it checks the target and reads the TLS
files; it does not connect: the first RPC does.

Paths are path strings (:mod:`drivers.transports.gnmi_path`). ``origin`` and ``target``
go into the request's prefix (``GetRequest.prefix``, ``SetRequest.prefix``,
``SubscriptionList.prefix``), never into the paths, so they hold for every path of the
request. Values read are decoded from every ``TypedValue`` kind (:func:`decode_value`);
values set are JSON, sent JSON_IETF (``json_ietf_val``). A notification comes back
flattened (:class:`Notification`): full path strings, decoded values, as the target
sent them (a JSON_IETF container may or may not be wrapped in its module-qualified
name: that is the target's choice, not normalised here).

Time: every unary RPC has the deadline ``timeout_seconds``. A subscription has none (it
may last), but every wait for one of its responses is bounded by ``timeout_seconds``: a
thread reads the call and the caller waits on a queue, so nothing waits forever.

Errors (:mod:`drivers.errors`); every message names the operation and ``host:port``,
``device`` is the target's name, and no ``grpc.RpcError`` or protobuf error escapes:

- UNAVAILABLE (nothing listens, TLS handshake failed, connection lost):
  :class:`DeviceUnreachable`; DEADLINE_EXCEEDED or a wait past the timeout:
  :class:`DeviceTimeout`;
- UNAUTHENTICATED, PERMISSION_DENIED: :class:`DeviceRejected`;
- INVALID_ARGUMENT, FAILED_PRECONDITION, NOT_FOUND, ABORTED, ALREADY_EXISTS,
  OUT_OF_RANGE, RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN: :class:`GnmiRejected`, with the
  code's name and the server's whole text;
- UNIMPLEMENTED (a target without Subscribe POLL, say): :class:`Unsupported`;
- a reply that cannot be decoded: :class:`ProtocolError`;
- bad arguments, unreadable TLS files: :class:`ValidationError`, before anything is sent.

Security: TLS unless ``insecure`` (plaintext, for labs; logged as a warning). The
username and password go as call metadata on every RPC, as gNMI targets expect them.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc
from google.protobuf import duration_pb2

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    Unsupported,
    ValidationError,
)
from drivers.transports.gnmi_path import format_path, parse_path

log = logging.getLogger(__name__)

GNMI_PORT = 9339
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest reply taken. grpc's default, 4 MiB, is less than the whole configuration
of a large switch in JSON_IETF."""
DETAILS_SHOWN = 500
"""How much of a server's error text goes into a message (all of it stays in ``details``)."""
DATA_TYPES = ("ALL", "CONFIG", "STATE", "OPERATIONAL")
ENCODINGS = ("JSON", "BYTES", "PROTO", "ASCII", "JSON_IETF")
STREAM_MODES = ("TARGET_DEFINED", "ON_CHANGE", "SAMPLE")
MAX_DECIMAL_PRECISION = 18
"""YANG's decimal64 has 1 to 18 fraction digits; a larger precision is refused rather
than computed (10 ** 4294967295 would take the process with it)."""
COMMIT_ACTIONS = ("commit", "confirm", "cancel", "set-rollback-duration")
REFUSALS = frozenset({"INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "ABORTED",
                      "ALREADY_EXISTS", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED", "INTERNAL",
                      "UNKNOWN"})
"""The status codes by which a target refuses what was asked: :class:`GnmiRejected`."""
_STATUS_NAMES = {code.value[0]: code.name for code in grpc.StatusCode}
_ENCODING_NAMES = {number: name for name, number in gnmi_pb2.Encoding.items()}


@dataclass(frozen=True)
class GnmiTarget:
    """Where a gNMI server is, how to trust it and log in to it."""

    name: str  # the inventory's device name, for errors
    host: str
    port: int = GNMI_PORT
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    insecure: bool = False  # plaintext, no TLS: labs only
    ca_file: Path | None = None  # PEM roots; None: the system's
    cert_file: Path | None = None  # client certificate (mutual TLS), with key_file
    key_file: Path | None = None
    server_name: str | None = None  # the name the server's certificate must carry
    timeout_seconds: float = 10.0  # each unary RPC; each wait of a subscription

    @property
    def where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class ModelData:
    name: str
    organization: str
    version: str


@dataclass(frozen=True)
class GnmiCapabilities:
    models: tuple[ModelData, ...]
    encodings: tuple[str, ...]  # "JSON_IETF", "JSON", ...; an unknown one as its number
    gnmi_version: str
    commit_confirmed: bool  # the target announces the Commit extension

    def has_model(self, name: str) -> bool:
        return any(model.name == name for model in self.models)


@dataclass(frozen=True)
class Notification:
    """One gNMI Notification, flattened."""

    timestamp_ns: int
    prefix: str  # "" when there is none
    updates: tuple[tuple[str, Any], ...]  # (prefix + the update's path, decoded value)
    deletes: tuple[str, ...]  # prefix + each deleted path


@dataclass(frozen=True)
class CommitAction:
    """The Commit extension (gnmi_ext.Commit) of a SetRequest: ``commit`` starts a
    confirmed commit that the target rolls back unless ``confirm`` comes within the
    rollback duration (the target's default when ``rollback_seconds`` is None);
    ``cancel`` rolls it back now; ``set-rollback-duration`` changes the duration of the
    pending one. ``id`` names the commit in all four."""

    id: str
    action: str  # one of COMMIT_ACTIONS
    rollback_seconds: float | None = None  # commit and set-rollback-duration only


@dataclass(frozen=True)
class StreamPath:
    """One Subscription of a STREAM with its own mode (:meth:`GnmiClient.subscribe_paths`):
    ``mode`` one of :data:`STREAM_MODES`, ``sample_interval_seconds`` for SAMPLE (and
    TARGET_DEFINED, where it may be None)."""

    path: str
    mode: str = "SAMPLE"
    sample_interval_seconds: float | None = None


class GnmiRejected(DeviceRejected):
    """The target refused the request: ``code`` is the gRPC status code's name
    (``INVALID_ARGUMENT``, ...), ``details`` the server's whole text."""

    def __init__(self, message: str, *, code: str, details: str, device: str | None = None):
        super().__init__(message, device=device, errors=(details,) if details else ())
        self.code = code
        self.details = details


def capabilities_of(reply: Any) -> GnmiCapabilities:
    """A CapabilityResponse as :class:`GnmiCapabilities`."""
    return GnmiCapabilities(
        models=tuple(ModelData(str(model.name), str(model.organization), str(model.version))
                     for model in reply.supported_models),
        encodings=tuple(_ENCODING_NAMES.get(number, str(number))
                        for number in reply.supported_encodings),
        gnmi_version=str(reply.gNMI_version),
        commit_confirmed=any(extension.WhichOneof("ext") == "commit"
                             for extension in reply.extension),
    )


class GnmiClient:
    """A gNMI client of one target; see the module's docstring."""

    def __init__(self, target: GnmiTarget) -> None:
        self.target = target
        self.name = target.name
        self._check_target()
        self._metadata = self._call_metadata()
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            # grpc would otherwise go through $https_proxy / $grpc_proxy; a switch's
            # management address is reached directly, as the NETCONF driver does.
            ("grpc.enable_http_proxy", 0),
        ]
        self._credentials: Any = None
        if target.insecure:
            log.warning("%s: gNMI to %s in plaintext, without TLS (insecure: for labs only)%s",
                        self.name, target.where,
                        "; the password goes in clear" if target.password else "")
            self._channel: Any = grpc.insecure_channel(target.where, options=options)
        else:
            self._credentials = self._tls_credentials()
            if target.server_name:
                options.append(("grpc.ssl_target_name_override", target.server_name))
            self._channel = grpc.secure_channel(target.where, self._credentials,
                                                options=options)
        self._options = tuple(options)
        self._stub: Any = gnmi_pb2_grpc.gNMIStub(self._channel)
        self._closed = False
        self._subscriptions: weakref.WeakSet[_Subscription] = weakref.WeakSet()

    def close(self) -> None:
        """Cancel every open subscription and close the channel."""
        if self._closed:
            return
        self._closed = True
        for subscription in list(self._subscriptions):
            subscription.close()
        self._channel.close()

    def __enter__(self) -> GnmiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the four RPCs ----------------------------------------------------------------

    def capabilities(self) -> GnmiCapabilities:
        """What the target supports: models, encodings, gNMI version, Commit extension."""
        reply = self._unary("Capabilities", self._stub.Capabilities,
                            gnmi_pb2.CapabilityRequest())
        return capabilities_of(reply)

    # ---- an asyncio channel to the same target (drivers.transports.gnmi_aio) ----------

    def aio_channel(self) -> Any:
        """A ``grpc.aio`` channel to the target with this client's credentials and
        options, for calls that live on an event loop; the caller closes it."""
        if self._credentials is None:
            return grpc.aio.insecure_channel(self.target.where, options=self._options)
        return grpc.aio.secure_channel(self.target.where, self._credentials,
                                       options=self._options)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The call metadata every RPC carries (username and password)."""
        return self._metadata

    def rpc_error(self, operation: str, error: BaseException) -> DeviceError:
        """The :mod:`drivers.errors` exception for a failed call of ``operation``."""
        return self._rpc_error(operation, error)

    def response_error(self, operation: str, error: Any) -> DeviceError:
        """The exception for a SubscribeResponse's ``error``."""
        return self._reply_error(operation, error)

    # ---- the four RPCs, continued -------------------------------------------------------

    def get(self, paths: Sequence[str], *, data_type: str = "ALL",
            encoding: str = "JSON_IETF", origin: str | None = None,
            target: str | None = None) -> list[Notification]:
        """The notifications of one GetRequest of ``paths``. ``data_type`` is one of
        :data:`DATA_TYPES`, ``encoding`` one of :data:`ENCODINGS`."""
        reply = self._get_reply(paths, data_type, encoding, origin, target)
        return self._flatten("Get", reply.notification)

    def _get_reply(self, paths: Sequence[str], data_type: str, encoding: str,
                   origin: str | None, target: str | None) -> Any:
        """The GetResponse of ``paths``; its error, if it has one, raised."""
        request = gnmi_pb2.GetRequest(
            path=self._paths(paths), type=self._choice("data type", data_type, DATA_TYPES),
            encoding=self._choice("encoding", encoding, ENCODINGS))
        self._set_prefix(request, origin, target)
        reply = self._unary("Get", self._stub.Get, request)
        if reply.HasField("error") and reply.error.code:
            raise self._reply_error("Get", reply.error)
        return reply

    def get_json(self, path: str, *, data_type: str = "ALL", encoding: str = "JSON_IETF",
                 origin: str | None = None, target: str | None = None) -> Any:
        """The one value at ``path``, decoded; None when the reply has none.
        :class:`ProtocolError` when it has several (updates of parts of it)."""
        notifications = self.get([path], data_type=data_type, encoding=encoding,
                                 origin=origin, target=target)
        values = [value for notification in notifications for _, value in notification.updates]
        if len(values) > 1:
            raise ProtocolError(f"gNMI Get of {path}: {self.target.where} sent {len(values)} "
                                "values, not one", device=self.name)
        return values[0] if values else None

    def set(self, *, delete: Sequence[str] = (), replace: Sequence[tuple[str, Any]] = (),
            update: Sequence[tuple[str, Any]] = (), origin: str | None = None,
            target: str | None = None, commit: CommitAction | None = None) -> int:
        """One SetRequest, one transaction: deletes, then replaces, then updates (the
        order gNMI applies them in). Values are JSON-encodable Python values, sent
        JSON_IETF. Returns the response's timestamp (ns since the epoch)."""
        if not (delete or replace or update or commit):
            raise self._invalid("gNMI Set: nothing to delete, replace or update, and no commit")
        request = gnmi_pb2.SetRequest(
            delete=self._paths(delete, required=False),
            replace=[self._update(path, value) for path, value in self._pairs(replace)],
            update=[self._update(path, value) for path, value in self._pairs(update)])
        if commit is not None:
            request.extension.append(self._commit_extension(commit))
        self._set_prefix(request, origin, target)
        reply = self._unary("Set", self._stub.Set, request)
        if reply.HasField("message") and reply.message.code:
            raise self._reply_error("Set", reply.message)
        return int(reply.timestamp)

    def subscribe_once(self, paths: Sequence[str], *, encoding: str = "JSON_IETF",
                       origin: str | None = None,
                       target: str | None = None) -> list[Notification]:
        """Subscribe ONCE: the notifications up to the target's sync_response (or the end
        of the call)."""
        subscription = self._subscribe("Subscribe ONCE", paths, "ONCE", encoding=encoding,
                                       origin=origin, target=target)
        try:
            return subscription.until_sync(end_ok=True)
        finally:
            subscription.close()

    def subscribe_poll(self, paths: Sequence[str], *, encoding: str = "JSON_IETF",
                       origin: str | None = None, target: str | None = None) -> Poller:
        """Subscribe POLL. The target's first full update (up to its sync_response) is
        read before this returns, into :attr:`Poller.initial`; each
        :meth:`Poller.poll` then asks for and reads one more."""
        subscription = self._subscribe("Subscribe POLL", paths, "POLL", encoding=encoding,
                                       origin=origin, target=target)
        return Poller(subscription)

    def subscribe_stream(self, paths: Sequence[str], *, mode: str = "SAMPLE",
                         sample_interval_seconds: float = 10.0,
                         suppress_redundant: bool = False, updates_only: bool = False,
                         encoding: str = "JSON_IETF", origin: str | None = None,
                         target: str | None = None) -> Stream:
        """Subscribe STREAM, each path with ``mode`` (one of :data:`STREAM_MODES`);
        ``sample_interval_seconds`` is sent for SAMPLE and TARGET_DEFINED. Returns at
        once: a refusal shows at the first ``next()``."""
        mode = self._choice("stream mode", mode, STREAM_MODES)
        interval_ns = 0
        if mode != "ON_CHANGE":
            if not (math.isfinite(sample_interval_seconds) and sample_interval_seconds > 0):
                raise self._invalid("gNMI Subscribe: the sample interval is a positive "
                                    f"number of seconds, not {sample_interval_seconds!r}")
            interval_ns = round(sample_interval_seconds * 1e9)
        subscription = self._subscribe(
            f"Subscribe STREAM {mode}", paths, "STREAM", encoding=encoding, origin=origin,
            target=target, updates_only=updates_only,
            each={"mode": mode, "sample_interval": interval_ns,
                  "suppress_redundant": suppress_redundant})
        return Stream(subscription)

    def get_notifications(self, paths: Sequence[str], *, data_type: str = "ALL",
                          encoding: str = "JSON_IETF", origin: str | None = None,
                          target: str | None = None) -> list[Any]:
        """:meth:`get`'s notifications as the target sent them (``gnmi_pb2.Notification``,
        values not decoded): for a reader that judges each value on its own, so that one
        bad value does not cost the others."""
        reply = self._get_reply(paths, data_type, encoding, origin, target)
        return list(reply.notification)

    def subscribe_paths(self, paths: Sequence[StreamPath], *, updates_only: bool = False,
                        encoding: str = "JSON_IETF", origin: str | None = None,
                        target: str | None = None) -> Stream:
        """Subscribe STREAM, each path with its own mode and interval. The stream yields
        the notifications as the target sent them (``gnmi_pb2.Notification``, values not
        decoded, as :meth:`get_notifications`); :meth:`Stream.close` cancels it, from any
        thread (a ``next()`` waiting in another ends with StopIteration)."""
        request = self.stream_request(paths, updates_only=updates_only, encoding=encoding,
                                      origin=origin, target=target)
        operation = "Subscribe STREAM"
        self._check_open(operation)
        subscription = _Subscription(self, operation, request)
        self._subscriptions.add(subscription)
        return Stream(subscription, raw=True)

    def stream_request(self, paths: Sequence[StreamPath], *, updates_only: bool = False,
                       encoding: str = "JSON_IETF", origin: str | None = None,
                       target: str | None = None) -> Any:
        """The SubscribeRequest of a STREAM of ``paths`` (each with its own mode and
        interval), as :meth:`subscribe_paths` and :mod:`.gnmi_aio` send it;
        :class:`ValidationError` for a path, mode or interval that cannot be sent."""
        if not paths:
            raise self._invalid("gNMI Subscribe: no path given")
        subscriptions = []
        for wanted in paths:
            mode = self._choice("stream mode", wanted.mode, STREAM_MODES)
            seconds = wanted.sample_interval_seconds
            if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
                raise self._invalid("gNMI Subscribe: the sample interval is a positive "
                                    f"number of seconds, not {seconds!r}")
            interval = 0 if mode == "ON_CHANGE" or seconds is None else round(seconds * 1e9)
            subscriptions.append(gnmi_pb2.Subscription(path=self._paths([wanted.path])[0],
                                                       mode=mode, sample_interval=interval))
        request = gnmi_pb2.SubscriptionList(
            subscription=subscriptions, mode="STREAM", updates_only=updates_only,
            encoding=self._choice("encoding", encoding, ENCODINGS))
        self._set_prefix(request, origin, target)
        return gnmi_pb2.SubscribeRequest(subscribe=request)

    # ---- calls ------------------------------------------------------------------------

    def _unary(self, operation: str, method: Any, request: Any) -> Any:
        self._check_open(operation)
        try:
            return method(request, timeout=self.target.timeout_seconds,
                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._rpc_error(operation, error) from None

    def _subscribe(self, operation: str, paths: Sequence[str], list_mode: str, *,
                   encoding: str, origin: str | None, target: str | None,
                   updates_only: bool = False,
                   each: dict[str, Any] | None = None) -> _Subscription:
        subscriptions = [gnmi_pb2.Subscription(path=path, **(each or {}))
                         for path in self._paths(paths)]
        wanted = gnmi_pb2.SubscriptionList(
            subscription=subscriptions, mode=list_mode, updates_only=updates_only,
            encoding=self._choice("encoding", encoding, ENCODINGS))
        self._set_prefix(wanted, origin, target)
        self._check_open(operation)
        subscription = _Subscription(self, operation, gnmi_pb2.SubscribeRequest(subscribe=wanted))
        self._subscriptions.add(subscription)
        return subscription

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise DeviceUnreachable(f"gNMI {operation}: the client of {self.target.where} "
                                    "is closed", device=self.name)

    def _rpc_error(self, operation: str, error: BaseException) -> DeviceError:
        """The :mod:`drivers.errors` exception for a failed call (see the module's
        docstring); a call that failed without a status is a :class:`ProtocolError`."""
        code_of = getattr(error, "code", None)
        status = code_of() if callable(code_of) else None
        code = str(getattr(status, "name", status))
        details_of = getattr(error, "details", None)
        details = str((details_of() if callable(details_of) else None) or "")
        if status is None:
            details = details or repr(error)
        where = self.target.where
        shown = _bounded(details) or "no detail given"
        head = f"gNMI {operation}"
        user = f" (user {self.target.username!r})" if self.target.username else ""
        if code == "UNAVAILABLE":
            return DeviceUnreachable(f"{head}: cannot reach {where}: {shown}",
                                     device=self.name, detail=details)
        if code == "DEADLINE_EXCEEDED":
            return DeviceTimeout(f"{head}: no reply from {where} within "
                                 f"{self.target.timeout_seconds:g} s", device=self.name)
        if code == "UNAUTHENTICATED":
            return DeviceRejected(f"{head}: {where} refused the authentication{user}: {shown}",
                                  device=self.name, detail=details)
        if code == "PERMISSION_DENIED":
            return DeviceRejected(f"{head}: {where} denied permission{user}: {shown}",
                                  device=self.name, detail=details)
        if code == "UNIMPLEMENTED":
            return Unsupported(f"{head}: {where} does not support it: {shown}",
                               device=self.name, detail=details)
        if code in REFUSALS:
            return GnmiRejected(f"{head}: {where} refused it ({code}): {shown}", code=code,
                                details=details, device=self.name)
        if code == "CANCELLED":
            return DeviceUnreachable(f"{head}: the call to {where} was cancelled: {shown}",
                                     device=self.name, detail=details)
        return ProtocolError(f"{head}: {where} failed the call ({code}): {shown}",
                             device=self.name, detail=details)

    def _reply_error(self, operation: str, error: Any) -> GnmiRejected:
        """The deprecated ``Error`` message some targets put in a reply instead of a status."""
        code = _STATUS_NAMES.get(int(error.code), str(error.code))
        details = str(error.message)
        return GnmiRejected(f"gNMI {operation}: {self.target.where} refused it ({code}): "
                            f"{_bounded(details) or 'no detail given'}",
                            code=code, details=details, device=self.name)

    # ---- requests and replies -----------------------------------------------------------

    def _paths(self, paths: Sequence[str], *, required: bool = True) -> list[Any]:
        if isinstance(paths, str):
            raise self._invalid(f"gNMI: a list of paths, not one string ({paths!r})")
        if required and not paths:
            raise self._invalid("gNMI: no path given")
        try:
            return [parse_path(path) for path in paths]
        except ValidationError as error:
            raise self._invalid(error.message) from None

    def _pairs(self, pairs: Sequence[tuple[str, Any]]) -> Sequence[tuple[str, Any]]:
        if isinstance(pairs, str) or not all(isinstance(pair, tuple) and len(pair) == 2
                                             for pair in pairs):
            raise self._invalid("gNMI Set: replace and update are (path, value) pairs")
        return pairs

    def _update(self, path: str, value: Any) -> Any:
        try:
            encoded = json.dumps(value, allow_nan=False).encode()
        except (TypeError, ValueError) as error:
            raise self._invalid(f"gNMI Set of {path}: the value is not JSON: {error}") from None
        return gnmi_pb2.Update(path=self._paths([path])[0],
                               val=gnmi_pb2.TypedValue(json_ietf_val=encoded))

    def _commit_extension(self, commit: CommitAction) -> Any:
        if commit.action not in COMMIT_ACTIONS:
            raise self._invalid(f"gNMI Set: commit action {commit.action!r} is none of "
                                f"{', '.join(COMMIT_ACTIONS)}")
        if not commit.id:
            raise self._invalid("gNMI Set: a commit needs an id")
        duration = None
        if commit.rollback_seconds is not None:
            seconds = commit.rollback_seconds
            if commit.action not in ("commit", "set-rollback-duration"):
                raise self._invalid(f"gNMI Set: a {commit.action} has no rollback duration")
            if not (math.isfinite(seconds) and seconds > 0):
                raise self._invalid("gNMI Set: the rollback duration is a positive number "
                                    f"of seconds, not {seconds!r}")
            duration = duration_pb2.Duration()
            duration.FromNanoseconds(round(seconds * 1e9))
        elif commit.action == "set-rollback-duration":
            raise self._invalid("gNMI Set: set-rollback-duration needs rollback_seconds")
        ext = gnmi_ext_pb2
        if commit.action == "commit":
            found = ext.Commit(id=commit.id, commit=ext.CommitRequest(rollback_duration=duration))
        elif commit.action == "confirm":
            found = ext.Commit(id=commit.id, confirm=ext.CommitConfirm())
        elif commit.action == "cancel":
            found = ext.Commit(id=commit.id, cancel=ext.CommitCancel())
        else:
            found = ext.Commit(id=commit.id, set_rollback_duration=ext.CommitSetRollbackDuration(
                rollback_duration=duration))
        return ext.Extension(commit=found)

    def _set_prefix(self, message: Any, origin: str | None, target: str | None) -> None:
        if origin or target:
            message.prefix.CopyFrom(gnmi_pb2.Path(origin=origin or "", target=target or ""))

    def _choice(self, what: str, given: str, names: tuple[str, ...]) -> str:
        if given not in names:
            raise self._invalid(f"gNMI: {what} {given!r} is none of {', '.join(names)}")
        return given

    def _flatten(self, operation: str, notifications: Any) -> list[Notification]:
        try:
            return [flatten(notification) for notification in notifications]
        except ProtocolError as error:
            raise ProtocolError(f"gNMI {operation}: the reply of {self.target.where}: "
                                f"{error.message}", device=self.name) from None

    # ---- the target's settings ----------------------------------------------------------

    def _invalid(self, message: str) -> ValidationError:
        return ValidationError(message, device=self.name)

    def _check_target(self) -> None:
        target = self.target
        if not target.host:
            raise self._invalid("gNMI: the target has no host")
        if not 0 < target.port < 65536:
            raise self._invalid(f"gNMI: port {target.port} is not a TCP port")
        if not (math.isfinite(target.timeout_seconds) and target.timeout_seconds > 0):
            raise self._invalid(f"gNMI: the timeout is a positive number of seconds, not "
                                f"{target.timeout_seconds!r}")
        if (target.cert_file is None) != (target.key_file is None):
            raise self._invalid("gNMI: a client certificate needs both cert_file and key_file")
        tls = [name for name in ("ca_file", "cert_file", "key_file", "server_name")
               if getattr(target, name)]
        if target.insecure and tls:
            raise self._invalid(f"gNMI: insecure (no TLS) with {', '.join(tls)}: choose one")

    def _call_metadata(self) -> tuple[tuple[str, str], ...]:
        found = []
        for key in ("username", "password"):
            value = getattr(self.target, key)
            if value is None:
                continue
            # gRPC carries a text header as printable ASCII only
            if not (value.isascii() and value.isprintable()):
                raise self._invalid(f"gNMI: the {key} must be printable ASCII (gRPC metadata)")
            found.append((key, value))
        return tuple(found)

    def _tls_credentials(self) -> Any:
        target = self.target
        return grpc.ssl_channel_credentials(
            root_certificates=self._pem("CA file", target.ca_file),
            private_key=self._pem("key file", target.key_file),
            certificate_chain=self._pem("certificate file", target.cert_file))

    def _pem(self, what: str, path: Path | None) -> bytes | None:
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError as error:
            raise self._invalid(f"gNMI TLS {what} {path}: cannot read it "
                                f"({error.strerror or error})") from None
        if b"-----BEGIN " not in data:
            raise self._invalid(f"gNMI TLS {what} {path}: not PEM")
        return data


class Poller:
    """A Subscribe POLL call: :attr:`initial` is the target's first full update, each
    :meth:`poll` one more. Any error closes it (what the target sends next is unknown)."""

    def __init__(self, subscription: _Subscription):
        self._subscription = subscription
        self.initial: list[Notification] = self._read()

    def poll(self) -> list[Notification]:
        """Send a Poll; the notifications up to the next sync_response."""
        self._subscription.check_open()
        self._subscription.send(gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll()))
        return self._read()

    def _read(self) -> list[Notification]:
        try:
            return self._subscription.until_sync(end_ok=False)
        except DeviceError:
            self.close()
            raise

    def close(self) -> None:
        """Cancel the call."""
        self._subscription.close()

    def __enter__(self) -> Poller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Stream(Iterator[Notification]):
    """A Subscribe STREAM call, an iterator of notifications (flattened; the
    ``gnmi_pb2.Notification`` messages themselves for :meth:`GnmiClient.subscribe_paths`).
    :attr:`synced` turns True at the target's sync_response (the initial state is
    complete). Each ``next()`` waits at most ``timeout_seconds``, else
    :class:`DeviceTimeout`; the stream stays open then and may be read on. Iteration
    ends when the target ends the call or after :meth:`close`."""

    def __init__(self, subscription: _Subscription, *, raw: bool = False):
        self._subscription = subscription
        self._raw = raw
        self.synced = False

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> Notification:
        subscription = self._subscription
        deadline = time.monotonic() + subscription.timeout_seconds
        while True:
            if subscription.closed:
                raise StopIteration
            response = subscription.next_response(deadline)
            if response is None:
                raise StopIteration
            kind = response.WhichOneof("response")
            if kind == "update":
                if self._raw:
                    return response.update  # type: ignore[no-any-return]
                return subscription.flatten(response.update)
            if kind == "sync_response":
                self.synced = self.synced or bool(response.sync_response)
            elif kind == "error":
                raise subscription.reply_error(response.error)

    def close(self) -> None:
        """Cancel the call."""
        self._subscription.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class _Ended:
    """The call is over: ``error`` is None when the target ended it with OK."""

    error: BaseException | None


class _Subscription:
    """One Subscribe call. Requests go to grpc's sending thread through a queue; a thread
    of its own reads the responses into another queue, so that every wait for one has a
    limit (a grpc response iterator's ``next`` has none)."""

    def __init__(self, client: GnmiClient, operation: str, first: Any):
        self.client = client
        self.operation = operation
        self.timeout_seconds = client.target.timeout_seconds
        self.closed = False
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._responses: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._requests.put(first)
        self._call: Any = client._stub.Subscribe(self._outgoing(),
                                                 metadata=client._metadata)
        threading.Thread(target=self._read, name=f"gnmi {client.name} {operation}",
                         daemon=True).start()

    def _outgoing(self) -> Iterator[Any]:
        while (request := self._requests.get()) is not None:
            yield request

    def _read(self) -> None:
        try:
            for response in self._call:
                self._responses.put(response)
        except Exception as error:  # a grpc.RpcError; anything else is reported alike
            self._responses.put(_Ended(error))
        else:
            self._responses.put(_Ended(None))

    def send(self, request: Any) -> None:
        self._requests.put(request)

    def check_open(self) -> None:
        if self.closed:
            raise DeviceUnreachable(f"gNMI {self.operation}: the subscription to "
                                    f"{self.client.target.where} is closed",
                                    device=self.client.name)

    def next_response(self, deadline: float) -> Any:
        """The next SubscribeResponse, or None when the call has ended (or was closed)."""
        try:
            item = self._responses.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise DeviceTimeout(f"gNMI {self.operation}: no reply from "
                                f"{self.client.target.where} within "
                                f"{self.timeout_seconds:g} s", device=self.client.name) from None
        if not isinstance(item, _Ended):
            return item
        self._responses.put(item)  # every later read sees the end at once
        if item.error is None or self.closed:
            return None
        raise self.client._rpc_error(self.operation, item.error)

    def until_sync(self, *, end_ok: bool) -> list[Notification]:
        """The notifications up to a sync_response; up to the end of the call if
        ``end_ok``, else the end is a :class:`DeviceUnreachable`."""
        found: list[Notification] = []
        while True:
            self.check_open()
            response = self.next_response(time.monotonic() + self.timeout_seconds)
            if response is None:
                if end_ok:
                    return found
                raise DeviceUnreachable(f"gNMI {self.operation}: {self.client.target.where} "
                                        "ended the subscription", device=self.client.name)
            kind = response.WhichOneof("response")
            if kind == "update":
                found.append(self.flatten(response.update))
            elif kind == "sync_response" and response.sync_response:
                return found
            elif kind == "error":
                raise self.reply_error(response.error)

    def flatten(self, notification: Any) -> Notification:
        return self.client._flatten(self.operation, [notification])[0]

    def reply_error(self, error: Any) -> GnmiRejected:
        return self.client._reply_error(self.operation, error)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._requests.put(None)  # ends grpc's thread that sends the requests
        self._call.cancel()


def flatten(notification: Any) -> Notification:
    """A ``gnmi_pb2.Notification`` as a :class:`Notification`; :class:`ProtocolError`
    for a value that cannot be decoded."""
    prefix = notification.prefix
    prefix_text = format_path(prefix) if (prefix.elem or prefix.element) else ""
    return Notification(
        timestamp_ns=int(notification.timestamp), prefix=prefix_text,
        updates=tuple((_joined(prefix_text, update.path), decode_value(update.val))
                      for update in notification.update),
        deletes=tuple(_joined(prefix_text, path) for path in notification.delete))


def _joined(prefix_text: str, path: Any) -> str:
    path_text = format_path(path)
    if not prefix_text:
        return path_text
    return prefix_text if path_text == "/" else prefix_text + path_text


_SCALARS = frozenset({"string_val", "int_val", "uint_val", "bool_val", "bytes_val",
                      "float_val", "double_val", "ascii_val", "proto_bytes"})


def decode_value(value: Any) -> Any:
    """A ``gnmi_pb2.TypedValue`` as Python: JSON decoded (json_ietf_val, json_val), a
    scalar as it is (bytes_val and proto_bytes as bytes), decimal_val as the float
    digits × 10^-precision, leaflist_val as a list; None when no value is set.
    :class:`ProtocolError` for JSON that is not, and for an ``any_val``."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind in ("json_ietf_val", "json_val"):
        try:
            return json.loads(getattr(value, kind))
        except (ValueError, RecursionError) as error:
            raise ProtocolError(f"a {kind} that is not JSON ({error})") from None
    if kind == "decimal_val":
        decimal = value.decimal_val
        if decimal.precision > MAX_DECIMAL_PRECISION:
            raise ProtocolError(f"a decimal_val of precision {decimal.precision} (at most "
                                f"{MAX_DECIMAL_PRECISION})")
        return decimal.digits / 10 ** decimal.precision
    if kind == "leaflist_val":
        return [decode_value(element) for element in value.leaflist_val.element]
    if kind in _SCALARS:
        return getattr(value, kind)
    raise ProtocolError(f"a value of kind {kind}, which this client does not decode")


def _bounded(text: str) -> str:
    return text if len(text) <= DETAILS_SHOWN else text[:DETAILS_SHOWN] + " ..."
