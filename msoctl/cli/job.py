"""``msoctl job``: jobs of GPUs on the fabric.

``job plan --gpus N`` places a job on healthy GPUs (msoctl/jobs/plan.py), orders its
ranks along the fabric, works out the routes between its servers from the fabric as it
is, and with ``--out DIR`` writes the files its launcher and collective libraries read
(msoctl/jobs/files.py). JSON (``-o json``): ``name``, ``world_size``, ``vendors``,
``hosts`` (name, vendor, campus, ranks), ``crossings`` (how often a ring over the ranks
changes campus, vendor, host), ``ranks``, ``routes`` (NIC pairs with their hops and
bandwidth, GB/s), ``unreachable`` (pairs the fabric does not join now),
``unknown_links`` (links whose OCS could not be read), ``excluded_nics``, ``files``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from drivers.errors import ValidationError
from msoctl import impact
from msoctl.cli.context import Context, pass_context
from msoctl.cli.host import read_state
from msoctl.cli.output import (
    DOCUMENTS,
    describe_impacts,
    emit,
    jobs_touched,
    output_option,
    say,
    table,
)
from msoctl.cli.types import TEXT, Count, Number
from msoctl.hosts import GPU_VENDORS
from msoctl.jobs.circuits import CircuitPlan
from msoctl.jobs.fabric import JobFabric, Route, gigabytes_per_second
from msoctl.jobs.files import ranks_document, routes_for, traffic_class, write_all
from msoctl.jobs.lossless import DEFAULT_PRIORITY, read_lossless
from msoctl.jobs.plan import Placement, place
from msoctl.jobs.registry import Job, Jobs, job_document
from msoctl.jobs.ringcost import (
    MAX_SIZE_BYTES,
    median_random_seconds,
    ring_cost,
    span_lengths_km,
)
from msoctl.links import Link
from msoctl.words import counted

MAX_JOB_GPUS = 10_000_000


@click.group()
def job() -> None:
    """Jobs of GPUs on the fabric: place them, write their collective libraries' files."""


def fabric_now(ctx: Context) -> JobFabric:
    carried = _carried(ctx)
    return JobFabric.build(ctx.inventory.hosts.values(), ctx.inventory.links,
                           lambda link: carried[link.name], ctx.drained())


def route_document(route: Route) -> dict[str, Any]:
    return {"a": {"host_nic": route.a.name, "switch_port": route.a.switch_port,
                  "guid": route.a.guid},
            "b": {"host_nic": route.b.name, "switch_port": route.b.switch_port,
                  "guid": route.b.guid},
            "bandwidth_gbytes_per_second": gigabytes_per_second(route.bandwidth_bps),
            "links": route.links,
            "hops": [{"switch": hop.switch, "up_links": hop.up_links,
                      "down_links": hop.down_links, "top": hop.top,
                      "up_gbytes_per_second": gigabytes_per_second(hop.up_bps),
                      "down_gbytes_per_second": gigabytes_per_second(hop.down_bps)}
                     for hop in route.hops]}


@job.command("plan")
@click.option("--gpus", type=Count(1, MAX_JOB_GPUS), required=True, help="GPUs of the job.")
@click.option("--vendor", "vendors", multiple=True, type=click.Choice(GPU_VENDORS),
              help="Only GPUs of this vendor (repeat for several; default: any).")
@click.option("--name", type=TEXT,
              help="Keep the job under this name (job status, job end, and the impact of "
                   "fabric changes name it); without one the plan is only shown.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write the job's files into this directory.")
@click.option("--lossless-priority", type=Count(0, 7),
              help="The priority the switches carry RoCE on losslessly (NCCL_IB_TC/SL) "
                   "[default: the one the job's switch ports keep lossless, read from the "
                   "switches; else 3].")
@click.option("--predict-bytes", type=Count(1, MAX_SIZE_BYTES),
              help="Also predict a ring all-reduce of this many bytes over the ranks in "
                   "this order, and in random orders (msoctl/jobs/ringcost.py).")
@output_option
@pass_context
def plan_job(ctx: Context, gpus: int, vendors: tuple[str, ...], name: str | None,
             out_dir: Path | None, lossless_priority: int | None, predict_bytes: int | None,
             output: str) -> None:
    """Place a job on healthy GPUs and order its ranks along the fabric."""
    if name is not None:
        _check_name(name)
    states = read_state(ctx)
    placement = place(states, gpus, vendors=vendors)
    fabric = fabric_now(ctx)
    routes, unreachable = routes_for(placement, fabric)
    if name is not None:
        Jobs(ctx.journal).register(name, job_document(
            placement, routes, None if out_dir is None else str(out_dir.resolve())))
    lossless = None if out_dir is None else lossless_document(ctx, placement,
                                                              lossless_priority)
    files, notes = ({}, []) if out_dir is None or lossless is None else write_all(
        out_dir, placement, routes, lossless["priority"])
    unread = sorted(state.host.name for state in states if state.error is not None)
    document = {
        "name": name, "kept": name is not None,
        "world_size": len(placement.ranks), "vendors": list(placement.vendors),
        "hosts": [{"name": host.name, "vendor": host.vendor, "campus": host.campus,
                   "ranks": [r.rank for r in placement.ranks if r.host == host.name]}
                  for host in placement.hosts],
        "crossings": {key: placement.crossings(key) for key in ("campus", "vendor", "host")},
        "ranks": ranks_document(placement)["ranks"],
        "routes": [route_document(route) for route in routes],
        "unreachable": unreachable, "unknown_links": fabric.unknown_links,
        "out_of_service_links": fabric.out_of_service,
        "unreadable_hosts": unread,
        "excluded_nics": {host: list(nics) for host, nics in placement.excluded_nics.items()},
        "files": files, "file_notes": notes, "lossless": lossless,
    }
    if predict_bytes is not None:
        document["all_reduce"] = all_reduce_document(ctx, placement, fabric, predict_bytes)
    if output in DOCUMENTS:
        emit(document, output)
        return
    _say_plan(name, placement, routes, document)
    if predict_bytes is not None:
        _say_all_reduce(document["all_reduce"])


def lossless_document(ctx: Context, placement: Placement,
                      given: int | None) -> dict[str, Any]:
    """The lossless priority the job's files use (msoctl/jobs/lossless.py): ``given``, or
    the one its NICs' switch ports keep, else the default; and what was read."""
    if given is not None:
        return {"priority": given, "source": "option", "traffic_class": traffic_class(given)}
    ports = sorted({rank.nic.switch_port for rank in placement.ranks})
    reading = read_lossless(ctx.devices, ports)
    chosen, others = reading.choice()
    priority = DEFAULT_PRIORITY if chosen is None else chosen
    return {"priority": priority, "source": "default" if chosen is None else "switches",
            "traffic_class": traffic_class(priority), "ports_keeping_none": reading.none_kept,
            "ports_keeping_another": others, "switches_unread": reading.unread}


def _say_lossless(lossless: dict[str, Any]) -> None:
    priority = lossless["priority"]
    if lossless["source"] == "switches":
        say(f"lossless priority {priority} (traffic class {lossless['traffic_class']}), as "
            "the job's switch ports keep it")
    elif lossless["source"] == "default":
        say(f"warning: no switch port of the job keeps a priority lossless that could be "
            f"read: traffic class {lossless['traffic_class']} for priority {priority}, "
            "RoCE's usual (give --lossless-priority)")
    for what, label in (("ports_keeping_none", "ports keeping no priority lossless"),
                        ("ports_keeping_another", "ports keeping another lowest lossless "
                                                  "priority")):
        if lossless.get(what):
            say(f"warning: {label}: {', '.join(lossless[what])}")
    for switch, why in (lossless.get("switches_unread") or {}).items():
        say(f"warning: {switch}'s lossless priorities not read: {why}")


def _say_plan(name: str | None, placement: Placement, routes: list[Route],
              document: dict[str, Any]) -> None:
    crossings = document["crossings"]
    title = name or "job (not kept: no --name)"
    say(f"{title}: {counted(len(placement.ranks), 'GPU')} of {', '.join(placement.vendors)} "
        f"on {counted(len(placement.hosts), 'host')}; a ring over the ranks changes campus "
        f"{counted(crossings['campus'], 'time')}, vendor {counted(crossings['vendor'], 'time')}")
    rows = []
    for host in placement.hosts:
        ranks = [r for r in placement.ranks if r.host == host.name]
        nics = sorted({r.nic.name for r in ranks})
        rows.append([host.name, host.vendor, host.campus or "-",
                     f"{ranks[0].rank}..{ranks[-1].rank}", ",".join(str(r.gpu) for r in ranks),
                     ",".join(nics)])
    click.echo(table(["host", "vendor", "campus", "ranks", "gpus", "nics"], rows))
    if routes:
        slowest = min(routes, key=lambda r: r.bandwidth_bps)
        say(f"routes between its servers: {len(routes)}; the narrowest "
            f"{gigabytes_per_second(slowest.bandwidth_bps):g} GB/s ({slowest.a.switch_port} - "
            f"{slowest.b.switch_port} over {', '.join(slowest.links) or 'one switch'})")
    for what, label in (("unreachable", "not joined by the fabric now"),
                        ("out_of_service_links", "links out of service (dark or drained)"),
                        ("unknown_links", "links whose OCS could not be read"),
                        ("unreadable_hosts", "hosts whose state could not be read")):
        if document[what]:
            say(f"{label}: {', '.join(document[what])}")
    for host, nics in document["excluded_nics"].items():
        say(f"{host}: left out NICs {', '.join(nics)} (down, degraded or unknown)")
    if document["lossless"] is not None:
        _say_lossless(document["lossless"])
    for note in document["file_notes"]:
        say(f"warning: {note}")
    for what, path in document["files"].items():
        click.echo(f"{what}: {path}")


def _check_name(name: str) -> None:
    if not name or len(name) > 64 or not all(c.isalnum() or c in "-_." for c in name):
        raise ValidationError(f"job name {name!r}: 1..64 letters, digits, '-', '_' or '.'")


@job.command("list")
@output_option
@pass_context
def list_jobs(ctx: Context, output: str) -> None:
    """The jobs planned under a name and not ended."""
    jobs = Jobs(ctx.journal).all()
    if output in DOCUMENTS:
        emit({"jobs": [{"name": j.name, "since": j.since, "user": j.user, "op": j.op,
                        **j.document} for j in jobs.values()]}, output)
        return
    if not jobs:
        say("no jobs (msoctl job plan --name J keeps one)")
        return
    click.echo(table(["job", "gpus", "vendors", "hosts", "links", "since", "by"],
                     [[j.name, j.document["world_size"], ",".join(j.document["vendors"]),
                       len(j.hosts), ",".join(j.links) or "-", j.since, j.user]
                      for j in jobs.values()], cut=("links",)))


@job.command("end")
@click.argument("name", type=TEXT)
@pass_context
def end_job(ctx: Context, name: str) -> None:
    """The job has ended: its circuits are undone (each drained, taken down and its drain
    lifted, unless another kept job crosses it), and it is forgotten (journaled). Should
    undoing fail, the job is kept: run it again."""
    jobs = Jobs(ctx.journal)
    kept = jobs.get(name)
    if kept.circuits:
        _undo_circuits(ctx, jobs, kept)
    ended = jobs.end(name)
    say(f"ended {ended.name} ({counted(ended.document['world_size'], 'GPU')}, planned by "
        f"{ended.user} at {ended.since})")


@job.command("circuits")
@click.argument("name", type=TEXT)
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE",
              help="Where to write the fabric intent that lights them "
                   "[default: job-NAME-circuits.yaml here].")
@click.option("--dry-run", is_flag=True, help="Show the plan; light nothing.")
@output_option
@pass_context
def circuits(ctx: Context, name: str, out_file: Path | None, dry_run: bool,
             output: str) -> None:
    """Direct optical paths for a kept job's ring: for each pair of switches its ring
    joins, the dark links between them lit (one per NIC pair the ring runs between them),
    through the fabric's safe apply (impact, journal, light verified end to end), and
    undone when the job ends.

    Links in service count as they are, and a drained link or one whose OCS cannot be
    read is left alone. The fabric intent that lights them is written to --out and
    applied as ``msoctl fabric apply`` applies it."""
    from msoctl.fabric.apply import apply
    from msoctl.fabric.intent import load_intent
    from msoctl.jobs.circuits import light_intent, plan_circuits
    from msoctl.outfile import write_output

    jobs = Jobs(ctx.journal)
    kept = jobs.get(name)
    plan = plan_circuits(kept, ctx.inventory.hosts, ctx.inventory.links, _carried(ctx),
                         ctx.drained())
    if output in DOCUMENTS and (dry_run or not plan.light):
        emit({**plan.as_dict(), "dry_run": dry_run, "applied": None}, output)
        return
    if output not in DOCUMENTS:
        _say_circuits(plan)
    if not plan.light:
        say("nothing to light: " + (
            "the job's ring stays on one switch" if not plan.pairs
            else "each ring NIC pair between its switches has a link in service"
            if all(pair.short == 0 for pair in plan.pairs)
            else "no dark link joins its switches where it is short"))
        return
    if dry_run:
        say("dry run: nothing was lit")
        return
    path = (out_file or Path(f"job-{name}-circuits.yaml")).resolve()
    write_output(path, light_intent(plan.light))
    jobs.add_circuits(name, plan.light, str(path))
    report = apply(ctx.devices, ctx.journal, load_intent(path, ctx.inventory),
                   say=(lambda line: None) if output in DOCUMENTS else say)
    rewritten = _rewrite_route_file(ctx, jobs.get(name))
    if output in DOCUMENTS:
        emit({**plan.as_dict(), "dry_run": False, "applied": report.as_dict(),
              "jobs": jobs_touched(report.plan.impacts),
              "route_file": None if rewritten is None else str(rewritten)}, output)
        return
    click.echo(describe_impacts(report.plan.impacts))
    say(f"lit {', '.join(plan.light)} for {name} (fabric apply {report.op} of {path}); "
        f"msoctl job end {name} takes them down")
    if rewritten is not None:
        say(f"rewrote {rewritten}: its routes over the fabric with the circuits")


def _rewrite_route_file(ctx: Context, kept: Job) -> Path | None:
    """The job's FlagCX route file, where ``job plan --out`` wrote it, written again over
    the fabric as it is now (None: it wrote none)."""
    from msoctl.jobs.circuits import job_ring
    from msoctl.jobs.files import route_xml
    from msoctl.outfile import write_output

    directory = kept.document.get("files_dir")
    if not directory:
        return None
    ctx.forget_readings()  # the OCS maps as the circuits left them
    fabric = fabric_now(ctx)
    pairs, _ = job_ring(kept, ctx.inventory.hosts)
    routes = [route for a, b in pairs if (route := fabric.route(a, b)) is not None]
    path = Path(directory) / "flagcx-route.xml"
    write_output(path, route_xml(routes))
    return path


def _carried(ctx: Context) -> dict[str, str | None]:
    """Each inventory link's span now: working, protection, down, None (OCS unread)."""
    found: dict[str, str | None] = {}
    for link_name, link in ctx.inventory.links.items():
        if any(ctx.read_map(ocs) is None for ocs in link.ocs_names):
            found[link_name] = None
        else:
            role, _ = impact.carried(link, ctx.read_map)
            found[link_name] = role or "down"
    return found


def _say_circuits(plan: CircuitPlan) -> None:
    if plan.missing_hosts:
        say(f"servers no longer in the inventory: {', '.join(plan.missing_hosts)}")
    if not plan.pairs:
        return
    click.echo(table(["switches", "ring pairs", "in service", "light", "left alone", "short"],
                     [[" - ".join(pair.switches), pair.edges,
                       ",".join(pair.in_service) or "-", ",".join(pair.light) or "-",
                       ",".join([*(f"{n} (drained)" for n in pair.drained),
                                 *(f"{n} (unknown)" for n in pair.unknown)]) or "-",
                       pair.short or "-"] for pair in plan.pairs], cut=("left alone",)))
    for pair in plan.pairs:
        if pair.short:
            say(f"{' - '.join(pair.switches)}: {counted(pair.edges, 'ring NIC pair')} over "
                f"{counted(pair.edges - pair.short, 'link')}: {pair.short} share")


def _undo_circuits(ctx: Context, jobs: Jobs, kept: Job) -> None:
    """Take down the circuits lit for ``kept`` that no other kept job crosses."""
    from msoctl.fabric.apply import apply
    from msoctl.fabric.intent import load_intent
    from msoctl.jobs.circuits import undo_intent
    from msoctl.outfile import write_output

    others = {link for job in jobs.all().values() if job.name != kept.name
              for link in job.links}
    carried = _carried(ctx)
    kept_lit = [n for n in kept.circuits if n in others]
    if kept_lit:
        say(f"kept lit: {', '.join(kept_lit)} (other jobs cross them)")
    lit = [n for n in kept.circuits if n not in others
           and carried.get(n) in ("working", "protection")]
    if not lit:
        return
    states = ctx.link_states
    drained_here = [n for n in lit
                    if states.drain(n, reason=f"job {kept.name} ended: its circuit")[1]]
    light_file = Path(kept.document.get("circuits_file") or f"job-{kept.name}-circuits.yaml")
    path = light_file.with_name(f"{light_file.stem}-end.yaml").resolve()
    write_output(path, undo_intent(lit))
    report = apply(ctx.devices, ctx.journal, load_intent(path, ctx.inventory))
    for link_name in drained_here:
        states.undrain(link_name)
    say(f"took down {', '.join(lit)}, {kept.name}'s circuits (fabric apply {report.op})")


@job.command("status")
@click.argument("name", type=TEXT)
@click.option("--interval", type=Number(0.0, 60.0), default=1.0, show_default=True,
              metavar="SECONDS",
              help="Read the switch ports' counters this far apart, for their rates "
                   "(0: no counters read).")
@output_option
@pass_context
def job_status(ctx: Context, name: str, interval: float, output: str) -> None:
    """Every part of the fabric a job's traffic crosses, and its state now: its GPUs and
    NICs, the links between its servers (on which span, whether their light arrives,
    drained or in service), and its switch ports (ECN marks, PFC pauses and drops per
    second; the optics against their thresholds)."""
    from msoctl.jobs.status import job_state, state_document

    state = job_state(ctx, Jobs(ctx.journal).get(name), interval=interval)
    if output in DOCUMENTS:
        emit(state_document(state), output)
        return
    say(f"{state.job.name}: {state.verdict}" + (f" ({'; '.join(state.problems)})"
                                              if state.problems else ""))
    click.echo(table(["host", "gpus ok", "nics up", "problems"],
                     [[h.name, f"{h.healthy}/{h.gpus}", f"{h.nics_up}/{h.nics}",
                       "; ".join(h.problems) or "none"] for h in state.hosts],
                     cut=("problems",), wrap=("problems",)))
    if state.links:
        click.echo(table(["link", "carried on", "span", "light", "amplifiers", "service"],
                         [[link.name, link.role or "unknown", link.span or "-",
                           link.light if link.lost_at is None
                           else f"lost at {link.lost_at}",
                           ",".join(link.amplifiers) or "-",
                           "drained" if link.drained else "in service"]
                          for link in state.links], cut=("light",)))
    if state.ports:
        click.echo(table(["switch", "port", "faces", "ecn/s", "pfc/s", "drops/s", "optics",
                          "problems"],
                         [[port.switch, port.port, port.faces, _per_second(port.ecn_per_second),
                           _per_second(port.pfc_per_second),
                           _per_second(port.drops_per_second), port.optics or "-",
                           "; ".join(filter(None, (*port.problems, port.error))) or "none"]
                          for port in state.ports], cut=("problems",), wrap=("problems",)))


def _per_second(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


# ---- job plan --predict-bytes: a ring all-reduce's predicted time (msoctl/jobs/ringcost.py)

RANDOM_ORDERS = 32


def all_reduce_document(ctx: Context, placement: Placement, fabric: JobFabric,
                        size_bytes: int) -> dict[str, Any]:
    """The ring model's time for an all-reduce of ``size_bytes`` over the planned order and
    the median of random orders (seeded: the same plan gives the same figures); the
    times are None, with the reason, where the fabric does not join the ranks now."""

    def carried(link: Link) -> str | None:
        return impact.carried(link, ctx.read_map)[0]

    span_km = span_lengths_km(ctx.inventory.links, carried)
    document: dict[str, Any] = {"size_bytes": size_bytes, "random_orders": RANDOM_ORDERS}
    try:
        cost = ring_cost(placement.ranks, fabric, size_bytes, span_km=span_km)
        random_seconds = median_random_seconds(placement.ranks, fabric, size_bytes,
                                               span_km=span_km, count=RANDOM_ORDERS)
    except ValidationError as error:
        return {**document, "planned_seconds": None, "random_median_seconds": None,
                "bandwidth_gbytes_per_second": None, "slowest_edge_latency_seconds": None,
                "narrowest": None, "not_predicted": str(error)}
    narrowest = cost.narrowest
    return {**document, "planned_seconds": cost.seconds,
            "random_median_seconds": random_seconds,
            "bandwidth_gbytes_per_second": None if narrowest is None
            else gigabytes_per_second(cost.bandwidth_bps),
            "slowest_edge_latency_seconds": cost.step_latency_seconds,
            "narrowest": None if narrowest is None else narrowest.bottleneck,
            "not_predicted": None}


def _say_all_reduce(predicted: dict[str, Any]) -> None:
    size = f"{predicted['size_bytes']:,} bytes"
    if predicted["planned_seconds"] is None:
        say(f"all-reduce of {size}: not predicted ({predicted['not_predicted']})")
        return
    planned, shuffled = predicted["planned_seconds"], predicted["random_median_seconds"]
    bound = "" if predicted["narrowest"] is None else (
        f"; narrowest {predicted['bandwidth_gbytes_per_second']:g} GB/s, "
        f"{predicted['narrowest']}; slowest edge "
        f"{predicted['slowest_edge_latency_seconds'] * 1e6:.0f} µs")
    say(f"ring all-reduce of {size}: {planned * 1e3:.3g} ms in this order, "
        f"{shuffled * 1e3:.3g} ms in a random one (median of {predicted['random_orders']})"
        f"{bound}")
