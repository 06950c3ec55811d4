"""``msoctl switch``: the deep-buffer switches' long-haul congestion control."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from drivers.errors import DeviceError, SafetyInterlock, Unsupported, ValidationError
from drivers.switch.intent import Intent, from_legacy, to_dict
from drivers.switch.models.msoctl import to_tree
from drivers.switch.netconf import NetconfTarget, SwitchSession
from drivers.switch.session import open_session
from drivers.switch.tree import Change
from msoctl import impact
from msoctl.cli.changes import change_lines
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import (
    DOCUMENTS,
    cell,
    describe_impacts,
    echo_or_write,
    emit,
    jobs_touched,
    output_format,
    output_option,
    say,
    say_comment,
    table,
    watch_option,
)
from msoctl.cli.types import SWITCH, TEXT, Count, Number, OutputFile, input_path
from msoctl.impact import Impact
from msoctl.ops.headroom import (
    MAX_BUFFER_BYTES,
    MAX_PAUSE_QUANTA,
    LinkParameters,
    compute,
    parse_distance,
    parse_speed,
)
from msoctl.ops.switch import (
    CANCEL,
    CONFIRM,
    DEFAULT_PARALLEL,
    Fleet,
    Guard,
    Outcome,
    deletions,
    load_want,
)
from msoctl.ops.switch_plan import PortLink, derive, parse_size
from msoctl.words import counted


class OperationFailed(DeviceError):
    """Some switches of a fleet change failed; the table above says which and why."""


@click.group()
def switch() -> None:
    """Deep-buffer switches: PFC headroom, ECN, switch-generated congestion feedback."""


@switch.command()
@click.option("--distance", required=True, metavar="LENGTH", type=TEXT,
              help="Cable length with its unit: 30km, 500m.")
@click.option("--speed", required=True, metavar="SPEED", type=TEXT,
              help="Port speed: 100G .. 800G.")
@click.option("--mtu", type=Count(576, 16384), default=9216, show_default=True,
              help="Port and lossless MTU, bytes.")
@click.option("--cell-size", type=Count(16, 4096), default=144, show_default=True,
              help="The chip's buffer cell, bytes.")
@click.option("--small-packets", type=Number(0, 100), default=45.0,
              show_default=True, help="Share of lossless traffic in minimum-size packets, %.")
@click.option("--pipeline-latency", type=Count(0, MAX_BUFFER_BYTES), default=20480,
              show_default=True,
              help="Bytes in the pipeline after XON (the xon threshold).")
@click.option("--phy-delay", type=Count(0, MAX_BUFFER_BYTES), default=1024, show_default=True,
              help="Bytes in the MAC/PHY after XOFF is generated.")
@click.option("--peer-response-quanta", type=Number(0, MAX_PAUSE_QUANTA), default=None,
              help="Pause quanta the peer takes to stop (default 905 at 400G, same time "
                   "at other speeds).")
@output_option
def headroom(distance: str, speed: str, mtu: int, cell_size: int, small_packets: float,
             pipeline_latency: int, phy_delay: int, peer_response_quanta: float | None,
             output: str) -> None:
    """PFC headroom, RTT, bandwidth-delay product and ECN thresholds for one link."""
    result = compute(LinkParameters(
        distance_m=parse_distance(distance), speed_bps=parse_speed(speed),
        port_mtu_bytes=mtu, lossless_mtu_bytes=mtu, cell_bytes=cell_size,
        small_packet_percent=small_packets, phy_delay_bytes=phy_delay,
        pipeline_latency_bytes=pipeline_latency, peer_response_quanta=peer_response_quanta,
    ))
    if output in DOCUMENTS:
        emit(result.as_dict(), output)
        return
    mb = 1e6
    rows = [
        ["round-trip time", f"{result.rtt_seconds * 1e6:.1f} us", "2 x distance / 1.98e8 m/s"],
        ["bandwidth-delay product", f"{result.bdp_bytes / mb:.3f} MB", "speed x RTT / 8"],
        ["bytes on cable", f"{result.bytes_on_cable:,} B", "2 x L x speed / v / 8"],
        ["peer response", f"{result.peer_response_bytes:,} B", "pause quanta x 512 / 8"],
        ["port MTU", f"{mtu:,} B", ""],
        ["PHY delay", f"{phy_delay:,} B", ""],
        ["cell occupancy", f"{result.cell_occupancy:.4f}",
         f"{cell_size} B cells, {small_packets:g}% small packets"],
        ["xoff (headroom)", f"{result.xoff_bytes:,} B ({result.xoff_bytes / mb:.2f} MB)",
         "lossless MTU + (port MTU + cable + peer + PHY) x occupancy"],
        ["xon", f"{result.xon_bytes:,} B", "pipeline latency"],
        ["ECN min threshold", f"{result.ecn_min_threshold_bytes:,} B", "0.25 x BDP"],
        ["ECN max threshold", f"{result.ecn_max_threshold_bytes:,} B", "2 x BDP"],
        ["ECN max marking", f"{result.ecn_max_probability_percent}%", ""],
    ]
    say(f"link: {distance} at {speed}, per lossless priority per port")
    click.echo(table(["term", "value", "how"], rows, wide_only=("how",)))


@switch.command()
@click.option("--port", "ports", multiple=True, required=True, metavar="NAME=LENGTH@SPEED",
              type=TEXT, help="A port and its link, e.g. Ethernet1=30km@400G (repeat per port).")
@click.option("--lossless", default="3", show_default=True, metavar="P[,P...]", type=TEXT,
              help="Lossless (PFC) priorities.")
@click.option("--lossless-pool", metavar="SIZE", type=TEXT,
              help="The chip's lossless buffer pool (e.g. 64MB): a plan that needs more "
                   "headroom is refused.")
@click.option("--device", metavar="SWITCH", type=SWITCH,
              help="Read the lossless pool from this switch's chip (over NETCONF).")
@click.option("--fast-cnp/--no-fast-cnp", default=True, show_default=True,
              help="Switch-generated CNPs on the lossless queues.")
@click.option("--cnp-priority", type=Count(0, 7), default=6, show_default=True)
@click.option("--cnp-dscp", type=Count(0, 63), default=48, show_default=True)
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml",
              show_default=True, help="The wanted configuration as YAML (a WANT file) or JSON.")
@click.option("--file", "out_file", type=OutputFile(),
              metavar="WANT.yaml", help="Write the WANT file here (the summary still prints).")
@click.pass_obj
def plan(ctx: Context, ports: tuple[str, ...], lossless: str, lossless_pool: str | None,
         device: str | None, fast_cnp: bool, cnp_priority: int, cnp_dscp: int,
         output: str, out_file: Path | None) -> None:
    """Derive the wanted congestion-control configuration from the switch's links."""
    try:
        priorities = tuple(int(p) for p in lossless.split(",") if p.strip())
    except ValueError:
        raise ValidationError(f"--lossless {lossless!r}: priorities like 3 or 3,4") from None
    links = [PortLink.parse(p) for p in ports]
    pool = None if lossless_pool is None else parse_size(lossless_pool)
    if device is not None:
        if pool is not None:
            raise ValidationError("give --lossless-pool or --device, not both")
        pool = _chip_lossless_pool(ctx, device)
    result = derive(links, lossless_priorities=priorities, lossless_pool_bytes=pool,
                    fast_cnp=fast_cnp, cnp_priority=cnp_priority, cnp_dscp=cnp_dscp)
    want = to_dict(from_legacy(result.config))
    if output == "json":  # -o yaml is the WANT file itself, below
        emit({"config": want,
              "headroom_needed_bytes": result.headroom_needed_bytes,
              "lossless_pool_bytes": result.lossless_pool_bytes,
              "ports": {name: h.as_dict() for name, h in result.headroom.items()}})
        return
    of_pool = ("" if result.lossless_pool_bytes is None
               else f" of the {result.lossless_pool_bytes / 1e6:.2f} MB lossless pool")
    say_comment(f"msoctl switch plan: {counted(len(result.headroom), 'port')}, headroom "
                f"{result.headroom_needed_bytes / 1e6:.2f} MB{of_pool}")
    for name, h in result.headroom.items():
        say_comment(f"{name}: {h.distance_m / 1000:g} km, RTT {h.rtt_seconds * 1e6:.0f} us, "
                    f"BDP {h.bdp_bytes / 1e6:.2f} MB, xoff {h.xoff_bytes / 1e6:.2f} MB")
    _write_want(want, out_file)


def _write_want(want: dict[str, Any], out_file: Path | None) -> None:
    echo_or_write(yaml.safe_dump(want, sort_keys=False), out_file)


@switch.group("want")
def want_group() -> None:
    """WANT files: the congestion-control intent a switch is given."""


@want_group.command("convert")
@click.argument("want_file", type=input_path(dir_okay=False), metavar="WANT.yaml")
@click.option("--file", "out_file", type=OutputFile(), metavar="NEW.yaml",
              help="Write the converted file here (else to standard output).")
def want_convert(want_file: Path, out_file: Path | None) -> None:
    """Rewrite a first-round WANT file (a switch: tree of the msoctl module) in the
    operator's words (congestion_control:), which every switch model takes."""
    found = load_want(want_file)
    _write_want(to_dict(found if isinstance(found, Intent) else from_legacy(found)), out_file)


def _netconf_session(ctx: Context, device: str, what: str) -> SwitchSession:
    """A NETCONF session to ``device``, for what only the msoctl module reports."""
    target = ctx.devices.switch_target(device)
    if not isinstance(target, NetconfTarget):
        raise Unsupported(f"{what} is read from the msoctl module over NETCONF; {device} "
                          "is reached over gNMI", device=device)
    return SwitchSession(target)


def _chip_lossless_pool(ctx: Context, device: str) -> int:
    with _netconf_session(ctx, device, "the chip's lossless pool (give --lossless-pool)") \
            as session:
        buffer = (session.get_state().get("switch") or {}).get("buffer") or {}
    pool = buffer.get("lossless-pool-bytes")
    if not isinstance(pool, int):
        raise ValidationError(f"{device} does not report its lossless pool "
                              "(switch/buffer/lossless-pool-bytes); give --lossless-pool")
    return pool


# ---- congestion control on a switch, over NETCONF -------------------------------------


@switch.group()
def cc() -> None:
    """Congestion-control configuration of switches: show, plan, apply, confirm, cancel."""


def _yes(value: Any) -> str:
    return "-" if value is None else ("on" if value else "off")


def config_document(name: str, source: str, tree: Mapping[str, Any],
                    pending: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A configuration tree in the JSON contract: snake_case, units in the names."""
    top = tree.get("switch") or {}
    fast = top.get("fast-cnp") or {}
    ports = []
    for port in (top.get("ports") or {}).get("port", []):
        pfc = port.get("pfc") or {}
        watchdog = pfc.get("watchdog") or {}
        queues = []
        for queue in (port.get("queues") or {}).get("queue", []):
            wred = queue.get("wred") or {}
            queues.append({
                "queue_id": queue.get("queue-id"),
                "ecn_enabled": wred.get("enable-ecn"),
                "ecn_min_threshold_bytes": wred.get("min-threshold"),
                "ecn_max_threshold_bytes": wred.get("max-threshold"),
                "ecn_max_probability_percent": wred.get("max-drop-probability-percent"),
                "fast_cnp_enabled": (queue.get("fast-cnp") or {}).get("enabled"),
            })
        ports.append({
            "name": port.get("name"),
            "speed": port.get("speed"),
            "cable_length_meters": port.get("cable-length-meters"),
            "lossless_priorities": sorted(port.get("lossless-priorities") or []),
            "pfc_xoff_bytes": pfc.get("xoff-bytes"),
            "pfc_xon_bytes": pfc.get("xon-bytes"),
            "pfc_watchdog_enabled": watchdog.get("enabled"),
            "pfc_watchdog_detection_ms": watchdog.get("detection-time-ms"),
            "pfc_watchdog_restoration_ms": watchdog.get("restoration-time-ms"),
            "pfc_watchdog_action": watchdog.get("action"),
            "queues": queues,
        })
    return {
        "device": name,
        "source": source,
        "fast_cnp": {
            "enabled": fast.get("enabled"),
            "cnp_dscp": fast.get("cnp-dscp"),
            "cnp_priority": fast.get("cnp-priority"),
            "min_interval_microseconds": fast.get("min-interval-microseconds"),
            "flow_table_size": fast.get("flow-table-size"),
            "flow_aging_seconds": fast.get("flow-aging-seconds"),
        },
        "ports": ports,
        "pending": None if pending is None else {
            "persist_id": pending.get("persist_id"),
            "confirm_deadline": pending.get("confirm_deadline"),
        },
    }


@cc.command("show")
@click.argument("device", type=SWITCH)
@click.option("--port", metavar="NAME", help="Only this port.")
@click.option("--source", type=click.Choice(["running", "candidate", "startup"]),
              default="running", show_default=True, help="The datastore to read.")
@output_option
@pass_context
def cc_show(ctx: Context, device: str, port: str | None, source: str, output: str) -> None:
    """The congestion-control configuration of a switch."""
    with open_session(ctx.devices.switch_target(device)) as session:
        if type(session) is SwitchSession:  # the msoctl module, as it is
            tree = session.get_config(source)
        elif isinstance(session, SwitchSession):  # another model over NETCONF
            tree = to_tree(session.read_intent(source))
        elif source != "running":
            raise ValidationError(f"{device} is reached over gNMI, which has one datastore: "
                                  "--source running")
        else:
            tree = to_tree(session.read_intent())
    pending = Fleet(ctx.journal, ctx.devices.switch_target).pending(device)
    document = config_document(device, source, tree, pending)
    if port is not None:
        document["ports"] = [p for p in document["ports"] if p["name"] == port]
        if not document["ports"]:
            raise ValidationError(f"{device} has no configuration for port {port!r} in "
                                  f"{source}")
    if output in DOCUMENTS:
        emit(document, output)
        return
    fast = document["fast_cnp"]
    say(f"{device} {source}: fast CNP {_yes(fast['enabled'])}, CNP DSCP "
        f"{cell(fast['cnp_dscp'])}, priority {cell(fast['cnp_priority'])}, "
        f"min interval {cell(fast['min_interval_microseconds'])} us")
    if pending is not None:
        say(f"pending: confirmed commit {pending.get('persist_id')} until "
            f"{pending.get('confirm_deadline')} (msoctl switch cc confirm|cancel "
            f"{device})")
    click.echo(table(
        ["port", "speed", "cable m", "lossless", "xoff bytes", "xon bytes", "watchdog"],
        [[p["name"], p["speed"], p["cable_length_meters"],
          ",".join(map(str, p["lossless_priorities"])) or "-", p["pfc_xoff_bytes"],
          p["pfc_xon_bytes"], _yes(p["pfc_watchdog_enabled"])] for p in document["ports"]]))
    queues = [(p["name"], q) for p in document["ports"] for q in p["queues"]]
    if queues:
        click.echo()
        click.echo(table(
            ["port", "queue", "ecn", "min bytes", "max bytes", "max %", "fast cnp"],
            [[name, q["queue_id"], _yes(q["ecn_enabled"]), q["ecn_min_threshold_bytes"],
              q["ecn_max_threshold_bytes"], q["ecn_max_probability_percent"],
              _yes(q["fast_cnp_enabled"])] for name, q in queues]))


def _echo_changes(changes: list[Change], *, indent: int = 2) -> None:
    for line in change_lines(changes, indent=indent, wide=output_format() == "wide"):
        click.echo(line)


merge_option = click.option(
    "--merge", "merge_only", is_flag=True,
    help="Change only the leaves the file names; delete nothing it leaves out.")


@cc.command("plan")
@click.argument("device", type=SWITCH)
@click.option("--file", "want_file", required=True, type=input_path(dir_okay=False),
              metavar="WANT.yaml", help="The wanted configuration (msoctl switch plan writes one).")
@merge_option
@output_option
@pass_context
def cc_plan(ctx: Context, device: str, want_file: Path, merge_only: bool, output: str) -> None:
    """What applying WANT.yaml would change on a switch (validated there; changes nothing).

    A port or the fast-cnp container named in the file is replaced whole: leaves of it
    the file does not name are deleted, listed apart. --merge changes only what it names.
    """
    want = load_want(want_file)
    with open_session(ctx.devices.switch_target(device)) as session:
        plan = session.plan(want, merge_only=merge_only)
    removed = deletions(plan.changes)
    kept = [c for c in plan.changes if c.kind != "remove"]
    impacts = impact.worst_first(impact.switch_config(ctx.inventory, device, plan.changes,
                                                      ctx.drained(), read_map=ctx.read_map))
    if output in DOCUMENTS:
        emit({"device": device, "method": plan.method, "merge": merge_only,
              "changes": [c.as_dict() for c in kept],
              "deletions": [c.as_dict() for c in removed],
              "impact": [i.as_dict() for i in impacts], "jobs": jobs_touched(impacts)},
             output)
        return
    how = ("the switch's own diff of running and candidate" if plan.method == "candidate"
           else "computed here: the switch has no candidate")
    if not plan.changes:
        say(f"{device}: no change: running already holds {want_file}")
        return
    say(f"{device}: {counted(len(kept), 'change')}, {counted(len(removed), 'deletion')} ({how})")
    _echo_changes(kept)
    if removed:
        say("deletions (configuration on the switch that the file does not name; "
            "apply needs --allow-delete, or use --merge):")
        _echo_changes(removed)
    click.echo(describe_impacts(impacts))


@cc.command("apply")
@click.argument("devices", nargs=-1, type=SWITCH)
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Every switch with this label (repeat to narrow).")
@click.option("--file", "want_file", required=True, type=input_path(dir_okay=False),
              metavar="WANT.yaml", help="The wanted configuration.")
@click.option("--confirm-timeout", type=Count(1, 86_400), default=120,
              show_default=True, metavar="SECONDS",
              help="The switch rolls the change back unless confirmed within this.")
@click.option("--no-confirm", is_flag=True,
              help="Leave the change pending: msoctl switch cc confirm|cancel settles it.")
@click.option("--all-or-nothing", is_flag=True,
              help="Confirm only when every switch verified; any failure cancels them all.")
@click.option("--parallel", type=Count(1, 256), default=DEFAULT_PARALLEL,
              show_default=True, help="Switches changed at the same time.")
@merge_option
@click.option("--allow-delete", is_flag=True,
              help="Let the change delete configuration the file does not name (journaled).")
@click.option("--force", is_flag=True,
              help="Apply although it takes an in-service link down (journaled).")
@output_option
@pass_context
def cc_apply(ctx: Context, devices: tuple[str, ...], labels: tuple[str, ...], want_file: Path,
             confirm_timeout: int, no_confirm: bool, all_or_nothing: bool, parallel: int,
             merge_only: bool, allow_delete: bool, force: bool, output: str) -> None:
    """Apply WANT.yaml: confirmed commit, read back in a new session, then confirm.

    Refused on a switch (exit 3, nothing committed there) when it would delete
    configuration the file does not name (see --allow-delete, --merge) or take an
    in-service link down (drain it first, or --force).
    """
    if merge_only and allow_delete:
        raise click.UsageError("--merge and --allow-delete exclude each other: --merge "
                               "deletes nothing, --allow-delete lets a replace delete")
    names = list(devices)
    if labels:
        labelled = ctx.devices_labelled("switch", labels)
        if not labelled:
            raise ValidationError(f"no switch in the inventory has {' '.join(labels)}")
        names += [name for name in labelled if name not in names]
    if not names:
        raise ValidationError("name the switches, or select them with --label KEY=VALUE")
    for name in names:
        ctx.device(name, "switch")
    want = load_want(want_file)
    drained = ctx.drained()
    maps_lock = threading.Lock()

    def read_map(name: str) -> dict[int, int] | None:  # the fleet runs in threads
        with maps_lock:
            return ctx.read_map(name)

    def impact_of(name: str, changes: list[Change]) -> list[Impact]:
        return impact.worst_first(impact.switch_config(ctx.inventory, name, changes, drained,
                                                       read_map=read_map))

    fleet = Fleet(ctx.journal, ctx.devices.switch_target,
                  guard=Guard(merge_only=merge_only, allow_delete=allow_delete, force=force,
                              impact_of=impact_of))
    outcomes = fleet.apply(names, want, confirm_timeout_seconds=confirm_timeout,
                           confirm=not no_confirm, all_or_nothing=all_or_nothing,
                           parallel=parallel, source=str(want_file.resolve()))
    failed = [o for o in outcomes if o.status == "failed"]
    refused = [o for o in outcomes if o.status == "refused"]
    if output in DOCUMENTS:
        emit({"file": str(want_file), "all_or_nothing": all_or_nothing,
              "merge": merge_only, "devices": [o.as_dict() for o in outcomes],
              "jobs": jobs_touched([i for o in outcomes for i in o.impacts])}, output)
    elif len(outcomes) > 1 or not (failed or refused):  # one switch: the error line says it
        _print_outcomes(outcomes, verbose=ctx.verbose or len(outcomes) == 1,
                        timeout=confirm_timeout)
    if refused:
        more = f" ({len(refused)} of {len(outcomes)} switches refused)" \
            if len(outcomes) > 1 else ""
        raise SafetyInterlock(f"{refused[0].device}: {refused[0].error}{more}")
    if failed:
        first = failed[0]
        more = f" ({len(failed)} of {len(outcomes)} switches failed)" if len(outcomes) > 1 \
            else ""
        raise OperationFailed(f"{first.device}: {first.error}{more}")
    if any(o.status == "cancelled" for o in outcomes):
        raise OperationFailed("every pending change was cancelled")


def _print_outcomes(outcomes: list[Outcome], *, verbose: bool, timeout: int) -> None:
    notes = {
        "ok": "confirmed",
        "unchanged": "running already held it",
        "pending": f"pending: confirm within {timeout} s or the switch rolls it back",
        "cancelled": "cancelled: running is what it was",
    }
    rows = []
    for o in outcomes:
        detail = o.error if o.status in ("failed", "refused") else notes.get(o.status, "")
        rows.append([o.device, o.status, len(o.changes) - len(deletions(o.changes)),
                     len(deletions(o.changes)), f"{o.seconds:.2f}", detail])
    if verbose:
        for o in outcomes:
            if o.changes:
                click.echo(f"{o.device}:")
                _echo_changes(o.changes)
    click.echo(table(["switch", "status", "changes", "deletions", "seconds", "detail"], rows,
                     cut=("detail",), wrap=("detail",)))
    touched = [i for o in outcomes for i in o.impacts]
    if touched:
        click.echo(describe_impacts(touched))


def _settle_command(ctx: Context, device: str, persist_id: str | None, action: str) -> None:
    fleet = Fleet(ctx.journal, ctx.devices.switch_target)
    token = fleet.settle(device, action, persist_id)
    what = "confirmed: the change stays" if action == CONFIRM else \
        "cancelled: running is back to what it was"
    say(f"{device}: {token} {what}")


@cc.command("confirm")
@click.argument("device", type=SWITCH)
@click.option("--persist-id", metavar="TOKEN",
              help="The pending commit's token (default: the journal's pending change).")
@pass_context
def cc_confirm(ctx: Context, device: str, persist_id: str | None) -> None:
    """Confirm the pending change on a switch."""
    _settle_command(ctx, device, persist_id, CONFIRM)


@cc.command("cancel")
@click.argument("device", type=SWITCH)
@click.option("--persist-id", metavar="TOKEN",
              help="The pending commit's token (default: the journal's pending change).")
@pass_context
def cc_cancel(ctx: Context, device: str, persist_id: str | None) -> None:
    """Cancel the pending change on a switch: running goes back to what it was."""
    _settle_command(ctx, device, persist_id, CANCEL)


COUNTERS = (
    ("ecn-marked-packets", "ecn_marked_packets", "ecn marked"),
    ("switch-generated-cnps", "switch_generated_cnps", "switch cnps"),
    ("pfc-pause-frames-sent", "pfc_pause_frames_sent", "pfc sent"),
    ("pfc-pause-frames-received", "pfc_pause_frames_received", "pfc received"),
    ("dropped-packets", "dropped_packets", "drops"),
    ("buffer-watermark-bytes", "buffer_watermark_bytes", "watermark bytes"),
)


def _counters(raw: Mapping[str, Any] | None) -> dict[str, int | None]:
    raw = raw or {}
    return {snake: raw.get(name) for name, snake, _ in COUNTERS}


@switch.command()
@watch_option
@click.argument("device", type=SWITCH)
@click.option("--port", metavar="NAME", help="Only this port.")
@click.option("--all-queues", is_flag=True, help="Also queues whose counters are all zero.")
@output_option
@pass_context
def counters(ctx: Context, device: str, port: str | None, all_queues: bool,
             output: str) -> None:
    """Congestion counters per port and queue: ECN marks, switch CNPs, PFC, drops."""
    with open_session(ctx.devices.switch_target(device)) as session:
        state = session.get_state(port)
    top = state.get("switch") or {}
    buffer = top.get("buffer") or {}
    ports = []
    for entry in (top.get("ports") or {}).get("port", []):
        if "counters" not in entry:
            continue  # configured, but the chip has no such port
        ports.append({
            "name": entry.get("name"),
            "counters": _counters(entry.get("counters")),
            "queues": [{"queue_id": q.get("queue-id"), "counters": _counters(q.get("counters"))}
                       for q in (entry.get("queues") or {}).get("queue", [])
                       if "counters" in q],
        })
    if port is not None and not ports:
        raise ValidationError(f"{device} has no port {port!r}")
    document = {"device": device,
                "buffer": {"total_bytes": buffer.get("total-bytes"),
                           "lossless_pool_bytes": buffer.get("lossless-pool-bytes")},
                "ports": ports}
    if output in DOCUMENTS:
        emit(document, output)
        return
    total, pool = buffer.get("total-bytes"), buffer.get("lossless-pool-bytes")
    if total is not None:
        say(f"{device}: buffer {total / 1e9:.2f} GB, lossless pool "
            f"{(pool or 0) / 1e9:.2f} GB")
    rows = []
    for p in ports:
        rows.append([p["name"], "all", *(p["counters"][snake] for _, snake, _ in COUNTERS)])
        for q in p["queues"]:
            values = [q["counters"][snake] for _, snake, _ in COUNTERS]
            if all_queues or any(values):
                rows.append([p["name"], q["queue_id"], *values])
    click.echo(table(["port", "queue", *(title for _, _, title in COUNTERS)], rows,
                     wide_only=("pfc received",)))
