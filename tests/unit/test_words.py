"""Counted nouns: what msoctl prints says ``1 path`` and ``3 paths``, never ``path(s)``."""

from __future__ import annotations

import ast
import re

import pytest

from msoctl.words import counted, plural
from tests.support.paths import ROOT

HEDGED = re.compile(r"[a-z]\((?:s|es)\)")
"""A noun hedging its number: ``path(s)``, ``switch(es)``."""


@pytest.mark.parametrize(("count", "noun", "said"), [
    (0, "path", "0 paths"), (1, "path", "1 path"), (2, "path", "2 paths"),
    (1, "switch", "1 switch"), (3, "switch", "3 switches"), (2, "address", "2 addresses"),
    (2, "leaf", "2 leaves"), (12_345, "record", "12,345 records"),
    (2, "big switch", "2 big switches"), (1, "lit path", "1 lit path")])
def test_a_count_takes_the_noun_in_its_number(count: int, noun: str, said: str) -> None:
    plural_form = "big switches" if noun == "big switch" else None
    assert counted(count, noun, plural_form) == said
    assert plural(count, noun, plural_form) == said.split(" ", 1)[1]


def test_no_string_the_program_prints_hedges_a_noun_with_s_in_brackets() -> None:
    """Every string literal of msoctl, drivers and emulators (f-strings' text included)."""
    found = []
    for package in ("msoctl", "drivers", "emulators"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if not HEDGED.search(text):
                continue  # most files: no need to parse them
            tree = ast.parse(text)
            docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                          if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                               ast.AsyncFunctionDef))
                          and node.body and isinstance(node.body[0], ast.Expr)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and id(node) not in docstrings and HEDGED.search(node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)
