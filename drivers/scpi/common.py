"""What every IEEE 488.2 / SCPI-99 instrument answers, as tables: the mandatory common
commands, the commands SCPI-99 requires, and the bits of the status registers.

Each device's command table starts from :data:`IEEE488_COMMON` and
:data:`SCPI_REQUIRED` (``{**IEEE488_COMMON, **SCPI_REQUIRED, ...}``), so every SCPI
device of the project answers the same common commands the same way.

Sources: IEEE 488.2-1992 chapter 10 (common commands: *CLS 10.3, *ESE 10.10,
*ESE? 10.11, *ESR? 10.12, *IDN? 10.14, *OPC 10.18, *OPC? 10.19, *RST 10.32,
*SRE 10.34, *SRE? 10.35, *STB? 10.36, *TST? 10.38, *WAI 10.39) and chapter 11
(status byte 11.2, standard event status register 11.5.1); SCPI-99 volume 1
§4.2 (required commands) and chapter 9 (status reporting), volume 2 chapter 20
(STATus) and chapter 21 (SYSTem: ERRor 21.8, VERSion? 21.21).

| key                    | wire                   | meaning                                     |
|------------------------|------------------------|---------------------------------------------|
| clear_status           | ``*CLS``               | empty the error queue, clear every event    |
|                        |                        | register; enables are kept                  |
| event_status_enable    | ``*ESE n`` / ``*ESE?`` | which ESR bits make ESB (STB bit 5), 0..255 |
| event_status           | ``*ESR?``              | the standard event status register; read    |
|                        |                        | clears it                                   |
| identify               | ``*IDN?``              | ``manufacturer,model,serial,firmware``      |
| operation_complete_set | ``*OPC``               | set ESR bit 0 once every pending operation  |
|                        |                        | has completed                               |
| operation_complete     | ``*OPC?``              | ``1`` once every pending operation is done  |
| reset                  | ``*RST``               | the device's reset (the status registers    |
|                        |                        | and the error queue are not touched)        |
| service_request_enable | ``*SRE n`` / ``*SRE?`` | which STB bits make MSS (bit 6); bit 6      |
|                        |                        | itself is ignored                           |
| status_byte            | ``*STB?``              | the status byte with MSS in bit 6           |
| self_test              | ``*TST?``              | ``0`` passed; anything else names a fault   |
| wait                   | ``*WAI``               | execute nothing more until every pending    |
|                        |                        | operation has completed                     |
| error                  | ``:SYST:ERR[:NEXT]?``  | oldest error ``code,"text"``, ``0,"No       |
|                        |                        | error"`` when the queue is empty            |
| version                | ``:SYST:VERS?``        | the SCPI version complied with, ``1999.0``  |
| operation_* /          | ``:STAT:OPER...`` /    | the OPERation and QUEStionable register     |
| questionable_*         | ``:STAT:QUES...``      | sets: ``[:EVENt]?`` (read clears),          |
|                        |                        | ``:CONDition?``, ``:ENABle``, ``:PTRansition``,|
|                        |                        | ``:NTRansition``, each 0..32767             |
| status_preset          | ``:STAT:PRES``         | enables 0, PTR 32767, NTR 0 (events kept)   |

SCPI-99 also defines error-queue queries that an instrument may leave out (vol. 2
§21.8; :data:`SCPI_ERROR_EXTRAS`). Every emulator of the project answers them; a driver
uses one only once the unit has shown it has it (``ScpiSession.probe``):

| key              | wire                       | meaning                                        |
|------------------|----------------------------|------------------------------------------------|
| errors_all       | ``:SYST:ERR:ALL?``         | every queued error, oldest first, comma-       |
|                  |                            | separated; empties the queue; ``0,"No error"`` |
| error_count      | ``:SYST:ERR:COUN?``        | how many errors are queued                     |
| error_code       | ``:SYST:ERR:CODE[:NEXT]?`` | the oldest error's code alone, taken out; 0    |
| error_code_all   | ``:SYST:ERR:CODE:ALL?``    | every queued code, comma-separated; empties    |
|                  |                            | the queue; ``0`` when empty                    |
"""

from __future__ import annotations

from drivers.scpi.table import ScpiCommand

SCPI_VERSION = "1999.0"
"""What ``:SYSTem:VERSion?`` answers: the SCPI edition complied with (YYYY.V)."""

IEEE488_COMMON: dict[str, ScpiCommand] = {
    "clear_status": ScpiCommand("*CLS", summary="clear the error queue and event registers"),
    "event_status_enable_set": ScpiCommand("*ESE", ("number",), summary="set ESE, 0..255"),
    "event_status_enable": ScpiCommand("*ESE?", summary="the ESE register"),
    "event_status": ScpiCommand("*ESR?", summary="the ESR register; reading clears it"),
    "identify": ScpiCommand("*IDN?", summary="manufacturer,model,serial,firmware"),
    "operation_complete_set": ScpiCommand("*OPC", summary="ESR bit 0 when pending work is done"),
    "operation_complete": ScpiCommand("*OPC?", summary="1 once every pending operation is done"),
    "reset": ScpiCommand("*RST", summary="the device's reset"),
    "service_request_enable_set": ScpiCommand("*SRE", ("number",), summary="set SRE, 0..255"),
    "service_request_enable": ScpiCommand("*SRE?", summary="the SRE register"),
    "status_byte": ScpiCommand("*STB?", summary="the status byte, MSS in bit 6"),
    "self_test": ScpiCommand("*TST?", summary="0 passed, else a fault code"),
    "wait": ScpiCommand("*WAI", summary="hold further commands until pending work is done"),
}


def _register_set(key: str, node: str) -> dict[str, ScpiCommand]:
    """The commands of one SCPI-99 status register set (vol. 2 §20.1)."""
    return {
        f"{key}_event": ScpiCommand(f":STATus:{node}[:EVENt]?", summary="event; read clears"),
        f"{key}_condition": ScpiCommand(f":STATus:{node}:CONDition?", summary="condition now"),
        f"{key}_enable_set": ScpiCommand(f":STATus:{node}:ENABle", ("number",)),
        f"{key}_enable": ScpiCommand(f":STATus:{node}:ENABle?"),
        f"{key}_ptransition_set": ScpiCommand(f":STATus:{node}:PTRansition", ("number",)),
        f"{key}_ptransition": ScpiCommand(f":STATus:{node}:PTRansition?"),
        f"{key}_ntransition_set": ScpiCommand(f":STATus:{node}:NTRansition", ("number",)),
        f"{key}_ntransition": ScpiCommand(f":STATus:{node}:NTRansition?"),
    }


SCPI_REQUIRED: dict[str, ScpiCommand] = {
    "error": ScpiCommand(":SYSTem:ERRor[:NEXT]?", summary='oldest error: code,"message"'),
    "version": ScpiCommand(":SYSTem:VERSion?", summary="SCPI version, 1999.0"),
    **_register_set("operation", "OPERation"),
    **_register_set("questionable", "QUEStionable"),
    "status_preset": ScpiCommand(":STATus:PRESet", summary="enables 0, PTR all 1, NTR 0"),
}

SCPI_ERROR_EXTRAS: dict[str, ScpiCommand] = {
    "errors_all": ScpiCommand(":SYSTem:ERRor:ALL?", summary="every queued error; empties it"),
    "error_count": ScpiCommand(":SYSTem:ERRor:COUNt?", summary="how many errors are queued"),
    "error_code": ScpiCommand(":SYSTem:ERRor:CODE[:NEXT]?", summary="the oldest error's code"),
    "error_code_all": ScpiCommand(":SYSTem:ERRor:CODE:ALL?", summary="every queued code"),
}
"""The optional error-queue queries of SCPI-99 vol. 2 §21.8 (see the module docstring)."""

INDEFINITE_RESPONSES = frozenset({"identify"})
"""Queries whose response is arbitrary ASCII response data (IEEE 488.2 §8.7.11): it
must end the response message, so a query after one in the same program message is
a query error, -440 (§6.5.7.5.7)."""

# ---- status register bits -----------------------------------------------------------

EVENT_STATUS_BITS: dict[str, int] = {
    "OPC": 0,  # operation complete (after *OPC)
    "RQC": 1,  # request control (never: no device here controls a bus)
    "QYE": 2,  # query error, -400..-499
    "DDE": 3,  # device-dependent error, -300..-399 and positive codes
    "EXE": 4,  # execution error, -200..-299
    "CME": 5,  # command error, -100..-199
    "URQ": 6,  # user request (a front-panel key; none here)
    "PON": 7,  # power on
}
"""Standard event status register (ESR) bit numbers, IEEE 488.2 §11.5.1.1."""

STATUS_BYTE_BITS: dict[str, int] = {
    "EAV": 2,  # the error/event queue is not empty (SCPI-99 vol. 1 ch. 9)
    "QUES": 3,  # QUEStionable summary: event & enable != 0
    "MAV": 4,  # message available in the output queue
    "ESB": 5,  # event status bit: ESR & ESE != 0
    "MSS": 6,  # master summary status (RQS in a serial poll)
    "OPER": 7,  # OPERation summary: event & enable != 0
}
"""Status byte bit numbers, IEEE 488.2 §11.2 with SCPI-99's bits 2, 3 and 7."""

OPERATION_BITS: dict[str, int] = {
    "CALibrating": 0, "SETTling": 1, "RANGing": 2, "SWEeping": 3, "MEASuring": 4,
    "TRIGger": 5, "ARM": 6, "CORRecting": 7, "INSTrument": 13, "PROGram": 14,
}
"""STATus:OPERation condition bits (SCPI-99 vol. 1 ch. 9; 8-12 are device-defined)."""

QUESTIONABLE_BITS: dict[str, int] = {
    "VOLTage": 0, "CURRent": 1, "TIME": 2, "POWer": 3, "TEMPerature": 4, "FREQuency": 5,
    "PHASe": 6, "MODulation": 7, "CALibration": 8, "INSTrument": 13, "WARNing": 14,
}
"""STATus:QUEStionable condition bits (SCPI-99 vol. 1 ch. 9; 9-12 are device-defined)."""

REGISTER_MASK = 0x7FFF
"""SCPI register sets are 16 bits with bit 15 always 0."""


def event_status_bit(code: int) -> int | None:
    """The ESR bit an error/event code sets (SCPI-99 vol. 2 §21.8): ``None`` for 0.

    -100s command errors set CME, -200s execution errors EXE, -300s and every
    positive (device-defined) code DDE, -400s query errors QYE.
    """
    if code == 0:
        return None
    if code > 0 or -399 <= code <= -300:
        return EVENT_STATUS_BITS["DDE"]
    if -199 <= code <= -100:
        return EVENT_STATUS_BITS["CME"]
    if -299 <= code <= -200:
        return EVENT_STATUS_BITS["EXE"]
    if -499 <= code <= -400:
        return EVENT_STATUS_BITS["QYE"]
    return None  # -500s..-800s are events (power on, user request...), not errors
