"""The emulators' gNMI target against an independent client: pygnmi.

pygnmi carries its own copy of the gNMI stubs, which cannot share a process with the
gnmi-pb stubs the server uses, so each test writes a small pygnmi script and runs it
with this interpreter; the script prints what pygnmi answered as JSON, checked here.
A missing pygnmi skips (fails with CI=true: tests/support/peers.py).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from emulators.clock import RealClock
from emulators.gnmi.face import FaceError, Model
from emulators.gnmi.server import GnmiServer, GnmiTls
from emulators.lab.pki import Authority
from emulators.loopthread import LoopThread
from tests.support.peers import separate_process_script

Tree = dict[str, Any]
USER, PASSWORD = "operator", "pw-1"


@dataclass
class SmallFace:
    """A tiny test model: ``test-model:things/thing[name]/config/size`` (at most 100),
    with a ``state`` container carrying a counter."""

    name: str = "test"
    models: tuple[Model, ...] = (Model("test-model", "msoctl tests", "1.0.0"),)
    encodings: tuple[str, ...] = ("JSON_IETF",)
    committed: list[Tree] = field(default_factory=list)

    def factory(self) -> Tree:
        return {"test-model:things": {"thing": [{"name": "a",
                                                 "config": {"name": "a", "size": 1}}]}}

    def commit(self, config: Tree) -> None:
        for thing in config.get("test-model:things", {}).get("thing", []):
            if thing.get("config", {}).get("size", 0) > 100:
                raise FaceError("size above 100", path=f"/things/thing[name={thing['name']}]")
        self.committed.append(copy.deepcopy(config))

    def operational(self, config: Tree) -> Tree:
        for thing in config.get("test-model:things", {}).get("thing", []):
            thing["state"] = {**thing.get("config", {}), "counter": 5}
        return config

    def writable(self, top: str) -> bool:
        return top == "test-model:things"


SCRIPT = """
import json, sys
from pygnmi.client import gNMIclient

settings = json.loads(sys.argv[1])
out = {}
with gNMIclient(target=("127.0.0.1", settings["port"]), username=settings["user"],
                password=settings["password"], gnmi_timeout=10, **settings["client"]) as client:
    capabilities = client.capabilities()
    out["models"] = [model["name"] for model in capabilities["supported_models"]]
    out["encodings"] = capabilities["supported_encodings"]
    out["version"] = capabilities["gnmi_version"]
    got = client.get(path=["/test-model:things/thing[name=a]/config"], datatype="config",
                     encoding="json_ietf")
    out["get"] = got["notification"][0]["update"][0]["val"]
    done = client.set(update=[("/test-model:things/thing[name=a]/config", {"size": 42})],
                      encoding="json_ietf")
    out["set"] = [result["op"] for result in done["response"]]
    got = client.get(path=["/test-model:things/thing[name=a]/config/size"], datatype="config",
                     encoding="json_ietf")
    out["after"] = got["notification"][0]["update"][0]["val"]
    subscription = {"mode": "stream", "encoding": "json_ietf", "subscription": [
        {"path": "/test-model:things/thing[name=a]/state", "mode": "sample",
         "sample_interval": 50000000}]}
    stream = client.subscribe2(subscribe=subscription)
    first = stream.get_update(timeout=5)  # the initial values, up to the sync
    second = stream.get_update(timeout=5)  # one sample
    stream.close()
    out["stream"] = [first["update"]["update"][0]["val"], second["update"]["update"][0]["val"],
                     first.get("sync_response"), second["update"]["update"][0]["path"]]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def pygnmi_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return separate_process_script("pygnmi", SCRIPT, tmp_path_factory.mktemp("pygnmi"))


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("gnmi-pygnmi")
    thread.start()
    yield thread
    thread.stop()


def run_pygnmi(script: Path, port: int, **client: Any) -> dict[str, Any]:
    settings = {"port": port, "user": USER, "password": PASSWORD, "client": client}
    done = subprocess.run([sys.executable, str(script), json.dumps(settings)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def check(answer: dict[str, Any], server: GnmiServer) -> None:
    assert answer["models"] == ["test-model"]
    assert answer["encodings"] == ["json_ietf"]
    assert answer["version"] == "0.10.0"
    assert answer["get"] == {"name": "a", "size": 1}
    assert answer["set"] == ["UPDATE"]
    assert answer["after"] == 42
    initial, sample, synced, where = answer["stream"]
    assert initial == sample == {"name": "a", "size": 42, "counter": 5}
    assert synced is True
    assert where == "things/thing[name=a]/state"
    assert server.config["test-model:things"]["thing"][0]["config"] == {"name": "a", "size": 42}


def test_pygnmi_plaintext(loop: LoopThread, pygnmi_script: Path) -> None:
    server = GnmiServer("dut", SmallFace(), clock=RealClock(), users={USER: PASSWORD})
    loop.call(server.start())
    try:
        check(run_pygnmi(pygnmi_script, server.port, insecure=True), server)
    finally:
        loop.call(server.stop())


def test_pygnmi_over_tls_with_a_client_certificate(loop: LoopThread, pygnmi_script: Path,
                                                  tmp_path: Path) -> None:
    files = certificates(tmp_path)
    tls = GnmiTls(files["server.crt"].read_bytes(), files["server.key"].read_bytes(),
                  files["ca.crt"].read_bytes())
    server = GnmiServer("dut", SmallFace(), clock=RealClock(), users={USER: PASSWORD},
                        tls=tls)
    loop.call(server.start())
    try:
        check(run_pygnmi(pygnmi_script, server.port, path_root=str(files["ca.crt"]),
                         path_cert=str(files["client.crt"]),
                         path_key=str(files["client.key"])), server)
    finally:
        loop.call(server.stop())


def certificates(directory: Path) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as PEM files."""
    authority = Authority("test ca")
    server, client = authority.issue("server", server=True), authority.issue("client", server=False)
    files = {"ca.crt": authority.cert_pem, "server.crt": server.cert_pem,
             "server.key": server.key_pem, "client.crt": client.cert_pem,
             "client.key": client.key_pem}
    for file_name, data in files.items():
        (directory / file_name).write_bytes(data)
    return {file_name: directory / file_name for file_name in files}
