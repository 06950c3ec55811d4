"""The amplifier's vendor page, B0h: msoctl's definition, for pluggable EDFAs.

CMIS leaves pages in the custom range to the module maker; this is ours.
Multi-byte values are big-endian like the rest of CMIS. Powers are signed
0.01 dBm, gains and tilt signed or unsigned 0.01 dB, currents 0.1 mA,
temperatures signed 1/256 degC, times as stated. A power of -32768 (0x8000)
means "no reading".

| bytes   | access | field                  | meaning                                              |
|---------|--------|------------------------|------------------------------------------------------|
| 128-129 | ro     | input_power            | s16, 0.01 dBm, total input                           |
| 130-131 | ro     | output_power           | s16, 0.01 dBm, total output                          |
| 132-133 | ro     | actual_gain            | s16, 0.01 dB                                         |
| 134-135 | ro     | actual_tilt            | s16, 0.01 dB                                         |
| 136-137 | ro     | pump1_current          | u16, 0.1 mA                                          |
| 138-139 | ro     | pump2_current          | u16, 0.1 mA (0 with one pump)                        |
| 140-141 | ro     | pump_temperature       | s16, 1/256 degC                                      |
| 142-143 | ro     | back_reflection        | s16, 0.01 dB, reflected relative to output           |
| 144     | ro     | als_state              | 0 normal, 1 LOS soak, 2 shut down, 3 restart pulse,  |
|         |        |                        | 4 output disabled (by control, Tx disable or low     |
|         |        |                        | power, or while the data path is not activated)      |
| 145     | ro     | amp_status             | live conditions, same bits as amp_flags, not latched |
| 146     | rw     | amp_control            | bit 0 output enable; bits 2-1 mode: 0 constant gain, |
|         |        |                        | 1 constant output power                              |
| 147-148 | rw     | target_gain            | u16, 0.01 dB                                         |
| 149-150 | rw     | target_output_power    | s16, 0.01 dBm                                        |
| 151-152 | rw     | target_tilt            | s16, 0.01 dB across the band                         |
| 153     | rw     | als_mode               | 0 disabled, 1 automatic restart, 2 manual restart    |
| 154     | wo     | als_command            | bit 0 restart now; self-clearing, reads 0            |
| 155-156 | rw     | als_los_soak           | u16, ms of lost input before the output shuts        |
| 157-158 | rw     | als_restart_interval   | u16, s between automatic restart pulses              |
| 159-160 | rw     | als_restart_pulse      | u16, ms a restart pulse lasts                        |
| 161-162 | rw     | los_threshold          | s16, 0.01 dBm: input below this is loss of signal    |
| 163-164 | rw     | pump_current_limit     | u16, 0.1 mA: over-current flag threshold             |
| 165-166 | rw     | pump_temperature_limit | s16, 1/256 degC: over-temperature flag threshold     |
| 167-168 | rw     | back_reflection_limit  | s16, 0.01 dB (reflected/output): flag threshold      |
| 176-177 | ro     | gain_min               | u16, 0.01 dB: the module's gain range ...            |
| 178-179 | ro     | gain_max               | u16, 0.01 dB                                         |
| 180-181 | ro     | output_power_max       | s16, 0.01 dBm: total output never exceeds this       |
| 182-183 | ro     | tilt_min               | s16, 0.01 dB                                         |
| 184-185 | ro     | tilt_max               | s16, 0.01 dB                                         |
| 186     | ro     | pump_count             | number of pumps (1 or 2)                             |
| 187-188 | ro     | pump_current_max       | u16, 0.1 mA: the pump driver's hardware limit        |
| 224     | cor    | amp_flags              | latched, cleared when read: bit 0 input LOS, 1 ALS   |
|         |        |                        | shut down, 2 gain out of range, 3 pump over-current, |
|         |        |                        | 4 pump over-temperature, 5 back-reflection high,     |
|         |        |                        | 6 pump failure (a pump gave out)                     |
| 225     | rw     | amp_flag_mask          | 1 masks the flag from the interrupt                  |

Monitors come first and controls right after them, so that a status poll
reads both in one transaction starting at byte 126 (bank and page select,
which verifies the page for free); the latched flags sit apart at 224, where
no poll reads through them. Other bytes are reserved and read 0.

The page number B0h lies in the range CMIS leaves to the vendor (verify
against the CMIS revision a real module claims before relying on it).

CMIS does not advertise custom pages (page 01h byte 142 covers none of them), so
a host cannot ask a module whether it has this one. The driver reads it only on a
module that identifies, on page 00h, as one that carries it (:data:`CARRIERS`);
on any other CMIS module it reads the standard pages alone.
"""

from drivers.cmis.fields import Field

PAGE = 0xB0
P = PAGE
NO_READING = -32768

CARRIERS: tuple[tuple[str, str], ...] = (
    ("MegaScaleOut", "MSO-EDFA-"),
)
"""The modules that carry this page, as page 00h names them: (vendor name, bytes 129-144,
exactly; the start of the part number, bytes 148-163)."""


def carried_by(vendor: str | None, part_number: str | None) -> bool:
    """Whether a module of this vendor name and part number carries the page."""
    return vendor is not None and part_number is not None and any(
        vendor == name and part_number.startswith(prefix) for name, prefix in CARRIERS)

AMP_CONTROL = Field("amp_control", P, 146, access="rw")
OUTPUT_ENABLE = Field("output_enable", P, 146, kind="bits", mask=0x01, access="rw")
MODE = Field("mode", P, 146, kind="bits", mask=0x06, access="rw")
TARGET_GAIN = Field("target_gain", P, 147, size=2, kind="u16", scale=0.01, unit="db",
                    access="rw")
TARGET_OUTPUT_POWER = Field("target_output_power", P, 149, size=2, kind="s16", scale=0.01,
                            unit="dbm", access="rw")
TARGET_TILT = Field("target_tilt", P, 151, size=2, kind="s16", scale=0.01, unit="db",
                    access="rw")
ALS_MODE = Field("als_mode", P, 153, access="rw")
ALS_COMMAND = Field("als_command", P, 154, access="wo")
ALS_LOS_SOAK = Field("als_los_soak", P, 155, size=2, kind="u16", scale=0.001, unit="seconds",
                     access="rw")
ALS_RESTART_INTERVAL = Field("als_restart_interval", P, 157, size=2, kind="u16",
                             unit="seconds", access="rw")
ALS_RESTART_PULSE = Field("als_restart_pulse", P, 159, size=2, kind="u16", scale=0.001,
                          unit="seconds", access="rw")
LOS_THRESHOLD = Field("los_threshold", P, 161, size=2, kind="s16", scale=0.01, unit="dbm",
                      access="rw")
PUMP_CURRENT_LIMIT = Field("pump_current_limit", P, 163, size=2, kind="u16", scale=0.1,
                           unit="milliamperes", access="rw")
PUMP_TEMPERATURE_LIMIT = Field("pump_temperature_limit", P, 165, size=2, kind="s16",
                               scale=1 / 256, unit="celsius", access="rw")
BACK_REFLECTION_LIMIT = Field("back_reflection_limit", P, 167, size=2, kind="s16", scale=0.01,
                              unit="db", access="rw")
GAIN_MIN = Field("gain_min", P, 176, size=2, kind="u16", scale=0.01, unit="db")
GAIN_MAX = Field("gain_max", P, 178, size=2, kind="u16", scale=0.01, unit="db")
OUTPUT_POWER_MAX = Field("output_power_max", P, 180, size=2, kind="s16", scale=0.01,
                         unit="dbm")
TILT_MIN = Field("tilt_min", P, 182, size=2, kind="s16", scale=0.01, unit="db")
TILT_MAX = Field("tilt_max", P, 184, size=2, kind="s16", scale=0.01, unit="db")
PUMP_COUNT = Field("pump_count", P, 186)
PUMP_CURRENT_MAX = Field("pump_current_max", P, 187, size=2, kind="u16", scale=0.1,
                         unit="milliamperes")
INPUT_POWER = Field("input_power", P, 128, size=2, kind="s16", scale=0.01, unit="dbm",
                    none_raw=NO_READING)
OUTPUT_POWER = Field("output_power", P, 130, size=2, kind="s16", scale=0.01, unit="dbm",
                     none_raw=NO_READING)
ACTUAL_GAIN = Field("actual_gain", P, 132, size=2, kind="s16", scale=0.01, unit="db",
                    none_raw=NO_READING)
ACTUAL_TILT = Field("actual_tilt", P, 134, size=2, kind="s16", scale=0.01, unit="db",
                    none_raw=NO_READING)
PUMP1_CURRENT = Field("pump1_current", P, 136, size=2, kind="u16", scale=0.1,
                      unit="milliamperes")
PUMP2_CURRENT = Field("pump2_current", P, 138, size=2, kind="u16", scale=0.1,
                      unit="milliamperes")
PUMP_TEMPERATURE = Field("pump_temperature", P, 140, size=2, kind="s16", scale=1 / 256,
                         unit="celsius", none_raw=NO_READING)
BACK_REFLECTION = Field("back_reflection", P, 142, size=2, kind="s16", scale=0.01, unit="db",
                        none_raw=NO_READING)
ALS_STATE = Field("als_state", P, 144)
AMP_STATUS = Field("amp_status", P, 145)
AMP_FLAGS = Field("amp_flags", P, 224, access="cor")
AMP_FLAG_MASK = Field("amp_flag_mask", P, 225, access="rw")

MODES = {0: "gain", 1: "power"}
ALS_MODES = {0: "disabled", 1: "auto", 2: "manual"}
ALS_STATES = {0: "normal", 1: "los-soak", 2: "shutdown", 3: "restart-pulse", 4: "output-disabled"}
ALS_RESTART_NOW = 0x01
FLAG_BITS = {0: "input_los", 1: "als_shutdown", 2: "gain_out_of_range",
             3: "pump_over_current", 4: "pump_over_temperature", 5: "back_reflection_high",
             6: "pump_failure"}

CONTROLS = (AMP_CONTROL, TARGET_GAIN, TARGET_OUTPUT_POWER, TARGET_TILT, ALS_MODE, ALS_COMMAND,
            ALS_LOS_SOAK, ALS_RESTART_INTERVAL, ALS_RESTART_PULSE, LOS_THRESHOLD,
            PUMP_CURRENT_LIMIT, PUMP_TEMPERATURE_LIMIT, BACK_REFLECTION_LIMIT)
CAPABILITIES = (GAIN_MIN, GAIN_MAX, OUTPUT_POWER_MAX, TILT_MIN, TILT_MAX, PUMP_COUNT,
                PUMP_CURRENT_MAX)
MONITORS = (INPUT_POWER, OUTPUT_POWER, ACTUAL_GAIN, ACTUAL_TILT, PUMP1_CURRENT, PUMP2_CURRENT,
            PUMP_TEMPERATURE, BACK_REFLECTION, ALS_STATE, AMP_STATUS)

FIELDS = (*CONTROLS, OUTPUT_ENABLE, MODE, *CAPABILITIES, *MONITORS, AMP_FLAGS, AMP_FLAG_MASK)
