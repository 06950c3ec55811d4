"""Run a whole emulated fabric: the optical model, every device, and their servers.

The servers live on one asyncio event loop in a background thread, bound to
loopback on ephemeral ports. Once all of them listen, the lab writes an
inventory (atomically: write, then rename) that msoctl reads.

Amplifier modules are reached through their USB-serial I2C bridge (TCP and a
pty). A tick on the lab's loop brings every amplifier up to date every 50 ms
of real time, so ALS shuts an output when its input goes dark even when
nobody polls the module.

Switches (emulators/switch/device.py) serve NETCONF over SSH. Each start
generates a new random password per switch, written to
``secrets/<name>.password`` (mode 0600, the directory 0700) and referred to
from the inventory as ``file:secrets/<name>.password`` (user ``msoctl``), and
new host keys, whose lines go to ``known_hosts`` beside the inventory, which
the inventory names: host keys are verified, never accepted blindly.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import yaml

from emulators.amp.bridge import I2cBridge
from emulators.amp.i2c import I2cSlave
from emulators.amp.model import AmplifierModule
from emulators.clock import Clock, RealClock
from emulators.faults import Fault, FaultError, FaultInjector
from emulators.lab.topology import Topology, load_topology
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import Fiber, OpticalModel, Transceivers
from emulators.scpi.server import ScpiPtyServer, ScpiTcpServer
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort

T = TypeVar("T")
log = logging.getLogger(__name__)

AMP_TICK_SECONDS = 0.05
SWITCH_USERNAME = "msoctl"
SWITCH_TIMEOUT_SECONDS = 10.0
KNOWN_HOSTS = "known_hosts"
SECRETS_DIR = "secrets"


class Lab:
    """An emulated fabric. ``start()`` serves it; ``stop()`` ends every server."""

    def __init__(
        self,
        state_dir: Path,
        topology: Topology | None = None,
        *,
        clock: Clock | None = None,
        serial_consoles: bool = True,
    ):
        self.state_dir = Path(state_dir)
        self.topology = topology or load_topology()
        self.clock = clock or RealClock()
        self.serial_consoles = serial_consoles
        self.optics = OpticalModel(self.clock)
        self.ocs: dict[str, OcsDevice] = {}
        self.fibers: dict[str, Fiber] = {}
        self.tcp: dict[str, ScpiTcpServer] = {}
        self.consoles: dict[str, ScpiPtyServer] = {}
        self.amps: dict[str, AmplifierModule] = {}
        self.i2c: dict[str, I2cSlave] = {}
        self.bridges: dict[str, I2cBridge] = {}
        self.switches: dict[str, SwitchDevice] = {}
        self._tick: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._build()

    # ---- construction -----------------------------------------------------------

    def _build(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        for spec in self.topology.ocs:
            self.ocs[spec.name] = OcsDevice(
                spec.name,
                self.optics,
                size=spec.size,
                serial=spec.serial,
                boot_seconds=spec.boot_seconds,
                nvram_path=self.state_dir / f"{spec.name}.nvram.json",
            )
        for amp in self.topology.amplifiers:
            module = AmplifierModule(
                amp.name, self.optics, serial=amp.serial, gain_min_db=amp.gain_min_db,
                gain_max_db=amp.gain_max_db, output_power_max_dbm=amp.output_power_max_dbm,
            )
            self.amps[amp.name] = module
            self.i2c[amp.name] = I2cSlave(module)
        for switch in self.topology.switches:
            ports = {name: PhysicalPort(switch.speed, switch.cable_length_km * 1000)
                     for name in switch.port_names}
            self.switches[switch.name] = SwitchDevice(
                switch.name, ports, clock=self.clock, total_bytes=switch.buffer_bytes,
                lossless_pool_bytes=switch.lossless_pool_bytes)
        for bank in self.topology.transceivers:  # a switch's optics among them
            self.optics.add(Transceivers(bank.name, bank.count, power_dbm=bank.power_dbm))
        for link in self.topology.fibers():
            fiber = Fiber(link.name, link.length_km, loss_db_per_km=link.loss_db_per_km,
                          connector_loss_db=link.connector_loss_db)
            self.optics.add(fiber)
            self.optics.patch(link.from_port, f"{link.name}:in")
            if link.amplifier is None:
                self.optics.patch(f"{link.name}:out", link.to_port)
            else:
                self.optics.patch(f"{link.name}:out", f"{link.amplifier}:in")
                self.optics.patch(f"{link.amplifier}:out", link.to_port)
            self.fibers[link.name] = fiber

    # ---- running ----------------------------------------------------------------

    def start(self) -> Path:
        """Serve every device; return the path of the inventory written for them."""
        if self._loop is not None:
            raise RuntimeError("lab already started")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lab", daemon=True)
        self._thread.start()
        try:
            self.call(self._start_servers())
        except BaseException:
            self.stop()
            raise
        return self.write_inventory()

    async def _start_servers(self) -> None:
        for name, device in self.ocs.items():
            interpreter = make_interpreter(device)
            server = ScpiTcpServer(device, interpreter)
            await server.start()
            self.tcp[name] = server
            if self.serial_consoles:
                console = ScpiPtyServer(device, interpreter)
                await console.start()
                self.consoles[name] = console
        for name, module in self.amps.items():
            bridge = I2cBridge(name, [self.i2c[name]], clock=self.clock, faults=module.faults,
                               serial_console=self.serial_consoles)
            await bridge.start()
            self.bridges[name] = bridge
        if self.amps:
            self._tick = asyncio.ensure_future(self._tick_amplifiers())
        for name, switch in self.switches.items():
            switch.users = {SWITCH_USERNAME: self._new_password(name)}
            await switch.start()
        if self.switches:
            self._write_atomically(self.state_dir / KNOWN_HOSTS, "".join(
                f"{switch.known_hosts_line()}\n" for switch in self.switches.values()), 0o644)

    def _new_password(self, name: str) -> str:
        """A random password for switch ``name``, written to secrets/<name>.password."""
        directory = self.state_dir / SECRETS_DIR
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
        password = secrets.token_urlsafe(24)
        self._write_atomically(directory / f"{name}.password", password + "\n", 0o600)
        return password

    @staticmethod
    def _write_atomically(path: Path, text: str, mode: int) -> None:
        """Write ``text`` to ``path`` atomically (write, then rename), never readable beyond
        ``mode`` while it is written."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        try:
            os.fchmod(fd, mode)
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, path)

    async def _tick_amplifiers(self) -> None:
        # Real time, not the device clock: a stepped clock must not be pushed by the tick.
        while True:
            for module in self.amps.values():
                try:
                    module.update()
                except Exception:  # one broken model must not stop ALS on the others
                    log.exception("%s: update failed", module.name)
            await asyncio.sleep(AMP_TICK_SECONDS)

    async def _stop_servers(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
        for server in self.tcp.values():
            await server.stop()
        for console in self.consoles.values():
            await console.stop()
        for bridge in self.bridges.values():
            await bridge.stop()
        for switch in self.switches.values():
            await switch.stop()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coroutine`` on the lab's loop and wait for its result."""
        if self._loop is None:
            raise RuntimeError("lab not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def stop(self) -> None:
        if self._loop is None:
            return
        if self._loop.is_running():
            try:
                self.call(self._stop_servers(), timeout=10)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                if self._thread is not None:
                    self._thread.join(timeout=10)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> Lab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- faults -------------------------------------------------------------------

    def inject(self, target: str, fault: Fault) -> None:
        """Inject ``fault`` on a device, or cut a fiber or a whole cable."""
        if fault.kind == "fiber_cut":
            for fiber in self._fibers_named(target):
                fiber.cut = True
            return
        self._device(target).faults.inject(fault)

    def clear(self, target: str, kind: str | None = None) -> None:
        if kind in (None, "fiber_cut") and (target in self.fibers or self._is_cable(target)):
            for fiber in self._fibers_named(target):
                fiber.cut = False
            return
        self._device(target).faults.clear(kind)

    def _is_cable(self, name: str) -> bool:
        return any(cable.name == name for cable in self.topology.cables)

    def _fibers_named(self, name: str) -> list[Fiber]:
        if name in self.fibers:
            return [self.fibers[name]]
        found = [self.fibers[f.name] for c in self.topology.cables if c.name == name
                 for f in c.fibers]
        if not found:
            raise FaultError(f"no fiber or cable named {name!r}")
        return found

    def _device(self, name: str) -> OcsDevice | AmplifierModule | SwitchDevice:
        device: OcsDevice | AmplifierModule | SwitchDevice | None = (
            self.ocs.get(name) or self.amps.get(name) or self.switches.get(name))
        if device is None:
            raise FaultError(f"no device named {name!r}")
        return device

    def faults(self, name: str) -> FaultInjector:
        """The fault injector of device ``name``."""
        return self._device(name).faults

    # ---- inventory -------------------------------------------------------------------

    def inventory(self) -> dict[str, Any]:
        devices: list[dict[str, Any]] = []
        for spec in self.topology.ocs:
            entry: dict[str, Any] = {
                "name": spec.name,
                "kind": "ocs",
                "transport": "visa",
                "address": f"TCPIP::127.0.0.1::{self.tcp[spec.name].port}::SOCKET",
                "timeout_seconds": 5.0,
                "labels": {"campus": spec.campus, "lab": self.topology.name},
            }
            if spec.name in self.consoles:
                entry["console"] = {"transport": "serial",
                                    "address": self.consoles[spec.name].path}
            devices.append(entry)
        spans = {f.amplifier: f.cable for f in self.topology.fibers() if f.amplifier}
        for amp in self.topology.amplifiers:
            labels = {"campus": amp.campus, "lab": self.topology.name}
            if spans.get(amp.name):
                labels["span"] = str(spans[amp.name])
            devices.append({
                "name": amp.name,
                "kind": "amp",
                "transport": "i2c-bridge",
                "address": f"socket://127.0.0.1:{self.bridges[amp.name].port}",
                "i2c_address": self.i2c[amp.name].address,
                "timeout_seconds": 2.0,
                "labels": labels,
            })
        for switch in self.topology.switches:
            devices.append({
                "name": switch.name,
                "kind": "switch",
                "transport": "netconf",
                "address": f"127.0.0.1:{self.switches[switch.name].port}",
                "username": SWITCH_USERNAME,
                "password": f"file:{SECRETS_DIR}/{switch.name}.password",
                "known_hosts": KNOWN_HOSTS,
                "timeout_seconds": SWITCH_TIMEOUT_SECONDS,
                "labels": {"campus": switch.campus, "lab": self.topology.name, "role": "switch"},
            })
        return {"journal": "journal.jsonl", "devices": devices}

    def write_inventory(self) -> Path:
        path = self.state_dir / "inventory.yaml"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        header = (f"# Written by the msoctl lab for topology {self.topology.name!r}.\n"
                  "# It is rewritten every time the lab starts.\n")
        tmp.write_text(header + yaml.safe_dump(self.inventory(), sort_keys=False))
        os.replace(tmp, path)
        return path
