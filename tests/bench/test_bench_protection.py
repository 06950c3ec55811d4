"""bench/protection.py still runs and reports what it promises: a few fiber cuts, the JSON
document's shape only (nothing here depends on how fast anything is)."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench, positive

# Fiber cuts against the lab in a process of its own, timed in real time: alone on the
# machine (make test's second pass).
pytestmark = pytest.mark.serial

PROTECTION = bench_path("protection.py")
FIGURES = {"detection", "control_plane", "device", "verification", "recovery", "outage",
           "switching", "outage_minus_switching", "cut_request"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """Two cuts with the lab in its own process, as the benchmark runs by default."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(PROTECTION).main(["--cuts", "2", "--json"])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())  # one JSON document and nothing else
    return doc


def test_header_and_goal(document: dict[str, Any]) -> None:
    assert document["benchmark"] == "protection"
    assert document["mode"] == "alternate" and document["lab"] == "subprocess"
    assert document["cuts"] == 2 and document["completed"] == 2
    assert document["config"]["hold_off_ms"] == 0
    goal = document["goal"]
    assert goal["budget_ms"] == 50
    assert isinstance(goal["met"], bool)
    assert positive(goal["p99_outage_ms"]) and positive(goal["p50_switching_ms"])
    assert document["failures"] == []
    assert document["controller_counts"]["switch"] == 2


def test_every_figure_has_percentiles(document: dict[str, Any]) -> None:
    assert set(document["figures_ms"]) == FIGURES
    for name, row in document["figures_ms"].items():
        assert set(row) == {"p50", "p99", "max", "mean"}, name
        if name not in ("outage_minus_switching", "cut_request", "verification"):
            assert all(positive(v) for v in row.values()), (name, row)


def test_samples_alternate_between_the_spans(document: dict[str, Any]) -> None:
    samples = document["samples"]
    assert [(s["from_span"], s["to_span"]) for s in samples] == [("span-1", "span-2"),
                                                                ("span-2", "span-1")]
    for sample in samples:
        assert sample["verified"] is True
        assert sample["outage"] >= sample["recovery"]
        assert sample["recovery"] >= sample["device"] >= 0


def test_the_table_renders(document: dict[str, Any]) -> None:
    text = load_bench(PROTECTION).render_table(document)
    assert "outage (cut->lit)" in text and "goal:" in text
