"""``msoctl job plan``'s placement and rank order (msoctl/jobs/plan.py), the fabric between
a job's servers (msoctl/jobs/fabric.py), and its files (msoctl/jobs/files.py), each
checked against what its consumer's parser requires (the rules quoted from the
consumers' sources in each test's docstring)."""

from __future__ import annotations

import re
from xml.etree import ElementTree

import pytest

from drivers.errors import ValidationError
from msoctl.compute.gpustate import GpuState, HostState, NicState
from msoctl.hosts import Host, HostNic
from msoctl.jobs.fabric import JobFabric
from msoctl.jobs.files import (
    hccl_rank_table,
    host_env,
    hostfile,
    route_xml,
    routes_for,
    traffic_class,
)
from msoctl.jobs.plan import Placement, place
from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber

GUIDS = iter(range(1, 10_000))


def host(name: str, vendor: str, campus: str, switch: str, gpus: int = 4, rails: int = 2,
         port: int = 9) -> Host:
    nics = tuple(HostNic(f"mlx5_{r}", f"0x1070fd03{next(GUIDS):08x}", switch,
                         f"Ethernet{port + r}", "400G", r) for r in range(rails))
    return Host(name, vendor, "X", gpus, nics, name, campus)


def state(of: Host, *, sick: tuple[int, ...] = (), down: tuple[str, ...] = (),
          slow: tuple[str, ...] = (), unreadable: bool = False) -> HostState:
    if unreadable:
        return HostState(of, tuple(GpuState(of.name, i, None) for i in range(of.gpus)),
                         tuple(NicState(of.name, n.name, None) for n in of.nics), "timed out")
    return HostState(of, tuple(GpuState(of.name, i, i not in sick) for i in range(of.gpus)),
                     tuple(NicState(of.name, n.name, n.name not in down,
                                    degraded="link at 200 Gb/s of 400G" if n.name in slow
                                    else None) for n in of.nics))


def lab() -> list[HostState]:
    return [state(host("gpu-a1", "nvidia", "a", "sw-a", port=9)),
            state(host("gpu-a2", "amd", "a", "sw-a", port=11)),
            state(host("gpu-b1", "nvidia", "b", "sw-b", port=9)),
            state(host("gpu-b2", "amd", "b", "sw-b", port=11))]


def test_a_job_that_fits_one_vendor_takes_one_and_crosses_the_span_only_twice() -> None:
    placement = place(lab(), 8, vendors=["nvidia"])
    assert placement.vendors == ("nvidia",)
    assert [h.name for h in placement.hosts] == ["gpu-a1", "gpu-b1"]
    assert placement.crossings("campus") == 2 and placement.crossings("vendor") == 0
    assert [r.rank for r in placement.ranks] == list(range(8))
    assert [(r.gpu, r.nic.rail) for r in placement.ranks[:4]] == [(0, 0), (1, 1), (2, 0),
                                                                (3, 1)]


def test_a_job_of_both_vendors_keeps_each_contiguous_and_each_campus_together() -> None:
    """FlagCX forms one cluster per vendor, its ranks contiguous (flagcx/flagcx.cc,
    flagcxCollectClusterInfos); the campuses of the second vendor follow on where the
    first ended, so the ring crosses the span twice and changes vendor twice."""
    placement = place(lab(), 16)
    vendors = [r.vendor for r in placement.ranks]
    assert vendors == sorted(vendors, key=lambda v: vendors.index(v))  # contiguous
    assert placement.crossings("vendor") == 2
    assert placement.crossings("campus") == 2
    assert [h.campus for h in placement.hosts] in (["a", "b", "b", "a"], ["b", "a", "a", "b"])


def test_a_small_job_stays_on_one_host_and_one_campus() -> None:
    placement = place(lab(), 3, vendors=["amd"])
    assert len(placement.hosts) == 1 and placement.crossings("campus") == 0


def test_unhealthy_gpus_and_dead_nics_are_left_out() -> None:
    states = lab()
    states[0] = state(states[0].host, sick=(1,), down=("mlx5_1",))
    placement = place(states, 7, vendors=["nvidia"])
    ours = [r for r in placement.ranks if r.host == "gpu-a1"]
    assert [r.gpu for r in ours] == [0, 2, 3]
    assert {r.nic.name for r in ours} == {"mlx5_0"}
    assert placement.excluded_nics == {"gpu-a1": ("mlx5_1",)}


def test_too_many_gpus_is_refused_saying_how_many_are_healthy() -> None:
    states = lab()
    states[2] = state(states[2].host, unreadable=True)
    states[3] = state(states[3].host, sick=(0, 1))
    with pytest.raises(ValidationError, match=r"^13 GPUs asked, but only 10 healthy GPUs "):
        place(states, 13)
    with pytest.raises(ValidationError, match="only 4 healthy nvidia GPUs"):
        place(states, 5, vendors=["nvidia"])


def test_a_host_whose_nics_are_all_down_takes_only_a_job_of_its_own() -> None:
    lone = host("gpu-c1", "nvidia", "c", "sw-c", gpus=8)
    states = [state(lone, down=("mlx5_0", "mlx5_1"))]
    assert [h.name for h in place(states, 8).hosts] == ["gpu-c1"]
    with pytest.raises(ValidationError, match="8 more on hosts whose NICs are all down"):
        place([*states, state(host("gpu-c2", "nvidia", "c", "sw-c", gpus=1, port=20))], 9)


def two_campus_link(up_role: str | None) -> tuple[dict[str, Link], str | None]:
    fiber = SpanFiber(OcsPort("ocs-a", 121), OcsPort("ocs-b", 61))
    span = Span("span-1", 30, 0.2, 0.5, fiber, SpanFiber(OcsPort("ocs-b", 121),
                                                         OcsPort("ocs-a", 61)))
    link = Link("link-1", LinkEnd("sw-a", "Ethernet1", OcsPort("ocs-a", 1), OcsPort("ocs-a", 65)),
                LinkEnd("sw-b", "Ethernet1", OcsPort("ocs-b", 1), OcsPort("ocs-b", 65)), span)
    return {"link-1": link}, up_role


def fabric_with(role: str | None, placement_hosts: list[Host],
                drained: tuple[str, ...] = ()) -> JobFabric:
    links, carried = two_campus_link(role)
    return JobFabric.build(placement_hosts, links, lambda link: carried, drained)


def test_routes_follow_the_fabric_as_it_is() -> None:
    """The route's bandwidth is FlagCX's (flagcx/core/topo.cc, getEffectiveBw): the lesser
    NIC's, then per hop the down bandwidth of a top switch, else the lesser of the down
    bandwidth and the up bandwidth times up links over down links."""
    states = lab()
    placement = place(states, 8, vendors=["nvidia"])
    everyone = [s.host for s in states]
    routes, missing = routes_for(placement, fabric_with("working", everyone))
    assert not missing and len(routes) == 2
    route = routes[0]
    assert [hop.switch for hop in route.hops] == ["sw-a", "sw-b"]
    assert (route.hops[0].up_links, route.hops[0].down_links) == (1, 4)
    assert route.bandwidth_bps == pytest.approx(400e9 * 1 / 4)
    assert route.links == ["link-1"]
    for role, drained in (("down", ()), (None, ()), ("working", ("link-1",))):
        routes, missing = routes_for(placement, fabric_with(role, everyone, drained))
        assert routes == [] and len(missing) == 2


def test_the_route_file_is_what_flagcx_parses() -> None:
    """flagcx/core/topo.cc, flagcxGetInterServerRouteFromFile: root ``interserver_route``,
    one ``nic_pairs``, each ``pair`` with ``nic1@guid``, ``nic2@guid`` (strtoul base 0) and
    ``interSwitch@count`` over at most 16 ``switch`` elements each carrying ``downBw``,
    ``upBw`` (float, GB/s), ``upLink``, ``downLink`` (int; a non-top switch divides by
    downLink) and ``isTop``; no XML declaration."""
    states = lab()
    placement = place(states, 8, vendors=["nvidia"])
    routes, _ = routes_for(placement, fabric_with("working", [s.host for s in states]))
    text = route_xml(routes)
    assert not text.startswith("<?xml")
    root = ElementTree.fromstring(text)
    assert root.tag == "interserver_route" and [c.tag for c in root] == ["nic_pairs"]
    guids = {nic.guid for s in states for nic in s.host.nics}
    for pair, route in zip(root[0], routes, strict=True):
        assert [c.tag for c in pair] == ["nic1", "nic2", "interSwitch"]
        assert pair[0].get("guid") in guids and pair[1].get("guid") in guids
        assert int(pair[0].get("guid", ""), 0) > 0
        switches = list(pair[2])
        assert int(pair[2].get("count", "")) == len(switches) <= 16
        for element in switches:
            assert set(element.attrib) == {"downBw", "upBw", "upLink", "downLink", "isTop"}
            assert int(element.get("downLink", "")) >= 1
        bandwidth = min(400 / 8, *(
            float(s.get("downBw", "")) if s.get("isTop") == "1" else
            min(float(s.get("downBw", "")),
                float(s.get("upBw", "")) * int(s.get("upLink", "")) / int(s.get("downLink", "")))
            for s in switches))
        assert bandwidth == pytest.approx(route.bandwidth_bps / 8e9)


def test_the_hostfile_is_what_deepspeed_and_open_mpi_read() -> None:
    """DeepSpeed (deepspeed/launcher/runner.py, _parse_hostfile): every line matches
    ``^(\\S+)\\s+slots=(\\d+)``, no host twice, order kept; Open MPI reads the same
    ``host slots=N``. The slots add up to the world size, in rank order."""
    placement = place(lab(), 12)
    lines = hostfile(placement).splitlines()
    matches = [re.match(r"^(\S+)\s+slots=(\d+)", line) for line in lines]
    assert all(matches)
    names = [m.group(1) for m in matches if m]
    assert len(names) == len(set(names)) == len(placement.hosts)
    assert sum(int(m.group(2)) for m in matches if m) == len(placement.ranks)
    assert names == [h.name for h in placement.hosts]
    typed = hostfile(placement, with_type=True).splitlines()
    assert all(re.fullmatch(r"\S+ slots=\d+ type=(nvidia|amd)", line) for line in typed)


def test_the_environment_names_only_nics_that_are_up() -> None:
    """NCCL's NCCL_IB_HCA (src/transport/net_ib/init.cc): ``=`` for exact names, entries
    ``name:port`` separated by commas; NCCL_IB_TC is the traffic-class byte."""
    states = lab()
    states[0] = state(states[0].host, down=("mlx5_1",))
    placement: Placement = place(states, 4, vendors=["nvidia"])
    env = dict(line.split("=", 1) for line in
               host_env(placement.hosts[0], placement, 3, "/x/route.xml").splitlines())
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1"
    assert re.fullmatch(r"\^?=?[A-Za-z0-9_.-]+(:\d+)?(,[A-Za-z0-9_.-]+(:\d+)?)*",
                        env["NCCL_IB_HCA"])
    assert env["NCCL_IB_TC"] == str(traffic_class(3)) == "106"
    assert env["NCCL_IB_SL"] == "3" and env["NCCL_CROSS_NIC"] == "0"
    assert env["FLAGCX_INTERSERVER_ROUTE_FILE"] == "/x/route.xml"


def _ascend(name: str, first_address: int | None, *, nics: int = 4,
            address: str | None = None) -> HostState:
    made = tuple(HostNic(f"eth{r}", f"0x1070fd03{next(GUIDS):08x}", "sw-a",
                         f"Ethernet{9 + r}", "200G", r,
                         None if first_address is None else f"10.2.0.{first_address + r}")
                 for r in range(nics))
    return state(Host(name, "ascend", "910B", 4, made, name, "a", address=address))


def test_hccl_rank_table_gives_each_npu_its_nic_address_and_a_string_rank() -> None:
    """HCCL's rank table v1.0 (hiascend hcclug, "rank table"): status ``completed``,
    version "1.0", server_count, server_list of server_id and devices of device_id,
    device_ip and rank_id, every value a string, rank ids from 0 and unique."""
    placement = place([_ascend("npu-1", 11, address="192.0.2.1"), _ascend("npu-2", 21)], 8,
                      vendors=["ascend"])
    table, why = hccl_rank_table(placement)
    assert why is None and table is not None
    assert (table["status"], table["version"], table["server_count"]) == (
        "completed", "1.0", "2")
    assert [s["server_id"] for s in table["server_list"]] == ["npu-1", "npu-2"]  # one unknown
    both = place([_ascend("npu-1", 11, address="192.0.2.1"),
                  _ascend("npu-2", 21, address="192.0.2.2")], 8, vendors=["ascend"])
    named, _ = hccl_rank_table(both)
    assert named is not None
    assert [s["server_id"] for s in named["server_list"]] == ["192.0.2.1", "192.0.2.2"]
    devices = [d for s in table["server_list"] for d in s["device"]]
    assert devices[:2] == [{"device_id": "0", "device_ip": "10.2.0.11", "rank_id": "0"},
                           {"device_id": "1", "device_ip": "10.2.0.12", "rank_id": "1"}]
    assert [d["rank_id"] for d in devices] == [str(n) for n in range(8)]
    assert all(isinstance(v, str) for d in devices for v in d.values())


def test_hccl_rank_table_is_not_written_without_addresses_or_with_shared_nics() -> None:
    _, why = hccl_rank_table(place([_ascend("npu-1", None)], 4))
    assert why == "NICs without an address in the inventory: npu-1:eth0, npu-1:eth1, " \
                  "npu-1:eth2, npu-1:eth3"
    _, why = hccl_rank_table(place([_ascend("npu-1", 11, nics=2)], 4))
    assert why == "NPUs share a NIC, HCCL gives each its own: npu-1:eth0 (NPUs 0, 2); " \
                  "npu-1:eth1 (NPUs 1, 3)"
    assert hccl_rank_table(place(lab(), 4, vendors=["nvidia"])) == (None, None)


def test_a_degraded_nic_is_left_out_as_a_down_one_is() -> None:
    """A NIC up at half its speed would make its rail the ring's slowest edge: its ranks
    go through the host's other NIC, and NCCL_IB_HCA leaves it out."""
    a1 = host("gpu-a1", "nvidia", "a", "sw-a")
    placement = place([state(a1, slow=("mlx5_0",)), state(host("gpu-b1", "nvidia", "b",
                                                                "sw-b"))], 8)
    assert placement.excluded_nics == {"gpu-a1": ("mlx5_0",)}
    assert {r.nic.name for r in placement.ranks if r.host == "gpu-a1"} == {"mlx5_1"}
    env = host_env(a1, placement, 3, "/route.xml")
    assert "NCCL_IB_HCA==mlx5_1:1\n" in env
