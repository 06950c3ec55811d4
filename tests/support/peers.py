"""Third-party peers that interop tests need: found, or skipped — but never skipped in CI.

The project rule: outside CI a missing peer skips its tests with the reason; in CI
(``CI=true``) a missing peer is a failure, so that a broken install step cannot pass
unnoticed as a row of skips. ``make test`` installs the Debian peers when run as root.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import textwrap
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

# Debian puts daemons in sbin directories, which an ordinary user's PATH may lack.
_SBIN_DIRECTORIES = ("/usr/sbin", "/sbin")


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def missing(reason: str) -> NoReturn:
    """Skip the calling test for ``reason``, or fail it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing peer is a failure)", pytrace=False)
    pytest.skip(reason)


def require_executable(name: str, *, debian_package: str) -> Path:
    """The path of the program ``name``, from PATH or Debian's sbin directories."""
    found = shutil.which(name)
    if found is None:
        for directory in _SBIN_DIRECTORIES:
            candidate = Path(directory) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                found = str(candidate)
                break
    if found is None:
        missing(f"{name} is not installed (Debian package {debian_package}; "
                "`make test` run as root installs it)")
    return Path(found)


def require_module(name: str, *, how_to_install: str) -> ModuleType:
    """The imported Python module ``name``."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        missing(f"Python module {name} is not importable ({error}); {how_to_install}")


def separate_process_script(module: str, text: str, directory: Path) -> Path:
    """``text`` (a client of the Python module ``module``, dedented) written to
    ``directory/client.py``, for a peer that must run in a process of its own (pygnmi's
    gNMI stubs cannot share one with gnmi-pb's, so it is looked for, never imported,
    here); missing when ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        missing(f"{module} is not installed (pip install -e '.[dev]')")
    script = directory / "client.py"
    script.write_text(textwrap.dedent(text), encoding="utf-8")
    return script
