"""The CPO/CPC telemetry of a switch and its SNMP agent.

- :mod:`.physics`: PAM4 BER from SNR, RS(544,514) codeword statistics, sampling;
- :mod:`.optical`: optical engines, external laser sources, port lanes;
- :mod:`.copper`: 224G electrical lanes: SNR, BER, FEC counters, eye;
- :mod:`.model`: :class:`SwitchTelemetry`, the two over the injected clock, with faults;
- :mod:`.interfaces`: the ports as IF-MIB rows, their operational status from the light;
- :mod:`.columns`: which value each MIB object carries, restated from the MIB text;
- :mod:`.mibview`: every served instance in OID order, and its encoding;
- :mod:`.snmpengine`: the engine's identity: engineID, boots kept across restarts, time;
- :mod:`.responders`: GET, GETNEXT, GETBULK and SET over the view;
- :mod:`.agent`: :class:`CpoAgent`, the pysnmp 7 SNMPv3 agent serving it.
"""
