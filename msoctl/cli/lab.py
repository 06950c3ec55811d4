"""``msoctl lab``: run the emulated fabric, look at it and break it; ``msoctl demo``: the
guided walkthrough.

``lab up`` runs the lab (:mod:`msoctl.lab.up`), in one process or, for a large
topology, spread over several; ``lab topology generate`` writes the topology of a large
fabric (:mod:`msoctl.lab.topology`); ``lab status`` and ``lab fault`` talk to a running
lab through its control endpoint (:mod:`msoctl.lab.client`), found by the lab's state
directory: ``--state-dir``, else the directory of the inventory in use, else
``lab-state``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option, say, table, watch_option, wrap
from msoctl.cli.types import TARGET, TEXT, Count, Number, OutputDir, OutputFile, input_path
from msoctl.inventory import inventory_named
from msoctl.lab.client import LabEndpoint, call, find_lab
from msoctl.words import counted

DEFAULT_STATE_DIR = Path("lab-state")
MAX_PROCESSES = 64
LONG_TABLE_ROWS = 200
"""A status table longer than this is left to ``-o json`` (a large generated fabric)."""
LISTED_FIBERS = 8
"""A cut of more fibers than this is told as a count."""
MAX_FAULT_SECONDS = 86_400.0  # a day: longer is a fault to clear by hand
MAX_FAULT_COUNT = 1_000_000


ALL_KINDS = "all"


@click.group()
def lab() -> None:
    """The emulated lab: every device as a software emulator on loopback."""


@lab.command()
@click.option("--topology", type=input_path(dir_okay=False),
              help="Topology YAML (default: two campuses 30 km apart).")
@click.option("--state-dir", type=OutputDir(),
              default=DEFAULT_STATE_DIR, show_default=True,
              help="Where the inventory, journal and device NVRAM go.")
@click.option("--processes", type=Count(1, MAX_PROCESSES),
              help="Worker processes for a topology of several OCS domains (default: the "
                   "number of cores); a topology of one domain runs in this process.")
@pass_context
def up(ctx: Context, topology: Path | None, state_dir: Path, processes: int | None) -> None:
    """Run the lab in the foreground until SIGINT or SIGTERM.

    Once every device listens, DIR/inventory.yaml is written (atomically);
    point msoctl at it with --inventory or MSOCTL_INVENTORY. A topology whose OCS
    form several domains (sets of OCS joined by spans, light never crossing between
    them) with links in more than one is spread over worker processes, so that
    every core serves; this process keeps the state directory, the inventory and
    the control endpoint.
    """
    from msoctl.lab.up import run_lab  # the emulators, only for this command

    run_lab(state_dir, topology, processes=processes)


@lab.group()
def topology() -> None:
    """Lab topology files: generate the topology of a large fabric."""


@topology.command()
@click.option("--campuses", type=Count(2, 32), required=True, help="Campuses c1..cN.")
@click.option("--ocs-per-campus", type=Count(1, 64), required=True,
              help="OCS per campus; OCS number k of every campus form plane k.")
@click.option("--ocs-size", type=Count(4, 512), default=64, show_default=True,
              help="Ports per side of each OCS (ingress 1..P, egress P+1..2P).")
@click.option("--links", type=Count(1, 20_000), required=True,
              help="Links, spread over the campus pairs, then the planes.")
@click.option("--spans-per-cable", type=Count(1, 4096), default=64, show_default=True,
              help="Spans between two campuses grouped into cables of this many.")
@click.option("--amplified-spans", type=Count(0, 40_000), default=0, show_default=True,
              help="Spans with an amplifier (spread evenly).")
@click.option("--links-per-protection", type=Count(1, 4096), default=1, show_default=True,
              help="Links sharing one protection span (1: each its own).")
@click.option("--switch-management", type=click.Choice(("none", "netconf")), default="none",
              show_default=True,
              help="none: the switches' optics only; netconf: NETCONF and SNMP servers too.")
@click.option("--span-length-km", type=Number(0.001, 150), default=30.0, show_default=True,
              help="Distance between two campuses (each cable's route 0-10% longer).")
@click.option("--idle-light", is_flag=True,
              help="Idle light sources on every OCS, one per protection span ending there, "
                   "so that the standby spans stay lit and verified (what `msoctl protect "
                   "run` needs): one more ingress port per protection span.")
@click.option("--hosts-per-campus", type=Count(0, 1024), default=0, show_default=True,
              help="GPU servers per campus, one NIC per plane (rail r on plane r+1).")
@click.option("--gpus-per-host", type=Count(1, 72), default=8, show_default=True)
@click.option("--host-vendors", default="nvidia", show_default=True, metavar="V[,V...]",
              type=TEXT, help="The servers' GPU vendors, in turn: nvidia, amd, ascend.")
@click.option("--seed", type=Count(0, 2**31), default=1, show_default=True,
              help="Varies the cables' route lengths; same arguments, same file.")
@click.option("--name", type=TEXT, help="The topology's name (default: from its shape).")
@click.option("-o", "--out", "out", type=OutputFile(),
              help="The topology file to write (default: print it).")
def generate(campuses: int, ocs_per_campus: int, ocs_size: int, links: int,
             spans_per_cable: int, amplified_spans: int, links_per_protection: int,
             switch_management: str, span_length_km: float, idle_light: bool,
             hosts_per_campus: int, gpus_per_host: int, host_vendors: str, seed: int,
             name: str | None, out: Path | None) -> None:
    """Write the topology of a fabric: OCS per campus, a switch per campus and plane,
    links between campus pairs, each on a working span with a protection span on
    another cable, spans in cables, amplifiers on some spans.

    Every link end takes OCS ports for its switch port and for each span end; a
    fabric that does not fit its OCS is refused (exit 2) saying what to change.
    Run it with: msoctl lab up --topology FILE.
    """
    import shlex
    import sys

    from msoctl.lab.topology import write_topology  # the emulators, only for this command

    command = "msoctl " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "msoctl lab topology"
    written = write_topology(
        out, command, campuses=campuses, ocs_per_campus=ocs_per_campus, ocs_size=ocs_size,
        links=links, spans_per_cable=spans_per_cable, amplified_spans=amplified_spans,
        links_per_protection=links_per_protection, switch_management=switch_management,
        span_length_km=span_length_km, idle_light=idle_light, seed=seed, name=name,
        hosts_per_campus=hosts_per_campus, gpus_per_host=gpus_per_host,
        host_vendors=tuple(v.strip() for v in host_vendors.split(",") if v.strip()))
    if out is None:
        click.echo(written, nl=False)
    else:
        click.echo(f"wrote {out}: {written}")
        click.echo(f"  run it: msoctl lab up --topology {out}")


# ---- a running lab: status and faults -----------------------------------------------------

state_dir_option = click.option(
    "--state-dir", type=input_path(file_okay=False),
    help="The running lab's state directory (default: the directory of the inventory in "
         "use, else lab-state).")


def _lab(ctx: Context, state_dir: Path | None) -> LabEndpoint:
    if state_dir is None:
        named = inventory_named(ctx.inventory_option)
        state_dir = DEFAULT_STATE_DIR if named is None else named.parent
    return find_lab(state_dir)


@lab.command()
@watch_option
@state_dir_option
@output_option
@pass_context
def status(ctx: Context, state_dir: Path | None, output: str) -> None:
    """Every device of a running lab: what it serves, its faults, the light on key ports."""
    endpoint = _lab(ctx, state_dir)
    document = call(endpoint, "GET", "/v1/status")
    if output in DOCUMENTS:
        emit(document, output)
        return
    _print_status(endpoint, document)


@lab.command()
@click.argument("kind", type=TEXT)
@click.argument("target", type=TARGET)
@click.option("--port", metavar="P", type=TEXT,
              help="What the fault hits inside TARGET: an OCS port, a switch port "
                   "(Ethernet2, with --queue), an amplifier pump, a CPO laser M/L, lane "
                   "PORT/LANE or engine.")
@click.option("--queue", type=Count(0, 7), help="A switch port's queue (with --port).")
@click.option("--seconds", type=Number(0, MAX_FAULT_SECONDS),
              help="How long or how much: added latency, reboot time, a burst, a BER ramp.")
@click.option("--count", type=Count(1, MAX_FAULT_COUNT),
              help="How many replies a transport fault spoils (default: until cleared).")
@click.option("--power-loss/--no-power-loss", default=True, show_default=True,
              help="A reboot with or without losing volatile state.")
@click.option("--clear", "clear", is_flag=True,
              help=f"Clear the fault instead (KIND '{ALL_KINDS}': every fault on TARGET).")
@state_dir_option
@output_option
@pass_context
def fault(ctx: Context, kind: str, target: str, port: str | None, queue: int | None,
          seconds: float | None, count: int | None, power_loss: bool, clear: bool,
          state_dir: Path | None, output: str) -> None:
    """Inject fault KIND on TARGET of a running lab (a device, <switch>/snmp, a cable or
    a fiber), or clear it with --clear.

    Kinds come from the devices themselves; a wrong one is refused with the list
    TARGET takes. Among them: cable_cut (every fiber of every span of a cable, at
    once), fiber_cut (a cable, a span such as span-1, or one fiber),
    pump (amplifier), port (OCS, --port), reboot (OCS, amplifier, <switch>/snmp;
    --no-power-loss), latency (--seconds), freeze, drop, reset, congestion and
    pfc_storm (switch, --port Ethernet2 --queue 3), els and rising_ber (switch).
    """
    if queue is not None and port is None:
        raise click.UsageError("--queue needs --port (the switch port)")
    if clear and (seconds is not None or count is not None or not power_loss):
        raise click.UsageError("--clear takes no --seconds, --count or --no-power-loss: it "
                               "clears KIND on TARGET (--port: only there)")
    endpoint = _lab(ctx, state_dir)
    if clear:
        request: dict[str, Any] = {"target": target}
        if kind != ALL_KINDS:
            request["kind"] = kind
        if port is not None:
            request["port"] = port if queue is None else f"{port}@{queue}"
        answer = call(endpoint, "POST", "/v1/faults/clear", request)
    else:
        request = {"kind": kind, "target": target, "power_loss": power_loss}
        if port is not None:
            request["port"] = port if queue is None else f"{port}@{queue}"
        if seconds is not None:
            request["seconds"] = seconds
        if count is not None:
            request["count"] = count
        answer = call(endpoint, "POST", "/v1/faults", request)
    if output in DOCUMENTS:
        emit(answer, output)
    elif clear:
        cleared = answer.get("cleared", [])
        what = "fault" if kind == ALL_KINDS else f"{kind} fault"
        if len(cleared) > LISTED_FIBERS and all(f.get("kind") == "fiber_cut" for f in cleared):
            say(f"cleared the cut of {counted(len(cleared), 'fiber')} on {target}")
        else:
            say(f"cleared {', '.join(_fault_text(f) for f in cleared)} on {target}"
                if cleared else f"nothing to clear: no active {what} on {target}")
    else:
        injected = answer.get("injected", {})
        fibers = injected.get("fibers")
        if fibers and len(fibers) > LISTED_FIBERS:
            spans = sorted({name.rpartition("/")[0] for name in fibers})
            say(f"injected {_fault_text(injected)} on {target} ({counted(len(fibers), 'fiber')} "
                f"of {counted(len(spans), 'span')})")
        else:
            say(f"injected {_fault_text(injected)} on {target}"
                + (f" (fibers {', '.join(fibers)})" if fibers else ""))


def _fault_text(fault: dict[str, Any]) -> str:
    text = str(fault.get("kind"))
    if fault.get("target"):
        text += f" {fault['target']}"
    if fault.get("seconds") is not None:
        text += f" {fault['seconds']:g}s"
    if fault.get("count") is not None:
        text += f" x{fault['count']}"
    if fault.get("kind") == "reboot" and fault.get("power_loss") is False:
        text += " (no power loss)"
    return text


def _faults_text(faults: list[dict[str, Any]]) -> str:
    return ", ".join(_fault_text(f) for f in faults) or "none"


def _light(dark: bool) -> str:
    return "dark" if dark else "lit"


def _print_status(endpoint: LabEndpoint, document: dict[str, Any]) -> None:
    info = document.get("lab", {})
    click.echo(wrap(f"lab {info.get('topology')!r} (pid {info.get('pid')}) in "
                    f"{endpoint.state_dir}, control {endpoint.url}"))
    workers = [p for p in info.get("processes", []) if p.get("role") == "worker"]
    if workers:
        click.echo(wrap("spread over " + ", ".join(
            f"pid {p['pid']} ({p['ocs']} OCS, {p['links']} links)" for p in workers)))
    devices = document.get("devices", [])
    rows = []
    for device in devices:
        serving = ", ".join(f"{k} {v}" for k, v in device.get("serving", {}).items())
        rows.append((device["name"], device["kind"], device.get("up"), serving,
                     _faults_text(device.get("faults", []))))
        snmp = device.get("snmp")
        if snmp:
            rows.append((snmp["target"], "agent", snmp.get("up"), "-",
                         _faults_text(snmp.get("faults", []))))
    click.echo()
    click.echo(table(("device", "kind", "up", "serving", "faults"), rows,
                     cut=("serving", "faults"), wrap=("serving", "faults")))
    amps = [d for d in devices if d["kind"] == "amp"]
    if amps:
        click.echo()
        click.echo(table(("amplifier", "span", "state", "als", "in_dbm", "out_dbm", "gain_db"),
                         [(a["name"], a.get("span"), a.get("module_state"), a.get("als_state"),
                           a.get("input_power_dbm"), a.get("output_power_dbm"),
                           a.get("gain_db")) for a in amps]))
    cables = document.get("cables", [])
    if any(len(c.get("spans", [])) > 1 or c["name"] not in c.get("spans", []) for c in cables):
        click.echo()  # named cables of spans: the fabric's units of failure
        click.echo(table(("cable", "role", "length_km", "spans", "fibers_cut", "cut"),
                         [(c["name"], c.get("role"), c.get("length_km"), len(c["spans"]),
                           f"{c.get('fibers_cut')}/{c.get('fibers')}", c.get("cut"))
                          for c in cables]))
    fibers = [f for f in document.get("fibers", []) if f.get("cable") or f.get("cut")]
    shown = fibers if len(fibers) <= LONG_TABLE_ROWS else [f for f in fibers if f.get("cut")]
    if shown:
        click.echo()
        click.echo(table(("fiber", "from", "to", "amplifier", "cut", "arriving_dbm"),
                         [(f["name"], f["from"], f["to"], f.get("amplifier"), f["cut"],
                           f.get("arriving_dbm")) for f in shown]))
    if len(shown) < len(fibers):
        click.echo(f"({len(fibers) - len(shown)} span fibers not cut; -o json lists every "
                   "fiber)")
    ports = [(d["name"], p) for d in devices if d["kind"] == "ocs" for p in d.get("ports", [])]
    if len(ports) > LONG_TABLE_ROWS:
        dark = sum(1 for _, p in ports if p.get("dark", True))
        click.echo()
        click.echo(f"{len(ports)} key OCS ports, {dark} dark (-o json lists each with its "
                   "light)")
    elif ports:
        click.echo()
        click.echo(table(
            ("ocs", "port", "direction", "peer", "state", "connected_to", "power_dbm",
             "monitor_dbm", "light"),
            [(name, p["port"], p["direction"],
              p.get("peer") if not p.get("fiber") or not p.get("cable")
              else f"{p['peer']} ({p['fiber']})",
              p.get("state"), p.get("connected_to"), p.get("power_dbm"), p.get("monitor_dbm"),
              _light(p.get("dark", True))) for name, p in ports],
            wide_only=("direction", "monitor_dbm"), cut=("peer",)))
    switch_ports = [(d["name"], p) for d in devices if d["kind"] == "switch"
                    for p in d.get("ports", []) if p.get("link") or not p.get("dark", True)]
    if len(switch_ports) > LONG_TABLE_ROWS:
        dark = sum(1 for _, p in switch_ports if p.get("dark", True))
        click.echo()
        click.echo(f"{len(switch_ports)} switch ports on links, {dark} dark (-o json lists "
                   "each)")
    elif switch_ports:
        click.echo()
        click.echo(table(("switch", "port", "link", "tx_dbm", "rx_dbm", "light"),
                         [(name, p["port"], p.get("link"), p.get("tx_power_dbm"),
                           p.get("rx_power_dbm"), _light(p.get("dark", True)))
                          for name, p in switch_ports]))


@click.command()
@click.option("--state-dir", type=OutputDir(),
              help="Keep the lab's files here (default: a temporary directory).")
def demo(state_dir: Path | None) -> None:
    """A guided walkthrough of msoctl against the emulated lab (what `make demo` runs)."""
    from msoctl.lab.demo import run_demo

    context = click.get_current_context()
    root = context.find_root().command  # the demo's steps are command lines of msoctl
    assert isinstance(root, click.Group)
    context.exit(run_demo(root, state_dir))
