"""A GPU server as its exporters see it: GPUs (temperature, power, use, memory, ECC, the
last XID) and NICs (link state), with the faults a fleet meets.

Physics, kept small: a GPU's power is its idle draw plus its use times the rest of its
board power (the datasheet table below); its temperature follows the power with a
thermal time constant toward ``ambient + power x thermal resistance``; a GPU past its
slowdown temperature throttles (its clocks, so its use, drop to half). A server's load
(:meth:`GpuServer.set_load`) is each GPU's use, 0..1. Time is the injected clock's.

Faults (:mod:`emulators.faults`; ``target`` names a GPU by index, or a NIC by name):

| kind      | target      | effect                                                        |
|-----------|-------------|---------------------------------------------------------------|
| gpu_xid   | ``I`` or    | the GPU reports XID ``CODE`` (default 79: fallen off the bus); |
|           | ``I:CODE``  | 48 also counts a double-bit ECC error; 79 takes the GPU off    |
|           |             | the bus (its series disappear); cleared: XID 0, back on the bus|
| gpu_ecc   | ``I``       | one uncorrectable (double-bit) ECC error more, each injection; |
|           |             | cleared: the GPU reset, its volatile counts back to 0 (the     |
|           |             | aggregate ones stay)                                           |
| gpu_hot   | ``I``       | its cooling fails: the temperature climbs past slowdown       |
| nic_down  | NIC name    | the NIC's link goes down (cleared: up again)                  |
| nic_degraded | NIC name | its link trains at half its rate (half its lanes lost: a     |
|           |             | downshift), up all the same (cleared: the full rate again)    |

Transport faults (latency, drop, reset, freeze, garbage, truncate) are the exporter
server's (emulators/gpu/server.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
import time
from dataclasses import dataclass, field

from emulators.clock import Clock
from emulators.faults import Fault, FaultError, FaultInjector


@dataclass(frozen=True)
class GpuDatasheet:
    """The figures of one GPU model the model needs (vendor datasheets, rounded)."""

    board_power_w: float
    idle_power_w: float
    memory_mib: int
    slowdown_celsius: float
    shutdown_celsius: float
    thermal_c_per_w: float  # steady rise above ambient per watt
    thermal_seconds: float  # time constant


DATASHEETS: dict[str, GpuDatasheet] = {
    # NVIDIA H100 SXM5: 700 W, 80 GB HBM3
    "H100": GpuDatasheet(700.0, 70.0, 81_559, 87.0, 92.0, 0.055, 30.0),
    # AMD Instinct MI300X OAM: 750 W, 192 GB HBM3
    "MI300X": GpuDatasheet(750.0, 120.0, 196_592, 95.0, 105.0, 0.05, 30.0),
    # Huawei Ascend 910B: about 400 W, 64 GB HBM2e
    "Ascend910B": GpuDatasheet(400.0, 70.0, 65_536, 90.0, 105.0, 0.09, 30.0),
}
GENERIC = GpuDatasheet(600.0, 80.0, 81_920, 88.0, 95.0, 0.06, 30.0)
"""A model the table does not know: figures of its class."""
AMBIENT_CELSIUS = 30.0
HOT_THERMAL_FACTOR = 3.0
"""How much worse a GPU whose cooling failed gets rid of its heat."""
XID_FALLEN_OFF_BUS = 79
XID_DOUBLE_BIT_ECC = 48
GPU_FAULTS = ("gpu_xid", "gpu_ecc", "gpu_hot", "nic_down", "nic_degraded")


@dataclass
class Gpu:
    index: int
    uuid: str
    serial: str
    pci_bus_id: str
    datasheet: GpuDatasheet
    load: float = 0.0
    temperature_celsius: float = AMBIENT_CELSIUS
    ecc_single_bit_volatile: int = 0
    ecc_double_bit_volatile: int = 0
    ecc_single_bit_aggregate: int = 0
    ecc_double_bit_aggregate: int = 0
    xid: int = 0
    on_bus: bool = True
    cooling_failed: bool = False

    @property
    def throttled(self) -> bool:
        return self.temperature_celsius >= self.datasheet.slowdown_celsius

    @property
    def utilisation(self) -> float:
        """0..1: the load, halved while throttled."""
        return self.load / 2 if self.throttled else self.load

    @property
    def power_w(self) -> float:
        sheet = self.datasheet
        return sheet.idle_power_w + (sheet.board_power_w - sheet.idle_power_w) * self.utilisation

    @property
    def memory_used_mib(self) -> int:
        return round(self.datasheet.memory_mib * (0.02 + 0.9 * self.load))

    @property
    def healthy(self) -> bool:
        """What a fleet's health check says: on the bus, no uncorrectable ECC error, no
        XID that needs a reset, under its slowdown temperature."""
        return (self.on_bus and self.ecc_double_bit_volatile == 0 and self.xid == 0
                and not self.throttled)


NIC_LANE_LAUNCH_DBM = 1.0
"""What each lane of a server NIC's optics launches toward its switch port while its
link is up: inside the -2.9..4.0 dBm average launch power per lane that IEEE 802.3bs
gives 400GBASE-DR4."""


@dataclass
class Nic:
    name: str
    guid: str
    speed_bps: float
    up: bool = True
    downshifted: bool = False  # trained at half its rate

    @property
    def rate_bps(self) -> float:
        """The rate its link runs at now."""
        return self.speed_bps / 2 if self.downshifted else self.speed_bps

    @property
    def launch_dbm(self) -> float:
        """Per lane, toward the switch: nothing (-inf) while the link is down."""
        return NIC_LANE_LAUNCH_DBM if self.up else -math.inf


@dataclass
class Snapshot:
    """One reading of the whole server, taken under its lock."""

    host: str
    vendor: str
    model: str
    gpus: list[Gpu]
    nics: list[Nic]
    at_seconds: float
    wall_seconds: float  # the same moment as seconds since the Unix epoch (timestamps)
    energy_mj: dict[int, float] = field(default_factory=dict)


class GpuServer:
    """``count`` GPUs of ``model`` and the NICs named, on ``clock``; stable identities
    (UUIDs, serials, PCI addresses) derived from ``name``."""

    def __init__(self, name: str, vendor: str, model: str, count: int,
                 nics: list[tuple[str, str, float]], clock: Clock):
        self.name, self.vendor, self.model = name, vendor, model
        self.clock = clock
        sheet = DATASHEETS.get(model, GENERIC)
        self.gpus = [Gpu(i, _uuid(name, i), _serial(name, i), _pci(i), sheet)
                     for i in range(count)]
        self.nics = [Nic(nic_name, guid, speed) for nic_name, guid, speed in nics]
        self._energy_mj = [0.0] * count
        self._lock = threading.Lock()
        self._last = clock.now()
        self._epoch = time.time() - self._last  # wall time at device time 0
        self.faults = FaultInjector(name)
        for kind in GPU_FAULTS:
            self.faults.handle(kind, self._inject, self._clear)

    def factory_reset(self) -> None:
        """As the server was built: idle, at ambient, no error counted, every NIC up, no
        fault active."""
        self.faults.clear()
        with self._lock:
            sheet = self.gpus[0].datasheet if self.gpus else GENERIC
            self.gpus = [Gpu(g.index, g.uuid, g.serial, g.pci_bus_id, sheet) for g in self.gpus]
            for nic in self.nics:
                nic.up, nic.downshifted = True, False
            self._energy_mj = [0.0] * len(self.gpus)
            self._last = self.clock.now()

    def is_factory(self) -> bool:
        """Whether nothing is changed from :meth:`factory_reset`'s state but the time."""
        return (not self.faults.active() and all(n.up and not n.downshifted
                                                   for n in self.nics)
                and all(g.load == 0 and g.on_bus and g.xid == 0 and not g.cooling_failed
                        and g.ecc_double_bit_aggregate == 0 for g in self.gpus))

    # ---- load and time ----------------------------------------------------------------

    def set_load(self, load: float, gpus: list[int] | None = None) -> None:
        """Each named GPU's (every GPU's) use, 0..1."""
        if not 0 <= load <= 1:
            raise ValueError("a GPU's load is 0..1")
        with self._lock:
            self._advance()
            for gpu in self.gpus:
                if gpus is None or gpu.index in gpus:
                    gpu.load = load

    def _advance(self) -> None:
        now = self.clock.now()
        elapsed, self._last = max(0.0, now - self._last), now
        if elapsed == 0:
            return
        for gpu in self.gpus:
            sheet = gpu.datasheet
            power = gpu.power_w if gpu.on_bus else 0.0
            self._energy_mj[gpu.index] += power * elapsed * 1000
            factor = HOT_THERMAL_FACTOR if gpu.cooling_failed else 1.0
            target = AMBIENT_CELSIUS + power * sheet.thermal_c_per_w * factor
            keep = math.exp(-elapsed / sheet.thermal_seconds)
            gpu.temperature_celsius = target + (gpu.temperature_celsius - target) * keep

    def snapshot(self) -> Snapshot:
        with self._lock:
            self._advance()
            return Snapshot(self.name, self.vendor, self.model,
                            [_copy(gpu) for gpu in self.gpus],
                            [dataclasses.replace(n) for n in self.nics],
                            self._last, self._epoch + self._last,
                            dict(enumerate(self._energy_mj)))

    # ---- faults -------------------------------------------------------------------------

    def _gpu(self, fault: Fault) -> tuple[Gpu, int | None]:
        text = fault.target or ""
        index_text, _, code_text = text.partition(":")
        if not index_text.isdigit() or int(index_text) >= len(self.gpus):
            raise FaultError(f"{fault.kind} on {self.name} needs a GPU index 0.."
                             f"{len(self.gpus) - 1} as its target, not {text!r}")
        code = None
        if code_text:
            if fault.kind != "gpu_xid" or not code_text.isdigit() or not 1 <= int(code_text) <= 999:
                raise FaultError(f"{fault.kind}: a code ({text!r}) is an XID, 1..999, of "
                                 "gpu_xid only")
            code = int(code_text)
        return self.gpus[int(index_text)], code

    def nic_launch_dbm(self, name: str, lane: int = 1, lanes: int = 1) -> float:
        """What NIC ``name`` launches into lane ``lane`` (from 1, of ``lanes``) toward its
        switch port now: a downshifted link lights the first half of its lanes only."""
        with self._lock:
            nic = next(nic for nic in self.nics if nic.name == name)
            if nic.downshifted and lane > lanes // 2:
                return -math.inf
            return nic.launch_dbm

    def _nic(self, fault: Fault) -> Nic:
        nic = next((n for n in self.nics if n.name == fault.target), None)
        if nic is None:
            raise FaultError(f"{fault.kind} on {self.name} needs one of its NICs as the target: "
                             f"{', '.join(n.name for n in self.nics)}")
        return nic

    def _inject(self, fault: Fault) -> None:
        with self._lock:
            self._advance()
            if fault.kind == "nic_down":
                self._nic(fault).up = False
                return
            if fault.kind == "nic_degraded":
                self._nic(fault).downshifted = True
                return
            gpu, code = self._gpu(fault)
            if fault.kind == "gpu_xid":
                gpu.xid = code or XID_FALLEN_OFF_BUS
                if gpu.xid == XID_DOUBLE_BIT_ECC:
                    gpu.ecc_double_bit_volatile += 1
                    gpu.ecc_double_bit_aggregate += 1
                if gpu.xid == XID_FALLEN_OFF_BUS:
                    gpu.on_bus = False
            elif fault.kind == "gpu_ecc":
                gpu.ecc_double_bit_volatile += 1
                gpu.ecc_double_bit_aggregate += 1
            else:
                gpu.cooling_failed = True

    def _clear(self, fault: Fault) -> None:
        """A cleared fault is a repaired device: the GPU back on the bus with no XID (and
        reset: its volatile ECC counts at 0), its cooling fixed, the NIC up."""
        with self._lock:
            self._advance()
            if fault.kind == "nic_down":
                self._nic(fault).up = True
                return
            if fault.kind == "nic_degraded":
                self._nic(fault).downshifted = False
                return
            gpu, _ = self._gpu(fault)
            if fault.kind == "gpu_xid":
                gpu.xid, gpu.on_bus = 0, True
            elif fault.kind == "gpu_ecc":
                gpu.ecc_single_bit_volatile = gpu.ecc_double_bit_volatile = 0
            else:
                gpu.cooling_failed = False


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _uuid(host: str, index: int) -> str:
    d = _digest(f"{host}/gpu/{index}")
    return f"GPU-{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


def _serial(host: str, index: int) -> str:
    return str(int(_digest(f"{host}/serial/{index}")[:12], 16) % 10**13).zfill(13)


def _pci(index: int) -> str:
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


def _copy(gpu: Gpu) -> Gpu:
    return dataclasses.replace(gpu)
