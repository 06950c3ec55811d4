"""Emulated lab instruments for OCS acceptance testing: a tunable laser, a fan-out, a
multiport power meter (see :mod:`.testset` for how they are wired to an OCS)."""
