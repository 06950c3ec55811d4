"""Vendor MIB tables the agent can serve beside the standard ones, restated from the
vendors' published MIB texts (which this repository does not carry).

- ``aristaEntSensorThresholdTable`` (ARISTA-ENTITY-SENSOR-MIB, 1.3.6.1.4.1.30065.3.12.1.1,
  INDEX { entPhysicalIndex }): per sensor, its low warning, low critical, high warning and
  high critical thresholds as EntitySensorValue (the sensor's own type, scale and
  precision), -1,000,000,000 and +1,000,000,000 where none is set, and a text on where
  the value stands;
- ``ceSensorExtThresholdTable`` (CISCO-ENTITY-SENSOR-EXT-MIB, 1.3.6.1.4.1.9.9.745.1.1,
  INDEX { entPhysicalIndex, ceSensorExtThresholdIndex }): per sensor, one row per
  threshold: its severity (minor 10 for a warning, major 20 for an alarm), its relation
  (lessThan 1 below, greaterThan 3 above), its value as EntitySensorValue, whether the
  sensor's value meets it now (TruthValue), and notifications ``transparent`` (3);
- H3C's ``hh3cTransceiverInfoTable`` (HH3C-TRANSCEIVER-INFO-MIB,
  1.3.6.1.4.1.25506.2.70.1.1, INDEX { ifIndex }) and ``hh3cTransceiverChannelTable``
  (...70.1.2, INDEX { ifIndex, hh3cTransceiverChannelIndex }, channels from 1): powers in
  hundredths of a dBm (a dark receiver at :data:`~.entity.DBM_FLOOR`), temperature in
  whole degrees, voltage in hundredths of a volt, bias in hundredths of a milliampere;
  thresholds in the units the MIB gives each (thousandths of a degree, 100 µV, µA,
  tenths of a microwatt, and the newer hundredths of a dBm); 2,147,483,647 where a value
  is not available (what H3C's agents send). The module's own current power is the
  sum of its channels', its bias their mean.

The column numbers, syntaxes and units here are this agent's reading of the vendors'
texts, written apart from the collector's (:mod:`drivers.snmp.vendor_dom`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from drivers.snmp import mibs
from drivers.snmp.mibs import Column, MibTable, declared_table, index_object
from emulators.cpo.columns import ENUM, NUMBER, TEXT, Served, ServedTable
from emulators.cpo.datasheet import THRESHOLDS
from emulators.cpo.entity import (
    DBM_FLOOR,
    EntityTables,
    SensorRow,
    threshold_values,
)
from emulators.cpo.interfaces import Interface
from emulators.cpo.model import TelemetryReading
from emulators.cpo.optical import OpticalLaneReading

NOT_AVAILABLE = 2147483647
VALUE_RANGE = (-1_000_000_000, 1_000_000_000)  # EntitySensorValue
TRUTH = {"true": 1, "false": 2}

ARISTA = "ARISTA-ENTITY-SENSOR-MIB"
ARISTA_THRESHOLDS = declared_table(
    ARISTA, "aristaEntSensorThresholdTable", (1, 3, 6, 1, 4, 1, 30065, 3, 12, 1, 1),
    [mibs.mib_object("ENTITY-MIB", "entPhysicalIndex")], [
        Column(1, "aristaEntSensorThresholdLowWarning", "Integer32", VALUE_RANGE),
        Column(2, "aristaEntSensorThresholdLowCritical", "Integer32", VALUE_RANGE),
        Column(3, "aristaEntSensorThresholdHighWarning", "Integer32", VALUE_RANGE),
        Column(4, "aristaEntSensorThresholdHighCritical", "Integer32", VALUE_RANGE),
        Column(5, "aristaEntSensorStatusDescr", "OCTET STRING", (0, 255)),
    ])

CISCO = "CISCO-ENTITY-SENSOR-EXT-MIB"
_CISCO_ENTRY = (1, 3, 6, 1, 4, 1, 9, 9, 745, 1, 1, 1)
CISCO_THRESHOLDS = declared_table(
    CISCO, "ceSensorExtThresholdTable", _CISCO_ENTRY[:-1],
    [mibs.mib_object("ENTITY-MIB", "entPhysicalIndex"),
     index_object(CISCO, "ceSensorExtThresholdIndex", (*_CISCO_ENTRY, 1))], [
        Column(2, "ceSensorExtThresholdSeverity", "Integer32",
               enumeration={"other": 1, "minor": 10, "major": 20, "critical": 30}),
        Column(3, "ceSensorExtThresholdRelation", "Integer32", enumeration={
            "lessThan": 1, "lessOrEqual": 2, "greaterThan": 3, "greaterOrEqual": 4,
            "equalTo": 5, "notEqualTo": 6}),
        Column(4, "ceSensorExtThresholdValue", "Integer32", VALUE_RANGE),
        Column(5, "ceSensorExtThresholdEvaluation", "Integer32", enumeration=TRUTH),
        Column(6, "ceSensorExtThresholdNotifEnable", "Integer32",
               enumeration={"enabled": 1, "disabled": 2, "transparent": 3}),
    ])

H3C = "HH3C-TRANSCEIVER-INFO-MIB"
_H3C_INFO = (1, 3, 6, 1, 4, 1, 25506, 2, 70, 1, 1)
_H3C_CHANNELS = (1, 3, 6, 1, 4, 1, 25506, 2, 70, 1, 2)
_INT = "Integer32"
H3C_INFO = declared_table(H3C, "hh3cTransceiverInfoTable", _H3C_INFO,
                          [mibs.mib_object("IF-MIB", "ifIndex")], [
    Column(1, "hh3cTransceiverHardwareType", "OCTET STRING"),
    Column(2, "hh3cTransceiverType", "OCTET STRING"),
    Column(3, "hh3cTransceiverWaveLength", _INT),
    Column(4, "hh3cTransceiverVendorName", "OCTET STRING"),
    Column(5, "hh3cTransceiverSerialNumber", "OCTET STRING"),
    Column(8, "hh3cTransceiverDiagnostic", _INT, enumeration=TRUTH),
    Column(9, "hh3cTransceiverCurTXPower", _INT),
    Column(12, "hh3cTransceiverCurRXPower", _INT),
    Column(15, "hh3cTransceiverTemperature", _INT),
    Column(16, "hh3cTransceiverVoltage", _INT),
    Column(17, "hh3cTransceiverBiasCurrent", _INT),
    *(Column(number, f"hh3cTransceiver{name}", _INT) for number, name in enumerate((
        "TempHiAlarm", "TempLoAlarm", "TempHiWarn", "TempLoWarn",
        "VccHiAlarm", "VccLoAlarm", "VccHiWarn", "VccLoWarn",
        "BiasHiAlarm", "BiasLoAlarm", "BiasHiWarn", "BiasLoWarn",
        "PwrOutHiAlarm", "PwrOutLoAlarm", "PwrOutHiWarn", "PwrOutLoWarn",
        "RcvPwrHiAlarm", "RcvPwrLoAlarm", "RcvPwrHiWarn", "RcvPwrLoWarn"), start=18)),
    *(Column(number, f"hh3cTransceiver{name}", _INT) for number, name in enumerate((
        "PwrOutHiAlarmDbm", "PwrOutLoAlarmDbm", "PwrOutHiWarnDbm", "PwrOutLoWarnDbm",
        "RcvPwrHiAlarmDbm", "RcvPwrLoAlarmDbm", "RcvPwrHiWarnDbm", "RcvPwrLoWarnDbm"),
        start=52)),
])
H3C_CHANNELS = declared_table(
    H3C, "hh3cTransceiverChannelTable", _H3C_CHANNELS,
    [mibs.mib_object("IF-MIB", "ifIndex"),
     index_object(H3C, "hh3cTransceiverChannelIndex", (*_H3C_CHANNELS, 1, 1))], [
        Column(2, "hh3cTransceiverChannelCurTXPower", _INT),
        Column(3, "hh3cTransceiverChannelCurRXPower", _INT),
        Column(4, "hh3cTransceiverChannelTemperature", _INT),
        Column(5, "hh3cTransceiverChannelBiasCurrent", _INT),
        Column(6, "hh3cTransceiverChannelBiasHiAm", _INT),
        Column(7, "hh3cTransceiverChannelBiasLoAm", _INT),
        Column(8, "hh3cTransceiverChannelTXPwrHiAm", _INT),
        Column(9, "hh3cTransceiverChannelTXPwrLoAm", _INT),
        Column(10, "hh3cTransceiverChanTXPwrHiAmDbm", _INT),
        Column(11, "hh3cTransceiverChanTXPwrLoAmDbm", _INT),
    ])

LAYOUTS: Mapping[tuple[str, str], MibTable] = {
    (table.table.module, table.table.name): table
    for table in (ARISTA_THRESHOLDS, CISCO_THRESHOLDS, H3C_INFO, H3C_CHANNELS)}
"""Every vendor table by (module, name), for the view's lookup."""

# What each column serves: (name in the vendor's MIB, attribute of the row, encoding).
ARISTA_TABLE = ServedTable(ARISTA, "aristaEntSensorThresholdTable", "arista_thresholds",
                           ("index",), (
    Served("aristaEntSensorThresholdLowWarning", "low_warning", NUMBER),
    Served("aristaEntSensorThresholdLowCritical", "low_alarm", NUMBER),
    Served("aristaEntSensorThresholdHighWarning", "high_warning", NUMBER),
    Served("aristaEntSensorThresholdHighCritical", "high_alarm", NUMBER),
    Served("aristaEntSensorStatusDescr", "status", TEXT),
))
CISCO_TABLE = ServedTable(CISCO, "ceSensorExtThresholdTable", "cisco_thresholds",
                          ("index", "number"), (
    Served("ceSensorExtThresholdSeverity", "severity", ENUM),
    Served("ceSensorExtThresholdRelation", "relation", ENUM),
    Served("ceSensorExtThresholdValue", "value", NUMBER),
    Served("ceSensorExtThresholdEvaluation", "evaluation", ENUM),
    Served("ceSensorExtThresholdNotifEnable", "notifications", ENUM),
))
H3C_INFO_TABLE = ServedTable(H3C, "hh3cTransceiverInfoTable", "hh3c_transceivers",
                             ("index",), (
    Served("hh3cTransceiverHardwareType", "hardware_type", TEXT),
    Served("hh3cTransceiverType", "transceiver_type", TEXT),
    Served("hh3cTransceiverWaveLength", "wavelength_nm", NUMBER),
    Served("hh3cTransceiverVendorName", "vendor", TEXT),
    Served("hh3cTransceiverSerialNumber", "serial", TEXT),
    Served("hh3cTransceiverDiagnostic", "diagnostic", ENUM),
    Served("hh3cTransceiverCurTXPower", "tx_power", NUMBER),  # 0.01 dBm
    Served("hh3cTransceiverCurRXPower", "rx_power", NUMBER),
    Served("hh3cTransceiverTemperature", "temperature", NUMBER),  # °C
    Served("hh3cTransceiverVoltage", "voltage", NUMBER),  # 0.01 V
    Served("hh3cTransceiverBiasCurrent", "bias", NUMBER),  # 0.01 mA
    *(Served(f"hh3cTransceiver{name}", attribute, NUMBER) for name, attribute in (
        ("TempHiAlarm", "temp_hi_alarm"), ("TempLoAlarm", "temp_lo_alarm"),
        ("TempHiWarn", "temp_hi_warn"), ("TempLoWarn", "temp_lo_warn"),
        ("VccHiAlarm", "vcc_hi_alarm"), ("VccLoAlarm", "vcc_lo_alarm"),
        ("VccHiWarn", "vcc_hi_warn"), ("VccLoWarn", "vcc_lo_warn"),
        ("BiasHiAlarm", "bias_hi_alarm"), ("BiasLoAlarm", "bias_lo_alarm"),
        ("BiasHiWarn", "bias_hi_warn"), ("BiasLoWarn", "bias_lo_warn"),
        ("PwrOutHiAlarm", "tx_hi_alarm_uw"), ("PwrOutLoAlarm", "tx_lo_alarm_uw"),
        ("PwrOutHiWarn", "tx_hi_warn_uw"), ("PwrOutLoWarn", "tx_lo_warn_uw"),
        ("RcvPwrHiAlarm", "rx_hi_alarm_uw"), ("RcvPwrLoAlarm", "rx_lo_alarm_uw"),
        ("RcvPwrHiWarn", "rx_hi_warn_uw"), ("RcvPwrLoWarn", "rx_lo_warn_uw"),
        ("PwrOutHiAlarmDbm", "tx_hi_alarm_dbm"), ("PwrOutLoAlarmDbm", "tx_lo_alarm_dbm"),
        ("PwrOutHiWarnDbm", "tx_hi_warn_dbm"), ("PwrOutLoWarnDbm", "tx_lo_warn_dbm"),
        ("RcvPwrHiAlarmDbm", "rx_hi_alarm_dbm"), ("RcvPwrLoAlarmDbm", "rx_lo_alarm_dbm"),
        ("RcvPwrHiWarnDbm", "rx_hi_warn_dbm"), ("RcvPwrLoWarnDbm", "rx_lo_warn_dbm"))),
))
H3C_CHANNEL_TABLE = ServedTable(H3C, "hh3cTransceiverChannelTable", "hh3c_channels",
                                ("index", "channel"), (
    Served("hh3cTransceiverChannelCurTXPower", "tx_power", NUMBER),  # 0.01 dBm
    Served("hh3cTransceiverChannelCurRXPower", "rx_power", NUMBER),
    Served("hh3cTransceiverChannelTemperature", "temperature", NUMBER),  # °C
    Served("hh3cTransceiverChannelBiasCurrent", "bias", NUMBER),  # 0.01 mA
    Served("hh3cTransceiverChannelBiasHiAm", "bias_hi_alarm", NUMBER),  # µA
    Served("hh3cTransceiverChannelBiasLoAm", "bias_lo_alarm", NUMBER),
    Served("hh3cTransceiverChannelTXPwrHiAm", "tx_hi_alarm_uw", NUMBER),  # 0.1 µW
    Served("hh3cTransceiverChannelTXPwrLoAm", "tx_lo_alarm_uw", NUMBER),
    Served("hh3cTransceiverChanTXPwrHiAmDbm", "tx_hi_alarm_dbm", NUMBER),  # 0.01 dBm
    Served("hh3cTransceiverChanTXPwrLoAmDbm", "tx_lo_alarm_dbm", NUMBER),
))
CAPABILITIES = {
    "arista": (ARISTA, "aristaEntSensorMIB", (1, 3, 6, 1, 4, 1, 30065, 3, 12),
               "ARISTA-ENTITY-SENSOR-MIB aristaEntSensorThresholdTable"),
    "cisco": (CISCO, "ciscoEntitySensorExtMIB", (1, 3, 6, 1, 4, 1, 9, 9, 745),
              "CISCO-ENTITY-SENSOR-EXT-MIB ceSensorExtThresholdTable"),
    "hh3c": (H3C, "hh3cTransceiver", (1, 3, 6, 1, 4, 1, 25506, 2, 70),
             "HH3C-TRANSCEIVER-INFO-MIB transceiver and channel tables"),
}
"""sysORTable rows of the vendor modules: (module, its MODULE-IDENTITY, OID, text)."""
DOM_MIBS = ("hh3c",)
"""The vendor DOM MIBs the agent can serve."""


@dataclass(frozen=True)
class AristaThresholds:
    index: int
    low_warning: int
    low_alarm: int
    high_warning: int
    high_alarm: int
    status: str


@dataclass(frozen=True)
class CiscoThreshold:
    index: int
    number: int
    severity: str
    relation: str
    value: int
    evaluation: str
    notifications: str = "transparent"


def arista_rows(entity: EntityTables, sensor_rows: Sequence[SensorRow]
                ) -> list[AristaThresholds]:
    """One row per sensor, its status text from its value now."""
    values = {row.index: row.value for row in sensor_rows}
    rows = []
    for sensor in entity.sensors:
        low_alarm, low_warning, high_warning, high_alarm = threshold_values(sensor)
        value = values.get(sensor.index)
        if value is None:
            status = "Sensor value is not available"
        elif value < low_alarm:
            status = f"Sensor value {value} is below the low critical threshold ({low_alarm})"
        elif value < low_warning:
            status = f"Sensor value {value} is below the low warning threshold ({low_warning})"
        elif value > high_alarm:
            status = (f"Sensor value {value} is above the high critical threshold "
                      f"({high_alarm})")
        elif value > high_warning:
            status = (f"Sensor value {value} is above the high warning threshold "
                      f"({high_warning})")
        else:
            status = f"Sensor value {value} is within bounds"
        rows.append(AristaThresholds(sensor.index, low_warning, low_alarm, high_warning,
                                     high_alarm, status))
    return rows


def cisco_rows(entity: EntityTables, sensor_rows: Sequence[SensorRow]) -> list[CiscoThreshold]:
    """Four rows per sensor: low alarm, low warning, high warning, high alarm."""
    values = {row.index: row.value for row in sensor_rows}
    rows = []
    for sensor in entity.sensors:
        value = values.get(sensor.index)
        for number, (threshold, severity, relation) in enumerate(zip(
                threshold_values(sensor), ("major", "minor", "minor", "major"),
                ("lessThan", "lessThan", "greaterThan", "greaterThan"), strict=True), 1):
            met = value is not None and (value < threshold if relation == "lessThan"
                                         else value > threshold)
            rows.append(CiscoThreshold(sensor.index, number, severity, relation, threshold,
                                       "true" if met else "false"))
    return rows


@dataclass(frozen=True)
class H3cTransceiver:
    """One hh3cTransceiverInfoTable row (units as the module says)."""

    index: int
    hardware_type: str
    transceiver_type: str
    wavelength_nm: int
    vendor: str
    serial: str
    diagnostic: str
    tx_power: int
    rx_power: int
    temperature: int
    voltage: int
    bias: int
    temp_hi_alarm: int
    temp_lo_alarm: int
    temp_hi_warn: int
    temp_lo_warn: int
    vcc_hi_alarm: int
    vcc_lo_alarm: int
    vcc_hi_warn: int
    vcc_lo_warn: int
    bias_hi_alarm: int
    bias_lo_alarm: int
    bias_hi_warn: int
    bias_lo_warn: int
    tx_hi_alarm_uw: int
    tx_lo_alarm_uw: int
    tx_hi_warn_uw: int
    tx_lo_warn_uw: int
    rx_hi_alarm_uw: int
    rx_lo_alarm_uw: int
    rx_hi_warn_uw: int
    rx_lo_warn_uw: int
    tx_hi_alarm_dbm: int
    tx_lo_alarm_dbm: int
    tx_hi_warn_dbm: int
    tx_lo_warn_dbm: int
    rx_hi_alarm_dbm: int
    rx_lo_alarm_dbm: int
    rx_hi_warn_dbm: int
    rx_lo_warn_dbm: int


@dataclass(frozen=True)
class H3cChannel:
    index: int
    channel: int
    tx_power: int
    rx_power: int
    temperature: int
    bias: int
    bias_hi_alarm: int
    bias_lo_alarm: int
    tx_hi_alarm_uw: int
    tx_lo_alarm_uw: int
    tx_hi_alarm_dbm: int
    tx_lo_alarm_dbm: int


def _hundredths_dbm(dbm: float) -> int:
    return round(max(DBM_FLOOR, dbm) * 100)


def _tenths_uw(dbm: float) -> int:
    """A power in tenths of a microwatt (10,000 is 1 mW)."""
    return round(math.pow(10.0, dbm / 10.0) * 10_000)


def _scaled(value: float, factor: float) -> int:
    return round(value * factor)


def h3c_rows(reading: TelemetryReading, interfaces: Sequence[Interface]
             ) -> tuple[list[H3cTransceiver], list[H3cChannel]]:
    """Each port's transceiver row and its channels' rows at ``reading``."""
    engines = {engine.index: engine for engine in reading.engines}
    by_port: dict[int, list[OpticalLaneReading]] = {}
    for lane in reading.optical_lanes:
        by_port.setdefault(lane.port, []).append(lane)
    # (low alarm, low warning, high warning, high alarm) of each quantity
    temperature_limits = THRESHOLDS["temperature_celsius"].levels()
    voltage_limits = THRESHOLDS["supply_voltage_volts"].levels()
    bias_limits = THRESHOLDS["tx_bias_ma"].levels()
    tx_limits = THRESHOLDS["tx_power_dbm"].levels()
    rx_limits = THRESHOLDS["rx_power_dbm"].levels()
    transceivers, channels = [], []
    for interface in interfaces:
        lanes = sorted(by_port.get(interface.index, ()), key=lambda lane: lane.lane)
        if not lanes:
            continue
        engine = engines.get(lanes[0].engine)
        working = engine is not None and engine.status != "failed"
        for lane in lanes:
            channels.append(H3cChannel(
                interface.index, lane.lane,
                _hundredths_dbm(lane.tx_power_dbm) if working else NOT_AVAILABLE,
                _hundredths_dbm(lane.rx_power_dbm),
                round(engine.temperature_celsius) if working and engine else NOT_AVAILABLE,
                _scaled(lane.tx_bias_ma, 100) if working else NOT_AVAILABLE,
                _scaled(bias_limits[3], 1000), _scaled(bias_limits[0], 1000),
                _tenths_uw(tx_limits[3]), _tenths_uw(tx_limits[0]),
                _scaled(tx_limits[3], 100), _scaled(tx_limits[0], 100)))
        total_tx = sum(10.0 ** (lane.tx_power_dbm / 10.0) for lane in lanes)
        total_rx = sum(10.0 ** (lane.rx_power_dbm / 10.0) for lane in lanes)
        transceivers.append(H3cTransceiver(
            interface.index, "SM", "CPO 8x200G-FR8", 1311, "msoctl",
            f"OE{interface.index:08d}", "true",
            _hundredths_dbm(10.0 * math.log10(total_tx)) if working and total_tx > 0
            else (NOT_AVAILABLE if not working else _hundredths_dbm(-math.inf)),
            _hundredths_dbm(10.0 * math.log10(total_rx)) if total_rx > 0
            else _hundredths_dbm(-math.inf),
            round(engine.temperature_celsius) if working and engine else NOT_AVAILABLE,
            _scaled(engine.supply_voltage_volts, 100) if working and engine else NOT_AVAILABLE,
            _scaled(sum(lane.tx_bias_ma for lane in lanes) / len(lanes), 100) if working
            else NOT_AVAILABLE,
            *(_scaled(temperature_limits[i], 1000) for i in (3, 0, 2, 1)),
            *(_scaled(voltage_limits[i], 10_000) for i in (3, 0, 2, 1)),
            *(_scaled(bias_limits[i], 1000) for i in (3, 0, 2, 1)),
            *(_tenths_uw(tx_limits[i]) for i in (3, 0, 2, 1)),
            *(_tenths_uw(rx_limits[i]) for i in (3, 0, 2, 1)),
            *(_scaled(tx_limits[i], 100) for i in (3, 0, 2, 1)),
            *(_scaled(rx_limits[i], 100) for i in (3, 0, 2, 1))))
    return transceivers, channels
