"""Page 01h: advertising (supported pages, controls, flags, monitors, durations, lanes).

CMIS 5.2 section 8.4. Every duration byte holds two codes of codes.DURATION_SECONDS.
"""

from drivers.cmis.fields import Field

P = 0x01

INACTIVE_FIRMWARE_MAJOR = Field("inactive_firmware_major", P, 128)
INACTIVE_FIRMWARE_MINOR = Field("inactive_firmware_minor", P, 129)
HARDWARE_MAJOR = Field("hardware_major", P, 130)
HARDWARE_MINOR = Field("hardware_minor", P, 131)
SUPPORTED_PAGES = Field("supported_pages", P, 142,
                        doc="bit 2 page 03h, bit 5 pages 13h-14h, bit 6 VDM pages 20h-2Fh; "
                            "bits 1-0 banks supported (0: bank 0, 1: banks 0-1, 2: banks 0-3)")
MODULE_CHARACTERISTICS = Field("module_characteristics", P, 145,
                               doc="bit 7 cooled transmitter (CoolingImplemented)")
DP_DEINIT_DURATION = Field("dp_deinit_duration", P, 144, kind="bits", mask=0xF0,
                           doc="MaxDurationDPDeinit")
DP_INIT_DURATION = Field("dp_init_duration", P, 144, kind="bits", mask=0x0F,
                         doc="MaxDurationDPInit")
RX_CHARACTERISTICS = Field("rx_characteristics", P, 151,
                           doc="bit 7 APD detector (0 PIN); bit 4 Rx power monitor measures "
                               "average power (0 OMA); bit 3 Rx LOS responds to average power "
                               "(0 OMA); bit 2 fast Rx LOS")
CONTROLS_SUPPORT = Field("controls_support", P, 155, doc="bit 1 Tx output disable implemented")
TX_FLAGS_SUPPORT = Field("tx_flags_support", P, 157, doc="bit 0 Tx fault, bit 1 Tx LOS flag")
RX_FLAGS_SUPPORT = Field("rx_flags_support", P, 158, doc="bit 1 Rx LOS flag")
MODULE_MONITOR_SUPPORT = Field("module_monitor_support", P, 159,
                               doc="bit 0 temperature, 1 Vcc, 2-4 aux 1-3, 5 custom")
LANE_MONITOR_SUPPORT = Field("lane_monitor_support", P, 160,
                             doc="bit 0 Tx bias, 1 Tx power, 2 Rx power; bits 4-3 Tx bias "
                                 "scaling: the 2 uA step times 1, 2 or 4 (3 reserved)")
PWR_DN_DURATION = Field("module_pwr_dn_duration", P, 167, kind="bits", mask=0xF0,
                        doc="duration code, see codes.DURATION_SECONDS")
PWR_UP_DURATION = Field("module_pwr_up_duration", P, 167, kind="bits", mask=0x0F)
DP_TX_TURN_OFF_DURATION = Field("dp_tx_turn_off_duration", P, 168, kind="bits", mask=0xF0,
                                doc="MaxDurationDPTxTurnOff")
DP_TX_TURN_ON_DURATION = Field("dp_tx_turn_on_duration", P, 168, kind="bits", mask=0x0F,
                               doc="MaxDurationDPTxTurnOn")
MEDIA_LANE_ASSIGNMENT = Field("media_lane_assignment", P, 176, size=8, kind="bytes",
                              doc="applications 1-8: bit n set = the application's media "
                                  "lanes may start at media lane n+1")

COOLING_IMPLEMENTED = 0x80
APD_DETECTOR = 0x80
RX_POWER_AVERAGE = 0x10
RX_LOS_AVERAGE = 0x08

PAGE_03H_SUPPORTED = 0x04
DIAGNOSTIC_PAGES_SUPPORTED = 0x20
VDM_PAGES_SUPPORTED = 0x40
BANKS_SUPPORTED_MASK = 0x03

TX_DISABLE_IMPLEMENTED = 0x02
TX_FAULT_FLAG_SUPPORTED = 0x01
TX_LOS_FLAG_SUPPORTED = 0x02
RX_LOS_FLAG_SUPPORTED = 0x02

MODULE_MONITOR_BITS = {0: "temperature", 1: "vcc", 2: "aux1", 3: "aux2", 4: "aux3",
                       5: "custom"}
LANE_MONITOR_BITS = {0: "tx_bias", 1: "tx_power", 2: "rx_power"}
"""Monitor names as the page 02h threshold groups and page 11h monitors name them."""

TX_BIAS_SCALING_SHIFT = 3
TX_BIAS_MULTIPLIERS = {0: 1, 1: 2, 2: 4}

FIELDS = (INACTIVE_FIRMWARE_MAJOR, INACTIVE_FIRMWARE_MINOR, HARDWARE_MAJOR, HARDWARE_MINOR,
          SUPPORTED_PAGES, MODULE_CHARACTERISTICS, DP_DEINIT_DURATION, DP_INIT_DURATION,
          RX_CHARACTERISTICS, CONTROLS_SUPPORT, TX_FLAGS_SUPPORT, RX_FLAGS_SUPPORT,
          MODULE_MONITOR_SUPPORT, LANE_MONITOR_SUPPORT,
          PWR_DN_DURATION, PWR_UP_DURATION, DP_TX_TURN_OFF_DURATION, DP_TX_TURN_ON_DURATION,
          MEDIA_LANE_ASSIGNMENT)
