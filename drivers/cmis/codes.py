"""CMIS code tables: raw values to names (CMIS 5.x)."""

from __future__ import annotations

IDENTIFIERS: dict[int, str] = {
    0x18: "QSFP-DD",
    0x19: "OSFP",
    0x1E: "QSFP+ (CMIS)",
}

MODULE_STATES: dict[int, str] = {
    1: "ModuleLowPwr",
    2: "ModulePwrUp",
    3: "ModuleReady",
    4: "ModulePwrDn",
    5: "ModuleFault",
}
"""Lower page byte 3 bits 3-1."""

MODULE_STATE_CODES: dict[str, int] = {name: code for code, name in MODULE_STATES.items()}

FAULT_CAUSES: dict[int, str] = {
    0: "no fault",
    1: "TEC runaway",
    2: "data memory corrupted",
    3: "program memory corrupted",
}
"""Lower page byte 41; 4..31 and 64..255 are reserved, 32..63 are custom (the vendor's)."""

CUSTOM_FAULT_CAUSES = range(32, 64)

DURATION_SECONDS: dict[int, float] = {
    0x0: 0.001,
    0x1: 0.005,
    0x2: 0.010,
    0x3: 0.050,
    0x4: 0.100,
    0x5: 0.500,
    0x6: 1.0,
    0x7: 5.0,
    0x8: 10.0,
    0x9: 60.0,
    0xA: 300.0,
    0xB: 600.0,
    0xC: 3000.0,
}
"""Page 01h duration codes (CMIS 5.2 table 8-43): the upper bound of each band, seconds.

Code 0xD means "50 min or more"; 0xE-0xF are reserved. A host waits the upper
bound of the advertised band, never a fixed sleep.
"""

DATA_PATH_STATES: dict[int, str] = {
    1: "DPDeactivated",
    2: "DPInit",
    3: "DPDeinit",
    4: "DPActivated",
    5: "DPTxTurnOn",
    6: "DPTxTurnOff",
    7: "DPInitialized",
}
"""Page 11h bytes 128-131, one nibble per lane: lane 1 in bits 3-0 of byte 128, lane 2 in
bits 7-4, lane 3 in bits 3-0 of byte 129, ... The states are those of the data path state
machine, CMIS 5.2 section 6.3.3; 0 and 8-15 are reserved."""

DATA_PATH_STATE_CODES: dict[str, int] = {name: code for code, name in DATA_PATH_STATES.items()}

LANES = 8
"""Lanes of one bank (CMIS 5.2 section 8.2: a bank of pages 10h-1Fh covers 8 lanes)."""

MEDIA_TYPES: dict[int, str] = {
    0x00: "undefined",
    0x01: "optical MMF",
    0x02: "optical SMF",
    0x03: "passive copper",
    0x04: "active cable",
    0x05: "BASE-T",
}
"""Lower page byte 85, MediaType: which SFF-8024 table the media interface IDs of the
application descriptors come from. 06h-3Fh reserved, 40h-8Fh custom, 90h-FFh reserved."""

END_OF_APPLICATIONS = 0xFF
"""A HostInterfaceID of FFh ends the application list (CMIS 5.2 section 8.2, application
advertising)."""

UNDEFINED_INTERFACE = 0x00
"""SFF-8024 host electrical and media interface code 00h: undefined."""


def name_of(table: dict[int, str], value: int | None) -> str | None:
    """The name of ``value``, ``reserved (0x..)`` if unknown, ``None`` if no value."""
    if value is None:
        return None
    return table.get(value, f"reserved (0x{value:02x})")


def fault_cause_name(cause: int | None) -> str | None:
    """Byte 41: the name of a standard cause, ``custom fault 0x..`` for a vendor's code
    (32..63), ``reserved (0x..)`` for any other value, ``None`` if no value."""
    if cause is not None and cause in CUSTOM_FAULT_CAUSES:
        return f"custom fault 0x{cause:02x}"
    return name_of(FAULT_CAUSES, cause)
