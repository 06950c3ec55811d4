"""Run the suite's two passes at once: ``python -m tests.passes [--workers N] [PYTEST ARGS]``.

- The first pass, every test not marked ``serial``, on ``--workers`` xdist workers (``0``:
  in pytest's own process), at the lowest CPU priority (``nice -n 19``). Its output
  is this command's.
- The serial pass, the tests marked ``serial``, in one pytest process at normal priority,
  at the same time. Its tests time what happens in real time (the protection
  controller's switching and recovery); they wait on their labs far more than they
  compute, and what they compute gets the CPU before any of the first pass's work, so
  the first pass's load does not stretch their timing the way equal priority would.
  Its output goes to ``--serial-log`` (``build/serial-pass.log``) and is printed once
  both passes end.

Before them, when any test module changed since pytest last rewrote its assertions (a
fresh clone: all of them), those modules are collected once, in two processes
(``--no-warm`` skips this). Rewriting is most of what collecting costs the first time
(17 s of CPU against 5 s warm, here), and without this each of the workers and the
serial pass would do it all over at once.

Both passes always run to their end; the exit status is the first pass's when it
failed, else the serial pass's (so pytest's 5, "no tests ran", fails either). Ctrl-C
reaches both pytest processes (they share the terminal's process group), which stop as
pytest does; this command then waits for them and exits 130.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERIAL_LOG = ROOT / "build" / "serial-pass.log"
WARMING_PROCESSES = 2


def rewritten_name(module: Path, pytest_version: str) -> Path:
    """Where pytest keeps ``module`` with its assertions rewritten."""
    return (module.parent / "__pycache__" /
            f"{module.stem}.{sys.implementation.cache_tag}-pytest-{pytest_version}.pyc")


def stale_test_modules(tests: Path, pytest_version: str) -> list[Path]:
    """The test modules and conftests whose rewritten form is missing or older than they."""
    stale = []
    for module in sorted([*tests.rglob("test_*.py"), *tests.rglob("conftest.py")]):
        cached = rewritten_name(module, pytest_version)
        try:
            if cached.stat().st_mtime >= module.stat().st_mtime:
                continue
        except FileNotFoundError:
            pass
        stale.append(module)
    return stale


def warm(modules: list[Path], processes: int = WARMING_PROCESSES) -> None:
    """Collect ``modules`` once, split over ``processes``, so that pytest rewrites each
    one time. Its output and status are dropped: the passes report any collection error."""
    if not modules or sys.dont_write_bytecode:
        return
    share = [modules[k::processes] for k in range(processes)]
    running = [subprocess.Popen(
        pytest_command("--collect-only", "-q", "-p", "no:cacheprovider",
                       *(str(m) for m in part)),
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for part in share if part]
    try:
        for process in running:
            process.wait()
    except KeyboardInterrupt:  # they got the SIGINT too: let them end, then stop
        for process in running:
            process.wait()
        raise


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *args]


def _shown(path: Path) -> str:
    """``path`` relative to the checkout when it is inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.passes", description=__doc__.split(
        "\n", 1)[0])
    parser.add_argument("--workers", type=int, default=6,
                        help="xdist workers of the first pass (0: in pytest's process)")
    parser.add_argument("--serial-log", type=Path, default=SERIAL_LOG,
                        help="where the serial pass's output goes (default: %(default)s)")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="do not collect the changed test modules once first")
    known, extra = parser.parse_known_args(argv)
    if known.warm:
        import pytest

        try:
            warm(stale_test_modules(ROOT / "tests", pytest.__version__))
        except KeyboardInterrupt:
            return 130
    log_path: Path = known.serial_log
    first_args = ["-m", "not serial", *extra]
    if known.workers > 0:
        first_args = ["-n", str(known.workers), "--dist", "loadfile",
                      "--no-loadscope-reorder", *first_args]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w", encoding="utf-8") as log:
        serial = subprocess.Popen(pytest_command("-m", "serial", *extra), cwd=ROOT,
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            first = subprocess.Popen(["nice", "-n", "19", *pytest_command(*first_args)],
                                     cwd=ROOT)
        except BaseException:
            serial.terminate()
            serial.wait()
            raise
        interrupted = False
        while True:
            try:
                first_status, serial_status = first.wait(), serial.wait()
                break
            except KeyboardInterrupt:  # both got the SIGINT too; let them end as pytest does
                interrupted = True
    print(f"\n---- the serial pass, beside the first (exit {serial_status}; "
          f"{_shown(log_path)}) ----", flush=True)
    sys.stdout.write(log_path.read_text(encoding="utf-8", errors="replace"))
    if interrupted:
        return 130
    return first_status if first_status != 0 else serial_status


if __name__ == "__main__":
    sys.exit(main())
