"""``msoctl job plan --predict-bytes`` against the lab: the ring all-reduce's predicted time
over the planned order and random ones (msoctl/jobs/ringcost.py), from the fabric as it
is: none while link-1 is dark, the model's figure once it is lit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulators.lab import Lab
from tests.support import Msoctl, one_error_line


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def test_the_plan_predicts_its_all_reduce_once_the_span_is_lit(lab: Lab, msoctl: Msoctl,
                                                                tmp_path: Path) -> None:
    """Eight AMD GPUs, gpu-a2's then gpu-b2's, GPU g on the NIC of rail g mod 2: six edges
    within a server, one each way over link-1 (400G, span-1: 30 km). The narrowest edge
    is a NIC's 400G (the link is not shared: one edge each way), its latency 3 µs at the
    ends, 1 µs in each switch, 150 µs in the glass. 1 GB over 8 ranks: chunks of 1e9
    bits, 2.5 ms each over the span, which the pipeline cannot hide: the rank before it
    sends 13 chunks back to back, the last of them arriving 155 µs later,
    13 x 2.5 ms + 2.655 ms = 35.155 ms (the classic formula, every step at the span's
    latency: 37.17 ms)."""
    dark = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "amd",
                             "--predict-bytes", "1000000000", "-o", "json").out)
    assert dark["all_reduce"]["planned_seconds"] is None
    assert "the fabric does not join them now" in dark["all_reduce"]["not_predicted"]
    intent = tmp_path / "intent.yaml"
    intent.write_text("links:\n  link-1: {span: working}\n")
    assert msoctl("fabric", "apply", str(intent)).code == 0
    plan = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "amd",
                             "--predict-bytes", "1000000000", "-o", "json").out)
    predicted = plan["all_reduce"]
    assert predicted["planned_seconds"] == pytest.approx(13 * 2.5e-3 + 2.655e-3)
    assert predicted["bandwidth_gbytes_per_second"] == pytest.approx(50)
    assert predicted["slowest_edge_latency_seconds"] == pytest.approx(155e-6)
    assert predicted["random_median_seconds"] > predicted["planned_seconds"]
    text = msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--predict-bytes", "1000000000")
    assert "ring all-reduce of 1,000,000,000 bytes: 35.2 ms in this order" in \
        " ".join(text.out.split())


def test_a_size_out_of_range_is_one_error_line(lab: Lab, msoctl: Msoctl) -> None:
    assert "--predict-bytes" in one_error_line(
        msoctl("job", "plan", "--gpus", "4", "--predict-bytes", "0"))
