"""The test tree: one folder per kind of test, each applying its marker (its conftest.py),
and every shared fixture from tests/support (docs/testing.md)."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.support.fixtures"]

KINDS = ("unit", "conformance", "interop", "e2e", "bench")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is of exactly one kind: it lives in one of the kinds' folders."""
    stray = [item.nodeid for item in items
             if sum(1 for kind in KINDS if item.get_closest_marker(kind)) != 1]
    if stray:
        raise pytest.UsageError(
            "tests outside the kinds' folders (tests/unit, conformance, interop, e2e, bench): "
            + ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else ""))
