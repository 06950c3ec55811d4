"""The fabric as a whole (``msoctl fabric``, ``msoctl path``).

- :mod:`.intent` the intent file: links and spans, OCS maps, amplifiers, switches;
- :mod:`.plan` one diff across every device the intent touches, and what it does to links;
- :mod:`.apply` the plan carried out in a safe order, verified, resumable from the journal;
- :mod:`.lightpath` the light along each link, hop by hop, against its budget;
- :mod:`.cpo_power` the optical power the switches' co-packaged optics report over SNMP.
"""
