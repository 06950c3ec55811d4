"""The OCS remap benchmark still runs and still reports what it promises.

Checks the shape of its JSON document and that the figures are positive
numbers; nothing here depends on how fast anything is.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from typing import Any

import pytest

from tests.support.bench import bench_path, load_bench, positive

BENCH = bench_path("ocs_remap.py")
PORTS = 4

VARIANT_KEYS = {
    "label", "transport", "diagnostic", "driver_calls",
    "median_wall_seconds", "min_wall_seconds", "max_wall_seconds",
    "median_wall_per_call_seconds", "median_switching_seconds",
    "median_overhead_seconds", "median_overhead_per_call_seconds",
    "median_overhead_over_switching", "median_wall_over_switching",
    "median_bytes_sent", "median_bytes_received",
    "console_line_seconds_at_38400_baud", "samples",
}
EXPECTED_CALLS = {
    "bulk_tcp": 1,
    "per_connection_move_tcp": 2 * PORTS,  # a disconnect and a connect per connection
    "per_connection_clear_tcp": 1 + PORTS,  # disconnect all, then a connect per connection
    "bulk_serial": 1,
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """One in-process run, shared by the tests below (it takes about a second)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = load_bench(BENCH).main(["--rounds", "1", "--ports", str(PORTS), "--json"])
    assert code == 0
    doc: dict[str, Any] = json.loads(out.getvalue())  # one JSON document and nothing else
    return doc


def test_header(document: dict[str, Any]) -> None:
    assert document["benchmark"] == "ocs_remap"
    assert document["ports"] == PORTS
    assert document["rounds"] == 1
    assert document["clock"] == "RealClock"
    assert document["device"]["name"] == "ocs-a"
    assert positive(document["device"]["size"])
    assert positive(document["device"]["cell_temperature_celsius"])
    assert document["transports"]["visa_tcp"].startswith("TCPIP::127.0.0.1::")
    assert document["transports"]["visa_tcp"].endswith("::SOCKET")
    assert document["transports"]["serial_pty"]


def test_every_variant_reports_positive_figures(document: dict[str, Any]) -> None:
    variants = document["variants"]
    assert set(EXPECTED_CALLS) <= set(variants)
    for key, variant in variants.items():
        assert set(variant) >= VARIANT_KEYS, key
        assert variant["driver_calls"] == EXPECTED_CALLS.get(key, 1), key
        for name in ("median_wall_seconds", "min_wall_seconds", "max_wall_seconds",
                     "median_wall_per_call_seconds", "median_switching_seconds",
                     "median_wall_over_switching", "median_bytes_sent",
                     "median_bytes_received", "console_line_seconds_at_38400_baud"):
            assert positive(variant[name]), (key, name, variant[name])
        # Overhead is wall minus switching: a number, its size is not tested.
        for name in ("median_overhead_seconds", "median_overhead_per_call_seconds",
                     "median_overhead_over_switching"):
            assert isinstance(variant[name], float) and math.isfinite(variant[name]), name
        assert len(variant["samples"]) == 1
        sample = variant["samples"][0]
        assert positive(sample["wall_seconds"]) and positive(sample["switching_seconds"])


def test_ratios(document: dict[str, Any]) -> None:
    ratios = document["ratios"]
    for name in ("per_connection_move_over_bulk", "per_connection_clear_over_bulk",
                 "bulk_serial_over_bulk_tcp"):
        assert positive(ratios[name]), name
    # A diagnostic that reaches into pyvisa-py: present or null, never garbage.
    nodelay = ratios["bulk_tcp_nodelay_over_bulk_tcp"]
    assert nodelay is None or positive(nodelay)


def test_table_renders(document: dict[str, Any]) -> None:
    table = load_bench(BENCH).render_table(document)
    assert "bulk CONN:ONLY" in table
    assert "ratios of median wall time" in table


def test_amp_poll_bench_reports_its_figures(capsys: pytest.CaptureFixture[str]) -> None:
    amp_poll = load_bench(bench_path("amp_poll.py"))
    assert amp_poll.main(["--json", "--polls", "3"]) == 0
    document = json.loads(capsys.readouterr().out)
    for key in ("poll", "lower_bound", "field_by_field"):
        cost = document[key]
        assert cost["transactions"] > 0 and cost["bytes"] > 0 and cost["bus_seconds"] > 0
    # The floor is a floor: nothing the driver does can beat it.
    assert document["poll"]["bus_seconds"] >= document["lower_bound"]["bus_seconds"]
    assert document["ratios"]["poll_over_lower_bound"] >= 1.0
