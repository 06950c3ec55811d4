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

Optional features (:data:`LASER_FEATURES`, :data:`METER_FEATURES`): what a unit of the
family, or a plainer instrument speaking its conventions, may lack. Each is found
by queries that change nothing and answer at once, asked once per session when the
driver opens (``ScpiSession.probe``: each followed by ``:SYST:ERR?``, so a header the
unit does not know is seen in its error queue instead of waited for).

- ``range`` (laser): the MIN/MAX range queries, probed by ``:SOUR1:WAV? MIN``, ``MAX``
  and ``:SOUR1:POW? MIN``, ``MAX``; without them a setting goes unchecked and the
  laser's own range check refuses what it cannot do.
- ``all_ports`` (meter): reading every port at once, probed by ``:FETC:POW:ALL:CSV?``;
  without it the ports are read one by one, ``;``-joined in one program message.
- ``logging`` (meter): the power logging, probed by ``:SENS1:CHAN1:FUNC:STAT?``;
  without it a logging is refused before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class OptionalFeature:
    """A feature a unit may lack, and the queries that tell."""

    title: str
    """How an operator reads its name: ``power logging``."""
    probes: tuple[tuple[str, str], ...]
    """The queries asked once per session to find it: a command key and its argument
    (``""``: none), sent for the driver's own laser source or for meter port 1."""
    why: str
    """Why a unit may lack it."""
    without: str
    """What the driver does on a unit without it."""
    answered: bool = False
    """``True``: the unit has it only if it answers every probe (a header every unit
    has, asked with a parameter not every unit takes: one unit calls the parameter a
    command error, -108, another an execution error, -224). ``False``: a reply, or an
    execution error, shows the header exists; a command error (-113 above all) that
    the unit lacks it."""


LASER_FEATURES: dict[str, OptionalFeature] = {
    "range": OptionalFeature(
        "range queries (MIN/MAX)",
        (("wavelength", "MIN"), ("wavelength", "MAX"), ("power", "MIN"), ("power", "MAX")),
        "the 816x tunable laser modules answer them; the 816x guide allows MIN/MAX of the "
        "power for tunable laser modules only (not its fixed-wavelength sources), and "
        "other makers' sources may take no parameter at all",
        "a wavelength or power goes to the laser unchecked and the laser's own range "
        "check refuses what it cannot do (DeviceRejected, nothing changed); "
        "ocs characterize refuses to start",
        answered=True),
}
"""The laser's optional features, by key (``LaserDriver.features()``). The power unit
query goes in the same write: the power's MIN/MAX answer in the unit set."""

METER_FEATURES: dict[str, OptionalFeature] = {
    "all_ports": OptionalFeature(
        "reading every port at once", (("fetch_all", ""),),
        "the N774x multiport meters have :READ/:FETCh:POWer:ALL:CSV?; an 816x mainframe "
        "reads all its sensors only as a binary block (:READ:POW:ALL?), and a single-port "
        "meter has nothing of the kind",
        "the ports are read one by one, their queries joined in one program message "
        "(as many as their averaging times fit in half the timeout)"),
    "logging": OptionalFeature(
        "power logging", (("function_state", ""),),
        "the 816x sensors and the N774x meters log; a simpler meter takes single "
        "readings only",
        "configuring, starting, waiting for and reading a logging are refused "
        "(Unsupported) before anything is sent; there is no logging to stop; "
        "ocs characterize refuses to start (it times each switching from the logging)"),
}
"""The meter's optional features, by key (``MeterDriver.features()``)."""
