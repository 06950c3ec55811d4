"""``msoctl journal``: move journals in and out, and keep them in size.

- ``import FILE.jsonl...``: the JSON-lines journals of earlier versions (or an export)
  into the journal in use; torn lines are skipped, a record already present is not
  added twice.
- ``export [-o FILE]``: every record as JSON lines, in journal order, for archives and
  other tools.
- ``prune --before DATE``: remove the operations that ended before DATE; an open
  operation (running, or interrupted and not yet closed) is never removed.
- ``info``: where the journal is, its schema version and its size.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from drivers.errors import ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option
from msoctl.cli.types import OutputFile
from msoctl.journal import Journal, JournalError
from msoctl.journal.jsonl import export_jsonl, import_jsonl
from msoctl.outfile import output
from msoctl.words import counted


@click.group()
def journal() -> None:
    """The change journal: import, export, prune, info."""


def journal_date(text: str) -> str:
    """``2025-01-31`` (midnight UTC) or an ISO 8601 time (UTC without an offset) in the
    journal's timestamp format; raises ValidationError."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(f"--before {text!r}: give a date (2025-01-31) or an ISO 8601 "
                              "time (2025-01-31T12:00:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


@journal.command("import")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@pass_context
def import_command(ctx: Context, files: tuple[Path, ...]) -> None:
    """Add the records of JSON-lines journals (FILE.jsonl) to the journal in use."""
    target = Journal(ctx.journal.location, importing=True)
    for path in files:
        if target.path is not None and target.path.exists() \
                and os.path.samefile(path, target.path):
            raise ValidationError(f"{path} is the journal itself")
        report = import_jsonl(target, path)
        if not report.lines:
            click.echo(f"{path}: empty, nothing imported into {target.where}")
            continue
        click.echo(f"{path}: {counted(report.added, 'record')} imported into {target.where}"
                   + (f", {report.present} already there" if report.present else "")
                   + (f", {counted(report.skipped, 'line')} skipped (torn or not records)"
                      if report.skipped else ""))


@journal.command("export")
@click.option("-f", "--file", "out_file", type=OutputFile(), metavar="FILE",
              help="Write here (replaced when complete) instead of standard output.")
@pass_context
def export_command(ctx: Context, out_file: Path | None) -> None:
    """Every record as JSON lines, in journal order."""
    source = ctx.journal
    if out_file is None:
        export_jsonl(source, sys.stdout)
        return
    try:
        with output(out_file) as handle:
            count = export_jsonl(source, handle)
    except OSError as error:
        if not isinstance(error, JournalError):
            error = JournalError(f"cannot write {out_file}: {error.strerror}")
        raise error from None
    click.echo(f"{counted(count, 'record')} exported from {source.where} to {out_file}", err=True)


@journal.command("prune")
@click.option("--before", "before", required=True, metavar="DATE",
              help="Remove operations that ended before this (2025-01-31, or ISO 8601).")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@pass_context
def prune_command(ctx: Context, before: str, dry_run: bool) -> None:
    """Remove old closed operations; open ones (running or interrupted) always stay."""
    cutoff = journal_date(before)
    target = ctx.journal
    operations, records = target.store.prune(cutoff, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {counted(operations, 'operation')}, {counted(records, 'record')} "
               f"that ended before {cutoff} from {target.where}; open operations are kept")


@journal.command("info")
@output_option
@pass_context
def info_command(ctx: Context, output: str) -> None:
    """Where the journal is, its store, its schema version and how much it holds."""
    target = ctx.journal
    document: dict[str, Any] = {"journal": target.where, "store": target.location.kind,
                                "schema_version": target.store.schema_version(),
                                **target.store.counts()}
    if output in DOCUMENTS:
        emit(document, output)
        return
    for key, value in document.items():
        click.echo(f"{key.replace('_', ' ')}: {value}")
