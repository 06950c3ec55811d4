"""The switch's co-packaged optics in SONiC's STATE_DB and COUNTERS_DB, as xcvrd and
syncd write them.

Restated from public SONiC sources: xcvrd's DOM tables (sonic-platform-daemons,
sonic-platform-common's ``get_transceiver_dom_real_value`` and
``get_transceiver_threshold_info`` keys), the CPO split of sonic-net/SONiC
doc/pmon/cpo_dom_schema_hld.md and doc/pmon/xcvrd_cpo.md (the optical engine's data in
the ``TRANSCEIVER_*`` tables, the external laser source's in ``TRANSCEIVER_ELS_*``,
both keyed by the logical port), SAI's port statistics (saiport.h) and sonic-swss's
port_rates.lua (``RATES:<oid>``).

STATE_DB, key the port name (one row per port, :mod:`.optics`):

- ``TRANSCEIVER_DOM_SENSOR``: ``temperature`` (°C) and ``voltage`` (V) of the engine,
  ``txNpower``/``rxNpower`` (dBm, ``-inf`` for no light), ``txNbias`` (mA) for N = 1..8,
  ``N/A`` for a lane the port does not have;
- ``TRANSCEIVER_DOM_THRESHOLD``: ``temp``, ``vcc``, ``txpower``, ``rxpower``, ``txbias``
  each with ``highalarm``, ``highwarning``, ``lowalarm``, ``lowwarning``;
- ``TRANSCEIVER_ELS_INFO``: the laser source module feeding the port (``type``,
  ``manufacturer``, ``model``, ``serial``, ``is_replaceable``);
- ``TRANSCEIVER_ELS_DOM_SENSOR``: the module's ``temperature`` (its hottest laser),
  ``voltage`` and ``icc`` (``N/A``: not modelled) and per laser N of the module
  ``bias_current_monitorN`` (mA), ``opt_power_monitorN`` (dBm, ``-inf`` when off),
  ``voltage_monitorN`` (V);
- ``TRANSCEIVER_ELS_DOM_THRESHOLD``: ``temp``, ``txpower``, ``txbias`` as above (one set
  for every laser of the module), ``N/A`` for ``vcc`` and ``rxpower``;
- ``TRANSCEIVER_ELS_STATUS``: ``module_state`` (``ModuleReady``, ``ModuleFault`` when
  every laser has a fault) and ``txoutput_statusN`` (``True`` while laser N emits).

COUNTERS_DB, per port object id (the same as the queue counters'):
``COUNTERS:<oid>`` gains ``SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES``,
``SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES``, ``SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS``
and ``SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S0``..``S16``; ``RATES:<oid>`` holds
``FEC_PRE_BER``, ``FEC_POST_BER`` and ``FEC_FLR``. Every value is a string.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from emulators.cpo.datasheet import ELS_THRESHOLDS, THRESHOLDS, Limits
from emulators.cpo.optical import LaserReading
from emulators.switch.faces.optics import PortView

DOM_LANES = 8
NOT_AVAILABLE = "N/A"
THRESHOLD_STEMS = (("temp", "temperature_celsius"), ("vcc", "supply_voltage_volts"),
                   ("txpower", "tx_power_dbm"), ("rxpower", "rx_power_dbm"),
                   ("txbias", "tx_bias_ma"))
"""TRANSCEIVER_DOM_THRESHOLD's field stems and the quantity each holds."""
LEVEL_SUFFIXES = (("highalarm", "high_alarm"), ("highwarning", "high_warning"),
                  ("lowalarm", "low_alarm"), ("lowwarning", "low_warning"))
FEC_CORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES"
FEC_UNCORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES"
FEC_SYMBOL_ERRORS = "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS"
FEC_CODEWORDS = "SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S{bin}"
ELS_TYPE = "ELSFP"
ELS_MANUFACTURER = "msoctl emulator"
ELS_MODEL = "ELS-18DBM"


def _number(value: float, digits: int) -> str:
    if math.isnan(value):
        return NOT_AVAILABLE
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    return f"{value:.{digits}f}"


def _thresholds(stems: tuple[tuple[str, str], ...],
                table: Mapping[str, Limits]) -> dict[str, str]:
    row = {}
    for stem, quantity in stems:
        limits = table.get(quantity)
        for suffix, level in LEVEL_SUFFIXES:
            row[f"{stem}{suffix}"] = (NOT_AVAILABLE if limits is None
                                      else _number(getattr(limits, level), 3))
    return row


def state_db(views: list[PortView]) -> dict[str, Any]:
    """The STATE_DB tables above, by table then port."""
    tables: dict[str, dict[str, Any]] = {name: {} for name in (
        "TRANSCEIVER_DOM_SENSOR", "TRANSCEIVER_DOM_THRESHOLD", "TRANSCEIVER_ELS_INFO",
        "TRANSCEIVER_ELS_DOM_SENSOR", "TRANSCEIVER_ELS_DOM_THRESHOLD",
        "TRANSCEIVER_ELS_STATUS")}
    oe_thresholds = _thresholds(THRESHOLD_STEMS, THRESHOLDS)
    els_thresholds = _thresholds(THRESHOLD_STEMS, ELS_THRESHOLDS)
    for view in views:
        sensor = {"temperature": _number(view.engine.temperature_celsius, 3),
                  "voltage": _number(view.engine.supply_voltage_volts, 4)}
        lanes = {lane.lane: lane for lane in view.lanes}
        for number in range(1, DOM_LANES + 1):
            lane = lanes.get(number)
            sensor[f"tx{number}power"] = NOT_AVAILABLE if lane is None \
                else _number(lane.tx_power_dbm, 3)
            sensor[f"rx{number}power"] = NOT_AVAILABLE if lane is None \
                else _number(lane.rx_power_dbm, 3)
            sensor[f"tx{number}bias"] = NOT_AVAILABLE if lane is None \
                else _number(lane.tx_bias_ma, 3)
        tables["TRANSCEIVER_DOM_SENSOR"][view.name] = sensor
        tables["TRANSCEIVER_DOM_THRESHOLD"][view.name] = dict(oe_thresholds)
        if view.lasers:
            module = view.lasers[0].module
            tables["TRANSCEIVER_ELS_INFO"][view.name] = {
                "type": ELS_TYPE, "manufacturer": ELS_MANUFACTURER, "model": ELS_MODEL,
                "serial": f"EMU{module:05d}", "is_replaceable": "True"}
            tables["TRANSCEIVER_ELS_DOM_THRESHOLD"][view.name] = dict(els_thresholds)
    return tables


def add_els(tables: dict[str, Any], views: list[PortView],
            lasers: tuple[LaserReading, ...]) -> None:
    """The ELS sensor and status rows of each port: every laser of its module."""
    by_module: dict[int, list[LaserReading]] = {}
    for laser in lasers:
        by_module.setdefault(laser.module, []).append(laser)
    for view in views:
        if not view.lasers:
            continue
        module = sorted(by_module[view.lasers[0].module], key=lambda laser: laser.lane)
        sensor = {"temperature": _number(max(laser.temperature_celsius for laser in module), 3),
                  "voltage": NOT_AVAILABLE, "icc": NOT_AVAILABLE}
        status = {"module_state": "ModuleFault" if all(laser.faults for laser in module)
                  else "ModuleReady"}
        for laser in module:
            sensor[f"bias_current_monitor{laser.lane}"] = _number(laser.bias_current_ma, 3)
            sensor[f"opt_power_monitor{laser.lane}"] = _number(laser.output_power_dbm, 3)
            sensor[f"voltage_monitor{laser.lane}"] = _number(laser.voltage_volts, 3)
            status[f"txoutput_status{laser.lane}"] = str(laser.state != "off")
        tables["TRANSCEIVER_ELS_DOM_SENSOR"][view.name] = sensor
        tables["TRANSCEIVER_ELS_STATUS"][view.name] = status


def add_fec(counters_db: dict[str, Any], views: list[PortView],
            oid_of: Mapping[str, str]) -> None:
    """Each port's FEC statistics into ``COUNTERS`` and its BER into ``RATES``."""
    counters = counters_db.setdefault("COUNTERS", {})
    rates = counters_db.setdefault("RATES", {})
    for view in views:
        oid = oid_of.get(view.name)
        if oid is None:
            continue
        fec = view.fec
        row = counters.setdefault(oid, {})
        row[FEC_CORRECTABLE] = str(fec.corrected)
        row[FEC_UNCORRECTABLE] = str(fec.uncorrectable)
        row[FEC_SYMBOL_ERRORS] = str(sum(k * n for k, n in enumerate(fec.histogram)))
        for index, count in enumerate(fec.histogram):
            row[FEC_CODEWORDS.format(bin=index)] = str(count)
        rates.setdefault(oid, {}).update({
            "FEC_PRE_BER": f"{fec.pre_fec_ber:.14g}", "FEC_POST_BER": f"{fec.post_fec_ber:.14g}",
            "FEC_FLR": f"{fec.frame_loss_ratio:.14g}"})
