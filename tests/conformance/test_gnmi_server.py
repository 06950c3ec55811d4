"""The emulators' gNMI target (emulators/gnmi/server.py) driven by raw gNMI stubs.

Requests are built by hand here (never with the server's path code), over a small test
face: a tiny model, ``test-model:things`` with a ``thing`` list keyed by ``name`` and a
``slot`` list keyed by an integer ``index``, an augment member ``test-augments:extra``
in entry ``a``, and a read-only ``test-model:status`` tree in the operational view. Its
``commit`` refuses a size above 100 (at the size's path) and records what it was
given; ``operational`` adds a ``state`` container with a counter the tests bump. The
face is a fixture, not what is under test.

One server per module (commit confirmed, one user, a stepped clock), put back to the
factory configuration and checked before each test; servers with other settings
(TLS, no users, no commit confirmed, JSON) are started by the tests that need them.
"""

from __future__ import annotations

import copy
import datetime
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from gnmi_pb import gnmi_ext_pb2, gnmi_pb2, gnmi_pb2_grpc
from google.protobuf import duration_pb2

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.gnmi.face import FaceError, Model
from emulators.gnmi.server import GNMI_VERSION, GnmiServer, GnmiTls
from emulators.lab.pki import Authority
from emulators.loopthread import LoopThread

Tree = dict[str, Any]
USER, PASSWORD = "admin", "s3cret"
AUTH = (("username", USER), ("password", PASSWORD))
TIMEOUT = 5.0
CONFIG = gnmi_pb2.GetRequest.CONFIG
STATE = gnmi_pb2.GetRequest.STATE
ALL = gnmi_pb2.GetRequest.ALL
STREAM = gnmi_pb2.SubscriptionList.STREAM
ONCE = gnmi_pb2.SubscriptionList.ONCE
POLL = gnmi_pb2.SubscriptionList.POLL
Op = gnmi_pb2.UpdateResult


def factory_tree() -> Tree:
    return {"test-model:things": {
        "thing": [{"name": "a", "config": {"name": "a", "size": 1},
                   "test-augments:extra": {"config": {"level": 3}}}],
        "slot": [{"index": 1, "config": {"index": 1, "label": "first"}}],
    }}


@dataclass
class ThingsFace:
    """The test model (module docstring)."""

    name: str = "test"
    models: tuple[Model, ...] = (Model("test-model", "msoctl tests", "1.0.0"),
                                 Model("test-augments", "msoctl tests", "0.1.0"))
    encodings: tuple[str, ...] = ("JSON_IETF",)
    counter: int = 0
    committed: list[Tree] = field(default_factory=list)

    def factory(self) -> Tree:
        return factory_tree()

    def commit(self, config: Tree) -> None:
        for thing in config.get("test-model:things", {}).get("thing", []):
            size = thing.get("config", {}).get("size", 0)
            if size > 100:
                raise FaceError(f"size {size} is above 100",
                                path=f"/things/thing[name={thing['name']}]/config/size")
        self.committed.append(copy.deepcopy(config))

    def operational(self, config: Tree) -> Tree:
        for thing in config.get("test-model:things", {}).get("thing", []):
            thing["state"] = {**thing.get("config", {}), "counter": self.counter}
        config["test-model:status"] = {"uptime": 42}
        return config

    def writable(self, top: str) -> bool:
        return top == "test-model:things"


# ---- requests built by hand -----------------------------------------------------------------

def path(*elems: str | tuple[str, dict[str, str]], origin: str = "",
         target: str = "") -> gnmi_pb2.Path:
    """``path("things", ("thing", {"name": "a"}), "config")``."""
    built = [gnmi_pb2.PathElem(name=elem) if isinstance(elem, str)
             else gnmi_pb2.PathElem(name=elem[0], key=elem[1]) for elem in elems]
    return gnmi_pb2.Path(elem=built, origin=origin, target=target)


def json_value(value: Any) -> gnmi_pb2.TypedValue:
    return gnmi_pb2.TypedValue(json_ietf_val=json.dumps(value).encode())


def get(stub: gnmi_pb2_grpc.gNMIStub, *paths: gnmi_pb2.Path, data_type: int = ALL,
        prefix: gnmi_pb2.Path | None = None, encoding: int = gnmi_pb2.JSON_IETF,
        metadata: Any = AUTH, timeout: float = TIMEOUT) -> gnmi_pb2.GetResponse:
    return stub.Get(gnmi_pb2.GetRequest(path=list(paths), type=data_type, prefix=prefix,
                                        encoding=encoding),
                    metadata=metadata, timeout=timeout)


def value_at(stub: gnmi_pb2_grpc.gNMIStub, at: gnmi_pb2.Path, data_type: int = ALL) -> Any:
    """The one value a Get of ``at`` answers."""
    [notification] = get(stub, at, data_type=data_type).notification
    [update] = notification.update
    return json.loads(update.val.json_ietf_val)


def set_request(stub: gnmi_pb2_grpc.gNMIStub, *, delete: list[gnmi_pb2.Path] | None = None,
                replace: list[tuple[gnmi_pb2.Path, Any]] | None = None,
                update: list[tuple[gnmi_pb2.Path, Any]] | None = None,
                commit: gnmi_ext_pb2.Commit | None = None,
                metadata: Any = AUTH) -> gnmi_pb2.SetResponse:
    def updates(pairs: list[tuple[gnmi_pb2.Path, Any]] | None) -> list[gnmi_pb2.Update]:
        return [gnmi_pb2.Update(path=at, val=value if isinstance(value, gnmi_pb2.TypedValue)
                                else json_value(value)) for at, value in pairs or []]
    extensions = [] if commit is None else [gnmi_ext_pb2.Extension(commit=commit)]
    return stub.Set(gnmi_pb2.SetRequest(delete=delete or [], replace=updates(replace),
                                        update=updates(update), extension=extensions),
                    metadata=metadata, timeout=TIMEOUT)


def subscribe_request(*subscriptions: gnmi_pb2.Subscription, mode: int = STREAM,
                      updates_only: bool = False,
                      prefix: gnmi_pb2.Path | None = None) -> gnmi_pb2.SubscribeRequest:
    return gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
        subscription=list(subscriptions), mode=mode, encoding=gnmi_pb2.JSON_IETF,
        updates_only=updates_only, prefix=prefix))


class Requests:
    """A Subscribe call's request stream, fed by the test."""

    def __init__(self, first: gnmi_pb2.SubscribeRequest):
        self._queue: list[gnmi_pb2.SubscribeRequest | None] = [first]
        self._ready = threading.Condition()

    def send(self, request: gnmi_pb2.SubscribeRequest | None) -> None:
        with self._ready:
            self._queue.append(request)
            self._ready.notify()

    def __iter__(self) -> Iterator[gnmi_pb2.SubscribeRequest]:
        while True:
            with self._ready:
                self._ready.wait_for(lambda: bool(self._queue))
                request = self._queue.pop(0)
            if request is None:
                return
            yield request


def values_of(response: gnmi_pb2.SubscribeResponse) -> dict[str, Any]:
    """``{"/things/thing[name=a]/state": value}`` of one update response."""
    found = {}
    for update in response.update.update:
        text = "/" + "/".join(elem.name + "".join(f"[{k}={v}]" for k, v in sorted(elem.key.items()))
                              for elem in update.path.elem)
        found[text] = json.loads(update.val.json_ietf_val)
    return found


def code_of(raised: pytest.ExceptionInfo[grpc.RpcError]) -> grpc.StatusCode:
    return raised.value.code()  # type: ignore[attr-defined, no-any-return]


def details_of(raised: pytest.ExceptionInfo[grpc.RpcError]) -> str:
    return raised.value.details()  # type: ignore[attr-defined, no-any-return]


THING_A = path("things", ("thing", {"name": "a"}))
SIZE_A = path("things", ("thing", {"name": "a"}), "config", "size")


# ---- the servers ------------------------------------------------------------------------------

@dataclass
class Target:
    server: GnmiServer
    face: ThingsFace
    clock: SteppedClock
    stub: gnmi_pb2_grpc.gNMIStub
    channel: grpc.Channel


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("gnmi-tests")
    thread.start()
    yield thread
    thread.stop()


def serve(loop: LoopThread, **settings: Any) -> tuple[GnmiServer, ThingsFace, SteppedClock]:
    face = settings.pop("face", None) or ThingsFace()
    clock = SteppedClock(1000.0)
    server = GnmiServer("dut", face, clock=clock, **settings)
    loop.call(server.start())
    return server, face, clock


@pytest.fixture(scope="module")
def shared(loop: LoopThread) -> Iterator[Target]:
    server, face, clock = serve(loop, users={USER: PASSWORD}, commit_confirmed=True)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    yield Target(server, face, clock, gnmi_pb2_grpc.gNMIStub(channel), channel)
    channel.close()
    loop.call(server.stop())


@pytest.fixture
def target(shared: Target) -> Target:
    """The module's server as delivered: factory configuration, no faults, no commit."""
    shared.server.faults.clear()
    shared.server.factory_reset()
    shared.face.counter = 0
    shared.face.committed.clear()
    assert shared.server.config == factory_tree()
    assert shared.server.pending_commit is None
    return shared


@pytest.fixture
def stub(target: Target) -> gnmi_pb2_grpc.gNMIStub:
    return target.stub


# ---- Capabilities and authentication ----------------------------------------------------------

def test_capabilities_list_the_face_models_encodings_and_the_commit_extension(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    answer = stub.Capabilities(gnmi_pb2.CapabilityRequest(), metadata=AUTH, timeout=TIMEOUT)
    assert answer.gNMI_version == GNMI_VERSION == "0.10.0"
    assert [(m.name, m.organization, m.version) for m in answer.supported_models] == [
        ("test-model", "msoctl tests", "1.0.0"), ("test-augments", "msoctl tests", "0.1.0")]
    assert list(answer.supported_encodings) == [gnmi_pb2.JSON_IETF]
    [extension] = answer.extension
    assert extension.WhichOneof("ext") == "commit"
    assert extension.commit == gnmi_ext_pb2.Commit()


@pytest.mark.parametrize("metadata", [(), (("username", USER),),
                                      (("username", USER), ("password", "wrong")),
                                      (("username", "intruder"), ("password", PASSWORD))],
                         ids=["none", "no-password", "wrong-password", "unknown-user"])
def test_every_rpc_without_matching_credentials_is_unauthenticated(
        stub: gnmi_pb2_grpc.gNMIStub, metadata: Any) -> None:
    calls = [
        lambda: stub.Capabilities(gnmi_pb2.CapabilityRequest(), metadata=metadata,
                                  timeout=TIMEOUT),
        lambda: get(stub, THING_A, metadata=metadata),
        lambda: set_request(stub, update=[(SIZE_A, 5)], metadata=metadata),
        lambda: list(stub.Subscribe(iter([subscribe_request(
            gnmi_pb2.Subscription(path=THING_A), mode=ONCE)]), metadata=metadata,
            timeout=TIMEOUT)),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as raised:
            call()
        assert code_of(raised) == grpc.StatusCode.UNAUTHENTICATED
    assert value_at(stub, SIZE_A, CONFIG) == 1


def test_without_users_no_metadata_is_needed_and_without_commit_confirmed_no_extension(
        loop: LoopThread) -> None:
    server, _, _ = serve(loop)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            answer = stub.Capabilities(gnmi_pb2.CapabilityRequest(), timeout=TIMEOUT)
            assert list(answer.extension) == []
            assert value_at(stub, SIZE_A, CONFIG) == 1
            commit = gnmi_ext_pb2.Commit(id="c1", commit=gnmi_ext_pb2.CommitRequest())
            with pytest.raises(grpc.RpcError) as raised:
                set_request(stub, update=[(SIZE_A, 5)], commit=commit, metadata=())
            assert code_of(raised) == grpc.StatusCode.UNIMPLEMENTED
            assert value_at(stub, SIZE_A, CONFIG) == 1
    finally:
        loop.call(server.stop())


# ---- Get ----------------------------------------------------------------------------------------

def test_get_config_is_the_stored_tree_and_all_adds_state(target: Target) -> None:
    stub = target.stub
    target.face.counter = 7
    assert value_at(stub, path(), CONFIG) == factory_tree()
    everything = value_at(stub, path(), ALL)
    assert everything["test-model:status"] == {"uptime": 42}
    [thing] = everything["test-model:things"]["thing"]
    assert thing["state"] == {"name": "a", "size": 1, "counter": 7}
    assert thing["config"] == {"name": "a", "size": 1}
    assert value_at(stub, THING_A, gnmi_pb2.GetRequest.DataType.Value("ALL")) == thing
    # STATE: the operational tree without its config containers
    state = value_at(stub, THING_A, STATE)
    assert "config" not in state and state["state"]["counter"] == 7
    assert state["name"] == "a"
    with pytest.raises(grpc.RpcError) as raised:
        get(stub, path("things", ("thing", {"name": "a"}), "state"), data_type=CONFIG)
    assert code_of(raised) == grpc.StatusCode.NOT_FOUND


def test_get_one_notification_per_path_with_timestamp_from_the_clock(target: Target) -> None:
    stub = target.stub
    first = get(stub, SIZE_A, THING_A, data_type=CONFIG)
    assert [len(n.update) for n in first.notification] == [1, 1]
    assert [n.update[0].path for n in first.notification] == [SIZE_A, THING_A]
    assert json.loads(first.notification[0].update[0].val.json_ietf_val) == 1  # a bare leaf
    target.clock.advance(5.0)
    second = get(stub, SIZE_A, data_type=CONFIG)
    step = second.notification[0].timestamp - first.notification[0].timestamp
    assert step == 5_000_000_000
    wall = datetime.datetime.fromtimestamp(second.notification[0].timestamp / 1e9, datetime.UTC)
    assert abs((wall - datetime.datetime.now(datetime.UTC)).total_seconds()) < 60


def test_module_qualified_and_bare_names_and_module_origins_read_the_same(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    expected = {"config": {"level": 3}}
    forms = [
        path("things", ("thing", {"name": "a"}), "extra"),
        path("test-model:things", ("thing", {"name": "a"}), "test-augments:extra"),
        path("things", ("thing", {"name": "a"}), "test-augments:extra"),
        path("things", ("thing", {"name": "a"}), "extra", origin="test-model"),  # pygnmi's way
        path("test-model:things", ("test-model:thing", {"name": "a"}), "extra", origin="test"),
        path("things", ("thing", {"name": "a"}), "extra", origin="rfc7951"),
    ]
    for form in forms:
        assert value_at(stub, form, CONFIG) == expected, form
    # the deprecated string elements (gNMI before 0.4), path-strings escaping included
    old_style = gnmi_pb2.Path(element=["things", "thing[name=a]", "extra"])
    assert value_at(stub, old_style, CONFIG) == expected
    for unknown in ("other-model", "openconfig-interfaces"):
        with pytest.raises(grpc.RpcError) as raised:
            get(stub, path("things", origin=unknown))
        assert code_of(raised) == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as raised:  # origin in both prefix and path
        get(stub, path("things", origin="test"), prefix=path(origin="test"))
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT


def test_get_missing_nodes_are_not_found_and_keys_compare_as_strings(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    for missing in (path("things", ("thing", {"name": "zz"})),
                    path("things", ("thing", {"name": "a"}), "config", "colour"),
                    path("things", ("slot", {"index": "2"})),
                    path("gizmos")):
        with pytest.raises(grpc.RpcError) as raised:
            get(stub, missing)
        assert code_of(raised) == grpc.StatusCode.NOT_FOUND, missing
    assert value_at(stub, path("things", ("slot", {"index": "1"}), "config"), CONFIG) == {
        "index": 1, "label": "first"}
    # a list named without keys: the whole array
    assert value_at(stub, path("things", "slot"), CONFIG) == factory_tree()[
        "test-model:things"]["slot"]


def test_get_prefix_and_target_are_reflected_and_wildcards_expanded(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    set_request(stub, update=[(path("things", ("thing", {"name": "b]/\\"}), "config"),
                               {"name": "b]/\\", "size": 2})])
    escaped = gnmi_pb2.Path(element=["things", "thing[name=b\\]/\\\\]", "config", "size"])
    assert value_at(stub, escaped, CONFIG) == 2
    prefix = path("things", target="dut-1")
    answer = get(stub, path(("thing", {"name": "*"}), "config", "size"), prefix=prefix,
                 data_type=CONFIG)
    [notification] = answer.notification
    assert notification.prefix == prefix
    found = {update.path.elem[0].key["name"]: json.loads(update.val.json_ietf_val)
             for update in notification.update}
    assert found == {"a": 1, "b]/\\": 2}
    assert all([elem.name for elem in update.path.elem] == ["thing", "config", "size"]
               for update in notification.update)
    # no prefix in the request: none in the response
    assert not get(stub, SIZE_A).notification[0].HasField("prefix")
    # a wildcard that selects nothing is an empty notification, not an error
    [empty] = get(stub, path("things", ("thing", {"name": "*"}), "colour")).notification
    assert list(empty.update) == []


def test_get_in_an_encoding_the_face_does_not_offer_is_unimplemented(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    for encoding in (gnmi_pb2.JSON, gnmi_pb2.PROTO, gnmi_pb2.ASCII, gnmi_pb2.BYTES):
        with pytest.raises(grpc.RpcError) as raised:
            get(stub, THING_A, encoding=encoding)
        assert code_of(raised) == grpc.StatusCode.UNIMPLEMENTED
        assert "encoding" in details_of(raised)


def test_a_face_offering_json_is_answered_in_json_val(loop: LoopThread) -> None:
    server, _, _ = serve(loop, face=ThingsFace(encodings=("JSON", "JSON_IETF")))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            answer = stub.Capabilities(gnmi_pb2.CapabilityRequest(), timeout=TIMEOUT)
            assert list(answer.supported_encodings) == [gnmi_pb2.JSON, gnmi_pb2.JSON_IETF]
            [notification] = get(stub, SIZE_A, encoding=gnmi_pb2.JSON, metadata=()).notification
            assert notification.update[0].val.WhichOneof("value") == "json_val"
            assert json.loads(notification.update[0].val.json_val) == 1
    finally:
        loop.call(server.stop())


# ---- Set ----------------------------------------------------------------------------------------

def test_set_applies_deletes_then_replaces_then_updates_and_answers_each(
        target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(path("things", ("thing", {"name": "b"})),
                               {"name": "b", "config": {"name": "b", "size": 2}})])
    thing_b = path("things", ("thing", {"name": "b"}))
    size_b = path("things", ("thing", {"name": "b"}), "config", "size")
    # listed update-first: the server still deletes b, replaces it, then updates its size
    request = gnmi_pb2.SetRequest(
        update=[gnmi_pb2.Update(path=size_b, val=gnmi_pb2.TypedValue(uint_val=9))],
        replace=[gnmi_pb2.Update(path=thing_b, val=json_value(
            {"config": {"name": "b", "size": 3, "colour": "red"}}))],
        delete=[thing_b, path("things", ("thing", {"name": "nonexistent"}))])
    answer = stub.Set(request, metadata=AUTH, timeout=TIMEOUT)
    assert [(result.op, result.path) for result in answer.response] == [
        (Op.DELETE, thing_b), (Op.DELETE, path("things", ("thing", {"name": "nonexistent"}))),
        (Op.REPLACE, thing_b), (Op.UPDATE, size_b)]
    assert answer.timestamp == answer.response[0].timestamp > 0
    assert not answer.HasField("prefix")
    assert value_at(stub, thing_b, CONFIG) == {
        "name": "b", "config": {"name": "b", "size": 9, "colour": "red"}}
    assert target.face.committed[-1] == target.server.config  # one commit, the whole tree
    assert len(target.face.committed) == 2


def test_a_refused_set_changes_nothing(target: Target) -> None:
    stub = target.stub
    with pytest.raises(grpc.RpcError) as raised:
        set_request(stub, update=[(path("things", ("thing", {"name": "b"}), "config"),
                                   {"name": "b", "size": 5}),
                                  (SIZE_A, 500)])
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT
    assert details_of(raised) == "/things/thing[name=a]/config/size: size 500 is above 100"
    assert target.server.config == factory_tree()
    assert value_at(stub, path("things"), CONFIG) == factory_tree()["test-model:things"]
    assert target.face.committed == []


def test_replace_sets_exactly_and_creates_the_entry_with_its_keys(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    set_request(stub, replace=[(path("things", ("slot", {"index": "4"}), "config"),
                                {"index": 4, "label": "fourth"}),
                               (path("things", ("thing", {"name": "a"}), "config"),
                                {"name": "a"})])
    slots = value_at(stub, path("things", "slot"), CONFIG)
    assert slots[1] == {"index": 4, "config": {"index": 4, "label": "fourth"}}  # typed key
    assert value_at(stub, path("things", ("thing", {"name": "a"}), "config"), CONFIG) == {
        "name": "a"}  # size gone: replace is exact
    # the whole tree through a bare top-level name: stored under the module-qualified one
    set_request(stub, replace=[(path("things"), {"thing": [{"name": "z"}]})])
    assert value_at(stub, path(), CONFIG) == {"test-model:things": {"thing": [{"name": "z"}]}}


def test_update_merges_objects_and_list_entries_by_their_keys(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    set_request(stub, update=[(path("test-model:things"), {
        "thing": [{"name": "a", "config": {"size": 7}},
                  {"name": "c", "config": {"name": "c", "size": 3}}],
        "test-model:slot": [{"index": 1, "config": {"label": "uno"}}]})])
    things = value_at(stub, path("things"), CONFIG)
    assert things["thing"] == [
        {"name": "a", "config": {"name": "a", "size": 7},
         "test-augments:extra": {"config": {"level": 3}}},
        {"name": "c", "config": {"name": "c", "size": 3}}]
    assert things["slot"] == [{"index": 1, "config": {"index": 1, "label": "uno"}}]
    # the augment reached by its bare name is updated in place, not duplicated
    set_request(stub, update=[(path("things", ("thing", {"name": "a"}), "extra", "config"),
                               {"level": 4})])
    thing_a = value_at(stub, THING_A, CONFIG)
    assert thing_a["test-augments:extra"] == {"config": {"level": 4}} and "extra" not in thing_a


def test_values_as_scalars_json_val_and_the_deprecated_value(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    label = path("things", ("slot", {"index": "1"}), "config", "label")
    for value, expected in ((gnmi_pb2.TypedValue(int_val=-3), -3),
                            (gnmi_pb2.TypedValue(string_val="x"), "x"),
                            (gnmi_pb2.TypedValue(bool_val=True), True),
                            (gnmi_pb2.TypedValue(double_val=2.5), 2.5),
                            (gnmi_pb2.TypedValue(json_val=b'"via json"'), "via json"),
                            (gnmi_pb2.TypedValue(leaflist_val=gnmi_pb2.ScalarArray(element=[
                                gnmi_pb2.TypedValue(string_val="p"),
                                gnmi_pb2.TypedValue(uint_val=2)])), ["p", 2])):
        set_request(stub, update=[(label, value)])
        assert value_at(stub, label, CONFIG) == expected
    old_style = gnmi_pb2.Update(path=label, value=gnmi_pb2.Value(value=b'"old"',
                                                                  type=gnmi_pb2.JSON_IETF))
    stub.Set(gnmi_pb2.SetRequest(update=[old_style]), metadata=AUTH, timeout=TIMEOUT)
    assert value_at(stub, label, CONFIG) == "old"
    for bad, code in ((gnmi_pb2.TypedValue(ascii_val="x"), grpc.StatusCode.UNIMPLEMENTED),
                      (gnmi_pb2.TypedValue(json_ietf_val=b"{nope"),
                       grpc.StatusCode.INVALID_ARGUMENT),
                      (gnmi_pb2.TypedValue(), grpc.StatusCode.INVALID_ARGUMENT)):
        with pytest.raises(grpc.RpcError) as raised:
            set_request(stub, update=[(label, bad)])
        assert code_of(raised) == code


def test_set_refusals(target: Target) -> None:
    stub = target.stub
    cases = [
        # union_replace is not implemented
        (gnmi_pb2.SetRequest(union_replace=[gnmi_pb2.Update(path=SIZE_A, val=json_value(2))]),
         grpc.StatusCode.UNIMPLEMENTED),
        # a read-only tree
        (gnmi_pb2.SetRequest(update=[gnmi_pb2.Update(path=path("test-model:status"),
                                                     val=json_value({"uptime": 1}))]),
         grpc.StatusCode.INVALID_ARGUMENT),
        # keys in the value contradicting the path's (gNMI 3.4.5)
        (gnmi_pb2.SetRequest(replace=[gnmi_pb2.Update(path=THING_A,
                                                      val=json_value({"name": "b"}))]),
         grpc.StatusCode.INVALID_ARGUMENT),
        # a keyed entry replaced by {} (gNMI 3.4.4)
        (gnmi_pb2.SetRequest(replace=[gnmi_pb2.Update(path=THING_A, val=json_value({}))]),
         grpc.StatusCode.INVALID_ARGUMENT),
        # a write through a list without keys, and a wildcard in a write
        (gnmi_pb2.SetRequest(update=[gnmi_pb2.Update(path=path("things", "thing", "config"),
                                                     val=json_value({"size": 2}))]),
         grpc.StatusCode.INVALID_ARGUMENT),
        (gnmi_pb2.SetRequest(update=[gnmi_pb2.Update(
            path=path("things", ("thing", {"name": "*"}), "config"),
            val=json_value({"size": 2}))]), grpc.StatusCode.INVALID_ARGUMENT),
        # an origin this target does not serve
        (gnmi_pb2.SetRequest(delete=[path("things", origin="cli")]),
         grpc.StatusCode.UNIMPLEMENTED),
    ]
    for request, code in cases:
        with pytest.raises(grpc.RpcError) as raised:
            stub.Set(request, metadata=AUTH, timeout=TIMEOUT)
        assert code_of(raised) == code, request
    assert target.server.config == factory_tree()
    assert target.face.committed == []


def test_delete_of_a_missing_node_is_no_error_and_wildcards_expand(target: Target) -> None:
    stub = target.stub
    answer = set_request(stub, delete=[path("things", ("thing", {"name": "ghost"})),
                                       path("gizmos", "gizmo")])
    assert len(answer.response) == 2
    set_request(stub, update=[(path("things", ("thing", {"name": "b"}), "config"),
                               {"name": "b", "size": 2})])
    set_request(stub, delete=[path("things", ("thing", {"name": "*"}), "config", "size")])
    assert [thing["config"] for thing in value_at(stub, path("things", "thing"), CONFIG)] == [
        {"name": "a"}, {"name": "b"}]
    set_request(stub, delete=[path("things", "thing")])
    assert value_at(stub, path("things"), CONFIG) == {"slot": factory_tree()[
        "test-model:things"]["slot"]}


def test_an_empty_set_is_no_error(target: Target) -> None:
    answer = target.stub.Set(gnmi_pb2.SetRequest(), metadata=AUTH, timeout=TIMEOUT)
    assert list(answer.response) == []
    assert target.face.committed == []


# ---- Commit Confirmed ----------------------------------------------------------------------------

def commit_ext(commit_id: str, action: str, seconds: float | None = None) -> gnmi_ext_pb2.Commit:
    duration = None if seconds is None else duration_pb2.Duration(
        seconds=int(seconds), nanos=int((seconds % 1) * 1e9))
    if action == "commit":
        return gnmi_ext_pb2.Commit(id=commit_id, commit=gnmi_ext_pb2.CommitRequest(
            rollback_duration=duration))
    if action == "set_rollback_duration":
        return gnmi_ext_pb2.Commit(id=commit_id, set_rollback_duration=(
            gnmi_ext_pb2.CommitSetRollbackDuration(rollback_duration=duration)))
    return gnmi_ext_pb2.Commit(id=commit_id, **{action: getattr(
        gnmi_ext_pb2, {"confirm": "CommitConfirm", "cancel": "CommitCancel"}[action])()})


def test_a_confirmed_commit_stays(target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 30))
    assert value_at(stub, SIZE_A, CONFIG) == 50
    assert target.server.pending_commit == "c1"
    set_request(stub, commit=commit_ext("c1", "confirm"))
    assert target.server.pending_commit is None
    target.clock.advance(3600)
    assert value_at(stub, SIZE_A, CONFIG) == 50
    set_request(stub, update=[(SIZE_A, 51)])  # plain Sets again


def test_while_a_commit_waits_other_sets_are_refused(target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 30))
    refusals = [
        (dict(update=[(SIZE_A, 60)]), grpc.StatusCode.FAILED_PRECONDITION),
        (dict(update=[(SIZE_A, 60)], commit=commit_ext("c2", "commit", 30)),
         grpc.StatusCode.FAILED_PRECONDITION),
        (dict(commit=commit_ext("c2", "confirm")), grpc.StatusCode.INVALID_ARGUMENT),
        (dict(commit=commit_ext("c2", "cancel")), grpc.StatusCode.INVALID_ARGUMENT),
        (dict(commit=commit_ext("c1", "set_rollback_duration", 0)),
         grpc.StatusCode.INVALID_ARGUMENT),
        (dict(update=[(SIZE_A, 60)], commit=commit_ext("c1", "confirm")),
         grpc.StatusCode.INVALID_ARGUMENT),
        (dict(commit=commit_ext("", "confirm")), grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for arguments, code in refusals:
        with pytest.raises(grpc.RpcError) as raised:
            set_request(stub, **arguments)  # type: ignore[arg-type]
        assert code_of(raised) == code, arguments
        if code == grpc.StatusCode.FAILED_PRECONDITION:
            assert "'c1'" in details_of(raised)
    assert value_at(stub, SIZE_A, CONFIG) == 50
    assert target.server.pending_commit == "c1"


def test_confirm_or_cancel_without_a_waiting_commit_is_failed_precondition(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    for action in ("confirm", "cancel"):
        with pytest.raises(grpc.RpcError) as raised:
            set_request(stub, commit=commit_ext("c9", action))
        assert code_of(raised) == grpc.StatusCode.FAILED_PRECONDITION


def test_cancel_puts_the_configuration_back_through_the_face(target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 30))
    set_request(stub, commit=commit_ext("c1", "cancel"))
    assert value_at(stub, SIZE_A, CONFIG) == 1
    assert target.face.committed[-1] == factory_tree()
    assert target.server.pending_commit is None


def test_an_unconfirmed_commit_rolls_back_when_its_time_is_up(target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 10))
    target.clock.advance(9.5)
    assert value_at(stub, SIZE_A, CONFIG) == 50
    target.clock.advance(1.0)
    assert value_at(stub, SIZE_A, CONFIG) == 1  # seen by the next RPC
    assert target.face.committed[-1] == factory_tree()
    with pytest.raises(grpc.RpcError) as raised:
        set_request(stub, commit=commit_ext("c1", "confirm"))
    assert code_of(raised) == grpc.StatusCode.FAILED_PRECONDITION
    set_request(stub, update=[(SIZE_A, 2)])  # nothing waits any more


def test_set_rollback_duration_restarts_the_wait_and_the_default_is_ten_minutes(
        target: Target) -> None:
    stub = target.stub
    set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 10))
    target.clock.advance(8)
    set_request(stub, commit=commit_ext("c1", "set_rollback_duration", 10))
    target.clock.advance(8)
    assert value_at(stub, SIZE_A, CONFIG) == 50
    target.clock.advance(2.5)
    assert value_at(stub, SIZE_A, CONFIG) == 1
    set_request(stub, update=[(SIZE_A, 60)], commit=commit_ext("c2", "commit"))
    target.clock.advance(599)
    assert target.server.pending_commit == "c2"
    target.clock.advance(2)
    assert value_at(stub, SIZE_A, CONFIG) == 1
    assert target.server.pending_commit is None


def test_factory_reset_drops_a_waiting_commit(target: Target) -> None:
    set_request(target.stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 10))
    target.server.factory_reset()
    assert target.server.pending_commit is None
    assert value_at(target.stub, SIZE_A, CONFIG) == 1
    set_request(target.stub, update=[(SIZE_A, 3)])


# ---- Subscribe -------------------------------------------------------------------------------

def test_once_sends_the_values_a_sync_and_ends(stub: gnmi_pb2_grpc.gNMIStub) -> None:
    request = subscribe_request(gnmi_pb2.Subscription(path=SIZE_A),
                                gnmi_pb2.Subscription(path=path("things", ("thing", {"name": "*"}),
                                                                "state", "counter")),
                                gnmi_pb2.Subscription(path=path("things",
                                                                ("thing", {"name": "x"}))),
                                mode=ONCE)
    responses = list(stub.Subscribe(iter([request]), metadata=AUTH, timeout=TIMEOUT))
    assert [values_of(response) for response in responses[:-1]] == [
        {"/things/thing[name=a]/config/size": 1},
        {"/things/thing[name=a]/state/counter": 0}]
    assert responses[-1].sync_response
    assert all(response.update.timestamp > 0 for response in responses[:-1])
    only_sync = list(stub.Subscribe(iter([subscribe_request(
        gnmi_pb2.Subscription(path=SIZE_A), mode=ONCE, updates_only=True)]),
        metadata=AUTH, timeout=TIMEOUT))
    assert [response.sync_response for response in only_sync] == [True]


def test_poll_answers_each_poll_with_values_and_a_sync(target: Target) -> None:
    counter = path("things", ("thing", {"name": "a"}), "state", "counter")
    prefix = path(target="dut-1")
    requests = Requests(subscribe_request(gnmi_pb2.Subscription(path=counter), mode=POLL,
                                          prefix=prefix))
    call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    first, sync = next(call), next(call)
    assert values_of(first) == {"/things/thing[name=a]/state/counter": 0}
    assert first.update.prefix == prefix and sync.sync_response
    target.face.counter = 5
    requests.send(gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll()))
    assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 5}
    assert next(call).sync_response
    requests.send(subscribe_request(gnmi_pb2.Subscription(path=counter)))  # not allowed
    with pytest.raises(grpc.RpcError) as raised:
        next(call)
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT


def test_a_call_beginning_without_a_subscription_list_is_invalid(
        stub: gnmi_pb2_grpc.gNMIStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Subscribe(iter([gnmi_pb2.SubscribeRequest(poll=gnmi_pb2.Poll())]),
                            metadata=AUTH, timeout=TIMEOUT))
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT


def test_stream_sample_sends_every_interval(target: Target) -> None:
    counter = path("things", ("thing", {"name": "a"}), "state", "counter")
    requests = Requests(subscribe_request(gnmi_pb2.Subscription(
        path=counter, mode=gnmi_pb2.SAMPLE, sample_interval=50_000_000)))
    call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    try:
        assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 0}
        assert next(call).sync_response
        started = time.monotonic()
        seen = [values_of(next(call)) for _ in range(4)]
        elapsed = time.monotonic() - started
        assert all(value == {"/things/thing[name=a]/state/counter": 0} for value in seen)
        assert 0.15 <= elapsed < 1.0  # four samples 50 ms apart, unchanged values included
    finally:
        call.cancel()


def test_stream_sample_with_suppress_redundant_sends_changes_only(target: Target) -> None:
    counter = path("things", ("thing", {"name": "a"}), "state", "counter")
    requests = Requests(subscribe_request(gnmi_pb2.Subscription(
        path=counter, mode=gnmi_pb2.SAMPLE, sample_interval=20_000_000,
        suppress_redundant=True)))
    call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    try:
        assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 0}
        assert next(call).sync_response
        time.sleep(0.15)  # several unchanged samples, none sent
        target.face.counter = 1
        assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 1}
        target.face.counter = 2
        assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 2}
    finally:
        call.cancel()


def test_stream_updates_only_begins_with_the_sync(target: Target) -> None:
    requests = Requests(subscribe_request(gnmi_pb2.Subscription(
        path=SIZE_A, mode=gnmi_pb2.SAMPLE, sample_interval=30_000_000), updates_only=True))
    call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    try:
        assert next(call).sync_response
        assert values_of(next(call)) == {"/things/thing[name=a]/config/size": 1}
    finally:
        call.cancel()


def test_stream_on_change_follows_sets_counters_and_deletions(target: Target) -> None:
    stub = target.stub
    requests = Requests(subscribe_request(
        gnmi_pb2.Subscription(path=path("things", ("thing", {"name": "*"}), "config"),
                              mode=gnmi_pb2.ON_CHANGE),
        gnmi_pb2.Subscription(path=path("things", ("thing", {"name": "a"}), "state",
                                        "counter"), mode=gnmi_pb2.ON_CHANGE)))
    call = stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    try:
        initial = [next(call), next(call), next(call)]
        assert [values_of(response) for response in initial[:2]] == [
            {"/things/thing[name=a]/config": {"name": "a", "size": 1}},
            {"/things/thing[name=a]/state/counter": 0}]
        assert initial[2].sync_response
        started = time.monotonic()
        set_request(stub, update=[(path("things", ("thing", {"name": "b"}), "config"),
                                   {"name": "b", "size": 4})])
        assert values_of(next(call)) == {"/things/thing[name=b]/config": {"name": "b",
                                                                          "size": 4}}
        assert time.monotonic() - started < 0.5
        target.face.counter = 3  # no Set: seen by the 100 ms poll of the operational tree
        assert values_of(next(call)) == {"/things/thing[name=a]/state/counter": 3}
        set_request(stub, delete=[path("things", ("thing", {"name": "b"}))])
        gone = next(call)
        assert values_of(gone) == {}
        assert [[(elem.name, dict(elem.key)) for elem in deleted.elem]
                for deleted in gone.update.delete] == [
            [("things", {}), ("thing", {"name": "b"}), ("config", {})]]
    finally:
        call.cancel()


def test_target_defined_is_on_change_for_configuration_and_sample_for_state(
        target: Target) -> None:
    stub = target.stub
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Subscribe(iter([subscribe_request(gnmi_pb2.Subscription(
            path=SIZE_A, sample_interval=1_000_000))]), metadata=AUTH, timeout=TIMEOUT))
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT
    requests = Requests(subscribe_request(
        gnmi_pb2.Subscription(path=SIZE_A),
        gnmi_pb2.Subscription(path=path("things", ("thing", {"name": "a"}), "state"))))
    call = stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
    try:
        assert len([next(call) for _ in range(3)]) == 3  # two values and the sync
        started = time.monotonic()
        set_request(stub, update=[(SIZE_A, 8)])
        assert values_of(next(call)) == {"/things/thing[name=a]/config/size": 8}
        assert time.monotonic() - started < 0.5  # on change
        sample = next(call)  # the state: sampled once a second, size 8 by then
        assert values_of(sample) == {"/things/thing[name=a]/state": {
            "name": "a", "size": 8, "counter": 0}}
        assert 0.5 < time.monotonic() - started < 2.5
    finally:
        call.cancel()


def test_sample_interval_below_the_minimum_is_refused(stub: gnmi_pb2_grpc.gNMIStub) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        list(stub.Subscribe(iter([subscribe_request(gnmi_pb2.Subscription(
            path=SIZE_A, mode=gnmi_pb2.SAMPLE, sample_interval=1000))]),
            metadata=AUTH, timeout=TIMEOUT))
    assert code_of(raised) == grpc.StatusCode.INVALID_ARGUMENT


def test_cancelled_subscriptions_leave_no_thread_behind(target: Target) -> None:
    def cycle() -> None:
        requests = Requests(subscribe_request(
            gnmi_pb2.Subscription(path=THING_A, mode=gnmi_pb2.ON_CHANGE),
            gnmi_pb2.Subscription(path=SIZE_A, mode=gnmi_pb2.SAMPLE,
                                  sample_interval=20_000_000)))
        call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=TIMEOUT)
        while not next(call).sync_response:
            pass
        call.cancel()
        requests.send(None)

    cycle()
    settle(lambda: target.server.active_subscriptions == 0)
    before = threading.active_count()
    for _ in range(40):
        cycle()
    assert settle(lambda: target.server.active_subscriptions == 0)
    assert settle(lambda: threading.active_count() <= before + 2), (
        before, threading.active_count(), [thread.name for thread in threading.enumerate()])


def test_closing_the_channel_ends_the_stream(target: Target) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{target.server.port}") as channel:
        stub = gnmi_pb2_grpc.gNMIStub(channel)
        call = stub.Subscribe(iter(Requests(subscribe_request(gnmi_pb2.Subscription(
            path=THING_A, mode=gnmi_pb2.ON_CHANGE)))), metadata=AUTH)
        while not next(call).sync_response:
            pass
        assert target.server.active_subscriptions == 1
    assert settle(lambda: target.server.active_subscriptions == 0)


def settle(condition: Any, seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# ---- faults ------------------------------------------------------------------------------------

def test_latency_holds_each_reply(target: Target) -> None:
    target.server.faults.inject(Fault("latency", seconds=0.3, count=1))
    started = time.monotonic()
    assert value_at(target.stub, SIZE_A) == 1
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    assert value_at(target.stub, SIZE_A) == 1
    assert time.monotonic() - started < 0.3  # the count is used up


def test_drop_reads_the_request_and_never_answers(target: Target) -> None:
    target.server.faults.inject(Fault("drop", count=1))
    with pytest.raises(grpc.RpcError) as raised:
        target.stub.Set(gnmi_pb2.SetRequest(update=[gnmi_pb2.Update(
            path=SIZE_A, val=json_value(9))]), metadata=AUTH, timeout=0.3)
    assert code_of(raised) == grpc.StatusCode.DEADLINE_EXCEEDED
    assert value_at(target.stub, SIZE_A, CONFIG) == 1  # not carried out; the next answered


def test_reset_aborts_with_unavailable(target: Target) -> None:
    target.server.faults.inject(Fault("reset", count=1))
    with pytest.raises(grpc.RpcError) as raised:
        set_request(target.stub, update=[(SIZE_A, 9)])
    assert code_of(raised) == grpc.StatusCode.UNAVAILABLE
    assert value_at(target.stub, SIZE_A, CONFIG) == 1


def test_freeze_answers_nothing_until_cleared(target: Target) -> None:
    faults = target.server.faults
    faults.inject(Fault("freeze"))
    with pytest.raises(grpc.RpcError) as raised:
        get(target.stub, SIZE_A, timeout=0.3)
    assert code_of(raised) == grpc.StatusCode.DEADLINE_EXCEEDED
    threading.Timer(0.3, faults.clear, args=("freeze",)).start()
    started = time.monotonic()
    assert value_at(target.stub, SIZE_A) == 1
    assert time.monotonic() - started >= 0.25


@pytest.mark.parametrize("kind", ["garbage", "truncate"])
def test_garbage_and_truncate_are_an_internal_error(target: Target, kind: str) -> None:
    target.server.faults.inject(Fault(kind, count=1))
    with pytest.raises(grpc.RpcError) as raised:
        get(target.stub, SIZE_A)
    assert code_of(raised) == grpc.StatusCode.INTERNAL
    assert "garbled reply" in details_of(raised)
    assert value_at(target.stub, SIZE_A) == 1


def test_a_stream_stops_sending_on_drop_and_fails_on_reset(target: Target) -> None:
    requests = Requests(subscribe_request(gnmi_pb2.Subscription(
        path=SIZE_A, mode=gnmi_pb2.SAMPLE, sample_interval=30_000_000)))
    call = target.stub.Subscribe(iter(requests), metadata=AUTH, timeout=1.0)
    assert values_of(next(call)) and next(call).sync_response
    target.server.faults.inject(Fault("drop", count=1))
    received = 0
    with pytest.raises(grpc.RpcError) as raised:
        for _ in call:
            received += 1
    assert code_of(raised) == grpc.StatusCode.DEADLINE_EXCEEDED
    assert received <= 2  # at most what was on its way when the fault came
    target.server.faults.inject(Fault("reset", count=1))
    with pytest.raises(grpc.RpcError) as raised:
        list(target.stub.Subscribe(iter([subscribe_request(gnmi_pb2.Subscription(
            path=SIZE_A), mode=ONCE)]), metadata=AUTH, timeout=TIMEOUT))
    assert code_of(raised) == grpc.StatusCode.UNAVAILABLE


# ---- TLS and the lifecycle ---------------------------------------------------------------------

@dataclass(frozen=True)
class Pki:
    ca_pem: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes


@pytest.fixture(scope="module")
def pki() -> Pki:
    authority = Authority("test ca")
    server, client = authority.issue("dut", server=True), authority.issue(USER, server=False)
    return Pki(authority.cert_pem, server.cert_pem, server.key_pem, client.cert_pem,
               client.key_pem)


def test_tls_with_client_certificates(loop: LoopThread, pki: Pki) -> None:
    server, _, _ = serve(loop, tls=GnmiTls(pki.server_cert, pki.server_key, pki.ca_pem),
                         users={USER: PASSWORD})
    address = f"127.0.0.1:{server.port}"
    try:
        with_cert = grpc.ssl_channel_credentials(pki.ca_pem, pki.client_key, pki.client_cert)
        with grpc.secure_channel(address, with_cert) as channel:
            stub = gnmi_pb2_grpc.gNMIStub(channel)
            assert value_at(stub, SIZE_A, CONFIG) == 1
        without_cert = grpc.ssl_channel_credentials(pki.ca_pem)
        with grpc.secure_channel(address, without_cert) as channel:
            with pytest.raises(grpc.RpcError) as raised:
                get(gnmi_pb2_grpc.gNMIStub(channel), SIZE_A, timeout=2.0)
            assert code_of(raised) == grpc.StatusCode.UNAVAILABLE
        with grpc.insecure_channel(address) as channel:
            with pytest.raises(grpc.RpcError) as raised:
                get(gnmi_pb2_grpc.gNMIStub(channel), SIZE_A, timeout=2.0)
            assert code_of(raised) == grpc.StatusCode.UNAVAILABLE
    finally:
        loop.call(server.stop())


def test_tls_without_a_client_ca_takes_any_client(loop: LoopThread, pki: Pki) -> None:
    server, _, _ = serve(loop, tls=GnmiTls(pki.server_cert, pki.server_key))
    try:
        credentials = grpc.ssl_channel_credentials(pki.ca_pem)
        with grpc.secure_channel(f"127.0.0.1:{server.port}", credentials) as channel:
            assert value_at(gnmi_pb2_grpc.gNMIStub(channel), SIZE_A, CONFIG) == 1
    finally:
        loop.call(server.stop())


def test_stop_ends_open_streams_at_once_and_a_real_clock_rolls_back_alone(
        loop: LoopThread) -> None:
    from emulators.clock import RealClock

    face = ThingsFace()
    server = GnmiServer("dut", face, clock=RealClock(), commit_confirmed=True)
    loop.call(server.start())
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = gnmi_pb2_grpc.gNMIStub(channel)
    try:
        set_request(stub, update=[(SIZE_A, 50)], commit=commit_ext("c1", "commit", 0.2),
                    metadata=())
        assert settle(lambda: face.committed[-1] == factory_tree(), 2.0)  # no RPC needed
        assert server.config == factory_tree()
        call = stub.Subscribe(iter(Requests(subscribe_request(gnmi_pb2.Subscription(
            path=THING_A, mode=gnmi_pb2.ON_CHANGE)))))
        while not next(call).sync_response:
            pass
    finally:
        started = time.monotonic()
        loop.call(server.stop())
        stopping = time.monotonic() - started
        channel.close()
    assert stopping < 1.5
    assert server.active_subscriptions == 0
