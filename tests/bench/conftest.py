"""The benchmarks' smoke tests: a small run of each, its document's shape; no timing asserted.

Every test collected under this folder is marked ``bench``."""

from __future__ import annotations

import pytest


def pytest_itemcollected(item: pytest.Item) -> None:
    item.add_marker("bench")
