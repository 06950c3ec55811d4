"""JSON lines in and out: importing the journals of earlier versions, exporting archives.

Import reads a JSON-lines journal (one record per line, as msoctl wrote it before the
journal became a database) in order, skipping what a crash may have left (a torn line,
a line that is not a record), and adds each record with an id derived from the line's
bytes: importing the same file twice, or two copies that overlap, adds each record
once. Export writes every record, in journal order, one JSON object per line, a page
at a time (flat memory at any size); importing an export gives the same records.

What import reads is bounded like every file msoctl reads: a regular file only (a FIFO
or a device such as ``/dev/zero`` is refused unread), at most :data:`MAX_IMPORT_BYTES`,
each line at most :data:`MAX_LINE_BYTES` (a longer one is skipped without being held
in memory); a file with lines but no record in it, or none in its first hundred, is
not a journal, and is refused (without reading the rest). An empty file is an empty
journal (what an export of one writes): nothing to add.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from drivers.errors import ValidationError
from drivers.yamlfile import YamlFileError, open_regular
from msoctl.journal.core import Journal
from msoctl.journal.location import SQLITE_MAGIC
from msoctl.journal.model import JournalError
from msoctl.words import counted

MAX_IMPORT_BYTES = 4 * 2**30
"""The largest JSON-lines file an import reads (some ten million records)."""
MAX_LINE_BYTES = 1 * 2**20
"""The longest line taken for a record; msoctl's own records are a few kilobytes."""
NOT_A_JOURNAL_LINES = 100
"""A file whose first this many lines hold no record is not a journal: it is refused
there, not read to its end (a crash tears the last line of a journal, not its first
hundred)."""


@dataclass
class ImportReport:
    lines: int = 0
    added: int = 0
    present: int = 0
    skipped: int = 0
    """Lines that are not records: torn by a crash, blank, or not a JSON object with op."""


def line_id(raw: bytes) -> str:
    """The record id of an imported line: the same bytes give the same id."""
    return hashlib.sha256(b"msoctl-jsonl:" + raw.strip()).hexdigest()[:24]


def _not_finite(constant: str) -> float:
    raise ValueError(f"{constant} is not a JSON number")


def _records(lines: Iterable[bytes], report: ImportReport, path: Path
             ) -> Iterator[tuple[str, dict[str, Any]]]:
    found = False
    for raw in lines:
        report.lines += 1
        if not found and report.skipped >= NOT_A_JOURNAL_LINES:
            raise ValidationError(f"{path}: no journal record in its first "
                                  f"{NOT_A_JOURNAL_LINES} lines: not a JSON-lines journal "
                                  "(as msoctl journal export writes)")
        try:  # NaN and Infinity are not JSON: such a line is not one msoctl wrote
            record = json.loads(raw, parse_constant=_not_finite)
        except ValueError:
            report.skipped += 1  # torn by a crash mid-write
            continue
        if not isinstance(record, dict) or "op" not in record:
            report.skipped += 1
            continue
        record["op"] = str(record["op"])
        found = True
        yield line_id(raw), record


def import_jsonl(journal: Journal, path: Path) -> ImportReport:
    """Add the records of the JSON-lines file ``path`` to ``journal``. Raises
    :class:`~drivers.errors.ValidationError`, with nothing added, for what is not a
    journal to import (see the module's docstring), and JournalError when it cannot be
    read or stored."""
    report = ImportReport()
    handle = _open_regular(path)
    with handle:
        if handle.peek(len(SQLITE_MAGIC))[:len(SQLITE_MAGIC)] == SQLITE_MAGIC:
            raise ValidationError(f"{path} is an SQLite journal, not JSON lines: point "
                                  "--journal at it, or export it first")
        try:
            report.added, report.present = journal.store.import_records(
                _records(_bounded_lines(handle, report), report, path))
        except OSError as error:
            if isinstance(error, JournalError):
                raise
            raise JournalError(f"cannot read {path}: {error.strerror}") from None
    if report.lines and not report.added and not report.present:
        raise ValidationError(f"{path}: no journal record in its {counted(report.lines, 'line')}: "
                              "not a JSON-lines journal (as msoctl journal export writes)")
    return report


def _open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading: a regular file of at most MAX_IMPORT_BYTES, else
    ValidationError, unread (drivers.yamlfile.open_regular: every file msoctl reads)."""
    try:
        return open_regular(path, max_bytes=MAX_IMPORT_BYTES)
    except YamlFileError as error:
        raise ValidationError(f"{error}: a journal to import is a JSON-lines file") from None


def _bounded_lines(handle: IO[bytes], report: ImportReport) -> Iterator[bytes]:
    """The lines of ``handle``, each at most MAX_LINE_BYTES (a longer one is read past,
    counted as skipped, never held whole), and no more than MAX_IMPORT_BYTES in all (a
    file that grows as it is read stops there)."""
    total = 0
    while total <= MAX_IMPORT_BYTES:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        total += len(line)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (rest := handle.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                total += len(rest)
            total += len(rest)
            report.lines += 1
            report.skipped += 1
            continue
        yield line


def export_jsonl(journal: Journal, out: IO[str]) -> int:
    """Write every record of ``journal`` to ``out``, one line each; returns how many."""
    count = 0
    for _, body in journal.store.raw_records():
        out.write(body)
        out.write("\n")
        count += 1
    return count
