"""Declarative SCPI command definitions.

A header is written in the standard SCPI long form with the short form in
capitals (``:OXC:SWITch:CONNect:ADD``); the short form (``:OXC:SWIT:CONN:ADD``)
and the long form are both valid on the wire, case-insensitively. A node in
brackets is a default node (SCPI-99 vol. 1 ch. 6): ``:SYSTem:ERRor[:NEXT]?``
is the same query written ``:SYST:ERR?`` or ``:SYST:ERR:NEXT?``. Drivers send
the short form without default nodes; emulators build their parser from the
same tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

_NODE = re.compile(r"^\*?[A-Z][A-Za-z]*\??$")
_SEGMENTS = re.compile(r"(?:\[:[A-Za-z]+\]|:[A-Za-z]+)+")
_SEGMENT = re.compile(r"\[:([A-Za-z]+)\]|:([A-Za-z]+)")


@dataclass(frozen=True)
class ScpiCommand:
    """One command or query of a device's command tree.

    ``params`` names the parameter shapes in order: ``chanlist`` (``(@1,2,5:8)``),
    ``port`` (one integer), ``mnemonic`` (a word such as ``DARK``), ``number``,
    ``boolean`` (``0``, ``1``, ``ON``, ``OFF``), ``value`` (a number or a word; the
    handler checks it). A parameter written with a trailing ``?`` is optional.
    """

    header: str
    params: tuple[str, ...] = ()
    summary: str = ""

    def __post_init__(self) -> None:
        body = self.header.rstrip("?")
        if not body.startswith("*") and not _SEGMENTS.fullmatch(body):
            raise ValueError(f"malformed SCPI header {self.header!r}")
        nodes = [node for node, _ in self._segments()]
        if not self.nodes() or not all(_NODE.match(node) for node in nodes):
            raise ValueError(f"malformed SCPI header {self.header!r}")

    @property
    def is_query(self) -> bool:
        return self.header.endswith("?")

    @property
    def is_common(self) -> bool:
        return self.header.startswith("*")

    def _segments(self) -> list[tuple[str, bool]]:
        """Every node in long form with whether it is a default (optional) node."""
        body = self.header.rstrip("?")
        if body.startswith("*"):
            return [(body, False)]
        return [(optional or required, bool(optional))
                for optional, required in _SEGMENT.findall(body)]

    def nodes(self) -> list[str]:
        """The header's nodes in long form, default nodes left out
        (``['OXC', 'SWITch', 'CONNect', 'ADD']``)."""
        return [node for node, optional in self._segments() if not optional]

    def paths(self) -> list[list[str]]:
        """Every node path that names this command: with and without each default node
        (``:SYSTem:ERRor[:NEXT]?`` -> ``[['SYSTem', 'ERRor'], ['SYSTem', 'ERRor', 'NEXT']]``)."""
        paths: list[list[str]] = [[]]
        for node, optional in self._segments():
            paths = [*paths, *([*p, node] for p in paths)] if optional else [
                [*p, node] for p in paths]
        return sorted(paths, key=len)

    def short(self) -> str:
        """The short form as sent on the wire, with ``?`` for a query."""
        return self._short

    @cached_property
    def _short(self) -> str:
        # made once: a controller renders a power query at every alarm of a cable cut
        if self.is_common:
            return self.header
        return "".join(":" + short_form(node) for node in self.nodes()) + (
            "?" if self.is_query else "")

    def short_with(self, suffixes: Mapping[str, int]) -> str:
        """The short form with numeric suffixes on the nodes named (long form, any case):
        ``short_with({"SENSe": 2, "CHANnel": 1})`` -> ``:SENS2:CHAN1:POW?``."""
        if self.is_common:
            return self.header
        wanted = {name.upper(): number for name, number in suffixes.items()}
        unknown = set(wanted) - {node.upper() for node in self.nodes()}
        if unknown:
            raise ValueError(f"{self.header} has no node {sorted(unknown)}")
        parts = [":" + short_form(node) + (str(wanted[node.upper()])
                                           if node.upper() in wanted else "")
                 for node in self.nodes()]
        return "".join(parts) + ("?" if self.is_query else "")


def short_form(node: str) -> str:
    """The capital letters of a long-form node: ``SWITch`` -> ``SWIT``."""
    short = "".join(ch for ch in node if not ch.islower())
    return short or node.upper()
