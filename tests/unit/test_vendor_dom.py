"""The vendor DOM readers on rows written from the vendors' MIB texts (golden vectors):
JUNIPER-DOM-MIB (lanes from 0, powers in 0.01 dBm, bias in µA, voltage in mV),
HUAWEI-ENTITY-EXTENT-MIB (rows by entPhysicalIndex, per-lane strings in either of the
forms agents write), H3C's older thresholds in tenths of a microwatt, and the entity
join's drops for values RFC 3433 does not allow."""

from __future__ import annotations

import pytest
from pysnmp.proto import rfc1902

from drivers.optics.readings import NO_LIGHT_DBM, Thresholds
from drivers.snmp import entity, mibs
from drivers.snmp.entity import EntityWalk
from drivers.snmp.mibs import Oid
from drivers.snmp.session import VarBind
from drivers.snmp.vendor_dom import h3c_reading, huawei_reading, juniper_reading

JUNIPER_CURRENT = (1, 3, 6, 1, 4, 1, 2636, 3, 60, 1, 1, 1, 1)  # jnxDomCurrentEntry
JUNIPER_LANE = (1, 3, 6, 1, 4, 1, 2636, 3, 60, 1, 2, 1, 1)  # jnxDomCurrentLaneEntry
HUAWEI = (1, 3, 6, 1, 4, 1, 2011, 5, 25, 31, 1, 1, 3, 1)  # hwOpticalModuleInfoEntry
H3C = (1, 3, 6, 1, 4, 1, 25506, 2, 70, 1, 1, 1)  # hh3cTransceiverInfoEntry


def _walked(entry: Oid, rows: dict[tuple[int, ...], dict[int, object]]
            ) -> dict[Oid, list[VarBind]]:
    walked: dict[Oid, list[VarBind]] = {}
    for index, columns in rows.items():
        for number, value in columns.items():
            wire = (rfc1902.OctetString(value.encode()) if isinstance(value, str)
                    else rfc1902.Integer32(value))
            walked.setdefault((*entry, number), []).append(((*entry, number, *index), wire))
    return walked


def test_juniper_lanes_count_from_zero_and_share_the_modules_thresholds() -> None:
    walked = _walked(JUNIPER_CURRENT, {(7,): {
        5: -238, 6: 6500, 7: 112, 8: 41, 9: 300, 10: -1400, 11: 200, 12: -1200,
        13: 15000, 14: 2000, 15: 13000, 16: 3000, 17: 400, 18: -800, 19: 300, 20: -600,
        21: 75, 22: -5, 23: 70, 24: 0, 25: 3301, 26: 3630, 27: 2970, 28: 3465, 29: 3135,
        30: 2}})
    walked.update(_walked(JUNIPER_LANE, {(7, 0): {6: -250, 7: 6400, 8: 110},
                                         (7, 1): {6: -4000, 7: 6600, 8: 114}}))
    reading = juniper_reading(walked, "mx-1", {7: "et-0/0/1"})
    (port,) = reading.ports
    assert (port.port, port.port_name, port.temperature_celsius) == (7, "et-0/0/1", 41.0)
    assert port.supply_voltage_volts == pytest.approx(3.301)
    assert [lane.lane for lane in port.lanes] == [1, 2]
    assert port.lanes[0].rx_power_dbm == pytest.approx(-2.5)
    assert port.lanes[0].tx_bias_ma == pytest.approx(6.4)
    assert port.lanes[1].rx_power_dbm == pytest.approx(-40.0)
    assert port.thresholds["rx_power_dbm"] == Thresholds(-14.0, -12.0, 2.0, 3.0)
    assert port.thresholds["tx_bias_ma"] == Thresholds(2.0, 3.0, 13.0, 15.0)
    assert port.thresholds["temperature_celsius"] == Thresholds(-5.0, 0.0, 70.0, 75.0)
    assert port.thresholds["supply_voltage_volts"].high_alarm == pytest.approx(3.63)


def test_juniper_thresholds_all_zero_are_none() -> None:
    walked = _walked(JUNIPER_CURRENT, {(3,): {5: -300, 7: 100, 8: 30, 9: 0, 10: 0,
                                              11: 0, 12: 0}})
    (port,) = juniper_reading(walked, "mx-1", {}).ports
    assert "rx_power_dbm" not in port.thresholds
    assert port.lanes[0].rx_power_dbm == pytest.approx(-3.0)  # no lane rows: the module's


def _entities(names: dict[int, str], ports: dict[int, int], if_names: dict[int, str]
              ) -> EntityWalk:
    found = EntityWalk()
    for index, name in names.items():
        found.physical[index] = {"entPhysicalName": name, "entPhysicalContainedIn": 1,
                                 "entPhysicalClass": "port", "entPhysicalDescr": ""}
    found.aliases.update(ports)
    found.if_names.update(if_names)
    return found


@pytest.mark.parametrize(("rx", "tx"), [
    ("-121,-151,-4000,-98", "114,32,-90,-228"),  # hundredths of a dBm (the older texts)
    ("-1.21,-1.51,-40.00,-0.98", "1.14,0.32,-0.90,-2.28"),  # dBm (the newer)
])
def test_huawei_lane_strings_in_either_form(rx: str, tx: str) -> None:
    found = _entities({16842753: "100GE1/0/1"}, {}, {12: "100GE1/0/1"})
    walked = _walked(HUAWEI, {(16842753,): {
        5: 38, 6: 3290, 7: 6200, 8: 406, 9: 750, 31: "6.20,6.31,6.05,5.98",
        32: rx, 33: tx, 13: -1400, 14: 400, 15: -800, 16: 500, 50: -5, 51: 75}})
    reading = huawei_reading(walked, "ce-1", found)
    (port,) = reading.ports
    assert (port.port, port.port_name) == (12, "100GE1/0/1")
    assert port.supply_voltage_volts == pytest.approx(3.29)
    assert [lane.rx_power_dbm for lane in port.lanes] == pytest.approx([-1.21, -1.51, -40.0,
                                                                        -0.98])
    assert [lane.tx_power_dbm for lane in port.lanes] == pytest.approx([1.14, 0.32, -0.9,
                                                                        -2.28])
    assert port.lanes[2].tx_bias_ma == pytest.approx(6.05)
    assert port.thresholds["rx_power_dbm"] == Thresholds(low_alarm=-14.0, high_alarm=4.0)
    assert port.thresholds["temperature_celsius"] == Thresholds(low_alarm=-5, high_alarm=75)


def test_huawei_row_without_a_port_and_a_lane_that_is_no_number() -> None:
    found = _entities({5: "unplugged"}, {}, {1: "100GE1/0/1"})
    walked = _walked(HUAWEI, {(5,): {8: -300}, (6,): {8: -300, 32: "-1.0,N/A"}})
    found.aliases[6] = 1
    reading = huawei_reading(walked, "ce-1", found)
    assert [port.port for port in reading.ports] == [1]
    assert dict(reading.dropped) == {"no_port": 1, "not_a_number": 1}
    assert reading.ports[0].lanes[1].rx_power_dbm is None


def test_h3c_older_thresholds_in_tenths_of_a_microwatt() -> None:
    """Without the dBm columns (52-59), power thresholds are 0.1 µW: 10,000 is 0 dBm;
    2147483647 is not available."""
    walked = _walked(H3C, {(4,): {9: 123, 12: 2147483647, 15: 40, 16: 330, 17: 3500,
                                  30: 31623, 31: 1000, 32: 25119, 33: 1585,
                                  18: 75000, 19: -5000, 20: 70000, 21: 0}})
    (port,) = h3c_reading(walked, "h3c-1", {4: "HundredGigE1/0/4"}).ports
    assert port.lanes[0].tx_power_dbm == pytest.approx(1.23)
    assert port.lanes[0].rx_power_dbm is None
    levels = port.thresholds["tx_power_dbm"]
    assert levels.high_alarm == pytest.approx(5.0, abs=0.001)
    assert levels.low_alarm == pytest.approx(-10.0, abs=0.001)
    assert port.thresholds["temperature_celsius"] == Thresholds(-5.0, 0.0, 70.0, 75.0)


def test_entity_values_the_rfc_does_not_allow_are_dropped_with_their_reason() -> None:
    """A precision outside -8..9 fails its decoding; a value of the wrong SMI type too;
    an unknown scale name; each drops its sensor, counted, and the rest is read."""
    sensors = mibs.table("ENTITY-SENSOR-MIB", "entPhySensorTable")
    found = EntityWalk()
    found.physical[1] = {"entPhysicalName": "Ethernet1", "entPhysicalContainedIn": 0,
                         "entPhysicalClass": "port", "entPhysicalDescr": ""}
    found.if_names[1] = "Ethernet1"
    good = {"entPhySensorType": "watts", "entPhySensorScale": "milli",
            "entPhySensorPrecision": 4, "entPhySensorValue": 10000,
            "entPhySensorOperStatus": "ok"}
    for index, lane in ((11, 1), (12, 2), (13, 3), (14, 4)):
        found.physical[index] = {"entPhysicalName": f"DOM RX Power Sensor for Ethernet1/{lane}",
                                 "entPhysicalContainedIn": 1, "entPhysicalClass": "sensor",
                                 "entPhysicalDescr": ""}
        found.sensors[index] = dict(good)
    bad_precision = [((*sensors.column("entPhySensorPrecision").oid, 12),
                      rfc1902.Integer32(12))]
    bad_value = [((*sensors.column("entPhySensorValue").oid, 13),
                  rfc1902.OctetString(b"1.5"))]
    cells = entity._cells(sensors, [*bad_precision, *bad_value], found, "sw-1")
    for index, column, value in cells:
        found.sensors[index[0]][column] = value
    found.sensors[14]["entPhySensorScale"] = "centi"
    reading = entity.reading(found, "sw-1")
    assert dict(reading.dropped) == {"precision": 2, "value": 1}
    (port,) = reading.ports
    assert [lane.lane for lane in port.lanes] == [1]
    assert port.lanes[0].rx_power_dbm == pytest.approx(0.0)  # 1 mW


def test_zero_watts_is_no_light() -> None:
    found = EntityWalk()
    found.physical[1] = {"entPhysicalName": "Ethernet1", "entPhysicalContainedIn": 0}
    found.physical[2] = {"entPhysicalName": "DOM RX Power Sensor for Ethernet1/1",
                         "entPhysicalContainedIn": 1}
    found.if_names[1] = "Ethernet1"
    found.sensors[2] = {"entPhySensorType": "watts", "entPhySensorScale": "milli",
                        "entPhySensorPrecision": 4, "entPhySensorValue": 0,
                        "entPhySensorOperStatus": "ok"}
    (port,) = entity.reading(found, "sw-1").ports
    assert port.lanes[0].rx_power_dbm == NO_LIGHT_DBM


def test_the_lab_topology_names_the_agents_layouts() -> None:
    from emulators.cpo.entity import LAYOUT_NAMES
    from emulators.cpo.vendor import DOM_MIBS
    from emulators.lab import topology

    assert topology.ENTITY_LAYOUTS == LAYOUT_NAMES and topology.DOM_MIBS == DOM_MIBS
