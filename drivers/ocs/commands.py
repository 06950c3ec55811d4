"""The OCS's SCPI command set, as a table to review against the manual.

Modelled on the command tree of the most common commercial OCS family (the
Polatis-family SCPI tree as public third-party drivers use it), so the driver
works on real units. Ingress ports are 1..N, egress ports N+1..2N. Channel
lists pair by position: ``:OXC:SWIT:CONN:ADD (@1,2),(@65,66)`` connects 1->65
and 2->66.

Two reply forms are in use and the driver reads both:

| key          | Polatis form (real units)          | bare form                    |
|--------------|------------------------------------|------------------------------|
| connect_port | a quoted string, ``"65"``; ``"0"`` | ``65``; ``0`` or empty       |
|              | or ``""`` when unconnected         |                              |
| power        | a parenthesised list,              | ``-3.21,-4.02``              |
|              | ``(-3.21,-4.02)``                  |                              |

Some units have no power monitors at all: ``:PMON:POW?`` is then an
undefined header (-113), and the driver reports every power as not
available. Power queries name at most :data:`POWER_QUERY_MAX_PORTS` ports
each (the chunk size public drivers use; the unit's own limit is not
published).

The ``:OXC:LC`` subtree is this project's extension for liquid-crystal
engines and is not found on other units; the driver treats an "Undefined
header" reply to it as "not available". ``:OXC:BOOT:MODE`` has no public
source either; real units may not have it.

| key               | meaning                                                     |
|-------------------|-------------------------------------------------------------|
| connect_add       | add connections; refused (202) if a named port is in use    |
| connect_only      | make the map exactly this; unchanged paths stay lit         |
| connect_subtract  | remove every connection of the listed ports                 |
| connect_state     | the map: ``(@1,2),(@65,66)``; empty ``(@),(@)``             |
| connect_port      | the port connected to one port (see the reply forms above)  |
| port_state        | ``(E,D,F)``: enabled, disabled (dark), failed, per port     |
| power             | monitor reading per port, dBm, 2 decimals; ``9.91E+37`` (the |
|                   | SCPI not-a-number) where the port has no reading             |
| boot_mode         | map after power loss: ``DARK`` (none) or ``REST`` (restore)  |
| lc_temperature    | LC cell temperature, degrees Celsius                         |
| lc_switch_time    | duration of the last completed reconfiguration, seconds      |
| insertion_loss    | factory insertion loss of each (ingress, egress) pair, dB    |

Besides these, the IEEE 488.2 common commands and SCPI-99's required commands
(:mod:`drivers.scpi.common`); ``*RST`` drops every connection. The status
registers report (SCPI-99 bit numbers):

| register          | bit | set while                                             |
|-------------------|-----|-------------------------------------------------------|
| OPERation         | 1   | SETTling: the LC engine is reconfiguring              |
| QUEStionable      | 4   | TEMPerature: the LC cell is more than 2 degC below    |
|                   |     | its set point (switching is slower than specified)    |
| QUEStionable      | 9   | a port has failed (device-defined bit)                |
| QUEStionable      | 10  | the LC engine has a fault (device-defined bit)        |

``*TST?`` answers the sum of :data:`SELF_TEST_FAULTS` found, 0 when none.

Loss-of-light alarms (:data:`ALARM_COMMANDS`) are this project's extension too,
documented in docs/dialects/ocs.md: SCPI has no unsolicited message, so the unit
pushes alarm events on a TCP connection of their own, whose port
``:SYSTem:COMMunicate:ALARm:PORT?`` gives; the commands below arm them. A unit
without alarms answers every one of them "Undefined header" (-113), and the
driver reports alarms as not available.

| key               | meaning                                                     |
|-------------------|-------------------------------------------------------------|
| alarm_threshold_set | arm loss of light on the ports, threshold in dBm          |
|                   | (:data:`LOS_THRESHOLD_RANGE_DBM`)                           |
| alarm_threshold   | each port's threshold, dBm; ``9.91E+37`` where not armed    |
| alarm_disarm      | no loss-of-light alarm on the ports any more                |
| alarm_hysteresis_set | dB above the threshold that clears a loss of light      |
|                   | (one value for the unit, :data:`LOS_HYSTERESIS_RANGE_DB`)   |
| alarm_hysteresis  | that value                                                  |
| alarm_enable_set  | ``ON``: armed ports are watched and events pushed; ``OFF``: |
|                   | none (thresholds are kept)                                  |
| alarm_enable      | ``1`` or ``0``                                              |
| alarm_state       | ``(1,0,…)``: loss of light now, per armed port; a port not  |
|                   | armed is refused (-221)                                     |
| alarm_port        | the TCP port of the alarm connection; ``0`` when not served |
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.scpi.common import (
    IEEE488_COMMON,
    OPERATION_BITS,
    QUESTIONABLE_BITS,
    SCPI_ERROR_EXTRAS,
    SCPI_REQUIRED,
)
from drivers.scpi.table import ScpiCommand

COMMANDS: dict[str, ScpiCommand] = {
    **IEEE488_COMMON,
    **SCPI_REQUIRED,
    **SCPI_ERROR_EXTRAS,
    "reset": ScpiCommand("*RST", summary="drop every connection"),
    "size": ScpiCommand(":OXC:SWITch:SIZE?", summary="ingress,egress port counts"),
    "connect_add": ScpiCommand(":OXC:SWITch:CONNect:ADD", ("chanlist", "chanlist")),
    "connect_only": ScpiCommand(":OXC:SWITch:CONNect:ONLY", ("chanlist", "chanlist")),
    "connect_subtract": ScpiCommand(":OXC:SWITch:CONNect:SUBtract", ("chanlist", "chanlist?")),
    "disconnect_all": ScpiCommand(":OXC:SWITch:DISConnect:ALL"),
    "connect_state": ScpiCommand(":OXC:SWITch:CONNect:STATe?"),
    "connect_port": ScpiCommand(":OXC:SWITch:CONNect:PORT?", ("port",)),
    "port_disable": ScpiCommand(":OXC:SWITch:PORT:DISable", ("chanlist",)),
    "port_enable": ScpiCommand(":OXC:SWITch:PORT:ENABle", ("chanlist",)),
    "port_state": ScpiCommand(":OXC:SWITch:PORT:STATe?", ("chanlist",)),
    "power": ScpiCommand(":PMONitor:POWer?", ("chanlist",)),
    "boot_mode_set": ScpiCommand(":OXC:BOOT:MODE", ("mnemonic",)),
    "boot_mode": ScpiCommand(":OXC:BOOT:MODE?"),
    "lc_temperature": ScpiCommand(":OXC:LC:TEMPerature?"),
    "lc_switch_time": ScpiCommand(":OXC:LC:STIMe?"),
    "insertion_loss": ScpiCommand(":OXC:LC:ILOSs?", ("chanlist", "chanlist")),
}

ALARM_COMMANDS: dict[str, ScpiCommand] = {
    "alarm_threshold_set": ScpiCommand(":OXC:ALARm:LOS:THReshold", ("chanlist", "number")),
    "alarm_threshold": ScpiCommand(":OXC:ALARm:LOS:THReshold?", ("chanlist",)),
    "alarm_disarm": ScpiCommand(":OXC:ALARm:LOS:DISarm", ("chanlist",)),
    "alarm_hysteresis_set": ScpiCommand(":OXC:ALARm:LOS:HYSTeresis", ("number",)),
    "alarm_hysteresis": ScpiCommand(":OXC:ALARm:LOS:HYSTeresis?"),
    "alarm_enable_set": ScpiCommand(":OXC:ALARm:LOS:ENABle", ("boolean",)),
    "alarm_enable": ScpiCommand(":OXC:ALARm:LOS:ENABle?"),
    "alarm_state": ScpiCommand(":OXC:ALARm:LOS:STATe?", ("chanlist",)),
    "alarm_port": ScpiCommand(":SYSTem:COMMunicate:ALARm:PORT?"),
}
"""The loss-of-light alarm extension (see the module docstring): a table of its own,
since a unit may lack it while it has every command of :data:`COMMANDS`."""



@dataclass(frozen=True)
class OptionalFeature:
    """A feature a unit of the family may lack, and the query that tells."""

    title: str
    """How an operator reads its name: ``boot mode``."""
    probe: str
    """The query asked once per session to find it (any reply, or an execution error,
    means the header exists; an undefined header means the unit lacks it)."""
    why: str
    """Why a unit may lack it."""


OPTIONAL_FEATURES: dict[str, OptionalFeature] = {
    "power_monitors": OptionalFeature(
        "power monitors", COMMANDS["power"].short() + " (@1)",
        "some units of the family have no monitors (I-OST), some only on egress"),
    "boot_mode": OptionalFeature(
        "boot mode", COMMANDS["boot_mode"].short(),
        "no public source gives it for the family"),
    "lc_figures": OptionalFeature(
        "LC engine figures", COMMANDS["lc_temperature"].short(),
        "this project's extension for LC engines (the :OXC:LC subtree: cell temperature, "
        "last switching time, factory insertion-loss table)"),
    "alarms": OptionalFeature(
        "loss-of-light alarms", ALARM_COMMANDS["alarm_port"].short(),
        "this project's extension: SCPI has no unsolicited message"),
}
"""Every optional feature the driver uses, by key (``OcsDriver.features()``). The size
query (``:OXC:SWIT:SIZE?``) is asked in the same write: every unit has it."""

LOS_THRESHOLD_RANGE_DBM = (-60.0, 10.0)
"""Thresholds a port can be armed with: the monitors' floor to well above any signal."""
LOS_HYSTERESIS_RANGE_DB = (0.0, 10.0)
LOS_HYSTERESIS_DEFAULT_DB = 1.0
"""The hysteresis of a unit as delivered."""

BOOT_MODES: dict[str, str] = {"DARK": "dark", "REST": "restore"}
"""Wire mnemonic (short form) -> boot mode name. ``RESTore`` is the long form."""

PORT_STATES: dict[str, str] = {"E": "enabled", "D": "disabled", "F": "failed"}

NOT_A_NUMBER = 9.91e37
"""SCPI's not-a-number: a monitor with no reading."""

DEVICE_ERRORS: dict[int, str] = {
    201: "Port failed",
    202: "Port in use",
    203: "Switching engine busy",
}
"""Device-specific error queue codes."""

POWER_QUERY_MAX_PORTS = 256
"""Ports one ``:PMON:POW?`` names at most; the driver splits longer requests."""

OPERATION_SETTLING = 1 << OPERATION_BITS["SETTling"]
QUESTIONABLE_TEMPERATURE = 1 << QUESTIONABLE_BITS["TEMPerature"]
QUESTIONABLE_PORT_FAILED = 1 << 9
QUESTIONABLE_ENGINE_FAULT = 1 << 10
"""Status condition bits of the OCS (values, not bit numbers)."""

SELF_TEST_FAULTS: dict[str, int] = {"port failed": 1, "LC engine fault": 2}
"""What ``*TST?`` adds up: each fault found contributes its value; 0 passes."""
