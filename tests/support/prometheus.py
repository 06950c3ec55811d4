"""Helpers of the fleet tests: Debian's Prometheus started on a configuration, and its API."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.support.exporter import fetch
from tests.support.lab import wait_until
from tests.support.peers import require_executable
from tests.support.ports import free_port


class Prometheus:
    """A running Prometheus's HTTP API."""

    def __init__(self, url: str, log: Path):
        self.url = url
        self.log = log

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        reply = fetch(f"{self.url}/api/v1/{path}" + (f"?{query}" if query else ""))
        document = json.loads(reply.body)
        assert document["status"] == "success", (path, params, document)
        return document["data"]

    def query(self, expression: str) -> list[dict[str, Any]]:
        return list(self.api("query", query=expression)["result"])

    def active_targets(self) -> list[dict[str, Any]]:
        return list(self.api("targets", state="active")["activeTargets"])

    def series(self, match: str, *, seconds: float = 600) -> set[frozenset[tuple[str, str]]]:
        """Label sets of every series matching ``match`` seen in the last ``seconds``."""
        import time

        found = self.api("series", **{"match[]": match, "start": str(time.time() - seconds),
                                      "end": str(time.time())})
        return {frozenset(labels.items()) for labels in found}


@contextmanager
def prometheus(config: dict[str, Any], directory: Path) -> Iterator[Prometheus]:
    """Debian's ``prometheus`` on a free loopback port with ``config``, its data and log in
    ``directory`` (created); stopped on exit."""
    binary = require_executable("prometheus", debian_package="prometheus")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    address = f"127.0.0.1:{free_port()}"
    log = directory / "prometheus.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(binary), f"--config.file={path}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address={address}", "--log.level=warn"],
            stdout=output, stderr=subprocess.STDOUT)
    try:
        url = f"http://{address}"
        wait_until(lambda: _ready(url) or process.poll() is not None, "prometheus ready",
                   seconds=30)
        assert process.poll() is None, log.read_text()
        yield Prometheus(url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _ready(url: str) -> bool:
    try:
        return fetch(f"{url}/-/ready", timeout=1).status == 200
    except OSError:
        return False
