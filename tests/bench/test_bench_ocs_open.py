"""The feature-probe benchmark still runs and reports what it promises: its JSON shape,
positive figures, and the messages each variant sent (a count, not a speed)."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from drivers.ocs.driver import OcsDriver
from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("ocs_open.py")


def test_one_round() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert load_bench(BENCH).main(["--rounds", "1", "--json"]) == 0
    document: dict[str, Any] = json.loads(out.getvalue())
    assert document["benchmark"] == "ocs_open" and document["rounds"] == 1
    variants = document["variants"]
    assert set(variants) == {"open_clear", "open_probe_full", "open_probe_plain",
                             "status_full", "status_plain"}
    for figures in variants.values():
        assert positive(figures["median_seconds"]) and positive(figures["over_open_clear"])
    assert variants["open_clear"]["messages"] == 2
    assert variants["open_probe_full"]["messages"] == OcsDriver.OPEN_MESSAGES
    assert variants["open_probe_plain"]["messages"] == OcsDriver.OPEN_MESSAGES
    # the plain unit is asked only what it has: *IDN? and the map
    assert variants["status_plain"]["messages"] < variants["status_full"]["messages"]
