"""The rank order ``msoctl job plan`` writes, proved on real collectives: torch.distributed
(the Gloo backend, CPU tensors over TCP) all-reduces over a fabric of network
namespaces laid out as msoctl sees the lab (tests/support/netns.py), in the planned
order and in random ones, timed, against the ring cost model (msoctl/jobs/ringcost.py).

The fabric: ``msoctl lab topology generate`` with two campuses of three one-GPU servers,
each with a 400G NIC on its campus switch, and one 400G link between the switches over
a span of 32.8 km (the generator's cable for that seed): 3:1 oversubscribed, 164 µs of
glass. The lab runs, ``fabric apply`` lights the link, and ``job plan --out`` writes
ranks.json: the order measured is the one the CLI wrote.

Slowed 200 times (tests/support/netns.py): NICs and link at 2 Gbit/s, the span 32.8 ms
each way; an all-reduce of 24 MB then takes 0.3 to 0.6 s, and the machine's own latency
in a step (a millisecond or two: the ranks' wake-ups, a chunk's copies and sum) weighs
what 5 to 10 µs would on the real fabric. Moving the bytes (240 MB an all-reduce,
through veths, tbf and the delay line) keeps about one of the two cores busy while the
ranks run; a slower scale would leave more room, and take longer.

Why a ring built of Gloo's send and receive, not ``all_reduce``: Gloo's own all-reduce
(gloo/allreduce.cc) runs its ring in rank order with at most two 1 MB segments in
flight, each sent only after the receiver's ready-to-receive message has come back
(gloo/transport/tcp/pair.cc): over a 30 km span it waits on round trips, whatever the
order. Measured on this fabric for 24 MB: 1.39 s planned, 1.40 s for an order crossing
the span four times, 1.48 s for the one crossing it six (the model: x1.32 and x1.64).
A collective library on RDMA keeps its receive buffers posted (NCCL's credits):
:func:`tests.support.ring_ranks.ring_all_reduce` does the same, a reduce-scatter and an
all-gather of ``n - 1`` steps each, one chunk per step to the next rank, every receive
posted before the clock starts (0.30 s planned, here); a step costs a one-way trip and
a chunk's transfer, as in the ring model.

What is asserted, on the fastest of four runs after a warm-up (the orders taking turns:
the machine's other work only ever adds time, and beside the suite's first pass a median
took half as long again as on an idle machine), for
three random orders (seeded; orders the model says cost no more than the plan, because
they too cross the span only twice, are passed over: nothing to compare):

- the planned order is faster than each random order;
- each random order's time over the planned order's is the model's ratio within 30 %
  (``TOLERANCE``). The model follows the ring as a pipeline (a chunk pays the span's
  latency only on the steps it crosses it) and lets edges that share a link share it
  while they send: it says 0.300 s for the planned order (measured 0.29 to 0.33 s on an
  idle machine) and 1.75 times that for orders crossing the span four times. Measured,
  the fastest runs: 1.44 to 1.50 on a 2-core machine idle or busy at nice 19 (the edges
  over the span do not always send at the same moment, so sharing costs less than the
  model says), 1.48 to 1.75 beside a niced run of the e2e and conformance tests. The
  30 % holds the model's ratio to both; a model charging every step the span's latency
  (1.32) or one that counts no sharing (1.33) is 33 % under the 1.75 seen there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from emulators.lab import Lab
from emulators.lab.topology import load_topology
from msoctl.inventory import Inventory, load_inventory
from msoctl.jobs.fabric import JobFabric
from msoctl.jobs.plan import Rank
from msoctl.jobs.ringcost import RingCost, random_orders, ring_cost, span_lengths_km
from msoctl.links import Link
from tests.support.cli import in_process
from tests.support.netns import NamespaceFabric, layout_of, unavailable
from tests.support.peers import missing, require_executable, require_module

pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[2]
SCALE = 200.0
SIZE_BYTES = 24_000_000
HOSTS_PER_CAMPUS = 3
RANDOM_ORDERS = 3
SEED = 37
WARMUPS = 1
REPETITIONS = 4
TOLERANCE = 0.30
RANKS_SECONDS = 120.0
"""The ranks' run: about 15 s here; a rank that hangs is killed after this."""


@pytest.fixture(scope="module")
def namespaces_and_torch() -> None:
    """torch (``make peers`` installs the CPU build, torch==2.13.0), ``ip`` and ``tc``
    (iproute2), and root in a kernel that lets it make namespaces, veths and tbf."""
    require_module("torch", how_to_install="`make peers` installs torch==2.13.0 (CPU)")
    require_executable("ip", debian_package="iproute2")
    require_executable("tc", debian_package="iproute2")
    reason = unavailable()
    if reason is not None:
        missing(reason)


@pytest.fixture
def planned(tmp_path: Path, capsys: pytest.CaptureFixture[str],
            monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The lab's topology generated, the lab up, link-1 lit, the job planned with
    ``--out``: the plan's document, ranks.json and the inventory. The lab is stopped
    before the measurements (nothing of it is measured)."""
    msoctl = in_process(capsys)
    topology = tmp_path / "topology.yaml"
    made = msoctl("lab", "topology", "generate", "--campuses", "2", "--ocs-per-campus", "1",
                  "--ocs-size", "8", "--links", "1",
                  "--hosts-per-campus", str(HOSTS_PER_CAMPUS), "--gpus-per-host", "1",
                  "-o", str(topology))
    assert made.code == 0, made
    with Lab(tmp_path / "lab", load_topology(topology), serial_consoles=False) as lab:
        inventory_file = lab.state_dir / "inventory.yaml"
        monkeypatch.setenv("MSOCTL_INVENTORY", str(inventory_file))
        monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
        intent = tmp_path / "intent.yaml"
        intent.write_text("links:\n  link-1: {span: working}\n")
        applied = msoctl("fabric", "apply", str(intent))
        assert applied.code == 0, applied
        out = tmp_path / "job"
        plan = msoctl("job", "plan", "--gpus", str(2 * HOSTS_PER_CAMPUS), "--out", str(out),
                      "-o", "json")
        assert plan.code == 0, plan
        inventory = load_inventory(inventory_file)
    return {"plan": json.loads(plan.out), "ranks": json.loads((out / "ranks.json").read_text()),
            "hostfile": (out / "hostfile").read_text(), "inventory": inventory}


def test_the_planned_order_beats_random_ones_by_what_the_ring_model_predicts(
        namespaces_and_torch: None, planned: dict[str, Any]) -> None:
    plan, inventory = planned["plan"], planned["inventory"]
    assert plan["unreachable"] == [] and plan["crossings"]["campus"] == 2
    ranks = _ranks(planned["ranks"], inventory)
    assert [line.split()[0] for line in planned["hostfile"].splitlines()] == \
        [rank.host for rank in ranks]  # one GPU a host: the hosts in rank order

    def carried(link: Link) -> str:
        return "down" if link.name in plan["out_of_service_links"] else "working"

    fabric = JobFabric.build(inventory.hosts.values(), inventory.links, carried, ())
    span_km = span_lengths_km(inventory.links, carried)
    predicted = {_names(ranks): ring_cost(ranks, fabric, SIZE_BYTES, span_km=span_km)}
    for order in random_orders(ranks, 50, seed=SEED):
        cost = ring_cost(order, fabric, SIZE_BYTES, span_km=span_km)
        if cost.seconds > predicted[_names(ranks)].seconds * 1.05:  # it does cross more
            predicted.setdefault(_names(order), cost)
        if len(predicted) == 1 + RANDOM_ORDERS:
            break
    assert len(predicted) == 1 + RANDOM_ORDERS

    layout = layout_of(fabric, {rank.host: rank.nic for rank in ranks}, span_km, scale=SCALE)
    with NamespaceFabric(layout) as namespaces:
        measured = _run_ranks(namespaces, list(predicted))
    report = _report(predicted, measured)
    plan_key = _names(ranks)
    for order in list(predicted)[1:]:
        assert measured[order] > measured[plan_key], report
        ratio = measured[order] / measured[plan_key]
        expected = predicted[order].seconds / predicted[plan_key].seconds
        assert abs(ratio / expected - 1) <= TOLERANCE, report
    print(report)


def _ranks(document: dict[str, Any], inventory: Inventory) -> list[Rank]:
    """The ranks of ranks.json, in its order, as the planner's :class:`Rank`."""
    ranks = []
    for entry in document["ranks"]:
        host = inventory.hosts[entry["host"]]
        nic = host.nic(entry["nic"])
        assert nic is not None and nic.guid == entry["guid"]
        ranks.append(Rank(entry["rank"], entry["host"], entry["gpu"], entry["vendor"],
                          entry["campus"], nic))
    return ranks


def _names(ranks: Any) -> tuple[str, ...]:
    return tuple(rank.host for rank in ranks)


def _run_ranks(namespaces: NamespaceFabric,
               orders: list[tuple[str, ...]]) -> dict[tuple[str, ...], float]:
    """Each order's fastest time (seconds) over the namespace fabric."""
    layout = namespaces.layout
    spec = {"hosts": [{"host": port.host, "namespace": namespaces.namespace(port.host),
                       "address": port.address} for port in layout.hosts],
            "orders": [list(order) for order in orders], "size_bytes": SIZE_BYTES,
            "warmups": WARMUPS, "repetitions": REPETITIONS, "port": 29500,
            "timeout_seconds": RANKS_SECONDS / 2}
    env = {**os.environ, "TORCH_CPP_LOG_LEVEL": "ERROR"}
    env.pop("LOCAL_WORLD_SIZE", None)
    ranks = subprocess.Popen([sys.executable, "-m", "tests.support.ring_ranks"], cwd=ROOT,
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = ranks.communicate(json.dumps(spec), timeout=RANKS_SECONDS)
    finally:
        if ranks.poll() is None:  # timed out or interrupted: the ranks go with it
            os.killpg(ranks.pid, signal.SIGKILL)
            ranks.wait()
    assert ranks.returncode == 0, f"the ranks failed:\n{err[-4000:]}"
    results = json.loads(out)["orders"]
    return {tuple(result["order"]): min(result["seconds"]) for result in results}


def _report(predicted: dict[tuple[str, ...], RingCost],
            measured: dict[tuple[str, ...], float]) -> str:
    orders = list(predicted)
    plan_seconds, plan_measured = predicted[orders[0]].seconds, measured[orders[0]]
    lines = [f"ring all-reduce of {SIZE_BYTES / 1e6:g} MB, fabric slowed {SCALE:g} times "
             f"(tolerance on the ratio {TOLERANCE:.0%}):"]
    for index, order in enumerate(orders):
        cost = predicted[order]
        crossings = sum(edge.span_km > 0 for edge in cost.edges)
        lines.append(
            f"  {'planned' if index == 0 else 'random '} {' '.join(order)}: span crossed "
            f"{crossings} times, B {cost.bandwidth_bps / 1e9:g} Gbit/s; predicted "
            f"{cost.seconds * SCALE:.3f} s (x{cost.seconds / plan_seconds:.2f}), measured "
            f"{measured[order]:.3f} s (x{measured[order] / plan_measured:.2f})")
    return "\n".join(lines)
