"""Device layer: transports, sessions and drivers for every msoctl device family.

Nothing here knows about the CLI, the inventory or Prometheus.
"""
