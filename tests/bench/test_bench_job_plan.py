"""The job planning benchmark still runs and reports what it promises (the shape of its
JSON and the sanity of its figures) on small jobs; nothing here depends on speed."""

from __future__ import annotations

import json

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("job_plan.py")


def test_job_plan_bench_reports_each_size(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(BENCH)
    assert bench.main(["--gpus", "64,600", "--rounds", "1", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [job["gpus"] for job in document["jobs"]] == [64, 600]
    for job in document["jobs"]:
        assert job["hosts_used"] * 8 >= job["gpus"] and job["routes"] > 0
        assert job["unreachable"] == 0 and job["crossings"]["campus"] <= 2
        assert all(positive(value) for value in job["cpu_seconds"].values())
        assert job["route_file_bytes"] > 0
