"""OCS acceptance testing with lab instruments (``msoctl ocs characterize`` and ``msoctl
ocs report``): a tunable laser and a multiport power meter, the test set, around the
OCS under test.

- :mod:`.run` the checks made before anything changes, the instruments, the journal;
- :mod:`.characterize` the schedule of switch steps and what each step measures;
- :mod:`.report` the analysis against the limits, the CSV and the figures.
"""
