"""The amplifier collector: power in and out, gain, mode, ALS, pumps, module health.

Latched flags are never read. CMIS flags (lower page bytes 8-11, page 11h
134-153) and the amplifier's own (vendor page B0h byte 224) are latched and
cleared when read, so a probe that read them would steal the events that
operators read with ``msoctl amp flags``. A probe reads what ``msoctl amp
status`` reads — :meth:`AmpDriver.status` and the capabilities — whose reads
are planned around every clear-on-read byte (:func:`drivers.cmis.reads.plan_reads`,
and :class:`drivers.cmis.io.PagedIo` never starts a read early across one).

The amplifier's conditions are exported from its *live* status byte (B0h byte
145, the same bits as the latched byte 224, not latched):
``msoctl_amp_condition{condition="input_los"}`` is 1 while the input is lost
and 0 once light is back. A condition that came and went between two scrapes
is therefore not seen here; it stays in the latched flags for ``msoctl amp flags``.
The CMIS module flags (temperature and Vcc alarms, state changed) have no live
twin in CMIS and are not exported; the module temperature and Vcc are, and
alerts compare them with thresholds instead.

A module that does not carry the vendor page (:meth:`AmpDriver.has_amplifier_page`)
is read through its standard CMIS pages only: its identity (with
``amplifier_page="false"``), module state and the monitors it advertises; no
amplifier series is exported for it, conditions included (0 would say "not
holding"), and nothing of B0h is read. A monitor the module does not advertise
(page 01h bytes 159-160) is not exported either.
"""

from __future__ import annotations

from drivers.amp import vendor_page
from drivers.cmis import codes
from msoctl.access import open_amp
from msoctl.exporter.collector import DeviceCollector
from msoctl.exporter.families import GAUGE, INFO, Families, MetricSpec

MODULE_STATES = tuple(codes.MODULE_STATES.values())
MODES = tuple(vendor_page.MODES.values())
ALS_MODES = tuple(vendor_page.ALS_MODES.values())
ALS_STATES = tuple(vendor_page.ALS_STATES.values())
CONDITIONS = tuple(vendor_page.FLAG_BITS.values())


def _gauge(name: str, help_text: str, labels: tuple[str, ...] = ("device",)) -> MetricSpec:
    return MetricSpec(f"msoctl_amp_{name}", GAUGE, help_text, labels)


INFO_METRIC = MetricSpec("msoctl_amp_info", INFO,
                         "Identity of the module: vendor, part number, serial, firmware, CMIS "
                         "revision, and whether it carries the amplifier page (B0h).",
                         ("device",))
MODULE_STATE = _gauge("module_state", "1 for the CMIS module state the module is in, else 0.",
                      ("device", "state"))
MODULE_TEMPERATURE = _gauge("module_temperature_celsius", "Module case temperature.")
MODULE_VCC = _gauge("module_supply_voltage_volts", "Module supply voltage (Vcc).")
INPUT_POWER = _gauge("input_power_dbm", "Total optical input power, in dBm.")
OUTPUT_POWER = _gauge("output_power_dbm", "Total optical output power, in dBm.")
GAIN = _gauge("gain_db", "Actual gain, in dB.")
TARGET_GAIN = _gauge("target_gain_db", "Target gain (constant-gain mode), in dB.")
GAIN_MIN = _gauge("gain_min_db", "Lowest gain the module supports, in dB.")
GAIN_MAX = _gauge("gain_max_db", "Highest gain the module supports, in dB.")
TILT = _gauge("tilt_db", "Actual gain tilt across the band, in dB.")
TARGET_TILT = _gauge("target_tilt_db", "Target gain tilt, in dB.")
TARGET_OUTPUT_POWER = _gauge("target_output_power_dbm",
                             "Target output power (constant-power mode), in dBm.")
MODE = _gauge("mode", "1 for the control mode in force (gain: constant gain, power: constant "
              "output power), else 0.", ("device", "mode"))
OUTPUT_ENABLED = _gauge("output_enabled", "1 when the amplifier's output is enabled.")
ALS_MODE = _gauge("als_mode", "1 for the automatic laser shutdown mode configured (auto, "
                  "manual, disabled), else 0.", ("device", "mode"))
ALS_STATE = _gauge("als_state", "1 for the ALS state the amplifier is in (normal, los-soak, "
                   "shutdown, restart-pulse, output-disabled), else 0.", ("device", "state"))
LOS_THRESHOLD = _gauge("los_threshold_dbm", "Input power under which the input counts as lost.")
PUMP_CURRENT = _gauge("pump_current_amperes", "Pump laser drive current.", ("device", "pump"))
PUMP_TEMPERATURE = _gauge("pump_temperature_celsius", "Pump laser temperature.")
BACK_REFLECTION = _gauge("back_reflection_db",
                         "Power reflected into the output relative to the output, in dB.")
CONDITION = _gauge("condition", "1 while the condition holds, from the live status byte (not "
                   "the latched flags, which probes never read).", ("device", "condition"))

METRICS = (INFO_METRIC, MODULE_STATE, MODULE_TEMPERATURE, MODULE_VCC, INPUT_POWER, OUTPUT_POWER,
           GAIN, TARGET_GAIN, GAIN_MIN, GAIN_MAX, TILT, TARGET_TILT, TARGET_OUTPUT_POWER, MODE,
           OUTPUT_ENABLED, ALS_MODE, ALS_STATE, LOS_THRESHOLD, PUMP_CURRENT, PUMP_TEMPERATURE,
           BACK_REFLECTION, CONDITION)


class AmpCollector(DeviceCollector):
    kind = "amp"
    METRICS = METRICS

    def read(self, families: Families) -> None:
        device = self.device
        driver = open_amp(device, at_most_seconds=self.timeout_seconds)
        self.close_later(driver.close)
        status = driver.status()  # no latched byte: see the module docstring
        caps = driver.capabilities()
        name = device.name
        module, identity = status.module, status.identity
        settings, monitors = status.settings, status.monitors

        families.info(INFO_METRIC.name, {
            "vendor": identity.vendor, "part_number": identity.part_number,
            "serial": identity.serial, "firmware": identity.firmware,
            "cmis_revision": identity.cmis_revision,
            "amplifier_page": str(status.amplifier_page).lower()}, device=name)
        families.state(MODULE_STATE.name, module.state, MODULE_STATES, device=name)
        families.add(MODULE_TEMPERATURE.name, module.temperature_celsius, device=name)
        families.add(MODULE_VCC.name, module.vcc_volts, device=name)
        if not status.amplifier_page:
            return
        families.add(INPUT_POWER.name, monitors.input_power_dbm, device=name)
        families.add(OUTPUT_POWER.name, monitors.output_power_dbm, device=name)
        families.add(GAIN.name, monitors.gain_db, device=name)
        families.add(TARGET_GAIN.name, settings.target_gain_db, device=name)
        families.add(GAIN_MIN.name, caps.gain_min_db, device=name)
        families.add(GAIN_MAX.name, caps.gain_max_db, device=name)
        families.add(TILT.name, monitors.tilt_db, device=name)
        families.add(TARGET_TILT.name, settings.target_tilt_db, device=name)
        families.add(TARGET_OUTPUT_POWER.name, settings.target_output_power_dbm, device=name)
        families.state(MODE.name, settings.mode, MODES, "mode", device=name)
        families.add(OUTPUT_ENABLED.name, settings.output_enabled, device=name)
        families.state(ALS_MODE.name, settings.als_mode, ALS_MODES, "mode", device=name)
        families.state(ALS_STATE.name, monitors.als_state, ALS_STATES, device=name)
        families.add(LOS_THRESHOLD.name, settings.los_threshold_dbm, device=name)
        for number, milliamperes in enumerate(monitors.pump_currents_ma, start=1):
            families.add(PUMP_CURRENT.name, None if milliamperes is None else milliamperes / 1000,
                         device=name, pump=number)
        families.add(PUMP_TEMPERATURE.name, monitors.pump_temperature_celsius, device=name)
        families.add(BACK_REFLECTION.name, monitors.back_reflection_db, device=name)
        for condition in CONDITIONS:
            families.add(CONDITION.name, condition in monitors.conditions, device=name,
                         condition=condition)
