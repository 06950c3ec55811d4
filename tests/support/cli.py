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
