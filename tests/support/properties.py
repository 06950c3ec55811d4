"""Random numbers for the command line (hypothesis), and what every answer to them must be."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.support.cli import Result
from tests.support.journal import journal_actions

CLI = settings(max_examples=25, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow])

number_texts = st.one_of(
    st.floats().map(repr),
    st.floats(allow_nan=False).map(lambda f: f"{f:.6e}"),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["nan", "-nan", "inf", "-inf", "Infinity", "1e999", "-1e999", "1e-999",
                     "0", "-0", "1_0", "0x10", " 5 ", "", "5e", "١٢"]),
)


def assert_clean(result: Result) -> None:
    """Exit 0 or 2, no traceback, no internal error; a refusal is one ``error:`` line."""
    assert result.code in (0, 2), result
    assert "Traceback" not in result.out + result.err
    assert "internal error" not in result.err, result.err
    if result.code == 2:
        assert result.err.startswith("error: ") and result.err.count("\n") == 1, result.err


def journal_lines(directory: Path) -> int:
    """How many records the lab's (or a site's) SQLite journal in ``directory`` holds."""
    return len(journal_actions(directory / "journal.sqlite"))
