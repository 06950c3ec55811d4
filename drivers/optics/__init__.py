"""Port optics and FEC from any telemetry surface, in one typed shape.

- :mod:`.readings`: :class:`~.readings.OpticsReading` and its parts, the units;
- the surfaces' readers live beside their protocol: ENTITY-SENSOR-MIB and the vendor
  DOM MIBs in :mod:`drivers.snmp`, OpenConfig and SONiC paths over gNMI in
  :mod:`drivers.optics.gnmi`.
"""
