"""Unit tests: one piece of code at a time, in this process: no socket, no lab, no peer.

Every test collected under this folder is marked ``unit``."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker("unit")
