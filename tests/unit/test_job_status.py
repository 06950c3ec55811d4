"""How ``job status`` judges a switch port: its counters as rates, its optics against the
thresholds the switch sets (msoctl/jobs/status.py)."""

from __future__ import annotations

import pytest

from drivers.optics.readings import LaneOptics, PortOptics, Thresholds
from msoctl.jobs.status import _judge_optics, _port_totals, _rate
from msoctl.words import natural_key

RX = Thresholds(low_alarm=-12.0, low_warning=-10.0, high_warning=3.0, high_alarm=5.0)


def _port(*rx: float, temperature: float = 50.0) -> PortOptics:
    return PortOptics(1, "Ethernet1", temperature_celsius=temperature,
                      lanes=tuple(LaneOptics(n, tx_power_dbm=1.0, rx_power_dbm=power)
                                  for n, power in enumerate(rx, start=1)),
                      thresholds={"rx_power_dbm": RX,
                                  "temperature_celsius": Thresholds(high_alarm=75.0)})


def test_lanes_within_their_thresholds_are_ok() -> None:
    assert _judge_optics(_port(0.0, -9.9, 2.9)) == ("ok", [])
    assert _judge_optics(None) == ("ok", [])


def test_the_most_severe_level_crossed_is_named_with_its_threshold() -> None:
    level, problems = _judge_optics(_port(0.0, -11.0, 6.25, temperature=80.0))
    assert level == "alarm"
    assert problems == ["temperature 80.00 °C above its high alarm 75.00",
                        "lane 2 rx -11.00 dBm below its low warning -10.00",
                        "lane 3 rx 6.25 dBm above its high alarm 5.00"]
    assert _judge_optics(_port(4.0)) == ("warning",
                                         ["lane 1 rx 4.00 dBm above its high warning 3.00"])


def test_a_dark_lane_is_an_alarm_without_thresholds_and_said_once() -> None:
    bare = PortOptics(9, "Ethernet9", lanes=(LaneOptics(1, rx_power_dbm=-100.0),
                                             LaneOptics(2, rx_power_dbm=-100.0)))
    assert _judge_optics(bare) == ("alarm", ["no light on all its 2 lanes"])
    assert _judge_optics(_port(0.0, -100.0, -40.0)) == ("alarm", ["no light on lanes 2,3"])


def test_rates_skip_what_was_not_read_and_counters_that_went_back() -> None:
    assert _rate(100, 350, 0.5) == pytest.approx(500.0)
    assert _rate(None, 350, 0.5) is None and _rate(100, None, 0.5) is None
    assert _rate(350, 100, 0.5) is None  # the switch restarted: no rate, not a negative one


def test_port_totals_sum_sent_and_received_pauses_and_skip_ports_without_counters() -> None:
    state = {"switch": {"ports": {"port": [
        {"name": "Ethernet1", "counters": {"ecn-marked-packets": 5, "dropped-packets": 0,
                                           "pfc-pause-frames-sent": 2,
                                           "pfc-pause-frames-received": 3}},
        {"name": "Ethernet2", "counters": {"ecn-marked-packets": 1}},
        {"name": "Ethernet3"}]}}}
    assert _port_totals(state) == {
        "Ethernet1": {"ecn": 5, "pfc": 5, "drops": 0},
        "Ethernet2": {"ecn": 1, "pfc": None, "drops": None}}


def test_names_sort_as_people_count() -> None:
    names = ["sw-b:Ethernet10", "sw-a:Ethernet10", "sw-a:Ethernet9", "sw-a:Ethernet1/2",
             "sw-a:Ethernet1"]
    assert sorted(names, key=natural_key) == ["sw-a:Ethernet1", "sw-a:Ethernet1/2",
                                              "sw-a:Ethernet9", "sw-a:Ethernet10",
                                              "sw-b:Ethernet10"]


def test_lanes_past_one_level_are_one_line_with_their_range() -> None:
    level, problems = _judge_optics(_port(6.0, 6.5, 0.0, 7.25, 4.0))
    assert level == "alarm"
    assert problems == ["lanes 1,2,4 rx 6.00..7.25 dBm above its high alarm 5.00",
                        "lane 5 rx 4.00 dBm above its high warning 3.00"]
    many = _judge_optics(_port(*[-100.0] * 3, *[0.0] * 5))
    assert many == ("alarm", ["no light on lanes 1-3"])
