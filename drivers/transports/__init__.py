"""Transports move bytes and nothing else: open, read, write, close, with one timeout."""

from drivers.transports.base import StreamTransport

__all__ = ["StreamTransport"]
