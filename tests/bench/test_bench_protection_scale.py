"""bench/protection_scale.py still runs and reports what it promises, at a tiny size (a
generated fabric of 16 links over 4 OCS, cables of 8, the lab in two processes, the
controller a process of its own, one round of each cut): the JSON document's shape, and
the counts that do not depend on speed (one change per cable cut, every cut link
recovered, fewer messages per OCS with alarms than by polling)."""

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
        code = load().main(["--ocs-per-campus", "2", "--ocs-size", "32", "--links", "16",
                            "--spans-per-cable", "8", "--rounds", "1", "--watch-seconds",
                            "1", "--json"])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def test_cuts_of_every_size_recover_every_link(document: dict[str, Any]) -> None:
    assert document["benchmark"] == "protection_scale" and document["links"] == 16
    sizes = document["cuts"]["sizes"]
    assert set(sizes) == {"1", "8", "cable"}
    for key, links in (("1", 1), ("8", 8), ("cable", 8)):
        row = sizes[key]
        assert row["links_cut"] == links
        assert row["recovery_ms"]["n"] == links and row["recovery_ms"]["p50"] > 0
        assert isinstance(row["goal_met"], bool)
        assert len(row["calibration_ms_per_round"]) == 1  # one round of each
        assert row["calibration_ms_per_round"][0] > 0
        assert row["slowest_recovery_ms_per_round"] == [row["recovery_ms"]["max"]]
    assert sizes["cable"]["changes_per_cut"] == 1  # a cable cut is one change
    for row in sizes.values():
        share = row["maps_planned_on_their_announcement"]
        assert share is not None and 0 <= share <= 1


def test_alarms_cost_fewer_messages_than_polling(document: dict[str, Any]) -> None:
    alarms = document["watching"]["messages_per_ocs_per_second"]
    polling = document["watching_polling_only"]["messages_per_ocs_per_second"]
    assert 0 < alarms["busiest"] < polling["mean"], (alarms, polling)
    assert polling["busiest"] <= 50  # the default budget per OCS


def test_the_estimate_and_the_table(document: dict[str, Any]) -> None:
    guess = document["estimate"]
    assert guess["links"] == 10_000 and guess["instances_with_a_standby"] >= 2
    assert document["watching"]["cpu_ms_per_link_per_second"] > 0
    text = load().render_table(document)
    assert "recovery p50" in text and "estimate for 10000 links" in text
    assert "polling only" in text and "load average" in text
    host = document["host"]
    assert host["cores"] >= 1 and host["calibration_ms_at_start"] > 0
    assert host["calibration_ms_at_end"] > 0
    assert 0 <= host["during_the_cuts"]["steal_share"] <= host["during_the_cuts"]["busy_share"] + 1
    assert "the host during the cuts" in text and "calibration" in text
    assert "planned on the map the OCS announced" in text


@pytest.mark.parametrize("cuts", ["", "2", "cable,9", " , "])
def test_cuts_other_than_the_three_sizes_are_refused(
        cuts: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        load().main(["--cuts", cuts])
    assert stopped.value.code == 2
    assert "--cuts" in capsys.readouterr().err
