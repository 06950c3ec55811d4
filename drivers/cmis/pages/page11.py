"""Page 11h (bank 0): lane status, latched lane flags, lane monitors (lane 1 shown).

CMIS 5.2 page 11h. Lane 1 is bit 0 of a per-lane flag byte; the data path
states are nibbles, lane 1 in bits 3-0 of byte 128 (see codes.DATA_PATH_STATES).
"""

from drivers.cmis.fields import Field

P = 0x11

DATA_PATH_STATE_LANE1 = Field("data_path_state_lane1", P, 128, kind="bits", mask=0x0F)
DATA_PATH_STATES = Field("data_path_states", P, 128, size=4, kind="bytes",
                         doc="one nibble per lane, lanes 1-8")
FLAGS_TX_FAULT = Field("flags_tx_fault", P, 135, access="cor")
FLAGS_TX_LOS = Field("flags_tx_los", P, 136, access="cor")
FLAGS_RX_LOS = Field("flags_rx_los", P, 147, access="cor")
FLAGS_RX_POWER_HIGH_ALARM = Field("flags_rx_power_high_alarm", P, 149, access="cor")
FLAGS_RX_POWER_LOW_ALARM = Field("flags_rx_power_low_alarm", P, 150, access="cor")
FLAGS_RX_POWER_HIGH_WARNING = Field("flags_rx_power_high_warning", P, 151, access="cor")
FLAGS_RX_POWER_LOW_WARNING = Field("flags_rx_power_low_warning", P, 152, access="cor")
LANE_FLAGS = Field("lane_flags", P, 134, size=20, kind="bytes", access="cor",
                   doc="every latched lane flag, 134-153")
TX_POWER_LANE1 = Field("tx_power_lane1", P, 154, size=2, kind="u16", scale=0.0001,
                       unit="milliwatts")
TX_BIAS_LANE1 = Field("tx_bias_lane1", P, 170, size=2, kind="u16", scale=0.002,
                      unit="milliamperes")
RX_POWER_LANE1 = Field("rx_power_lane1", P, 186, size=2, kind="u16", scale=0.0001,
                       unit="milliwatts")
ACTIVE_CONTROL_SET = Field("active_control_set", P, 206, size=8, kind="bytes",
                           doc="lanes 1-8: bits 7-4 AppSel code in use (0: lane in no data "
                               "path), bits 3-1 DataPathID (first lane), bit 0 explicit control")

FIELDS = (DATA_PATH_STATE_LANE1, DATA_PATH_STATES, LANE_FLAGS, FLAGS_TX_FAULT, FLAGS_TX_LOS,
          FLAGS_RX_LOS, FLAGS_RX_POWER_HIGH_ALARM, FLAGS_RX_POWER_LOW_ALARM,
          FLAGS_RX_POWER_HIGH_WARNING, FLAGS_RX_POWER_LOW_WARNING, TX_POWER_LANE1,
          TX_BIAS_LANE1, RX_POWER_LANE1, ACTIVE_CONTROL_SET)
