"""Run a whole emulated fabric: the optical model, every device, and their servers.

The servers live on one asyncio event loop in a background thread, bound to
loopback on ephemeral ports. Once all of them listen, the lab writes an
inventory (atomically: write, then rename) that msoctl reads.

One loop serves every OCS, amplifier bridge, SNMP agent and switch. Their
requests cost at most a fraction of a second of CPU, except a switch's big
NETCONF request, whose parsing, editing, validation and reply take CPU time in
proportion to its size (about 3 s for an edit of 40,000 list entries). That work
does not run on the loop: each switch's NETCONF server gives it to a worker
thread of its own (emulators/netconf/worker.py), which also keeps that switch's
datastore operations in order, one at a time, as a device does. The loop goes
on moving every device's bytes meanwhile; what the other devices still feel is
the interpreter's lock (the worker is made to let the loop run at least every
switch interval, 5 ms, and a few C calls hold it longer), so their answers take
milliseconds instead of a fraction of one, where before they waited for the
whole request (bench/netconf_edit.py has the figures). A thread was chosen over
a process per switch because everything that drives a switch in the lab (its
faults, its congestion model, the tests that read it) stays in this process;
the worker, which receives a request's bytes and returns the reply's, is where
the switches can move out to a process of their own when the lab is spread over
several for a large fabric.

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

Each switch also serves its CPO/CPC telemetry over SNMPv3 (emulators/cpo: a
:class:`~emulators.cpo.model.SwitchTelemetry` on the lab's clock, receive power
from the optical model's ``<switch>:rxN``, served by a
:class:`~emulators.cpo.agent.CpoAgent` on the lab's loop, a loopback UDP port).
Each start generates a new USM user's passphrases (user ``msoctl``, SHA-256 and
AES-128), written to ``secrets/<name>.snmp-auth`` and ``secrets/<name>.snmp-priv``
(0600) and referred to from the switch's ``snmp:`` section in the inventory.
Telemetry shape per switch: the topology's ports (ifIndex N is EthernetN, its
optics ``txN``/``rxN``), 8 optical and 8 electrical lanes each, 16 optical lanes
per engine, one laser per port, 4 lasers per ELS module.

A switch managed over gNMI (``management: gnmi``) has the same telemetry model
(:attr:`Lab.gnmi_telemetry`), seeded by its name, its receivers reading the optical
model where patches reach them (else the model's own receive power), and serves it
through its gNMI face (OpenConfig platform and interface paths, or SONiC's STATE_DB
and COUNTERS_DB: emulators/switch/faces/optics.py) instead of an SNMP agent. Nothing
ticks it: the face brings it up to date when a request reads the optics, so an idle
lab spends nothing on it; nor does it drive the switch's transmitters in the optical
model (the lab's tick does that for the SNMP switches only). Its hardware fault kinds
are named on the switch, as an SNMP switch's are, and the gNMI server takes the stream
faults ``malformed`` and ``stream_stop`` (emulators/gnmi/streamfaults.py).

Faults on a switch (``lab.inject("sw-a", fault)``), routed by kind:

| target      | kinds                                  | goes to                          |
|-------------|----------------------------------------|----------------------------------|
| ``sw-a``    | latency, drop, reset, garbage,         | the NETCONF server               |
|             | truncate, freeze                       |                                  |
| ``sw-a``    | congestion, pfc_storm                  | the congestion model             |
| ``sw-a``    | els, rising_ber, engine, overheat,     | the CPO/CPC telemetry model      |
|             | lane_reset, clear_counters             | (emulators/cpo/model.py)         |
| ``sw-a/snmp`` | latency, drop, reset, garbage,       | the SNMP agent: its transport,   |
|             | truncate, freeze, reboot,              | and ``reboot`` restarts it       |
|             | malformed_sensors (with entity         | (counters and sysUpTime from 0)  |
|             | tables), and the telemetry kinds above |                                  |

So a fault of the switch's hardware (a laser, an engine, a lane's BER) is named on
the switch, as an operator would; a fault of how the switch is managed is named on
the management face it hits: ``sw-a`` for NETCONF (the default face, as before
SNMP existed), ``sw-a/snmp`` for the SNMP agent. Clearing works the same way.

The lab also serves its control endpoint (emulators/lab/control.py: status and
faults over HTTP on loopback, a token in ``secrets/lab-control.token``), and
says where in ``lab.json`` once the inventory is written; ``msoctl lab status``
and ``msoctl lab fault`` use it.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import logging
import math
import zlib
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from drivers.switch.link import PORT_SPEEDS_BPS
from emulators.amp.bridge import I2cBridge
from emulators.amp.i2c import I2cSlave
from emulators.amp.model import AmplifierModule
from emulators.clock import Clock, RealClock
from emulators.cpo.agent import CpoAgent, UsmCredentials
from emulators.cpo.interfaces import Interface
from emulators.cpo.model import SwitchTelemetry, TelemetrySpec, receiver_source
from emulators.cpo.optical import RxPowerSource
from emulators.faults import Fault, FaultError, FaultInjector
from emulators.gnmi.server import GnmiTls
from emulators.gpu.exposition import endpoints as exporter_endpoints
from emulators.gpu.model import NIC_LANE_LAUNCH_DBM, GpuServer
from emulators.gpu.server import ExporterServer
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import PowerMeter
from emulators.instruments.testset import AcceptanceTestSet, InstrumentKinds
from emulators.lab.backend import LocalBackend
from emulators.lab.constants import (
    ENDPOINT_FILE,
    INVENTORY_FILE,
    JOURNAL_FILE,
    SECRETS_DIR,
    SNMP_FACE,
    TOKEN_FILE,
)
from emulators.lab.control import (
    ControlServer,
    endpoint_document,
    remove_endpoint_file,
)
from emulators.lab.files import new_secret, write_atomically, write_inventory
from emulators.lab.hostspec import HostSpec
from emulators.lab.pki import Authority
from emulators.lab.statelock import StateDirLock
from emulators.lab.status import CABLE_CUT, CUT_KINDS, FIBER_CUT, fibers_of
from emulators.lab.topology import SWITCH_PORT_PREFIX, AcceptanceSpec, Topology, load_topology
from emulators.loopthread import LoopThread
from emulators.ocs import nvram
from emulators.ocs.alarm_server import AlarmServer
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import NO_LIGHT_DBM, Fiber, OpticalModel, Transceivers
from emulators.scpi.server import ScpiPtyServer, ScpiTcpServer
from emulators.switch.device import SwitchDevice
from emulators.switch.model import PhysicalPort

T = TypeVar("T")

"""The journal the lab's inventory names (an SQLite file in the state directory)."""
log = logging.getLogger(__name__)

AMP_TICK_SECONDS = 0.05
SWITCH_USERNAME = "msoctl"
SWITCH_TIMEOUT_SECONDS = 10.0
KNOWN_HOSTS = "known_hosts"
PKI_DIR = "pki"
CA_SUFFIX = "-ca.pem"
SNMP_USERNAME = "msoctl"
SNMP_TIMEOUT_SECONDS = 2.0
SNMP_RETRIES = 1
HOST_CABLE_METERS = 3.0
"""A server's NIC to its switch port: a few metres in the same row."""
HOST_CABLE_LOSS_DB = 0.5
"""That cable's two connectors."""
TELEMETRY_FAULTS = ("els", "rising_ber", "engine", "overheat", "lane_reset",
                    "clear_counters")
"""Fault kinds of a switch's CPO/CPC hardware, routed from the switch to its telemetry."""
SWITCH_LANES_PER_PORT = 8
SWITCH_OPTICAL_LANES_PER_ENGINE = 16
SWITCH_LASERS_PER_ELS_MODULE = 4


def freeze_heap() -> None:
    """For a process that serves a lab until it ends (``msoctl lab up``, a lab worker):
    what the lab built at its start lives as long as the process, so it is kept out of
    the collector's full passes, which would otherwise scan it all each time (20-30 ms
    with every device of the process stopped, measured with eight OCSes per process: on
    a protection's recovery path whenever one fell in a cut)."""
    gc.collect()
    gc.freeze()


class Lab:
    """An emulated fabric. ``start()`` serves it; ``stop()`` ends every server."""

    def __init__(
        self,
        state_dir: Path,
        topology: Topology | None = None,
        *,
        clock: Clock | None = None,
        serial_consoles: bool = True,
        worker: bool = False,
    ):
        self.state_dir = Path(state_dir)
        self.topology = topology or load_topology()
        self.clock = clock or RealClock()
        self.serial_consoles = serial_consoles
        self.worker = worker
        """Part of a lab spread over processes (emulators/lab/spread.py): the process that
        started it holds the state directory's lock, writes the inventory, known_hosts and
        ``lab.json`` and serves the control endpoint; this one serves its devices."""
        self.optics = OpticalModel(self.clock)
        self.ocs: dict[str, OcsDevice] = {}
        self.fibers: dict[str, Fiber] = {}
        self.tcp: dict[str, ScpiTcpServer] = {}
        self.consoles: dict[str, ScpiPtyServer] = {}
        self.alarm_servers: dict[str, AlarmServer] = {}
        self.amps: dict[str, AmplifierModule] = {}
        self.i2c: dict[str, I2cSlave] = {}
        self.bridges: dict[str, I2cBridge] = {}
        self.switches: dict[str, SwitchDevice] = {}
        self.telemetry: dict[str, SwitchTelemetry] = {}
        self.gnmi_telemetry: dict[str, SwitchTelemetry] = {}
        self.snmp: dict[str, CpoAgent] = {}
        self.test_sets: dict[str, AcceptanceTestSet] = {}  # by the OCS they test
        self.hosts: dict[str, GpuServer] = {}
        self.host_exporters: dict[str, ExporterServer] = {}
        self.transceivers: dict[str, Transceivers] = {}
        self._launch_overrides: dict[tuple[str, int], float] = {}
        self.instruments: dict[str, TunableLaser | PowerMeter] = {}
        self.control: ControlServer | None = None
        self._tick: asyncio.Task[None] | None = None
        self._amp_outputs: dict[str, tuple[int, float]] = {}
        self._runner = LoopThread("lab")
        self._state_lock = StateDirLock(self.state_dir)
        if not worker:
            self._state_lock.acquire()  # before anything in the directory is read or written
        try:
            self._build()
        except BaseException:
            self._state_lock.release()
            raise

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
                reply_form=spec.reply_form,
                power_monitors=spec.power_monitors,
                shared_status=spec.error_queue == "shared",
                alarms=spec.alarms,
                extensions=spec.extensions,
                identity_form=spec.identity,
                error_extras=spec.error_queries == "all",
            )
        for amp in self.topology.amplifiers:
            module = AmplifierModule(
                amp.name, self.optics, serial=amp.serial, gain_min_db=amp.gain_min_db,
                gain_max_db=amp.gain_max_db, output_power_max_dbm=amp.output_power_max_dbm,
                vendor_page=amp.vendor_page, monitors=amp.monitors,
            )
            self.amps[amp.name] = module
            self.i2c[amp.name] = I2cSlave(module)
        for switch in self.topology.switches:
            if switch.management == "none":
                continue  # its optics only: the transceiver bank below
            ports = {name: PhysicalPort(switch.speed, switch.cable_length_km * 1000)
                     for name in switch.port_names}
            ports.update({name: PhysicalPort(switch.speed, HOST_CABLE_METERS)
                          for name in switch.host_port_names})
            shape = TelemetrySpec(
                ports=tuple(range(1, switch.ports + switch.host_ports + 1)),
                optical_lanes_per_port=SWITCH_LANES_PER_PORT,
                electrical_lanes_per_port=SWITCH_LANES_PER_PORT,
                lanes_per_engine=SWITCH_OPTICAL_LANES_PER_ENGINE,
                lanes_per_laser=SWITCH_LANES_PER_PORT,
                lasers_per_els_module=SWITCH_LASERS_PER_ELS_MODULE)
            gnmi = switch.management == "gnmi"
            patched = any(f.to_port.startswith(f"{switch.name}:rx")
                          for f in self.topology.fibers())
            telemetry = SwitchTelemetry(
                switch.name, self.clock, shape, seed=zlib.crc32(switch.name.encode()),
                # a gNMI switch's receivers read the optical model where they are patched
                rx_power_dbm=self._host_port_receivers(
                    switch.name, switch.ports, receiver_source(self.optics, switch.name))
                if patched or not gnmi else None)
            device = SwitchDevice(
                switch.name, ports, clock=self.clock, total_bytes=switch.buffer_bytes,
                lossless_pool_bytes=switch.lossless_pool_bytes, face=switch.model,
                augments=switch.augments,
                # sonic-gnmi applies a Set at once: it has no Commit extension
                commit_confirmed=switch.model != "sonic",
                telemetry=telemetry if gnmi else None)
            self.switches[switch.name] = device
            self._route_telemetry_faults(device.faults, telemetry.faults)
            if gnmi:  # its telemetry over its gNMI face, read on demand: no SNMP agent
                self.gnmi_telemetry[switch.name] = telemetry
                continue
            self.telemetry[switch.name] = telemetry
        for bank in self.topology.transceivers:  # a switch's optics among them
            self.transceivers[bank.name] = Transceivers(bank.name, bank.count,
                                                        power_dbm=bank.power_dbm)
            self.optics.add(self.transceivers[bank.name])
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
        for test_set in self.topology.test_sets:
            self._build_test_set(test_set)
        for host in self.topology.hosts:
            self.hosts[host.name] = GpuServer(
                host.name, host.vendor, host.model, host.gpus,
                [(nic.name, nic.guid, PORT_SPEEDS_BPS[nic.speed]) for nic in host.nics],
                self.clock)

    def _host_port_receivers(self, switch: str, fabric_ports: int,
                             fabric: RxPowerSource) -> RxPowerSource:
        """A switch's receive power: its fabric ports' from the optical model, its host
        ports' from the NIC cabled to each (what it launches: nothing while its link is
        down, less the short cable's loss). A host port whose server this process does not
        serve (a lab spread over workers serves a server beside its first NIC's switch)
        reads as a NIC whose link is up."""
        cabled = {int(nic.port.removeprefix(SWITCH_PORT_PREFIX)): (host.name, nic.name)
                  for host in self.topology.hosts for nic in host.nics
                  if nic.switch == switch}

        def source(port: int, lane: int) -> float:
            if port <= fabric_ports:
                return fabric(port, lane)
            host_nic = cabled.get(port)
            launch = NIC_LANE_LAUNCH_DBM if host_nic is None or host_nic[0] not in \
                self.hosts else self.hosts[host_nic[0]].nic_launch_dbm(
                    host_nic[1], lane, SWITCH_LANES_PER_PORT)
            return launch - HOST_CABLE_LOSS_DB

        return source

    def _build_test_set(self, spec: AcceptanceSpec) -> None:
        """The acceptance test set on the OCS's ports that no patch or cable uses."""
        ocs = self.ocs[spec.ocs]
        used = {int(port.split(":")[1]) for f in self.topology.fibers()
                for port in (f.from_port, f.to_port) if port.startswith(f"{ocs.name}:")}
        ingress = [p for p in range(1, ocs.size + 1) if p not in used]
        egress = [p for p in range(ocs.size + 1, 2 * ocs.size + 1) if p not in used]
        test_set = AcceptanceTestSet(
            self.optics, ocs, laser_name=spec.laser, meter_name=spec.meter,
            ingress_ports=ingress, egress_ports=egress,
            laser_serial=f"LS{zlib.crc32(spec.laser.encode()) % 10**6:06d}",
            meter_serial=f"PM{zlib.crc32(spec.meter.encode()) % 10**6:06d}",
            kinds=InstrumentKinds(laser_range=spec.laser_range,
                                  meter_all_ports=spec.meter_all_ports,
                                  meter_logging=spec.meter_logging,
                                  error_queries=spec.error_queries))
        self.test_sets[spec.ocs] = test_set
        self.instruments[spec.laser] = test_set.laser
        self.instruments[spec.meter] = test_set.meter

    @staticmethod
    def _route_telemetry_faults(switch: FaultInjector, telemetry: FaultInjector) -> None:
        """Hand the CPO/CPC hardware kinds injected on the switch to its telemetry."""

        def clear(fault: Fault) -> None:
            telemetry.clear(fault.kind, fault.target)

        for kind in TELEMETRY_FAULTS:
            if kind in switch.kinds():
                raise RuntimeError(f"{switch.owner} already handles fault {kind!r}")
            switch.handle(kind, telemetry.inject, clear)

    # ---- running ----------------------------------------------------------------

    def start(self) -> Path:
        """Serve every device; return the path of the inventory written for them."""
        if self._runner.started:
            raise RuntimeError("lab already started")
        self._runner.start()
        try:
            self.call(self._start_servers())
            self.call(self._start_test_sets())
        except BaseException:
            self.stop()
            raise
        for test_set in self.test_sets.values():
            test_set.write_reference(self.state_dir / _reference_file(test_set))
        if self.worker:
            return self.state_dir / INVENTORY_FILE  # the starting process writes it
        inventory = self.write_inventory()
        if self.control is not None:  # last: a client finding it finds the lab whole
            write_atomically(self.state_dir / ENDPOINT_FILE, json.dumps(
                endpoint_document(self.control, self.control.lab), indent=2) + "\n", 0o644)
        return inventory

    async def _start_servers(self) -> None:
        for name, device in self.ocs.items():
            # one interpreter per client: each has its own error queue and registers
            server = ScpiTcpServer(device, functools.partial(make_interpreter, device))
            await server.start()
            self.tcp[name] = server
            if self.serial_consoles:
                console = ScpiPtyServer(device, functools.partial(make_interpreter, device))
                await console.start()
                self.consoles[name] = console
            if device.alarms_supported:
                alarms = AlarmServer(device)
                await alarms.start()
                self.alarm_servers[name] = alarms
        for name, module in self.amps.items():
            bridge = I2cBridge(name, [self.i2c[name]], clock=self.clock, faults=module.faults,
                               serial_console=self.serial_consoles)
            await bridge.start()
            self.bridges[name] = bridge
        self._sync_switch_optics()
        if self.amps or self.telemetry:
            self._tick = asyncio.ensure_future(self._tick_amplifiers())
        for name, switch in self.switches.items():
            switch.users = {SWITCH_USERNAME: self._new_password(name)}
            if switch.transport == "gnmi":
                switch.gnmi_tls = self._new_pki(name)
            await switch.start()
        for spec in self.topology.switches:
            if spec.name not in self.telemetry:
                continue
            speed = PORT_SPEEDS_BPS[spec.speed]
            agent = CpoAgent(self.telemetry[spec.name], self._new_snmp_credentials(spec.name),
                             interfaces=[Interface(number, name, speed) for number, name
                                         in enumerate(spec.port_names + spec.host_port_names,
                                                      start=1)],
                             nvram_path=self.state_dir / f"{spec.name}.snmp-engine.json",
                             entity_layout=spec.entity_sensors, dom_mib=spec.dom_mib,
                             seed=zlib.crc32(spec.name.encode()))
            await agent.start()
            self.snmp[spec.name] = agent
        for name, host in self.hosts.items():
            exporters = ExporterServer(host, exporter_endpoints(host.vendor))
            await exporters.start()
            self.host_exporters[name] = exporters
        if self.switches and not self.worker:
            write_atomically(self.state_dir / KNOWN_HOSTS, "".join(
                f"{line}\n" for line in self.known_hosts_lines()), 0o644)
        if not self.worker:
            self.control = ControlServer(LocalBackend(self), self._new_secret(TOKEN_FILE))
            await self.control.start()

    def known_hosts_lines(self) -> list[str]:
        """The known_hosts line of every switch served (their host keys are new at every
        start)."""
        return [switch.known_hosts_line() for switch in self.switches.values()
                if switch.transport == "netconf"]

    def _new_pki(self, name: str) -> GnmiTls:
        """A new CA for gNMI switch ``name`` (its certificate in pki/NAME-ca.pem, which the
        inventory names: one per switch, so a lab spread over processes needs no shared
        CA) and the loopback certificate the switch presents."""
        authority = Authority(f"msoctl lab {self.topology.name} {name}")
        (self.state_dir / PKI_DIR).mkdir(exist_ok=True)
        write_atomically(self.state_dir / PKI_DIR / f"{name}{CA_SUFFIX}",
                         authority.cert_pem.decode(), 0o644)
        issued = authority.issue(name, server=True)
        return GnmiTls(issued.cert_pem, issued.key_pem)

    def _new_password(self, name: str) -> str:
        """A random password for switch ``name``, written to secrets/<name>.password."""
        return self._new_secret(f"{name}.password")

    def _new_snmp_credentials(self, name: str) -> UsmCredentials:
        """New USM passphrases for switch ``name``, in secrets/<name>.snmp-auth and -priv."""
        return UsmCredentials(SNMP_USERNAME, self._new_secret(f"{name}.snmp-auth"),
                              self._new_secret(f"{name}.snmp-priv"))

    def _new_secret(self, filename: str) -> str:
        """A random secret, written to secrets/``filename`` (0600, the directory 0700)."""
        return new_secret(self.state_dir, filename)

    async def _tick_amplifiers(self) -> None:
        # Real time, not the device clock: a stepped clock must not be pushed by the tick.
        while True:
            for module in self.amps.values():
                try:
                    module.update()
                    self._note_amplifier_output(module)
                except Exception:  # one broken model must not stop ALS on the others
                    log.exception("%s: update failed", module.name)
            try:
                self._sync_switch_optics()
            except Exception:
                log.exception("switch optics: update failed")
            await asyncio.sleep(AMP_TICK_SECONDS)

    def _note_amplifier_output(self, module: AmplifierModule) -> None:
        """Tell the optical model when an amplifier's output has moved on its own (ALS shut
        or restarted it, its gain loop settled): the model announces changes it is told of,
        and an amplifier's follow time."""
        now = (module.als_state, round(module.output_dbm, 1))
        if self._amp_outputs.get(module.name) != now:
            self._amp_outputs[module.name] = now
            self.optics.changed(module.name)

    def override_launch_power(self, bank: str, port: int, power_dbm: float | None) -> None:
        """Make transceiver ``bank:txN`` launch ``power_dbm`` whatever its lanes say (a
        misbehaving transmitter, for a test); ``None`` gives it back to its model."""
        if bank not in self.transceivers or not 1 <= port <= self.transceivers[bank].count:
            raise FaultError(f"no transmitter {bank}:tx{port}")
        if power_dbm is None:
            self._launch_overrides.pop((bank, port), None)
        else:
            self._launch_overrides[(bank, port)] = power_dbm
            self.transceivers[bank].set_power(port, power_dbm)
        self._sync_switch_optics()

    def _sync_switch_optics(self) -> None:
        """What a switch port launches into its fiber is what its co-packaged lanes send
        (the CPO telemetry model): the mean of the lanes' powers, in mW. Set at start and
        on every tick, so a laser source fault (an ``els`` fault) darkens the far end
        within one tick, and the switch's telemetry, the OCS monitors and the far end's
        receive power all tell the same story."""
        for name, telemetry in self.telemetry.items():
            bank = self.transceivers.get(name)
            if bank is None:
                continue
            lanes = telemetry.spec.optical_lanes_per_port
            powers = telemetry.tx_powers_dbm()
            for number, port in enumerate(telemetry.spec.ports, start=1):
                if number > bank.count:
                    break
                override = self._launch_overrides.get((name, number))
                if override is not None:
                    bank.set_power(number, override)
                    continue
                milliwatts = [10 ** (power / 10) for power in powers[port][:lanes]
                              if math.isfinite(power)]
                mean = sum(milliwatts) / lanes
                bank.set_power(number, 10 * math.log10(mean) if mean > 0 else NO_LIGHT_DBM)

    async def _start_test_sets(self) -> None:
        for test_set in self.test_sets.values():
            await test_set.start_servers()

    async def _stop_servers(self) -> None:
        if self.control is not None:
            remove_endpoint_file(self.state_dir, self.control)
            await self.control.stop()
        if self._tick is not None:
            self._tick.cancel()
        for server in self.tcp.values():
            await server.stop()
        for alarms in self.alarm_servers.values():
            await alarms.stop()
        for console in self.consoles.values():
            await console.stop()
        for bridge in self.bridges.values():
            await bridge.stop()
        for switch in self.switches.values():
            await switch.stop()
        for agent in self.snmp.values():
            await agent.stop()
        for test_set in self.test_sets.values():
            await test_set.stop_servers()
        for exporters in self.host_exporters.values():
            await exporters.stop()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coroutine`` on the loop the servers live on and wait for its result."""
        return self._runner.call(coroutine, timeout)

    def stop(self) -> None:
        try:
            self._runner.stop(self._stop_servers)
            nvram.flush()  # the units' memories on disk for the next lab up
        finally:
            self._state_lock.release()

    def __enter__(self) -> Lab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- faults -------------------------------------------------------------------

    def inject(self, target: str, fault: Fault) -> None:
        """Inject ``fault`` on a device (``<switch>/snmp``: a switch's SNMP agent), or cut
        a fiber, a span (both its fibers) or a whole cable (every fiber of its spans,
        ``fiber_cut`` or ``cable_cut``), all at once."""
        if fault.kind in CUT_KINDS:
            fibers = self._fibers_named(target, fault.kind)
            with self.optics.together():  # one cut: nobody sees half of it
                for fiber in fibers:
                    fiber.cut = True
            return
        self.faults(target).inject(fault)

    def clear(self, target: str, kind: str | None = None, port: str | None = None) -> None:
        """Clear ``kind`` (None: every fault) on ``target``; with ``port``, only the faults
        injected on that part of it (a switch port, ``PORT@QUEUE``, a NIC, a lane)."""
        if port is None and kind in (None, *CUT_KINDS) and fibers_of(self.topology, target):
            fibers = self._fibers_named(target, kind or FIBER_CUT)
            with self.optics.together():
                for fiber in fibers:
                    fiber.cut = False
            return
        self.faults(target).clear(kind, port)

    def _fibers_named(self, name: str, kind: str = FIBER_CUT) -> list[Fiber]:
        """The fibers a cut of ``kind`` on ``name`` cuts: a cable's (``cable_cut``); a
        fiber, a span's or a cable's (``fiber_cut``)."""
        if kind == CABLE_CUT and self.topology.cable(name) is None:
            raise FaultError(f"no cable named {name!r}")
        found = [self.fibers[fiber] for fiber in fibers_of(self.topology, name)]
        if not found:
            raise FaultError(f"no fiber or cable named {name!r}")
        return found

    def _device(self, name: str) -> (OcsDevice | AmplifierModule | SwitchDevice | TunableLaser
                                     | PowerMeter | GpuServer):
        device: (OcsDevice | AmplifierModule | SwitchDevice | TunableLaser | PowerMeter
                 | GpuServer | None) = (
            self.ocs.get(name) or self.amps.get(name) or self.switches.get(name)
            or self.instruments.get(name) or self.hosts.get(name))
        if device is None:
            raise FaultError(f"no device named {name!r}")
        return device

    def faults(self, name: str) -> FaultInjector:
        """The fault injector of device ``name``, or of a switch's SNMP agent
        (``<switch>/snmp``)."""
        device, slash, face = name.partition("/")
        if slash:
            if face != SNMP_FACE or device not in self.telemetry:
                raise FaultError(f"no device named {name!r} (a switch's SNMP agent is "
                                 f"<switch>/{SNMP_FACE})")
            return self.telemetry[device].faults
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
            if spec.error_queue == "shared":  # so that its clients read the queue as such
                entry["shared_error_queue"] = True
            if spec.name in self.alarm_servers:
                entry["alarm_port"] = self.alarm_servers[spec.name].port
            devices.append(entry)
        spans = {f.amplifier: f.span for f in self.topology.fibers() if f.amplifier}
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
            if switch.name not in self.switches:  # unmanaged: its optics are all there is
                devices.append({"name": switch.name, "kind": "switch", "transport": "none",
                                "labels": {"campus": switch.campus, "lab": self.topology.name,
                                           "role": "switch"}})
                continue
            devices.append({
                "name": switch.name,
                "kind": "switch",
                "transport": switch.management,
                "address": f"127.0.0.1:{self.switches[switch.name].port}",
                "model": switch.model,
                "username": SWITCH_USERNAME,
                "password": f"file:{SECRETS_DIR}/{switch.name}.password",
                "timeout_seconds": SWITCH_TIMEOUT_SECONDS,
                "labels": {"campus": switch.campus, "lab": self.topology.name, "role": "switch"},
            })
            if switch.management == "netconf":
                devices[-1]["known_hosts"] = KNOWN_HOSTS
            else:
                devices[-1]["tls"] = {"ca_file": f"{PKI_DIR}/{switch.name}{CA_SUFFIX}"}
            agent = self.snmp.get(switch.name)
            if agent is not None:
                devices[-1]["snmp"] = {
                    "address": f"127.0.0.1:{agent.port}",
                    "user": SNMP_USERNAME,
                    "auth_key": f"file:{SECRETS_DIR}/{switch.name}.snmp-auth",
                    "priv_key": f"file:{SECRETS_DIR}/{switch.name}.snmp-priv",
                    "timeout_seconds": SNMP_TIMEOUT_SECONDS,
                    "retries": SNMP_RETRIES,
                }
        for test_set in self.test_sets.values():
            # the label keeps its first name, "bench", which inventories already carry
            devices.extend(test_set.inventory_entries(
                reference=_reference_file(test_set),
                labels={"lab": self.topology.name, "bench": test_set.ocs.name}))
        document: dict[str, Any] = {"journal": JOURNAL_FILE, "devices": devices}
        span_entries, link_entries = self._spans_and_links()
        if span_entries:
            document["spans"] = span_entries
        if link_entries:
            document["links"] = link_entries
        if self.topology.hosts:
            document["hosts"] = [self._host_entry(host) for host in self.topology.hosts]
        return document

    def _host_entry(self, host: HostSpec) -> dict[str, Any]:
        """A server as the inventory gives it: its GPUs, NICs and exporters."""
        exporters = self.host_exporters.get(host.name)
        entry: dict[str, Any] = {
            "name": host.name, "address": "127.0.0.1", "campus": host.campus,
            "gpus": {"vendor": host.vendor, "model": host.model, "count": host.gpus},
            "scale_up": host.scale_up,
            "nics": [{"name": nic.name, "guid": nic.guid, "switch": nic.switch,
                      "port": nic.port, "speed": nic.speed, "rail": nic.rail,
                      **({} if nic.address is None else {"address": nic.address})}
                     for nic in host.nics]}
        if exporters is not None:
            entry["metrics"] = [exporters.url(role) for role in exporters.endpoints]
        return entry

    def _spans_and_links(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The inventory's spans (every span that is one fiber each way between two
        OCSes) and links (the topology's), oriented from each link's ``a`` end."""
        topology = self.topology
        powers = {t.name: t.power_dbm for t in topology.transceivers}
        spans: dict[str, dict[str, Any]] = {}
        oriented: dict[str, str] = {}  # span -> the OCS its a_to_b fiber leaves
        for link in topology.links:
            a_tx, _ = topology.ocs_ports_of(link.a) or ("", "")
            oriented.setdefault(link.working, a_tx.split(":")[0])
            if link.protection:
                oriented.setdefault(link.protection, a_tx.split(":")[0])
        for span in topology.spans:
            fibers = topology.span_fibers(span)
            if fibers is None:
                continue
            start = oriented.get(span.name, fibers[0].from_port.split(":")[0])
            a_to_b, b_to_a = fibers if fibers[0].from_port.startswith(f"{start}:") \
                else fibers[::-1]
            spans[span.name] = {
                "name": span.name, "length_km": a_to_b.length_km,
                "loss_db_per_km": a_to_b.loss_db_per_km,
                "connector_loss_db": a_to_b.connector_loss_db, "cable": span.cable,
                "a_to_b": _span_fiber(a_to_b), "b_to_a": _span_fiber(b_to_a),
            }
        links = []
        for link in topology.links:
            ends = {}
            for key, end in (("a", link.a), ("b", link.b)):
                tx, rx = topology.ocs_ports_of(end) or ("", "")
                switch, _, port = end.partition(":")
                ends[key] = {"switch": switch, "port": port, "tx": tx, "rx": rx}
            entry: dict[str, Any] = {"name": link.name, **ends, "working": link.working}
            if link.protection:
                entry["protection"] = link.protection
            entry["tx_power_dbm"] = powers.get(ends["a"]["switch"], 1.0)
            links.append(entry)
        return list(spans.values()), links

    def write_inventory(self) -> Path:
        return write_inventory(self.state_dir, self.topology.name, self.inventory())


def _span_fiber(fiber: Any) -> dict[str, Any]:
    found = {"from": fiber.from_port, "to": fiber.to_port}
    if fiber.amplifier:
        found["amplifier"] = fiber.amplifier
    return found


def _reference_file(test_set: AcceptanceTestSet) -> str:
    """The test set's reference file (fan-out losses, meter cabling), beside the inventory."""
    return f"{test_set.laser.name}.reference.yaml"
