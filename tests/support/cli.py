"""``msoctl`` run in the test's own process, its exit code and output captured."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from msoctl.cli import run


@dataclass
class Result:
    code: int
    out: str
    err: str


Msoctl = Callable[..., Result]


def in_process(capsys: pytest.CaptureFixture[str]) -> Msoctl:
    """``msoctl ARGS`` run in this process, with its exit code and captured output."""

    def call(*args: str) -> Result:
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


def one_error_line(result: Result) -> str:
    """The one ``error:`` line of a refused command (exit 2), checked to be just that: no
    traceback, no internal error, nothing else on standard error."""
    assert result.code == 2, result
    assert "Traceback" not in result.err + result.out
    assert result.err.startswith("error: ") and result.err.count("\n") == 1, result.err
    assert "internal error" not in result.err, result.err
    return str(result.err).strip()
