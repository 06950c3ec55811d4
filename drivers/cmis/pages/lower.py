"""Lower memory, bytes 0-127: always mapped, whatever page is selected."""

from drivers.cmis.fields import LOWER, Field

P = LOWER

IDENTIFIER = Field("identifier", P, 0, doc="0x18 QSFP-DD, 0x19 OSFP, 0x1E QSFP+ with CMIS")
REVISION_MAJOR = Field("revision_major", P, 1, kind="bits", mask=0xF0)
REVISION_MINOR = Field("revision_minor", P, 1, kind="bits", mask=0x0F)
FLAT_MEMORY = Field("flat_memory", P, 2, kind="bits", mask=0x80, doc="1 flat, 0 paged")
MODULE_STATE = Field("module_state", P, 3, kind="bits", mask=0x0E)
INTERRUPT_DEASSERTED = Field("interrupt_deasserted", P, 3, kind="bits", mask=0x01)
FLAGS_MODULE = Field("flags_module", P, 8, access="cor",
                     doc="bit 0 state changed, 1 firmware error, 2 data path firmware error")
FLAGS_TEMP_VCC = Field("flags_temp_vcc", P, 9, access="cor",
                       doc="bits 0-3 temperature high/low alarm, high/low warning; 4-7 Vcc")
FLAGS_AUX12 = Field("flags_aux12", P, 10, access="cor")
FLAGS_AUX3_CUSTOM = Field("flags_aux3_custom", P, 11, access="cor")
TEMPERATURE = Field("temperature", P, 14, size=2, kind="s16", scale=1 / 256, unit="celsius",
                    none_raw=-32768)
VCC = Field("vcc", P, 16, size=2, kind="u16", scale=0.0001, unit="volts")
AUX1 = Field("aux1", P, 18, size=2, kind="s16")
AUX2 = Field("aux2", P, 20, size=2, kind="s16")
AUX3 = Field("aux3", P, 22, size=2, kind="s16")
CUSTOM_MONITOR = Field("custom_monitor", P, 24, size=2, kind="s16")
MODULE_CONTROL = Field("module_control", P, 26, access="rw",
                       doc="bit 6 LowPwrAllowRequestHW, 4 LowPwrRequestSW, 3 SoftwareReset")
MASKS = Field("masks", P, 31, size=6, kind="bytes", access="rw")
FIRMWARE_MAJOR = Field("firmware_major", P, 39)
FIRMWARE_MINOR = Field("firmware_minor", P, 40)
FAULT_CAUSE = Field("fault_cause", P, 41)
MEDIA_TYPE = Field("media_type", P, 85, doc="see codes.MEDIA_TYPES")
APPLICATIONS = Field("applications", P, 86, size=32, kind="bytes",
                     doc="application descriptors 1-8, 4 bytes each: HostInterfaceID, "
                         "MediaInterfaceID, host lane count (bits 7-4) and media lane count "
                         "(bits 3-0), host lane assignment options; FFh host ID ends the list")
BANK_SELECT = Field("bank_select", P, 126, access="rw")
PAGE_SELECT = Field("page_select", P, 127, access="rw")

LOW_POWER_ALLOW_HW = 0x40
LOW_POWER_REQUEST_SW = 0x10
SOFTWARE_RESET = 0x08

MODULE_FLAG_BITS = {0: "module_state_changed", 1: "module_firmware_error",
                    2: "data_path_firmware_error"}
TEMP_VCC_FLAG_BITS = {0: "temperature_high_alarm", 1: "temperature_low_alarm",
                      2: "temperature_high_warning", 3: "temperature_low_warning",
                      4: "vcc_high_alarm", 5: "vcc_low_alarm", 6: "vcc_high_warning",
                      7: "vcc_low_warning"}

FIELDS = (IDENTIFIER, REVISION_MAJOR, REVISION_MINOR, FLAT_MEMORY, MODULE_STATE,
          INTERRUPT_DEASSERTED, FLAGS_MODULE, FLAGS_TEMP_VCC, FLAGS_AUX12, FLAGS_AUX3_CUSTOM,
          TEMPERATURE, VCC, AUX1, AUX2, AUX3, CUSTOM_MONITOR, MODULE_CONTROL, MASKS,
          FIRMWARE_MAJOR, FIRMWARE_MINOR, FAULT_CAUSE, MEDIA_TYPE, APPLICATIONS, BANK_SELECT,
          PAGE_SELECT)
