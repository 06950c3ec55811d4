"""Kill ``msoctl ocs apply`` in the middle of a 64-connection change, then rerun it.

The rerun must converge to the wanted map, and the journal must tell the
story: the killed change's intent, its closing as ``interrupted`` with what
was found, and the rerun that resolved it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulators.lab import Lab
from msoctl.journal import Journal
from tests.support import subprocess_env

MSOCTL = [sys.executable, "-m", "msoctl"]


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def _wanted() -> dict[int, int]:
    # A full permutation: every ingress port to a new egress port.
    return {i: 64 + ((i * 37) % 64) + 1 for i in range(1, 65)}


def _write_map(path: Path, mapping: dict[int, int]) -> None:
    path.write_text("connections:\n" + "".join(f'  - "{i}:{e}"\n' for i, e in mapping.items()))


@pytest.mark.parametrize("kill_when", ["intent journaled", "device switching"])
def test_killed_apply_converges_on_rerun(lab: Lab, tmp_path: Path, kill_when: str) -> None:
    device = lab.ocs["ocs-a"]
    device.add(tuple(range(1, 65)), tuple(range(65, 129)))  # a full map to move away from
    # A cold LC cell switches slowly (about 0.4 s), so the kill lands mid-change.
    device.heater_on = False
    device.ambient_celsius = 0.0
    wanted = _wanted()
    mapfile = tmp_path / "map.yaml"
    _write_map(mapfile, wanted)
    journal_path = lab.state_dir / "journal.sqlite"

    process = subprocess.Popen([*MSOCTL, "ocs", "apply", "ocs-a", str(mapfile)],
                               env=subprocess_env(lab), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "the apply never reached the kill point"
        assert process.poll() is None, process.communicate()
        if kill_when == "intent journaled":
            if any(r["event"] == "intent" for r in Journal(journal_path).records()):
                break
        elif device.connection_map() == wanted:
            break
        time.sleep(0.001)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.communicate()

    records = list(Journal(journal_path).records())
    assert [r["event"] for r in records] == ["intent"]  # killed before its result
    killed = records[0]["op"]

    device.heater_on = True
    rerun = subprocess.run([*MSOCTL, "ocs", "apply", "ocs-a", str(mapfile), "-o", "json"],
                           env=subprocess_env(lab), capture_output=True, text=True, timeout=60)
    assert rerun.returncode == 0, rerun.stderr
    document = json.loads(rerun.stdout)
    assert device.connection_map() == wanted
    assert document["recovered_operations"] == [killed]
    assert {p["status"] for p in document["light"]} <= {"ok", "dark input"}

    operations = {o.op: o for o in Journal(journal_path).operations("ocs-a")}
    assert operations[killed].status == "interrupted"
    closing = operations[killed].result
    assert closing is not None
    new_op = closing["resolved_by"]
    assert operations[new_op].status == "ok"
    assert any(r["event"] == "recovered" and r["interrupted_op"] == killed
               for r in operations[new_op].records)

    # Closed once: later changes of the device do not close it again (each used to).
    for _ in range(2):
        again = subprocess.run([*MSOCTL, "ocs", "apply", "ocs-a", str(mapfile), "-o", "json"],
                               env=subprocess_env(lab), capture_output=True, text=True,
                               timeout=60)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["recovered_operations"] == []
    closings = [r for r in Journal(journal_path).records()
                if r["op"] == killed and r["event"] == "result"]
    assert len(closings) == 1

    history = subprocess.run([*MSOCTL, "history", "--device", "ocs-a"], env=subprocess_env(lab),
                             capture_output=True, text=True, timeout=30)
    assert history.returncode == 0
    assert "interrupted" in history.stdout and f"resolved by {new_op}" in history.stdout
