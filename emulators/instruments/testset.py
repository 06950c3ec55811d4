"""The acceptance test set around an OCS: laser -> fan-out -> ingress ports; egress -> meter.

How a full permutation is measured per switch step, as on a real test set: one
tunable laser feeds a passive 1xN fan-out (:mod:`.fanout`) whose outputs are
patched to the OCS's ingress ports, so every ingress port is lit at once;
each egress port is patched to its own port of a multiport power meter. One
``CONN:ONLY`` then sets N paths, and one ``READ:POW:ALL:CSV?`` measures all of
them. A 1xN optical switch in place of the fan-out would light one ingress at
a time (N times the steps); a broadband source would need a spectrally flat
reference; a fan-out costs ``10 log10 N`` dB of launch power, which a +10 dBm
laser affords for N = 64 (about -9 dBm per port, crosstalk some 50 dB lower,
still 25 dB above the meter's floor).

The fan-out's loss to each ingress port is not known from the datasheet to
the hundredth of a dB: it is measured once, when the test set is cabled (the
reference: each fan-out output on meter port 1, the OCS out of the path),
and written to a reference file that the characterization reads. That file
also records which meter port is patched to which egress port.

The lab (or a test) builds one with :class:`AcceptanceTestSet` on its optical
model, serves it with :meth:`AcceptanceTestSet.start_servers` on its event loop,
writes :meth:`AcceptanceTestSet.write_reference` and adds
:meth:`AcceptanceTestSet.inventory_entries` to its inventory.

What kind of instruments they are (:class:`InstrumentKinds`): by default units with
every optional feature the drivers use (drivers/instruments/commands.py); a plainer
laser or meter lacks one or more, as a unit of the family (or another maker's
speaking its conventions) may. :data:`PLAIN` lacks them all.
"""

from __future__ import annotations

import functools
import os
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from emulators.instruments.fanout import FanOut
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import PowerMeter
from emulators.instruments.scpi import make_laser_interpreter, make_meter_interpreter
from emulators.ocs.model import OcsDevice
from emulators.optics.model import OpticalModel
from emulators.scpi.server import Interpreters, ScpiTcpServer

REFERENCE_NOISE_DB = 0.002
"""One sigma of a reference reading (the reference averages for a second or more)."""
ERROR_QUERIES = ("all", "next")


@dataclass(frozen=True)
class InstrumentKinds:
    """Which optional features the test set's laser and meter have."""

    laser_range: bool = True
    """The laser answers ``MIN``/``MAX`` of its wavelength and power queries."""
    meter_all_ports: bool = True
    """The meter reads every port at once (``:READ``/``:FETC:POW:ALL:CSV?``)."""
    meter_logging: bool = True
    """The meter logs (``:SENS<n>:CHAN1:FUNC...``)."""
    error_queries: str = "all"
    """``all``: both answer SCPI-99's optional error queries (``:SYST:ERR:ALL?``,
    ``:COUN?``, ``:CODE?``); ``next``: ``:SYST:ERR?`` only."""

    def __post_init__(self) -> None:
        if self.error_queries not in ERROR_QUERIES:
            raise ValueError(f"error_queries is one of {ERROR_QUERIES}")


FULL = InstrumentKinds()
"""A laser and a meter with every optional feature the drivers use."""
PLAIN = InstrumentKinds(laser_range=False, meter_all_ports=False, meter_logging=False,
                        error_queries="next")
"""A laser and a meter without any optional feature."""


class AcceptanceTestSet:
    """A laser, a fan-out and a power meter cabled to ``ocs`` in ``optics``.

    ``ingress_ports`` (default all) get a fan-out output each, in order;
    ``egress_ports`` (default all) go to meter ports 1, 2, ... in order. The
    meter has ``channels`` ports (default: one per egress port).
    """

    def __init__(
        self,
        optics: OpticalModel,
        ocs: OcsDevice,
        *,
        laser_name: str = "laser-1",
        meter_name: str = "pm-1",
        ingress_ports: Iterable[int] | None = None,
        egress_ports: Iterable[int] | None = None,
        channels: int | None = None,
        laser_serial: str | None = None,
        meter_serial: str | None = None,
        kinds: InstrumentKinds = FULL,
    ):
        self.optics = optics
        self.ocs = ocs
        self.ingress_ports = list(range(1, ocs.size + 1) if ingress_ports is None
                                  else ingress_ports)
        self.egress_ports = list(range(ocs.size + 1, 2 * ocs.size + 1) if egress_ports is None
                                 else egress_ports)
        if not self.ingress_ports or not all(ocs.is_ingress(p) for p in self.ingress_ports):
            raise ValueError(f"ingress ports must be among 1..{ocs.size}")
        if not self.egress_ports or not all(ocs.is_egress(p) for p in self.egress_ports):
            raise ValueError(f"egress ports must be among {ocs.size + 1}..{2 * ocs.size}")
        channels = len(self.egress_ports) if channels is None else channels
        if channels < len(self.egress_ports):
            raise ValueError(f"{len(self.egress_ports)} egress ports need as many meter ports")
        extras = kinds.error_queries == "all"
        self.kinds = kinds
        self.laser = TunableLaser(laser_name, optics, serial=laser_serial,
                                  range_queries=kinds.laser_range, error_extras=extras)
        self.fanout = FanOut(f"{laser_name}-fanout", len(self.ingress_ports),
                             serial=f"{self.laser.serial}/fanout")
        optics.add(self.fanout)
        optics.patch(f"{laser_name}:out", f"{self.fanout.name}:in")
        for output, ingress in enumerate(self.ingress_ports, start=1):
            optics.patch(f"{self.fanout.name}:{output}", f"{ocs.name}:{ingress}")
        self.meter = PowerMeter(meter_name, optics, channels=channels, serial=meter_serial,
                                all_ports=kinds.meter_all_ports, logging=kinds.meter_logging,
                                error_extras=extras)
        self.meter_port = {egress: n for n, egress in enumerate(self.egress_ports, start=1)}
        for egress, port in self.meter_port.items():
            optics.patch(f"{ocs.name}:{egress}", f"{meter_name}:{port}")
        self.servers: dict[str, ScpiTcpServer] = {}

    # ---- the reference ------------------------------------------------------------------

    def launch_loss_db(self, ingress: int) -> float:
        """True loss from the laser's set power to ``ingress`` (its power error included)."""
        output = self.ingress_ports.index(ingress) + 1
        return self.fanout.loss_db(output) - self.laser.offset_db

    def reference(self) -> dict[str, Any]:
        """What the reference measurement of this test set found (see the module docstring).

        Taken on meter port 1, so its calibration error is in every launch loss:
        the characterization's error is then the difference of two ports' errors.
        """
        noise = random.Random(f"{self.meter.serial}/{self.laser.serial}/reference")
        port1_offset = self.meter.offset_db[0]
        launch = {ingress: round(self.launch_loss_db(ingress) - port1_offset
                                 - noise.gauss(0.0, REFERENCE_NOISE_DB), 4)
                  for ingress in self.ingress_ports}
        return {
            "ocs": self.ocs.name,
            "laser": self.laser.name,
            "meter": self.meter.name,
            "launch_loss_db": launch,
            "meter_ports": dict(self.meter_port),
        }

    def write_reference(self, path: Path) -> Path:
        """Write the reference file (atomically) and return its path."""
        header = (f"# Reference of the acceptance test set around {self.ocs.name}: the loss from\n"
                  f"# {self.laser.name}'s output to each ingress port (measured on "
                  f"{self.meter.name} port 1),\n# and which {self.meter.name} port each egress "
                  "port is patched to.\n")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(header + yaml.safe_dump(self.reference(), sort_keys=False))
        os.replace(tmp, path)
        return path

    # ---- serving ---------------------------------------------------------------------------

    async def start_servers(self, host: str = "127.0.0.1") -> None:
        """Serve the laser and the meter on SCPI TCP sockets (ephemeral ports)."""
        clients: list[tuple[TunableLaser | PowerMeter, Interpreters]] = [
            (self.laser, functools.partial(make_laser_interpreter, self.laser)),
            (self.meter, functools.partial(make_meter_interpreter, self.meter))]
        for device, interpreters in clients:  # an interpreter, and a status, per client
            server = ScpiTcpServer(device, interpreters, host=host)
            await server.start()
            self.servers[device.name] = server

    async def stop_servers(self) -> None:
        for server in self.servers.values():
            await server.stop()

    def inventory_entries(self, *, reference: str | None = None,
                          labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Inventory devices for the laser and the meter (after :meth:`start_servers`).

        ``reference`` is the reference file's path as the inventory should name it.
        """
        laser: dict[str, Any] = {
            "name": self.laser.name, "kind": "laser", "transport": "visa",
            "address": f"TCPIP::127.0.0.1::{self.servers[self.laser.name].port}::SOCKET",
            "timeout_seconds": 5.0, "labels": dict(labels or {}),
        }
        if reference is not None:
            laser["reference"] = reference
        meter = {
            "name": self.meter.name, "kind": "meter", "transport": "visa",
            "address": f"TCPIP::127.0.0.1::{self.servers[self.meter.name].port}::SOCKET",
            "timeout_seconds": 5.0, "channels": self.meter.channels,
            "labels": dict(labels or {}),
        }
        return [laser, meter]
