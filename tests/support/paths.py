"""Where things are: the repository and the directories the tests read."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root (the working directory of the processes tests start)."""
TESTS = ROOT / "tests"
VECTORS = TESTS / "vectors"
BENCH = ROOT / "bench"
YANG = ROOT / "yang"
DEPLOY = ROOT / "deploy"
