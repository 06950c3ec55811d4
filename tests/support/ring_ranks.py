"""Ranks of a job running real all-reduces over a namespace fabric (tests/support/netns.py):
``python -m tests.support.ring_ranks < SPEC.json > RESULT.json``.

One process per host, each moved into its host's network namespace, each a rank of
``torch.distributed`` on the Gloo backend (CPU tensors, TCP through the host's ``nic0``:
``GLOO_SOCKET_IFNAME``; ``MASTER_ADDR`` the first host's address, where rank 0 serves
the rendezvous store). The all-reduce is a ring over Gloo's send and receive
(:func:`ring_all_reduce`), so that each order of the spec sets who sends to whom without
a new process group (``new_group`` sorts its ranks). ``warmups`` all-reduces of each
order, then ``repetitions`` timed ones, the orders taking turns, each result checked
(every element the number of ranks).

A repetition's time is from the moment the last rank entered the all-reduce to the
moment the last one left it: the processes share one machine's monotonic clock, so the
barrier's uneven release (up to a span's delay) is not counted.

torch is imported once, here, and the ranks are forked from this process: one import
instead of one per rank (about 2 s of CPU each). Any rank that fails takes the others
down, and all go when the process that started them ends; the result is printed
only when all succeed.

SPEC: ``{"hosts": [{"host", "namespace", "address"}], "orders": [[host, ...], ...],
"size_bytes": N, "warmups": N, "repetitions": N, "port": N, "timeout_seconds": N}``.
RESULT: ``{"orders": [{"order": [host, ...], "seconds": [per repetition]}]}``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from datetime import timedelta
from typing import Any

from tests.support.netns import die_with_parent, enter

INTERFACE = "nic0"


def run_rank(spec: dict[str, Any], host: str) -> list[dict[str, Any]]:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # one rank, one core's worth: the ranks share the machine
    hosts = [entry["host"] for entry in spec["hosts"]]
    first = spec["hosts"][0]["address"]
    os.environ.update(MASTER_ADDR=first, MASTER_PORT=str(spec["port"]),
                      GLOO_SOCKET_IFNAME=INTERFACE)
    dist.init_process_group("gloo", init_method="env://", rank=hosts.index(host),
                            world_size=len(hosts),
                            timeout=timedelta(seconds=spec["timeout_seconds"]))
    n = len(hosts)
    tensor = torch.empty(spec["size_bytes"] // 4 // n * n, dtype=torch.float32)
    rings = [[hosts.index(name) for name in order] for order in spec["orders"]]
    stamps: list[list[float]] = [[] for _ in rings]
    # the orders take turns, repetition by repetition, so that whatever else the machine
    # does in the meantime slows them alike
    for repetition in range(spec["warmups"] + spec["repetitions"]):
        for ring, taken in zip(rings, stamps, strict=True):
            tensor.fill_(1.0)
            start, end = ring_all_reduce(dist, tensor, ring, hosts.index(host))
            if tensor.min().item() != n or tensor.max().item() != n:
                raise AssertionError(f"the all-reduce gave {tensor.min().item()}.."
                                     f"{tensor.max().item()}, not {n} everywhere")
            if repetition >= spec["warmups"]:
                taken += [start, end]
    results = []
    for order, taken in zip(spec["orders"], stamps, strict=True):
        everyone = [torch.zeros(len(taken), dtype=torch.float64) for _ in hosts]
        dist.all_gather(everyone, torch.tensor(taken, dtype=torch.float64))
        table = torch.stack(everyone)  # ranks x (start, end, start, end, ...)
        results.append({"order": order, "seconds": [
            float(table[:, 2 * k + 1].max() - table[:, 2 * k].max())
            for k in range(spec["repetitions"])]})
    dist.destroy_process_group()
    return results


def ring_all_reduce(dist: Any, tensor: Any, ring: list[int], me: int) -> tuple[float, float]:
    """Sum ``tensor`` over the ranks of ``ring`` in ring order: a reduce-scatter, then an
    all-gather, each ``n - 1`` steps of one chunk (``1/n`` of the tensor) to the next rank.
    Every receive is posted before the clock starts, as a collective library's
    connections keep their buffers posted (NCCL's credits), so that a step costs a
    one-way trip and its chunk's transfer. Returns (start, end) on the monotonic clock."""
    import torch

    n = len(ring)
    position = ring.index(me)
    following, preceding = ring[(position + 1) % n], ring[(position - 1) % n]
    chunks = tensor.chunk(n)
    inbox = torch.empty((2 * (n - 1), chunks[0].numel()), dtype=tensor.dtype)
    receives = [dist.irecv(inbox[step], src=preceding, tag=step) for step in range(2 * (n - 1))]
    dist.barrier()  # every rank's receives posted, and their peers told
    start = time.monotonic()
    sends = []
    for step in range(n - 1):  # reduce-scatter: ends holding chunk position + 1 complete
        sends.append(dist.isend(chunks[(position - step) % n], dst=following, tag=step))
        receives[step].wait()
        chunks[(position - step - 1) % n].add_(inbox[step])
    for step in range(n - 1):  # all-gather: every chunk, complete, everywhere
        sends.append(dist.isend(chunks[(position + 1 - step) % n], dst=following,
                                tag=n - 1 + step))
        receives[n - 1 + step].wait()
        sends[step].wait()  # the chunk about to be overwritten has left
        chunks[(position - step) % n].copy_(inbox[n - 1 + step])
    for send in sends[n - 1:]:  # a send's wait() is called once: a second one never returns
        send.wait()
    return start, time.monotonic()


def main() -> int:
    die_with_parent(signal.SIGKILL)
    spec = json.load(sys.stdin)
    import torch.distributed  # noqa: F401 - once, before the ranks are forked

    # gloo runs its shared-memory all-reduce, which bypasses the network, when it is told
    # every rank is on one node (LOCAL_WORLD_SIZE == world size): never here.
    os.environ.pop("LOCAL_WORLD_SIZE", None)
    reader, writer = os.pipe()
    children: dict[int, str] = {}
    for index, entry in enumerate(spec["hosts"]):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(reader)
                die_with_parent(signal.SIGKILL)
                enter(entry["namespace"])
                results = run_rank(spec, entry["host"])
                if index == 0:
                    os.write(writer, json.dumps({"orders": results}).encode())
                code = 0
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(code)
        children[pid] = entry["host"]
    os.close(writer)
    failed = []
    while children:
        pid, status = os.wait()
        host = children.pop(pid, None)
        if host is not None and os.waitstatus_to_exitcode(status) != 0:
            failed.append(host)
            for other in children:  # the others would wait for it until their timeout
                os.kill(other, signal.SIGKILL)
    with os.fdopen(reader, "rb") as pipe:
        output = pipe.read()
    if failed:
        print(f"ranks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    sys.stdout.write(output.decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
