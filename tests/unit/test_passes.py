"""``make test``'s runner of the two passes (tests/passes.py): both run, each on its own
tests, and the command fails when either does, "no tests ran" (pytest's 5) included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

PLAIN = "tests/unit/test_words.py"  # no serial test
SERIAL = "tests/conformance/test_scpi_server_timing.py"  # one test, serial
# The passes only collect (a real-time test is not run under the suite's own load).


def passes(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    log = tmp_path / "serial.log"
    done = subprocess.run([sys.executable, "-m", "tests.passes", "--workers", "0",
                           "--serial-log", str(log), "-p", "no:cacheprovider", "-q",
                           "--collect-only", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, log.read_text(encoding="utf-8")


def test_each_pass_runs_its_own_tests_and_both_must_pass(tmp_path: Path) -> None:
    code, out, serial = passes(tmp_path, PLAIN, SERIAL)
    assert code == 0, out
    first = out.split("---- the serial pass")[0]
    assert "11/12 tests collected (1 deselected)" in first, first
    assert f"---- the serial pass, beside the first (exit 0; {tmp_path}/serial.log) ----" in out
    assert "1/12 tests collected (11 deselected)" in serial and out.endswith(serial)


def test_a_pass_that_runs_nothing_fails_the_whole(tmp_path: Path) -> None:
    code, out, serial = passes(tmp_path, PLAIN)  # no serial test in it: the serial pass
    assert code == 5, out  # deselects all and exits 5
    assert "(exit 5;" in out and "no tests collected (11 deselected)" in serial
