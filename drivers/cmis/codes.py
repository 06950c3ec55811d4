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
advertising; SFF-8024 Table 4-5, "End of list")."""

UNDEFINED_INTERFACE = 0x00
"""SFF-8024 host electrical and media interface code 00h: undefined. CMIS ends the list
at FFh only, but host readers (SONiC's sonic_xcvr, for one) take 00h as the end too."""

CUSTOM_INTERFACE_IDS = range(0xC0, 0xFF)
"""SFF-8024 Tables 4-5 (host electrical interface IDs) and 4-6..4-10 (media interface IDs):
C0h-FEh are left to the vendor (custom). The tables have no code for a module without a
host electrical data path, nor for an optical amplifier's media side."""


def interface_id_name(code: int | None) -> str | None:
    """A host or media interface ID as a host reader classes it: ``undefined`` (00h),
    ``custom (0x..)`` (C0h-FEh: what it means is the module maker's), ``end of list`` (FFh),
    else ``0x..``, a code of the SFF-8024 tables, which this driver does not name; ``None``
    if no value."""
    if code is None:
        return None
    if code == UNDEFINED_INTERFACE:
        return "undefined"
    if code in CUSTOM_INTERFACE_IDS:
        return f"custom (0x{code:02x})"
    if code == END_OF_APPLICATIONS:
        return "end of list"
    return f"0x{code:02x}"


CONNECTOR_TYPES: dict[int, str] = {
    0x00: "unknown",
    0x01: "SC",
    0x02: "Fibre Channel style 1 copper",
    0x03: "Fibre Channel style 2 copper",
    0x04: "BNC/TNC",
    0x05: "Fibre Channel coax headers",
    0x06: "Fiber Jack",
    0x07: "LC",
    0x08: "MT-RJ",
    0x09: "MU",
    0x0A: "SG",
    0x0B: "optical pigtail",
    0x0C: "MPO 1x12",
    0x0D: "MPO 2x16",
    0x20: "HSSDC II",
    0x21: "copper pigtail",
    0x22: "RJ45",
    0x23: "no separable connector",
    0x24: "MXC 2x16",
    0x25: "CS",
    0x26: "SN",
    0x27: "MPO 2x12",
    0x28: "MPO 1x16",
}
"""Page 00h byte 203, the connector type: SFF-8024 rev 4.x Table 4-3 (Connector Types).
0Eh-1Fh and 29h-7Fh are reserved, 80h-FFh vendor specific."""

VENDOR_CONNECTORS = range(0x80, 0x100)


def connector_name(raw: int | None) -> str | None:
    if raw is not None and raw in VENDOR_CONNECTORS:
        return f"vendor specific (0x{raw:02x})"
    return name_of(CONNECTOR_TYPES, raw)


MEDIA_INTERFACE_TECHNOLOGIES: dict[int, str] = {
    0x00: "850 nm VCSEL",
    0x01: "1310 nm VCSEL",
    0x02: "1550 nm VCSEL",
    0x03: "1310 nm FP",
    0x04: "1310 nm DFB",
    0x05: "1550 nm DFB",
    0x06: "1310 nm EML",
    0x07: "1550 nm EML",
    0x08: "others",
    0x09: "1490 nm DFB",
    0x0A: "copper cable, unequalized",
    0x0B: "copper cable, passive equalized",
    0x0C: "copper cable, near and far end limiting active equalizers",
    0x0D: "copper cable, far end limiting active equalizers",
    0x0E: "copper cable, near end limiting active equalizers",
    0x0F: "copper cable, linear active equalizers",
    0x10: "C-band tunable laser",
    0x11: "L-band tunable laser",
}
"""Page 00h byte 212, the media interface technology: CMIS 5.2 section 8.3 (page 00h), the
table of Media Interface Technology encodings; 12h-FFh are reserved. 00h is "850 nm VCSEL",
not "unknown": a module that leaves the byte at 0 says it is a multimode laser."""


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
