"""Deep-buffer switches: long-haul congestion control (ECN, PFC headroom, fast CNP)."""
