"""The emulated co-packaged optics' datasheet: alarm and warning thresholds.

A real module's thresholds live in its memory (CMIS page 02h, SFF-8636 page 03h) and
every surface of the switch reports the same ones; so do the emulated switch's, over
SNMP (ENTITY-SENSOR-MIB's vendor threshold tables, H3C's DOM MIB: :mod:`.entity`,
:mod:`.vendor`) and over gNMI (OpenConfig's thresholds, SONiC's
``TRANSCEIVER_DOM_THRESHOLD``: ``emulators.switch.faces.optics``). Figures chosen for
the CPO model's operating points (:mod:`.optical`), not a vendor's: an engine near
55-75 °C on a 1.8 V rail, lanes launching +1.5 dBm (eight lanes to a laser) to +7.5 dBm
(two), receiving about -2 dBm, modulators biased near 10 mA; external lasers held at
50 °C, set to 18 dBm, ending their life at 350 mA.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """One quantity's four thresholds, in its unit."""

    low_alarm: float
    low_warning: float
    high_warning: float
    high_alarm: float

    def levels(self) -> tuple[float, float, float, float]:
        """(low alarm, low warning, high warning, high alarm)."""
        return self.low_alarm, self.low_warning, self.high_warning, self.high_alarm


THRESHOLDS: Mapping[str, Limits] = {
    "temperature_celsius": Limits(-5.0, 0.0, 80.0, 85.0),  # overTemperature at 85 °C
    "supply_voltage_volts": Limits(1.71, 1.74, 1.86, 1.89),  # the 1.8 V rail, ±5 %
    "tx_power_dbm": Limits(-4.0, -2.0, 8.0, 10.0),
    "rx_power_dbm": Limits(-13.0, -10.0, 3.0, 5.0),
    "tx_bias_ma": Limits(4.0, 6.0, 13.0, 15.0),  # modulator bias about 10 mA
}
"""A port's optics (the engine carrying its lanes, and each lane), by quantity."""

ELS_THRESHOLDS: Mapping[str, Limits] = {
    "temperature_celsius": Limits(10.0, 15.0, 65.0, 70.0),  # TEC-held at 50 °C
    "tx_power_dbm": Limits(14.0, 16.0, 19.5, 20.0),  # 18 dBm set point
    "tx_bias_ma": Limits(100.0, 150.0, 300.0, 350.0),  # end of life at 350 mA
}
"""Each laser of an external laser source."""
