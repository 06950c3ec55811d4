"""The CPO/CPC telemetry of a switch and its SNMP agent.

- :mod:`.physics`: PAM4 BER from SNR, RS(544,514) codeword statistics, sampling;
- :mod:`.optical`: optical engines, external laser sources, port lanes;
- :mod:`.copper`: 224G electrical lanes: SNR, BER, FEC counters, eye;
- :mod:`.model`: :class:`SwitchTelemetry`, the two over the injected clock, with faults;
- :mod:`.mibview`: which MIB instance carries which reading, and its encoding;
- :mod:`.agent`: :class:`CpoAgent`, the pysnmp 7 SNMPv3 agent serving it.
"""
