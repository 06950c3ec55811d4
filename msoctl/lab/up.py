"""``msoctl lab up``: run the emulated lab in the foreground until SIGINT or SIGTERM.

Once every device listens, the lab writes ``DIR/inventory.yaml`` (atomically) and
this prints where each device serves; stopping stops every server cleanly. A topology
whose links lie in several OCS domains is spread over worker processes
(emulators/lab/spread.py), at most ``processes`` of them (default: the number of
cores); one whose links lie in one domain (the default topology) runs in this process.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import click

from drivers.errors import DeviceError
from emulators.lab import Lab, load_topology
from emulators.lab.constants import ENDPOINT_FILE, SECRETS_DIR, TOKEN_FILE
from emulators.lab.lab import freeze_heap
from emulators.lab.spread import SpreadLab, WorkerFailed, lab_for
from emulators.lab.statelock import StateDirBusy


class LabBusy(DeviceError):
    """Another lab runs on the state directory; nothing of it was touched."""


class LabFailed(DeviceError):
    """A part of the lab did not start; the message says which and why."""


def default_processes() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def run_lab(state_dir: Path, topology: Path | None, *, processes: int | None = None) -> None:
    """Run the lab of ``topology`` (default: the built-in one) on ``state_dir`` until
    SIGINT or SIGTERM, over at most ``processes`` worker processes (default: the number
    of cores). Raises :class:`LabBusy` when another lab runs there, :class:`LabFailed`
    when a worker does not start, and the topology's
    :class:`~drivers.yamlfile.YamlFileError` when it is invalid."""
    spec = load_topology(topology)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            spread = lab_for(state_dir, spec, processes or default_processes())
            emulated: Lab | SpreadLab = spread if spread is not None else Lab(state_dir, spec)
        except StateDirBusy as busy:
            raise LabBusy(str(busy)) from None
        try:
            try:
                inventory = emulated.start()
            except WorkerFailed as failed:
                raise LabFailed(str(failed)) from None
            freeze_heap()  # this process serves the lab until it ends
            if isinstance(emulated, SpreadLab):
                _print_spread(emulated)
            else:
                _print_local(emulated)
            if emulated.control is not None:
                click.echo(f"  {'control':<8} {emulated.control.url}  token in "
                           f"{state_dir / SECRETS_DIR / TOKEN_FILE}, endpoint in "
                           f"{state_dir / ENDPOINT_FILE}")
            click.echo(f"inventory: {inventory}")
            click.echo(f"  export MSOCTL_INVENTORY={inventory.resolve()}")
            click.echo("stop with Ctrl-C")
            while not stop.wait(0.5):
                pass
        finally:
            emulated.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("lab stopped")


def _print_local(emulated: Lab) -> None:
    click.echo(f"lab {emulated.topology.name!r} is up: {len(emulated.ocs)} OCS, "
               f"{len(emulated.topology.switches)} switches, {len(emulated.fibers)} fibers")
    for name, server in emulated.tcp.items():
        console = emulated.consoles.get(name)
        alarms = emulated.alarm_servers.get(name)
        click.echo(f"  {name:<8} scpi 127.0.0.1:{server.port}"
                   + (f"  alarms 127.0.0.1:{alarms.port}" if alarms else "")
                   + (f"  console {console.path}" if console else ""))
    for name, switch in emulated.switches.items():
        agent = emulated.snmp.get(name)
        click.echo(f"  {name:<8} netconf 127.0.0.1:{switch.port}"
                   + (f"  snmp udp 127.0.0.1:{agent.port}" if agent else ""))


def _print_spread(emulated: SpreadLab) -> None:
    topology = emulated.topology
    click.echo(f"lab {topology.name!r} is up: {len(topology.ocs)} OCS, "
               f"{len(topology.switches)} switches, {len(topology.links)} links, "
               f"{len(topology.fibers())} fibers, over {len(emulated.workers)} worker "
               f"processes")
    for worker in emulated.workers:
        part = worker.topology
        click.echo(f"  worker pid {worker.ready['pid']}: {len(part.ocs)} OCS, "
                   f"{len(part.switches)} switches, {len(part.links)} links")
    devices: list[dict[str, Any]] = emulated.inventory()["devices"]
    for device in devices:
        if device["kind"] == "ocs":
            port = device["address"].split("::")[2]
            alarms = device.get("alarm_port")
            click.echo(f"  {device['name']:<8} scpi 127.0.0.1:{port}"
                       + (f"  alarms 127.0.0.1:{alarms}" if alarms else ""))
        elif device["kind"] == "switch" and device["transport"] == "netconf":
            snmp = device.get("snmp", {}).get("address")
            click.echo(f"  {device['name']:<8} netconf {device['address']}"
                       + (f"  snmp udp {snmp}" if snmp else ""))
