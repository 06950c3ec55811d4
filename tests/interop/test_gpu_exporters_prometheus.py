"""The lab's GPU exporters against Debian's Prometheus and promtool.

- promtool parses every exporter's text; what it lints are the names the real exporters
  publish (dcgm-exporter's camelCase labels and counters without ``_total``, AMD's
  gauges named ``_total`` and ``_count``), nothing else.
- Prometheus scrapes them; msoctl reading the servers' state through that Prometheus
  (``gpu_metrics: prometheus:``, series matched to hosts by ``instance``) sees what it
  sees scraping the exporters itself: the same GPUs healthy, the same NICs up.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.clock import RealClock
from emulators.faults import Fault
from emulators.gpu.exposition import amd, ascend, dcgm, endpoints, node
from emulators.gpu.model import GpuServer
from emulators.gpu.server import ExporterServer
from emulators.loopthread import LoopThread
from msoctl.compute.gpustate import read_hosts
from msoctl.hosts import GpuMetricsSource, Host, HostNic
from tests.support.lab import wait_until
from tests.support.peers import require_executable
from tests.support.prometheus import prometheus

KNOWN_LINT = {
    "dcgm": {'counter metrics should have "_total" suffix',
             "label names should be written in 'snake_case' not 'camelCase'",
             "metric name should not include type 'counter'"},
    "amd": {'non-counter metrics should not have "_total" suffix',
            'non-histogram and non-summary metrics should not have "_count" suffix'},
    "ascend": set(), "node": set(),
}
SERVERS = (("gpu-n1", "nvidia", "H100"), ("gpu-m1", "amd", "MI300X"),
           ("gpu-h1", "ascend", "Ascend910B"))


@pytest.fixture(scope="module")
def served() -> Iterator[list[tuple[GpuServer, ExporterServer]]]:
    loop = LoopThread("gpu-interop")
    loop.start()
    found = []
    for name, vendor, model in SERVERS:
        nics = [(f"{'hccn_' if vendor == 'ascend' else 'mlx5_'}{i}", f"0x1070fd03aa0000{i:02x}",
                 400e9) for i in range(4 if vendor == "ascend" else 2)]
        server = GpuServer(name, vendor, model, 4, nics, RealClock())
        exporters = ExporterServer(server, endpoints(vendor))
        loop.call(exporters.start())
        found.append((server, exporters))
    yield found
    for _, exporters in found:
        loop.call(exporters.stop())
    loop.stop(lambda: asyncio.sleep(0))


def host_of(server: GpuServer, exporters: ExporterServer) -> Host:
    return Host(server.name, server.vendor, server.model, len(server.gpus),
                tuple(HostNic(nic.name, nic.guid, "sw-a", f"Ethernet{9 + i}", "400G", i)
                      for i, nic in enumerate(server.nics)), server.name, "a", "127.0.0.1",
                tuple(exporters.url(role) for role in exporters.endpoints))


@pytest.mark.parametrize("render", [dcgm, amd, ascend, node], ids=lambda r: r.__name__)
def test_promtool_parses_each_exporter_and_lints_only_its_real_names(
        served: list[tuple[GpuServer, ExporterServer]], render: object) -> None:
    promtool = str(require_executable("promtool", debian_package="prometheus"))
    server = next(s for s, _ in served if s.vendor == {"dcgm": "nvidia", "amd": "amd"}.get(
        render.__name__, "ascend"))  # type: ignore[attr-defined]
    text = render(server.snapshot())  # type: ignore[operator]
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                             text=True, timeout=30)
    said = (checked.stdout + checked.stderr).strip().splitlines()
    assert "parsing error" not in " ".join(said), said
    assert checked.returncode in (0, 3), said
    problems = {line.split(" ", 1)[1] for line in said if " " in line}
    assert problems <= KNOWN_LINT[render.__name__], problems  # type: ignore[attr-defined]


def test_msoctl_reads_the_same_state_through_prometheus(
        served: list[tuple[GpuServer, ExporterServer]], tmp_path: Path) -> None:
    served[0][0].faults.inject(Fault("gpu_xid", "1:48"))
    served[1][0].faults.inject(Fault("gpu_ecc", "3"))
    served[1][0].faults.inject(Fault("nic_down", "mlx5_1"))
    served[2][0].faults.inject(Fault("nic_down", "hccn_2"))
    hosts = [host_of(server, exporters) for server, exporters in served]
    targets = [url.removeprefix("http://").removesuffix("/metrics")
               for host in hosts for url in host.metrics]
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "900ms"},
              "scrape_configs": [{"job_name": "gpus", "static_configs": [
                  {"targets": targets}]}]}
    direct = read_hosts(hosts)
    with prometheus(config, tmp_path / "prometheus") as server:
        wait_until(lambda: len([t for t in server.active_targets() if t["health"] == "up"])
                   == len(targets), "every exporter scraped", seconds=30)
        source = GpuMetricsSource(server.url, 5.0)
        wait_until(lambda: _summary(read_hosts(hosts, source)) == _summary(direct),
                   "Prometheus's view equal to the exporters'", seconds=20)
    summary = _summary(direct)
    assert summary["gpu-n1"][0] == [True, False, True, True]
    assert summary["gpu-m1"][0] == [True, True, True, False]
    assert summary["gpu-m1"][1] == [True, False]
    assert summary["gpu-h1"][1] == [True, True, False, True]


def _summary(states: list) -> dict[str, tuple[list[bool | None], list[bool | None]]]:
    return {state.host.name: ([gpu.healthy for gpu in state.gpus],
                              [nic.up for nic in state.nics]) for state in states}
