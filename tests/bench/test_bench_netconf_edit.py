"""bench/netconf_edit.py still runs and reports what it promises: two small edit sizes,
the JSON document's shape and sanity only (nothing here depends on how fast anything is)."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench, positive

NETCONF_EDIT = bench_path("netconf_edit.py")
SIZES = (80, 800)
PROBES = {"ocs-a *IDN?", "amp-1 I2C read", "sw-b get-config"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """One run: a 100-port switch in its own process, then the lab in its own."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(NETCONF_EDIT).main(
            ["--entries", ",".join(map(str, SIZES)), "--rounds", "1", "--samples", "3",
             "--json"])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())  # one JSON document and nothing else
    return doc


def test_size_part_times_edit_and_commit_of_each_size(document: dict[str, Any]) -> None:
    size = document["size"]
    assert size["switch_ports"] == max(SIZES) // 8 and size["rounds"] == 1
    assert set(size["sizes"]) == {str(n) for n in SIZES}
    for text, entry in size["sizes"].items():
        assert entry["entries"] == int(text) and len(entry["samples"]) == 1
        for key in ("request_bytes", "median_edit_seconds", "median_commit_seconds",
                    "edit_us_per_entry", "commit_us_per_entry",
                    "edit_per_entry_over_smallest", "commit_per_entry_over_smallest",
                    "median_edit_switch_cpu_seconds", "median_commit_switch_cpu_seconds"):
            assert positive(entry[key]), (text, key, entry[key])
    assert size["sizes"][str(min(SIZES))]["edit_per_entry_over_smallest"] == 1.0
    small, big = (size["sizes"][str(n)]["request_bytes"] for n in SIZES)
    assert big > 5 * small  # the request grows with the entries it names


def test_neighbour_part_probes_every_device_idle_and_during_the_edit(
        document: dict[str, Any]) -> None:
    neighbours = document["neighbours"]
    assert neighbours["samples"] == 3 and set(neighbours["sizes"]) == {str(n) for n in SIZES}
    for entry in neighbours["sizes"].values():
        assert positive(entry["edit_seconds"]) and positive(entry["validate_seconds"])
        assert set(entry["probes"]) == PROBES
        for probe in entry["probes"].values():
            idle, during = probe["idle"], probe["during_edit"]
            assert idle["count"] == 3 and positive(idle["median_seconds"])
            assert during["count"] >= 0
            if during["count"]:  # a small edit may end before the first probe
                assert positive(during["max_seconds"])
                assert positive(probe["max_over_edit"])


def test_the_text_report_prints(document: dict[str, Any]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        load_bench(NETCONF_EDIT).report(document)
    text = out.getvalue()
    assert "sw-b get-config" in text and "x1st" in text
