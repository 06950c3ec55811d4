"""What ``msoctl`` loads to start: a command imports only what it uses.

Each command runs as ``python -m msoctl`` does (the package's ``__main__``, run by
:mod:`runpy`) in a process of its own, which writes ``sys.modules`` to a file as it
exits: every module the command imported, those imported by name through
:mod:`importlib` too (the CLI's registry; ``python -X importtime`` does not list them).
No timing is asserted here (bench/startup.py measures it).

- ``msoctl --help`` (and ``msoctl`` alone) load the root group and its registry of
  command modules only: no command module, no driver, no YAML, SNMP, NETCONF, SSH, XML,
  plotting or Prometheus library and no emulator.
- ``msoctl ocs status`` (its help, and the command against an emulated OCS) loads
  nothing of NETCONF, SSH, SNMP or the emulators, nor numpy, which pyvisa would load
  for arrays no driver asks for (drivers/transports/visa.py); numpy still loads after.
- The lab's emulators load no driver library: the emulated instruments answer in
  ``drivers.instruments.commands``'s conventions without loading pyvisa.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulators.clock import SteppedClock
from emulators.lab import Lab, load_topology
from tests.support.paths import ROOT

NEVER_FOR_HELP = ("drivers", "emulators", "yaml", "pysnmp", "pyasn1", "ncclient", "paramiko",
                  "asyncssh", "lxml", "matplotlib", "prometheus_client", "pyvisa", "numpy")
NEVER_FOR_OCS = ("ncclient", "paramiko", "asyncssh", "pysnmp", "pyasn1", "emulators",
                 "drivers.switch", "drivers.snmp", "msoctl.exporter", "msoctl.lab", "numpy")
ROOT_MODULES = {"msoctl", "msoctl.cli", "msoctl.cli.exits", "msoctl.interrupts"}


WRAPPER = """\
import atexit, os, runpy, sys
def written():
    with open(os.environ["MSOCTL_TEST_MODULES"], "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))
atexit.register(written)
runpy.run_module("msoctl", run_name="__main__", alter_sys=True)
"""


def loaded(*args: str, env: dict[str, str] | None = None) -> tuple[set[str], str]:
    """The modules ``msoctl ARGS`` has imported when it exits, and what it printed."""
    environment = dict(env or {k: v for k, v in os.environ.items() if k != "MSOCTL_INVENTORY"})
    with tempfile.TemporaryDirectory() as scratch:
        listing = Path(scratch) / "modules"
        environment["MSOCTL_TEST_MODULES"] = str(listing)
        done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True,
                              text=True, cwd=ROOT, timeout=120, env=environment)
        modules = set(listing.read_text(encoding="utf-8").split())
    return modules, done.stdout + done.stderr


def among(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("args", [["--help"], [], ["--version"]])
def test_the_root_loads_no_command_module(args: list[str]) -> None:
    modules, output = loaded(*args)
    assert "msoctl.cli" in modules, output  # the list is read: the root did load
    assert among(modules, NEVER_FOR_HELP) == []
    assert {m for m in modules if m.startswith("msoctl")} == ROOT_MODULES


def test_ocs_status_help_loads_no_netconf_snmp_or_emulator() -> None:
    modules, output = loaded("ocs", "status", "--help")
    assert "Usage: msoctl ocs status" in output
    assert "msoctl.cli.ocs" in modules
    assert among(modules, NEVER_FOR_OCS) == []
    assert among(modules, ("msoctl.cli",)) == ["msoctl.cli", "msoctl.cli.context",
                                               "msoctl.cli.exits", "msoctl.cli.ocs",
                                               "msoctl.cli.output", "msoctl.cli.types"]


@pytest.fixture(scope="module")
def one_ocs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    directory = tmp_path_factory.mktemp("startup")
    topology = directory / "topology.yaml"
    topology.write_text("name: startup\nocs:\n  - {name: ocs-a, size: 8}\n", encoding="utf-8")
    with Lab(directory / "lab", load_topology(topology), clock=SteppedClock(),
             serial_consoles=False) as lab:
        yield lab


def test_ocs_status_against_an_ocs_loads_no_netconf_snmp_or_emulator(one_ocs: Lab) -> None:
    """The whole command: SCPI over TCP (IEEE 488.2 ``*IDN?`` and the map) through pyvisa,
    and nothing of the other device families."""
    env = {k: v for k, v in os.environ.items() if k != "MSOCTL_JOURNAL"}
    env["MSOCTL_INVENTORY"] = str(one_ocs.state_dir / "inventory.yaml")
    modules, output = loaded("ocs", "status", "ocs-a", env=env)
    assert "ocs-a" in output and "8x8" in output, output
    assert "pyvisa" in modules and "drivers.ocs.connect" in modules
    assert among(modules, NEVER_FOR_OCS) == []


def test_pyvisa_loaded_without_numpy_leaves_numpy_importable() -> None:
    """A process that loaded the VISA transport (numpy hidden from pyvisa) can still plot."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, drivers.transports.visa\n"
         "assert 'numpy' not in sys.modules\n"
         "import numpy, pyvisa.util\n"
         "print(numpy.zeros(2).sum(), pyvisa.util.np is None)"],
        capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["0.0", "True"], done.stderr


def test_the_lab_loads_no_driver_library() -> None:
    """The emulators (a lab with an acceptance test set: OCS, laser and meter) load
    neither pyvisa nor numpy."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, emulators.lab.lab, emulators.instruments.testset\n"
         "print(sorted(m for m in ('pyvisa', 'numpy', 'drivers.transports.visa')"
         " if m in sys.modules))"],
        capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
