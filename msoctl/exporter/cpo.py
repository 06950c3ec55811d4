"""The CPO/CPC collector: a switch's optics, co-packaged optics and copper.

``/probe?target=SW&module=cpo`` of a switch reached over gNMI answers from the
telemetry it streams (:mod:`.streams`: OpenConfig or SONiC paths, with
``msoctl_telemetry_age_seconds``); where it has no gNMI, or its stream gives nothing and
its ``telemetry:`` is ``auto``, the probe reads its SNMP agent (its inventory
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

Port optics (each lane's transmit and receive power and bias, the port's temperature
and supply voltage, the thresholds) come from the most standard surface the agent
serves (:mod:`drivers.snmp.surfaces`: ENTITY-SENSOR-MIB, a vendor DOM MIB, else
MSO-CPO-MIB), with the surface in the ``source`` label; the same metric names whichever
it is. What only the project's MIBs carry (engines, lasers, where each lane is, the
copper) comes from them where the agent serves them.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from drivers.errors import DeviceError
from drivers.optics.readings import ExternalLaser, OpticsReading
from drivers.snmp import mibs
from drivers.snmp.collector import CPO
from drivers.snmp.telemetry import CpcTelemetry, CpoTelemetry, Laser
from msoctl.access import snmp_target
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import COUNTER, GAUGE, INFO, Families, MetricSpec
from msoctl.exporter.snmp_worker import SnmpWorker
from msoctl.exporter.streams import OpticsStreams
from msoctl.inventory import AUTO, GNMI_SURFACES

log = logging.getLogger(__name__)

ENGINE = ("device", "engine")
LANE = ("device", "port", "lane")
OPTICS_LANE = (*LANE, "source")
OPTICS_PORT = ("device", "port", "source")
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
                      "Optical lane transmit power, in dBm.", OPTICS_LANE)
LANE_RX_POWER = _spec("msoctl_cpo_lane_rx_power_dbm", GAUGE,
                      "Optical lane receive power, in dBm (-100: dark).", OPTICS_LANE)
LANE_TX_BIAS = _spec("msoctl_cpo_lane_tx_bias_amperes", GAUGE,
                     "Optical lane modulator bias current.", OPTICS_LANE)
PORT_TEMPERATURE = _spec("msoctl_cpo_port_temperature_celsius", GAUGE,
                         "Temperature of a port's optics (its module, or on co-packaged "
                         "optics the engine carrying its lanes).", OPTICS_PORT)
PORT_VOLTAGE = _spec("msoctl_cpo_port_supply_voltage_volts", GAUGE,
                     "Supply voltage of a port's optics.", OPTICS_PORT)
THRESHOLD = _spec("msoctl_cpo_threshold", GAUGE,
                  "An alarm or warning threshold of a port's optics, in the quantity's own "
                  "unit (dBm, amperes, degrees Celsius, volts).",
                  (*OPTICS_PORT, "quantity", "level"))
SURFACE = _spec("msoctl_telemetry_surface_info", INFO,
                "A telemetry surface the device serves, and whether its optics are read "
                "from it.", ("device", "surface"))
STREAM_AGE = _spec("msoctl_telemetry_age_seconds", GAUGE,
                   "How old the newest value a switch streamed is (gNMI).",
                   ("device", "source"))
PORT = OPTICS_PORT
PORT_SPEED = _spec("msoctl_cpc_port_speed_bytes_per_second", GAUGE,
                   "A port's speed (ifHighSpeed; OpenConfig's port-speed), in bytes per "
                   "second (400G: 5e10): the FEC's interleave, and so its frame loss per "
                   "codeword error, follows it.", PORT)
PORT_CORRECTED = _spec("msoctl_cpc_port_fec_corrected_codewords_total", COUNTER,
                       "FEC codewords a port corrected (its lanes together).", PORT)
PORT_UNCORRECTABLE = _spec("msoctl_cpc_port_fec_uncorrectable_codewords_total", COUNTER,
                           "FEC codewords a port could not correct.", PORT)
PORT_HISTOGRAM = _spec("msoctl_cpc_port_fec_codewords_total", COUNTER,
                       "FEC codewords a port received with bin symbol errors (bin 16: 16 or "
                       "more).", (*PORT, "bin"))
PORT_PRE_FEC_BER = _spec("msoctl_cpc_port_pre_fec_bit_error_ratio", GAUGE,
                         "A port's bit error ratio before FEC, as the switch computes it.",
                         PORT)
PORT_POST_FEC_BER = _spec("msoctl_cpc_port_post_fec_bit_error_ratio", GAUGE,
                          "A port's bit error ratio after FEC, as the switch computes it.",
                          PORT)
PORT_FLR = _spec("msoctl_cpc_port_frame_loss_ratio", GAUGE,
                 "A port's FEC frame loss ratio, as the switch computes it (SONiC's RATES "
                 "FEC_FLR, from the codeword errors and the interleave of its speed).", PORT)
DROPPED = _spec("msoctl_telemetry_dropped_samples_total", COUNTER,
                "Telemetry samples the exporter dropped as malformed (a sensor type the RFC "
                "does not define, a value out of range, a partial entity table ...), since "
                "it started.", ("device", "source", "reason"))
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
           PORT_TEMPERATURE, PORT_VOLTAGE, THRESHOLD, SURFACE, DROPPED, STREAM_AGE,
           PORT_SPEED, PORT_CORRECTED, PORT_UNCORRECTABLE, PORT_HISTOGRAM, PORT_PRE_FEC_BER,
           PORT_POST_FEC_BER, PORT_FLR,
           ELS_OUTPUT, ELS_BIAS, ELS_VOLTAGE, ELS_TEMPERATURE, ELS_STATE, ELS_MODE, ELS_FAULT,
           CPC_SNR, CPC_BER, CPC_CORRECTED, CPC_UNCORRECTABLE, CPC_HISTOGRAM, CPC_INSERTION_LOSS,
           CPC_EYE_HEIGHT, CPC_EYE_WIDTH, CPC_DEGRADE)


SNMP_WORKER = SnmpWorker()
"""Every CPO probe's collection runs in this one worker process (see its module)."""
STREAMS = OpticsStreams()
"""Every gNMI switch's telemetry stream (see :mod:`.streams`); the exporter command sets
its sample interval."""


class CpoCollector(DeviceCollector):
    kind = "cpo"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        # the prober sends only devices with an snmp or a gnmi section here
        device = self.device
        telemetry = device.telemetry
        if device.gnmi is not None and (telemetry == (AUTO,) or any(
                name in GNMI_SURFACES for name in telemetry)):
            try:
                streamed = STREAMS.reading(device, wait_seconds=self.timeout_seconds)
            except DeviceError:
                if device.snmp is None or telemetry != (AUTO,):
                    raise
                log.info("%s: no gNMI telemetry; reading it over SNMP", device.name)
            else:
                fill_streamed(families, device.name, streamed)
                return
        target = snmp_target(self.device, at_most_seconds=self.timeout_seconds)
        wanted = tuple(name for name in self.device.telemetry
                       if name not in GNMI_SURFACES) or (AUTO,)
        found = SNMP_WORKER.collect(target, budget_seconds=self.timeout_seconds,
                                    device=self.device.name, surfaces=wanted)
        fill_surfaces(families, self.device.name, found.served, found.optics)
        if found.cpo is not None and found.cpc is not None:
            fill(families, self.device.name, found.cpo, found.cpc)


DROPPED_SO_FAR: Counter[tuple[str, str, str]] = Counter()
"""Samples dropped since the exporter started, by (device, source, reason)."""
_DROPPED_LOCK = threading.Lock()


def fill_surfaces(families: Families, name: str, served: Sequence[str],
                  optics: OpticsReading | None, *, cumulative: bool = False) -> None:
    """The surfaces a device serves, and its port optics from the one they were read
    from (the ``source`` label)."""
    for surface in served:
        families.info(SURFACE.name, {"optics": str(optics is not None
                                                   and optics.source == surface).lower()},
                      device=name, surface=surface)
    if optics is None:
        return
    fill_optics(families, name, optics, cumulative=cumulative)


def fill_optics(families: Families, name: str, optics: OpticsReading, *,
                cumulative: bool = False) -> None:
    """One device's port optics, whichever surface gave them. ``cumulative``: the
    reading's drops count since its stream began (a gNMI accumulator's), not for this
    reading alone (an SNMP collection's)."""
    source = optics.source
    with _DROPPED_LOCK:
        for reason, count in optics.dropped.items():
            key = (name, source, reason)
            if cumulative:
                DROPPED_SO_FAR[key] = max(DROPPED_SO_FAR[key], count)
            else:
                DROPPED_SO_FAR[key] += count
        dropped = [(key, count) for key, count in DROPPED_SO_FAR.items() if key[0] == name]
    for (_, dropped_source, reason), count in sorted(dropped):
        families.add(DROPPED.name, count, device=name, source=dropped_source, reason=reason)
    for port in optics.ports:
        at = {"device": name, "port": port.port_name or str(port.port), "source": source}
        families.add(PORT_TEMPERATURE.name, port.temperature_celsius, **at)
        families.add(PORT_VOLTAGE.name, port.supply_voltage_volts, **at)
        for lane in port.lanes:
            families.add(LANE_TX_POWER.name, lane.tx_power_dbm, **at, lane=lane.lane)
            families.add(LANE_RX_POWER.name, lane.rx_power_dbm, **at, lane=lane.lane)
            families.add(LANE_TX_BIAS.name, _amperes(lane.tx_bias_ma), **at, lane=lane.lane)
        for quantity, thresholds in sorted(port.thresholds.items()):
            exported = "tx_bias_amperes" if quantity == "tx_bias_ma" else quantity
            for level, value in thresholds.levels().items():
                families.add(THRESHOLD.name, value / 1000 if quantity == "tx_bias_ma"
                             else value, **at, quantity=exported, level=level)


def fill_streamed(families: Families, name: str, reading: OpticsReading) -> None:
    """A gNMI switch's streamed optics, per-port FEC and external lasers, with their age."""
    fill_surfaces(families, name, (reading.source,), reading, cumulative=True)
    families.add(STREAM_AGE.name, reading.age_seconds, device=name, source=reading.source)
    for port in reading.fec:
        at = {"device": name, "port": port.port_name or str(port.port),
              "source": reading.source}
        families.add(PORT_SPEED.name, None if port.speed_mbps is None
                     else port.speed_mbps * 1e6 / 8, **at)
        families.add(PORT_CORRECTED.name, port.corrected_total, **at)
        families.add(PORT_UNCORRECTABLE.name, port.uncorrectable_total, **at)
        families.add(PORT_PRE_FEC_BER.name, port.pre_fec_ber, **at)
        families.add(PORT_POST_FEC_BER.name, port.post_fec_ber, **at)
        families.add(PORT_FLR.name, port.frame_loss_ratio, **at)
        for bin_number, codewords in zip(HISTOGRAM_BINS, port.codewords_total or (),
                                         strict=False):
            families.add(PORT_HISTOGRAM.name, codewords, **at, bin=bin_number)
    for laser in reading.lasers:
        _fill_laser(families, name, laser)


def _fill_laser(families: Families, name: str, laser: Laser | ExternalLaser) -> dict[str, Any]:
    """What every external laser reports, from either source; its labels."""
    at: dict[str, Any] = {"device": name, "module": laser.module, "lane": laser.lane}
    families.add(ELS_OUTPUT.name, laser.output_power_dbm, **at)
    families.add(ELS_BIAS.name, _amperes(laser.bias_current_ma), **at)
    families.add(ELS_VOLTAGE.name, laser.voltage_volts, **at)
    families.add(ELS_TEMPERATURE.name, laser.temperature_celsius, **at)
    families.state(ELS_STATE.name, laser.state, ELS_STATES, **at)
    return at


def fill(families: Families, name: str, optics: CpoTelemetry, copper: CpcTelemetry) -> None:
    """The families of MSO-CPO-MIB's and MSO-CPC-MIB's collection (what only those carry;
    the lanes' optics come from :func:`fill_optics`)."""
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
    for laser in optics.lasers:
        at = _fill_laser(families, name, laser)
        families.state(ELS_MODE.name, laser.control_mode, ELS_MODES, "mode", **at)
        if laser.faults is not None:
            for fault in ELS_FAULTS:
                families.add(ELS_FAULT.name, fault in laser.faults, **at, fault=fault)
    families.add(CPC_DEGRADE.name, copper.fec_degrade_threshold_ber, device=name)
    speeds = {(lane.port_name or str(lane.port)): lane.port_speed_mbps for lane in copper.lanes}
    for port, speed_mbps in sorted(speeds.items()):
        families.add(PORT_SPEED.name, None if speed_mbps is None else speed_mbps * 1e6 / 8,
                     device=name, port=port, source="mso-cpo")
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
