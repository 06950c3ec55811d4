"""``msoctl lab up``: the contract scripts rely on (README.md, "The emulated lab")."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

MSOCTL = [sys.executable, "-m", "msoctl"]


def _wait_for(path: Path, process: subprocess.Popen[str], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"lab exited early: {process.communicate()}")
        assert time.monotonic() < deadline, "no inventory written"
        time.sleep(0.05)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_lab_up_serves_writes_inventory_and_stops_cleanly(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    state = tmp_path / "state"
    process = subprocess.Popen([*MSOCTL, "lab", "up", "--state-dir", str(state)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        inventory = state / "inventory.yaml"
        _wait_for(inventory, process)
        document = yaml.safe_load(inventory.read_text())
        names = [d["name"] for d in document["devices"]]
        assert names == ["ocs-a", "ocs-b", "ocs-lab", "amp-1", "amp-2", "sw-a", "sw-b",
                         "sw-c", "sw-d", "laser-1", "pm-1"]
        assert not list(state.glob(".*.tmp")), "the inventory is written atomically"

        status = subprocess.run(
            [*MSOCTL, "--inventory", str(inventory), "ocs", "status", "ocs-b", "-o", "json"],
            capture_output=True, text=True, timeout=60)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["size"] == [64, 64]
        port = int(document["devices"][0]["address"].split("::")[2])
        snmp = next(d["snmp"]["address"] for d in document["devices"] if d["name"] == "sw-a")
    finally:
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "lab stopped" in out
    assert f"snmp udp {snmp}" in out  # each switch's SNMP agent is listed with its port
    assert "Traceback" not in err
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_map_survives_a_lab_restart(tmp_path: Path) -> None:
    from emulators.lab import Lab

    with Lab(tmp_path) as lab:
        lab.ocs["ocs-a"].add((1, 2), (121, 122))
    with Lab(tmp_path) as lab:
        assert lab.ocs["ocs-a"].connection_map() == {1: 121, 2: 122}


def test_bad_topology_is_refused_with_its_line(tmp_path: Path) -> None:
    topology = tmp_path / "topology.yaml"
    topology.write_text("ocs:\n  - {name: ocs-a, size: 64}\n  - {name: ocs-b, size: many}\n")
    result = subprocess.run([*MSOCTL, "lab", "up", "--topology", str(topology),
                             "--state-dir", str(tmp_path / "s")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert f"{topology}:3" in lines[0] and "size" in lines[0]


def test_a_second_lab_on_a_state_directory_is_refused_and_touches_nothing(
        tmp_path: Path) -> None:
    """One lab per state directory: the second is refused with the first one's pid, and the
    first one's inventory, secrets, known_hosts, NVRAM and lab.json are left as they were."""
    from emulators.lab import Lab
    from emulators.ocs.nvram import flush

    state = tmp_path / "state"
    with Lab(state) as first:
        first.ocs["ocs-a"].add((1,), (65,))
        flush()  # NVRAM written
        before = {path: path.read_bytes() for path in sorted(state.rglob("*"))
                  if path.is_file() and not path.name.startswith("journal.sqlite")}
        assert {p.name for p in before} >= {"inventory.yaml", "known_hosts", "lab.json",
                                            "ocs-a.nvram.json", "sw-a.password"}
        second = subprocess.run([*MSOCTL, "lab", "up", "--state-dir", str(state)],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ")
        import os

        assert f"pid {os.getpid()}" in lines[0] and str(state) in lines[0]
        after = {path: path.read_bytes() for path in sorted(state.rglob("*"))
                 if path.is_file() and not path.name.startswith("journal.sqlite")}
        assert after == before
        assert first.ocs["ocs-a"].connection_map() == {1: 65}
    with Lab(state) as again:  # stopped, the directory is free again
        assert again.ocs["ocs-a"].connection_map() == {1: 65}
