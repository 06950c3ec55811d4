"""The deep-buffer switch: its congestion model (:mod:`.model`); protocol servers live beside it."""
