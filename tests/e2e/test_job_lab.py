"""``msoctl host`` and ``msoctl job plan`` against the lab: its four GPU servers of two
vendors on two campuses, their exporters with faults, the fabric between them dark and
then lit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from emulators.faults import Fault
from emulators.lab import Lab
from msoctl.cli.context import Context
from msoctl.exporter.jobs import JobsReader
from tests.support import Msoctl, one_error_line
from tests.support.exporter import fetch, serve_exporter, value

LINK_UP = "links:\n  link-1: {span: working}\n"
COMMISSION_DB = "11"
"""Each span's amplifier set to the span's loss (30 km and two OCS passes, about 11 dB):
at their factory 20 dB the far switch's receivers read +10 dBm, past their high alarm."""


def commission(msoctl: Msoctl) -> None:
    """Both amplifiers at the spans' loss, ramped fast (a test need not wait at 10 dB/s)."""
    for amp in ("amp-1", "amp-2"):
        done = msoctl("amp", "set", amp, "--gain", COMMISSION_DB, "--slew", "1000")
        assert done.code == 0, done


@pytest.fixture
def lab(shared_lab: Lab) -> Lab:
    """One lab for the module, put back and checked between tests (tests/support/reset.py)."""
    return shared_lab


def test_host_list_shows_each_server_and_what_is_wrong(lab: Lab, msoctl: Msoctl) -> None:
    healthy = json.loads(msoctl("host", "list", "-o", "json").out)
    assert [(h["name"], h["vendor"], h["campus"]) for h in healthy["hosts"]] == [
        ("gpu-a1", "nvidia", "a"), ("gpu-a2", "amd", "a"), ("gpu-b1", "nvidia", "b"),
        ("gpu-b2", "amd", "b")]
    assert all(g["healthy"] for h in healthy["hosts"] for g in h["gpus"])
    lab.inject("gpu-a1", Fault("gpu_xid", "2"))
    lab.inject("gpu-b2", Fault("nic_down", "mlx5_1"))
    result = msoctl("host", "list")
    assert result.code == 0, result
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:] if line[:1] != " "}
    assert rows["gpu-a1"].split()[4:6] == ["3/4", "2/2"]
    assert rows["gpu-b2"].split()[4:6] == ["4/4", "1/2"]
    shown = json.loads(msoctl("host", "show", "gpu-a1", "-o", "json").out)
    assert shown["gpus"][2]["healthy"] is False and shown["gpus"][2]["reasons"]


def test_a_job_is_placed_on_healthy_gpus_and_told_the_fabric_is_dark(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """A new lab's OCS carry nothing: link-1 is out of service, so the servers of two
    campuses are not joined, and the plan says so; one campus's are."""
    lab.inject("gpu-a1", Fault("gpu_ecc", "0"))
    refused = msoctl("job", "plan", "--gpus", "16")
    assert "16 GPUs asked, but only 15 healthy GPUs" in one_error_line(refused)
    plan = json.loads(msoctl("job", "plan", "--gpus", "7", "--vendor", "nvidia",
                             "-o", "json").out)
    assert [h["name"] for h in plan["hosts"]] == ["gpu-a1", "gpu-b1"]
    assert [r["gpu"] for r in plan["ranks"] if r["host"] == "gpu-a1"] == [1, 2, 3]
    assert plan["out_of_service_links"] == ["link-1"] and plan["routes"] == []
    assert len(plan["unreachable"]) == 2
    local = json.loads(msoctl("job", "plan", "--gpus", "4", "--vendor", "amd",
                              "-o", "json").out)
    assert [h["name"] for h in local["hosts"]] == ["gpu-a2"]
    assert local["crossings"] == {"campus": 0, "vendor": 0, "host": 0}


def test_with_the_link_lit_the_plan_writes_files_over_the_span(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    applied = msoctl("fabric", "apply", str(intent))
    assert applied.code == 0, applied
    out = tmp_path / "job"
    plan = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--name",
                             "llm-1", "--out", str(out), "-o", "json").out)
    assert plan["name"] == "llm-1" and plan["crossings"] == {"campus": 2, "vendor": 0,
                                                            "host": 2}
    assert plan["unreachable"] == [] and len(plan["routes"]) == 2
    route = plan["routes"][0]
    assert route["links"] == ["link-1"]
    assert route["bandwidth_gbytes_per_second"] == pytest.approx(50 * 1 / 4)  # 4 NICs, 1 link
    lines = (out / "hostfile").read_text().splitlines()
    assert lines == ["gpu-a2 slots=4", "gpu-b2 slots=4"]
    root = ElementTree.parse(out / "flagcx-route.xml").getroot()
    assert root.tag == "interserver_route" and len(root[0]) == 2
    env = (out / "env" / "gpu-a2.env").read_text()
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n" in env
    assert f"FLAGCX_INTERSERVER_ROUTE_FILE={(out / 'flagcx-route.xml').resolve()}" in env
    ranks = json.loads((out / "ranks.json").read_text())
    assert [r["host"] for r in ranks["ranks"]] == ["gpu-a2"] * 4 + ["gpu-b2"] * 4
    text = msoctl("job", "plan", "--gpus", "8", "--vendor", "amd")
    assert re.search(r"narrowest 12\.5 GB/s .* over link-1", " ".join(text.out.split()))


@pytest.mark.parametrize(("arguments", "words"), [
    (("job", "plan", "--gpus", "0"), "--gpus"),
    (("job", "plan", "--gpus", "4", "--vendor", "intel"), "--vendor"),
    (("job", "plan", "--gpus", "4", "--name", "a b"), "job name 'a b'"),
    (("job", "plan"), "--gpus"),
    (("host", "show", "gpu-z9"), "no host named 'gpu-z9'"),
])
def test_bad_requests_are_one_line(lab: Lab, msoctl: Msoctl, arguments: tuple[str, ...],
                                   words: str) -> None:
    assert words in one_error_line(msoctl(*arguments))


def test_a_kept_job_is_listed_watched_and_ended(lab: Lab, msoctl: Msoctl,
                                                tmp_path: Path) -> None:
    """A job planned under a name is kept (journaled), refused a second time until it
    ends, and its status follows the fabric: its NIC down or its link drained make it
    broken, naming why; ``job end`` forgets it."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    commission(msoctl)
    planned = msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-2")
    assert planned.code == 0, planned
    again = msoctl("job", "plan", "--gpus", "4", "--name", "llm-2")
    assert "job 'llm-2' was planned by" in one_error_line(again)
    listed = json.loads(msoctl("job", "list", "-o", "json").out)["jobs"]
    assert [(j["name"], j["world_size"], j["links"]) for j in listed] == [
        ("llm-2", 8, ["link-1"])]
    status = json.loads(msoctl("job", "status", "llm-2", "--interval", "0", "-o", "json").out)
    assert status["verdict"] == "ok" and status["problems"] == []
    assert status["links"] == [{"name": "link-1", "role": "working", "span": "span-1",
                                "light": "arrives", "lost_at": None,
                                "amplifiers": ["amp-1"], "drained": False}]
    lab.inject("gpu-b1", Fault("nic_down", "mlx5_1"))
    assert msoctl("link", "drain", "link-1", "--reason", "test").code == 0
    broken = json.loads(msoctl("job", "status", "llm-2", "--interval", "0", "-o", "json").out)
    assert broken["verdict"] == "broken"
    assert any(p.startswith("gpu-b1 mlx5_1:") for p in broken["problems"])
    assert "link-1: drained" in broken["problems"]
    ended = msoctl("job", "end", "llm-2")
    assert ended.code == 0 and "ended llm-2 (8 GPUs" in ended.out
    assert "no job named 'llm-2'" in one_error_line(msoctl("job", "status", "llm-2"))
    history = msoctl("history", "-o", "json")
    actions = [op["action"] for op in json.loads(history.out)["operations"]]
    assert actions.count("job.plan") == 2 and "job.end" in actions


def test_a_change_on_a_jobs_link_names_the_job(lab: Lab, msoctl: Msoctl,
                                               tmp_path: Path) -> None:
    """Every change's impact lines name the kept jobs whose traffic crosses the links it
    darkens, moves or disturbs: moving link-1 to its protection span names llm-3."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--name", "llm-3").code == 0
    moved = tmp_path / "moved.yaml"
    moved.write_text("links:\n  link-1: {span: protection}\n")
    plan = msoctl("fabric", "plan", str(moved))
    assert plan.code == 0, plan
    text = " ".join(plan.out.split())
    assert "jobs on these links: llm-3 (link-1)" in text, plan.out
    document = json.loads(msoctl("fabric", "plan", str(moved), "-o", "json").out)
    assert document["jobs"] == {"llm-3": ["link-1"]}
    unmoved = json.loads(msoctl("fabric", "plan", str(intent), "-o", "json").out)
    assert unmoved["impact"] == [] and unmoved["jobs"] == {}


def test_a_jobs_status_follows_a_cut_and_the_move_to_protection(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """The job's link is traced end to end as path show traces it: a cut of its span
    breaks the job (the light lost at the span's amplifier); once the link runs on its
    protection span the job is degraded, no longer broken."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    commission(msoctl)
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--name", "llm-4").code == 0
    lab.inject("span-1", Fault("fiber_cut"))
    cut = json.loads(msoctl("job", "status", "llm-4", "--interval", "0", "-o", "json").out)
    assert cut["verdict"] == "broken"
    assert cut["links"][0]["light"] == "lost" and cut["links"][0]["lost_at"].startswith("amp-1")
    intent.write_text("links:\n  link-1: {span: protection}\n")
    moved = msoctl("fabric", "apply", str(intent), "--force")
    assert moved.code == 0, moved
    degraded = json.loads(msoctl("job", "status", "llm-4", "--interval", "0", "-o",
                                 "json").out)
    assert degraded["verdict"] == "degraded"
    assert degraded["problems"] == ["link-1: on its protection span"]
    assert degraded["links"][0]["span"] == "span-2"


def test_a_jobs_switch_ports_show_overload_pauses_and_a_dark_nic(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """The job's switch ports are read as ``switch counters`` and ``telemetry optics``
    read them: at the amplifier's factory gain the far receivers are past their high
    alarm (degraded, until the gain is set to the span's loss); a PFC storm on the span's
    port shows as pause frames rising (degraded); a NIC whose link drops darkens its
    switch port's lanes (and breaks the job)."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-5").code == 0
    hot = json.loads(msoctl("job", "status", "llm-5", "--interval", "0", "-o", "json").out)
    assert hot["verdict"] == "degraded", hot["problems"]
    [overload] = hot["problems"]  # the eight lanes in one line, with their range
    assert re.fullmatch(r"sw-b Ethernet1 lanes 1-8 rx \d+\.\d\d\.\.\d+\.\d\d dBm above its "
                        r"high alarm 5\.00", overload), overload
    ports = {(p["switch"], p["port"]): p for p in hot["ports"]}
    assert {key: p["faces"] for key, p in ports.items()} == {
        ("sw-a", "Ethernet1"): "fabric", ("sw-b", "Ethernet1"): "fabric",
        ("sw-a", "Ethernet9"): "host", ("sw-a", "Ethernet10"): "host",
        ("sw-b", "Ethernet9"): "host", ("sw-b", "Ethernet10"): "host"}
    assert ports[("sw-b", "Ethernet1")]["optics"] == "alarm"
    assert all(p["pfc_per_second"] is None for p in hot["ports"])  # no interval: no rates
    commission(msoctl)
    lab.inject("sw-a", Fault("pfc_storm", "Ethernet1@3"))
    lab.inject("gpu-a1", Fault("nic_down", "mlx5_0"))
    status = msoctl("job", "status", "llm-5", "--interval", "0.5")
    assert status.code == 0, status
    document = json.loads(msoctl("job", "status", "llm-5", "--interval", "0.5",
                                 "-o", "json").out)
    assert document["verdict"] == "broken"
    problems = document["problems"]
    assert any(re.fullmatch(r"sw-a Ethernet1: PFC pause frames rising \([\d,]+/s\)", p)
               for p in problems), problems
    assert "sw-a Ethernet9 no light on all its 8 lanes" in problems
    assert not any("high alarm" in p for p in problems)
    ports = {(p["switch"], p["port"]): p for p in document["ports"]}
    assert ports[("sw-a", "Ethernet1")]["pfc_per_second"] > 0
    assert ports[("sw-a", "Ethernet10")]["optics"] == "ok"
    table = " ".join(status.out.split())
    assert "sw-a Ethernet9 host 0 0 0 alarm no light on all its 8 lanes" in table, status.out


def test_the_exporter_serves_every_kept_jobs_state_for_promql_joins(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """``/jobs`` reads each kept job as ``job status`` does (counters once: their rates
    are PromQL's, joined through ``msoctl_job_port_info``): a GPU lost on one job's
    server breaks that job and no other; a journal that cannot be read is ``up 0``."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    commission(msoctl)
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-6").code == 0
    assert msoctl("job", "plan", "--gpus", "4", "--vendor", "amd", "--name", "llm-7").code == 0
    lab.inject("gpu-b1", Fault("gpu_xid", "2"))
    inventory = lab.state_dir / "inventory.yaml"
    reader = JobsReader(Context(str(inventory)).anew, share_seconds=0.0)
    with serve_exporter(inventory, server_options={"jobs": reader}) as server:
        reply = fetch(f"{server.url}/jobs", scrape_timeout=10)
    assert reply.status == 200 and reply.content_type.startswith("text/plain; version=0.0.4")
    text = reply.body
    assert value(text, "msoctl_jobs_up") == 1 and value(text, "msoctl_jobs_kept") == 2
    assert value(text, "msoctl_job_up", job_name="llm-6") == 1
    assert value(text, "msoctl_job_state", job_name="llm-6", state="broken") == 1
    assert value(text, "msoctl_job_state", job_name="llm-6", state="ok") == 0
    assert value(text, "msoctl_job_host_gpus_healthy", job_name="llm-6", host="gpu-b1") == 3
    assert value(text, "msoctl_job_host_gpus", job_name="llm-6", host="gpu-b1") == 4
    assert value(text, "msoctl_job_state", job_name="llm-7", state="ok") == 1
    assert value(text, "msoctl_job_info", job_name="llm-7", vendors="amd") == 1
    assert value(text, "msoctl_job_link_light", job_name="llm-6", link="link-1") == 1
    assert value(text, "msoctl_job_link_info", job_name="llm-6", link="link-1",
                 span="span-1", role="working") == 1
    assert value(text, "msoctl_job_port_info", job_name="llm-6", device="sw-b",
                 port="Ethernet1", faces="fabric") == 1
    assert value(text, "msoctl_job_port_optics", job_name="llm-6", device="sw-a",
                 port="Ethernet9", level="ok") == 1
    assert value(text, "msoctl_job_link_info", job_name="llm-7") is None  # one campus
    broken = tmp_path / "broken.yaml"
    broken.write_text(re.sub(r"(?m)^journal: .*$", "journal: /nonexistent/dir/j.db",
                             inventory.read_text()))
    reader = JobsReader(Context(str(broken)).anew, share_seconds=0.0)
    with serve_exporter(inventory, server_options={"jobs": reader}) as server:
        assert value(fetch(f"{server.url}/jobs").body, "msoctl_jobs_up") == 0


def test_job_circuits_light_the_dark_link_its_ring_needs_and_job_end_undoes_them(
        lab: Lab, msoctl: Msoctl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a new lab link-1 is dark: a job over both campuses gets it lit as its circuit
    (through the fabric's apply: journaled, light verified), one link for its two ring
    NIC pairs between sw-a and sw-b (one short); another job crossing it keeps it lit
    when the first ends; the last one's end takes it down again, drained while it does."""
    monkeypatch.chdir(tmp_path)  # where the intents are written when --out is not given
    files = tmp_path / "files"
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-8",
                  "--out", str(files), "--lossless-priority", "3").code == 0
    route = ElementTree.parse(files / "flagcx-route.xml").getroot()
    assert route.findall("./nic_pairs/pair") == []  # link-1 dark: no pair is joined
    dry = json.loads(msoctl("job", "circuits", "llm-8", "--dry-run", "-o", "json").out)
    assert dry["light"] == ["link-1"] and dry["dry_run"] is True
    assert dry["pairs"] == [{"switches": ["sw-a", "sw-b"], "edges": 2, "in_service": [],
                             "light": ["link-1"], "drained": [], "unknown": [], "spare": [],
                             "short": 1}]
    intent = tmp_path / "circuits.yaml"
    lit = msoctl("job", "circuits", "llm-8", "--out", str(intent))
    assert lit.code == 0, lit
    assert "sw-a - sw-b: 2 ring NIC pairs over 1 link: 1 share" in lit.out
    assert re.search(r"lit link-1 for llm-8 \(fabric apply [0-9a-f]{12} of ",
                     " ".join(lit.out.split())), lit.out
    assert intent.read_text() == "links:\n  link-1: {span: working}\n"
    assert f"rewrote {files / 'flagcx-route.xml'}" in " ".join(lit.out.split())
    pairs = ElementTree.parse(files / "flagcx-route.xml").getroot().findall("./nic_pairs/pair")
    assert len(pairs) == 2  # gpu-a1 and gpu-b1, rail to rail, over link-1 now
    assert [s.get("upLink") for s in pairs[0].findall("./interSwitch/switch")] == ["1", "0"]
    path = json.loads(msoctl("path", "show", "link-1", "-o", "json").out)
    assert path["links"][0]["span"] == "working" and path["links"][0]["light"] == "arrives"
    kept = json.loads(msoctl("job", "list", "-o", "json").out)["jobs"][0]
    assert kept["circuits"] == ["link-1"] and kept["circuits_file"] == str(intent)
    status = json.loads(msoctl("job", "status", "llm-8", "--interval", "0", "-o", "json").out)
    assert [link["name"] for link in status["links"]] == ["link-1"]
    again = json.loads(msoctl("job", "circuits", "llm-8", "--dry-run", "-o", "json").out)
    assert again["light"] == [] and again["pairs"][0]["in_service"] == ["link-1"]
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--name", "llm-9").code == 0
    first = msoctl("job", "end", "llm-8")
    assert first.code == 0 and "kept lit: link-1 (other jobs cross them)" in first.out
    assert json.loads(msoctl("path", "show", "link-1", "-o", "json").out)[
        "links"][0]["light"] == "arrives"
    assert msoctl("job", "end", "llm-9").code == 0  # planned over it: no circuit of its own
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-10").code == 0
    assert msoctl("job", "circuits", "llm-10", "-o", "json").code == 0  # nothing to light
    assert msoctl("link", "drain", "link-1", "--reason", "test").code == 0
    assert msoctl("fabric", "apply", str(_write(tmp_path / "down.yaml",
                                                "links:\n  link-1: {state: down}\n"))).code == 0
    assert msoctl("link", "undrain", "link-1").code == 0
    assert msoctl("job", "circuits", "llm-10").code == 0
    ended = msoctl("job", "end", "llm-10")
    assert ended.code == 0, ended
    assert "took down link-1, llm-10's circuits" in ended.out
    assert (tmp_path / "job-llm-10-circuits-end.yaml").read_text() == \
        "links:\n  link-1: {state: down}\n"
    path = json.loads(msoctl("path", "show", "link-1", "-o", "json").out)
    assert path["links"][0]["span"] == "none"
    history = json.loads(msoctl("history", "-o", "json").out)["operations"]
    actions = [(op["device"], op["action"]) for op in history]
    tail = actions[actions.index(("job/llm-10", "job.circuits")):]
    assert [a for a in tail if a[1] != "ocs.apply" and a[1] != "amp.restart"] == [
        ("job/llm-10", "job.circuits"), ("fabric", "fabric.apply"),
        ("link-1", "link.drain"), ("fabric", "fabric.apply"), ("link-1", "link.undrain"),
        ("job/llm-10", "job.end")], actions
    assert msoctl("link", "list", "-o", "json").code == 0


def test_job_circuits_leave_drained_links_alone_and_refuse_what_is_not_a_job(
        lab: Lab, msoctl: Msoctl) -> None:
    """A drained dark link is not lit for a job (someone took it out of service); a job on
    one campus has no circuit to get; an unknown job is one error line."""
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "amd", "--name", "llm-11").code == 0
    assert msoctl("link", "drain", "link-1", "--reason", "fiber work").code == 0
    plan = msoctl("job", "circuits", "llm-11")
    assert plan.code == 0, plan
    assert "link-1 (drained)" in plan.out and "nothing to light: no dark link joins" in plan.out
    assert msoctl("job", "plan", "--gpus", "4", "--vendor", "amd", "--name", "llm-12").code == 0
    one = msoctl("job", "circuits", "llm-12")
    assert one.code == 0 and "nothing to light: the job's ring stays on one switch" in one.out
    assert "no job named 'llm-13'" in one_error_line(msoctl("job", "circuits", "llm-13"))
    assert msoctl("link", "undrain", "link-1").code == 0


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_lossless_priority_is_read_from_the_jobs_switch_ports(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """The factory switches keep no priority lossless on their host ports: the files use
    RoCE's usual 3, with a warning naming the ports. Once the ports keep priority 4
    (``switch cc apply``), the traffic class and service level follow; an explicit
    --lossless-priority is taken as given."""
    plain = msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--out",
                   str(tmp_path / "factory"))
    assert plain.code == 0, plain
    text = " ".join(plain.out.split())
    assert "warning: no switch port of the job keeps a priority lossless" in text
    assert "ports keeping no priority lossless: sw-a:Ethernet9, sw-a:Ethernet10" in text
    assert "NCCL_IB_SL=3\n" in (tmp_path / "factory" / "env" / "gpu-a1.env").read_text()
    want = tmp_path / "want.yaml"
    want.write_text("congestion_control:\n  ports:\n" + "".join(
        f"    {port}: {{lossless_priorities: [4], xoff_bytes: 200000, xon_bytes: 8192}}\n"
        for port in ("Ethernet9", "Ethernet10")))
    applied = msoctl("switch", "cc", "apply", "sw-a", "sw-b", "--file", str(want),
                     "--merge", "--no-confirm")
    assert applied.code == 0, applied
    document = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--out",
                                 str(tmp_path / "kept"), "-o", "json").out)
    assert document["lossless"] == {"priority": 4, "source": "switches", "traffic_class": 138,
                                    "ports_keeping_none": [], "ports_keeping_another": [],
                                    "switches_unread": {}}
    env = (tmp_path / "kept" / "env" / "gpu-b1.env").read_text()
    assert "NCCL_IB_SL=4\n" in env and "NCCL_IB_TC=138\n" in env
    given = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--out",
                              str(tmp_path / "given"), "--lossless-priority", "5",
                              "-o", "json").out)
    assert given["lossless"] == {"priority": 5, "source": "option", "traffic_class": 170}


def test_a_nic_trained_down_degrades_the_job_and_is_left_out_of_the_next(
        lab: Lab, msoctl: Msoctl, tmp_path: Path) -> None:
    """gpu-a1's mlx5_0 trains at half its rate (node_exporter's port rate: 200 Gb/s of
    400G): the host lists it, a kept job using it is degraded (the NIC, and its switch
    port's lanes 5-8 dark), and a job planned now goes through mlx5_1 only."""
    intent = tmp_path / "intent.yaml"
    intent.write_text(LINK_UP)
    assert msoctl("fabric", "apply", str(intent)).code == 0
    commission(msoctl)
    assert msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--name", "llm-13").code == 0
    lab.inject("gpu-a1", Fault("nic_degraded", "mlx5_0"))
    hosts = " ".join(msoctl("host", "list").out.split())
    assert "gpu-a1 a nvidia H100 4/4 2/2 mlx5_0: link at 200 Gb/s of 400G" in hosts
    status = json.loads(msoctl("job", "status", "llm-13", "--interval", "0", "-o", "json").out)
    assert status["verdict"] == "degraded"
    assert status["problems"] == ["gpu-a1 mlx5_0: link at 200 Gb/s of 400G",
                                  "sw-a Ethernet9 no light on lanes 5-8"]
    plan = json.loads(msoctl("job", "plan", "--gpus", "8", "--vendor", "nvidia", "--out",
                             str(tmp_path / "job"), "--lossless-priority", "3",
                             "-o", "json").out)
    assert plan["excluded_nics"] == {"gpu-a1": ["mlx5_0"]}
    env = (tmp_path / "job" / "env" / "gpu-a1.env").read_text()
    assert "NCCL_IB_HCA==mlx5_1:1\n" in env
