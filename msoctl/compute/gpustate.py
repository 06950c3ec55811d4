"""GPU servers' state, read where fleets already publish it.

Each vendor's exporter names things its own way; this module reads them (the metric
names and their meanings from each exporter's published sources) into one shape:

- NVIDIA dcgm-exporter: ``DCGM_FI_DEV_GPU_TEMP`` (°C), ``DCGM_FI_DEV_POWER_USAGE`` (W),
  ``DCGM_FI_DEV_GPU_UTIL`` (%), ``DCGM_FI_DEV_FB_USED``/``_FREE`` (MiB),
  ``DCGM_FI_DEV_XID_ERRORS`` (the last XID), ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` and
  ``DCGM_EXP_GPU_HEALTH_STATUS`` (0 pass, 10 warn, 20 fail) where the fleet enabled
  them; a GPU is the ``gpu`` label.
- AMD device-metrics-exporter: ``gpu_health`` (1/0), ``gpu_junction_temperature`` (or
  ``gpu_edge_temperature``), ``gpu_power_usage``, ``gpu_gfx_activity`` (%),
  ``gpu_used_vram``/``gpu_total_vram`` (MB), ``gpu_ecc_uncorrect_total``; the GPU is
  ``gpu_id``.
- Ascend npu-exporter: ``npu_chip_info_health_status`` (1 healthy, 0 not, -1 unknown),
  ``npu_chip_info_temperature``, ``_power``, ``_utilization``, ``_hbm_used_memory``/
  ``_hbm_total_memory``, ``_error_code``, ``_hbm_ecc_double_bit_error_cnt``, and
  ``npu_chip_info_link_status`` (the NPU's own RoCE port: the host's NIC of that index);
  the NPU is ``id``.
- node_exporter, for NICs that are cards of their own: ``node_infiniband_state_id`` (4
  active), ``node_infiniband_physical_state_id`` (5 link up) and
  ``node_infiniband_rate_bytes_per_second``, by ``device``.

A GPU is judged **unhealthy** when its exporter says so (a failed health status), when
it reports an XID that needs a reset, an uncorrectable ECC error, an error code, or when
the inventory says it is there and its exporter does not report it (fallen off the bus);
**unknown** when its host's exporters could not be read. A NIC is down when its port is
not active or its link is not up; **degraded** when it is up at less than the speed the
inventory gives it (a link that trained down, having lost lanes): it carries traffic,
slower than its rail expects, so a job is placed without it. Every reason is kept, for
the operator.

Two ways to read: each host's ``metrics`` endpoints scraped directly (a small fleet, the
lab), or the fleet's Prometheus (``gpu_metrics: prometheus:``) asked for the same series,
each matched to its host by the ``instance`` label Prometheus gives the target (the
host's ``metrics`` endpoints name those targets).
"""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from msoctl.hosts import GpuMetricsSource, Host

CRITICAL_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120})
"""XIDs after which a GPU is not to be given work until it is reset or drained (NVIDIA's
XID catalogue: uncorrectable ECC, fallen off the bus, NVLink, GSP errors)."""
DCGM_HEALTH_FAIL = 20
INFINIBAND_ACTIVE, INFINIBAND_LINK_UP = 4, 5
MAX_METRICS_BYTES = 16 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 5.0
MAX_PARALLEL = 32

_GPU_LABEL = {"nvidia": "gpu", "amd": "gpu_id", "ascend": "id"}
_SERIES: dict[str, dict[str, tuple[str, ...]]] = {
    "nvidia": {"temperature": ("DCGM_FI_DEV_GPU_TEMP",), "power": ("DCGM_FI_DEV_POWER_USAGE",),
               "utilisation": ("DCGM_FI_DEV_GPU_UTIL",), "memory_used": ("DCGM_FI_DEV_FB_USED",),
               "memory_free": ("DCGM_FI_DEV_FB_FREE",), "xid": ("DCGM_FI_DEV_XID_ERRORS",),
               "ecc": ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",),
               "health": ("DCGM_EXP_GPU_HEALTH_STATUS",)},
    "amd": {"temperature": ("gpu_junction_temperature", "gpu_edge_temperature"),
            "power": ("gpu_power_usage", "gpu_package_power"),
            "utilisation": ("gpu_gfx_activity",), "memory_used": ("gpu_used_vram",),
            "memory_total": ("gpu_total_vram",), "ecc": ("gpu_ecc_uncorrect_total",),
            "health": ("gpu_health",)},
    "ascend": {"temperature": ("npu_chip_info_temperature",),
               "power": ("npu_chip_info_power",),
               "utilisation": ("npu_chip_info_utilization",),
               "memory_used": ("npu_chip_info_hbm_used_memory",),
               "memory_total": ("npu_chip_info_hbm_total_memory",),
               "ecc": ("npu_chip_info_hbm_ecc_double_bit_error_cnt",),
               "error": ("npu_chip_info_error_code",),
               "health": ("npu_chip_info_health_status",),
               "link": ("npu_chip_info_link_status",)},
}
FULL_RATE_SHARE = 0.99
"""A NIC's link is degraded below this share of its inventory speed."""
_NIC_SERIES = ("node_infiniband_state_id", "node_infiniband_physical_state_id",
               "node_infiniband_rate_bytes_per_second")


@dataclass(frozen=True)
class GpuState:
    host: str
    index: int
    healthy: bool | None  # None: not known (its host could not be read)
    reasons: tuple[str, ...] = ()
    temperature_celsius: float | None = None
    power_watts: float | None = None
    utilisation: float | None = None  # 0..1
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    xid: int | None = None
    ecc_uncorrectable: float | None = None


@dataclass(frozen=True)
class NicState:
    host: str
    name: str
    up: bool | None
    reason: str | None = None
    degraded: str | None = None  # why an up NIC is slower than it should be

    @property
    def usable(self) -> bool:
        """Up at its full speed: what a job is given."""
        return bool(self.up) and self.degraded is None

    @property
    def problem(self) -> str | None:
        """What is wrong with it, if anything."""
        return self.reason if not self.up else self.degraded


@dataclass(frozen=True)
class HostState:
    host: Host
    gpus: tuple[GpuState, ...]
    nics: tuple[NicState, ...]
    error: str | None = None  # why its state could not be read

    @property
    def healthy_gpus(self) -> list[int]:
        return [gpu.index for gpu in self.gpus if gpu.healthy]


Samples = dict[str, list[tuple[dict[str, str], float]]]
"""Series by metric name: (labels, value) of each sample."""


class MetricsError(Exception):
    """A host's or Prometheus's metrics could not be read; the message says why."""


# ---- reading ------------------------------------------------------------------------------

def read_hosts(hosts: Sequence[Host], source: GpuMetricsSource | None = None, *,
               timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> list[HostState]:
    """Every host's state, in the order given: from each host's exporters, or from
    ``source`` (the fleet's Prometheus). A host that cannot be read is in the answer
    with its ``error`` and its GPUs' health unknown; nothing raises for one host."""
    if source is not None:
        return _from_prometheus(hosts, source)
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(hosts)))) as pool:
        return list(pool.map(lambda host: _scrape_host(host, timeout_seconds), hosts))


def _scrape_host(host: Host, timeout_seconds: float) -> HostState:
    if not host.metrics:
        return unknown(host, "the inventory names no metrics endpoint for it")
    samples: Samples = {}
    try:
        for url in host.metrics:
            for name, found in parse_text(fetch(url, timeout_seconds)).items():
                samples.setdefault(name, []).extend(found)
    except MetricsError as error:
        return unknown(host, str(error))
    return judge(host, samples)


def fetch(url: str, timeout_seconds: float) -> str:
    """``url``'s body as text; MetricsError for anything but a 200 with a readable body."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_seconds) as answer:
            body: bytes = answer.read(MAX_METRICS_BYTES + 1)
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise MetricsError(f"{url}: {reason}") from None
    if len(body) > MAX_METRICS_BYTES:
        raise MetricsError(f"{url}: more than {MAX_METRICS_BYTES} bytes")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise MetricsError(f"{url}: not UTF-8 text") from None


def parse_text(text: str) -> Samples:
    """The samples of a Prometheus text exposition; MetricsError if it does not parse."""
    samples: Samples = {}
    try:
        for family in text_string_to_metric_families(text):
            # The parser names a counter's samples <family>_total (OpenMetrics), also where
            # the exposition did not (dcgm-exporter's DCGM_FI_DEV_ECC_DBE_VOL_TOTAL): keep
            # the name as the text wrote it.
            added = (family.type == "counter" and f"{family.name}_total" not in text
                     and family.name in text)
            for sample in family.samples:
                name = family.name if added and sample.name == f"{family.name}_total" \
                    else sample.name
                samples.setdefault(name, []).append((dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError, KeyError) as error:
        raise MetricsError(f"not the Prometheus text format: {error}") from None
    return samples


def unknown(host: Host, why: str) -> HostState:
    return HostState(host, tuple(GpuState(host.name, i, None, (f"unknown: {why}",))
                                 for i in range(host.gpus)),
                     tuple(NicState(host.name, nic.name, None, why) for nic in host.nics), why)


# ---- judging --------------------------------------------------------------------------------

def judge(host: Host, samples: Samples) -> HostState:
    """``host``'s GPUs and NICs from the samples of its exporters."""
    names = _SERIES[host.vendor]
    label = _GPU_LABEL[host.vendor]

    def per_gpu(key: str) -> dict[int, list[tuple[dict[str, str], float]]]:
        found: dict[int, list[tuple[dict[str, str], float]]] = {}
        for name in names.get(key, ()):
            for labels, value in samples.get(name, []):
                index = _index(labels.get(label))
                if index is not None and math.isfinite(value):
                    found.setdefault(index, []).append((labels, value))
            if found:
                break  # the first name the exporter serves
        return found

    values = {key: per_gpu(key) for key in names}
    gpus = [_gpu(host, index, {key: found.get(index, []) for key, found in values.items()})
            for index in range(host.gpus)]
    nics = _nics(host, samples, values.get("link", {}))
    return HostState(host, tuple(gpus), tuple(nics))


def _index(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _first(found: list[tuple[dict[str, str], float]]) -> float | None:
    return found[0][1] if found else None


def _gpu(host: Host, index: int, found: Mapping[str, list[tuple[dict[str, str], float]]]
         ) -> GpuState:
    if not any(found.values()):
        return GpuState(host.name, index, False, ("not reported by its exporter (off the "
                                                  "bus, or gone)",))
    reasons: list[str] = []
    health = found.get("health", [])
    if host.vendor == "nvidia":
        failing = [labels.get("health_watch", "?") for labels, value in health
                   if value >= DCGM_HEALTH_FAIL]
        if failing:
            reasons.append(f"DCGM health fails ({', '.join(failing)})")
    elif health:
        value = health[0][1]
        if value == 0:
            reasons.append("its exporter reports it unhealthy")
        elif value < 0:
            reasons.append("its exporter cannot tell its health")
    xid_value = _first(found.get("xid", []))
    xid = None if xid_value is None else int(xid_value)
    if xid in CRITICAL_XIDS:
        reasons.append(f"XID {xid}")
    ecc = _first(found.get("ecc", []))
    if ecc and host.vendor != "amd":  # AMD's total is lifetime; its health judges it
        reasons.append(f"{ecc:g} uncorrectable ECC error{'' if ecc == 1 else 's'}")
    error = _first(found.get("error", []))
    if error:
        reasons.append(f"error code {int(error):#x}")
    used = _first(found.get("memory_used", []))
    total = _first(found.get("memory_total", []))
    free = _first(found.get("memory_free", []))
    if total is None and used is not None and free is not None:
        total = used + free
    utilisation = _first(found.get("utilisation", []))
    return GpuState(host.name, index, not reasons, tuple(reasons),
                    _first(found.get("temperature", [])), _first(found.get("power", [])),
                    None if utilisation is None else utilisation / 100, used, total, xid, ecc)


def _nics(host: Host, samples: Samples,
          links: Mapping[int, list[tuple[dict[str, str], float]]]) -> list[NicState]:
    states: list[NicState] = []
    for index, nic in enumerate(host.nics):
        if host.vendor == "ascend":
            value = _first(links.get(index, []))
            if value is None:
                states.append(NicState(host.name, nic.name, None, "no link status reported"))
            else:
                states.append(NicState(host.name, nic.name, value == 1,
                                       None if value == 1 else "link down"))
            continue
        state = _by_device(samples, "node_infiniband_state_id", nic.name)
        physical = _by_device(samples, "node_infiniband_physical_state_id", nic.name)
        if state is None or physical is None:
            states.append(NicState(host.name, nic.name, None,
                                   "not reported by node_exporter"))
        elif state == INFINIBAND_ACTIVE and physical == INFINIBAND_LINK_UP:
            rate = _by_device(samples, "node_infiniband_rate_bytes_per_second", nic.name)
            slow = rate is not None and rate * 8 < nic.speed_bps * FULL_RATE_SHARE
            states.append(NicState(host.name, nic.name, True, degraded=(
                f"link at {rate * 8 / 1e9:g} Gb/s of {nic.speed}" if slow and rate is not None
                else None)))
        else:
            states.append(NicState(host.name, nic.name, False,
                                   f"port state {state:g}, physical state {physical:g}"))
    return states


def _by_device(samples: Samples, name: str, device: str) -> float | None:
    return next((value for labels, value in samples.get(name, [])
                 if labels.get("device") == device), None)


# ---- through the fleet's Prometheus ------------------------------------------------------------

def _from_prometheus(hosts: Sequence[Host], source: GpuMetricsSource) -> list[HostState]:
    wanted = sorted({name for vendor in _SERIES.values() for names in vendor.values()
                     for name in names} | set(_NIC_SERIES))
    query = "{__name__=~\"" + "|".join(wanted) + "\"}"
    try:
        results = _instant_query(source, query)
    except MetricsError as error:
        return [unknown(host, str(error)) for host in hosts]
    by_instance: dict[str, Samples] = {}
    for labels, value in results:
        name = labels.pop("__name__", "")
        by_instance.setdefault(labels.get("instance", ""), {}).setdefault(name, []).append(
            (labels, value))
    states = []
    for host in hosts:
        instances = [_instance(url) for url in host.metrics]
        if not instances:
            states.append(unknown(host, "the inventory names no metrics endpoint for it"))
            continue
        if not any(instance in by_instance for instance in instances):
            states.append(unknown(host, f"Prometheus has no series of its targets "
                                        f"({', '.join(instances)})"))
            continue
        merged: Samples = {}
        for instance in instances:
            for name, found in by_instance.get(instance, {}).items():
                merged.setdefault(name, []).extend(found)
        states.append(judge(host, merged))
    return states


def _instance(url: str) -> str:
    """The ``instance`` label Prometheus gives a target scraped at ``url``."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _instant_query(source: GpuMetricsSource, query: str
                   ) -> list[tuple[dict[str, str], float]]:
    url = f"{source.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    text = fetch(url, source.timeout_seconds)
    try:
        document = json.loads(text)
        if document.get("status") != "success":
            raise MetricsError(f"{source.prometheus}: {document.get('error', 'query failed')}")
        results = document["data"]["result"]
        return [(dict(item["metric"]), float(item["value"][1])) for item in results]
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        raise MetricsError(f"{source.prometheus}: not a Prometheus query answer: "
                           f"{error}") from None


def healthy_count(states: Iterable[HostState]) -> int:
    return sum(len(state.healthy_gpus) for state in states)


@dataclass
class Census:
    """GPUs by vendor: how many, how many healthy."""

    total: dict[str, int] = field(default_factory=dict)
    healthy: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, states: Iterable[HostState]) -> Census:
        census = cls()
        for state in states:
            vendor = state.host.vendor
            census.total[vendor] = census.total.get(vendor, 0) + state.host.gpus
            census.healthy[vendor] = census.healthy.get(vendor, 0) + len(state.healthy_gpus)
        return census
