"""Large fabrics in the lab: the generator (emulators/lab/generate.py, ``msoctl lab
topology generate``), a lab spread over worker processes (emulators/lab/spread.py,
``msoctl lab up --processes``), cables cut at once across processes, and the OCS
alarms of a whole fabric.

Most tests share one generated fabric of 64 links over 8 OCS in two processes; one
test runs the full size the README promises (256 links, 16 OCS, cables of 64).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.ocs import OcsDriver
from drivers.ocs.connect import open_ocs
from drivers.ocs.types import LosEvent
from emulators.faults import Fault
from emulators.lab import load_topology
from emulators.lab.constants import ENDPOINT_FILE
from emulators.lab.domains import domains, partition
from emulators.lab.generate import FabricDoesNotFit, FabricSpec, generate_text
from emulators.lab.spread import SpreadLab, lab_for
from emulators.lab.topology import Topology
from msoctl.access import open_alarm_stream
from msoctl.inventory import Inventory, load_inventory
from msoctl.lab.client import call, find_lab
from msoctl.links import Link
from tests.support.cli import Msoctl, in_process

MSOCTL = [sys.executable, "-m", "msoctl"]
LIT_DBM = -20.0
"""A span-in port with its link's light reads well above this (about -10 dBm here);
a dark one reads its monitor's floor, near -60 dBm."""
ALARM_BOUND_SECONDS = 5.0
"""Every alarm of a cable cut arrives within this: generous for a loaded 2-core machine
(bench/lab_scale.py measures the figure, milliseconds)."""

MID = FabricSpec(campuses=2, ocs_per_campus=4, ocs_size=48, links=64, spans_per_cable=16)
"""64 links over 8 OCS of 48x48 in 4 planes (16 link ends each: every port used); 4
working and 4 protection cables of 16."""


def _topology(tmp_path: Path, spec: FabricSpec, name: str = "fabric.yaml") -> Topology:
    path = tmp_path / name
    path.write_text(generate_text(spec))
    return load_topology(path)


# ---- the generator ------------------------------------------------------------------------


def test_a_generated_fabric_has_what_was_asked_and_fits_its_ports(tmp_path: Path) -> None:
    spec = FabricSpec(campuses=3, ocs_per_campus=2, ocs_size=32, links=30, spans_per_cable=4,
                      amplified_spans=5, links_per_protection=2)
    topology = _topology(tmp_path, spec)
    assert [o.name for o in topology.ocs] == [f"c{c}-ocs{k}" for c in (1, 2, 3) for k in (1, 2)]
    assert len(topology.links) == 30 and topology.links[-1].name == "link-30"
    assert len(topology.amplifiers) == 5
    plane = {o.name: o.name.rpartition("ocs")[2] for o in topology.ocs}
    spans = {s.name: s for s in topology.spans}
    cables = {c.name: c for c in topology.cables}
    for link in topology.links:
        working, protection = spans[link.working], spans[str(link.protection)]
        assert working.cable != protection.cable  # one cut never takes both
        assert cables[working.cable].role == "working"
        assert cables[protection.cable].role == "protection"
        ends = {p.split(":")[0] for f in working.fibers for p in (f.from_port, f.to_port)}
        assert len({plane[name] for name in ends}) == 1  # a span stays in its plane
    # 3 campus pairs x 2 planes = 6 groups of 5 links, sharing by 2: 3 protection spans each
    assert len(topology.spans) == 30 + 6 * 3
    assert all(len(c.spans) <= 4 for c in topology.cables)
    # no port carries two fibers, in either direction
    starts = [f.from_port for f in topology.fibers()]
    ends = [f.to_port for f in topology.fibers()]
    assert len(starts) == len(set(starts)) and len(ends) == len(set(ends))
    # every switch is patched into one OCS only (its domain)
    for switch in topology.switches:
        ocs = {f.to_port.split(":")[0] for f in topology.patches
               if f.from_port.startswith(f"{switch.name}:")}
        assert len(ocs) == 1 and switch.management == "none"
    assert len(domains(topology)) == 2  # the two planes


def test_the_same_arguments_give_the_same_file_and_the_seed_only_the_routes() -> None:
    first, again = generate_text(MID), generate_text(MID)
    assert first == again
    other = generate_text(FabricSpec(**{**MID.__dict__, "seed": 7}))
    differing = [(a, b) for a, b in zip(first.splitlines(), other.splitlines(), strict=True)
                 if a != b]
    assert differing and all("length_km" in a or "seed" in a for a, _ in differing)


def test_a_fabric_that_does_not_fit_is_refused_naming_the_fullest_ocs() -> None:
    with pytest.raises(FabricDoesNotFit) as refused:
        generate_text(FabricSpec(campuses=2, ocs_per_campus=8, ocs_size=64, links=256))
    message = str(refused.value)
    assert "c1-ocs1 needs 96 ingress and 96 egress ports" in message
    assert "--links-per-protection" in message and "\n" not in message
    # sharing protection 1:8 is not enough either: 32 x 2 + 4 = 68 > 64
    with pytest.raises(FabricDoesNotFit, match="needs 68"):
        generate_text(FabricSpec(campuses=2, ocs_per_campus=8, ocs_size=64, links=256,
                                 links_per_protection=8))
    for wrong in ({"campuses": 1}, {"amplified_spans": 10_000}, {"span_length_km": 0}):
        with pytest.raises(ValueError, match=next(iter(wrong))):
            generate_text(FabricSpec(**{**MID.__dict__, **wrong}))


def test_generate_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    msoctl = in_process(capsys)
    out = tmp_path / "fabric.yaml"
    done = msoctl("lab", "topology", "generate", "--campuses", "2", "--ocs-per-campus", "4",
                  "--ocs-size", "48", "--links", "64", "--spans-per-cable", "16", "-o", str(out))
    assert done.code == 0, done.err
    assert done.out.startswith(f"wrote {out}: 8 OCS of 48x48 in 2 campuses (4 planes), 8 "
                               "switches, 64 links, 128 spans in 8 cables")
    assert out.read_text().splitlines()[2:] == generate_text(MID).splitlines()[2:]
    refused = msoctl("lab", "topology", "generate", "--campuses", "2", "--ocs-per-campus", "1",
                     "--links", "64", "-o", str(tmp_path / "no.yaml"))
    assert refused.code == 2 and refused.out == ""
    lines = refused.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the fabric does not fit: c1-ocs1")
    assert not (tmp_path / "no.yaml").exists()
    printed = msoctl("lab", "topology", "generate", "--campuses", "2", "--ocs-per-campus", "1",
                     "--ocs-size", "8", "--links", "2")
    assert printed.code == 0 and "links:\n  - {name: link-1," in printed.out


# ---- domains -----------------------------------------------------------------------------------


def test_the_default_topology_runs_in_one_process(tmp_path: Path) -> None:
    topology = load_topology()
    found = domains(topology)
    assert [sorted(d & {"ocs-a", "ocs-b", "ocs-lab"}) for d in found] == [
        ["ocs-a", "ocs-b"], ["ocs-lab"]]
    assert {"sw-a", "sw-b", "amp-1", "amp-2"} <= found[0]
    assert {"laser-1", "pm-1"} <= found[1]
    assert len(partition(topology, 4)) == 1  # one domain carries links
    assert lab_for(tmp_path, topology, 4) is None


# ---- a generated fabric, spread over two processes --------------------------------------------


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpreadLab]:
    directory = tmp_path_factory.mktemp("scale")
    topology = _topology(directory, MID)
    with SpreadLab(directory / "state", topology, processes=2) as running:
        inventory = load_inventory(running.state_dir / "inventory.yaml")
        _connect_working_paths(inventory)
        yield running


def _drivers(inventory: Inventory) -> dict[str, OcsDriver]:
    return {name: open_ocs(name, d.endpoint.transport, d.endpoint.address, timeout_seconds=5.0)
            for name, d in inventory.devices.items() if d.kind == "ocs"}


def _connect_working_paths(inventory: Inventory) -> None:
    """Every link on its working span: one whole-map command per OCS."""
    wanted: dict[str, dict[int, int]] = {}
    for link in inventory.links.values():
        for ocs, pairs in link.connections("working").items():
            wanted.setdefault(ocs, {}).update(pairs)
    drivers = _drivers(inventory)
    try:
        for name, driver in drivers.items():
            driver.replace_map(wanted.get(name, {}))
        for driver in drivers.values():
            driver.wait_settled()
    finally:
        for driver in drivers.values():
            driver.close()


def _receiving_ports(link: Link) -> dict[str, int]:
    """The OCS ingress ports where a link's light arrives from its working span."""
    span = link.working
    return {span.b_to_a.end.ocs: span.b_to_a.end.port, span.a_to_b.end.ocs: span.a_to_b.end.port}


def _dark_links(inventory: Inventory) -> dict[str, list[bool]]:
    """Per link, whether each end's OCS monitor reads its light dark."""
    wanted: dict[str, list[int]] = {}
    for link in inventory.links.values():
        for ocs, port in _receiving_ports(link).items():
            wanted.setdefault(ocs, []).append(port)
    drivers = _drivers(inventory)
    try:
        readings = {(name, port): power for name, driver in drivers.items()
                    for port, power in driver.power(wanted.get(name, [])).items()}
    finally:
        for driver in drivers.values():
            driver.close()
    found = {}
    for link in inventory.links.values():
        a, b = link.working.b_to_a.end, link.working.a_to_b.end
        found[link.name] = [not (readings[(end.ocs, end.port)] or -99.0) > LIT_DBM
                            for end in (a, b)]
    return found


def _links_in(inventory: Inventory, topology: Topology, cable: str) -> set[str]:
    spans = set(next(c for c in topology.cables if c.name == cable).spans)
    return {link.name for link in inventory.links.values() if link.working.name in spans}


def test_the_fabric_is_served_by_two_worker_processes(fabric: SpreadLab) -> None:
    """Every core serves: the OCS of the fabric answer from two processes, not this one;
    the inventory is one file, in the topology's order, with every OCS's alarm port."""
    assert len(set(fabric.pids)) == 2 and os.getpid() not in fabric.pids
    inventory = load_inventory(fabric.state_dir / "inventory.yaml")
    assert [d.name for d in inventory.devices.values()][:8] == [o.name for o in
                                                                fabric.topology.ocs]
    assert all(d.alarm_port for d in inventory.devices.values() if d.kind == "ocs")
    switches = [d for d in inventory.devices.values() if d.kind == "switch"]
    assert len(switches) == 8 and {d.endpoint.transport for d in switches} == {"none"}
    assert list(inventory.links) == [f"link-{n}" for n in range(1, 65)]
    status = fabric.status()
    workers = [p for p in status["lab"]["processes"] if p["role"] == "worker"]
    assert sorted(p["pid"] for p in workers) == sorted(fabric.pids)
    assert sum(p["links"] for p in workers) == 64 and all(p["ocs"] == 4 for p in workers)
    assert (fabric.state_dir / ENDPOINT_FILE).exists()
    assert all(not any(ends) for ends in _dark_links(inventory).values()), "all links lit"


def test_a_cable_cut_darkens_exactly_its_spans_links(fabric: SpreadLab,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``msoctl lab fault cable_cut CABLE`` cuts every fiber of the cable's spans at once,
    in both processes: the OCS monitors read dark at both ends of each of its links, and
    every other link stays lit; clearing it lights them again."""
    msoctl: Msoctl = in_process(capsys)
    inventory = load_inventory(fabric.state_dir / "inventory.yaml")
    affected = _links_in(inventory, fabric.topology, "cable-2")
    assert len(affected) == 16
    assert len(set(fabric.holders("cable-2"))) == 2  # it runs through both processes' domains
    state = str(fabric.state_dir)
    done = msoctl("lab", "fault", "cable_cut", "cable-2", "--state-dir", state, "-o", "json")
    assert done.code == 0, done.err
    assert len(json.loads(done.out)["injected"]["fibers"]) == 32
    try:
        dark = _dark_links(inventory)
        assert {name for name, ends in dark.items() if all(ends)} == affected
        assert not any(any(ends) for name, ends in dark.items() if name not in affected)
        shown = json.loads(msoctl("lab", "status", "--state-dir", state, "-o", "json").out)
        cables = {c["name"]: c for c in shown["cables"]}
        assert cables["cable-2"]["cut"] and cables["cable-2"]["fibers_cut"] == 32
        assert len(cables["cable-2"]["spans"]) == 16
        assert not any(c["cut"] for name, c in cables.items() if name != "cable-2")
        text = msoctl("lab", "status", "--state-dir", state)
        assert "cable-2  working" in text.out and "32/32" in text.out
    finally:
        cleared = msoctl("lab", "fault", "cable_cut", "cable-2", "--clear", "--state-dir", state)
    assert cleared.code == 0 and "cleared the cut of 32 fibers on cable-2" in cleared.out
    assert all(not any(ends) for ends in _dark_links(inventory).values())


def test_faults_are_routed_to_the_process_that_holds_the_target(
        fabric: SpreadLab, capsys: pytest.CaptureFixture[str]) -> None:
    msoctl: Msoctl = in_process(capsys)
    state = str(fabric.state_dir)
    last = fabric.topology.ocs[-1].name
    assert msoctl("lab", "fault", "port", last, "--port", "3", "--state-dir", state).code == 0
    status = json.loads(msoctl("lab", "status", "--state-dir", state, "-o", "json").out)
    device = next(d for d in status["devices"] if d["name"] == last)
    assert device["faults"] == [{"kind": "port", "target": "3", "seconds": None, "count": None}]
    assert msoctl("lab", "fault", "all", last, "--clear", "--state-dir", state).code == 0
    wrong = msoctl("lab", "fault", "cable_cut", "span-3", "--state-dir", state)
    assert wrong.code == 2 and "span-3 does not support fault 'cable_cut'" in wrong.err
    unknown = msoctl("lab", "fault", "fiber_cut", "cable-99", "--state-dir", state)
    assert unknown.code == 2 and "no device, cable or fiber named 'cable-99'" in unknown.err
    assert len(unknown.err.strip().splitlines()) == 1


def test_one_cut_raises_every_alarm_of_its_links_on_every_ocs(fabric: SpreadLab) -> None:
    """Dialect (docs/dialects/ocs.md, "Loss-of-light alarms"): with every link's
    receiving ports armed, a cable cut raises one LOS event per port of its links, from
    the OCS of both processes, each within a bound; nothing else; mending clears them."""
    inventory = load_inventory(fabric.state_dir / "inventory.yaml")
    affected = _links_in(inventory, fabric.topology, "cable-1")
    armed: dict[str, list[int]] = {}
    for link in inventory.links.values():
        for ocs, port in _receiving_ports(link).items():
            armed.setdefault(ocs, []).append(port)
    expected = {(ocs, port) for link in inventory.links.values() if link.name in affected
                for ocs, port in _receiving_ports(link).items()}
    drivers = _drivers(inventory)
    events: list[tuple[float, LosEvent]] = []
    streams = []
    try:
        for name, driver in drivers.items():
            assert not any(driver.arm_los(armed[name], -30.0, 2.0).values())
        for name in drivers:
            stream = open_alarm_stream(
                inventory.device(name),
                on_events=lambda burst: events.extend((time.monotonic(), e) for e in burst),
                on_snapshot=lambda device, states: None, on_lost=lambda device, why: None)
            assert stream is not None
            streams.append(stream)
        assert all(s.wait_live(10.0) for s in streams)
        fabric.inject("cable-1", Fault("cable_cut"))
        # within the bound: a bounded wait for them all, not their arrival times against a
        # loaded machine's clock
        deadline = time.monotonic() + ALARM_BOUND_SECONDS
        while len(events) < len(expected):
            assert time.monotonic() < deadline, f"{len(events)} of {len(expected)} alarms came"
            time.sleep(0.01)
        time.sleep(0.2)  # anything more would come now
        raised = {(e.device, e.port) for _, e in events if e.lost}
        assert raised == expected and len(events) == len(expected)
        events.clear()
        fabric.clear("cable-1", None)
        deadline = time.monotonic() + ALARM_BOUND_SECONDS
        while len(events) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert {(e.device, e.port) for _, e in events if not e.lost} == expected
    finally:
        for stream in streams:
            stream.close()
        for name, driver in drivers.items():
            driver.disarm_los(armed[name])
            driver.close()


def test_killing_the_lab_ends_its_workers(tmp_path: Path) -> None:
    """``msoctl lab up`` spread over processes: SIGTERM stops it cleanly with its workers;
    SIGKILL leaves no worker behind either (each sees its pipe close)."""
    path = tmp_path / "fabric.yaml"
    path.write_text(generate_text(FabricSpec(campuses=2, ocs_per_campus=2, ocs_size=8,
                                             links=4, spans_per_cable=2)))
    for stop in (signal.SIGTERM, signal.SIGKILL):
        state = tmp_path / f"state-{stop.name}"
        process = subprocess.Popen([*MSOCTL, "lab", "up", "--topology", str(path), "--state-dir",
                                    str(state), "--processes", "2"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not (state / ENDPOINT_FILE).exists():
                assert process.poll() is None, process.communicate()
                assert time.monotonic() < deadline, "the lab did not come up"
                time.sleep(0.05)
            shown = call(find_lab(state), "GET", "/v1/status")
            workers = [p["pid"] for p in shown["lab"]["processes"] if p["role"] == "worker"]
            assert len(workers) == 2
        finally:
            process.send_signal(stop)
            out, err = process.communicate(timeout=30)
        if stop == signal.SIGTERM:
            assert process.returncode == 0 and "lab stopped" in out, err
            assert "over 2 worker processes" in out and "Traceback" not in err
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in workers):
            assert time.monotonic() < deadline, f"workers left after {stop.name}"
            time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


# ---- the full size ------------------------------------------------------------------------------


FULL = FabricSpec(campuses=2, ocs_per_campus=8, ocs_size=128, links=256, spans_per_cable=64)


def test_the_full_size_fabric_runs_and_a_cut_of_64_spans_darkens_64_links(
        tmp_path: Path) -> None:
    """256 protected links over 16 OCS, cables of 64 spans, on two worker processes: one
    cut darkens exactly its 64 links at both ends (README, "Large fabrics")."""
    topology = _topology(tmp_path, FULL)
    assert (len(topology.links), len(topology.ocs)) == (256, 16)
    assert all(len(c.spans) == 64 for c in topology.cables)
    with SpreadLab(tmp_path / "state", topology, processes=2) as lab:
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        _connect_working_paths(inventory)
        affected = _links_in(inventory, topology, "cable-3")
        injected = lab.inject("cable-3", Fault("cable_cut"))
        assert len(injected["fibers"]) == 128
        dark = _dark_links(inventory)
        assert {name for name, ends in dark.items() if all(ends)} == affected
        assert len(affected) == 64
        assert sum(1 for ends in dark.values() if not any(ends)) == 192
