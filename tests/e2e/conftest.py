"""End to end: the lab and the CLI against it, crash safety and interrupts, the demo and the
wheel.

Every test collected under this folder is marked ``e2e``."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker("e2e")
