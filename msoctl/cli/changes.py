"""Switch configuration changes as a plan prints them.

A YANG path of a queue's leaf is some 90 characters, so within 80 columns the changes
are grouped under the list entry (or container) they belong to, each leaf written
relative to it (a heading longer than 80 columns is broken at a ``/``)::

    /switch/ports/port[name='Ethernet1']/queues/queue[queue-id='3']:
      + wred/min-threshold = 3789141
      ~ wred/enable-ecn: false -> true

``-o wide`` writes one change per line with its whole path (``+ PATH = VALUE``), to
grep or to copy. ``+`` adds a leaf, ``-`` removes one (was VALUE), ``~`` changes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from drivers.switch.tree import Change


def value_text(value: Any) -> str:
    """A leaf's value as YANG writes it: ``true``/``false``, lists in brackets."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(value_text, value)) + "]"
    return str(value)


def change_line(change: Change, path: str | None = None) -> str:
    """``+ PATH = VALUE``, ``- PATH (was VALUE)`` or ``~ PATH: BEFORE -> AFTER``, with
    ``path`` in place of the change's own when given."""
    where = change.path if path is None else path
    if change.kind == "add":
        return f"+ {where} = {value_text(change.after)}"
    if change.kind == "remove":
        return f"- {where} (was {value_text(change.before)})"
    return f"~ {where}: {value_text(change.before)} -> {value_text(change.after)}"


WIDTH = 80


def _steps(path: str) -> list[str]:
    """``path`` cut before each ``/`` that is not inside a list key's brackets."""
    steps, depth, start = [], 0, 0
    for index, character in enumerate(path):
        depth += {"[": 1, "]": -1}.get(character, 0)
        if character == "/" and depth == 0 and index > start:
            steps.append(path[start:index])
            start = index
    steps.append(path[start:])
    return steps


def _heading(parent: str, pad: str) -> list[str]:
    """``parent:`` as a heading, broken at its steps onto lines of at most 80 columns
    (a device model's path, OpenConfig's say, is often longer), each line after the
    first indented two more."""
    lines, line = [], pad
    for step in _steps(f"{parent}:"):
        if len(line) + len(step) > WIDTH and line.strip():
            lines.append(line)
            line = pad + "  "
        line += step
    lines.append(line)
    return lines


def _parent(path: str) -> tuple[str, str]:
    """(the list entry or container a leaf is in, the leaf's path under it)."""
    entry = path.rfind("]")
    if entry > 0 and path[entry + 1:].startswith("/"):
        return path[:entry + 1], path[entry + 2:]
    head, _, leaf = path.rpartition("/")
    return head or "/", leaf


def change_lines(changes: Sequence[Change], *, indent: int = 2, wide: bool = False
                 ) -> list[str]:
    """The lines of ``changes``, in their order: grouped under their parent (a heading
    each time the parent changes), or one whole path per line when ``wide``."""
    pad = " " * indent
    if wide:
        return [pad + change_line(change) for change in changes]
    lines: list[str] = []
    current = None
    for change in changes:
        parent, leaf = _parent(change.path)
        if parent != current:
            lines += _heading(parent, pad)
            current = parent
        lines.append(f"{pad}  {change_line(change, leaf)}")
    return lines
