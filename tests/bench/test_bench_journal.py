"""bench/journal.py still runs on all three stores and reports what it promises.

A tiny size, a handful of changes; the PostgreSQL row uses this module's database of the
session's private cluster. Checks the JSON document's shape and that the figures are
positive; nothing here depends on how fast anything is.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("journal.py")
FIGURES = ("change_p50_seconds", "change_p99_seconds", "history_n20_seconds",
           "history_device_seconds", "peak_rss_bytes", "fill_seconds")


@pytest.fixture(scope="module")
def document(postgres_url: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(BENCH).main(["--sizes", "300", "--changes", "5", "--json",
                                       "--postgres-url", postgres_url])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_every_store_reports_positive_figures(document: dict[str, Any]) -> None:
    assert document["benchmark"] == "journal"
    assert [(r["store"], r["records"]) for r in document["rows"]] == [
        ("jsonl", 300), ("sqlite", 300), ("postgresql", 300)]
    for row in document["rows"]:
        assert row["change_samples"] == 5
        assert all(positive(row[key]) for key in FIGURES), row
        assert row["change_p99_seconds"] >= row["change_p50_seconds"]


def test_the_synthetic_history_is_closed_operations_of_the_exact_size() -> None:
    bench = load_bench(BENCH)
    operations = list(bench.synthetic(1000))
    assert sum(len(o) for o in operations) == 1000
    assert {o[0]["event"] for o in operations} == {"intent", "refused"}
    assert all(o[-1]["event"] in ("result", "refused") for o in operations[:-1])
