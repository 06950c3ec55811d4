"""Where a switch's optics and FEC are in the two gNMI models the reader takes.

Written from the published models, independently of the emulator's tables:

- **OpenConfig** (openconfig/public release/models): openconfig-platform's component
  ``state/temperature`` (°C, decimal64 1 digit); openconfig-platform-transceiver's
  ``transceiver/state/supply-voltage`` (V), ``physical-channels/channel[index]/state``
  ``output-power`` and ``input-power`` (dBm) and ``laser-bias-current`` (mA), each an
  avg-min-max-instant container of which ``instant`` is read;
  ``thresholds/threshold[severity]/state`` with ``<stem>-upper``/``<stem>-lower``; the
  interface's ``state/transceiver`` naming its transceiver component (and
  openconfig-platform-port's ``state/hardware-port``); openconfig-if-ethernet's
  ``ethernet/state/counters/fec-corrected-blocks``, ``fec-uncorrectable-blocks``,
  ``ethernet/state/pre-fec-ber`` and ``post-fec-ber``, and the port's speed
  ``ethernet/state/port-speed`` (an ETHERNET_SPEED identity).
- **SONiC** (sonic-gnmi's database paths ``/sonic-db:DB/localhost/TABLE/KEY/FIELD``):
  STATE_DB's ``TRANSCEIVER_DOM_SENSOR``, ``TRANSCEIVER_DOM_THRESHOLD`` (xcvrd's field
  names), the CPO external laser tables ``TRANSCEIVER_ELS_INFO``,
  ``TRANSCEIVER_ELS_DOM_SENSOR`` and ``TRANSCEIVER_ELS_STATUS``; COUNTERS_DB's
  ``COUNTERS_PORT_NAME_MAP``, ``COUNTERS:<oid>`` (SAI port FEC statistics) and
  ``RATES:<oid>`` (sonic-swss port_rates.lua's ``FEC_PRE_BER``, ``FEC_POST_BER``,
  ``FEC_FLR``); CONFIG_DB's ``PORT`` ``speed`` (Mb/s).

:func:`subscription_paths` gives one model's SubscriptionList: SAMPLE for monitors and
counters, ON_CHANGE for what changes by events (thresholds, the port-to-transceiver
association, the laser's status, the name map, the speed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MODELS = ("openconfig", "sonic")
SAMPLE_SECONDS = 10.0

LIST_KEYS: Mapping[str, str] = {"component": "name", "subcomponent": "name",
                                "channel": "index", "threshold": "severity",
                                "interface": "name"}
"""OpenConfig lists the reader meets, and their key leaf (for JSON subtrees)."""

CHANNEL_QUANTITIES: Mapping[str, str] = {"output-power": "tx_power_dbm",
                                         "input-power": "rx_power_dbm",
                                         "laser-bias-current": "tx_bias_ma"}
THRESHOLD_STEMS: Mapping[str, str] = {"module-temperature": "temperature_celsius",
                                      "supply-voltage": "supply_voltage_volts",
                                      "output-power": "tx_power_dbm",
                                      "input-power": "rx_power_dbm",
                                      "laser-bias-current": "tx_bias_ma"}
SEVERITY_LEVELS: Mapping[str, str] = {"CRITICAL": "alarm", "MAJOR": "alarm",
                                      "MINOR": "warning", "WARNING": "warning"}
"""openconfig-alarm-types severities: the highest two as alarm levels, the others as
warning levels (CRITICAL over MAJOR, WARNING over MINOR where both are given)."""
SPEEDS_MBPS: Mapping[str, int] = {
    "SPEED_10MB": 10, "SPEED_100MB": 100, "SPEED_1GB": 1_000, "SPEED_2500MB": 2_500,
    "SPEED_5GB": 5_000, "SPEED_10GB": 10_000, "SPEED_25GB": 25_000, "SPEED_40GB": 40_000,
    "SPEED_50GB": 50_000, "SPEED_100GB": 100_000, "SPEED_200GB": 200_000,
    "SPEED_400GB": 400_000, "SPEED_600GB": 600_000, "SPEED_800GB": 800_000,
    "SPEED_1600GB": 1_600_000}
"""openconfig-if-ethernet's ETHERNET_SPEED identities."""

DOM_LANES = 8
DOM_SENSOR_FIELDS = frozenset({"temperature", "voltage", "laser_temperature",
                               *(f"{kind}{n}{what}" for n in range(1, DOM_LANES + 1)
                                 for kind, what in (("tx", "power"), ("rx", "power"),
                                                    ("tx", "bias")))})
DOM_THRESHOLD_STEMS: Mapping[str, str] = {"temp": "temperature_celsius",
                                          "vcc": "supply_voltage_volts",
                                          "txpower": "tx_power_dbm",
                                          "rxpower": "rx_power_dbm",
                                          "txbias": "tx_bias_ma"}
DOM_THRESHOLD_LEVELS: Mapping[str, str] = {"highalarm": "high_alarm",
                                           "highwarning": "high_warning",
                                           "lowalarm": "low_alarm",
                                           "lowwarning": "low_warning"}
ELS_MONITORS: Mapping[str, str] = {"bias_current_monitor": "bias_current_ma",
                                   "opt_power_monitor": "output_power_dbm",
                                   "voltage_monitor": "voltage_volts"}
"""TRANSCEIVER_ELS_DOM_SENSOR's per-laser fields (``<stem>N``, laser N of the module)."""
ELS_SENSOR_FIELDS = frozenset({"temperature", "voltage", "icc", "power_consumption",
                               "laser_mpd", "tec_voltage_laser"})
ELS_INFO_FIELDS = frozenset({"type", "manufacturer", "model", "serial", "vendor_rev",
                             "hardware_rev", "is_replaceable", "vendor_oui", "vendor_date"})
FEC_CORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_CORRECTABLE_FRAMES"
FEC_UNCORRECTABLE = "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES"
FEC_CODEWORDS = "SAI_PORT_STAT_IF_IN_FEC_CODEWORD_ERRORS_S"
FEC_BINS = 17
RATE_FIELDS: Mapping[str, str] = {"FEC_PRE_BER": "pre_fec_ber",
                                  "FEC_POST_BER": "post_fec_ber",
                                  "FEC_FLR": "frame_loss_ratio"}

OC_COMPONENT = "/components/component[name=*]"
OC_CHANNEL = f"{OC_COMPONENT}/transceiver/physical-channels/channel[index=*]/state"
OC_INTERFACE = "/interfaces/interface[name=*]"
SONIC_STATE = "/sonic-db:STATE_DB/localhost"
SONIC_COUNTERS = "/sonic-db:COUNTERS_DB/localhost"


@dataclass(frozen=True)
class SubscriptionPath:
    """One Subscription of a STREAM SubscriptionList."""

    path: str
    mode: str
    """SAMPLE or ON_CHANGE."""
    sample_interval_seconds: float | None = None


def _sample(path: str, seconds: float) -> SubscriptionPath:
    return SubscriptionPath(path, "SAMPLE", seconds)


def _on_change(path: str) -> SubscriptionPath:
    return SubscriptionPath(path, "ON_CHANGE")


def subscription_paths(model: str, *, sample_seconds: float = SAMPLE_SECONDS
                       ) -> tuple[SubscriptionPath, ...]:
    """The STREAM subscriptions that read ``model``'s optics and FEC (one of
    :data:`MODELS`): monitors and counters sampled every ``sample_seconds``, states on
    change. ValueError for another model."""
    if model == "openconfig":
        return (
            _sample(f"{OC_COMPONENT}/state/temperature/instant", sample_seconds),
            _sample(f"{OC_COMPONENT}/transceiver/state/supply-voltage/instant", sample_seconds),
            *(_sample(f"{OC_CHANNEL}/{leaf}/instant", sample_seconds)
              for leaf in CHANNEL_QUANTITIES),
            _sample(f"{OC_INTERFACE}/ethernet/state/counters/fec-corrected-blocks",
                    sample_seconds),
            _sample(f"{OC_INTERFACE}/ethernet/state/counters/fec-uncorrectable-blocks",
                    sample_seconds),
            _sample(f"{OC_INTERFACE}/ethernet/state/pre-fec-ber/instant", sample_seconds),
            _sample(f"{OC_INTERFACE}/ethernet/state/post-fec-ber/instant", sample_seconds),
            _on_change(f"{OC_COMPONENT}/transceiver/thresholds"),
            _on_change(f"{OC_INTERFACE}/state/transceiver"),
            _on_change(f"{OC_INTERFACE}/ethernet/state/port-speed"),
        )
    if model == "sonic":
        return (
            _sample(f"{SONIC_STATE}/TRANSCEIVER_DOM_SENSOR", sample_seconds),
            _sample(f"{SONIC_STATE}/TRANSCEIVER_ELS_DOM_SENSOR", sample_seconds),
            _sample(f"{SONIC_COUNTERS}/COUNTERS", sample_seconds),
            _sample(f"{SONIC_COUNTERS}/RATES", sample_seconds),
            _on_change(f"{SONIC_STATE}/TRANSCEIVER_DOM_THRESHOLD"),
            _on_change(f"{SONIC_STATE}/TRANSCEIVER_ELS_INFO"),
            _on_change(f"{SONIC_STATE}/TRANSCEIVER_ELS_STATUS"),
            _on_change(f"{SONIC_COUNTERS}/COUNTERS_PORT_NAME_MAP"),
            _on_change("/sonic-db:CONFIG_DB/localhost/PORT"),
        )
    raise ValueError(f"model: one of {', '.join(MODELS)}, not {model!r}")
