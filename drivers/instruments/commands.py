"""The lab instruments' SCPI command sets, as tables to review against the manuals.

Both follow the conventions of the Keysight (formerly Agilent) 816x lightwave
modules and N774x multiport power meters, so the drivers are useful on real
units; numbers travel in SI base units (metres, watts, seconds) with no unit
suffix, which every such instrument accepts. A number in a header is a
numeric suffix: ``:SOURce1`` is the laser source in slot 1, ``:SENSe2`` the
power meter's port 2 (each port of a multiport meter is its own sensor,
``CHANnel1`` of it). The drivers send the short form with every suffix
written out; the emulators build their parsers from these same tables.

Tunable laser source (``LASER_COMMANDS``), source ``n``:

| key            | wire (short form)         | meaning                                          |
|----------------|---------------------------|--------------------------------------------------|
| wavelength_set | ``:SOUR1:WAV 1.55E-06``   | wavelength, metres; overlapped: ``*OPC?`` waits  |
|                |                           | until the laser has settled                      |
| wavelength     | ``:SOUR1:WAV? [MIN|MAX]`` | set wavelength, or the tuning range's ends, m    |
| power_unit_set | ``:SOUR1:POW:UNIT 0``     | 0 dBm, 1 W (``DBM``/``W`` too)                   |
| power_set      | ``:SOUR1:POW -3.0``       | output power in the power unit                   |
| power          | ``:SOUR1:POW? [MIN|MAX]`` | set output power, or the range's ends            |
| output_set     | ``:OUTP1:STAT 1``         | laser output on (1) or off (0); overlapped       |
| output         | ``:OUTP1:STAT?``          | ``1`` or ``0``                                   |

Multiport optical power meter (``METER_COMMANDS``), port ``n``:

- ``wavelength_set`` ``:SENS2:CHAN1:POW:WAV 1.55E-06``: calibration wavelength, metres.
- ``averaging_set`` ``:SENS2:CHAN1:POW:ATIM 0.01``: averaging time of a reading, s.
- ``unit_set`` ``:SENS2:CHAN1:POW:UNIT 1``: 0 dBm, 1 W (``DBM``/``W`` too).
- ``read`` ``:READ2:CHAN1:POW?``: start a reading, wait the averaging time, return it
  in the unit; ``fetch`` ``:FETC2:CHAN1:POW?``: the last reading again.
- ``read_all`` ``:READ:POW:ALL:CSV?``: one reading on every port at once, comma-separated,
  port 1 first; ``fetch_all`` ``:FETC:POW:ALL:CSV?``: the last reading of every port.
- ``logging_set`` ``:SENS2:CHAN1:FUNC:PAR:LOGG 500,1E-4``: logging parameters, the
  sample count and the averaging time of each sample, which is also the interval.
- ``function_set`` ``:SENS2:CHAN1:FUNC:STAT LOGG,STAR``: start (``STARt``) or stop
  (``STOP``, the samples are discarded) the logging.
- ``function_state`` ``:SENS2:CHAN1:FUNC:STAT?``: ``LOGGING_STABILITY,PROGRESS`` while
  logging, ``LOGGING_STABILITY,COMPLETE`` when done, ``NONE,COMPLETE`` otherwise.
- ``function_result`` ``:SENS2:CHAN1:FUNC:RES?``: the logged samples, an IEEE 488.2
  definite-length block (``#3400...``) of float32 little-endian values in watts,
  oldest first. Several ports' results may be asked in one message (``;``-joined
  queries, answered by ``;``-joined blocks).

A setting changed on a port while it logs is refused (-221 "Settings
conflict"), and so are results asked before any logging (-221).
Logging is an overlapped operation: ``*OPC?`` answers once every started
logging has completed (a unit that answers earlier is caught by the state
query). Several ports started in one program message start together.

Both: the IEEE 488.2 mandatory common commands and the commands SCPI-99
requires (:mod:`drivers.scpi.common`: ``*IDN?``, ``*OPC?``, ``*RST``, ``*CLS``,
``*ESE``/``*ESE?`` -- the session's resynchronisation marker --, the status
byte and registers, ``:SYSTem:ERRor?`` with one entry per query, oldest first).
The laser reports OPERation SETTling while it retunes or turns on, the meter
MEASuring while a port logs. The SCPI not-a-number ``9.91E+37`` is a reading
the instrument could not take.
"""

from __future__ import annotations

from drivers.scpi.common import IEEE488_COMMON, SCPI_ERROR_EXTRAS, SCPI_REQUIRED
from drivers.scpi.table import ScpiCommand

_COMMON: dict[str, ScpiCommand] = {
    **IEEE488_COMMON,
    **SCPI_REQUIRED,
    **SCPI_ERROR_EXTRAS,
    "reset": ScpiCommand("*RST", summary="factory settings; laser output off, logging stopped"),
}

LASER_COMMANDS: dict[str, ScpiCommand] = {
    **_COMMON,
    "wavelength_set": ScpiCommand(":SOURce:WAVelength", ("number",)),
    "wavelength": ScpiCommand(":SOURce:WAVelength?", ("mnemonic?",)),
    "power_unit_set": ScpiCommand(":SOURce:POWer:UNIT", ("value",)),
    "power_unit": ScpiCommand(":SOURce:POWer:UNIT?"),
    "power_set": ScpiCommand(":SOURce:POWer", ("number",)),
    "power": ScpiCommand(":SOURce:POWer?", ("mnemonic?",)),
    "output_set": ScpiCommand(":OUTPut:STATe", ("boolean",)),
    "output": ScpiCommand(":OUTPut:STATe?"),
}

METER_COMMANDS: dict[str, ScpiCommand] = {
    **_COMMON,
    "wavelength_set": ScpiCommand(":SENSe:CHANnel:POWer:WAVelength", ("number",)),
    "wavelength": ScpiCommand(":SENSe:CHANnel:POWer:WAVelength?"),
    "averaging_set": ScpiCommand(":SENSe:CHANnel:POWer:ATIMe", ("number",)),
    "averaging": ScpiCommand(":SENSe:CHANnel:POWer:ATIMe?"),
    "unit_set": ScpiCommand(":SENSe:CHANnel:POWer:UNIT", ("value",)),
    "unit": ScpiCommand(":SENSe:CHANnel:POWer:UNIT?"),
    "read": ScpiCommand(":READ:CHANnel:POWer?"),
    "fetch": ScpiCommand(":FETCh:CHANnel:POWer?"),
    "read_all": ScpiCommand(":READ:POWer:ALL:CSV?"),
    "fetch_all": ScpiCommand(":FETCh:POWer:ALL:CSV?"),
    "logging_set": ScpiCommand(":SENSe:CHANnel:FUNCtion:PARameter:LOGGing", ("number", "number")),
    "logging": ScpiCommand(":SENSe:CHANnel:FUNCtion:PARameter:LOGGing?"),
    "function_set": ScpiCommand(":SENSe:CHANnel:FUNCtion:STATe", ("mnemonic", "mnemonic")),
    "function_state": ScpiCommand(":SENSe:CHANnel:FUNCtion:STATe?"),
    "function_result": ScpiCommand(":SENSe:CHANnel:FUNCtion:RESult?"),
}

POWER_UNITS: dict[str, int] = {"DBM": 0, "W": 1}
"""Power unit mnemonic -> the number the instruments also take and answer."""

LOGGING_IN_PROGRESS = "LOGGING_STABILITY,PROGRESS"
LOGGING_COMPLETE = "LOGGING_STABILITY,COMPLETE"
NO_FUNCTION = "NONE,COMPLETE"

NOT_A_NUMBER = 9.91e37
"""SCPI's not-a-number: a reading the instrument could not take."""

MAX_LOGGING_SAMPLES = 100_000
"""Samples one port logs at most (the N774x family holds up to 1 M; 100 k is plenty here)."""
