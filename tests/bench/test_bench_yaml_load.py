"""The YAML loading benchmark still runs and reports what it promises (no timing checked)."""

from __future__ import annotations

import contextlib
import io
import json

from tests.support.bench import bench_path, load_bench, positive


def test_yaml_load_benchmark_reports_every_variant() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(bench_path("yaml_load.py")).main(
            ["--devices", "50", "--rounds", "1", "--json"])
    assert code == 0
    document = json.loads(out.getvalue())
    assert document["benchmark"] == "yaml_load" and document["devices"] == 50
    variants = document["variants"]
    assert {"msoctl_libyaml", "msoctl_pure_python", "pyyaml_safe_load"} <= set(variants)
    assert variants["msoctl_libyaml"]["over_msoctl_libyaml"] == 1.0
    for row in variants.values():
        assert positive(row["median_seconds"]) and positive(row["megabytes_per_second"])
        assert len(row["samples"]) == 1
    assert positive(document["over_limit_refusal_seconds"])
