"""Loading a benchmark of bench/ as a module, for its smoke test, and checking its figures."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.support.paths import BENCH


def bench_path(name: str) -> Path:
    """bench/``name`` (``ocs_remap.py``, say)."""
    return BENCH / name


def load_bench(path: Path) -> ModuleType:
    """The benchmark at ``path``, imported under a name of its own (``bench_<stem>``)."""
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def positive(value: Any) -> bool:
    """A finite number above zero."""
    return isinstance(value, int | float) and math.isfinite(value) and value > 0
