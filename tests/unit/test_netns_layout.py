"""The namespace fabric's layout (tests/support/netns.py) from msoctl's job fabric: what
the collectives test builds must be the fabric the ring model reads, slowed by one
factor (rates divided by it, delays multiplied)."""

from __future__ import annotations

import pytest

from msoctl.hosts import Host, HostNic
from msoctl.jobs.fabric import JobFabric
from msoctl.links import Link, LinkEnd, OcsPort, Span, SpanFiber
from tests.support.netns import layout_of


def host(name: str, switch: str, port: int) -> Host:
    nic = HostNic("mlx5_0", f"0x1070fd03{port:04x}{ord(switch[-1]):04x}", switch,
                  f"Ethernet{port}", "400G", 0)
    return Host(name, "nvidia", "H100", 1, (nic,), name, switch[-1])


def link(name: str, a: str, b: str, port: int) -> Link:
    fiber = SpanFiber(OcsPort(f"ocs-{a}", 100 + port), OcsPort(f"ocs-{b}", 50 + port))
    back = SpanFiber(OcsPort(f"ocs-{b}", 100 + port), OcsPort(f"ocs-{a}", 50 + port))
    return Link(name, LinkEnd(a, f"Ethernet{port}", OcsPort(f"ocs-{a}", port),
                              OcsPort(f"ocs-{a}", 64 + port)),
                LinkEnd(b, f"Ethernet{port}", OcsPort(f"ocs-{b}", port),
                        OcsPort(f"ocs-{b}", 64 + port)),
                Span(f"span-{name}", 30, 0.2, 0.5, fiber, back))


def fabric(hosts: list[Host], links: list[Link]) -> JobFabric:
    return JobFabric.build(hosts, {lk.name: lk for lk in links}, lambda lk: "working", ())


def test_rates_are_divided_and_the_span_delay_multiplied_by_the_scale() -> None:
    """Two 400G links between sw-a and sw-b, 30 and 32 km: one trunk of 800G each way
    with the longer span's delay, 160 µs; slowed 100 times: 8 Gbit/s and 16 ms; each
    NIC at 4 Gbit/s, every host on its own address."""
    hosts = [host("a1", "sw-a", 9), host("a2", "sw-a", 10), host("b1", "sw-b", 9)]
    net = fabric(hosts, [link("link-1", "sw-a", "sw-b", 1), link("link-2", "sw-a", "sw-b", 2)])
    layout = layout_of(net, {h.name: h.nics[0] for h in hosts},
                       {"link-1": 30.0, "link-2": 32.0}, scale=100)
    assert layout.switches == ("sw-a", "sw-b")
    assert [(p.host, p.switch, p.rate_bps) for p in layout.hosts] == [
        ("a1", "sw-a", 4e9), ("a2", "sw-a", 4e9), ("b1", "sw-b", 4e9)]
    assert len({p.address for p in layout.hosts}) == 3
    (trunk,) = layout.trunks
    assert (trunk.a, trunk.b, trunk.links) == ("sw-a", "sw-b", ("link-1", "link-2"))
    assert trunk.rate_bps == pytest.approx(8e9)
    assert trunk.delay_seconds == pytest.approx(32 * 5e-6 * 100)


def test_a_switch_between_the_hosts_switches_is_built_too() -> None:
    hosts = [host("a1", "sw-a", 9), host("c1", "sw-c", 9)]
    net = fabric([*hosts, host("b1", "sw-b", 9)],
                 [link("link-1", "sw-a", "sw-b", 1), link("link-2", "sw-b", "sw-c", 2)])
    layout = layout_of(net, {h.name: h.nics[0] for h in hosts},
                       {"link-1": 30.0, "link-2": 30.0}, scale=10)
    assert layout.switches == ("sw-a", "sw-b", "sw-c")
    assert [(t.a, t.b) for t in layout.trunks] == [("sw-a", "sw-b"), ("sw-b", "sw-c")]


def test_switches_joined_in_a_loop_or_not_at_all_are_refused() -> None:
    """Bridged switches in a loop would flood; switches the fabric does not join leave
    hosts that cannot talk."""
    hosts = [host("a1", "sw-a", 9), host("b1", "sw-b", 9), host("c1", "sw-c", 9)]
    loop = fabric(hosts, [link("link-1", "sw-a", "sw-b", 1), link("link-2", "sw-b", "sw-c", 2),
                          link("link-3", "sw-a", "sw-c", 3)])
    nics = {h.name: h.nics[0] for h in hosts}
    with pytest.raises(ValueError, match="form a tree"):
        layout_of(loop, nics, {"link-1": 1.0, "link-2": 1.0, "link-3": 1.0}, scale=1)
    apart = fabric(hosts, [link("link-1", "sw-a", "sw-b", 1)])
    with pytest.raises(ValueError, match="does not join"):
        layout_of(apart, nics, {"link-1": 1.0}, scale=1)
