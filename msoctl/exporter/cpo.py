"""The CPO/CPC collector: a switch's co-packaged optics and copper, over SNMP.

``/probe?target=SW&module=cpo`` reads the switch's SNMP agent (its inventory
``snmp:`` section) with :class:`drivers.snmp.collector.TelemetryCollector`: the
optical engines, the optical lanes, the external laser sources (ELS), the
electrical lanes with their FEC counters and symbol-error histogram, in one
collection bounded by the probe's budget.

pysnmp is asyncio: every CPO probe's collection runs on one event loop, in the
exporter's SNMP worker process (:mod:`.snmp_worker`, which says why a process),
so the SNMP engine, its sockets and the agents' discovered engine ids are shared
by all probes rather than built per probe. The probe waits for its collection.

Enumerations and BITS are exported with every name the MIB defines (0 or 1),
taken from the compiled MIBs (:mod:`drivers.snmp.mibs`), not from literals.
The port label is the port's ifName where the agent gives one (``Ethernet1``,
as the switch collector names it), else its ifIndex.
"""

from __future__ import annotations

from drivers.snmp import mibs
from drivers.snmp.collector import CPO
from drivers.snmp.telemetry import CpcTelemetry, CpoTelemetry
from msoctl.access import snmp_target
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import COUNTER, GAUGE, INFO, Families, MetricSpec
from msoctl.exporter.snmp_worker import SnmpWorker

ENGINE = ("device", "engine")
LANE = ("device", "port", "lane")
LASER = ("device", "module", "lane")
ENGINE_STATES = tuple(mibs.mib_object(CPO, "msoCpoEngineStatus").enumeration)
ELS_STATES = tuple(mibs.mib_object(CPO, "msoCpoElsState").enumeration)
ELS_MODES = tuple(mibs.mib_object(CPO, "msoCpoElsControlMode").enumeration)
ELS_FAULTS = tuple(mibs.mib_object(CPO, "msoCpoElsFaults").bits)
HISTOGRAM_BINS = range(17)  # S0..S16 (msoCpcHistogramBin 0..16; 16: 16 or more errors)


def _spec(name: str, kind: str, help_text: str, labels: tuple[str, ...]) -> MetricSpec:
    return MetricSpec(name, kind, help_text, labels)


ENGINE_INFO = _spec("msoctl_cpo_engine_info", INFO, "An optical engine and its name.",
                    ENGINE)
ENGINE_TEMPERATURE = _spec("msoctl_cpo_engine_temperature_celsius", GAUGE,
                           "Optical engine temperature.", ENGINE)
ENGINE_TEMPERATURE_HIGH = _spec("msoctl_cpo_engine_temperature_high_celsius", GAUGE,
                                "Engine temperature at which it reports overTemperature.",
                                ENGINE)
ENGINE_VOLTAGE = _spec("msoctl_cpo_engine_supply_voltage_volts", GAUGE,
                       "Optical engine main supply voltage.", ENGINE)
ENGINE_STATUS = _spec("msoctl_cpo_engine_status", GAUGE,
                      "1 for the engine's condition (normal, overTemperature, failed), else 0.",
                      (*ENGINE, "state"))
LANE_INFO = _spec("msoctl_cpo_lane_info", INFO,
                  "Where an optical lane is: its engine and engine lane, its ELS module and "
                  "laser.", LANE)
LANE_TX_POWER = _spec("msoctl_cpo_lane_tx_power_dbm", GAUGE,
                      "Optical lane transmit power, in dBm.", LANE)
LANE_RX_POWER = _spec("msoctl_cpo_lane_rx_power_dbm", GAUGE,
                      "Optical lane receive power, in dBm (-100: dark).", LANE)
LANE_TX_BIAS = _spec("msoctl_cpo_lane_tx_bias_amperes", GAUGE,
                     "Optical lane modulator bias current.", LANE)
ELS_OUTPUT = _spec("msoctl_cpo_els_output_power_dbm", GAUGE,
                   "External laser source output power, in dBm.", LASER)
ELS_BIAS = _spec("msoctl_cpo_els_bias_current_amperes", GAUGE,
                 "External laser source drive current.", LASER)
ELS_VOLTAGE = _spec("msoctl_cpo_els_voltage_volts", GAUGE,
                    "External laser source forward voltage.", LASER)
ELS_TEMPERATURE = _spec("msoctl_cpo_els_temperature_celsius", GAUGE,
                        "External laser temperature.", LASER)
ELS_STATE = _spec("msoctl_cpo_els_state", GAUGE,
                  "1 for what the laser is doing (off, ramping, on), else 0.",
                  (*LASER, "state"))
ELS_MODE = _spec("msoctl_cpo_els_control_mode", GAUGE,
                 "1 for how the laser's drive is regulated (constantCurrent, constantPower).",
                 (*LASER, "mode"))
ELS_FAULT = _spec("msoctl_cpo_els_fault", GAUGE,
                  "1 while the laser's fault condition is present (msoCpoElsFaults), else 0.",
                  (*LASER, "fault"))
CPC_SNR = _spec("msoctl_cpc_lane_snr_db", GAUGE, "Electrical lane SNR, in dB.", LANE)
CPC_BER = _spec("msoctl_cpc_lane_pre_fec_bit_error_ratio", GAUGE,
                "Electrical lane pre-FEC bit error ratio (1e-18: that or less).", LANE)
CPC_CORRECTED = _spec("msoctl_cpc_fec_corrected_codewords_total", COUNTER,
                      "FEC codewords received with 1 to 15 symbol errors, all corrected.", LANE)
CPC_UNCORRECTABLE = _spec("msoctl_cpc_fec_uncorrectable_codewords_total", COUNTER,
                          "FEC codewords with more symbol errors than RS(544,514) corrects.",
                          LANE)
CPC_HISTOGRAM = _spec("msoctl_cpc_fec_codewords_total", COUNTER,
                      "FEC codewords received with bin symbol errors (bin 16: 16 or more).",
                      (*LANE, "bin"))
CPC_INSERTION_LOSS = _spec("msoctl_cpc_lane_insertion_loss_db", GAUGE,
                           "Electrical lane channel insertion loss, in dB.", LANE)
CPC_EYE_HEIGHT = _spec("msoctl_cpc_lane_eye_height_volts", GAUGE,
                       "Electrical lane vertical eye opening.", LANE)
CPC_EYE_WIDTH = _spec("msoctl_cpc_lane_eye_width_unit_intervals", GAUGE,
                      "Electrical lane horizontal eye opening, in unit intervals.", LANE)
CPC_DEGRADE = _spec("msoctl_cpc_fec_degrade_threshold_bit_error_ratio", GAUGE,
                    "Pre-FEC bit error ratio from which the switch calls a lane's FEC degraded.",
                    ("device",))
AGENT_UPTIME = _spec("msoctl_cpo_agent_uptime_seconds", GAUGE,
                     "The SNMP agent's sysUpTime: counters started again when it fell.",
                     ("device",))

METRICS = (AGENT_UPTIME, ENGINE_INFO, ENGINE_TEMPERATURE, ENGINE_TEMPERATURE_HIGH,
           ENGINE_VOLTAGE, ENGINE_STATUS, LANE_INFO, LANE_TX_POWER, LANE_RX_POWER, LANE_TX_BIAS,
           ELS_OUTPUT, ELS_BIAS, ELS_VOLTAGE, ELS_TEMPERATURE, ELS_STATE, ELS_MODE, ELS_FAULT,
           CPC_SNR, CPC_BER, CPC_CORRECTED, CPC_UNCORRECTABLE, CPC_HISTOGRAM, CPC_INSERTION_LOSS,
           CPC_EYE_HEIGHT, CPC_EYE_WIDTH, CPC_DEGRADE)


SNMP_WORKER = SnmpWorker()
"""Every CPO probe's collection runs in this one worker process (see its module)."""


class CpoCollector(DeviceCollector):
    kind = "cpo"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        # the prober sends only devices with an snmp section here
        target = snmp_target(self.device, at_most_seconds=self.timeout_seconds)
        optics, copper = SNMP_WORKER.collect(target, budget_seconds=self.timeout_seconds,
                                             device=self.device.name)
        fill(families, self.device.name, optics, copper)


def fill(families: Families, name: str, optics: CpoTelemetry, copper: CpcTelemetry) -> None:
    """The families of one collection."""
    families.add(AGENT_UPTIME.name, optics.info.uptime_end_seconds, device=name)
    for engine in optics.engines:
        at: dict[str, str | int] = {"device": name, "engine": engine.index}
        families.info(ENGINE_INFO.name, {"name": engine.name}, **at)
        families.add(ENGINE_TEMPERATURE.name, engine.temperature_celsius, **at)
        families.add(ENGINE_TEMPERATURE_HIGH.name, engine.temperature_high_celsius, **at)
        families.add(ENGINE_VOLTAGE.name, engine.supply_voltage_volts, **at)
        families.state(ENGINE_STATUS.name, engine.status, ENGINE_STATES, **at)
    for optical in optics.lanes:
        where = _lane(name, optical.port, optical.port_name, optical.lane)
        families.info(LANE_INFO.name, {
            "engine": optical.engine, "engine_lane": optical.engine_lane,
            "els_module": optical.els_module, "els_lane": optical.els_lane}, **where)
        families.add(LANE_TX_POWER.name, optical.tx_power_dbm, **where)
        families.add(LANE_RX_POWER.name, optical.rx_power_dbm, **where)
        families.add(LANE_TX_BIAS.name, _amperes(optical.tx_bias_ma), **where)
    for laser in optics.lasers:
        at = {"device": name, "module": laser.module, "lane": laser.lane}
        families.add(ELS_OUTPUT.name, laser.output_power_dbm, **at)
        families.add(ELS_BIAS.name, _amperes(laser.bias_current_ma), **at)
        families.add(ELS_VOLTAGE.name, laser.voltage_volts, **at)
        families.add(ELS_TEMPERATURE.name, laser.temperature_celsius, **at)
        families.state(ELS_STATE.name, laser.state, ELS_STATES, **at)
        families.state(ELS_MODE.name, laser.control_mode, ELS_MODES, "mode", **at)
        if laser.faults is not None:
            for fault in ELS_FAULTS:
                families.add(ELS_FAULT.name, fault in laser.faults, **at, fault=fault)
    families.add(CPC_DEGRADE.name, copper.fec_degrade_threshold_ber, device=name)
    for lane in copper.lanes:
        where = _lane(name, lane.port, lane.port_name, lane.lane)
        families.add(CPC_SNR.name, lane.snr_db, **where)
        families.add(CPC_BER.name, lane.pre_fec_ber, **where)
        families.add(CPC_CORRECTED.name, lane.fec_corrected_total, **where)
        families.add(CPC_UNCORRECTABLE.name, lane.fec_uncorrectable_total, **where)
        families.add(CPC_INSERTION_LOSS.name, lane.insertion_loss_db, **where)
        families.add(CPC_EYE_HEIGHT.name, None if lane.eye_height_mv is None
                     else lane.eye_height_mv / 1000, **where)
        families.add(CPC_EYE_WIDTH.name, lane.eye_width_ui, **where)
        for bin_number, codewords in zip(HISTOGRAM_BINS, lane.fec_histogram_total or (),
                                         strict=False):
            families.add(CPC_HISTOGRAM.name, codewords, **where, bin=bin_number)


def _amperes(milliamperes: float | None) -> float | None:
    return None if milliamperes is None else milliamperes / 1000


def _lane(device: str, port: int, port_name: str | None, lane: int) -> dict[str, str | int]:
    return {"device": device, "port": port_name or str(port), "lane": lane}
