"""``msoctl design cc``: what long-haul congestion control will do before it is configured.

- :mod:`.nic`: the sender's and receiver's DCQCN parameters (ConnectX's defaults, by name).
- :mod:`.scenario`: one case to model: the link, the flows, where the bottleneck is, the
  switch's thresholds (from a WANT file or worked out as ``msoctl switch plan`` does).
- :mod:`.fluid`: the fluid model of DCQCN with delayed feedback and PFC, solved with a
  fixed step.
- :mod:`.metrics`: what an architect reads off a solution.
- :mod:`.study`: both feedback modes side by side, sweeps in parallel processes, and the
  recommended thresholds.
"""
