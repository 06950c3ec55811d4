"""Helpers of the exporter tests: an exporter served in-process, HTTP fetches, samples."""

from __future__ import annotations

import functools
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from msoctl.exporter.probe import TIMEOUT_HEADER, Prober
from msoctl.exporter.server import ExporterServer


@contextmanager
def serve_exporter(inventory: Path, *, tls: ssl.SSLContext | None = None,
                   server_options: dict[str, Any] | None = None,
                   **prober_options: float) -> Iterator[ExporterServer]:
    """An exporter on a free loopback port, in a thread of this process
    (``server_options``: :class:`ExporterServer`'s keyword arguments)."""
    prober = Prober(inventory, **prober_options)
    server = ExporterServer(("127.0.0.1", 0), prober, tls, **(server_options or {}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        prober.close()


@contextmanager
def exporter_process(env: dict[str, str], log: Path, *args: str) -> Iterator[str]:
    """``msoctl -v exporter`` as a process of its own on a free loopback port; its URL.
    ``log`` gets its stderr: why each failed probe failed."""
    msoctl = Path(sys.executable).with_name("msoctl")
    with log.open("w") as stderr:
        process = subprocess.Popen([str(msoctl), "-v", "exporter", "--listen", "127.0.0.1:0",
                                    *args],
                                   env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 20
        while "listening on" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the exporter did not start"
            time.sleep(0.02)
        yield log.read_text().split("listening on ")[1].split()[0]
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Response:
    status: int
    body: str
    content_type: str
    seconds: float


def fetch(url: str, *, scrape_timeout: float | None = None,
          context: ssl.SSLContext | None = None, timeout: float = 30.0,
          headers: dict[str, str] | None = None) -> Response:
    request = urllib.request.Request(url, headers=headers or {})
    if scrape_timeout is not None:
        request.add_header(TIMEOUT_HEADER, str(scrape_timeout))
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as reply:
            body = reply.read().decode()
            status, content_type = reply.status, reply.headers.get("Content-Type", "")
    except urllib.error.HTTPError as error:
        body = error.read().decode()
        status, content_type = error.code, error.headers.get("Content-Type", "")
    return Response(status, body, content_type, time.monotonic() - start)


Labels = frozenset[tuple[str, str]]


@functools.lru_cache(maxsize=4)
def samples(text: str) -> Mapping[str, Mapping[Labels, float]]:
    """Sample name -> {labels: value} of an exposition (parsed once for the few
    expositions asked about last: a test asks one many questions)."""
    found: dict[str, dict[Labels, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return MappingProxyType({name: MappingProxyType(values) for name, values in found.items()})


def value(text: str, name: str, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None if absent)."""
    wanted = set(labels.items())
    matches = [v for found, v in samples(text).get(name, {}).items() if wanted <= found]
    assert len(matches) <= 1, f"{name}{labels} matches {len(matches)} samples"
    return matches[0] if matches else None
