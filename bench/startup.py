"""How long ``msoctl`` takes to start: each command line against ``python -c pass``, side by
side, each in a fresh process as an operator's shell runs it.

    .venv/bin/python bench/startup.py [--rounds N] [--json]

Variants, each run once per round in turn (the order reversed every other round, so
that a load on the machine falls on all of them alike):

- ``python -c pass``: the interpreter alone, the floor;
- ``msoctl --help``: the root group and its registry, no command module;
- ``msoctl ocs status --help``: the ``ocs`` command group loaded, no device opened;
- ``msoctl ocs status ocs-a``: the whole command against an emulated 64x64 OCS, served
  by ``msoctl lab up`` in a process of its own, started by this benchmark.

Printed per variant: the median and the fastest wall time, the median's ratio to
``python -c pass`` and how many milliseconds it adds to it, and how many modules are
loaded when the command exits (from one more run). Nothing here asserts a timing;
tests/e2e/test_startup.py checks which modules the commands load.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MSOCTL = [sys.executable, "-m", "msoctl"]
TOPOLOGY = """\
name: startup
ocs:
  - {name: ocs-a, size: 64, campus: a}
"""
BUDGET_ABOVE_PYTHON_MS = 150.0
"""What ``msoctl --help`` may add to ``python -c pass`` (the project's start-up goal)."""
LAB_START_SECONDS = 60.0

VARIANTS: dict[str, tuple[str, list[str]]] = {
    "python": ("python -c pass", [sys.executable, "-c", "pass"]),
    "help": ("msoctl --help", [*MSOCTL, "--help"]),
    "ocs_status_help": ("msoctl ocs status --help", [*MSOCTL, "ocs", "status", "--help"]),
    "ocs_status": ("msoctl ocs status ocs-a", [*MSOCTL, "ocs", "status", "ocs-a"]),
}


@contextmanager
def running_lab(directory: Path) -> Iterator[Path]:
    """``msoctl lab up`` with one 64x64 OCS in its own process; its inventory's path."""
    topology = directory / "topology.yaml"
    topology.write_text(TOPOLOGY, encoding="utf-8")
    state = directory / "lab"
    inventory = state / "inventory.yaml"
    lab = subprocess.Popen([*MSOCTL, "lab", "up", "--topology", str(topology),
                            "--state-dir", str(state)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        deadline = time.monotonic() + LAB_START_SECONDS
        while not inventory.exists():
            if lab.poll() is not None:
                error = lab.stderr.read().decode() if lab.stderr else ""
                raise RuntimeError(f"msoctl lab up ended: {error.strip()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the lab did not start within {LAB_START_SECONDS:g} s")
            time.sleep(0.05)
        yield inventory
    finally:
        if lab.poll() is None:
            lab.send_signal(signal.SIGTERM)
            try:
                lab.wait(timeout=15)
            except subprocess.TimeoutExpired:
                lab.kill()
                lab.wait()


def run_once(command: Sequence[str], env: dict[str, str]) -> float:
    """Wall seconds of ``command`` from start to exit; raises if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:])} exited {done.returncode}: "
                           f"{done.stderr.decode().strip()[-500:]}")
    return seconds


MODULES_WRAPPER = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print(len(sys.modules), file=sys.__stderr__))\n"
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")
"""Runs a module as ``python -m`` does and prints how many modules were loaded at exit
(``python -X importtime`` misses those :mod:`importlib` imports by name)."""


def modules_imported(command: Sequence[str], env: dict[str, str]) -> int:
    """How many modules ``command`` has loaded when it exits (the interpreter's own
    included); ``python -c pass`` is counted as the interpreter alone."""
    if command[1] == "-c":
        wrapped = [command[0], "-c", "import sys; print(len(sys.modules), file=sys.stderr)"]
    else:  # [python, -m, module, args...]
        wrapped = [command[0], "-c", MODULES_WRAPPER, command[2], *command[3:]]
    done = subprocess.run(wrapped, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    return int(done.stderr.split()[-1])


def measure(rounds: int, inventory: Path | None) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("MSOCTL_INVENTORY", "MSOCTL_JOURNAL")}
    envs = {key: env for key in VARIANTS}
    if inventory is not None:
        envs["ocs_status"] = {**env, "MSOCTL_INVENTORY": str(inventory)}
    chosen = [key for key in VARIANTS if key != "ocs_status" or inventory is not None]
    for key in chosen:  # once each, untimed: the disk cache warm for every variant alike
        run_once(VARIANTS[key][1], envs[key])
    samples: dict[str, list[float]] = {key: [] for key in chosen}
    for round_index in range(rounds):
        for key in chosen if round_index % 2 == 0 else reversed(chosen):
            samples[key].append(run_once(VARIANTS[key][1], envs[key]))
    floor = statistics.median(samples["python"])
    return {key: {"label": VARIANTS[key][0],
                  "median_seconds": statistics.median(times),
                  "min_seconds": min(times),
                  "over_python": statistics.median(times) / floor,
                  "above_python_ms": (statistics.median(times) - floor) * 1e3,
                  "modules": modules_imported(VARIANTS[key][1], envs[key]),
                  "samples": times}
            for key, times in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-lab", action="store_true",
                        help="Leave out 'msoctl ocs status ocs-a' (no lab is started).")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="msoctl-startup-") as scratch:
        if options.no_lab:
            variants = measure(options.rounds, None)
        else:
            with running_lab(Path(scratch)) as inventory:
                variants = measure(options.rounds, inventory)
    document = {"benchmark": "startup", "rounds": options.rounds,
                "python": sys.version.split()[0],
                "budget_above_python_ms": BUDGET_ABOVE_PYTHON_MS, "variants": variants}
    if options.json:
        print(json.dumps(document, indent=2))
        return 0
    print(f"start-up, {options.rounds} round(s) of each, medians (fresh processes)")
    print(f"{'command':<28} {'median ms':>10} {'fastest ms':>11} {'x python':>9} "
          f"{'+ms':>7} {'modules':>8}")
    for row in variants.values():
        print(f"{row['label']:<28} {row['median_seconds'] * 1e3:>10.1f} "
              f"{row['min_seconds'] * 1e3:>11.1f} {row['over_python']:>9.2f} "
              f"{row['above_python_ms']:>7.1f} {row['modules']:>8}")
    help_row = variants["help"]
    verdict = "within" if help_row["above_python_ms"] <= BUDGET_ABOVE_PYTHON_MS else "over"
    print(f"msoctl --help adds {help_row['above_python_ms']:.1f} ms to python -c pass: "
          f"{verdict} the {BUDGET_ABOVE_PYTHON_MS:g} ms goal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
