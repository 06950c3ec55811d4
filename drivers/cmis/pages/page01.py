"""Page 01h: advertising (supported pages, monitors, state-machine durations)."""

from drivers.cmis.fields import Field

P = 0x01

INACTIVE_FIRMWARE_MAJOR = Field("inactive_firmware_major", P, 128)
INACTIVE_FIRMWARE_MINOR = Field("inactive_firmware_minor", P, 129)
HARDWARE_MAJOR = Field("hardware_major", P, 130)
HARDWARE_MINOR = Field("hardware_minor", P, 131)
SUPPORTED_PAGES = Field("supported_pages", P, 142,
                        doc="bit 2 page 03h, bit 6 VDM pages; bits 1-0 banks supported")
MODULE_MONITOR_SUPPORT = Field("module_monitor_support", P, 159,
                               doc="bit 0 temperature, 1 Vcc, 2-4 aux 1-3, 5 custom")
LANE_MONITOR_SUPPORT = Field("lane_monitor_support", P, 160,
                             doc="bit 0 Tx bias, 1 Tx power, 2 Rx power; bits 4-3 bias scaling")
PWR_DN_DURATION = Field("module_pwr_dn_duration", P, 167, kind="bits", mask=0xF0,
                        doc="duration code, see codes.DURATION_SECONDS")
PWR_UP_DURATION = Field("module_pwr_up_duration", P, 167, kind="bits", mask=0x0F)

FIELDS = (INACTIVE_FIRMWARE_MAJOR, INACTIVE_FIRMWARE_MINOR, HARDWARE_MAJOR, HARDWARE_MINOR,
          SUPPORTED_PAGES, MODULE_MONITOR_SUPPORT, LANE_MONITOR_SUPPORT, PWR_DN_DURATION,
          PWR_UP_DURATION)
