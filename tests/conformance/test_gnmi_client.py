"""The gNMI client (drivers/transports/gnmi.py) against a test double of a gNMI server.

The double is a grpc server in this process (127.0.0.1, port 0) whose servicer records
every request with its metadata and deadline and answers with replies built here by
hand: the client is what is under test, so each test checks what it really sent and
what it made of the reply. One plaintext server serves the module; the TLS tests start
their own with certificates made in a fixture (CA, server, client).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc

from drivers.errors import (
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    Unsupported,
    ValidationError,
)
from drivers.transports.gnmi import (
    CommitAction,
    GnmiClient,
    GnmiRejected,
    GnmiTarget,
    Notification,
)
from drivers.transports.gnmi_path import format_path, parse_path
from emulators.lab.pki import Authority

TIMEOUT = 2.0  # what every test's client waits at most, unless it tests the timeout


# ---- the test double ------------------------------------------------------------------

@dataclass
class Received:
    method: str
    request: Any
    metadata: dict[str, str]
    time_remaining: float | None


Handler = Callable[[Any, grpc.ServicerContext], Any]


@dataclass
class Servicer(gnmi_pb2_grpc.gNMIServicer):  # type: ignore[misc]
    """Records what comes in; answers with ``replies[method]`` (request, context)."""

    received: list[Received] = field(default_factory=list)
    replies: dict[str, Handler] = field(default_factory=dict)
    ended: threading.Event = field(default_factory=threading.Event)

    def _record(self, method: str, request: Any, context: grpc.ServicerContext) -> Handler:
        self.received.append(Received(method, request, dict(context.invocation_metadata()),
                                      context.time_remaining()))
        return self.replies[method]

    def Capabilities(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("Capabilities", request, context)(request, context)

    def Get(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("Get", request, context)(request, context)

    def Set(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._record("Set", request, context)(request, context)

    def Subscribe(self, requests: Iterator[Any],
                  context: grpc.ServicerContext) -> Iterator[Any]:
        context.add_callback(self.ended.set)
        handler = self._record("Subscribe", next(requests), context)

        def recorded() -> Iterator[Any]:  # the polls, recorded as they are read
            for request in requests:
                self.received.append(Received("Subscribe", request, {}, None))
                yield request

        yield from handler(recorded(), context)


def start_server(servicer: Servicer,
                 credentials: grpc.ServerCredentials | None = None) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    gnmi_pb2_grpc.add_gNMIServicer_to_server(servicer, server)
    port = (server.add_secure_port("127.0.0.1:0", credentials) if credentials
            else server.add_insecure_port("127.0.0.1:0"))
    server.start()
    return server, port


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Servicer, int]]:
    servicer = Servicer()
    server, port = start_server(servicer)
    yield servicer, port
    server.stop(grace=None)


@pytest.fixture
def servicer(served: tuple[Servicer, int]) -> Servicer:
    found = served[0]
    found.received.clear()
    found.replies.clear()
    found.ended.clear()
    return found


def lab_target(port: int, **changes: Any) -> GnmiTarget:
    settings: dict[str, Any] = {"name": "leaf-1", "host": "127.0.0.1", "port": port,
                                "username": "admin", "password": "s3cret",
                                "insecure": True, "timeout_seconds": TIMEOUT}
    return GnmiTarget(**(settings | changes))


@pytest.fixture
def client(served: tuple[Servicer, int]) -> Iterator[GnmiClient]:
    with GnmiClient(lab_target(served[1])) as found:
        yield found


def reply(value: Any) -> Handler:
    return lambda request, context: value


def json_ietf(value: Any) -> gnmi_pb2.TypedValue:
    return gnmi_pb2.TypedValue(json_ietf_val=json.dumps(value).encode())


def update(path: str, value: gnmi_pb2.TypedValue) -> gnmi_pb2.Update:
    return gnmi_pb2.Update(path=parse_path(path), val=value)


def notification(*updates: gnmi_pb2.Update, prefix: str | None = None,
                 timestamp: int = 1_700_000_000_000_000_000,
                 deletes: tuple[str, ...] = ()) -> gnmi_pb2.Notification:
    found = gnmi_pb2.Notification(timestamp=timestamp, update=updates,
                                  delete=[parse_path(path) for path in deletes])
    if prefix is not None:
        found.prefix.CopyFrom(parse_path(prefix))
    return found


def sent(servicer: Servicer, method: str) -> list[Received]:
    return [found for found in servicer.received if found.method == method]


def assert_logged_in_with_a_deadline(received: Received) -> None:
    assert received.metadata["username"] == "admin"
    assert received.metadata["password"] == "s3cret"
    # grpc's timeout header rounds up (the server saw 2.009 s of a 2 s timeout): a little slack
    assert received.time_remaining is not None
    assert TIMEOUT / 2 < received.time_remaining <= TIMEOUT + 0.1


# ---- Capabilities -----------------------------------------------------------------------

OC_QOS = gnmi_pb2.ModelData(name="openconfig-qos", organization="OpenConfig working group",
                            version="0.11.0")


@pytest.mark.parametrize("commit", [True, False])
def test_capabilities(servicer: Servicer, client: GnmiClient, commit: bool) -> None:
    extensions = [gnmi_ext_pb2.Extension(commit=gnmi_ext_pb2.Commit())] if commit else []
    servicer.replies["Capabilities"] = reply(gnmi_pb2.CapabilityResponse(
        supported_models=[OC_QOS], supported_encodings=[gnmi_pb2.JSON_IETF, gnmi_pb2.JSON],
        gNMI_version="0.10.0", extension=extensions))
    found = client.capabilities()
    assert found.models[0].name == "openconfig-qos"
    assert found.models[0].organization == "OpenConfig working group"
    assert found.models[0].version == "0.11.0"
    assert found.has_model("openconfig-qos") and not found.has_model("openconfig-acl")
    assert found.encodings == ("JSON_IETF", "JSON")
    assert found.gnmi_version == "0.10.0"
    assert found.commit_confirmed is commit
    [received] = sent(servicer, "Capabilities")
    assert_logged_in_with_a_deadline(received)


# ---- Get ----------------------------------------------------------------------------------

QUEUE = "/openconfig-qos:qos/queues/queue[name=Q3]/config"


def test_get_json_ietf(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[
        notification(update("/config", json_ietf({"name": "Q3", "weight": 40})),
                     prefix="/openconfig-qos:qos/queues/queue[name=Q3]",
                     deletes=("/state/old",))]))
    [found] = client.get([QUEUE], data_type="CONFIG", origin="openconfig", target="asic0")
    assert found == Notification(
        timestamp_ns=1_700_000_000_000_000_000,
        prefix="/openconfig-qos:qos/queues/queue[name=Q3]",
        updates=((QUEUE, {"name": "Q3", "weight": 40}),),
        deletes=("/openconfig-qos:qos/queues/queue[name=Q3]/state/old",))
    [received] = sent(servicer, "Get")
    request = received.request
    assert [format_path(path) for path in request.path] == [QUEUE]
    assert request.path[0].elem[0].name == "openconfig-qos:qos"
    assert not request.path[0].origin and not request.path[0].target
    assert (request.prefix.origin, request.prefix.target) == ("openconfig", "asic0")
    assert not request.prefix.elem
    assert request.type == gnmi_pb2.GetRequest.CONFIG
    assert request.encoding == gnmi_pb2.JSON_IETF
    assert_logged_in_with_a_deadline(received)


def test_get_without_origin_sends_no_prefix(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse())
    assert client.get(["/a", "/b[k=1]"], encoding="JSON") == []
    [received] = sent(servicer, "Get")
    assert not received.request.HasField("prefix")
    assert received.request.encoding == gnmi_pb2.JSON
    assert received.request.type == gnmi_pb2.GetRequest.ALL
    assert [format_path(path) for path in received.request.path] == ["/a", "/b[k=1]"]


TYPED = [
    (gnmi_pb2.TypedValue(string_val="up"), "up"),
    (gnmi_pb2.TypedValue(int_val=-5), -5),
    (gnmi_pb2.TypedValue(uint_val=2**64 - 1), 2**64 - 1),
    (gnmi_pb2.TypedValue(bool_val=True), True),
    (gnmi_pb2.TypedValue(bytes_val=b"\x00\xff"), b"\x00\xff"),
    (gnmi_pb2.TypedValue(float_val=0.5), 0.5),
    (gnmi_pb2.TypedValue(double_val=-3.25e-7), -3.25e-7),
    (gnmi_pb2.TypedValue(decimal_val=gnmi_pb2.Decimal64(digits=-1234, precision=2)), -12.34),
    (gnmi_pb2.TypedValue(decimal_val=gnmi_pb2.Decimal64(digits=7, precision=0)), 7.0),
    (gnmi_pb2.TypedValue(ascii_val="line 1\nline 2"), "line 1\nline 2"),
    (gnmi_pb2.TypedValue(json_val=b'{"a": [1, 2]}'), {"a": [1, 2]}),
    (gnmi_pb2.TypedValue(leaflist_val=gnmi_pb2.ScalarArray(element=[
        gnmi_pb2.TypedValue(string_val="x"), gnmi_pb2.TypedValue(uint_val=3)])), ["x", 3]),
    (gnmi_pb2.TypedValue(), None),
]


def test_get_typed_scalars(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[notification(
        *(update(f"/leaf[n={n}]", value) for n, (value, _) in enumerate(TYPED)))]))
    [found] = client.get(["/"])
    assert found.prefix == ""
    assert found.updates == tuple((f"/leaf[n={n}]", decoded)
                                  for n, (_, decoded) in enumerate(TYPED))
    assert isinstance(found.updates[8][1], float)  # decimal_val, precision 0


def test_get_json_is_the_one_value(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[
        notification(update(QUEUE, json_ietf({"name": "Q3"})))]))
    assert client.get_json(QUEUE, data_type="STATE") == {"name": "Q3"}
    assert sent(servicer, "Get")[0].request.type == gnmi_pb2.GetRequest.STATE
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[notification()]))
    assert client.get_json(QUEUE) is None
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[
        notification(update("/a", json_ietf(1)), update("/b", json_ietf(2)))]))
    with pytest.raises(ProtocolError, match="2 values, not one"):
        client.get_json("/")


def test_json_that_is_not_is_a_protocol_error(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[notification(
        update(QUEUE, gnmi_pb2.TypedValue(json_ietf_val=b'{"name": ')))]))
    with pytest.raises(ProtocolError, match="json_ietf_val that is not JSON") as raised:
        client.get([QUEUE])
    assert raised.value.device == "leaf-1"
    assert "127.0.0.1:" in str(raised.value) and "Get" in str(raised.value)


@pytest.mark.parametrize(("value", "message"), [
    (gnmi_pb2.TypedValue(decimal_val=gnmi_pb2.Decimal64(digits=1, precision=2**32 - 1)),
     "precision 4294967295"),
    (gnmi_pb2.TypedValue(json_val=b"[" * 100_000), "json_val that is not JSON"),
    (gnmi_pb2.TypedValue(any_val={"type_url": "x", "value": b""}), "does not decode"),
])
def test_values_that_are_refused(servicer: Servicer, client: GnmiClient, value: Any,
                                 message: str) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(notification=[notification(
        update("/a", value))]))
    with pytest.raises(ProtocolError, match=message):
        client.get(["/a"])


def test_an_error_in_the_reply_is_a_refusal(servicer: Servicer, client: GnmiClient) -> None:
    servicer.replies["Get"] = reply(gnmi_pb2.GetResponse(
        error=gnmi_pb2.Error(code=grpc.StatusCode.NOT_FOUND.value[0], message="no such queue")))
    with pytest.raises(GnmiRejected, match="no such queue") as raised:
        client.get([QUEUE])
    assert raised.value.code == "NOT_FOUND"


@pytest.mark.parametrize(("call", "message"), [
    (lambda c: c.get(QUEUE), "not one string"),
    (lambda c: c.get(["/a[k"]), "bad gNMI path"),
    (lambda c: c.get([]), "no path given"),
    (lambda c: c.subscribe_once([]), "no path given"),
    (lambda c: c.get(["/a"], data_type="RUNNING"), "data type 'RUNNING'"),
    (lambda c: c.get(["/a"], encoding="XML"), "encoding 'XML'"),
    (lambda c: c.subscribe_stream(["/a"], mode="ONCE"), "stream mode 'ONCE'"),
    (lambda c: c.subscribe_stream(["/a"], sample_interval_seconds=0), "sample interval"),
])
def test_bad_arguments_send_nothing(servicer: Servicer, client: GnmiClient,
                                    call: Callable[[GnmiClient], Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as raised:
        call(client)
    assert raised.value.device == "leaf-1"
    assert servicer.received == []


# ---- Set ----------------------------------------------------------------------------------

SET_TIME = 1_700_000_123_000_000_000


def test_set_deletes_replaces_and_updates_in_one_request(servicer: Servicer,
                                                         client: GnmiClient) -> None:
    servicer.replies["Set"] = reply(gnmi_pb2.SetResponse(timestamp=SET_TIME))
    timestamp = client.set(
        delete=["/openconfig-qos:qos/queues/queue[name=Q7]"],
        replace=[(QUEUE, {"name": "Q3", "weight": 40})],
        update=[("/openconfig-qos:qos/interfaces/interface[interface-id=Ethernet1/1]/config",
                 {"interface-id": "Ethernet1/1"}), ("/system/config/hostname", "leaf-1")],
        origin="openconfig")
    assert timestamp == SET_TIME
    [received] = sent(servicer, "Set")
    request = received.request
    assert [format_path(path) for path in request.delete] == [
        "/openconfig-qos:qos/queues/queue[name=Q7]"]
    assert [(format_path(u.path), json.loads(u.val.json_ietf_val)) for u in request.replace] \
        == [(QUEUE, {"name": "Q3", "weight": 40})]
    assert [(format_path(u.path), json.loads(u.val.json_ietf_val)) for u in request.update] \
        == [("/openconfig-qos:qos/interfaces/interface[interface-id=Ethernet1/1]/config",
             {"interface-id": "Ethernet1/1"}), ("/system/config/hostname", "leaf-1")]
    assert all(u.val.WhichOneof("value") == "json_ietf_val"
               for u in [*request.replace, *request.update])
    assert request.prefix.origin == "openconfig"
    assert list(request.extension) == []
    assert_logged_in_with_a_deadline(received)


@pytest.mark.parametrize(("action", "expected"), [
    (CommitAction("c-1", "commit", rollback_seconds=1.5),
     gnmi_ext_pb2.Commit(id="c-1", commit=gnmi_ext_pb2.CommitRequest(
         rollback_duration={"seconds": 1, "nanos": 500_000_000}))),
    (CommitAction("c-1", "commit"), gnmi_ext_pb2.Commit(id="c-1",
                                                        commit=gnmi_ext_pb2.CommitRequest())),
    (CommitAction("c-1", "confirm"),
     gnmi_ext_pb2.Commit(id="c-1", confirm=gnmi_ext_pb2.CommitConfirm())),
    (CommitAction("c-1", "cancel"),
     gnmi_ext_pb2.Commit(id="c-1", cancel=gnmi_ext_pb2.CommitCancel())),
    (CommitAction("c-1", "set-rollback-duration", rollback_seconds=300),
     gnmi_ext_pb2.Commit(id="c-1", set_rollback_duration=gnmi_ext_pb2.CommitSetRollbackDuration(
         rollback_duration={"seconds": 300}))),
])
def test_set_with_each_commit_action(servicer: Servicer, client: GnmiClient,
                                     action: CommitAction, expected: Any) -> None:
    servicer.replies["Set"] = reply(gnmi_pb2.SetResponse(timestamp=SET_TIME))
    changes: dict[str, Any] = {"update": [(QUEUE, {"name": "Q3"})]} \
        if action.action == "commit" else {}
    assert client.set(commit=action, **changes) == SET_TIME
    [received] = sent(servicer, "Set")
    [extension] = received.request.extension
    assert extension.commit == expected
    assert extension.commit.WhichOneof("action") == expected.WhichOneof("action")
    if action.action == "commit" and action.rollback_seconds is None:
        assert not extension.commit.commit.HasField("rollback_duration")


@pytest.mark.parametrize(("changes", "message"), [
    ({}, "nothing to delete"),
    ({"commit": CommitAction("c", "rollback")}, "commit action 'rollback'"),
    ({"commit": CommitAction("", "confirm")}, "needs an id"),
    ({"commit": CommitAction("c", "confirm", rollback_seconds=5)}, "has no rollback"),
    ({"commit": CommitAction("c", "set-rollback-duration")}, "needs rollback_seconds"),
    ({"commit": CommitAction("c", "commit", rollback_seconds=-1)}, "positive number"),
    ({"update": [("/a", {1, 2})]}, "not JSON"),
    ({"update": [("/a", float("nan"))]}, "not JSON"),
    ({"update": ["/a"]}, "pairs"),
    ({"delete": "/a"}, "not one string"),
])
def test_bad_sets_send_nothing(servicer: Servicer, client: GnmiClient,
                               changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        client.set(**changes)
    assert servicer.received == []


# ---- Subscribe ------------------------------------------------------------------------------

def sync() -> gnmi_pb2.SubscribeResponse:
    return gnmi_pb2.SubscribeResponse(sync_response=True)


def updated(path: str, value: Any, timestamp: int = 1) -> gnmi_pb2.SubscribeResponse:
    return gnmi_pb2.SubscribeResponse(update=notification(update(path, json_ietf(value)),
                                                          timestamp=timestamp))


COUNTER = "/interfaces/interface[name=Ethernet1/1]/state/counters/in-octets"


def test_subscribe_once(servicer: Servicer, client: GnmiClient) -> None:
    def once(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        yield updated(COUNTER, 10)
        yield updated(QUEUE, {"name": "Q3"})
        yield sync()

    servicer.replies["Subscribe"] = once
    found = client.subscribe_once([COUNTER, QUEUE], encoding="JSON", target="asic0")
    assert [n.updates for n in found] == [((COUNTER, 10),), ((QUEUE, {"name": "Q3"}),)]
    [received] = sent(servicer, "Subscribe")
    wanted = received.request.subscribe
    assert wanted.mode == gnmi_pb2.SubscriptionList.ONCE
    assert wanted.encoding == gnmi_pb2.JSON
    assert wanted.prefix.target == "asic0"
    assert [format_path(s.path) for s in wanted.subscription] == [COUNTER, QUEUE]
    assert received.metadata["username"] == "admin"
    assert received.metadata["password"] == "s3cret"


def test_subscribe_poll_twice(servicer: Servicer, client: GnmiClient) -> None:
    def poll(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        yield updated(COUNTER, 0)
        yield sync()
        for count, request in enumerate(requests, start=1):
            assert request.HasField("poll")
            yield updated(COUNTER, count * 100)
            yield updated(QUEUE, count)
            yield sync()

    servicer.replies["Subscribe"] = poll
    with client.subscribe_poll([COUNTER, QUEUE]) as poller:
        assert [n.updates for n in poller.initial] == [((COUNTER, 0),)]
        assert [n.updates for n in poller.poll()] == [((COUNTER, 100),), ((QUEUE, 1),)]
        assert [n.updates for n in poller.poll()] == [((COUNTER, 200),), ((QUEUE, 2),)]
    first, *polls = sent(servicer, "Subscribe")
    assert first.request.subscribe.mode == gnmi_pb2.SubscriptionList.POLL
    assert first.request.subscribe.encoding == gnmi_pb2.JSON_IETF
    assert [request.request.WhichOneof("request") for request in polls] == ["poll", "poll"]
    assert servicer.ended.wait(TIMEOUT)  # closing cancelled the call
    with pytest.raises(DeviceUnreachable, match="closed"):
        poller.poll()


def streaming(after_sync: list[gnmi_pb2.SubscribeResponse],
              go: threading.Event) -> Handler:
    """Two initial updates and sync; on ``go``, ``after_sync``; then waits to be cancelled."""

    def stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        yield updated(COUNTER, 1)
        yield updated(QUEUE, {"name": "Q3"})
        yield sync()
        go.wait(TIMEOUT)
        yield from after_sync
        while context.is_active():
            time.sleep(0.01)

    return stream


def test_subscribe_stream_sample(servicer: Servicer, client: GnmiClient) -> None:
    go = threading.Event()
    servicer.replies["Subscribe"] = streaming([updated(COUNTER, 2, timestamp=2),
                                               updated(COUNTER, 3, timestamp=3)], go)
    stream = client.subscribe_stream([COUNTER, QUEUE], sample_interval_seconds=0.25,
                                     suppress_redundant=True, updates_only=False)
    assert next(stream).updates == ((COUNTER, 1),)
    assert next(stream).updates == ((QUEUE, {"name": "Q3"}),)
    assert not stream.synced
    go.set()
    following = next(stream)
    assert stream.synced
    assert (following.timestamp_ns, following.updates) == (2, ((COUNTER, 2),))
    assert next(stream).updates == ((COUNTER, 3),)
    stream.close()
    assert servicer.ended.wait(TIMEOUT)
    assert list(stream) == []
    [received] = sent(servicer, "Subscribe")
    wanted = received.request.subscribe
    assert wanted.mode == gnmi_pb2.SubscriptionList.STREAM
    assert not wanted.updates_only
    assert [(format_path(s.path), s.mode, s.sample_interval, s.suppress_redundant)
            for s in wanted.subscription] == [
        (COUNTER, gnmi_pb2.SAMPLE, 250_000_000, True), (QUEUE, gnmi_pb2.SAMPLE, 250_000_000, True)]
    assert received.metadata["username"] == "admin"


def test_subscribe_stream_on_change(servicer: Servicer, client: GnmiClient) -> None:
    go = threading.Event()
    servicer.replies["Subscribe"] = streaming(
        [gnmi_pb2.SubscribeResponse(update=notification(deletes=(QUEUE,)))], go)
    with client.subscribe_stream([QUEUE], mode="ON_CHANGE", updates_only=True) as stream:
        initial = [next(stream), next(stream)]
        assert len(initial) == 2
        threading.Timer(0.1, go.set).start()  # the change comes while next() waits
        assert next(stream).deletes == (QUEUE,)
        assert stream.synced
    assert servicer.ended.wait(TIMEOUT)
    wanted = sent(servicer, "Subscribe")[0].request.subscribe
    assert wanted.updates_only
    assert [(s.mode, s.sample_interval) for s in wanted.subscription] == \
        [(gnmi_pb2.ON_CHANGE, 0)]


def test_a_quiet_stream_times_out_and_stays_open(servicer: Servicer,
                                                 served: tuple[Servicer, int]) -> None:
    go = threading.Event()
    servicer.replies["Subscribe"] = streaming([updated(COUNTER, 9)], go)
    with GnmiClient(lab_target(served[1], timeout_seconds=0.3)) as quick, \
            quick.subscribe_stream([COUNTER], mode="TARGET_DEFINED") as stream:
        assert [next(stream), next(stream)]
        started = time.monotonic()
        with pytest.raises(DeviceTimeout, match=r"within 0\.3 s"):
            next(stream)
        assert 0.25 < time.monotonic() - started < 1.5
        go.set()
        assert next(stream).updates == ((COUNTER, 9),)


def test_closing_the_client_cancels_its_streams(servicer: Servicer,
                                                served: tuple[Servicer, int]) -> None:
    servicer.replies["Subscribe"] = streaming([], threading.Event())
    quick = GnmiClient(lab_target(served[1]))
    stream = quick.subscribe_stream([COUNTER], mode="ON_CHANGE")
    next(stream)
    quick.close()
    assert servicer.ended.wait(TIMEOUT)
    assert list(stream) == []
    with pytest.raises(DeviceUnreachable, match="closed"):
        quick.capabilities()


def test_a_target_without_poll_is_unsupported(servicer: Servicer, client: GnmiClient) -> None:
    def refuse(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "POLL mode is not supported")
        yield  # a generator

    servicer.replies["Subscribe"] = refuse
    with pytest.raises(Unsupported, match="POLL mode is not supported") as raised:
        client.subscribe_poll([COUNTER])
    assert "Subscribe POLL" in str(raised.value) and raised.value.device == "leaf-1"


# ---- errors -------------------------------------------------------------------------------

REFUSED = ["INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "ABORTED", "ALREADY_EXISTS",
           "OUT_OF_RANGE", "RESOURCE_EXHAUSTED", "INTERNAL", "UNKNOWN"]


def aborting(code: grpc.StatusCode, details: str) -> Handler:
    def handler(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(code, details)

    return handler


@pytest.mark.parametrize(("code", "raised", "words"), [
    *((name, GnmiRejected, f"refused it ({name})") for name in REFUSED),
    ("UNAVAILABLE", DeviceUnreachable, "cannot reach"),
    ("UNAUTHENTICATED", DeviceRejected, "authentication (user 'admin')"),
    ("PERMISSION_DENIED", DeviceRejected, "denied permission (user 'admin')"),
    ("UNIMPLEMENTED", Unsupported, "does not support it"),
])
def test_status_codes(servicer: Servicer, client: GnmiClient, served: tuple[Servicer, int],
                      code: str, raised: type[Exception], words: str) -> None:
    servicer.replies["Set"] = aborting(grpc.StatusCode[code], f"the server says {code}")
    with pytest.raises(raised) as found:
        client.set(delete=["/a"])
    error = found.value
    assert type(error) is raised
    text = str(error)
    assert text.startswith("leaf-1: gNMI Set: ")
    assert words in text and f"127.0.0.1:{served[1]}" in text
    assert f"the server says {code}" in text
    if isinstance(error, GnmiRejected):
        assert (error.code, error.details) == (code, f"the server says {code}")


def test_a_long_refusal_is_shown_bounded_and_kept_whole(servicer: Servicer,
                                                        client: GnmiClient) -> None:
    details = "leaf /qos/queues/queue/config/weight: " + "out of range; " * 200
    servicer.replies["Set"] = aborting(grpc.StatusCode.INVALID_ARGUMENT, details)
    with pytest.raises(GnmiRejected) as found:
        client.set(delete=["/a"])
    assert found.value.details == details
    assert len(str(found.value)) < 600
    assert str(found.value).endswith(" ...")


def never_answering(request: Any, context: grpc.ServicerContext) -> Any:
    while context.is_active():
        time.sleep(0.01)


def test_a_server_that_never_answers(servicer: Servicer, served: tuple[Servicer, int]) -> None:
    servicer.replies["Get"] = never_answering
    servicer.replies["Subscribe"] = lambda requests, context: iter([never_answering(0, context)])
    with GnmiClient(lab_target(served[1], timeout_seconds=0.3)) as quick:
        for call in (lambda: quick.get(["/"]), lambda: quick.subscribe_once(["/"])):
            started = time.monotonic()
            with pytest.raises(DeviceTimeout, match=r"no reply from 127\.0\.0\.1:\d+ within 0.3 s"):
                call()
            assert 0.25 < time.monotonic() - started < 1.5
    assert sent(servicer, "Get")[0].time_remaining is not None


def test_a_port_nobody_listens_on() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with GnmiClient(lab_target(port)) as lost, \
            pytest.raises(DeviceUnreachable, match=f"cannot reach 127.0.0.1:{port}"):
        lost.capabilities()


def test_insecure_is_logged_once_naming_the_target(caplog: pytest.LogCaptureFixture,
                                                   servicer: Servicer,
                                                   served: tuple[Servicer, int]) -> None:
    servicer.replies["Capabilities"] = reply(gnmi_pb2.CapabilityResponse())
    with caplog.at_level(logging.WARNING, logger="drivers.transports.gnmi"), \
            GnmiClient(lab_target(served[1])) as plain:
        plain.capabilities()
        plain.capabilities()
    [warned] = [r for r in caplog.records if r.name == "drivers.transports.gnmi"]
    assert warned.levelno == logging.WARNING
    assert f"leaf-1: gNMI to 127.0.0.1:{served[1]} in plaintext" in warned.getMessage()
    assert "s3cret" not in warned.getMessage()


# ---- TLS ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pki:
    ca: Path
    other_ca: Path
    server_cert: bytes
    server_key: bytes
    client_cert: Path
    client_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and
    another CA that signed neither."""
    folder = tmp_path_factory.mktemp("pki")
    authority = Authority("test CA")
    server = authority.issue("leaf-1", server=True)
    client = authority.issue("msoctl", server=False)
    files = {"ca.pem": authority.cert_pem, "other-ca.pem": Authority("other CA").cert_pem,
             "client.pem": client.cert_pem, "client.key": client.key_pem}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return Pki(ca=folder / "ca.pem", other_ca=folder / "other-ca.pem",
               server_cert=server.cert_pem, server_key=server.key_pem,
               client_cert=folder / "client.pem", client_key=folder / "client.key")


@pytest.fixture(scope="module", params=[False, True], ids=["tls", "mutual-tls"])
def tls_served(request: pytest.FixtureRequest, pki: Pki) -> Iterator[tuple[Servicer, int, bool]]:
    mutual = bool(request.param)
    servicer = Servicer(replies={"Capabilities": reply(gnmi_pb2.CapabilityResponse(
        gNMI_version="0.10.0"))})
    credentials = grpc.ssl_server_credentials(
        [(pki.server_key, pki.server_cert)], root_certificates=pki.ca.read_bytes(),
        require_client_auth=mutual)
    server, port = start_server(servicer, credentials)
    yield servicer, port, mutual
    server.stop(grace=None)


def tls_target(port: int, **changes: Any) -> GnmiTarget:
    return lab_target(port, **({"insecure": False} | changes))


def test_tls_with_the_right_ca_and_client_certificate(pki: Pki,
                                                      tls_served: tuple[Servicer, int, bool],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    servicer, port, _ = tls_served
    with caplog.at_level(logging.WARNING), GnmiClient(tls_target(
            port, ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key)) as secure:
        assert secure.capabilities().gnmi_version == "0.10.0"
    assert servicer.received[-1].metadata["username"] == "admin"
    assert not [r for r in caplog.records if r.name == "drivers.transports.gnmi"]


def test_tls_by_another_name(pki: Pki, tls_served: tuple[Servicer, int, bool]) -> None:
    """server_name, not the host dialled, is the name checked: 127.0.0.1 is in the server's
    certificate, so only the name given can fail the handshake."""
    port = tls_served[1]
    keys = {"ca_file": pki.ca, "cert_file": pki.client_cert, "key_file": pki.client_key}
    with GnmiClient(tls_target(port, server_name="localhost", **keys)) as secure:
        assert secure.capabilities().gnmi_version == "0.10.0"
    with GnmiClient(tls_target(port, server_name="switch.test", **keys)) as secure, \
            pytest.raises(DeviceUnreachable, match="cannot reach"):
        secure.capabilities()


def test_tls_without_a_client_certificate(pki: Pki,
                                          tls_served: tuple[Servicer, int, bool]) -> None:
    _, port, mutual = tls_served
    with GnmiClient(tls_target(port, ca_file=pki.ca)) as secure:
        if mutual:
            with pytest.raises(DeviceUnreachable, match="cannot reach"):
                secure.capabilities()
        else:
            assert secure.capabilities().gnmi_version == "0.10.0"


def test_tls_with_the_wrong_ca(pki: Pki, tls_served: tuple[Servicer, int, bool]) -> None:
    port = tls_served[1]
    with GnmiClient(tls_target(port, ca_file=pki.other_ca, cert_file=pki.client_cert,
                               key_file=pki.client_key)) as secure, \
            pytest.raises(DeviceUnreachable, match=f"Capabilities: cannot reach 127.0.0.1:{port}"):
        secure.capabilities()


@pytest.mark.parametrize(("changes", "message"), [
    ({"ca_file": "missing.pem"}, "CA file .*missing.pem: cannot read it"),
    ({"cert_file": "client.pem"}, "both cert_file and key_file"),
    ({"key_file": "client.key"}, "both cert_file and key_file"),
    ({"cert_file": "client.pem", "key_file": "missing.key"}, "key file .*: cannot read"),
    ({"ca_file": "client.key.txt"}, "not PEM"),
    ({"ca_file": "ca.pem", "insecure": True}, "insecure .* with ca_file"),
    ({"timeout_seconds": 0}, "timeout"),
    ({"port": 70000}, "not a TCP port"),
    ({"password": "pässword"}, "printable ASCII"),
])
def test_bad_targets_are_refused_before_connecting(pki: Pki, changes: dict[str, Any],
                                                   message: str) -> None:
    folder = pki.ca.parent
    (folder / "client.key.txt").write_text("not a certificate")
    files = {key: folder / value for key, value in changes.items() if key.endswith("_file")}
    with pytest.raises(ValidationError, match=message) as raised:
        GnmiClient(tls_target(**({"port": 1} | changes | files)))
    assert raised.value.device == "leaf-1"
