"""A package's names loaded on first use (PEP 562), not when the package is imported.

For a package whose light parts are imported on their own (a constants module, a worker
process's entry point) by processes that must not pay for its heavy ones.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def names_on_first_use(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``homes`` is imported from the
    module named beside it when first asked for, then kept in the package."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return load
