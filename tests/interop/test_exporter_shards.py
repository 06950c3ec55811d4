"""Sharding the exporter with Prometheus's own ``hashmod`` (deploy/prometheus-sharded.yml).

Prometheus's relabelling (configuration docs, ``<relabel_config>``, action ``hashmod``:
"set target_label to the modulus of a hash of the concatenated source_labels") decides
which shard scrapes a target; ``msoctl inventory sd --shards N`` must split the targets
the same way. Tested against Debian's Prometheus: two shards, each with its own
exporter, given the full target list, keep exactly the targets of msoctl's shard files;
every target is scraped by one shard only; the union of their series is a single
server's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.amp.als import NORMAL, SHUTDOWN, AlsSettings
from emulators.lab import Lab
from msoctl.access import Devices
from msoctl.exporter import sd
from tests.support.exporter import exporter_process
from tests.support.lab import subprocess_env, wait_until
from tests.support.paths import DEPLOY
from tests.support.prometheus import Prometheus, prometheus

JOBS = ("msoctl", "msoctl-cpo")
Target = tuple[str, str]  # (instance, kind)


def fast(config: dict[str, Any]) -> dict[str, Any]:
    """Scrape every 3 s (CPO/CPC every 6 s), no rules: the lab, three Prometheus servers
    and three exporters share this machine's two cores."""
    config["global"].update(scrape_interval="3s", scrape_timeout="3s", evaluation_interval="3s")
    config["rule_files"] = []
    for job in config["scrape_configs"]:
        if job["job_name"] == "msoctl-cpo":
            job.update(scrape_interval="6s", scrape_timeout="6s")
        for file_sd in job.get("file_sd_configs", []):
            file_sd["refresh_interval"] = "1s"
    return config


def single_config(exporter: str, targets: Path) -> dict[str, Any]:
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    for job in config["scrape_configs"]:
        for file_sd in job.get("file_sd_configs", []):
            file_sd["files"] = [str(targets)]
        for rule in job.get("relabel_configs", []):
            if rule.get("target_label") == "__address__":
                rule["replacement"] = exporter
        for static in job.get("static_configs", []):
            static["targets"] = [exporter]
    return fast(config)


def file_targets(path: Path) -> set[Target]:
    return {(group["targets"][0], group["labels"]["kind"])
            for group in json.loads(path.read_text())}


def scraped(server: Prometheus) -> set[Target]:
    return {(target["labels"]["instance"], target["labels"]["kind"])
            for target in server.active_targets() if target["scrapePool"] in JOBS}


def up_everywhere(server: Prometheus, expected: set[Target]) -> bool:
    """Every expected target scraped at least twice, its last scrape up, and its device
    read at least once: a scrape whose reading ran out of its budget (a loaded machine) is
    up, with ``msoctl_up 0`` and none of the device's series, so that a shard that only
    had such scrapes of a switch's CPO/CPC would lack its lanes beside the single server."""
    scraped = {(s["metric"]["instance"], s["metric"]["kind"])
               for s in server.query('count_over_time(up{job=~"msoctl|msoctl-cpo"}[5m]) >= 2 '
                                     'and up == 1')}
    read = {(s["metric"]["instance"], s["metric"]["kind"])
            for s in server.query('max_over_time(msoctl_up{job=~"msoctl|msoctl-cpo"}[10m])'
                                  ' == 1')}
    return scraped == expected and read >= expected


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("shards")
    with Lab(directory / "lab") as lab:
        inventory = lab.state_dir / "inventory.yaml"
        _steady_amplifiers(lab, inventory)
        yield {"lab": lab, "inventory": inventory, "directory": directory}


def _steady_amplifiers(lab: Lab, inventory: Path) -> None:
    """Every amplifier's ALS in manual mode, and settled: a new lab's amplifiers have a
    dark input, and in automatic mode each sends a 2 s restart pulse every 100 s, during
    which it has a gain and a tilt (no series while shut). Servers scraping 3 s apart
    would each catch a pulse or miss it, and their series would differ by it (seen
    once, on a loaded machine whose test outlasted the first interval), while what is
    compared here is the split of the targets."""
    devices = Devices(_inventory(inventory))
    for name in lab.amps:
        driver = devices.amp(name)
        try:
            driver.set_als_mode("manual")
        finally:
            driver.close()

    def states() -> dict[str, int]:
        return {name: module.als_state for name, module in lab.amps.items()}

    # settled: shut (a dark input) or amplifying, and still so a soak's time later
    deadline = time.monotonic() + 30
    before = states()
    while True:
        time.sleep(2 * AlsSettings().los_soak_seconds)
        now = states()
        if now == before and set(now.values()) <= {SHUTDOWN, NORMAL}:
            return
        assert time.monotonic() < deadline, f"amplifiers not settled: {now}"
        before = now


def test_sd_shards_split_the_targets_and_refuse_bad_input(shards: dict[str, Any]) -> None:
    """Every target in one shard file, both groups of a switch (its own and its CPO/CPC
    telemetry) in the same one; a stale file of a larger split is removed; bad input
    gets one ``error:`` line and exit 2."""
    import subprocess
    import sys

    msoctl = str(Path(sys.executable).with_name("msoctl"))
    env = subprocess_env(shards["lab"])
    out = shards["directory"] / "split"
    out.mkdir()
    (out / "msoctl-targets-5.json").write_text("[]")
    done = subprocess.run([msoctl, "inventory", "sd", "--shards", "3", "--out", str(out)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"msoctl-targets-{k}.json"
                                                       for k in range(3)]
    full = subprocess.run([msoctl, "inventory", "sd"], env=env, capture_output=True,
                          text=True, timeout=60)
    everything = {(g["targets"][0], g["labels"]["kind"]) for g in json.loads(full.stdout)}
    parts = [file_targets(out / f"msoctl-targets-{k}.json") for k in range(3)]
    assert set().union(*parts) == everything and sum(map(len, parts)) == len(everything)
    for part in parts:
        names = {name for name, _ in part}
        assert not any(name in names for other in parts if other is not part
                       for name, _ in other)
    for args, words in ((["--shards", "2"], "--out DIR"), (["--shards", "0", "--out", str(out)],
                                                            "--shards"),
                        (["--shards", "2", "--out", str(out / "msoctl-targets-0.json")],
                         "not a directory")):
        refused = subprocess.run([msoctl, "inventory", "sd", *args], env=env,
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2, (args, refused.stderr)
        assert refused.stderr.startswith("error:") and words in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr


@pytest.mark.timeout(300)  # real Prometheus servers scraping: minutes on a busy machine
def test_two_prometheus_shards_split_like_msoctl_and_cover_one_server(
        shards: dict[str, Any]) -> None:
    directory: Path = shards["directory"]
    env = subprocess_env(shards["lab"])
    full = directory / "msoctl-targets.json"
    full.write_text(sd.render(sd.targets(_inventory(shards["inventory"]))))
    split_dir = directory / "by-shard"
    sd.write_shards(split_dir, sd.targets(_inventory(shards["inventory"])), 2)
    expected = [file_targets(split_dir / f"msoctl-targets-{k}.json") for k in range(2)]
    assert all(expected), "the lab's targets should fall in both shards"
    everything = file_targets(full)
    sharded = yaml.safe_load((DEPLOY / "prometheus-sharded.yml").read_text())
    with exporter_process(env, directory / "exporter-0.log") as first, \
            exporter_process(env, directory / "exporter-1.log") as second, \
            exporter_process(env, directory / "exporter-single.log") as third:
        exporters = [url.removeprefix("http://") for url in (first, second)]
        configs = [fast(sd.shard_config(sharded, k, 2, exporter=exporters[k],
                                        targets=str(full))) for k in range(2)]
        jobs = [{job["job_name"]: job for job in config["scrape_configs"]} for config in configs]
        assert jobs[0]["msoctl-jobs"]["static_configs"] == [{"targets": [exporters[0]]}]
        assert "msoctl-jobs" not in jobs[1]  # the kept jobs: scraped by shard 0 only
        with prometheus(configs[0], directory / "prom-0") as shard0, \
                prometheus(configs[1], directory / "prom-1") as shard1, \
                prometheus(single_config(third.removeprefix("http://"), full),
                           directory / "prom-single") as single:
            servers = (shard0, shard1)
            # given the whole list, each shard's hashmod keeps what msoctl put in its file
            wait_until(lambda: [scraped(s) for s in servers] == expected,
                       "each shard keeps its share", seconds=30)
            wait_until(lambda: scraped(single) == everything, "the single server's targets",
                       seconds=30)
            for server, mine in zip(servers, expected, strict=True):
                wait_until(lambda s=server, m=mine: up_everywhere(s, m),  # type: ignore[misc]
                           "the shard has scraped its targets", seconds=90)
            wait_until(lambda: up_everywhere(single, everything),
                       "the single server has scraped every target", seconds=90)
            time.sleep(1)
            # scraped exactly once: every target has samples in one shard only
            seen = [{(s["metric"]["instance"], s["metric"]["kind"]) for s in server.query(
                'count_over_time(up{job=~"msoctl|msoctl-cpo"}[10m])')} for server in servers]
            assert seen == expected and not seen[0] & seen[1]
            # the union of the shards' series is one server's
            match = '{job=~"msoctl|msoctl-cpo"}'
            union = shard0.series(match) | shard1.series(match)
            alone = single.series(match)
            # the differences, not the sets: pytest's diff of two sets of thousands of
            # series takes minutes
            only_shards, only_single = union - alone, alone - union
            assert not only_shards and not only_single, (
                _described(only_shards), _described(only_single))
            assert len(alone) > 1000  # the lab's devices, CPO/CPC lanes, FEC bins


def _described(series: set[frozenset[tuple[str, str]]]) -> list[str]:
    """A few series, each as its labels, sorted (for an assertion's message)."""
    return [f"{len(series)} series:", *sorted(
        ",".join(f"{k}={v}" for k, v in sorted(labels)) for labels in series)[:8]]


def _inventory(path: Path) -> Any:
    from msoctl.inventory import load_inventory

    return load_inventory(path)
