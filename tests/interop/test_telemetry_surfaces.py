"""Port optics through every SNMP surface the emulated agent serves: ENTITY-SENSOR-MIB in
SONiC's, EOS's and a Cisco-like entity layout (and one nobody has seen), H3C's DOM MIB,
and the project's MSO-CPO-MIB. The same optical state gives the same dBm, mA, °C, V and
thresholds through each, within each encoding's resolution; expected values come from the
model's reading and the emulated datasheet, not from the collector's tables. net-snmp
walks the standard tables by name with the project's MIBs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from drivers.optics.readings import NO_LIGHT_DBM, OpticsReading
from drivers.snmp import surfaces
from drivers.snmp.collector import TelemetryCollector
from drivers.snmp.session import SnmpSession, run
from emulators.cpo.datasheet import THRESHOLDS
from emulators.cpo.model import TelemetryReading
from emulators.faults import Fault
from tests.support.snmp_agents import (
    SPEC,
    AgentUnderTest,
    net_snmp,
    our_stderr,
    v3_arguments,
)

# Each surface's resolution: (dBm, mA, °C, V). Watts with 4 decimals of a milliwatt are
# finer than 0.01 dB above -20 dBm.
RESOLUTION = {
    "sonic": (0.01, 0.001, 1e-6, 1e-4),
    "arista": (0.01, 0.01, 0.1, 0.01),
    "cisco": (0.01, 0.01, 0.1, 0.01),
    "shuffled": (0.01, 0.001, 0.01, 0.001),
    "hh3c": (0.01, 0.01, 1.0, 0.01),
    "mso-cpo": (0.01, 0.001, 0.01, 0.001),
}


@pytest.fixture(scope="module")
def arista_h3c() -> Iterator[AgentUnderTest]:
    """An EOS-like entity layout with Arista's thresholds, H3C's DOM MIB and ours."""
    harness = AgentUnderTest(SPEC, entity_layout="arista", dom_mib="hh3c", seed=3)
    yield harness
    harness.close()


def _read(harness: AgentUnderTest, surface: str) -> OpticsReading:
    async def main() -> OpticsReading:
        if surface == "mso-cpo":
            return surfaces.from_mso_cpo(await TelemetryCollector(harness.target()).cpo())
        return await surfaces.read_optics(SnmpSession(harness.target()), "sw-t", surface)
    return run(main())


def _check_against_model(reading: OpticsReading, model: TelemetryReading,
                         resolution: tuple[float, float, float, float]) -> None:
    power, bias, celsius, volts = resolution
    engines = {engine.index: engine for engine in model.engines}
    expected_ports = sorted({lane.port for lane in model.optical_lanes})
    assert [port.port for port in reading.ports] == expected_ports
    assert all(port.port_name == f"Ethernet{port.port}" for port in reading.ports)
    for lane in model.optical_lanes:
        port = reading.port(lane.port)
        assert port is not None
        seen = port.lane(lane.lane)
        assert seen is not None, (lane.port, lane.lane)
        assert seen.tx_power_dbm == pytest.approx(lane.tx_power_dbm, abs=power)
        assert seen.rx_power_dbm == pytest.approx(lane.rx_power_dbm, abs=power)
        assert seen.tx_bias_ma == pytest.approx(lane.tx_bias_ma, abs=bias)
        engine = engines[lane.engine]
        assert port.temperature_celsius == pytest.approx(engine.temperature_celsius,
                                                         abs=celsius / 2 + 1e-9)
        assert port.supply_voltage_volts == pytest.approx(engine.supply_voltage_volts,
                                                          abs=volts / 2 + 1e-9)


def _datasheet(quantity: str) -> dict[str, float]:
    limits = THRESHOLDS[quantity]
    return {"low_alarm": limits.low_alarm, "low_warning": limits.low_warning,
            "high_warning": limits.high_warning, "high_alarm": limits.high_alarm}


@pytest.mark.parametrize("surface", ["entity-sensor", "hh3c", "mso-cpo"])
def test_one_optical_state_reads_the_same_through_each_surface(
        arista_h3c: AgentUnderTest, surface: str) -> None:
    reading = _read(arista_h3c, surface)
    assert reading.source == surface and dict(reading.dropped) == {}
    layout = "arista" if surface == "entity-sensor" else surface
    _check_against_model(reading, arista_h3c.telemetry.read(), RESOLUTION[layout])


@pytest.mark.parametrize("surface", ["entity-sensor", "hh3c"])
def test_thresholds_are_the_datasheets_through_each_surface(
        arista_h3c: AgentUnderTest, surface: str) -> None:
    """Arista's threshold table (the sensor's own encoding, watts for power) and H3C's
    (thousandths of a degree, 100 µV, µA, hundredths of a dBm) give the same levels."""
    for port in _read(arista_h3c, surface).ports:
        assert set(port.thresholds) == set(THRESHOLDS)
        for quantity, levels in port.thresholds.items():
            expected = _datasheet(quantity)
            assert levels.levels() == pytest.approx(expected, abs=0.01), quantity


@pytest.mark.parametrize("layout", ["sonic", "cisco", "shuffled"])
def test_each_entity_layout_joins_every_sensor_to_its_port(layout: str) -> None:
    """SONiC's (joined by the transceiver's name; no alias table, no thresholds), a
    Cisco-like one (by entAliasMappingTable; dBm sensors of type 14, thresholds in
    ceSensorExtThresholdTable), and a numbering drawn at random."""
    harness = AgentUnderTest(SPEC, entity_layout=layout, seed=17)
    try:
        reading = _read(harness, "entity-sensor")
        assert dict(reading.dropped) == {}
        _check_against_model(reading, harness.telemetry.read(), RESOLUTION[layout])
        with_thresholds = {port.port for port in reading.ports if port.thresholds}
        assert with_thresholds == (set() if layout in ("sonic", "shuffled")
                                   else {port.port for port in reading.ports})
    finally:
        harness.close()


@pytest.mark.parametrize("seed", [101, 202, 303])
def test_a_fresh_permutation_of_the_entity_indexes_still_joins(seed: int) -> None:
    """Nothing is computed from an index: each seed numbers every entity anew."""
    harness = AgentUnderTest(SPEC, entity_layout="shuffled", seed=seed)
    try:
        indexes = [entity.index for entity in harness.agent.view.entity.physical_entities]
        assert indexes != sorted(indexes)  # not the order the tree was built in
        _check_against_model(_read(harness, "entity-sensor"), harness.telemetry.read(),
                             RESOLUTION["shuffled"])
    finally:
        harness.close()


def test_the_probe_finds_what_each_agent_serves(arista_h3c: AgentUnderTest) -> None:
    assert run(surfaces.probe(SnmpSession(arista_h3c.target()))) == (
        "entity-sensor", "hh3c", "mso-cpo")
    plain = AgentUnderTest(SPEC, seed=4)
    try:
        assert run(surfaces.probe(SnmpSession(plain.target()))) == ("mso-cpo",)
    finally:
        plain.close()


def test_a_dark_receiver_reads_no_light_and_a_failed_engine_no_value() -> None:
    """0 W (SONiC's watts) is no light, not -inf; a failed engine's sensors are
    nonoperational: no value, counted as such."""
    harness = AgentUnderTest(SPEC, entity_layout="sonic", seed=9)
    try:
        harness.telemetry.faults.inject(Fault("engine", target="1"))
        model = harness.step_and_read(2.0)
        reading = _read(harness, "entity-sensor")
        failed = {lane.port for lane in model.optical_lanes if lane.engine == 1}
        assert failed
        for number in failed:
            port = reading.port(number)
            assert port is not None and port.temperature_celsius is None
            assert all(lane.tx_power_dbm is None for lane in port.lanes)
            assert all(lane.rx_power_dbm is not None and math.isfinite(lane.rx_power_dbm)
                       for lane in port.lanes)
        assert reading.dropped["status"] > 0
        darkest = min(lane.rx_power_dbm for port in reading.ports for lane in port.lanes
                      if lane.rx_power_dbm is not None)
        assert darkest >= NO_LIGHT_DBM
    finally:
        harness.close()


def test_net_snmp_walks_the_entity_tables_by_name(arista_h3c: AgentUnderTest) -> None:
    address = f"127.0.0.1:{arista_h3c.agent.port}"
    for table, column in (("ENTITY-MIB::entPhysicalTable", "entPhysicalContainedIn"),
                          ("ENTITY-SENSOR-MIB::entPhySensorTable", "entPhySensorValue")):
        completed = net_snmp("snmpbulkwalk", *v3_arguments(), address, table)
        assert completed.returncode == 0 and our_stderr(completed) == [], completed.stderr
        assert sum(f"::{column}." in line for line in completed.stdout.splitlines()) > 0
    sensors = net_snmp("snmpbulkwalk", *v3_arguments(), "-Oq", address,
                       "ENTITY-SENSOR-MIB::entPhySensorType")
    assert {line.split()[-1] for line in sensors.stdout.splitlines()} == {
        "celsius", "voltsDC", "amperes", "watts"}
    names = net_snmp("snmpbulkwalk", *v3_arguments(), "-Oq", address,
                     "SNMPv2-MIB::sysORID")
    assert "ENTITY-SENSOR-MIB::entitySensorMIB" in names.stdout


def test_malformed_sensor_rows_are_dropped_with_a_reason_and_the_rest_stands() -> None:
    """A sensor type RFC 3433 does not define, and a sensor whose entPhysicalTable row is
    missing (a partial entity table): each dropped and counted; every other sensor read."""
    harness = AgentUnderTest(SPEC, entity_layout="cisco", seed=21)
    try:
        clean = _read(harness, "entity-sensor")
        harness.telemetry.faults.inject(Fault("malformed_sensors", target="type,orphan"))
        spoiled = _read(harness, "entity-sensor")
        assert dict(spoiled.dropped) == {"sensor_type": 1, "partial_entity_table": 1}
        first = spoiled.ports[0]
        assert first.temperature_celsius is None and first.lanes[0].rx_power_dbm is None
        assert spoiled.ports[1:] == clean.ports[1:]
        assert first.lanes[1:] == clean.ports[0].lanes[1:]
        harness.telemetry.faults.clear("malformed_sensors")
        assert _read(harness, "entity-sensor").ports == clean.ports
    finally:
        harness.close()
