"""An acceptance test set on its own: one OCS under test, its laser and meter, an inventory.

For tests and benchmarks of ``msoctl ocs characterize`` without the whole
fabric lab: the OCS (``ocs-dut``), ``laser-1`` and ``pm-1`` are served on
loopback from an event loop in a background thread, on the clock given
(stepped in tests). ``start()`` writes ``inventory.yaml`` and the
test set's ``reference.yaml`` in the state directory. ``instruments`` says which
optional features the laser and the meter have (all by default).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import yaml

from emulators.clock import Clock, RealClock
from emulators.instruments.laser import TunableLaser
from emulators.instruments.meter import PowerMeter
from emulators.instruments.testset import FULL, AcceptanceTestSet, InstrumentKinds
from emulators.loopthread import LoopThread
from emulators.ocs.model import OcsDevice
from emulators.ocs.scpi import make_interpreter
from emulators.optics.model import OpticalModel
from emulators.scpi.server import ScpiTcpServer

T = TypeVar("T")
REFERENCE_FILE = "reference.yaml"


class AcceptanceLab:
    """``with AcceptanceLab(dir, size=8) as lab: ...`` serves it; the inventory is in
    ``dir``."""

    def __init__(self, state_dir: Path, *, size: int = 8, clock: Clock | None = None,
                 ocs_name: str = "ocs-dut", ocs_serial: str | None = None,
                 channels: int | None = None,
                 instruments: InstrumentKinds = FULL):
        self.state_dir = Path(state_dir)
        self.clock = clock or RealClock()
        self.optics = OpticalModel(self.clock)
        self.ocs = OcsDevice(ocs_name, self.optics, size=size, serial=ocs_serial)
        self.test_set = AcceptanceTestSet(self.optics, self.ocs, channels=channels,
                                          kinds=instruments)
        self.ocs_server: ScpiTcpServer | None = None
        self._runner = LoopThread("test-set")

    @property
    def laser(self) -> TunableLaser:
        return self.test_set.laser

    @property
    def meter(self) -> PowerMeter:
        return self.test_set.meter

    def start(self) -> Path:
        """Serve everything; return the inventory's path."""
        if self._runner.started:
            raise RuntimeError("test set already started")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._runner.start()
        try:
            self.call(self._start_servers())
        except BaseException:
            self.stop()
            raise
        self.test_set.write_reference(self.state_dir / REFERENCE_FILE)
        return self.write_inventory()

    async def _start_servers(self) -> None:
        self.ocs_server = ScpiTcpServer(self.ocs, functools.partial(make_interpreter, self.ocs))
        await self.ocs_server.start()
        await self.test_set.start_servers()

    async def _stop_servers(self) -> None:
        if self.ocs_server is not None:
            await self.ocs_server.stop()
        await self.test_set.stop_servers()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coroutine`` on the loop the servers live on and wait for its result."""
        return self._runner.call(coroutine, timeout)

    def stop(self) -> None:
        self._runner.stop(self._stop_servers)

    def __enter__(self) -> AcceptanceLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def inventory(self) -> dict[str, Any]:
        assert self.ocs_server is not None
        ocs = {"name": self.ocs.name, "kind": "ocs", "transport": "visa",
               "address": f"TCPIP::127.0.0.1::{self.ocs_server.port}::SOCKET",
               "timeout_seconds": 5.0, "labels": {"role": "dut"}}
        instruments = self.test_set.inventory_entries(reference=REFERENCE_FILE,
                                                   labels={"role": "test-set"})
        return {"journal": "journal.sqlite", "devices": [ocs, *instruments]}

    def write_inventory(self) -> Path:
        path = self.state_dir / "inventory.yaml"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(yaml.safe_dump(self.inventory(), sort_keys=False))
        os.replace(tmp, path)
        return path
