"""Pluggable EDFA amplifier module: CMIS memory, physics, I2C slave, serial I2C bridge."""

from emulators.amp.i2c import BusStats, I2cBusHang, I2cNack, I2cSlave
from emulators.amp.model import AmplifierModule

__all__ = ["AmplifierModule", "BusStats", "I2cBusHang", "I2cNack", "I2cSlave"]
