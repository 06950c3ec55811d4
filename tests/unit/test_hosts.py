"""Compute endpoints in the lab's topology (emulators/lab/hostspec.py) and in the
inventory (msoctl/hosts.py): what a file may say, and one line naming the place of
every mistake."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.yamlfile import YamlFileError, load_text
from emulators.lab.topology import default_topology_text, load_topology, parse_topology
from msoctl.inventory import parse_inventory

NIC: dict[str, Any] = {"name": "mlx5_0", "guid": "0x1070fd0300000001", "switch": "sw-a",
                       "port": "Ethernet9", "speed": "400G", "rail": 0}
HOST: dict[str, Any] = {"name": "gpu-1", "campus": "a",
                        "gpus": {"vendor": "nvidia", "model": "H100", "count": 8},
                        "metrics": ["http://10.0.2.1:9400/metrics"], "nics": [NIC]}
SWITCH = {"name": "sw-a", "kind": "switch", "transport": "none"}


def test_the_default_lab_has_servers_of_two_vendors_on_both_campuses() -> None:
    topology = load_topology()
    kinds = {(host.campus, host.vendor) for host in topology.hosts}
    assert kinds == {("a", "nvidia"), ("a", "amd"), ("b", "nvidia"), ("b", "amd")}
    sw_a = next(s for s in topology.switches if s.name == "sw-a")
    assert sw_a.port_names[-1] == "Ethernet8"
    assert sw_a.host_port_names == ["Ethernet9", "Ethernet10", "Ethernet11", "Ethernet12"]
    first = topology.hosts[0]
    assert [(n.name, n.port, n.rail) for n in first.nics] == [
        ("mlx5_0", "Ethernet9", 0), ("mlx5_1", "Ethernet10", 1)]
    assert load_topology().hosts[0].nics[0].guid == first.nics[0].guid  # stable
    assert len({n.guid for h in topology.hosts for n in h.nics}) == 8


def _topology(change: Any) -> None:
    document = yaml.safe_load(default_topology_text())
    change(document)
    parse_topology(load_text(yaml.safe_dump(document), "t.yaml"), "t.yaml")


def _host(document: dict[str, Any]) -> dict[str, Any]:
    host: dict[str, Any] = document["hosts"][0]
    return host


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: _host(d)["nics"][0].update(port="Ethernet1"), "no host port 'Ethernet1'"),
    (lambda d: _host(d)["nics"][0].update(switch="sw-z"), "no switch 'sw-z'"),
    (lambda d: d["hosts"][1]["nics"][0].update(port="Ethernet9"), "already has gpu-a1/mlx5_0"),
    (lambda d: _host(d)["nics"][1].update(rail=0), "another NIC on rail 0"),
    (lambda d: _host(d)["gpus"].update(vendor="intel"), "vendor"),
    (lambda d: _host(d)["gpus"].update(count=0), "must be 1..72"),
    (lambda d: d["hosts"][1].update(scale_up="gpu-a1"), "one domain is one kind of GPU"),
    (lambda d: d["switches"][2].update(host_ports=2000), "host_ports"),
    (lambda d: d["hosts"][1].update(name="sw-a"), "defined twice"),
])
def test_a_bad_host_in_a_topology_is_one_line_naming_it(change: Any, words: str) -> None:
    with pytest.raises(YamlFileError) as caught:
        _topology(change)
    message = str(caught.value)
    assert words in message and "\n" not in message, message


def _inventory(tmp_path: Path, document: dict[str, Any]) -> Any:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))
    return parse_inventory(load_text(path.read_text(), str(path)), path)


def test_an_inventory_gives_hosts_and_the_fleets_prometheus(tmp_path: Path) -> None:
    inventory = _inventory(tmp_path, {"devices": [SWITCH], "hosts": [HOST],
                                      "gpu_metrics": {"prometheus": "http://prom:9090/"}})
    host = inventory.hosts["gpu-1"]
    assert (host.vendor, host.gpus, host.scale_up) == ("nvidia", 8, "gpu-1")
    assert host.nics[0].switch_port == "sw-a:Ethernet9" and host.nics[0].speed_bps == 400e9
    assert inventory.gpu_metrics is not None
    assert inventory.gpu_metrics.prometheus == "http://prom:9090"
    assert host.nics[0].address is None
    named = _inventory(tmp_path, {"devices": [SWITCH], "hosts": [
        _with(nic={"address": "fd00:0:0:0::11"})]})
    assert named.hosts["gpu-1"].nics[0].address == "fd00::11"  # as ipaddress writes it


def _with(**changes: Any) -> dict[str, Any]:
    host = copy.deepcopy(HOST)
    nic = changes.pop("nic", {})
    host["nics"][0].update(nic)
    host.update(changes)
    return host


@pytest.mark.parametrize(("hosts", "extra", "words"), [
    ([_with(nic={"guid": "1070fd03"})], {}, "0x and 16 hex digits"),
    ([_with(nic={"switch": "ocs-1"})], {}, "no switch named 'ocs-1'"),
    ([_with(nic={"speed": "300G"})], {}, "speed"),
    ([_with(metrics=["ftp://x/metrics"])], {}, "not an http"),
    ([_with(gpus={"vendor": "nvidia", "model": "H100", "count": 0})], {}, "1..1024"),
    ([_with(), _with(name="gpu-2")], {}, "is gpu-1/mlx5_0's too"),
    ([_with(), _with(name="gpu-2", nic={"guid": "0x1070fd0300000002"})], {}, "sw-a:Ethernet9 is"),
    ([_with(name="sw-a")], {}, "a device's name"),
    ([_with()], {"gpu_metrics": {"prometheus": "prom:9090"}}, "not an http"),
    ([_with(nic={"address": "10.1.0.256"})], {}, "'10.1.0.256' is not an IPv4 or IPv6"),
])
def test_a_bad_host_in_an_inventory_is_one_line(tmp_path: Path, hosts: list[Any],
                                                extra: dict[str, Any], words: str) -> None:
    with pytest.raises(YamlFileError) as caught:
        _inventory(tmp_path, {"devices": [SWITCH], "hosts": hosts, **extra})
    message = str(caught.value)
    assert words in message and "\n" not in message, message


def test_a_generated_fabric_has_servers_of_mixed_vendors_one_nic_a_plane() -> None:
    from emulators.lab.generate import FabricSpec, generate_text

    spec = FabricSpec(campuses=2, ocs_per_campus=2, links=4, hosts_per_campus=3,
                      gpus_per_host=8, host_vendors=("nvidia", "amd", "ascend"))
    text = generate_text(spec)
    assert text == generate_text(spec)  # same arguments, same file
    topology = parse_topology(load_text(text, "g.yaml"), "g.yaml")
    assert [(h.name, h.vendor) for h in topology.hosts[:3]] == [
        ("c1-gpu1", "nvidia"), ("c1-gpu2", "amd"), ("c1-gpu3", "ascend")]
    for host in topology.hosts:
        assert [(n.rail, n.switch) for n in host.nics] == [
            (0, f"{host.campus}-sw1"), (1, f"{host.campus}-sw2")]
    switch = next(s for s in topology.switches if s.name == "c1-sw1")
    assert switch.host_ports == 3 and switch.host_port_names[0] == f"Ethernet{switch.ports + 1}"
    with pytest.raises(ValueError, match="host_vendors"):
        generate_text(FabricSpec(campuses=2, ocs_per_campus=1, links=2, hosts_per_campus=1,
                                 host_vendors=("intel",)))
