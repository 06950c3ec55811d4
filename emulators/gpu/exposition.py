"""A GPU server's state as its exporters publish it, in the Prometheus text format.

Restated from each exporter's published sources, not from what msoctl reads:

- **nvidia**: NVIDIA dcgm-exporter (port 9400): the series of its shipped
  ``default-counters.csv`` that a server's health rests on, and the two rows a fleet
  uncomments for health (``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL``, ``DCGM_EXP_GPU_HEALTH_STATUS``
  with its ``health_watch`` label: 0 pass, 10 warn, 20 fail). Every GPU series carries
  ``gpu``, ``UUID``, ``pci_bus_id``, ``device`` (``nvidiaN``), ``modelName``,
  ``Hostname`` (its releases' spelling) and ``DCGM_FI_DRIVER_VERSION``.
  ``DCGM_FI_DEV_XID_ERRORS`` is a gauge whose value is the last XID, with ``err_code``
  and ``err_msg`` labels. Types as the CSV declares them; no timestamps.
- **amd**: AMD device-metrics-exporter (port 5000): every metric a gauge, labels
  ``gpu_id``, ``card_model``, ``serial_number``, ``hostname``, the partition labels and
  the (empty) workload labels; ``gpu_health`` 1 healthy, 0 not (an uncorrectable ECC
  error, or a fatal error record).
- **ascend**: Ascend npu-exporter (port 8082): every metric a gauge, each sample with the
  time of its reading (milliseconds); labels ``id``, ``model_name``, ``vdie_id``,
  ``pcie_bus_info`` and the (empty) workload labels; ``npu_chip_info_health_status`` and
  ``npu_chip_info_link_status`` (the NPU's integrated RoCE port) 1 or 0;
  ``npu_chip_info_error_code`` only while the chip has an error.
- **node**: node_exporter's infiniband collector (port 9100), for the servers whose NICs
  are their own cards: ``node_infiniband_state_id`` (4 active, 1 down) and
  ``node_infiniband_physical_state_id`` (5 link up, 2 polling) per ``device`` and
  ``port``, and the port's rate (``node_infiniband_rate_bytes_per_second``: half the
  NIC's speed while its link is downshifted).

A GPU that has fallen off the bus is absent from its exporter, as a driver that lost it
leaves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from emulators.gpu.model import Gpu, Snapshot

DRIVER_VERSION = "550.54.15"
NVIDIA_MODEL_NAMES = {"H100": "NVIDIA H100 80GB HBM3"}
ASCEND_MODEL_NAMES = {"Ascend910B": "910B3-Ascend-V1"}
XID_TEXT = {0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault",
            43: "GPU stopped processing", 48: "DBE (Double Bit Error) ECC Error",
            63: "ECC page retirement or row remapping recording event",
            74: "NVLINK Error", 79: "GPU has fallen off the bus",
            94: "Contained ECC error", 95: "Uncontained ECC error"}
HEALTH_PASS, HEALTH_FAIL = 0, 20
ASCEND_ERROR_HBM_MULTI_BIT = 0x80E18401
"""An error code the chip reports with a double-bit HBM error (the value is the chip's)."""
PORTS = {"nvidia": 9400, "amd": 5000, "ascend": 8082, "node": 9100}
"""The exporters' default listening ports (the lab listens on ephemeral ones)."""


@dataclass
class Family:
    name: str
    kind: str  # gauge | counter
    help: str
    samples: list[tuple[dict[str, str], float, int | None]]  # labels, value, ms timestamp


def render(families: Iterable[Family]) -> str:
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {family.help}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for labels, value, stamp in family.samples:
            text = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
            sample = f"{family.name}{{{text}}}" if text else family.name
            number = repr(float(value)) if value != int(value) else str(int(value))
            lines.append(f"{sample} {number}" + ("" if stamp is None else f" {stamp}"))
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(name: str, kind: str, help_text: str, gpus: Sequence[Gpu],
            labels: Callable[[Gpu], dict[str, str]], value: Callable[[Gpu], float],
            stamp: int | None = None) -> Family:
    return Family(name, kind, help_text,
                  [(labels(gpu), value(gpu), stamp) for gpu in gpus if gpu.on_bus])


# ---- NVIDIA dcgm-exporter ------------------------------------------------------------------

def dcgm(snapshot: Snapshot) -> str:
    model = NVIDIA_MODEL_NAMES.get(snapshot.model, f"NVIDIA {snapshot.model}")

    def labels(gpu: Gpu) -> dict[str, str]:
        return {"gpu": str(gpu.index), "UUID": gpu.uuid, "pci_bus_id": gpu.pci_bus_id,
                "device": f"nvidia{gpu.index}", "modelName": model,
                "Hostname": snapshot.host, "DCGM_FI_DRIVER_VERSION": DRIVER_VERSION}

    def xid_labels(gpu: Gpu) -> dict[str, str]:
        return {**labels(gpu), "err_code": str(gpu.xid),
                "err_msg": XID_TEXT.get(gpu.xid, "unknownErr")}

    def health(gpu: Gpu) -> float:
        return HEALTH_PASS if gpu.healthy else HEALTH_FAIL

    gpus = snapshot.gpus
    energy = snapshot.energy_mj
    return render([
        _family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", gpus, labels,
                lambda g: round(g.temperature_celsius)),
        _family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", gpus, labels,
                lambda g: round(g.power_w, 3)),
        _family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                "Total energy consumption since boot (in mJ).", gpus, labels,
                lambda g: round(energy.get(g.index, 0.0))),
        _family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.",
                gpus, labels, lambda g: 0),
        _family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", gpus, labels,
                lambda g: round(g.utilisation * 100)),
        _family("DCGM_FI_DEV_XID_ERRORS", "gauge",
                "Value of the last XID error encountered.", gpus, xid_labels,
                lambda g: g.xid),
        _family("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", gpus,
                labels, lambda g: g.datasheet.memory_mib - g.memory_used_mib),
        _family("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", gpus,
                labels, lambda g: g.memory_used_mib),
        _family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
                "Total number of double-bit volatile ECC errors.", gpus, labels,
                lambda g: g.ecc_double_bit_volatile),
        _family("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
                "Number of remapped rows for uncorrectable errors", gpus, labels,
                lambda g: g.ecc_double_bit_aggregate),
        _family("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge",
                "Whether remapping of rows has failed", gpus, labels, lambda g: 0),
        _family("DCGM_EXP_GPU_HEALTH_STATUS", "gauge", "GPU health status", gpus,
                lambda g: {**labels(g), "health_watch": "ALL",
                           "health_error_code": "DCGM_FR_OK" if g.healthy else _fr(g)},
                health),
    ])


def _fr(gpu: Gpu) -> str:
    """The DCGM failure reason a failing GPU's health carries."""
    if gpu.ecc_double_bit_volatile:
        return "DCGM_FR_VOLATILE_DBE_DETECTED"
    if gpu.xid:
        return "DCGM_FR_XID_ERROR"
    return "DCGM_FR_TEMP_VIOLATION"


# ---- AMD device-metrics-exporter --------------------------------------------------------------

def amd(snapshot: Snapshot) -> str:
    def labels(gpu: Gpu) -> dict[str, str]:
        return {"card_model": snapshot.model, "container": "", "deployment_mode": "baremetal",
                "gpu_compute_partition_type": "spx", "gpu_id": str(gpu.index),
                "gpu_memory_partition_type": "nps1", "gpu_partition_id": "0",
                "hostname": snapshot.host, "job_id": "", "job_partition": "", "job_user": "",
                "namespace": "", "pod": "", "serial_number": gpu.serial}

    def healthy(gpu: Gpu) -> float:  # AMD's health does not look at the temperature
        return 1 if gpu.ecc_double_bit_volatile == 0 and gpu.xid == 0 else 0

    gpus = snapshot.gpus
    return render([
        Family("gpu_nodes_total", "gauge", "Number of GPUs in the node",
               [({"hostname": snapshot.host}, sum(g.on_bus for g in gpus), None)]),
        _family("gpu_health", "gauge", "Health of the GPU (0 = Unhealthy | 1 = Healthy)",
                gpus, labels, healthy),
        _family("gpu_junction_temperature", "gauge", "Current junction/hotspot temperature",
                gpus, labels, lambda g: round(g.temperature_celsius, 1)),
        _family("gpu_package_power", "gauge", "Current socket power in Watts", gpus, labels,
                lambda g: round(g.power_w, 1)),
        _family("gpu_power_usage", "gauge", "GPU Power Usage in Watts", gpus, labels,
                lambda g: round(g.power_w, 1)),
        _family("gpu_gfx_activity", "gauge", "Graphics engine usage percentage (0 - 100)",
                gpus, labels, lambda g: round(g.utilisation * 100)),
        _family("gpu_total_vram", "gauge", "Total VRAM of the GPU (in MB)", gpus, labels,
                lambda g: g.datasheet.memory_mib),
        _family("gpu_used_vram", "gauge", "Used VRAM of the GPU (in MB)", gpus, labels,
                lambda g: g.memory_used_mib),
        _family("gpu_ecc_uncorrect_total", "gauge", "Total uncorrectable error count", gpus,
                labels, lambda g: g.ecc_double_bit_aggregate),
        _family("pcie_replay_count", "gauge", "Total number of PCIe replays", gpus, labels,
                lambda g: 0),
    ])


# ---- Ascend npu-exporter -------------------------------------------------------------------

def ascend(snapshot: Snapshot) -> str:
    model = ASCEND_MODEL_NAMES.get(snapshot.model, f"{snapshot.model}-Ascend-V1")
    stamp = round(snapshot.wall_seconds * 1000)
    links = {index: nic.up for index, nic in enumerate(snapshot.nics)}

    def labels(gpu: Gpu) -> dict[str, str]:
        return {"container_name": "", "id": str(gpu.index), "model_name": model,
                "namespace": "", "pcie_bus_info": gpu.pci_bus_id[4:].lower(),
                "pod_name": "", "vdie_id": _vdie(gpu)}

    gpus = snapshot.gpus
    with_errors = [g for g in gpus if g.xid or g.ecc_double_bit_volatile]
    return render([
        Family("machine_npu_nums", "gauge", "Amount of npu installed on the machine.",
               [({}, len(gpus), None)]),
        _family("npu_chip_info_health_status", "gauge",
                "whether the npu chip is healthy, 1 is healthy, 0 is unhealthy, -1 is unknown",
                gpus, labels, lambda g: 1 if g.healthy else 0, stamp),
        _family("npu_chip_info_error_code", "gauge", "the npu chip error code", with_errors,
                labels, lambda g: g.xid or ASCEND_ERROR_HBM_MULTI_BIT, stamp),
        _family("npu_chip_info_temperature", "gauge",
                "the npu chip temperature, unit is 'centigrade'", gpus, labels,
                lambda g: round(g.temperature_celsius), stamp),
        _family("npu_chip_info_power", "gauge", "the npu chip power, unit is 'W'", gpus,
                labels, lambda g: round(g.power_w, 1), stamp),
        _family("npu_chip_info_utilization", "gauge", "the ai core utilization, unit is '%'",
                gpus, labels, lambda g: round(g.utilisation * 100), stamp),
        _family("npu_chip_info_hbm_total_memory", "gauge",
                "the npu chip hbm total memory, unit is 'MB'", gpus, labels,
                lambda g: g.datasheet.memory_mib, stamp),
        _family("npu_chip_info_hbm_used_memory", "gauge",
                "the npu chip hbm used memory, unit is 'MB'", gpus, labels,
                lambda g: g.memory_used_mib, stamp),
        _family("npu_chip_info_hbm_ecc_double_bit_error_cnt", "gauge",
                "the npu chip hbm ecc double bit error count", gpus, labels,
                lambda g: g.ecc_double_bit_volatile, stamp),
        _family("npu_chip_info_link_status", "gauge",
                "the npu link status, 1 is UP, 0 is DOWN, -1 is unknown",
                [g for g in gpus if g.index in links], labels,
                lambda g: 1 if links[g.index] else 0, stamp),
    ])


def _vdie(gpu: Gpu) -> str:
    digits = gpu.uuid.removeprefix("GPU-").replace("-", "").upper()
    return "-".join(digits[i:i + 8] for i in range(0, 32, 8)) + f"-{gpu.index:08X}"


# ---- node_exporter: the NICs ------------------------------------------------------------------

def node(snapshot: Snapshot) -> str:
    def labels(name: str) -> dict[str, str]:
        return {"device": name, "port": "1"}

    nics = snapshot.nics
    return render([
        Family("node_infiniband_physical_state_id", "gauge",
               "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, "
               "3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)",
               [(labels(n.name), 5 if n.up else 2, None) for n in nics]),
        Family("node_infiniband_rate_bytes_per_second", "gauge",
               "Maximum signal transfer rate", [(labels(n.name), n.rate_bps / 8, None)
                                                for n in nics]),
        Family("node_infiniband_state_id", "gauge",
               "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, "
               "4: active, 5: act defer)", [(labels(n.name), 4 if n.up else 1, None)
                                           for n in nics]),
    ])


RENDERERS: dict[str, Callable[[Snapshot], str]] = {"nvidia": dcgm, "amd": amd,
                                                   "ascend": ascend, "node": node}


def endpoints(vendor: str) -> dict[str, Callable[[Snapshot], str]]:
    """The exporters a server of ``vendor`` serves: its GPUs' and, unless the NPUs publish
    their own ports' state (Ascend), node_exporter's for its NICs."""
    if vendor == "ascend":
        return {"gpu": RENDERERS[vendor]}
    return {"gpu": RENDERERS[vendor], "node": RENDERERS["node"]}
