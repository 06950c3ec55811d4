"""GPU servers' state as msoctl reads it (msoctl/compute/gpustate.py) from the lab's
emulated exporters (emulators/gpu/), each written apart from the other from the
exporters' published sources: dcgm-exporter, AMD's device-metrics-exporter, Ascend's
npu-exporter, node_exporter. Every fault the emulator takes shows as the fleet would
see it, and an exporter that cannot be read leaves the host unknown, not healthy."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from emulators.clock import SteppedClock
from emulators.faults import Fault
from emulators.gpu.exposition import endpoints
from emulators.gpu.model import GpuServer
from emulators.gpu.server import ExporterServer
from emulators.loopthread import LoopThread
from msoctl.compute.gpustate import HostState, MetricsError, parse_text, read_hosts
from msoctl.hosts import Host, HostNic


def host_of(server: GpuServer, urls: list[str]) -> Host:
    return Host(server.name, server.vendor, server.model, len(server.gpus),
                tuple(HostNic(nic.name, nic.guid, "sw-a", f"Ethernet{9 + i}", "400G", i)
                      for i, nic in enumerate(server.nics)), server.name, "a",
                "127.0.0.1", tuple(urls))


class Served:
    def __init__(self, loop: LoopThread, vendor: str, model: str, gpus: int = 4):
        self.clock = SteppedClock()
        nics = [(f"{'hccn_' if vendor == 'ascend' else 'mlx5_'}{i}",
                 f"0x1070fd03000000{i:02x}", 400e9)
                for i in range(gpus if vendor == "ascend" else 2)]
        self.server = GpuServer(f"gpu-{vendor}", vendor, model, gpus, nics, self.clock)
        self.exporters = ExporterServer(self.server, endpoints(vendor))
        self.loop = loop
        loop.call(self.exporters.start())

    def host(self) -> Host:
        return host_of(self.server, [self.exporters.url(r) for r in self.exporters.endpoints])

    def read(self) -> HostState:
        (state,) = read_hosts([self.host()], timeout_seconds=2.0)
        return state

    def stop(self) -> None:
        self.loop.call(self.exporters.stop())


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread("gpu-exporters")
    thread.start()
    yield thread
    thread.stop(lambda: asyncio.sleep(0))


@pytest.fixture(params=[("nvidia", "H100"), ("amd", "MI300X"), ("ascend", "Ascend910B")],
                ids=lambda p: p[0])
def served(request: pytest.FixtureRequest, loop: LoopThread) -> Iterator[Served]:
    vendor, model = request.param
    found = Served(loop, vendor, model)
    yield found
    found.stop()


def test_an_idle_server_reads_healthy_with_its_figures(served: Served) -> None:
    served.server.set_load(0.5)
    served.clock.advance(120)
    state = served.read()
    assert state.error is None
    gpus = state.gpus
    assert [g.healthy for g in gpus] == [True] * 4
    gpu = gpus[0]
    truth = served.server.gpus[0]
    assert gpu.temperature_celsius == pytest.approx(truth.temperature_celsius, abs=1.0)
    assert gpu.power_watts == pytest.approx(truth.power_w, abs=1.0)
    assert gpu.utilisation == pytest.approx(0.5, abs=0.01)
    assert gpu.memory_total_mib == pytest.approx(truth.datasheet.memory_mib, rel=0.001)
    assert all(nic.up for nic in state.nics)


def test_a_gpu_off_the_bus_is_unhealthy_because_it_is_missing(served: Served) -> None:
    served.server.faults.inject(Fault("gpu_xid", "2:79"))
    gpus = served.read().gpus
    assert [g.healthy for g in gpus] == [True, True, False, True]
    assert "not reported" in gpus[2].reasons[0]
    served.server.faults.clear("gpu_xid")
    assert all(g.healthy for g in served.read().gpus)


def test_an_uncorrectable_ecc_error_makes_a_gpu_unhealthy(served: Served) -> None:
    served.server.faults.inject(Fault("gpu_ecc", "1"))
    gpu = served.read().gpus[1]
    assert gpu.healthy is False and gpu.reasons, gpu
    served.server.faults.clear("gpu_ecc")
    assert served.read().gpus[1].healthy


def test_a_nic_down_reads_down_from_where_its_vendor_publishes_it(served: Served) -> None:
    name = served.server.nics[1].name
    served.server.faults.inject(Fault("nic_down", name))
    nics = {nic.name: nic for nic in served.read().nics}
    assert nics[name].up is False and nics[name].reason
    assert nics[served.server.nics[0].name].up is True


def test_a_nic_trained_down_is_up_but_degraded(loop: LoopThread) -> None:
    """node_exporter's port rate at half the inventory's 400G: up, degraded, not usable;
    the other NIC untouched."""
    served = Served(loop, "nvidia", "H100")
    try:
        served.server.faults.inject(Fault("nic_degraded", "mlx5_0"))
        nics = {nic.name: nic for nic in served.read().nics}
        slow, other = nics["mlx5_0"], nics["mlx5_1"]
        assert (slow.up, slow.degraded, slow.usable) == (True, "link at 200 Gb/s of 400G",
                                                         False)
        assert slow.problem == "link at 200 Gb/s of 400G"
        assert (other.up, other.degraded, other.usable) == (True, None, True)
        served.server.faults.clear("nic_degraded")
        assert all(nic.usable for nic in served.read().nics)
    finally:
        served.stop()


def test_an_xid_that_needs_a_reset_is_a_reason(loop: LoopThread) -> None:
    served = Served(loop, "nvidia", "H100")
    try:
        served.server.faults.inject(Fault("gpu_xid", "0:48"))
        gpu = served.read().gpus[0]
        assert gpu.xid == 48 and "XID 48" in gpu.reasons
        assert "1 uncorrectable ECC error" in gpu.reasons
    finally:
        served.stop()


@pytest.mark.parametrize("kind", ["garbage", "truncate", "reset", "freeze"])
def test_an_exporter_that_cannot_be_read_leaves_its_host_unknown(loop: LoopThread,
                                                                 kind: str) -> None:
    served = Served(loop, "amd", "MI300X")
    try:
        served.server.faults.inject(Fault(kind))
        state = served.read()
        assert state.error
        assert [g.healthy for g in state.gpus] == [None] * 4
        assert state.healthy_gpus == []
    finally:
        served.server.faults.clear()
        served.stop()


def test_text_that_is_not_the_exposition_format_is_refused() -> None:
    with pytest.raises(MetricsError):
        parse_text("gpu_health{gpu_id=0 1\n")
    counters = parse_text("# TYPE X_TOTAL counter\nX_TOTAL{a=\"1\"} 3\n"
                          "# TYPE y counter\ny_total 4\n")
    assert set(counters) == {"X_TOTAL", "y_total"}  # names as the text wrote them
