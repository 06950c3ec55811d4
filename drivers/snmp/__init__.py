"""SNMP for the CPO/CPC telemetry of the switches.

- :mod:`drivers.snmp.mibs`: the OID table compiled from mibs/, the one place OIDs
  come from, for the collector and for the agent emulator alike;
- :mod:`drivers.snmp.session`: GET and planned GETBULK walks to one agent over pysnmp 7
  (asyncio, one engine per event loop), pysnmp's errors as :mod:`drivers.errors`;
- :mod:`drivers.snmp.collector`: MSO-CPO-MIB and MSO-CPC-MIB into the dataclasses of
  :mod:`drivers.snmp.telemetry`, within a time budget;
- :mod:`drivers.snmp.rates`: counter deltas, rates, CER and FLR between two readings.
"""
