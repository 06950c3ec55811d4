"""``msoctl host``: the GPU servers on the fabric and their state.

``host list`` reads every host's state from where the fleet publishes it (each host's
exporters, or the fleet's Prometheus: msoctl/compute/gpustate.py) and shows, per host,
its GPUs healthy out of all, its NICs up out of all, and what is wrong. ``host show H``
shows one host GPU by GPU and NIC by NIC. JSON (``-o json``): ``hosts``, each with
``name``, ``vendor``, ``model``, ``campus``, ``scale_up``, ``error`` (why it could not be
read), ``gpus`` (``index``, ``healthy``: true, false or null for unknown, ``reasons``,
``temperature_celsius``, ``power_watts``, ``utilisation``, ``memory_used_mib``,
``memory_total_mib``, ``xid``, ``ecc_uncorrectable``) and ``nics`` (``name``, ``switch``,
``port``, ``rail``, ``guid``, ``address``, ``up``, ``reason``, ``degraded``: why a NIC
that is up runs below its speed).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from drivers.errors import ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, cell, emit, output_option, table
from msoctl.cli.types import TEXT
from msoctl.compute.gpustate import HostState, read_hosts


@click.group()
def host() -> None:
    """GPU servers on the fabric: their GPUs' and NICs' state."""


def read_state(ctx: Context, names: list[str] | None = None) -> list[HostState]:
    inventory = ctx.inventory
    if not inventory.hosts:
        raise ValidationError(f"{inventory.path}: the inventory has no hosts")
    chosen = list(inventory.hosts.values())
    if names:
        unknown = [name for name in names if name not in inventory.hosts]
        if unknown:
            raise ValidationError(f"no host named {unknown[0]!r} (hosts: "
                                  f"{', '.join(inventory.hosts)})")
        chosen = [inventory.hosts[name] for name in names]
    return read_hosts(chosen, inventory.gpu_metrics)


def host_document(state: HostState) -> dict[str, Any]:
    host = state.host
    nics = {nic.name: nic for nic in host.nics}
    return {
        "name": host.name, "vendor": host.vendor, "model": host.model,
        "campus": host.campus, "scale_up": host.scale_up, "error": state.error,
        "gpus": [{**asdict(gpu), "reasons": list(gpu.reasons)} for gpu in state.gpus],
        "nics": [{"name": nic.name, "switch": nics[nic.name].switch,
                  "port": nics[nic.name].port, "rail": nics[nic.name].rail,
                  "guid": nics[nic.name].guid, "address": nics[nic.name].address,
                  "up": nic.up, "reason": nic.reason, "degraded": nic.degraded}
                 for nic in state.nics],
    }


def problems(state: HostState) -> str:
    if state.error is not None:
        return f"unreadable: {state.error}"
    found = [f"gpu {gpu.index}: {'; '.join(gpu.reasons)}" for gpu in state.gpus
             if not gpu.healthy]
    found += [f"{nic.name}: {nic.problem}" for nic in state.nics if not nic.usable]
    return "; ".join(found) or "none"


@host.command("list")
@output_option
@pass_context
def list_hosts(ctx: Context, output: str) -> None:
    """Every host: GPUs healthy out of all, NICs up out of all, what is wrong."""
    states = read_state(ctx)
    if output in DOCUMENTS:
        emit({"hosts": [host_document(state) for state in states]}, output)
        return
    rows = [[state.host.name, state.host.campus or "-", state.host.vendor, state.host.model,
             f"{len(state.healthy_gpus)}/{state.host.gpus}",
             f"{sum(bool(n.up) for n in state.nics)}/{len(state.nics)}", problems(state)]
            for state in states]
    click.echo(table(["host", "campus", "vendor", "model", "gpus ok", "nics up", "problems"],
                     rows, cut=("problems",), wrap=("problems",)))


@host.command("show")
@click.argument("name", type=TEXT)
@output_option
@pass_context
def show_host(ctx: Context, name: str, output: str) -> None:
    """One host, GPU by GPU and NIC by NIC."""
    (state,) = read_state(ctx, [name])
    if output in DOCUMENTS:
        emit(host_document(state), output)
        return
    host = state.host
    click.echo(f"{host.name}: {host.gpus} x {host.vendor} {host.model}, campus "
               f"{host.campus or '-'}, scale-up domain {host.scale_up}"
               + ("" if state.error is None else f"; unreadable: {state.error}"))
    click.echo(table(
        ["gpu", "healthy", "temp_c", "power_w", "util", "mem_used_mib", "xid", "reasons"],
        [[gpu.index, {True: "yes", False: "no", None: "unknown"}[gpu.healthy],
          cell(gpu.temperature_celsius, 0), cell(gpu.power_watts, 0),
          "-" if gpu.utilisation is None else f"{gpu.utilisation:.0%}",
          cell(gpu.memory_used_mib, 0), cell(gpu.xid, 0), "; ".join(gpu.reasons) or "-"]
         for gpu in state.gpus], cut=("reasons",), wrap=("reasons",)))
    nics = {nic.name: nic for nic in host.nics}
    click.echo(table(
        ["nic", "rail", "switch port", "speed", "up", "guid", "address"],
        [[nic.name, nics[nic.name].rail, nics[nic.name].switch_port, nics[nic.name].speed,
          {True: "yes" if nic.degraded is None else f"yes ({nic.degraded})",
           False: f"no ({nic.reason})", None: f"unknown ({nic.reason})"}[nic.up],
          nics[nic.name].guid, nics[nic.name].address or "-"] for nic in state.nics]))
