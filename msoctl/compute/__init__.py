"""Compute endpoints on the fabric: GPU servers' state (:mod:`.gpustate`), from the
exporters fleets already run."""
