"""SNMP for the CPO/CPC telemetry of the switches: the OID table compiled from mibs/.

:mod:`drivers.snmp.mibs` is the one place OIDs come from, for the collector and
for the agent emulator alike.
"""
