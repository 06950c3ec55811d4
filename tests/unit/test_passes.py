"""``make test``'s runner of the two passes (tests/passes.py): both run, each on its own
tests, and the command fails when either does, "no tests ran" (pytest's 5) included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT

PLAIN = "tests/unit/test_words.py"  # no serial test
SERIAL = "tests/conformance/test_scpi_server_timing.py"  # one test, serial
# The passes only collect (a real-time test is not run under the suite's own load), and
# without the suite's conftest, whose fixtures collecting needs not (half the CPU).


def passes(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    log = tmp_path / "serial.log"
    done = subprocess.run([sys.executable, "-m", "tests.passes", "--workers", "0", "--no-warm",
                           "--serial-log", str(log), "-p", "no:cacheprovider", "-q",
                           "--noconftest", "--collect-only", *args],
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


def test_only_modules_pytest_has_not_rewritten_since_they_changed_are_warmed(
        tmp_path: Path) -> None:
    import os

    from tests.passes import rewritten_name, stale_test_modules

    tests = tmp_path / "tests"
    (tests / "unit").mkdir(parents=True)
    fresh, changed, new = (tests / "unit" / f"test_{n}.py" for n in ("fresh", "changed", "new"))
    conftest, helper = tests / "conftest.py", tests / "unit" / "helper.py"
    for module in (fresh, changed, new, conftest, helper):
        module.write_text("")
    for module in (fresh, changed, conftest):
        cached = rewritten_name(module, "9.9")
        cached.parent.mkdir(exist_ok=True)
        cached.write_bytes(b"")
        os.utime(module, (1_000, 1_000))
        os.utime(cached, (2_000, 2_000))
    os.utime(changed, (3_000, 3_000))
    assert stale_test_modules(tests, "9.9") == [changed, new]
    assert stale_test_modules(tests, "10.0") == [conftest, changed, fresh, new]
