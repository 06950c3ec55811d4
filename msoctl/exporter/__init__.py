"""The Prometheus exporter: ``msoctl exporter``.

Multi-target: ``/probe?target=NAME`` reads one inventory device into a fresh
registry (:mod:`.probe`), one collector per device family (:mod:`.ocs`,
:mod:`.amp`, :mod:`.switch`, :mod:`.cpo`); ``/metrics`` has the exporter's own
metrics only. :mod:`.server` serves both; :mod:`.sd` writes Prometheus file_sd
targets from the inventory. deploy/ has the Prometheus side.
"""

DEFAULT_LISTEN = "127.0.0.1:9810"
DEFAULT_TIMEOUT_OFFSET_SECONDS = 0.25
"""Answer a probe this long before the scrape timeout, to leave time for the reply."""
DEFAULT_SHARE_SECONDS = 2.0
"""Probes of one device share a reading complete at most this long ago (see .probe)."""
DEFAULT_MAX_READINGS = 32
"""Device readings taken at once, at most (see .probe): more probes wait for a turn."""
