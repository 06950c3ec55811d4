"""bench/protection_scale.py still runs and reports what it promises, at a small size
(4 links, one cut of each size it can make): the JSON document's shape, and the counts
that do not depend on speed (one change per cut, the messages within the budget)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from types import ModuleType
from typing import Any

import pytest

from tests.support.paths import BENCH

pytestmark = pytest.mark.serial  # real-time bounds are the subject: alone on the machine

SCRIPT = BENCH / "protection_scale.py"
BUDGET = 50


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_protection_scale", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load().main(["--links", "4", "--ocs-size", "64", "--cuts", "1",
                            "--watch-seconds", "1", "--json"])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_cuts_of_every_size_recover_every_link(document: dict[str, Any]) -> None:
    assert document["benchmark"] == "protection_scale" and document["links"] == 4
    sizes = document["cuts"]["sizes"]
    assert set(sizes) == {"1"}  # 8 and 64 need a larger fabric
    row = sizes["1"]
    assert row["recovery_ms"]["n"] == 1 and row["recovery_ms"]["p50"] > 0
    assert row["one_change_per_cut"] is True
    assert isinstance(row["goal_met"], bool)


def test_the_messages_stay_within_the_budget(document: dict[str, Any]) -> None:
    for phase in (document["watching"], document["cuts"]):
        for name, rates in phase["messages_per_ocs"].items():
            assert 0 < rates["busiest_second"] <= BUDGET, (name, rates)


def test_the_estimate_and_the_table(document: dict[str, Any]) -> None:
    guess = document["estimate"]
    assert guess["links"] == 10_000 and guess["instances_with_a_standby"] >= 2
    assert document["watching"]["cpu_ms_per_link_per_second"] > 0
    text = load().render_table(document)
    assert "links cut" in text and "estimate for 10000 links" in text
