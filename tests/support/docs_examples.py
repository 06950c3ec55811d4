"""The console examples of README.md and docs/, read from the Markdown at test time.

A fenced block is an example when its info string is ``console`` (a transcript: ``$ ``
before each command, its output below it) or ``sh`` (commands, one a line, ``#``
comments). An HTML comment on the lines just before the fence says what the block
needs, items separated by ``;``::

    <!-- example: not run (needs real hardware) -->   skipped, and counted, with the reason
    <!-- example: exit 3 -->                         the last command exits 3 (others 0)
    <!-- example: lab with link-1 up -->             link-1 up on its working span first
    <!-- example: continues -->                       the lab as the block before left it
    <!-- example: file fabric.yaml -->                a block of any kind, written as the
                                                      file named, in the page's directory,
                                                      before the page's examples run

A block without an info string that holds a command (a line beginning ``$ `` or
``msoctl ``) is an error: every example is labelled, so none is left out silently.

Output is compared as text with its whitespace collapsed (tables' column widths and
the 80-column wrapping of prose lines do not count); decimal numbers, times, dates,
journal ids and counts of a unit (``32 ms``) match any value of their kind; a line
``...`` matches any output, and a transcript that does not end with one must match
the whole output. ``...`` within a line matches any text there (a cause that differs
from one run to the next, say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMAND_LANGUAGES = {"console", "sh", "shell", "bash"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>```+|~~~+)\s*(?P<info>[^`\s]*)")
DIRECTIVE = re.compile(r"^<!--\s*example:\s*(?P<items>.*?)\s*-->\s*$")
NOT_RUN = re.compile(r"^not run \((?P<reason>.+)\)$")
LAB_STATES = ("link-1 up",)


class ExampleError(ValueError):
    """A block of the Markdown that is not a valid example (a file, a line, why)."""


@dataclass
class Command:
    line: int  # in the Markdown file
    text: str  # the command line, continuation lines joined
    expected: list[str] | None = None  # a transcript's output lines; None in an sh block


@dataclass
class Example:
    path: str  # relative to the repository
    line: int  # of the opening fence
    language: str
    body: str
    not_run: str | None = None
    exit_code: int = 0
    lab: str | None = None
    continues: bool = False
    file: str | None = None
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def markdown_files() -> list[Path]:
    """README.md and every page under docs/, in a fixed order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(path: Path) -> list[Example]:
    """The examples (and the files to write) of one Markdown file, in order.

    Raises :class:`ExampleError` for a directive it does not know, a directive on a
    block that is no example, or an unlabelled block that holds commands."""
    relative = path.relative_to(ROOT).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        fence, info = opening["fence"], opening["info"].lower()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and not lines[index].lstrip().startswith(fence):
            body.append(lines[index])
            index += 1
        index += 1
        example = Example(relative, start + 1, info, "\n".join(body) + "\n")
        directives = _directives(lines, start)
        for item in directives:
            _apply(example, item)
        if example.file is not None:
            found.append(example)
            continue
        if info in COMMAND_LANGUAGES:
            example.commands = _commands(example, start + 2, body)
            found.append(example)
        elif directives:
            raise ExampleError(f"{example.where}: a directive on a '{info or 'plain'}' "
                               "block, which is no example")
        elif not info and any(line.startswith(("$ ", "msoctl ")) for line in body):
            raise ExampleError(f"{example.where}: a block of commands without a language: "
                               "write ```console (a transcript) or ```sh (commands)")
    return found


def _directives(lines: list[str], fence: int) -> list[str]:
    """The items of the directive comment just before line ``fence`` (blank lines
    between allowed)."""
    above = fence - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0:
        return []
    matched = DIRECTIVE.match(lines[above].strip())
    if not matched:
        return []
    items, depth, current = [], 0, ""
    for char in matched["items"]:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [item.strip() for item in [*items, current] if item.strip()]


def _apply(example: Example, item: str) -> None:
    not_run = NOT_RUN.match(item)
    if not_run:
        example.not_run = not_run["reason"]
    elif re.fullmatch(r"exit \d+", item):
        example.exit_code = int(item.split()[1])
    elif item.startswith("lab with "):
        state = item.removeprefix("lab with ")
        if state not in LAB_STATES:
            raise ExampleError(f"{example.where}: no lab state '{state}' "
                               f"(known: {', '.join(LAB_STATES)})")
        example.lab = state
    elif item == "continues":
        example.continues = True
    elif re.fullmatch(r"file [\w.-]+", item):
        example.file = item.split()[1]
    else:
        raise ExampleError(f"{example.where}: unknown example directive '{item}'")


def _commands(example: Example, first_line: int, body: list[str]) -> list[Command]:
    commands: list[Command] = []
    if example.language == "console":
        current: Command | None = None
        pending = ""
        for offset, line in enumerate(body):
            if pending:
                pending += " " + line.strip()
                if not line.endswith("\\"):
                    assert current is not None
                    current.text = pending
                    pending = ""
                else:
                    pending = pending[:-1].rstrip()
                continue
            if line.startswith("$ "):
                current = Command(first_line + offset, "", [])
                commands.append(current)
                if line.endswith("\\"):
                    pending = line[2:-1].rstrip()
                else:
                    current.text = line[2:].strip()
            elif current is not None and current.expected is not None:
                current.expected.append(line)
            elif line.strip() and not line.startswith("#"):
                raise ExampleError(f"{example.path}:{first_line + offset}: a console "
                                   "block's first line is a command ('$ ...') or a comment")
        for command in commands:
            if command.expected is not None:
                while command.expected and not command.expected[-1].strip():
                    command.expected.pop()
        return commands
    pending = ""
    start = 0
    for offset, line in enumerate(body):
        if not pending:
            start = first_line + offset
        text = (pending + " " + line.strip()) if pending else line.strip()
        if text.endswith("\\"):
            pending = text[:-1].rstrip()
            continue
        pending = ""
        line_text = _without_comment(text)
        if line_text:
            commands.append(Command(start, line_text))
    return commands


def _without_comment(text: str) -> str:
    """``text`` less a trailing ``# comment`` (for a line shlex would split apart)."""
    quote = ""
    for position, char in enumerate(text):
        if char in "\"'" and (not quote or quote == char):
            quote = "" if quote else char
        elif char == "#" and not quote and (position == 0 or text[position - 1] == " "):
            return text[:position].rstrip()
    return text.strip()


# ---- comparing output -------------------------------------------------------------------

_VARIABLE = re.compile(
    r"(?P<date>\d{4}-\d\d-\d\d)"
    r"|(?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)"
    r"|(?P<day>(?<![\w-])\d\d-\d\d(?![\w-]))"
    r"|(?P<id>(?<![\w-])[0-9a-f]{12}(?![\w-]))"
    r"|(?P<decimal>[-+]?\d[\d,]*\.\d+)"
    r"|(?P<count>\d[\d,]*(?= ?(?:ms|s|%|MB|GB|dBm|dB)(?![\w])))")
_PATTERNS = {
    "date": r"\d{4}-\d\d-\d\d", "time": r"\d\d:\d\d:\d\d(?:\.\d+)?",
    "day": r"\d\d-\d\d", "id": r"[0-9a-f]{12}", "decimal": r"[-+]?\d[\d,]*\.\d+",
    "count": r"\d[\d,]*",
}


def collapse(text: str) -> str:
    return " ".join(text.split())


def output_pattern(expected: list[str]) -> re.Pattern[str]:
    """The regular expression a command's collapsed output must match (see the module's
    docstring)."""
    segments: list[list[str]] = [[]]
    for line in expected:
        if line.strip() == "...":
            segments.append([])
        else:
            segments[-1].append(line)
    parts = [r".*?".join(_segment(piece.strip()) for piece in
                         collapse("\n".join(lines)).split("..."))
             for lines in segments]
    gap = r".*?"
    pattern = r"\A" + gap.join(part for part in parts)
    if expected and expected[-1].strip() == "...":
        pattern += r".*"
    else:
        pattern += r"\Z"
    return re.compile(pattern, re.DOTALL)


def _segment(text: str) -> str:
    out: list[str] = []
    position = 0
    for found in _VARIABLE.finditer(text):
        out.append(re.escape(text[position:found.start()]))
        out.append(_PATTERNS[str(found.lastgroup)])
        position = found.end()
    out.append(re.escape(text[position:]))
    return "".join(out)


def matches(expected: list[str], actual: str) -> bool:
    return output_pattern(expected).search(collapse(actual)) is not None
