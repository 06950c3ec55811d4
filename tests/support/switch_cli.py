"""What the tests of ``msoctl switch cc`` on emulated switches of several models share:
reading a switch back as intent through the driver, a checked factory reset before each
test with the CLI pointed at the switches' inventory, and the WANT file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from drivers.switch.intent import Intent
from drivers.switch.session import open_session
from msoctl.access import Devices
from msoctl.inventory import load_inventory
from tests.support.cli import Msoctl, in_process
from tests.support.switch_models import WANT


def read(inventory: Path, name: str) -> Intent:
    """Switch ``name`` of ``inventory`` as intent, read over its own transport and model."""
    devices = Devices(load_inventory(inventory))
    with open_session(devices.switch_target(name)) as session:
        return session.read_intent()


def reset_and_point(devices: dict[str, Any], inventory: Path, ports: Iterable[str],
                    capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    """Every switch back to factory, checked (its ports listed, none configured), and the
    CLI, in this process, on ``inventory``."""
    for device in devices.values():
        device.factory_reset()
    for name in devices:
        found = read(inventory, name)
        assert set(found.ports) <= set(ports), name
        assert all(not p.queues and not p.lossless_priorities
                   for p in found.ports.values()), name
    monkeypatch.setenv("MSOCTL_INVENTORY", str(inventory))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


def write_want(directory: Path, document: Any = None) -> Path:
    """``want.yaml`` in ``directory``: ``document``, or the shared :data:`WANT`."""
    path = directory / "want.yaml"
    path.write_text(yaml.safe_dump(WANT if document is None else document, sort_keys=False))
    return path
