"""Compute endpoints in the inventory: GPU servers, their GPUs and their NICs.

Two top-level sections beside ``devices``::

    hosts:
      - name: gpu-a1
        address: 10.0.2.1           # optional: how launchers reach it (rank files)
        campus: a                   # optional
        gpus: {vendor: nvidia, model: H100, count: 8}   # nvidia | amd | ascend
        scale_up: nvl72-1           # optional: its scale-up domain (default: itself)
        metrics:                    # where its state is published: its vendor's GPU
          - http://10.0.2.1:9400/metrics     # exporter, node_exporter for its NICs
          - http://10.0.2.1:9100/metrics
        nics:
          - {name: mlx5_0, guid: "0x1070fd03b68ed777", switch: sw-a, port: Ethernet9,
             speed: 400G, rail: 0, address: 10.1.0.11}
    gpu_metrics:                    # optional: read the hosts' state from the fleet's
      prometheus: http://prometheus.example:9090   # Prometheus instead of their exporters
      timeout_seconds: 5

A NIC names its RDMA device as the host knows it (what ``NCCL_IB_HCA`` lists), its GUID
(what FlagCX's route file keys NICs by), the switch port it is cabled to (a switch of
the devices), its speed, its rail and, optionally, its IP address (RoCE's; on an Ascend
server, where each NPU has a NIC of its own, the ``device_ip`` of HCCL's rank table).
Everything is checked when the inventory loads, each error naming the line.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drivers.yamlfile import LinedList, Section, YamlFileError

GPU_VENDORS = ("nvidia", "amd", "ascend")
HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
NIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
GUID = re.compile(r"0x[0-9a-f]{16}")
URL = re.compile(r"https?://[^\s/?#]+(?:/[^\s]*)?")
MAX_GPUS = 1024
MAX_NICS = 64
DEFAULT_METRICS_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class HostNic:
    name: str
    guid: str
    switch: str
    port: str
    speed: str
    rail: int
    address: str | None = None  # its IP address (RoCE)

    @property
    def speed_bps(self) -> float:
        return _speeds()[self.speed]

    @property
    def switch_port(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class Host:
    name: str
    vendor: str
    model: str
    gpus: int
    nics: tuple[HostNic, ...]
    scale_up: str
    campus: str = ""
    address: str | None = None
    metrics: tuple[str, ...] = ()

    def nic(self, name: str) -> HostNic | None:
        return next((nic for nic in self.nics if nic.name == name), None)


@dataclass(frozen=True)
class GpuMetricsSource:
    """The fleet's Prometheus, when the hosts' state is read from it."""

    prometheus: str
    timeout_seconds: float = DEFAULT_METRICS_TIMEOUT_SECONDS


def _items(data: Mapping[str, Any], key: str, source: str) -> list[tuple[Any, int]]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise YamlFileError(f"{source}: {key}: must be a list")
    lines = value.item_lines if isinstance(value, LinedList) else [0] * len(value)
    return list(zip(value, lines, strict=True))


def parse_hosts(data: Mapping[str, Any], source: str,
                kinds: Mapping[str, str]) -> tuple[dict[str, Host], GpuMetricsSource | None]:
    """The ``hosts`` and ``gpu_metrics`` sections, checked against the devices' ``kinds``
    (a NIC's switch is a switch of the devices; no switch port has two NICs)."""
    hosts: dict[str, Host] = {}
    cabled: dict[str, str] = {}  # switch port -> host/nic
    guids: dict[str, str] = {}
    for index, (item, line) in enumerate(_items(data, "hosts", source)):
        section = Section(item, source, f"host #{index + 1}", line=line)
        section.reject_unknown({"name", "address", "campus", "gpus", "scale_up", "metrics",
                                "nics"})
        name = section.get("name", str)
        if not HOST_NAME.fullmatch(name):
            raise section.error("name", "must be letters, digits, '.', '_' or '-' (at most 63)")
        section.owner = f"host {name!r}"
        if name in hosts:
            raise section.error("name", "is defined twice")
        if name in kinds:
            raise section.error("name", f"is a device's name ({kinds[name]})")
        gpus = Section(section.get("gpus", dict), source, f"host {name!r} gpus")
        gpus.reject_unknown({"vendor", "model", "count"})
        vendor = gpus.get("vendor", str, choices=GPU_VENDORS)
        model = gpus.get("model", str)
        if not model.strip() or len(model) > 64 or not model.isprintable():
            raise gpus.error("model", "must be 1..64 printable characters")
        count = gpus.get("count", int)
        if not 1 <= count <= MAX_GPUS:
            raise gpus.error("count", f"must be 1..{MAX_GPUS}")
        address = section.get("address", str, default=None)
        if address is not None and (not address or any(c.isspace() for c in address)):
            raise section.error("address", "must be a host name or address")
        metrics = tuple(_urls(section, "metrics"))
        nics = _nics(section, source, name, kinds, cabled, guids)
        hosts[name] = Host(name, vendor, model, count, nics,
                           section.get("scale_up", str, default=name),
                           section.get("campus", str, default=""), address, metrics)
    return hosts, _gpu_metrics(data, source)


def _urls(section: Section, key: str) -> list[str]:
    value = section.get(key, list, default=[])
    for url in value:
        if not isinstance(url, str) or not URL.fullmatch(url):
            raise section.error(key, f"{url!r} is not an http:// or https:// URL")
    return list(value)


def _nics(section: Section, source: str, host: str, kinds: Mapping[str, str],
          cabled: dict[str, str], guids: dict[str, str]) -> tuple[HostNic, ...]:
    entries = section.get("nics", list)
    if not 1 <= len(entries) <= MAX_NICS:
        raise section.error("nics", f"a host has 1..{MAX_NICS} NICs")
    lines = entries.item_lines if isinstance(entries, LinedList) else [0] * len(entries)
    made: list[HostNic] = []
    for index, (item, line) in enumerate(zip(entries, lines, strict=True)):
        nic = Section(item, source, f"host {host!r} nic #{index + 1}", line=line)
        nic.reject_unknown({"name", "guid", "switch", "port", "speed", "rail", "address"})
        name = nic.get("name", str)
        if not NIC_NAME.fullmatch(name):
            raise nic.error("name", "must be letters, digits, '.', '_' or '-' (at most 32)")
        if any(other.name == name for other in made):
            raise nic.error("name", f"{host} has another NIC named {name}")
        guid = nic.get("guid", str).lower()
        if not GUID.fullmatch(guid):
            raise nic.error("guid", "must be 0x and 16 hex digits (a node GUID)")
        if guid in guids:
            raise nic.error("guid", f"is {guids[guid]}'s too")
        switch = nic.get("switch", str)
        if kinds.get(switch) != "switch":
            raise nic.error("switch", f"no switch named {switch!r} among the devices")
        port = nic.get("port", str)
        if not port or len(port) > 64 or not port.isprintable():
            raise nic.error("port", "must be a port name like Ethernet9")
        end = f"{switch}:{port}"
        if end in cabled:
            raise nic.error("port", f"{end} is {cabled[end]}'s already")
        speed = nic.get("speed", str, choices=tuple(_speeds()))
        rail = nic.get("rail", int, default=index)
        if not 0 <= rail <= 1023:
            raise nic.error("rail", "must be 0..1023")
        if any(other.rail == rail for other in made):
            raise nic.error("rail", f"{host} has another NIC on rail {rail}")
        address = nic.get("address", str, default=None)
        if address is not None:
            try:
                address = str(ipaddress.ip_address(address))
            except ValueError:
                raise nic.error("address", f"{address!r} is not an IPv4 or IPv6 address") \
                    from None
        cabled[end] = guids[guid] = f"{host}/{name}"
        made.append(HostNic(name, guid, switch, port, speed, rail, address))
    return tuple(made)


@functools.cache
def _speeds() -> dict[str, float]:
    # the switch drivers' table, loaded only when an inventory has hosts (an OCS command
    # loads nothing of the switches)
    from drivers.switch.link import PORT_SPEEDS_BPS

    return PORT_SPEEDS_BPS


def _gpu_metrics(data: Mapping[str, Any], source: str) -> GpuMetricsSource | None:
    value = data.get("gpu_metrics")
    if value is None:
        return None
    section = Section(value, source, "gpu_metrics")
    section.reject_unknown({"prometheus", "timeout_seconds"})
    url = section.get("prometheus", str)
    if not URL.fullmatch(url):
        raise section.error("prometheus", f"{url!r} is not an http:// or https:// URL")
    timeout = section.get("timeout_seconds", float, default=DEFAULT_METRICS_TIMEOUT_SECONDS)
    if not 0.05 <= timeout <= 600:
        raise section.error("timeout_seconds", "must be between 0.05 and 600 seconds")
    return GpuMetricsSource(url.rstrip("/"), timeout)
