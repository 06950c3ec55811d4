"""The start-up benchmark still runs and reports what it promises (no timing checked)."""

from __future__ import annotations

import contextlib
import io
import json

from tests.support.bench import bench_path, load_bench, positive


def test_startup_benchmark_reports_every_command() -> None:
    """One round of each command line, ``msoctl ocs status`` against the lab the benchmark
    starts in a process of its own."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(bench_path("startup.py")).main(["--rounds", "1", "--json"])
    assert code == 0
    document = json.loads(out.getvalue())
    assert document["benchmark"] == "startup" and document["rounds"] == 1
    variants = document["variants"]
    assert set(variants) == {"python", "help", "ocs_status_help", "ocs_status"}
    assert variants["python"]["over_python"] == 1.0
    for row in variants.values():
        assert positive(row["median_seconds"]) and positive(row["min_seconds"])
        assert len(row["samples"]) == 1 and row["modules"] > 0
    # what each command loads grows with what it does (the interpreter's modules first)
    assert (variants["python"]["modules"] < variants["help"]["modules"]
            < variants["ocs_status_help"]["modules"] < variants["ocs_status"]["modules"])
