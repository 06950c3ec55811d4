"""Text checks the emulators' protocol parsers share."""

from __future__ import annotations

MAX_DIGITS = 18
"""More digits than any count, port or id a device takes (and less than int() refuses)."""


def digits(text: str) -> bool:
    """``text`` is a decimal number of ASCII digits (``str.isdigit`` also takes ``²``, which
    ``int`` refuses), short enough to be a count or an identifier."""
    return text.isascii() and text.isdigit() and len(text) <= MAX_DIGITS
