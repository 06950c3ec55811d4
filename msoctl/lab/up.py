"""``msoctl lab up``: run the emulated lab in the foreground until SIGINT or SIGTERM.

Once every device listens, the lab writes ``DIR/inventory.yaml`` (atomically) and
this prints where each device serves; stopping stops every server cleanly.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from drivers.errors import DeviceError
from emulators.lab import Lab, load_topology
from emulators.lab.constants import ENDPOINT_FILE, SECRETS_DIR, TOKEN_FILE
from emulators.lab.statelock import StateDirBusy


class LabBusy(DeviceError):
    """Another lab runs on the state directory; nothing of it was touched."""


def run_lab(state_dir: Path, topology: Path | None) -> None:
    """Run the lab of ``topology`` (default: the built-in one) on ``state_dir`` until
    SIGINT or SIGTERM. Raises :class:`LabBusy` when another lab runs there, and the
    topology's :class:`~drivers.yamlfile.YamlFileError` when it is invalid."""
    spec = load_topology(topology)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    try:
        emulated = Lab(state_dir, spec)
    except StateDirBusy as busy:
        raise LabBusy(str(busy)) from None
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        inventory = emulated.start()
        click.echo(f"lab {spec.name!r} is up: {len(emulated.ocs)} OCS, "
                   f"{len(emulated.switches)} switches, {len(emulated.fibers)} fibers")
        for name, server in emulated.tcp.items():
            console = emulated.consoles.get(name)
            click.echo(f"  {name:<8} scpi 127.0.0.1:{server.port}"
                       + (f"  console {console.path}" if console else ""))
        for name, switch in emulated.switches.items():
            agent = emulated.snmp.get(name)
            click.echo(f"  {name:<8} netconf 127.0.0.1:{switch.port}"
                       + (f"  snmp udp 127.0.0.1:{agent.port}" if agent else ""))
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
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("lab stopped")
