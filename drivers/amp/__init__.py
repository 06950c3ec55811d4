"""Pluggable optical amplifier (EDFA) driver over CMIS."""
