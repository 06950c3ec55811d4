"""Counted nouns in what msoctl prints: ``1 path``, ``3 paths``, never ``3 path(s)``; and
names in the order people count them: ``Ethernet9`` before ``Ethernet10``."""

from __future__ import annotations

import re

IRREGULAR = {"switch": "switches", "address": "addresses", "leaf": "leaves"}
"""Plurals that are not the noun and an ``s``."""


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``noun`` in the number ``count`` takes, without the count."""
    return noun if count == 1 else plural_form or IRREGULAR.get(noun) or noun + "s"


def counted(count: int, noun: str, plural_form: str | None = None) -> str:
    """``count`` (with thousands separators) and ``noun`` in the number it takes."""
    return f"{count:,} {plural(count, noun, plural_form)}"


def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key putting the numbers in ``name`` in numeric order (``sw-a:Ethernet9``
    before ``sw-a:Ethernet10``)."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in re.split(r"([0-9]+)", name))
