"""Optical protection (``msoctl protect``): move a link to its protection span when its
working span loses light.

- :mod:`.controller` watches, decides and acts, one journaled change per move;
- :mod:`.watch` the persistent device sessions and their pollers;
- :mod:`.light` how light is judged (thresholds, hysteresis) and which map changes a
  move needs (pure functions, no I/O);
- :mod:`.moves` a move carried out on the OCSes at both ends, and the light checked;
- :mod:`.config` the controller's settings and the events it reports.
"""
