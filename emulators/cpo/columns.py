"""Which value the agent serves in each MIB object: its own table, restated from the MIBs.

One line per object: its name in the MIB, the attribute of a row (or of the agent)
that holds its value, and how that value is encoded, as the object's DESCRIPTION
and UNITS clauses say it ("in hundredths of a dBm" is ``fixed(2)``). Reviewed
line by line against mibs/MSO-CPO-MIB.mib, mibs/MSO-CPC-MIB.mib, IF-MIB (RFC 2863),
SNMPv2-MIB (RFC 3418) and SNMP-FRAMEWORK-MIB (RFC 3411).

Nothing here comes from the collector (``drivers.snmp.collector``): an agent that
took the tested code's own column-to-field mapping would serve a swapped column
exactly where the collector looks for it, and the two would agree on a wrong
value. OIDs, ranges, enumerations and BITS still come from the compiled MIBs
(:mod:`drivers.snmp.mibs`), which are the MIB text itself.

Encodings (:class:`Encoding`):

- ``text``: a DisplayString, UTF-8, cut to the syntax's SIZE;
- ``number``: an integer as it is, held to the syntax's range (a Gauge32 such
  as ifSpeed saturates at 4294967295, as RFC 2863 asks);
- ``fixed(N)``: ``round(value × 10^N)`` held to the range, so ``-inf`` dBm (a dark
  receiver) is the range's floor, -10000, as MsoPowerDbm says;
- ``log10_ber``: MsoLog10Ber, ``round(1000 × log10(ratio))``, -18000 for a ratio
  below 1E-18 or no errors at all;
- ``enum``: a name of the syntax's enumeration; ``bits``: a set of BITS names;
- ``counter``: a Counter32 or Counter64, modulo 2^32 or 2^64 as the syntax is;
- ``timestamp``: TimeStamp, sysUpTime at a device time (0 before the agent's
  boot, or when there was no such event);
- ``octets``, ``oid``: as they are.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Encoding:
    kind: str
    decimals: int = 0


TEXT = Encoding("text")
NUMBER = Encoding("number")
ENUM = Encoding("enum")
BITS = Encoding("bits")
COUNTER = Encoding("counter")
LOG10_BER = Encoding("log10_ber")
TIMESTAMP = Encoding("timestamp")
TIMETICKS = Encoding("timeticks")
OCTETS = Encoding("octets")
OID = Encoding("oid")


def fixed(decimals: int) -> Encoding:
    """A fixed-point Integer32 counting units of 10^-decimals."""
    return Encoding("fixed", decimals)


@dataclass(frozen=True)
class Served:
    """MIB object ``name`` carries ``attribute`` of its row, encoded as ``encoding``."""

    name: str
    attribute: str
    encoding: Encoding


@dataclass(frozen=True)
class ServedTable:
    """A table whose rows are the snapshot's ``rows``, indexed by the row attributes
    ``index`` (in the INDEX clause's order). The index name ``bin`` is no attribute:
    there, each column's attribute is a sequence and bin n serves its n-th item."""

    module: str
    table: str
    rows: str
    index: tuple[str, ...]
    columns: tuple[Served, ...]


CPO = "MSO-CPO-MIB"
CPC = "MSO-CPC-MIB"

# MSO-CPO-MIB msoCpoEngineTable, INDEX { msoCpoEngineIndex }: "one row each" engine.
ENGINES = ServedTable(CPO, "msoCpoEngineTable", "engines", ("index",), (
    Served("msoCpoEngineName", "name", TEXT),  # "the engine's name ... for example `OE3'"
    Served("msoCpoEngineLaneCount", "lane_count", NUMBER),  # "the number of optical lanes"
    # "in hundredths of a degree Celsius", UNITS "degrees Celsius"
    Served("msoCpoEngineTemperature", "temperature_celsius", fixed(2)),
    Served("msoCpoEngineTempHighThreshold", "temperature_high_celsius", fixed(2)),
    # "main supply voltage, in millivolts", UNITS "V"
    Served("msoCpoEngineSupplyVoltage", "supply_voltage_volts", fixed(3)),
    Served("msoCpoEngineStatus", "status", ENUM),  # normal, overTemperature, failed
))

# MSO-CPO-MIB msoCpoLaneTable, INDEX { ifIndex, msoCpoLaneIndex }: port and lane.
OPTICAL_LANES = ServedTable(CPO, "msoCpoLaneTable", "optical_lanes", ("port", "lane"), (
    Served("msoCpoLaneEngineIndex", "engine", NUMBER),  # "the msoCpoEngineIndex ... that carries"
    Served("msoCpoLaneEngineLane", "engine_lane", NUMBER),  # "the lane's number on that engine"
    # "the optical power the lane transmits, in hundredths of a dBm"
    Served("msoCpoLaneTxPower", "tx_power_dbm", fixed(2)),
    # "... receives, in hundredths of a dBm; -10000 when the receiver sees no light"
    Served("msoCpoLaneRxPower", "rx_power_dbm", fixed(2)),
    # "the bias current of the lane's modulator, in microamperes", UNITS "mA"
    Served("msoCpoLaneTxBias", "tx_bias_ma", fixed(3)),
    Served("msoCpoLaneElsModule", "els_module", NUMBER),  # "the msoCpoElsModuleIndex ..."
    Served("msoCpoLaneElsLane", "els_lane", NUMBER),  # "the msoCpoElsLaneIndex, within ..."
))

# MSO-CPO-MIB msoCpoElsTable, INDEX { msoCpoElsModuleIndex, msoCpoElsLaneIndex }.
LASERS = ServedTable(CPO, "msoCpoElsTable", "lasers", ("module", "lane"), (
    # "the optical power the laser sends towards the engines, in hundredths of a dBm;
    # -10000 while the laser is off"
    Served("msoCpoElsOutputPower", "output_power_dbm", fixed(2)),
    Served("msoCpoElsBiasCurrent", "bias_current_ma", fixed(3)),  # "in microamperes"
    Served("msoCpoElsVoltage", "voltage_volts", fixed(3)),  # "forward voltage, in millivolts"
    Served("msoCpoElsTemperature", "temperature_celsius", fixed(2)),  # "hundredths of a degree"
    Served("msoCpoElsState", "state", ENUM),  # off, ramping, on
    Served("msoCpoElsControlMode", "control_mode", ENUM),  # constantCurrent, constantPower
    Served("msoCpoElsFaults", "faults", BITS),  # "the laser's fault conditions present now"
))

# MSO-CPC-MIB msoCpcLaneTable, INDEX { ifIndex, msoCpcLaneIndex }.
ELECTRICAL_LANES = ServedTable(CPC, "msoCpcLaneTable", "electrical_lanes", ("port", "lane"), (
    # "the signal-to-noise ratio at the receiver's slicer ... in hundredths of a dB"
    Served("msoCpcLaneSnr", "snr_db", fixed(2)),
    # "the bit error ratio before FEC correction ... as its decimal logarithm in thousandths"
    Served("msoCpcLanePreFecBer", "pre_fec_ber", LOG10_BER),
    # "codewords received with between 1 and 15 symbol errors"
    Served("msoCpcLaneFecCorrected", "fec_corrected", COUNTER),
    # "codewords received with more symbol errors than the decoder can correct"
    Served("msoCpcLaneFecUncorrectable", "fec_uncorrectable", COUNTER),
    # "the channel's insertion loss at the Nyquist frequency ... in hundredths of a dB"
    Served("msoCpcLaneInsertionLoss", "insertion_loss_db", fixed(2)),
    # "the vertical opening of the smallest of the three PAM4 eyes ... in microvolts"
    Served("msoCpcLaneEyeHeight", "eye_height_mv", fixed(3)),
    # "the horizontal opening ... in thousandths of a unit interval"
    Served("msoCpcLaneEyeWidth", "eye_width_ui", fixed(3)),
    # "the value of sysUpTime on the most recent occasion at which any one or more of
    # this lane's counters suffered a discontinuity"; 0 if none since the agent started
    Served("msoCpcLaneDiscontinuityTime", "discontinuity_at", TIMESTAMP),
))

# MSO-CPC-MIB msoCpcHistogramTable, INDEX { ifIndex, msoCpcLaneIndex, msoCpcHistogramBin }:
# "the number of codewords the lane received with the bin's number of symbol errors";
# the rows are the electrical lanes, and bin n is the n-th count of a lane's histogram
# (0..15 symbol errors, then 16 or more).
HISTOGRAM = ServedTable(CPC, "msoCpcHistogramTable", "electrical_lanes", ("port", "lane", "bin"), (
    Served("msoCpcHistogramCodewords", "histogram", COUNTER),
))

TABLES = (ENGINES, OPTICAL_LANES, LASERS, ELECTRICAL_LANES, HISTOGRAM)

# MSO-CPC-MIB msoCpcFecDegradeThreshold: "the pre-FEC bit error ratio at or above which
# a lane's FEC is degraded", an MsoLog10Ber; an attribute of the reading itself.
THRESHOLD = (CPC, Served("msoCpcFecDegradeThreshold", "fec_degrade_threshold_ber", LOG10_BER))

# IF-MIB (RFC 2863) ifTable and ifXTable, INDEX { ifIndex }, for the ports the CPO and
# CPC tables index: the rows are :class:`~emulators.cpo.interfaces.InterfaceRow`. What
# ifCompliance3 asks of a packet-oriented interface faster than 650,000,000 bits/second
# (every emulated port: Ethernet): ifGeneralInformationGroup, ifVHCPacketGroup and
# ifCounterDiscontinuityGroup. Not served: ifTable's deprecated ifInNUcastPkts,
# ifOutNUcastPkts, ifOutQLen and ifSpecific. Each counter is one attribute, served
# modulo 2^32 in a Counter32 and 2^64 in a Counter64 (``counter``), so ifInOctets is
# ifHCInOctets modulo 2^32. "Discontinuities in the value of this counter can occur at
# re-initialization of the management system, and at other times as indicated by the
# value of ifCounterDiscontinuityTime", of every counter below.
IF_TABLE = ServedTable("IF-MIB", "ifTable", "interfaces", ("index",), (
    Served("ifIndex", "index", NUMBER),
    Served("ifDescr", "descr", TEXT),
    Served("ifType", "if_type", ENUM),  # IANAifType
    # "an estimate of the interface's current bandwidth in bits per second"; above
    # 4,294,967,295 it "should report its maximum value" (NUMBER saturates)
    Served("ifSpeed", "speed_bps", NUMBER),
    # "the size of the largest packet which can be sent/received on the interface,
    # specified in octets" (the IP packet, for an Ethernet port)
    Served("ifMtu", "mtu", NUMBER),
    # "the interface's address at its protocol sub-layer ... for an 802.x interface,
    # this object normally contains a MAC address"
    Served("ifPhysAddress", "phys_address", OCTETS),
    Served("ifAdminStatus", "admin_status", ENUM),  # "the desired state of the interface"
    Served("ifOperStatus", "oper_status", ENUM),
    # "the value of sysUpTime at the time the interface entered its current operational
    # state", 0 if that was before the agent started
    Served("ifLastChange", "last_change", TIMESTAMP),
    # "the total number of octets received on the interface, including framing characters"
    Served("ifInOctets", "in_octets", COUNTER),
    # "the number of packets, delivered by this sub-layer to a higher (sub-)layer, which
    # were not addressed to a multicast or broadcast address at this sub-layer"
    Served("ifInUcastPkts", "in_ucast", COUNTER),
    # "inbound packets which were chosen to be discarded even though no errors had been
    # detected"
    Served("ifInDiscards", "in_discards", COUNTER),
    # "the number of inbound packets that contained errors preventing them from being
    # deliverable to a higher-layer protocol"
    Served("ifInErrors", "in_errors", COUNTER),
    # "packets received via the interface which were discarded because of an unknown or
    # unsupported protocol"
    Served("ifInUnknownProtos", "in_unknown_protos", COUNTER),
    # "the total number of octets transmitted out of the interface, including framing
    # characters"
    Served("ifOutOctets", "out_octets", COUNTER),
    # "the total number of packets that higher-level protocols requested be transmitted,
    # and which were not addressed to a multicast or broadcast address at this
    # sub-layer, including those that were discarded or not sent"
    Served("ifOutUcastPkts", "out_ucast", COUNTER),
    # "outbound packets which were chosen to be discarded even though no errors had been
    # detected to prevent their being transmitted"
    Served("ifOutDiscards", "out_discards", COUNTER),
    # "the number of outbound packets that could not be transmitted because of errors"
    Served("ifOutErrors", "out_errors", COUNTER),
))
IF_X_TABLE = ServedTable("IF-MIB", "ifXTable", "interfaces", ("index",), (
    Served("ifName", "name", TEXT),
    # "packets, delivered by this sub-layer to a higher (sub-)layer, which were addressed
    # to a multicast address at this sub-layer"; the Counter32 and the Counter64 alike
    Served("ifInMulticastPkts", "in_multicast", COUNTER),
    # "... which were addressed to a broadcast address at this sub-layer"
    Served("ifInBroadcastPkts", "in_broadcast", COUNTER),
    # "packets that higher-level protocols requested be transmitted, and which were
    # addressed to a multicast address at this sub-layer"
    Served("ifOutMulticastPkts", "out_multicast", COUNTER),
    # "... which were addressed to a broadcast address at this sub-layer"
    Served("ifOutBroadcastPkts", "out_broadcast", COUNTER),
    # "a 64-bit version of ifInOctets" (and so on: the same attributes, modulo 2^64)
    Served("ifHCInOctets", "in_octets", COUNTER),
    Served("ifHCInUcastPkts", "in_ucast", COUNTER),
    Served("ifHCInMulticastPkts", "in_multicast", COUNTER),
    Served("ifHCInBroadcastPkts", "in_broadcast", COUNTER),
    Served("ifHCOutOctets", "out_octets", COUNTER),
    Served("ifHCOutUcastPkts", "out_ucast", COUNTER),
    Served("ifHCOutMulticastPkts", "out_multicast", COUNTER),
    Served("ifHCOutBroadcastPkts", "out_broadcast", COUNTER),
    # "whether linkUp/linkDown traps should be generated for this interface": the agent
    # sends none, so disabled(2) (ifCompliance3: "write access is not required")
    Served("ifLinkUpDownTrapEnable", "link_up_down_trap_enable", ENUM),
    # "in units of 1,000,000 bits per second"
    Served("ifHighSpeed", "speed_mbps", NUMBER),
    # "false(2) if this interface only accepts packets/frames that are addressed to this
    # station" (TruthValue; read-only, as ifCompliance3 allows)
    Served("ifPromiscuousMode", "promiscuous_mode", ENUM),
    # "'true(1)' if the interface sublayer has a physical connector"
    Served("ifConnectorPresent", "connector_present", ENUM),
    # "an 'alias' name for the interface as specified by a network manager": read-write,
    # the zero-length string until a SET; kept in the view (:data:`~.mibview.WRITABLE_COLUMNS`),
    # not in the row, so that it lasts for the agent's life, across its reboots
    Served("ifAlias", "alias", TEXT),
    # "the value of sysUpTime on the most recent occasion at which any one or more of
    # this interface's counters suffered a discontinuity"; 0 if none "since the last
    # re-initialization of the local management subsystem"
    Served("ifCounterDiscontinuityTime", "counter_discontinuity_at", TIMESTAMP),
))
IF_TABLES = (IF_TABLE, IF_X_TABLE)
# IF-MIB scalars, attributes of the agent's snapshot: ifNumber, "the number of network
# interfaces (regardless of their current state)", and ifTableLastChange, "the value of
# sysUpTime at the time of the last creation or deletion of an entry in the ifTable",
# 0 since rows never come or go while the agent runs.
IF_SCALARS: tuple[str, tuple[Served, ...]] = ("IF-MIB", (
    Served("ifNumber", "interface_count", NUMBER),
    Served("ifTableLastChange", "if_table_last_change", TIMESTAMP),
))

# ENTITY-MIB (RFC 4133) entPhysicalTable, INDEX { entPhysicalIndex }, and
# entAliasMappingTable, INDEX { entPhysicalIndex, entAliasLogicalIndexOrZero }, and
# ENTITY-SENSOR-MIB (RFC 3433) entPhySensorTable, INDEX { entPhysicalIndex }: the rows
# are :mod:`~emulators.cpo.entity`'s, served when the agent has an entity layout.
ENTITY = "ENTITY-MIB"
PHYSICAL_TABLE = ServedTable(ENTITY, "entPhysicalTable", "physical_entities", ("index",), (
    Served("entPhysicalDescr", "descr", TEXT),  # "a textual description of physical entity"
    # "an indication of the vendor-specific hardware type"; zeroDotZero if unknown
    Served("entPhysicalVendorType", "vendor_type", OID),
    # "the value of entPhysicalIndex for the physical entity which 'contains' this
    # physical entity"; zero: "not contained in any other physical entity"
    Served("entPhysicalContainedIn", "contained_in", NUMBER),
    Served("entPhysicalClass", "physical_class", ENUM),  # PhysicalClass
    # "the relative position of this 'child' component among all its 'sibling'
    # components"; -1 where the entity is not contained in another
    Served("entPhysicalParentRelPos", "parent_rel_pos", NUMBER),
    Served("entPhysicalName", "name", TEXT),  # "the textual name of the physical entity"
    Served("entPhysicalHardwareRev", "hardware_rev", TEXT),
    Served("entPhysicalFirmwareRev", "firmware_rev", TEXT),
    Served("entPhysicalSoftwareRev", "software_rev", TEXT),
    Served("entPhysicalSerialNum", "serial_num", TEXT),
    Served("entPhysicalMfgName", "mfg_name", TEXT),
    Served("entPhysicalModelName", "model_name", TEXT),
    Served("entPhysicalAlias", "alias", TEXT),
    Served("entPhysicalAssetID", "asset_id", TEXT),
    Served("entPhysicalIsFRU", "is_fru", ENUM),  # TruthValue
))
ALIAS_MAPPING_TABLE = ServedTable(ENTITY, "entAliasMappingTable", "alias_mappings",
                                  ("index", "logical"), (
    # "the value of this object identifies a particular conceptual row associated with
    # the indicated entPhysicalIndex and entLogicalIndex pair": for a port, "the ifIndex
    # object instance for the particular interface" (RFC 4133 section 3.1.2)
    Served("entAliasMappingIdentifier", "identifier", OID),
))
SENSOR_TABLE = ServedTable("ENTITY-SENSOR-MIB", "entPhySensorTable", "sensors", ("index",), (
    # EntitySensorDataType; served as its number, since Cisco's agents add dBm (14)
    Served("entPhySensorType", "sensor_type", NUMBER),
    Served("entPhySensorScale", "scale", ENUM),  # EntitySensorDataScale
    Served("entPhySensorPrecision", "precision", NUMBER),  # decimal places, -8..9
    # "the most recent measurement obtained by the agent for this sensor", in the type's
    # unit times the scale, with precision decimals (see emulators.cpo.entity)
    Served("entPhySensorValue", "value", NUMBER),
    Served("entPhySensorOperStatus", "oper_status", ENUM),  # ok, unavailable, nonoperational
    Served("entPhySensorUnitsDisplay", "units_display", TEXT),
    # "the value of sysUpTime at the time the status and/or value of this sensor was last
    # obtained by the agent"
    Served("entPhySensorValueTimeStamp", "value_timestamp", TIMESTAMP),
    # "an indication of the frequency that the agent updates" it, "in milliseconds"
    Served("entPhySensorValueUpdateRate", "update_rate_ms", NUMBER),
))
ENTITY_TABLES = (PHYSICAL_TABLE, ALIAS_MAPPING_TABLE, SENSOR_TABLE)
ENTITY_CAPABILITIES = (
    ("ENTITY-MIB", "entityMIB", "ENTITY-MIB entPhysicalTable and entAliasMappingTable "
     "(RFC 4133), in part"),
    ("ENTITY-SENSOR-MIB", "entitySensorMIB", "ENTITY-SENSOR-MIB entPhySensorTable (RFC 3433)"),
)

# SNMPv2-MIB system group (RFC 3418), from :class:`~emulators.cpo.mibview.SystemInfo`;
# sysUpTime is the agent's own, read at every request.
SYSTEM: tuple[str, tuple[Served, ...]] = ("SNMPv2-MIB", (
    Served("sysDescr", "descr", TEXT),
    Served("sysObjectID", "object_id", OID),
    Served("sysUpTime", "uptime_ticks", TIMETICKS),
    Served("sysContact", "contact", TEXT),
    Served("sysName", "name", TEXT),
    Served("sysLocation", "location", TEXT),
    Served("sysServices", "services", NUMBER),
    # "the value of sysUpTime at the time of the most recent change" of sysORID: the
    # list below is set at the agent's start and never changes, so 0
    Served("sysORLastChange", "or_last_change", TIMESTAMP),
))

# SNMPv2-MIB sysORTable, INDEX { sysORIndex }: "the capabilities of the local SNMP
# application acting as a command responder", one row per MIB module the agent
# implements (:data:`CAPABILITIES`). sysORID is the module's MODULE-IDENTITY, not a
# compliance statement: the agent serves parts of IF-MIB, and claims no compliance it
# does not meet. sysORUpTime: listed since the start, 0.
SYS_OR_TABLE = ServedTable("SNMPv2-MIB", "sysORTable", "capabilities", ("index",), (
    Served("sysORID", "object_id", OID),
    Served("sysORDescr", "descr", TEXT),
    Served("sysORUpTime", "listed_at", TIMESTAMP),
))
CAPABILITIES = (
    ("SNMPv2-MIB", "snmpMIB", "The SNMPv2-MIB system and snmp groups (RFC 3418)"),
    ("SNMP-FRAMEWORK-MIB", "snmpFrameworkMIB",
     "The SNMP-FRAMEWORK-MIB snmpEngine group (RFC 3411)"),
    ("SNMP-USER-BASED-SM-MIB", "snmpUsmMIB", "USM's usmStats counters (RFC 3414)"),
    ("IF-MIB", "ifMIB", "IF-MIB ifGeneralInformationGroup, ifVHCPacketGroup and "
     "ifCounterDiscontinuityGroup for Ethernet ports, writable ifAlias; no linkUp or "
     "linkDown notifications (RFC 2863)"),
    ("MSO-CPO-MIB", "msoCpoMIB", "Co-packaged optics: engines, port lanes, external lasers"),
    ("MSO-CPC-MIB", "msoCpcMIB", "Co-packaged copper: lanes, FEC counters and histogram"),
)
"""(module, its MODULE-IDENTITY, sysORDescr) of every MIB module the agent serves."""

# SNMPv2-MIB snmp group (RFC 3418): what the agent's SNMP engine took in, as its message
# processing counts it on the way (snmpInBadCommunityUses: a SET that a community's view
# does not let it write), read at every request; snmpEnableAuthenTraps is the system's
# (disabled: no authenticationFailure trap is ever sent).
STATISTICS: tuple[str, tuple[Served, ...]] = ("SNMPv2-MIB", (
    Served("snmpInPkts", "in_pkts", COUNTER),
    Served("snmpInBadVersions", "in_bad_versions", COUNTER),
    Served("snmpInBadCommunityNames", "in_bad_community_names", COUNTER),
    Served("snmpInBadCommunityUses", "in_bad_community_uses", COUNTER),
    Served("snmpInASNParseErrs", "in_asn_parse_errs", COUNTER),
    Served("snmpEnableAuthenTraps", "enable_authen_traps", ENUM),
    Served("snmpSilentDrops", "silent_drops", COUNTER),
    Served("snmpProxyDrops", "proxy_drops", COUNTER),
))

# SNMP-USER-BASED-SM-MIB usmStats (RFC 3414 section 5): the messages USM refused, by
# reason, as the agent's engine counts them (each also answered with a Report PDU
# carrying the counter, RFC 3414 3.2), read at every request.
USM_STATISTICS: tuple[str, tuple[Served, ...]] = ("SNMP-USER-BASED-SM-MIB", (
    Served("usmStatsUnsupportedSecLevels", "usm_unsupported_sec_levels", COUNTER),
    Served("usmStatsNotInTimeWindows", "usm_not_in_time_windows", COUNTER),
    Served("usmStatsUnknownUserNames", "usm_unknown_user_names", COUNTER),
    Served("usmStatsUnknownEngineIDs", "usm_unknown_engine_ids", COUNTER),
    Served("usmStatsWrongDigests", "usm_wrong_digests", COUNTER),
    Served("usmStatsDecryptionErrors", "usm_decryption_errors", COUNTER),
))

# SNMP-FRAMEWORK-MIB snmpEngine group (RFC 3411 section 5): the values USM puts in
# every message header (RFC 3414 section 2.2), read from the agent at every request.
ENGINE: tuple[str, tuple[Served, ...]] = ("SNMP-FRAMEWORK-MIB", (
    Served("snmpEngineID", "engine_id", OCTETS),
    Served("snmpEngineBoots", "engine_boots", NUMBER),
    Served("snmpEngineTime", "engine_seconds", NUMBER),  # "seconds since ... boots last changed"
    Served("snmpEngineMaxMessageSize", "max_message_size", NUMBER),
))
