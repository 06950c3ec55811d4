"""``msoctl protect``: optical protection of the inventory's links (msoctl/protect/)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import click

from drivers.errors import DeviceError, ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option, say, table, watch_option
from msoctl.cli.types import LINK, TEXT, Number
from msoctl.journal import Journal
from msoctl.links import Link, OcsPort
from msoctl.ops.ocs import parse_port
from msoctl.protect.budget import MIN_MESSAGES_PER_SECOND
from msoctl.protect.config import check_probes
from msoctl.protect.controller import ProtectConfig, ProtectionController, ProtectionEvent
from msoctl.protect.ha import (
    LEASE_SECONDS,
    MARGIN_SECONDS,
    RENEW_SECONDS,
    RETRY_SECONDS,
    LeaseOwnership,
    LeaseTimes,
    instances_and_shards,
)
from msoctl.protect.light import (
    DIRECTION_NAMES,
    LIT,
    AmpReading,
    LightJudge,
    link_ports,
    link_role,
    span_state,
)
from msoctl.protect.ownership import shard_of
from msoctl.protect.watch import AMP_FIELDS, reading
from msoctl.words import counted


@click.group()
def protect() -> None:
    """Optical protection: move links to their protection span on loss of light."""


def _probe(text: str) -> OcsPort:
    ocs, sep, port = text.rpartition(":")
    if not sep or not ocs:
        raise ValidationError(f"--probe {text!r}: write OCS:PORT, like ocs-a:64")
    return OcsPort(ocs, parse_port(port))


@protect.command()
@click.option("--link", "links", multiple=True, metavar="LINK", type=LINK,
              help="Protect this link (repeatable; default: every link with a protection span).")
@click.option("--hold-off-ms", type=Number(0, 60_000), default=0.0,
              show_default=True, help="A loss must last this long before a switch.")
@click.option("--wait-to-restore-s", type=Number(0, 3600), default=300.0,
              show_default=True,
              help="The working span must stay lit this long before a revert.")
@click.option("--revertive/--non-revertive", default=True, show_default=True,
              help="Go back to the working span once it is restored, or stay.")
@click.option("--poll-ms", type=Number(1, 10_000), default=5.0, show_default=True,
              help="How often each OCS's power monitors are read.")
@click.option("--threshold-dbm", type=Number(-60, 20), default=-20.0,
              show_default=True,
              help="Loss of light below this at a span's end (raised by the gain of an "
                   "amplifier in front of the monitor).")
@click.option("--hysteresis-db", type=Number(0, 20), default=2.0, show_default=True,
              help="Light counts as back only this far above the threshold.")
@click.option("--probe", "probes", multiple=True, metavar="OCS:PORT", type=TEXT,
              help="An ingress port carrying idle light to keep the standby span lit "
                   "(repeatable; default: a free lit ingress port that no link uses).")
@click.option("--no-probe", is_flag=True,
              help="Park no probe: an unlit standby span then counts as unavailable.")
@click.option("--no-als-restart", is_flag=True,
              help="Do not ask amplifiers for a restart pulse when light is back at their "
                   "input (their own restart timer still runs).")
@click.option("--no-alarms", is_flag=True,
              help="Do not follow the OCSes' loss-of-light alarms: poll every OCS at the "
                   "full rate its message budget allows.")
@click.option("--verify-timeout-ms", type=Number(10, 60_000), default=1000.0,
              show_default=True, help="How long light may take to arrive after a switch.")
@click.option("--ocs-rate", type=Number(MIN_MESSAGES_PER_SECOND, 100_000), default=50.0,
              show_default=True, metavar="MESSAGES/S",
              help="The command rate each OCS is assumed to answer: the controller never "
                   "sends more program messages than this to one OCS in any second.")
@click.option("--ha", is_flag=True,
              help="Share the links with other instances through the journal's PostgreSQL "
                   "database: shards owned under leases, a standby taking over.")
@click.option("--instance", "instance_name", metavar="NAME", type=TEXT, default=None,
              help="With --ha: this instance's name (default host:pid:random).")
@click.option("--lease-ms", type=Number(100, 60_000), default=LEASE_SECONDS * 1000,
              show_default=True, help="With --ha: how long a shard's lease runs.")
@click.option("--renew-ms", type=Number(10, 10_000), default=RENEW_SECONDS * 1000,
              show_default=True, help="With --ha: how often leases are renewed and free "
                                      "shards looked for.")
@pass_context
def run(ctx: Context, links: tuple[str, ...], hold_off_ms: float, wait_to_restore_s: float,
        revertive: bool, poll_ms: float, threshold_dbm: float, hysteresis_db: float,
        probes: tuple[str, ...], no_probe: bool, no_als_restart: bool, no_alarms: bool,
        verify_timeout_ms: float, ocs_rate: float, ha: bool, instance_name: str | None,
        lease_ms: float, renew_ms: float) -> None:
    """Watch the links' spans and switch them on loss of light, until SIGINT or SIGTERM."""
    if no_probe and probes:
        raise ValidationError("--probe and --no-probe exclude each other")
    if not ha and instance_name is not None:
        raise ValidationError("--instance needs --ha")
    parsed_probes = tuple(_probe(p) for p in probes)
    check_probes(parsed_probes, ctx.inventory, lambda name: _ocs_size(ctx, name))
    config = ProtectConfig(
        hold_off_seconds=hold_off_ms / 1000, wait_to_restore_seconds=wait_to_restore_s,
        revertive=revertive, poll_seconds=poll_ms / 1000, threshold_dbm=threshold_dbm,
        hysteresis_db=hysteresis_db, probes=parsed_probes,
        use_probes=not no_probe, restart_amplifiers=not no_als_restart,
        use_alarms=not no_alarms,
        verify_timeout_seconds=verify_timeout_ms / 1000, ocs_messages_per_second=ocs_rate)
    printer = _printer()
    ownership = None
    if ha:
        times = LeaseTimes(renew_seconds=renew_ms / 1000, lease_seconds=lease_ms / 1000,
                           margin_seconds=min(MARGIN_SECONDS, lease_ms / 4000),
                           retry_seconds=min(RETRY_SECONDS, (lease_ms - renew_ms) / 2000))
        ownership = LeaseOwnership(ctx.journal, times=times, name=instance_name,
                                   on_event=lambda kind, message: printer(ProtectionEvent(
                                       kind, None, message, time.monotonic())))
    controller = ProtectionController(ctx.inventory, ctx.journal, links=list(links) or None,
                                      config=config, on_event=printer, ownership=ownership)
    _check_monitors(ctx, sorted({name for link in controller.links for name in link.ocs_names}))
    stop = threading.Event()
    previous = _on_signals(lambda: stop.set())
    try:
        names = ", ".join(f"{link.name} ({link.working.name}, protection "
                          f"{link.protection.name if link.protection else '-'})"
                          for link in controller.links)
        if len(controller.links) > 8:
            names = f"{len(controller.links)} links"
        shared = "" if ownership is None else (
            f"; instance {ownership.instance}, sharing through the database (lease "
            f"{lease_ms:g} ms, renewed every {renew_ms:g} ms)")
        say(f"protecting {names}: hold-off {hold_off_ms:g} ms, wait-to-restore "
            f"{wait_to_restore_s:g} s, {'revertive' if revertive else 'non-revertive'}, "
            f"poll {poll_ms:g} ms at most, {ocs_rate:g} messages/s per OCS, "
            f"threshold {threshold_dbm:g} dBm, hysteresis {hysteresis_db:g} dB; "
            f"journal {ctx.journal.where}{shared}; Ctrl-C stops")
        controller.run(stop)
    finally:
        _restore_signals(previous)
    counts = controller.counts
    say(f"stopped: {counted(counts['switch'], 'switch')}, {counted(counts['revert'], 'revert')}, "
        f"{counted(counts['unavailable'], 'time')} protection unavailable, "
        f"{counted(counts['failed'], 'failure')}, {counts['fenced']} fenced")


def _check_monitors(ctx: Context, names: list[str]) -> None:
    """Refuse to start (one line, naming the unit) when an OCS of the links has no power
    monitors: the controller judges the light at them. A unit that cannot be reached is
    left to the controller, which reports it and goes on with the others."""
    from drivers.errors import Unsupported
    from drivers.ocs.driver import unsupported_message

    for name in names:
        try:
            driver = ctx.devices.ocs(name)
        except DeviceError:
            continue
        try:
            if not driver.has_monitors():
                raise Unsupported(f"{unsupported_message('power_monitors')}: the protection "
                                  "controller judges the light at the OCS monitors",
                                  device=name)
        finally:
            driver.close()


def _ocs_size(ctx: Context, name: str) -> int:
    """N of OCS ``name`` (NxN), asked of the device; sends nothing else."""
    try:
        driver = ctx.devices.ocs(name)
        try:
            return driver.size
        finally:
            driver.close()
    except DeviceError as error:  # exit 1: the probe could not be checked, so no start
        error.message = f"cannot check --probe: {error.message}"
        error.device = error.device or name
        raise


def _printer() -> Callable[[ProtectionEvent], None]:
    lock = threading.Lock()

    def show(event: ProtectionEvent) -> None:
        stamp = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
        with lock:
            say(f"{stamp} {event.kind:<12} {event.message}")

    return show


Handler = Callable[[int, FrameType | None], Any] | int | None


def _on_signals(action: Callable[[], None]) -> dict[int, Handler]:
    def handler(signum: int, frame: FrameType | None) -> None:
        action()

    previous: dict[int, Handler] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
    return previous


def _restore_signals(previous: dict[int, Handler]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


# ---- status --------------------------------------------------------------------------------


@protect.command()
@watch_option
@output_option
@pass_context
def status(ctx: Context, output: str) -> None:
    """Per link: the span that carries it now, the light on both spans, the last event."""
    inventory = ctx.inventory
    links = [link for link in inventory.links.values() if link.protection is not None]
    if not links:
        raise ValidationError(f"{inventory.path}: no link with a protection span")
    powers, maps, amps, errors = _read_devices(ctx, links)
    journal = ctx.journal
    instances, shards = instances_and_shards(journal)
    owners = {s["shard"]: s for s in shards}
    drained = ctx.link_states.drained()
    judge = _judge_like_the_controller(journal)
    documents: list[dict[str, Any]] = []
    for link in links:
        assert link.protection is not None
        readings = {"powers": powers, "maps": maps, "amps": amps}
        spans = {"working": judge.span(link.working, **readings),
                 "protection": judge.span(link.protection, **readings)}
        role = link_role(link, maps)
        if any(maps.get(name) is None for name in link.ocs_names):
            carried = "unknown"
        else:
            carried = "not connected" if role is None else link.span(role).name
        documents.append({
            "link": link.name,
            "active_span": None if role is None else link.span(role).name,
            "active_role": role,
            "carried_by": carried,
            "spans": {r: {"span": link.span(r).name, "light": span_state(lights),
                          "directions": [d.as_dict() for d in lights]}
                      for r, lights in spans.items()},
            "controller": _controller(journal, link),
            "last_event": _last_event(journal, link),
            "shard": shard_of(link),
            "owner": None if shard_of(link) not in owners else {
                "instance": owners[shard_of(link)]["owner"],
                "term": owners[shard_of(link)]["term"]},
            "service": "drained" if link.name in drained else "in service",
            "drained": None if link.name not in drained else drained[link.name].as_dict(),
        })
    if output in DOCUMENTS:
        emit({"journal": journal.where, "links": documents,
              "instances": instances or None, "shards": shards or None,
              "errors": errors or None}, output)
        return
    rows = []
    for d in documents:
        working, protection = d["spans"]["working"], d["spans"]["protection"]
        event = d["last_event"]
        controller = d["controller"]["state"]
        if d["owner"] is not None:
            controller = (f"{d['owner']['instance'] or 'no owner'} term "
                          f"{d['owner']['term']}")
        rows.append([d["link"], d["carried_by"], f"{working['span']} {working['light']}",
                     f"{protection['span']} {protection['light']}", controller,
                     "-" if event is None else
                     f"{event['action'].removeprefix('protection.')} {event['status']} "
                     f"{event['time'][5:19].replace('T', ' ')}"])
    click.echo(table(["link", "on", "working", "protection", "controller", "last event"], rows,
                     cut=("last event",)))
    for d in documents:
        drained = d["drained"]
        if drained is not None:
            say(f"  {d['link']} drained: left alone by the controller (since "
                f"{drained['since']} by {drained['user']}"
                + (f": {drained['reason']})" if drained.get("reason") else ")"), indent=4)
        for role, span in d["spans"].items():
            for direction in span["directions"]:
                if direction["state"] != LIT:
                    say(f"  {d['link']} {role} {span['span']} "
                        f"{DIRECTION_NAMES[direction['direction']]}: "
                        f"{direction['state']}: {direction['reason']}", indent=4)
        event = d["last_event"]
        if event is not None and event.get("summary"):
            say(f"  {d['link']} last event: {event['summary']}", indent=4)
    if instances:
        click.echo("")
        click.echo(table(["instance", "host", "pid", "state", "heartbeat", "shards (term)"], [
            [i["instance"], i["host"], str(i["pid"]),
             i["state"] if i["connected"] or i["state"] == "stopped"
             else f"{i['state']} (disconnected)",
             f"{i['heartbeat_age_seconds']:.1f} s ago",
             ", ".join(f"{s['shard']} ({s['term']})" for s in shards
                       if s["owner"] == i["instance"]) or "-"]
            for i in instances], cut=("host", "shards (term)")))
        unowned = [s["shard"] for s in shards if s["owner"] is None]
        if unowned:
            say(f"  shards with no owner: {', '.join(unowned)}", indent=4)
    for error in errors:
        click.echo(f"warning: {error}", err=True)


def _judge_like_the_controller(journal: Journal) -> LightJudge:
    """Judge light with the threshold and hysteresis of the last controller run."""
    defaults = ProtectConfig()
    threshold, hysteresis = defaults.threshold_dbm, defaults.hysteresis_db
    run = journal.last(action="protection.run")
    if run is not None:
        threshold = _number(run.intent.get("threshold_dbm"), threshold)
        hysteresis = _number(run.intent.get("hysteresis_db"), hysteresis)
    return LightJudge(threshold, hysteresis)


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _read_devices(ctx: Context, links: list[Link]) -> tuple[
        dict[str, Any], dict[str, Any], dict[str, AmpReading | None], list[str]]:
    """One reading of every OCS and amplifier the links use; a device that fails is
    ``None`` and its error is listed."""
    ports: dict[str, set[int]] = {}
    amp_names: set[str] = set()
    for link in links:
        for name, used in link_ports(link).items():
            ports.setdefault(name, set()).update(used)
        for span in (link.working, link.protection):
            if span is not None:
                amp_names.update(f.amplifier for f in (span.a_to_b, span.b_to_a)
                                 if f.amplifier)
    powers: dict[str, Any] = {}
    maps: dict[str, Any] = {}
    amps: dict[str, AmpReading | None] = {}
    errors: list[str] = []
    for name, used in sorted(ports.items()):
        powers[name] = maps[name] = None
        try:
            driver = ctx.devices.ocs(name)
            try:
                port_map = maps[name] = dict(driver.port_map())
                feeders = {i for i, e in port_map.items() if e in used}  # probes among them
                powers[name] = driver.power(sorted(used | feeders))
            finally:
                driver.close()
        except DeviceError as error:
            errors.append(str(error))
    for name in sorted(amp_names):
        amps[name] = None
        try:
            amp = ctx.devices.amp(name)
            try:
                amps[name] = reading(0.0, amp.module.read_fields(AMP_FIELDS))
            finally:
                amp.close()
        except DeviceError as error:
            errors.append(str(error))
    return powers, maps, amps, errors


def _controller(journal: Journal, link: Link) -> dict[str, Any]:
    last = journal.last(mentions=link.name, action="protection.run")
    if last is None:
        return {"state": "never run", "pid": None, "host": None, "started": None}
    status = last.status
    return {"state": "running" if status == "running" else f"stopped ({status})",
            "pid": last.intent.get("pid"), "host": last.intent.get("host"),
            "started": last.started}


def _last_event(journal: Journal, link: Link) -> dict[str, Any] | None:
    last = journal.last(mentions=link.name,
                        actions=("protection.switch", "protection.revert"))
    if last is None:
        return None
    result = last.result or {}
    return {
        "op": last.op, "time": last.started, "action": last.action, "status": last.status,
        "from_span": last.intent.get("from_span"), "to_span": last.intent.get("to_span"),
        "cause": last.intent.get("cause"),
        "reason": last.intent.get("reason") if last.status == "refused" else None,
        "durations_ms": result.get("durations_ms"), "timeline": result.get("timeline"),
        "summary": result.get("summary") or last.intent.get("reason"),
    }

