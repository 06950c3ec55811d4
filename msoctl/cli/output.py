"""What a command prints: tables for people, one JSON or YAML document for scripts.

``-o table`` (the default) fits a table in :data:`WIDTH` columns: the columns a table
marks wide-only are left out, and when it is still too wide the widest text column is
cut with ``…`` (a number never is). ``-o wide`` prints every column in full. ``-o json``
prints one JSON document, the contract scripts rely on; ``-o yaml`` the same document
as YAML. On a terminal the states in tables and fields (ok, low, dark, lost, down...) are
coloured (:data:`STATE_COLOURS`) when the root decided colour is wanted (``--color``,
``NO_COLOR``, ``TERM``; see :func:`msoctl.cli.colour_wanted`). ``--watch SECONDS``
(:func:`watch_option`) reruns a show command until Ctrl-C (:mod:`msoctl.cli.watch`).
"""

from __future__ import annotations

import functools
import json
import math
import re
import textwrap
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from msoctl import impact
from msoctl.cli.types import Count, Number

FORMATS = ("table", "wide", "json", "yaml")
DOCUMENTS = ("json", "yaml")
"""The formats that print one document (the same one) instead of text."""
WIDTH = 80
GAP = "  "
ELLIPSIS = "…"
MIN_CUT = 6  # a text column is never cut narrower than this (or its title)
_FORMAT_KEY = "msoctl.output"  # in click's Context.meta, shared by a command's contexts
_WATCH_KEY = "msoctl.watching"

STATE_COLOURS: dict[str, str] = {
    **dict.fromkeys(("ok", "lit", "arrives", "enabled", "done", "applied", "confirmed",
                     "restored", "pass"), "green"),
    **dict.fromkeys(("low", "high", "warn", "warning", "disturbed", "at risk", "pending",
                     "moved", "unprotected", "interrupted", "partly applied", "low_warning",
                     "still dark",
                     "high_warning"), "yellow"),
    **dict.fromkeys(("dark", "lost", "down", "failed", "refused", "unlit", "not applied",
                     "low_alarm", "high_alarm", "fail"), "red"),
}
"""The colour of each state word a table or a field may show, on a terminal."""
_LONGEST_FIRST = sorted(STATE_COLOURS, key=len, reverse=True)


def _remember_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    ctx.meta[_FORMAT_KEY] = value  # every table of the command reads it (-o wide)
    return value


output_option = click.option(
    "-o", "--output", "output", type=click.Choice(FORMATS), default="table", show_default=True,
    callback=_remember_format,
    help="table (fits 80 columns), wide (every column), or one document: json or yaml.",
)


def output_format() -> str:
    """The ``-o`` of the command running now (``table`` outside one, or without ``-o``)."""
    ctx = click.get_current_context(silent=True)
    return str(ctx.meta.get(_FORMAT_KEY, "table")) if ctx is not None else "table"


def colour_on() -> bool:
    """Whether this command colours what it prints (the root decided; see
    :func:`msoctl.cli.colour_wanted`)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.color is True


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def emit(document: dict[str, Any], output: str = "json") -> None:
    """Print ``document`` as ``output`` (json or yaml): NaN and infinities as null. YAML is
    the JSON document itself (what JSON would give back), keys in their order. Under
    ``--watch`` a JSON document takes one line and a YAML one starts with ``---``."""
    watching = _watching()
    text = json.dumps(_clean(document), indent=None if watching else 2)
    if output != "yaml":
        click.echo(text)
        return
    import yaml  # only for -o yaml

    click.echo(yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True,
                              explicit_start=watching), nl=False)


def emit_json(document: dict[str, Any]) -> None:
    emit(document, "json")


def cell(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def paint(text: str) -> str:
    """``text`` with its state coloured when this command colours: a whole state
    (``lost``), or one that ends the text (``span-1 lit``)."""
    if not colour_on():
        return text
    lowered = text.lower()
    for state in _LONGEST_FIRST:  # "not applied" before "applied"
        if lowered == state or lowered.endswith(" " + state):
            cut = len(text) - len(state)
            return text[:cut] + click.style(text[cut:], fg=STATE_COLOURS[state])
    return text


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
          wide_only: Collection[str] = (), cut: Collection[str] | None = None,
          wrap: Collection[str] = (), wrap_lines: int = 4, wide: bool | None = None,
          width: int = WIDTH) -> str:
    """Rows under upper-cased ``headers``, numbers right-aligned. Unless ``wide`` (default:
    ``-o wide`` was given), the columns named in ``wide_only`` are left out and the
    widest text column (of those named in ``cut``, when given: names and times are
    better whole) is narrowed one character at a time until the table fits ``width``
    columns or nothing more can give: no column narrower than its title or
    :data:`MIN_CUT`, and no number. A column named in ``wrap`` (the words that matter:
    a reason, a detail) then goes on in lines of its own under itself, ``wrap_lines`` at
    most; any other is cut with ``…``."""
    if wide is None:
        wide = output_format() == "wide"
    keep = [i for i, name in enumerate(headers) if wide or name not in wide_only]
    titles = [headers[i].upper() for i in keep]
    cells = [[cell(row[i]) for i in keep] for row in rows]
    numeric = [bool(cells) and all(_numeric(row[c]) for row in cells)
               for c in range(len(keep))]
    widths = [max([len(title), *(len(row[c]) for row in cells)])
              for c, title in enumerate(titles)]
    if not wide:
        may_cut = [not number and (cut is None or headers[i] in cut)
                   for i, number in zip(keep, numeric, strict=True)]
        widths = _fit(titles, cells, widths, may_cut, width)

    def line(values: Sequence[str], *, heading: bool = False) -> str:
        parts = []
        for value, size, number in zip(values, widths, numeric, strict=True):
            text = value if len(value) <= size else value[:size - 1].rstrip() + ELLIPSIS
            shown = text if heading else paint(text)
            pad = " " * (size - len(text))  # by the visible length: colour adds none
            parts.append(pad + shown if number else shown + pad)
        return GAP.join(parts).rstrip()

    wrapping = [not wide and headers[i] in wrap for i in keep]

    def lines(values: Sequence[str]) -> list[str]:
        columns = [_wrapped(value, size, wrap_lines) if wraps and len(value) > size
                   else [value]
                   for value, size, wraps in zip(values, widths, wrapping, strict=True)]
        return [line([column[k] if k < len(column) else "" for column in columns])
                for k in range(max(len(column) for column in columns))]

    out = [line(titles, heading=True)]
    for row in cells:
        out.extend(lines(row))
    return "\n".join(out)


def _wrapped(value: str, size: int, most: int) -> list[str]:
    """``value`` in lines of at most ``size``, at spaces: a word longer than a line is cut
    with ``…`` (not broken across lines), and at most ``most`` lines, the last of them
    ending with ``…`` when more would follow."""
    pieces = [piece if len(piece) <= size else piece[:size - 1] + ELLIPSIS
              for piece in textwrap.wrap(value, size, break_long_words=False,
                                         break_on_hyphens=False)] or [value]
    if len(pieces) > most:
        pieces = pieces[:most]
        last = pieces[-1].removesuffix(ELLIPSIS)
        pieces[-1] = (last if len(last) < size else last[:size - 1]).rstrip() + ELLIPSIS
    return pieces


def _fit(titles: list[str], cells: list[list[str]], widths: list[int], may_cut: list[bool],
         width: int) -> list[int]:
    """Column widths that fit ``width``: one character at a time, always off the widest
    column that may be cut and can still give."""
    floors = [max(len(title), MIN_CUT, *(len(row[c]) for row in cells if _numeric(row[c])))
              for c, title in enumerate(titles)]
    fitted = list(widths)
    excess = sum(fitted) + len(GAP) * (len(fitted) - 1) - width
    while excess > 0:
        cuttable = [c for c, size in enumerate(fitted) if may_cut[c] and size > floors[c]]
        if not cuttable:
            break
        widest = max(cuttable, key=lambda c: fitted[c])
        fitted[widest] -= 1
        excess -= 1
    return fitted


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return text == "-"
    return True


def fields(pairs: Sequence[tuple[str, Any]], *, width: int = WIDTH) -> str:
    """``key: value`` lines, values aligned; a long value wraps under itself, and a value
    that is a state is coloured."""
    key_width = max(len(k) for k, _ in pairs) + 1
    lines = []
    for key, value in pairs:
        text = cell(value)
        head = f"{key + ':':<{key_width}} "
        wrapped = textwrap.wrap(text, max(width - len(head), 20), break_long_words=False,
                                break_on_hyphens=False) or [text]
        lines.append(head + (paint(text) if len(wrapped) == 1 else wrapped[0]))
        lines.extend(" " * len(head) + more for more in wrapped[1:])
    return "\n".join(lines)


_QUANTITY = re.compile(r"(\d) (dBm|dB|ms|s|us|km|m|mA|V|W|B|kB|MB|GB|°C|%)(?=\W|$)")


def wrap(text: str, *, indent: int = 2, width: int = WIDTH) -> str:
    """A line of prose within ``width`` columns: continuation lines indented by
    ``indent``; words (paths, URLs) are never broken, nor a number from its unit."""
    if len(text) <= width:
        return text
    glued = _QUANTITY.sub("\\1\N{NO-BREAK SPACE}\\2", text)  # textwrap breaks only at spaces
    return textwrap.fill(glued, width, subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False
                         ).replace("\N{NO-BREAK SPACE}", " ")


def say(text: str, *, indent: int = 2) -> None:
    """Print a line of prose, wrapped within :data:`WIDTH` columns (:func:`wrap`)."""
    click.echo(wrap(text, indent=indent))


def say_comment(text: str) -> None:
    """Print a line of prose as a YAML comment: wrapped like :func:`say`, every line of
    it starting ``# ``, so that output saved to a file (a WANT file) still parses."""
    wrapped = wrap(text, indent=0, width=WIDTH - 2)
    click.echo("\n".join(f"# {line}".rstrip() for line in wrapped.splitlines()))


def echo_or_write(text: str, path: Path | None) -> None:
    """``text`` (a document, a WANT file) on standard output, or written to ``path`` (as
    :mod:`msoctl.outfile` writes) and a ``# wrote PATH`` comment printed."""
    if path is None:
        click.echo(text, nl=False)
        return
    from msoctl.outfile import write_output

    write_output(path, text)
    say_comment(f"wrote {path}")


def describe_impacts(impacts: Sequence[impact.Impact]) -> str:
    """The impact as operators read it: a table of the links touched, worst first, or the
    one line that says there are none; then the kept jobs whose traffic crosses them."""
    if not impacts:
        return "impact: no inventory link is darkened, moved or disturbed"
    rows = [[i.link, i.effect, i.span if i.to_span is None else f"{i.span} -> {i.to_span}",
             i.service, i.reason + (" (span assumed: an OCS map was unreadable)"
                                    if i.assumed else "")]
            for i in impact.worst_first(impacts)]
    text = "impact on links:\n" + table(["link", "effect", "span", "service", "why"], rows,
                                         cut=("why",), wrap=("why",))
    jobs = jobs_touched(impacts)
    if jobs is None:
        return text + "\n" + wrap("jobs on these links: unknown (the journal cannot be "
                                  "read)", indent=2)
    if jobs:
        listed = ", ".join(f"{name} ({', '.join(links)})" for name, links in jobs.items())
        return text + "\n" + wrap(f"jobs on these links: {listed}", indent=2)
    return text


def jobs_touched(impacts: Sequence[impact.Impact]) -> dict[str, list[str]] | None:
    """The kept jobs (msoctl/jobs/registry.py) whose traffic crosses a link a change
    darkens, moves or disturbs: job -> those links; None when the journal cannot be read
    (a change is not refused for that)."""
    touched = {i.link for i in impacts if i.effect != "restored"}
    ctx = click.get_current_context(silent=True)
    holder = None if ctx is None else ctx.find_object(object)
    jobs_on = getattr(holder, "jobs_on", None)
    if not touched or jobs_on is None:
        return {}
    found: dict[str, list[str]] | None = jobs_on(touched)
    return found


# ---- --watch ---------------------------------------------------------------------------

MIN_WATCH_SECONDS = 0.2
MAX_WATCH_SECONDS = 86_400.0

F = TypeVar("F", bound=Callable[..., Any])


def _watching() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.meta.get(_WATCH_KEY))


def _command_line(ctx: click.Context) -> str:
    """What a watch runs, as the operator wrote it: the command and its arguments."""
    words = [ctx.command_path]
    for param in ctx.command.params:
        if isinstance(param, click.Argument):
            value = ctx.params.get(param.name or "")
            words.extend(map(str, value if isinstance(value, tuple | list) else
                             () if value is None else (value,)))
    return " ".join(words)


def watch_option(command: F) -> F:
    """``--watch SECONDS`` for a show command: put it right under ``@group.command()``.

    Without it the command runs once. With it the command's callback runs every SECONDS
    until Ctrl-C (exit 0) and :func:`msoctl.cli.watch.watch` shows each run. The hidden
    ``--watch-count N`` stops after N runs (for tests and scripts)."""

    @functools.wraps(command)
    def run(*args: Any, watch: float | None, watch_count: int | None, **kwargs: Any) -> Any:
        if watch is None:
            if watch_count is not None:
                raise click.UsageError("--watch-count needs --watch")
            return command(*args, **kwargs)
        from msoctl.cli.watch import watch as watch_loop  # only when watching

        ctx = click.get_current_context()
        ctx.meta[_WATCH_KEY] = True
        output = output_format()

        def show_error(message: str) -> None:
            if output in DOCUMENTS:
                emit({"error": message}, output)
            else:
                click.echo(f"error: {message}")

        def once() -> Any:
            state = ctx.find_root().obj
            if state is not None:
                state.forget_readings()  # each run reads the devices anew
            return command(*args, **kwargs)

        return watch_loop(once, seconds=watch, count=watch_count,
                          documents=output in DOCUMENTS, show_error=show_error,
                          title=_command_line(ctx))

    run = click.option("--watch-count", type=Count(1, 1_000_000), hidden=True,
                       help="Stop after N runs.")(run)
    run = click.option("--watch", type=Number(MIN_WATCH_SECONDS, MAX_WATCH_SECONDS),
                       metavar="SECONDS",
                       help=f"Run again every SECONDS (at least {MIN_WATCH_SECONDS:g}), "
                            "redrawn in place on a terminal, until Ctrl-C.")(run)
    return run  # type: ignore[return-value]
