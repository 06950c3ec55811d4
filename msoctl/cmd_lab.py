"""``msoctl lab``: run the emulated fabric; ``msoctl demo``: the guided walkthrough."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import click

from emulators.lab import Lab, load_topology
from msoctl.cli import Context, pass_context


@click.group()
def lab() -> None:
    """The emulated lab: every device as a software emulator on loopback."""


@lab.command()
@click.option("--topology", type=click.Path(path_type=Path, dir_okay=False),
              help="Topology YAML (default: two campuses 30 km apart).")
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("lab-state"), show_default=True,
              help="Where the inventory, journal and device NVRAM go.")
@pass_context
def up(ctx: Context, topology: Path | None, state_dir: Path) -> None:
    """Run the lab in the foreground until SIGINT or SIGTERM.

    Once every device listens, DIR/inventory.yaml is written (atomically);
    point msoctl at it with --inventory or MSOCTL_INVENTORY.
    """
    spec = load_topology(topology)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    emulated = Lab(state_dir, spec)
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


@click.command()
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Keep the lab's files here (default: a temporary directory).")
def demo(state_dir: Path | None) -> None:
    """A guided walkthrough of msoctl against the emulated lab (what `make demo` runs)."""
    from msoctl.demo import run_demo

    click.get_current_context().exit(run_demo(state_dir))
