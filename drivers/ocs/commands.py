"""The OCS's SCPI command set, as a table to review against the manual.

Modelled on the command tree of the most common commercial OCS family (see
REFERENCE.md), so the driver works on real units. Ingress ports are 1..N,
egress ports N+1..2N. Channel lists pair by position:
``:OXC:SWIT:CONN:ADD (@1,2),(@65,66)`` connects 1->65 and 2->66.

The ``:OXC:LC`` subtree is this project's extension for liquid-crystal
engines and is not found on other units; the driver treats an "Undefined
header" reply to it as "not available".

| key               | meaning                                                     |
|-------------------|-------------------------------------------------------------|
| connect_add       | add connections; refused (202) if a named port is in use    |
| connect_only      | make the map exactly this; unchanged paths stay lit         |
| connect_subtract  | remove every connection of the listed ports                 |
| connect_state     | the map: ``(@1,2),(@65,66)``; empty ``(@),(@)``             |
| connect_port      | the port connected to one port, ``0`` for none              |
| port_state        | ``E`` enabled, ``D`` disabled (dark), ``F`` failed, per port |
| power             | monitor reading per port, dBm, 2 decimals; ``9.91E+37`` (the |
|                   | SCPI not-a-number) where the port has no reading             |
| boot_mode         | map after power loss: ``DARK`` (none) or ``REST`` (restore)  |
| lc_temperature    | LC cell temperature, degrees Celsius                         |
| lc_switch_time    | duration of the last completed reconfiguration, seconds      |
| insertion_loss    | factory insertion loss of each (ingress, egress) pair, dB    |
"""

from __future__ import annotations

from drivers.scpi.table import ScpiCommand

COMMANDS: dict[str, ScpiCommand] = {
    "identify": ScpiCommand("*IDN?", summary="manufacturer,model,serial,firmware"),
    "operation_complete": ScpiCommand("*OPC?", summary="1 once every pending change is done"),
    "reset": ScpiCommand("*RST", summary="drop every connection"),
    "clear_status": ScpiCommand("*CLS", summary="empty the error queue"),
    "event_status_enable_set": ScpiCommand("*ESE", ("number",), summary="set the ESE register"),
    "event_status_enable": ScpiCommand("*ESE?", summary="read the ESE register back"),
    "error": ScpiCommand(":SYSTem:ERRor?", summary='oldest error: code,"message"'),
    "errors_all": ScpiCommand(":SYSTem:ERRor:ALL?", summary="every queued error"),
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
