"""``msoctl switch headroom``: the PFC headroom formula (SONiC's dynamic headroom calculation)
against its published figures at 400G over 30 km."""

from __future__ import annotations

import json

import pytest

from drivers.errors import ValidationError
from msoctl.ops.headroom import LinkParameters, cell_occupancy, compute, parse_distance
from tests.support import in_process

KEYS = {"rtt_seconds", "bdp_bytes", "xoff_bytes", "xon_bytes", "ecn_min_threshold_bytes",
        "ecn_max_threshold_bytes"}


def test_reference_figures_at_400g_over_30km() -> None:
    result = compute(LinkParameters(distance_m=30_000, speed_bps=400e9))
    assert result.rtt_seconds == pytest.approx(303e-6, rel=0.001)
    assert result.bdp_bytes == pytest.approx(15.15e6, rel=0.001)
    assert result.peer_response_bytes == 57_920  # 905 quanta x 512 / 8
    assert result.xoff_bytes == pytest.approx(24e6, rel=0.02)
    assert result.ecn_max_threshold_bytes == pytest.approx(2 * result.bdp_bytes, abs=1)


def test_xoff_is_the_sum_of_its_terms() -> None:
    p = LinkParameters(distance_m=1_000, speed_bps=100e9, small_packet_percent=0)
    result = compute(p)
    assert result.cell_occupancy == 1.0
    expected = (p.lossless_mtu_bytes + p.port_mtu_bytes + result.bytes_on_cable
                + result.peer_response_bytes + p.phy_delay_bytes)
    assert result.xoff_bytes == pytest.approx(expected, abs=2)
    assert result.peer_response_bytes == pytest.approx(57_920 / 4, abs=1)  # same time at 100G


@pytest.mark.parametrize("cell, small, expected", [
    (144, 100, 144 / 64),          # cell larger than two minimum packets
    (128, 100, 2 * 128 / 129),     # otherwise
    (144, 0, 1.0),
    (144, 50, (50 + 50 * 144 / 64) / 100),
])
def test_cell_occupancy(cell: int, small: float, expected: float) -> None:
    assert cell_occupancy(cell, 64, small) == pytest.approx(expected)


def test_headroom_grows_with_distance_and_speed() -> None:
    near = compute(LinkParameters(distance_m=100, speed_bps=400e9))
    far = compute(LinkParameters(distance_m=40_000, speed_bps=400e9))
    faster = compute(LinkParameters(distance_m=40_000, speed_bps=800e9))
    assert near.xoff_bytes < far.xoff_bytes < faster.xoff_bytes


@pytest.mark.parametrize("text, metres", [("30km", 30_000), ("500m", 500), ("2.5 km", 2_500),
                                          ("750M", 750)])
def test_parse_distance(text: str, metres: float) -> None:
    assert parse_distance(text) == metres


@pytest.mark.parametrize("text, message", [
    ("750", "no unit: write 750m or 750km"),
    ("nan", "write it like 30km"),
    ("inf km", "write it like 30km"),
    ("1" + "0" * 400 + "km", "at most 20000 km"),
    ("20001km", "at most 20000 km"),
])
def test_parse_distance_refuses_what_is_not_a_length(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_distance(text)


def test_cli_json_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    msoctl = in_process(capsys)
    result = msoctl("switch", "headroom", "--distance", "30km", "--speed", "400G", "-o", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert set(document) >= KEYS
    table = msoctl("switch", "headroom", "--distance", "30km", "--speed", "400g")
    assert table.code == 0 and "xoff (headroom)" in table.out and "57,920 B" in table.out
    for args in (["--distance", "thirty", "--speed", "400G"],
                 ["--distance", "30km", "--speed", "300G"],
                 ["--distance", "30km", "--speed", "400G", "--small-packets", "120"]):
        bad = msoctl("switch", "headroom", *args)
        assert bad.code == 2
        assert bad.err.startswith("error: ") and len(bad.err.strip().splitlines()) == 1


def test_impossible_parameters_are_refused() -> None:
    with pytest.raises(ValidationError):
        compute(LinkParameters(distance_m=-1, speed_bps=400e9))
    with pytest.raises(ValidationError):
        compute(LinkParameters(distance_m=10, speed_bps=400e9, ecn_min_bdp=3, ecn_max_bdp=2))
