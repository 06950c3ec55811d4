"""The test tree: one folder per kind of test, each applying its marker (its conftest.py),
and every shared fixture from tests/support (docs/testing.md)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.fixtures"]

# A run started in the background by a shell without job control (``make test &`` in a
# script) inherits SIGINT ignored, as does every msoctl it starts: the tests of Ctrl-C
# need it as a terminal gives it (a handler here: the programs started get the default).
signal.signal(signal.SIGINT, signal.default_int_handler)

KINDS = ("bench", "interop", "e2e", "conformance", "unit")
"""The kinds, in the order they run: the kinds whose modules are few long tests (real
servers, labs in processes, a wheel built) first, the many short unit tests last, so
that the workers of the parallel pass (which take whole modules, in this order: make
test passes --no-loadscope-reorder) end together instead of one finishing a long
module alone."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is of exactly one kind: it lives in one of the kinds' folders. The
    kinds run in the order of KINDS (a stable sort: each module's own order kept)."""
    stray = [item.nodeid for item in items
             if sum(1 for kind in KINDS if item.get_closest_marker(kind)) != 1]
    if stray:
        raise pytest.UsageError(
            "tests outside the kinds' folders (tests/unit, conformance, interop, e2e, bench): "
            + ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else ""))
    hidden = [item.nodeid for item in items if item.get_closest_marker("serial")
              and "mark.serial" not in item.path.read_text(encoding="utf-8")]
    if hidden:  # pytest_ignore_collect would leave them out of the serial pass
        raise pytest.UsageError("marked serial without pytest.mark.serial in its module: "
                                + ", ".join(hidden[:5]))
    items.sort(key=lambda item: next(KINDS.index(kind) for kind in KINDS
                                     if item.get_closest_marker(kind)))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The serial pass (``-m serial``: a handful of modules) does not import every test
    module to find them (six seconds of a two-core machine): a module whose text never
    says ``mark.serial`` has no test marked so."""
    if (config.getoption("markexpr") == "serial" and collection_path.is_file()
            and collection_path.name.startswith("test_") and collection_path.suffix == ".py"):
        return "mark.serial" not in collection_path.read_text(encoding="utf-8")
    return None
