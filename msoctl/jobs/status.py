"""A kept job's state now: every part of the fabric its traffic crosses.

- its servers: how many of the job's GPUs are healthy, how many of the NICs it uses are
  up, what is wrong (msoctl/compute/gpustate.py);
- the fabric links between its servers, traced end to end both ways as ``msoctl path
  show`` traces them (msoctl/fabric/lightpath.py): the span each is carried on now
  (``working``, ``protection``, ``none``), whether the light arrives or where it is lost
  (a cut span, an amplifier whose output is low or dark), drained or in service, and the
  amplifiers on its span.

- its switch ports (the ports its NICs are cabled to, and both ends of each link it
  crosses): the congestion counters read twice ``interval`` apart (not at all with no
  interval: one reading gives no rate), as rates (ECN marks,
  PFC pause frames sent and received, drops: ``msoctl switch counters``), and the
  port's optics lane by lane against the thresholds the switch sets (``msoctl telemetry
  optics``); a lane that sees no light (below -30 dBm) is out of range whatever the
  thresholds.

The verdict: ``broken`` when a GPU of the job is unhealthy or unknown, a NIC it uses is
not up, or a link it crosses loses its light, is not connected, cannot be read, or is
drained; ``degraded`` when a link it crosses runs on its protection span (it works,
without a fallback), a port of the job pauses (PFC frames rising: the lossless class
stalls) or drops packets, or a lane of one of its ports is past an alarm threshold or
dark; ``ok`` otherwise. Rising ECN marks are shown, not judged: they are congestion
control at work. A switch that cannot be read leaves its ports unknown, named among the
problems without changing the verdict.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from drivers.errors import DeviceError
from drivers.optics.readings import OpticsReading, PortOptics
from msoctl.compute.gpustate import read_hosts
from msoctl.fabric.lightpath import DARK_BELOW_DBM, show
from msoctl.jobs.registry import Job
from msoctl.words import natural_key

if TYPE_CHECKING:
    from msoctl.access import Devices
    from msoctl.inventory import Inventory


class FabricView(Protocol):
    """What a job's state is read through: the inventory, its devices, the drained links
    (the command's context; the exporter's, one per reading)."""

    @property
    def inventory(self) -> Inventory: ...

    @property
    def devices(self) -> Devices: ...

    def drained(self) -> set[str]: ...


@dataclass(frozen=True)
class HostPart:
    name: str
    gpus: int
    healthy: int
    nics: int
    nics_up: int
    problems: tuple[str, ...]


@dataclass(frozen=True)
class LinkPart:
    name: str
    role: str | None  # working | protection | none | mixed | None: unknown
    span: str | None
    light: str  # arrives | lost | unknown
    lost_at: str | None  # "device point (status)" where the light is lost
    amplifiers: tuple[str, ...]
    drained: bool


DEFAULT_INTERVAL_SECONDS = 1.0
OPTICS_BUDGET_SECONDS = 5.0
COUNTERS = {"ecn": ("ecn-marked-packets",),
            "pfc": ("pfc-pause-frames-sent", "pfc-pause-frames-received"),
            "drops": ("dropped-packets",)}
"""The rates a port part shows, each the sum of these counters of the switch's state."""
LANE_QUANTITIES = (("rx_power_dbm", "rx", "dBm"), ("tx_power_dbm", "tx", "dBm"),
                   ("tx_bias_ma", "bias", "mA"))


@dataclass(frozen=True)
class PortPart:
    switch: str
    port: str
    faces: str  # host (a NIC of the job is cabled to it) | fabric (a link's end)
    ecn_per_second: float | None = None
    pfc_per_second: float | None = None
    drops_per_second: float | None = None
    optics: str | None = None  # ok | warning | alarm | None: not read
    problems: tuple[str, ...] = ()
    error: str | None = None  # why it could not be read


@dataclass
class JobState:
    job: Job
    hosts: list[HostPart] = field(default_factory=list)
    links: list[LinkPart] = field(default_factory=list)
    ports: list[PortPart] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    verdict: str = "ok"


def job_state(ctx: FabricView, job: Job, *,
              interval: float = DEFAULT_INTERVAL_SECONDS) -> JobState:
    """``job`` now; its switch ports' counters are read ``interval`` seconds apart (0:
    once, no rates), while its servers and links are read."""
    inventory = ctx.inventory
    state = JobState(job)
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="job-ports")
    try:
        port_reads = {switch: pool.submit(_read_ports, ctx, switch, ports, interval)
                      for switch, ports in _job_ports(ctx, job).items()}
        wanted = [inventory.hosts[name] for name in job.hosts if name in inventory.hosts]
        missing = [name for name in job.hosts if name not in inventory.hosts]
        broken: list[str] = [f"{name}: no longer in the inventory" for name in missing]
        degraded: list[str] = []
        for host_state in read_hosts(wanted, inventory.gpu_metrics):
            name = host_state.host.name
            gpus = job.hosts[name]
            nics = job.nics[name]
            problems = [f"gpu {gpu.index}: {'; '.join(gpu.reasons)}" for gpu in host_state.gpus
                        if gpu.index in gpus and not gpu.healthy]
            problems += [f"{nic.name}: {nic.reason}" for nic in host_state.nics
                         if nic.name in nics and not nic.up]
            slow = [f"{nic.name}: {nic.degraded}" for nic in host_state.nics
                    if nic.name in nics and nic.up and nic.degraded]
            healthy = sum(1 for gpu in host_state.gpus if gpu.index in gpus and gpu.healthy)
            up = sum(1 for nic in host_state.nics if nic.name in nics and nic.up)
            state.hosts.append(HostPart(name, len(gpus), healthy, len(nics), up,
                                        tuple(problems + slow)))
            broken += [f"{name} {problem}" for problem in problems]
            degraded += [f"{name} {problem}" for problem in slow]
        drained = ctx.drained()
        links = [inventory.links[name] for name in job.links if name in inventory.links]
        broken += [f"{name}: no longer in the inventory" for name in job.links
                   if name not in inventory.links]
        report = show(ctx.devices, links) if links else None
        for link, traced in zip(links, [] if report is None else report.links, strict=True):
            role = traced.span
            span = link.span(role) if role in ("working", "protection") else None
            amplifiers = () if span is None else tuple(
                amp for amp in (span.a_to_b.amplifier, span.b_to_a.amplifier) if amp)
            lost = next((d for d in traced.directions if d.lost_at is not None), None)
            where = None
            if lost is not None and lost.lost_at is not None:
                hop = lost.hops[lost.lost_at]
                where = f"{hop.device} {hop.point} ({hop.status})"
            state.links.append(LinkPart(link.name, role, None if span is None else span.name,
                                        traced.light, where, amplifiers, link.name in drained))
            if role is None:
                broken.append(f"{link.name}: its devices cannot be read")
            elif role in ("none", "mixed"):
                broken.append(f"{link.name}: not connected end to end ({role})")
            elif traced.light == "lost":
                broken.append(f"{link.name}: light lost at {where}")
            elif link.name in drained:
                broken.append(f"{link.name}: drained")
            elif role == "protection":
                degraded.append(f"{link.name}: on its protection span")
        unknown: list[str] = []
        for switch, future in port_reads.items():
            parts = future.result()
            state.ports += parts
            for part in parts:
                where = f"{switch} {part.port}"
                if part.error is not None:
                    unknown.append(f"{where}: {part.error}")
                if part.pfc_per_second:
                    degraded.append(f"{where}: PFC pause frames rising "
                                    f"({part.pfc_per_second:,.0f}/s)")
                if part.drops_per_second:
                    degraded.append(f"{where}: dropping packets "
                                    f"({part.drops_per_second:,.0f}/s)")
                if part.optics == "alarm":
                    degraded += [f"{where} {problem}" for problem in part.problems
                                 if "alarm" in problem or "no light" in problem]
    finally:  # after a failure above, no read still queued begins
        pool.shutdown(wait=False, cancel_futures=True)
    state.problems = broken + degraded + unknown
    state.verdict = "broken" if broken else "degraded" if degraded else "ok"
    return state


def _job_ports(ctx: FabricView, job: Job) -> dict[str, dict[str, str]]:
    """Switch -> its ports the job's traffic crosses -> ``host`` or ``fabric``."""
    inventory = ctx.inventory
    found: dict[str, dict[str, str]] = {}
    for link_name in job.links:
        link = inventory.links.get(link_name)
        for end in () if link is None else (link.a, link.b):
            found.setdefault(end.switch, {})[end.port] = "fabric"
    for switch_port in job.switch_ports:
        switch, _, port = switch_port.partition(":")
        found.setdefault(switch, {}).setdefault(port, "host")
    return {switch: ports for switch, ports in found.items()
            if switch in inventory.devices and inventory.devices[switch].kind == "switch"}


def _read_ports(ctx: FabricView, switch: str, ports: Mapping[str, str],
                interval: float) -> list[PortPart]:
    """Switch ``switch``'s ``ports``: counters as rates over ``interval`` (none read with
    no interval: a single reading gives no rate), optics judged."""
    rates: dict[str, dict[str, float | None]] = {}
    counter_error = None
    if interval > 0:
        try:
            rates = _counter_rates(ctx, switch, interval)
        except DeviceError as error:
            counter_error = f"counters cannot be read ({error.message})"
    entry = ctx.inventory.devices[switch]
    reading, optics_error = None, None
    if entry.snmp is not None or entry.gnmi is not None:
        from msoctl.ops.optics import read_optics

        try:
            reading = read_optics(ctx.devices, entry, None, OPTICS_BUDGET_SECONDS)
        except DeviceError as error:
            optics_error = f"optics cannot be read ({error.message})"
    parts = []
    for port, faces in sorted(ports.items(), key=lambda item: natural_key(item[0])):
        port_rates = rates.get(port, {})
        level, problems = _judge_optics(_port_optics(reading, port))
        errors = [why for why in (counter_error, optics_error) if why is not None]
        if interval > 0 and not port_rates and counter_error is None:
            errors.append("the switch has no such port")
        parts.append(PortPart(switch, port, faces, port_rates.get("ecn"),
                              port_rates.get("pfc"), port_rates.get("drops"),
                              level if reading is not None else None, tuple(problems),
                              "; ".join(errors) or None))
    return parts


def _counter_rates(ctx: FabricView, switch: str,
                   interval: float) -> dict[str, dict[str, float | None]]:
    """Port -> ``ecn``, ``pfc``, ``drops`` per second over ``interval`` (``None`` for a
    counter not read, or one that went back: the switch restarted)."""
    from drivers.switch.session import open_session

    with open_session(ctx.devices.switch_target(switch)) as session:
        first = _port_totals(session.get_state())
        started = time.monotonic()
        time.sleep(interval)
        second = _port_totals(session.get_state())
        elapsed = time.monotonic() - started
    rates: dict[str, dict[str, float | None]] = {}
    for port, totals in second.items():
        before = first.get(port, {})
        rates[port] = {name: _rate(before.get(name), totals.get(name), elapsed)
                       for name in COUNTERS}
    return rates


def _rate(before: int | None, after: int | None, seconds: float) -> float | None:
    """Per second; ``None`` for a counter not read, or one that went back (restarted)."""
    if before is None or after is None or after < before:
        return None
    return (after - before) / seconds


def _port_totals(state: Mapping[str, Any]) -> dict[str, dict[str, int | None]]:
    """Port -> each of :data:`COUNTERS`' sums, from the switch's state tree."""
    totals: dict[str, dict[str, int | None]] = {}
    for entry in ((state.get("switch") or {}).get("ports") or {}).get("port", []):
        counters = entry.get("counters")
        if counters is None:
            continue  # configured, but the chip has no such port
        totals[entry.get("name")] = {
            name: None if any(counters.get(key) is None for key in keys)
            else sum(int(counters[key]) for key in keys)
            for name, keys in COUNTERS.items()}
    return totals


def _port_optics(reading: OpticsReading | None, port: str) -> PortOptics | None:
    if reading is None:
        return None
    return next((p for p in reading.ports if p.port_name == port), None)


def _judge_optics(port: PortOptics | None) -> tuple[str, list[str]]:
    """``ok``, ``warning`` or ``alarm``, and a line for the port's temperature and for each
    quantity and level its lanes are past (the lanes that are, with their range of
    values): past a threshold the switch sets, or dark."""
    if port is None:
        return "ok", []
    worst, problems = "ok", []
    dark = [lane.lane for lane in port.lanes
            if lane.rx_power_dbm is not None and lane.rx_power_dbm < DARK_BELOW_DBM]
    if dark:
        worst = "alarm"
        every = len(dark) == len(port.lanes)
        problems.append(f"no light on all its {len(dark)} lanes" if every
                        else f"no light on lanes {_numbers(dark)}")
    found: dict[tuple[str, str, str, float], list[tuple[int, float]]] = {}
    checks: list[tuple[str, int | None, float | None]] = [
        ("temperature_celsius", None, port.temperature_celsius)]
    for lane in port.lanes:
        for quantity, _, _ in LANE_QUANTITIES:
            if not (quantity == "rx_power_dbm" and lane.lane in dark):
                checks.append((quantity, lane.lane, getattr(lane, quantity)))
    for quantity, lane_number, value in checks:
        crossed = _crossed(port, quantity, value)
        if crossed is None or value is None:
            continue
        level, threshold = crossed
        found.setdefault((quantity, level, "lane" if lane_number else "port", threshold),
                         []).append((lane_number or 0, value))
        if level.endswith("alarm"):
            worst = "alarm"
        elif worst == "ok":
            worst = "warning"
    words = {quantity: (word, unit) for quantity, word, unit in LANE_QUANTITIES}
    words["temperature_celsius"] = ("temperature", "°C")
    for (quantity, level, _, threshold), lanes in found.items():
        word, unit = words[quantity]
        values = [value for _, value in lanes]
        low, high = min(values), max(values)
        shown = f"{low:.2f}" if low == high else f"{low:.2f}..{high:.2f}"
        where = "" if lanes[0][0] == 0 else \
            f"lane {lanes[0][0]} " if len(lanes) == 1 else \
            f"lanes {_numbers([n for n, _ in lanes])} "
        side = "below" if level.startswith("low") else "above"
        problems.append(f"{where}{word} {shown} {unit} {side} its "
                        f"{level.replace('_', ' ')} {threshold:.2f}")
    return worst, problems


def _crossed(port: PortOptics, quantity: str, value: float | None
             ) -> tuple[str, float] | None:
    """The most severe level ``value`` is past, with its threshold."""
    thresholds = port.thresholds.get(quantity)
    if value is None or thresholds is None:
        return None
    levels = thresholds.levels()
    for level, past in (("low_alarm", value < levels.get("low_alarm", -1e300)),
                        ("high_alarm", value > levels.get("high_alarm", 1e300)),
                        ("low_warning", value < levels.get("low_warning", -1e300)),
                        ("high_warning", value > levels.get("high_warning", 1e300))):
        if past:
            return level, levels[level]
    return None


def _numbers(numbers: list[int]) -> str:
    """``1-8``, ``2,5``, ``1-3,7``: runs of consecutive numbers joined."""
    runs: list[list[int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(f"{run[0]}-{run[-1]}" if len(run) > 2 else ",".join(map(str, run))
                    for run in runs)


def state_document(state: JobState) -> dict[str, Any]:
    return {"job": state.job.name, "since": state.job.since, "user": state.job.user,
            "verdict": state.verdict, "problems": state.problems,
            "hosts": [{**asdict(h), "problems": list(h.problems)} for h in state.hosts],
            "links": [{**asdict(link), "amplifiers": list(link.amplifiers)}
                      for link in state.links],
            "switch_ports": state.job.switch_ports,
            "ports": [{**asdict(port), "problems": list(port.problems)}
                      for port in state.ports]}
