"""The line format the SCPI vector files share (tests/vectors/ocs_scpi.txt,
ocs_alarms.txt): ``#`` comments and blank lines skipped, and ``header KEY LONG SHORT
PARAMS`` lines naming a command-table entry the way the reference writes it. Each file's
own lines (cases, steps, decodes) are its test module's to read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HeaderVector:
    line: int
    key: str
    long: str
    short: str
    params: tuple[str, ...]


def vector_lines(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, line without trailing blanks, ``file:line``) of every line that is
    not blank or a comment."""
    for number, raw in enumerate(path.read_text(encoding="ascii").splitlines(), start=1):
        line = raw.rstrip()
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line, f"{path.name}:{number}"


def header_vector(number: int, line: str, where: str) -> HeaderVector:
    """A ``header KEY LONG SHORT PARAMS`` line (PARAMS comma-separated, ``-`` for none);
    ValueError naming ``where`` when it has not those five fields."""
    fields = line.split()
    if len(fields) != 5:
        raise ValueError(f"{where}: header needs KEY LONG SHORT PARAMS")
    params = () if fields[4] == "-" else tuple(fields[4].split(","))
    return HeaderVector(number, fields[1], fields[2], fields[3], params)
