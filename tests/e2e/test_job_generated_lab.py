"""``msoctl job plan`` on a generated lab of Ascend servers: HCCL's rank table from the
NICs the lab gives each NPU, as its inventory lists them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulators.lab import Lab
from emulators.lab.topology import load_topology
from tests.support.cli import in_process


def test_an_ascend_job_gets_hccls_rank_table_from_its_npus_nic_addresses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two campuses of one Ascend server each, two planes: each server has two NPUs and a
    NIC a plane (rail r on plane r + 1), so each NPU its own NIC, as HCCL wants. The
    rank table lists every NPU with its NIC's address from the inventory (the lab's
    10.H.H.N) and the ranks job plan gives them."""
    msoctl = in_process(capsys)
    topology = tmp_path / "topology.yaml"
    made = msoctl("lab", "topology", "generate", "--campuses", "2", "--ocs-per-campus", "2",
                  "--ocs-size", "8", "--links", "2", "--hosts-per-campus", "1",
                  "--gpus-per-host", "2", "--host-vendors", "ascend", "-o", str(topology))
    assert made.code == 0, made
    with Lab(tmp_path / "lab", load_topology(topology), serial_consoles=False) as lab:
        inventory = lab.state_dir / "inventory.yaml"
        monkeypatch.setenv("MSOCTL_INVENTORY", str(inventory))
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        out = tmp_path / "job"
        plan = msoctl("job", "plan", "--gpus", "4", "--vendor", "ascend", "--out", str(out),
                      "--lossless-priority", "4", "-o", "json")
        assert plan.code == 0, plan
        document = json.loads(plan.out)
        ranks = json.loads((out / "ranks.json").read_text())["ranks"]
    assert document["files"]["hccl_ranktable"] == str(out / "hccl-ranktable.json")
    assert document["file_notes"] == []
    table = json.loads((out / "hccl-ranktable.json").read_text())
    assert (table["status"], table["version"], table["server_count"]) == (
        "completed", "1.0", "2")
    # the lab's servers all answer on loopback: their names tell them apart
    assert [server["server_id"] for server in table["server_list"]] == \
        list(dict.fromkeys(r["host"] for r in ranks))
    by_rank = {d["rank_id"]: d for server in table["server_list"] for d in server["device"]}
    assert sorted(by_rank) == ["0", "1", "2", "3"]
    assert [by_rank[str(r["rank"])]["device_ip"] for r in ranks] == \
        [r["nic_address"] for r in ranks]
    assert all(r["nic_address"].startswith("10.0.") for r in ranks)
    assert len({r["nic_address"] for r in ranks}) == 4
    env = (out / "env" / f"{ranks[0]['host']}.env").read_text()
    assert "HCCL_RDMA_TC=136\n" in env and "HCCL_RDMA_SL=4\n" in env
