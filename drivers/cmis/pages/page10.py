"""Page 10h (bank 0): lane controls; one bit per lane, lane 1 in bit 0."""

from drivers.cmis.fields import Field

P = 0x10

DATA_PATH_DEINIT = Field("data_path_deinit", P, 128, access="rw")
TX_DISABLE = Field("tx_disable", P, 130, access="rw")
APPLY_DP_INIT = Field("apply_dp_init", P, 143, access="wo")

FIELDS = (DATA_PATH_DEINIT, TX_DISABLE, APPLY_DP_INIT)
