"""Device operations: one change to one device, or to a fleet of switches, with its plan,
its safety rules, its device lock and its journal records.

- :mod:`.ocs` an OCS's map (plan, one command, read back, light checked) and map files;
- :mod:`.amp` an amplifier's settings, Tx and ALS;
- :mod:`.switch` a switch's congestion control over NETCONF, one switch or a fleet;
- :mod:`.headroom` and :mod:`.switch_plan` the PFC headroom and ECN figures that a long
  link needs, and the WANT tree derived from them.
"""
