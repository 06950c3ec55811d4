"""The lossless priority a job's RDMA traffic must use: the one its switch ports keep
lossless (PFC), read from the switches' configuration as ``msoctl switch cc show``
reads it.

NCCL's ``NCCL_IB_TC`` (and RCCL's, FlagCX's) sets the traffic class the NIC marks a
queue pair's packets with, and the switch maps that DSCP to a priority: a job whose
traffic class lands on a priority the switch does not keep lossless runs on a lossy
class, and drops where PFC should have paused. So the priority comes from the ports the
job's NICs are cabled to: the one every port keeps lossless (the lowest, where a port
keeps several). Ports that keep none, switches that cannot be read or are not managed,
and ports that disagree are named; where nothing could be read the caller falls back to
the usual RoCE priority, 3, and says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from drivers.errors import DeviceError
from msoctl.access import Devices
from msoctl.words import natural_key

DEFAULT_PRIORITY = 3
"""RoCE's usual lossless priority (ConnectX's and SONiC's defaults)."""


@dataclass
class LosslessReading:
    by_port: dict[str, tuple[int, ...]] = field(default_factory=dict)  # "sw:port" -> kept
    unread: dict[str, str] = field(default_factory=dict)  # switch -> why

    @property
    def none_kept(self) -> list[str]:
        """Ports read that keep no priority lossless."""
        return sorted((port for port, kept in self.by_port.items() if not kept),
                      key=natural_key)

    def choice(self) -> tuple[int | None, list[str]]:
        """The priority the ports agree on (the most ports' lowest lossless one), and the
        ports whose lowest is another; None when no port read keeps one."""
        lowest = {port: min(kept) for port, kept in self.by_port.items() if kept}
        if not lowest:
            return None, []
        counts = Counter(lowest.values())
        chosen = min(counts, key=lambda priority: (-counts[priority], priority))
        return chosen, sorted((port for port, found in lowest.items() if found != chosen),
                              key=natural_key)


def read_lossless(devices: Devices, switch_ports: Iterable[str]) -> LosslessReading:
    """The lossless priorities of ``switch_ports`` (``switch:port``), each switch read
    once, all at once."""
    wanted: dict[str, set[str]] = {}
    for switch_port in switch_ports:
        switch, _, port = switch_port.partition(":")
        wanted.setdefault(switch, set()).add(port)
    reading = LosslessReading()

    def one(switch: str) -> None:
        entry = devices.inventory.devices.get(switch)
        if entry is None or (entry.netconf is None and entry.gnmi is None):
            reading.unread[switch] = "not managed (no netconf or gnmi in the inventory)"
            return
        from drivers.switch.session import open_session

        try:
            with open_session(devices.switch_target(switch)) as session:
                intent = session.read_intent()
        except DeviceError as error:  # ValidationError too: a secret that cannot be read
            reading.unread[switch] = error.message
            return
        for port in sorted(wanted[switch]):
            found = intent.ports.get(port)
            reading.by_port[f"{switch}:{port}"] = () if found is None \
                else tuple(sorted(found.lossless_priorities))

    with ThreadPoolExecutor(max_workers=min(16, len(wanted) or 1),
                            thread_name_prefix="lossless") as pool:
        list(pool.map(one, sorted(wanted)))
    return reading
