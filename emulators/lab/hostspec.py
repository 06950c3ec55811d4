"""The compute endpoints of a lab topology: servers, their GPUs and their NICs.

A ``hosts:`` entry is one server::

    hosts:
      - name: gpu-a1
        campus: a
        gpus: {vendor: nvidia, model: H100, count: 4}
        scale_up: nvl-a1          # optional: the scale-up domain it belongs to (default:
                                  # the server alone, its GPUs joined by NVLink or the like)
        nics:                     # in rail order unless each gives its rail
          - {switch: sw-a, port: Ethernet9, rail: 0}
          - {switch: sw-a, port: Ethernet10, rail: 1, name: mlx5_1}

A NIC attaches to one of a switch's host ports (``host_ports:`` of a ``switches:`` entry:
``Ethernet<ports+1>`` on), runs at the switch's speed, and is named as its RDMA device
is on such a server (``mlx5_N`` for the ConnectX NICs of NVIDIA and AMD servers,
``hccn_N`` for an Ascend server's NPU-integrated RoCE ports) unless the entry names it.
Its GUID is derived from the server's name and the NIC's index, and its IPv4 address from
the server's place in the section and the NIC's index (``10.H.H.N``: server H counted
from 1 over two bytes, NIC N from 1), so a topology always gives the same GUIDs and
addresses, distinct across the whole lab. ``vendor`` says which exporter publishes the
GPUs' state (NVIDIA's dcgm-exporter, AMD's device-metrics-exporter, Ascend's
npu-exporter).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drivers.yamlfile import LinedList, Section

GPU_VENDORS = ("nvidia", "amd", "ascend")
DEFAULT_MODELS = {"nvidia": "H100", "amd": "MI300X", "ascend": "Ascend910B"}
NIC_PREFIX = {"nvidia": "mlx5_", "amd": "mlx5_", "ascend": "hccn_"}
MAX_GPUS_PER_HOST = 72
MAX_NICS_PER_HOST = 16
MAX_RAIL = 63
MAX_HOSTS = 65_535
"""Servers in one topology, at most: each gets two bytes of its NICs' addresses."""
GUID_PREFIX = "1070fd03"
"""The first four bytes of a generated GUID (a ConnectX-style node GUID)."""


@dataclass(frozen=True)
class NicSpec:
    name: str
    switch: str
    port: str
    rail: int
    guid: str  # 0x and 16 hex digits
    speed: str = "400G"  # the switch port's
    address: str | None = None  # its IPv4 address (module docstring)

    @property
    def switch_port(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class HostSpec:
    name: str
    campus: str
    vendor: str
    model: str
    gpus: int
    scale_up: str
    nics: tuple[NicSpec, ...]


def guid_of(host: str, index: int) -> str:
    """A stable GUID for ``host``'s NIC number ``index``."""
    digest = hashlib.sha256(f"{host}/{index}".encode()).hexdigest()
    return f"0x{GUID_PREFIX}{digest[:8]}"


def parse_hosts(top: Section, source: str, switches: dict[str, Any],
                claim: Callable[[Section], str]) -> list[HostSpec]:
    """The ``hosts:`` section, checked against the topology's switches (each NIC on a
    host port of one, no port twice). ``claim`` takes a section's name (unique across the
    topology); ``switches`` maps names to :class:`SwitchSpec`."""
    value = top.get("hosts", list, default=[])
    lines = value.item_lines if isinstance(value, LinedList) else [0] * len(value)
    hosts: list[HostSpec] = []
    taken: dict[str, str] = {}  # switch port -> the host NIC on it
    if len(value) > MAX_HOSTS:
        raise top.error("hosts", f"at most {MAX_HOSTS:,} servers")
    for number, (item, line) in enumerate(zip(value, lines, strict=True), start=1):
        section = Section(item, source, "hosts entry", line=line)
        section.reject_unknown({"name", "campus", "gpus", "scale_up", "nics"})
        name = claim(section)
        section.owner = f"host {name!r}"
        gpus = Section(section.get("gpus", dict), source, f"host {name!r} gpus")
        gpus.reject_unknown({"vendor", "model", "count"})
        vendor: str = gpus.get("vendor", str, choices=GPU_VENDORS)
        model: str = gpus.get("model", str, default=DEFAULT_MODELS[vendor])
        if not model.strip() or len(model) > 64 or not model.isprintable():
            raise gpus.error("model", "must be 1..64 printable characters")
        count: int = gpus.get("count", int, default=8)
        if not 1 <= count <= MAX_GPUS_PER_HOST:
            raise gpus.error("count", f"must be 1..{MAX_GPUS_PER_HOST}")
        scale_up: str = section.get("scale_up", str, default=name)
        nics = _nics(section, source, name, vendor, switches, taken, number)
        hosts.append(HostSpec(name, section.get("campus", str, default=""), vendor, model,
                              count, scale_up, nics))
    _check_scale_up(hosts, top)
    return hosts


def _nics(section: Section, source: str, host: str, vendor: str,
          switches: dict[str, Any], taken: dict[str, str],
          number: int) -> tuple[NicSpec, ...]:
    value = section.get("nics", list)
    if not 1 <= len(value) <= MAX_NICS_PER_HOST:
        raise section.error("nics", f"a host has 1..{MAX_NICS_PER_HOST} NICs")
    lines = value.item_lines if isinstance(value, LinedList) else [0] * len(value)
    made: list[NicSpec] = []
    for index, (item, line) in enumerate(zip(value, lines, strict=True)):
        nic = Section(item, source, f"host {host!r} nic #{index + 1}", line=line)
        nic.reject_unknown({"switch", "port", "rail", "name"})
        switch_name: str = nic.get("switch", str)
        switch = switches.get(switch_name)
        if switch is None:
            raise nic.error("switch", f"no switch {switch_name!r} in the switches section")
        port: str = nic.get("port", str)
        if port not in switch.host_port_names:
            ports = switch.host_port_names
            have = (f"{ports[0]}..{ports[-1]}" if ports else "none: give it host_ports")
            raise nic.error("port", f"{switch_name} has no host port {port!r} (its host "
                                    f"ports: {have})")
        end = f"{switch_name}:{port}"
        if end in taken:
            raise nic.error("port", f"{end} already has {taken[end]} on it")
        rail: int = nic.get("rail", int, default=index)
        if not 0 <= rail <= MAX_RAIL:
            raise nic.error("rail", f"must be 0..{MAX_RAIL}")
        if any(other.rail == rail for other in made):
            raise nic.error("rail", f"{host} has another NIC on rail {rail}")
        name: str = nic.get("name", str, default=f"{NIC_PREFIX[vendor]}{index}")
        if not name or len(name) > 32 or not all(c.isalnum() or c in "_-." for c in name):
            raise nic.error("name", "must be 1..32 letters, digits, '_', '-' or '.'")
        if any(other.name == name for other in made):
            raise nic.error("name", f"{host} has another NIC named {name}")
        taken[end] = f"{host}/{name}"
        made.append(NicSpec(name, switch_name, port, rail, guid_of(host, index), switch.speed,
                            f"10.{number // 256}.{number % 256}.{index + 1}"))
    return tuple(made)


def _check_scale_up(hosts: list[HostSpec], top: Section) -> None:
    """A scale-up domain spans hosts of one vendor and model (NVLink joins NVIDIA GPUs)."""
    seen: dict[str, HostSpec] = {}
    for host in hosts:
        first = seen.setdefault(host.scale_up, host)
        if (first.vendor, first.model) != (host.vendor, host.model):
            raise top.error("hosts", f"scale-up domain {host.scale_up!r} joins {first.name} "
                            f"({first.vendor} {first.model}) and {host.name} ({host.vendor} "
                            f"{host.model}): one domain is one kind of GPU")
