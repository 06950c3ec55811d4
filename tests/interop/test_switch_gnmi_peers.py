"""Third parties against the emulated switch over gNMI (emulators/switch/device.py, not a
test face): Google's oc-config-validate runner, and pygnmi.

Three switches on the real clock (their telemetry timestamps and sample intervals are
checked against real time), shared by the module and put back to factory before each
use, checked: OpenConfig with the project's augments, OpenConfig with Arista's, SONiC.

- **oc-config-validate** (``python -m oc_config_validate`` through
  :mod:`tests.support.oc_runner`, which gives its bindings the leaves the project's
  augments add to OpenConfig's own containers) runs :func:`runner_cases` against each
  OpenConfig switch: config-then-state cases (a queue-management profile and its
  WRED/ECN curve, an output queue's profile binding, an interface, a profile created
  and deleted), a scalar Set of a uint64 leaf, a Get of ``/qos/queues``, and telemetry
  ONCE, STREAM SAMPLE and ON_CHANGE (a Set while subscribed). Each reply is checked
  against the runner's pyangbind bindings. The results file must hold every case, each
  passed, but for :data:`KNOWN_DEFECTS` (strict xfail, each naming the emulator's defect)
  and two controls that must fail. Not run: the telemetry classes
  ``CheckLeafsFromModel``, which take one Update per leaf; this target sends one Update
  per subscribed node holding its JSON subtree (gNMI 0.10 section 2.3.1 allows both).
- **pygnmi** (in a subprocess: its gNMI stubs cannot share a process with gnmi-pb's)
  asks an OpenConfig and a SONiC switch for their Capabilities, Gets the QoS tree
  (the PORT table), Sets a WRED/ECN profile and binds it to queue 3 of Ethernet1 (a
  WRED_PROFILE row and the QUEUE row), Gets it back, and subscribes STREAM SAMPLE to that
  queue's state (its COUNTERS_DB row, found through COUNTERS_QUEUE_NAME_MAP): a
  congestion burst injected into the switch once the subscription is in sync makes the
  queue's ECN-marked packets grow between two samples.

A missing peer skips (fails with CI=true: tests/support/peers.py).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from emulators.clock import RealClock
from emulators.faults import Fault
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort
from tests.support import oc_runner
from tests.support.gnmi_switch import factory_reset_checked, serving
from tests.support.netconf import PASSWORD, USER
from tests.support.oc_bindings import HOW_TO_INSTALL
from tests.support.peers import missing, require_module, separate_process_script

PORTS = {f"Ethernet{n}": PhysicalPort("400G", 30_010.0) for n in range(1, 5)}
PORT, QUEUE_ID = "Ethernet1", 3
SWITCHES: dict[str, dict[str, Any]] = {
    "oc-msoctl": {"face": "openconfig", "augments": "msoctl"},
    "oc-arista": {"face": "openconfig", "augments": "arista"},
    "sonic": {"face": "sonic"},
}
OPENCONFIG = ("oc-msoctl", "oc-arista")
ECN_MIN, ECN_MAX, ECN_PERCENT = 1_500_000, 15_000_000, 20
BURST = Fault("congestion", target=f"{PORT}@{QUEUE_ID}", seconds=0.05)


@pytest.fixture(scope="module")
def switches() -> Iterator[Mapping[str, SwitchDevice]]:
    devices = {name: SwitchDevice(name, PORTS, clock=RealClock(), users={USER: PASSWORD},
                                  **options) for name, options in SWITCHES.items()}
    with serving(devices) as served:
        yield served


def output_queue(root: str, interface: str, queue: str) -> str:
    """The path of an interface's output queue under the QoS tree at ``root``."""
    return (f"{root}/interfaces/interface[interface-id={interface}]"
            f"/output/queues/queue[name={queue}]")


def queue_name(device: SwitchDevice, queue_id: int) -> str:
    """The switch's own name of its queue ``queue_id`` (OpenConfig), from its factory tree."""
    assert device.face is not None
    queues = device.face.factory()["openconfig-qos:qos"]["queues"]["queue"]
    name: str = next(q["name"] for q in queues if q["config"]["queue-id"] == queue_id)
    return name


# ---- oc-config-validate's runner ---------------------------------------------------

QOS, INTERFACES = "qos.openconfig_qos", "interfaces.openconfig_interfaces"
PROFILES = "/qos/queue-management-profiles/queue-management-profile"


def runner_cases(switch: str, queue: str) -> list[oc_runner.Case]:
    """The runner's cases against the OpenConfig switch ``switch``, whose queue 3 is named
    ``queue``. They run in this order: the profile exists before the queue is bound to it.

    The interfaces tree is the same whatever the augments, and its case costs the runner
    seconds (its bindings build a whole interface, subinterfaces and all, about 0.5 s,
    four times a case): so one switch runs it."""
    Case = oc_runner.Case
    out_queue, every_port = output_queue("/qos", PORT, queue), output_queue("/qos", "*", queue)
    return [
        Case("profile config mirrored in state", "config_state.SetConfigCheckState", {
            "xpath": f"{PROFILES}[name=roce-ecn]", "model": QOS,
            "json_value": {"name": "roce-ecn"}}),
        Case("WRED/ECN curve mirrored in state", "config_state.SetConfigCheckState", {
            "xpath": f"{PROFILES}[name=roce-ecn]/wred/uniform", "model": QOS,
            "json_value": {"min-threshold": str(ECN_MIN), "max-threshold": str(ECN_MAX),
                           "enable-ecn": True, "max-drop-probability-percent": ECN_PERCENT}}),
        Case(SCALAR_SET, "set.SetUpdate", {
            "xpath": f"{PROFILES}[name=roce-ecn]/wred/uniform/config/max-threshold",
            "value": ECN_MAX_LATER}),
        Case(SCALAR_READ_BACK, "get.GetCompare", {
            "xpath": f"{PROFILES}[name=roce-ecn]/wred/uniform/state/max-threshold",
            "want": str(ECN_MAX_LATER)}),
        Case("ON_CHANGE: a Set of the curve's probability streamed",
             "telemetry_onchange.SubscribeAndSet", {
                 "xpath": f"{PROFILES}[name=roce-ecn]/wred/uniform/state"
                          "/max-drop-probability-percent",
                 "set_xpath": f"{PROFILES}[name=roce-ecn]/wred/uniform/config"
                              "/max-drop-probability-percent",
                 "set_value": ECN_PERCENT + 10, "timeout_secs": 2}),
        Case("output queue bound to the profile", "config_state.SetConfigCheckState", {
            "xpath": out_queue, "model": QOS,
            "json_value": {"name": queue, "queue-management-profile": "roce-ecn"}}),
        *([Case("interface config mirrored in state", "config_state.SetConfigCheckState", {
            "xpath": "/interfaces/interface[name=Ethernet2]", "model": INTERFACES,
            "json_value": {"name": "Ethernet2", "type": "iana-if-type:ethernetCsmacd",
                           "description": "to leaf 2", "mtu": 9100, "enabled": True}})]
          if switch == "oc-msoctl" else []),
        Case("spare profile created", "config_state.SetConfigCheckState", {
            "xpath": f"{PROFILES}[name=spare]", "model": QOS,
            "json_value": {"name": "spare"}}),
        Case("spare profile deleted, config and state", "config_state.DeleteConfigCheckState",
             {"xpath": f"{PROFILES}[name=spare]"}),
        Case("Get /qos/queues", "get.GetJsonCheckCompare", {
            "xpath": "/qos/queues", "model": QOS,
            "want_json": {"queue": [{"name": queue, "config": {"queue-id": QUEUE_ID},
                                     "state": {"queue-id": QUEUE_ID}}]}}),
        Case("ONCE: the queue's state on every port", "telemetry_once.CountUpdatesCheckType", {
            "xpaths": [f"{every_port}/state"], "values_type": "json_ietf_val",
            "updates_count": len(PORTS), "max_delay_secs": 2}),
        Case("ONCE: ECN-marked and dropped packets", "telemetry_once.CheckLeafsFromList", {
            "xpaths": [f"{out_queue}/state/ecn-marked-pkts", f"{out_queue}/state/dropped-pkts"],
            "update_paths": [f"{out_queue}/state/ecn-marked-pkts",
                             f"{out_queue}/state/dropped-pkts"],
            "notifications_count": 2, "max_delay_secs": 2}),
        # The runner wants sample_timeout // sample_interval + 1 updates (whole seconds):
        # the initial one and a sample at 2 s fit in 3 s; 1 s in 1 s would need a sample
        # exactly at the deadline.
        Case("SAMPLE: the queue's state on every port", "telemetry_sample.CountUpdatePaths", {
            "xpath": f"{every_port}/state", "sample_interval": 2, "sample_timeout": 3,
            "update_paths_count": len(PORTS)}),
        *(case for case, _ in controls(queue)),
    ]


def controls(queue: str) -> list[tuple[oc_runner.Case, str]]:
    """Cases the runner must fail, and what its log then says: its verdicts are live.
    The second shows where the bindings given to the runner stop: the augments'
    containers in an output queue (fast CNP) are not grafted."""
    Case = oc_runner.Case
    return [
        (Case("control: queue 3 is not queue 4", "get.GetCompare", {
            "xpath": f"/qos/queues/queue[name={queue}]/config/queue-id", "want": 4}),
         "AssertionError: 4 != 3"),
        (Case("control: an augment container the bindings lack", "get.GetJsonCheck", {
            "xpath": output_queue("/qos", PORT, queue), "model": QOS}),
         "Invalid attribute specified (fast-cnp)"),
    ]


SCALAR_SET = "scalar Set of a uint64 leaf (int_val)"
SCALAR_READ_BACK = "the scalar-set uint64 reads back in state"
ECN_MAX_LATER = 20_000_000
KNOWN_DEFECTS: dict[str, tuple[str, str]] = {}
"""Runner cases that fail for a defect of the emulator: case name -> the defect, and what
the runner's log says of it. They run as strict xfail raising :class:`KnownDefect` only
when the log says that: a fix shows up as a failure (remove the entry), a failure of
another kind as itself."""


class KnownDefect(AssertionError):
    """A runner case failed the way :data:`KNOWN_DEFECTS` says it does."""


@pytest.fixture(scope="module")
def runner_results(switches: Mapping[str, SwitchDevice],
                   tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each OpenConfig switch's results file, the runners run side by side."""
    if importlib.util.find_spec("oc_config_validate") is None:  # importing it here would clash
        missing(f"oc-config-validate is not installed ({HOW_TO_INSTALL})")
    started: dict[str, oc_runner.RunnerProcess] = {}
    try:
        for name in OPENCONFIG:
            factory_reset_checked(switches[name])
            cases = runner_cases(name, queue_name(switches[name], QUEUE_ID))
            started[name] = oc_runner.start(f"127.0.0.1:{switches[name].port}", cases,
                                            tmp_path_factory.mktemp(f"runner-{name}"),
                                            username=USER, password=PASSWORD)
        return {name: run.wait() for name, run in started.items()}
    finally:
        for run in started.values():
            run.stop()


def by_case(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["test_name"]: entry for entry in results["results"]}


@pytest.mark.parametrize("switch", OPENCONFIG)
def test_the_runner_ran_every_case(runner_results: dict[str, dict[str, Any]],
                                   switch: str) -> None:
    results = runner_results[switch]
    wanted = [case.name for case in runner_cases(switch, "queue3")]
    assert results["tests_total"] == len(wanted), results["output"][-3000:]
    assert [entry["test_name"] for entry in results["results"]] == wanted
    for entry in results["results"]:  # a case whose class found no test method ran nothing
        assert entry["results"], entry["test_name"]


CASE_PARAMS = [
    pytest.param(switch, case.name, id=f"{switch}-{case.name}",
                 marks=[pytest.mark.xfail(strict=True, raises=KnownDefect,
                                          reason=KNOWN_DEFECTS[case.name][0])]
                 if case.name in KNOWN_DEFECTS else [])
    for switch in OPENCONFIG for case in runner_cases(switch, "queue3")
    if case.name not in {control.name for control, _ in controls("queue3")}]


@pytest.mark.parametrize(("switch", "case"), CASE_PARAMS)
def test_runner_case_passes(runner_results: dict[str, dict[str, Any]], switch: str,
                            case: str) -> None:
    entry = by_case(runner_results[switch])[case]
    failed = [method for method in entry["results"] if method["result"] != "PASS"]
    logs = "\n".join(f"{method['test_case']}: {method['result']}\n{method['log']}"
                     for method in failed)
    if failed and case in KNOWN_DEFECTS and KNOWN_DEFECTS[case][1] in logs:
        raise KnownDefect(logs)
    assert entry["success"] and not failed, logs


@pytest.mark.parametrize("switch", OPENCONFIG)
def test_runner_controls_fail(runner_results: dict[str, dict[str, Any]], switch: str) -> None:
    for case, said in controls("queue3"):
        entry = by_case(runner_results[switch])[case.name]
        assert not entry["success"], case.name
        assert [method["result"] for method in entry["results"]] == ["FAIL"], case.name
        assert said in entry["results"][0]["log"], entry["results"][0]["log"]


def test_the_runner_is_given_the_leaves_the_augments_add_to_openconfig_containers() -> None:
    require_module("pyang", how_to_install="pip install pyang (in the dev extra)")
    state = "qos/interfaces/interface/output/queues/queue/state"
    assert oc_runner.augment_leaves() == [
        oc_runner.AugmentLeaf(state, "pfc-pause-frames-sent", "oc-yang:counter64"),
        oc_runner.AugmentLeaf(state, "pfc-pause-frames-received", "oc-yang:counter64")]


# ---- pygnmi -------------------------------------------------------------------------

SCRIPT = """
import json, sys
from pygnmi.client import gNMIclient

settings = json.loads(sys.argv[1])
out = {}


def value(answer):
    return answer["notification"][0]["update"][0]["val"]


with gNMIclient(target=("127.0.0.1", settings["port"]), username=settings["user"],
                password=settings["password"], insecure=True, gnmi_timeout=10) as client:
    capabilities = client.capabilities()
    out["models"] = [[model["name"], model["organization"], model["version"]]
                     for model in capabilities["supported_models"]]
    out["encodings"] = capabilities["supported_encodings"]
    out["get"] = value(client.get(path=[settings["get"]], encoding="json_ietf"))
    done = client.set(update=[tuple(update) for update in settings["set"]],
                      encoding="json_ietf")
    out["set"] = [result["op"] for result in done["response"]]
    out["shown"] = value(client.get(path=[settings["show"]], datatype="config",
                                    encoding="json_ietf"))
    stream_path = settings["stream"]
    if settings.get("lookup"):
        names = value(client.get(path=[settings["lookup"]["path"]], encoding="json_ietf"))
        stream_path = stream_path.format(oid=names[settings["lookup"]["key"]])
    stream = client.subscribe2(subscribe={"mode": "stream", "encoding": "json_ietf",
        "subscription": [{"path": stream_path, "mode": "sample",
                          "sample_interval": settings["interval_ns"]}]})
    samples = [stream.get_update(timeout=5)]  # the initial values, up to the sync
    print("in sync", flush=True)  # the test injects its burst now, then answers
    sys.stdin.readline()
    samples += [stream.get_update(timeout=5) for _ in range(settings["samples"])]
    stream.close()
    out["stream_path"] = stream_path
    out["stream"] = [[sample["update"]["timestamp"],
                      [[u["path"], u["val"]] for u in sample["update"]["update"]]]
                     for sample in samples]
print(json.dumps(out))
"""

OC_QOS = "/openconfig-qos:qos"
SONIC_DB = "/sonic-db:CONFIG_DB/localhost"
SAMPLE_NS = 200_000_000
SAMPLES = 4


def pygnmi_settings(device: SwitchDevice) -> dict[str, Any]:
    """What the script asks of ``device``, in its model's paths."""
    if device.face_name == "sonic":
        return {
            "get": f"{SONIC_DB}/PORT",
            "set": [[f"{SONIC_DB}/WRED_PROFILE/ROCE_ECN", {
                        "wred_green_enable": "true", "ecn": "ecn_all",
                        "green_min_threshold": str(ECN_MIN), "green_max_threshold": str(ECN_MAX),
                        "green_drop_probability": str(ECN_PERCENT)}],
                    [f"{SONIC_DB}/QUEUE/{PORT}|{QUEUE_ID}", {"wred_profile": "ROCE_ECN"}]],
            "show": f"{SONIC_DB}/WRED_PROFILE/ROCE_ECN",
            "lookup": {"path": "/sonic-db:COUNTERS_DB/localhost/COUNTERS_QUEUE_NAME_MAP",
                       "key": f"{PORT}:{QUEUE_ID}"},
            "stream": "/sonic-db:COUNTERS_DB/localhost/COUNTERS/{oid}",
            "counter": "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"}
    queue = queue_name(device, QUEUE_ID)
    out_queue = output_queue(OC_QOS, PORT, queue)
    return {
        "get": OC_QOS,
        "set": [[f"{OC_QOS}/queue-management-profiles/queue-management-profile[name=roce-ecn]", {
                    "name": "roce-ecn", "config": {"name": "roce-ecn"},
                    "wred": {"uniform": {"config": {
                        "min-threshold": str(ECN_MIN), "max-threshold": str(ECN_MAX),
                        "enable-ecn": True, "max-drop-probability-percent": ECN_PERCENT}}}}],
                [f"{out_queue}/config", {"name": queue, "queue-management-profile": "roce-ecn"}]],
        "show": f"{OC_QOS}/queue-management-profiles/queue-management-profile[name=roce-ecn]",
        "stream": f"{out_queue}/state",
        "counter": "ecn-marked-pkts"}


@pytest.fixture(scope="module")
def pygnmi_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return separate_process_script("pygnmi", SCRIPT, tmp_path_factory.mktemp("pygnmi"))


def run_pygnmi(script: Path, device: SwitchDevice, settings: dict[str, Any]) -> dict[str, Any]:
    """Run the script against ``device``; inject :data:`BURST` once its stream is in sync."""
    arguments = {"port": device.port, "user": USER, "password": PASSWORD,
                 "interval_ns": SAMPLE_NS, "samples": SAMPLES, **settings}
    process = subprocess.Popen([sys.executable, str(script), json.dumps(arguments)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        if process.stdout.readline().strip() != "in sync":
            process.kill()
            _, err = process.communicate()
            raise AssertionError(f"pygnmi's stream never got in sync:\n{err[-3000:]}")
        device.faults.inject(BURST)
        out, err = process.communicate("go\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err[-3000:]
    answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize("switch", ["oc-arista", "sonic"])
def test_pygnmi_configures_ecn_and_streams_its_marks(
        switches: Mapping[str, SwitchDevice], pygnmi_script: Path, switch: str) -> None:
    device = switches[switch]
    factory_reset_checked(device)
    settings = pygnmi_settings(device)
    answer = run_pygnmi(pygnmi_script, device, settings)

    assert device.face is not None
    assert answer["models"] == [[m.name, m.organization, m.version] for m in device.face.models]
    names = {name for name, _, _ in answer["models"]}
    if switch == "sonic":
        assert names == {"sonic-db"}
        assert answer["encodings"] == ["json", "json_ietf"]
        assert {name: row["speed"] for name, row in answer["get"].items()} == \
            dict.fromkeys(PORTS, "400000")
        assert answer["shown"] == settings["set"][0][1]
    else:
        assert names == {"openconfig-interfaces", "openconfig-if-ethernet", "openconfig-qos",
                         "arista-qos-augments", "msoctl-qos-augments"}
        assert answer["encodings"] == ["json_ietf"]
        queues = {q["name"]: q["config"]["queue-id"] for q in answer["get"]["queues"]["queue"]}
        assert queues[queue_name(device, QUEUE_ID)] == QUEUE_ID
        assert answer["shown"] == settings["set"][0][1]
    assert answer["set"] == ["UPDATE", "UPDATE"]

    # pygnmi shows a path without its origin (the module of the first element)
    shown_path = answer["stream_path"].lstrip("/").split(":", 1)[1]
    stamps, marked = [], []
    for stamp, updates in answer["stream"]:
        (path, value), = updates  # one node subscribed: one update a sample
        assert path == shown_path
        stamps.append(stamp)
        marked.append(int(value[settings["counter"]]))
    assert marked[0] == 0, marked  # in sync before the burst
    assert any(later > earlier for earlier, later in itertools.pairwise(marked)), \
        marked
    # Sampled on the real clock, every interval after the initial values: a notification
    # is stamped when it is built, after the read that integrates the burst (0.15 s here,
    # more on a loaded machine), so the gaps vary; their sum does not fall short.
    assert stamps == sorted(stamps)
    span, interval = (stamps[-1] - stamps[0]) / 1e9, SAMPLE_NS / 1e9
    assert (SAMPLES - 1) * interval < span < SAMPLES * interval + 1.0, span
