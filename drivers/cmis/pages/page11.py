"""Page 11h (bank 0): lane status, latched lane flags, lane monitors (lane 1 shown)."""

from drivers.cmis.fields import Field

P = 0x11

DATA_PATH_STATE_LANE1 = Field("data_path_state_lane1", P, 128, kind="bits", mask=0x0F)
FLAGS_TX_FAULT = Field("flags_tx_fault", P, 135, access="cor")
FLAGS_TX_LOS = Field("flags_tx_los", P, 136, access="cor")
FLAGS_RX_LOS = Field("flags_rx_los", P, 147, access="cor")
LANE_FLAGS = Field("lane_flags", P, 134, size=20, kind="bytes", access="cor",
                   doc="every latched lane flag, 134-153")
TX_POWER_LANE1 = Field("tx_power_lane1", P, 154, size=2, kind="u16", scale=0.0001,
                       unit="milliwatts")
TX_BIAS_LANE1 = Field("tx_bias_lane1", P, 170, size=2, kind="u16", scale=0.002,
                      unit="milliamperes")
RX_POWER_LANE1 = Field("rx_power_lane1", P, 186, size=2, kind="u16", scale=0.0001,
                       unit="milliwatts")

FIELDS = (DATA_PATH_STATE_LANE1, LANE_FLAGS, FLAGS_TX_FAULT, FLAGS_TX_LOS, FLAGS_RX_LOS,
          TX_POWER_LANE1, TX_BIAS_LANE1, RX_POWER_LANE1)
