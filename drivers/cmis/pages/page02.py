"""Page 02h: monitor thresholds. Each group is high alarm, low alarm, high warning, low warning."""

from drivers.cmis.fields import Field

P = 0x02

LEVELS = ("high_alarm", "low_alarm", "high_warning", "low_warning")


def _group(name: str, start: int, kind: str, scale: float, unit: str) -> tuple[Field, ...]:
    return tuple(Field(f"{name}_{level}", P, start + 2 * index, size=2, kind=kind, scale=scale,
                       unit=unit) for index, level in enumerate(LEVELS))


TEMPERATURE = _group("temperature", 128, "s16", 1 / 256, "celsius")
VCC = _group("vcc", 136, "u16", 0.0001, "volts")
TX_POWER = _group("tx_power", 176, "u16", 0.0001, "milliwatts")
TX_BIAS = _group("tx_bias", 184, "u16", 0.002, "milliamperes")
RX_POWER = _group("rx_power", 192, "u16", 0.0001, "milliwatts")

GROUPS = {"temperature": TEMPERATURE, "vcc": VCC, "tx_power": TX_POWER, "tx_bias": TX_BIAS,
          "rx_power": RX_POWER}

FIELDS = (*TEMPERATURE, *VCC, *TX_POWER, *TX_BIAS, *RX_POWER)
