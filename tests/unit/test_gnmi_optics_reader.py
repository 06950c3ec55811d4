"""drivers/optics/gnmi.py on hand-written notifications: every bad sample dropped with
its reason, the rest of the reading intact, deletes applied, the age measured."""

from __future__ import annotations

import json
import math
from typing import Any

from gnmi_pb import gnmi_pb2

from drivers.optics.gnmi import OpticsAccumulator, optics_reading
from drivers.optics.readings import NO_LIGHT_DBM
from drivers.transports.gnmi_path import parse_path

STATE = "/sonic-db:STATE_DB/localhost"


def notification(*updates: tuple[str, Any], deletes: tuple[str, ...] = (),
                 stamp: int = 1) -> gnmi_pb2.Notification:
    built = []
    for path, value in updates:
        if isinstance(value, gnmi_pb2.TypedValue):
            typed = value
        else:
            typed = gnmi_pb2.TypedValue(json_ietf_val=json.dumps(value).encode())
        built.append(gnmi_pb2.Update(path=parse_path(path), val=typed))
    return gnmi_pb2.Notification(timestamp=stamp, update=built,
                                 delete=[parse_path(path) for path in deletes])


def sensor_row(**overrides: str) -> dict[str, str]:
    row = {"temperature": "50.5", "voltage": "1.8"}
    for lane in range(1, 9):
        row.update({f"tx{lane}power": "1.5", f"rx{lane}power": "-2.0", f"tx{lane}bias": "10.0"})
    row.update(overrides)
    return row


def test_sonic_bad_fields_are_dropped_by_reason_and_the_rest_stands() -> None:
    row = sensor_row(rx2power="-inf", rx3power="banana", rx4power="-300.0", tx5bias="N/A",
                     warp_factor="9")
    row["rx6power"] = math.nan  # type: ignore[assignment]
    reading = optics_reading("sw", "sonic", [
        notification((f"{STATE}/TRANSCEIVER_DOM_SENSOR/Ethernet10", row),
                     (f"{STATE}/TRANSCEIVER_DOM_SENSOR/Ethernet2", sensor_row()),
                     ("/somewhere/else", 1))])
    assert dict(reading.dropped) == {"not a number": 1, "out of range": 1, "unknown field": 1,
                                     "nan": 1, "unsubscribed": 1}
    assert [(p.port, p.port_name) for p in reading.ports] == [(1, "Ethernet2"),
                                                              (2, "Ethernet10")]
    port = reading.port_named("Ethernet10")
    assert port is not None and port.temperature_celsius == 50.5
    lanes = {lane.lane: lane for lane in port.lanes}
    assert lanes[2].rx_power_dbm == NO_LIGHT_DBM  # SONiC's -inf: no light
    assert lanes[3].rx_power_dbm is None and lanes[4].rx_power_dbm is None
    assert lanes[5].tx_bias_ma is None and lanes[5].tx_power_dbm == 1.5  # N/A: not given
    assert lanes[1].rx_power_dbm == -2.0


def test_openconfig_scalars_json_and_deletes() -> None:
    component = "/components/component[name=xcvr-7]"
    channel = f"{component}/transceiver/physical-channels/channel[index=2]/state"
    accumulator = OpticsAccumulator("sw", "openconfig", clock=iter([1.0, 1.0, 2.0, 5.5]).__next__)
    accumulator.add(notification(
        ("/interfaces/interface[name=Ethernet7]/state/transceiver",
         gnmi_pb2.TypedValue(string_val="xcvr-7")),
        (f"{channel}/input-power/instant", gnmi_pb2.TypedValue(double_val=-3.25)),
        (f"{channel}/output-power/instant", gnmi_pb2.TypedValue(string_val="loud")),
        (f"{channel}/laser-bias-current/instant", gnmi_pb2.TypedValue(double_val=math.nan)),
        (f"{component}/state/temperature/instant", gnmi_pb2.TypedValue(double_val=451.0)),
        (f"{component}/transceiver/thresholds",
         {"threshold": [{"severity": "openconfig-alarm-types:CRITICAL",
                         "state": {"input-power-lower": "-12.00"}}]})))
    reading = accumulator.reading()
    assert dict(reading.dropped) == {"not a number": 1, "nan": 1, "out of range": 1}
    port, = reading.ports
    assert (port.port, port.port_name) == (1, "Ethernet7")
    assert port.lanes[0].rx_power_dbm == -3.25 and port.lanes[0].tx_power_dbm is None
    assert port.thresholds["rx_power_dbm"].low_alarm == -12.0
    assert reading.age_seconds == 0.0
    accumulator.add(notification(deletes=(channel,)))
    later = accumulator.reading()
    assert later.ports[0].lanes == () and later.age_seconds == 3.5


def test_a_transceiver_no_interface_names_is_dropped_as_unassociated() -> None:
    reading = optics_reading("sw", "openconfig", [notification(
        ("/components/component[name=lost]/state/temperature/instant",
         gnmi_pb2.TypedValue(double_val=40.0)))])
    assert reading.ports == () and dict(reading.dropped) == {"unassociated": 1}


def test_undecodable_values_never_raise() -> None:
    broken = gnmi_pb2.Notification(update=[gnmi_pb2.Update(
        path=parse_path(f"{STATE}/TRANSCEIVER_DOM_SENSOR"),
        val=gnmi_pb2.TypedValue(json_ietf_val=b"{not json"))])
    reading = optics_reading("sw", "sonic", [broken, object()])
    assert dict(reading.dropped) == {"undecodable": 2}
