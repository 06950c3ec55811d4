"""Tables for people, JSON for scripts (``-o json``): one document on stdout."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import click

from msoctl import impact

FORMATS = ("table", "json")

output_option = click.option(
    "-o", "--output", "output", type=click.Choice(FORMATS), default="table", show_default=True,
    help="Print a table, or one JSON document.",
)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def emit_json(document: dict[str, Any]) -> None:
    click.echo(json.dumps(_clean(document), indent=2))


def cell(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [all(_numeric(row[i]) for row in cells) and bool(cells) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w)
                 for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line([h.upper() for h in headers])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return text == "-"
    return True


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{k + ':':<{width + 1}} {cell(v)}" for k, v in pairs)


def describe_impacts(impacts: Sequence[impact.Impact]) -> str:
    """The impact as operators read it: a table of the links touched, worst first, or the
    one line that says there are none."""
    if not impacts:
        return "impact: no inventory link is darkened, moved or disturbed"
    rows = [[i.link, i.effect, i.span if i.to_span is None else f"{i.span} -> {i.to_span}",
             i.service, i.reason + (" (span assumed: an OCS map was unreadable)"
                                    if i.assumed else "")]
            for i in impact.worst_first(impacts)]
    return "impact on links:\n" + table(["link", "effect", "span", "service", "why"], rows)
