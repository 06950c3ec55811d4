"""Counted nouns in what msoctl prints: ``1 path``, ``3 paths``, never ``3 path(s)``."""

from __future__ import annotations

IRREGULAR = {"switch": "switches", "address": "addresses", "leaf": "leaves"}
"""Plurals that are not the noun and an ``s``."""


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``noun`` in the number ``count`` takes, without the count."""
    return noun if count == 1 else plural_form or IRREGULAR.get(noun) or noun + "s"


def counted(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` (with thousands separators) and ``noun`` in the number it takes."""
    return f"{count:,} {plural(count, noun, plural_form)}"
