"""Loading what a command loads prints nothing. A library that warns when it is imported
(asyncssh under cryptography 51: nine lines about DSA) would put its warning on the
stderr of every command that loads it, where msoctl promises one ``error:`` line or
none."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

MODULES = ("msoctl.cli", "emulators.lab", "emulators.netconf.server",
           "emulators.switch.device", "drivers.switch.netconf", "drivers.ocs",
           "drivers.switch.gnmi", "emulators.gnmi.server")


@pytest.mark.parametrize("module", MODULES)
def test_importing_it_prints_nothing(module: str) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
