"""JSON lines in and out: importing the journals of earlier versions, exporting archives.

Import reads a JSON-lines journal (one record per line, as msoctl wrote it before the
journal became a database) in order, skipping what a crash may have left (a torn line,
a line that is not a record), and adds each record with an id derived from the line's
bytes: importing the same file twice, or two copies that overlap, adds each record
once. Export writes every record, in journal order, one JSON object per line, a page
at a time (flat memory at any size); importing an export gives the same records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from msoctl.journal.core import Journal
from msoctl.journal.model import JournalError


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


def _records(handle: IO[bytes], report: ImportReport) -> Iterator[tuple[str, dict[str, Any]]]:
    for raw in handle:
        report.lines += 1
        try:
            record = json.loads(raw)
        except ValueError:
            report.skipped += 1  # torn by a crash mid-write
            continue
        if not isinstance(record, dict) or "op" not in record:
            report.skipped += 1
            continue
        record["op"] = str(record["op"])
        yield line_id(raw), record


def import_jsonl(journal: Journal, path: Path) -> ImportReport:
    """Add the records of the JSON-lines file ``path`` to ``journal``."""
    report = ImportReport()
    try:
        handle = path.open("rb")
    except OSError as error:
        raise JournalError(f"cannot read {path}: {error.strerror}") from None
    with handle:
        try:
            report.added, report.present = journal.store.import_records(
                _records(handle, report))
        except OSError as error:
            if isinstance(error, JournalError):
                raise
            raise JournalError(f"cannot read {path}: {error.strerror}") from None
    return report


def export_jsonl(journal: Journal, out: IO[str]) -> int:
    """Write every record of ``journal`` to ``out``, one line each; returns how many."""
    count = 0
    for _, body in journal.store.raw_records():
        out.write(body)
        out.write("\n")
        count += 1
    return count
