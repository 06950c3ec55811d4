"""``msoctl fabric plan|apply FILE``: the whole fabric from one intent file.

The file's format is in :mod:`msoctl.fabric.intent`; the apply order and how an
interrupted apply is resumed, in :mod:`msoctl.fabric.plan`.

JSON (``-o json``). ``fabric plan``: ``file``, ``intent_sha256``, ``resume`` (the
interrupted or failed apply a rerun would continue: ``op``, ``status``, ``started``,
``steps_done``, ``failed_step``, ``same_intent``; or null), ``changes`` (count),
``step_order`` (the step ids that apply would run) and ``steps``: one object per
device (``step``, ``kind``: switch, ocs, amp, amp_restart; ``device``; ``changes``)
and the ``verify`` step (``links``, ``timeout_seconds``). ``fabric apply``: ``op``,
``file``, ``resumed``, ``cancelled_pending_commits``, ``steps`` (``step``,
``status``: done, in place, skipped; ``detail``) and ``light``: the path view of
the links that are up (as ``msoctl path show -o json`` prints it).
"""

from __future__ import annotations

from pathlib import Path

import click

from msoctl.cli.changes import change_lines
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import (
    DOCUMENTS,
    cell,
    describe_impacts,
    emit,
    jobs_touched,
    output_format,
    output_option,
    say,
)
from msoctl.cli.types import input_path
from msoctl.fabric.apply import ApplyReport, apply
from msoctl.fabric.intent import FabricIntent, load_intent
from msoctl.fabric.plan import FabricPlan, find_resume, make_plan, switch_leftovers
from msoctl.words import counted


@click.group()
def fabric() -> None:
    """The whole fabric from one intent file: links and spans, OCS maps, amplifiers,
    switch congestion control."""


def _intent(ctx: Context, file: Path) -> FabricIntent:
    return load_intent(file.resolve(), ctx.inventory)


@fabric.command("plan")
@click.argument("file", type=input_path(dir_okay=False), metavar="FILE")
@output_option
@pass_context
def plan_command(ctx: Context, file: Path, output: str) -> None:
    """Read every device FILE touches and print one diff across them; change nothing."""
    intent = _intent(ctx, file)
    resume = find_resume(ctx.journal, intent)
    plan = make_plan(ctx.devices, ctx.journal, intent, resume,
                     switch_leftovers(ctx.journal, intent, resume))
    if output in DOCUMENTS:
        emit({**plan.as_dict(), "jobs": jobs_touched(plan.impacts)}, output)
        return
    print_plan(plan, shown=file)


def print_plan(plan: FabricPlan, *, shown: Path | None = None) -> None:
    """The plan as operators read it; ``shown``: the intent file as they named it."""
    intent = plan.intent
    steps = plan.step_ids()
    say(f"fabric plan {shown or intent.path}: {counted(plan.changes, 'change')}; apply runs "
        f"{counted(len(steps), 'step')}: {', '.join(steps) or 'none'}")
    if plan.resume is not None:
        resume = plan.resume
        say(f"note: fabric apply {resume.op} of this file {resume.status}"
            + (f" at step {resume.failed_step}" if resume.failed_step else "")
            + f" after {counted(len(resume.done), 'step')}; apply continues it from the device "
              "state")
    for s in plan.switches:
        how = ("the switch's own diff" if s.method == "candidate"
               else "computed here: no candidate")
        head = (f"switch {s.device}: {counted(len(s.changes), 'change')} ({how})" if s.changes
                else f"switch {s.device}: no change")
        click.echo(head)
        if s.leftover:
            say(f"    cancel commit {s.leftover}, left pending by the earlier run, "
                "then apply again")
        wide = output_format() == "wide"
        for line in change_lines([c for c in s.changes if c.kind != "remove"], indent=4,
                                 wide=wide):
            click.echo(line)
        removed = plan.deletions.get(s.device, [])
        if removed:
            say(f"    deletions ({len(removed)}: configuration the WANT tree does not "
                "name; apply needs --allow-delete):")
            for line in change_lines(removed, indent=4, wide=wide):
                click.echo(line)
    for o in plan.ocs:
        if o.plan.method == "none":
            say(f"ocs {o.device}: no change ({counted(len(o.plan.wanted), 'connection')})")
            continue
        say(f"ocs {o.device}: {len(o.plan.diff.remove)} to remove, "
            f"{len(o.plan.diff.add)} to add, {len(o.plan.diff.keep)} unchanged "
            f"(one command: {o.plan.method})")
        for row in o.rows():
            sign = "-" if row["action"] == "remove" else "+"
            reason = f"  {row['reason']}" if row["reason"] else ""
            say(f"    {sign} {row['ingress']}:{row['egress']}{reason}")
    for a in plan.amps:
        if not a.changes:
            say(f"amp {a.device}: no change")
            continue
        say(f"amp {a.device}: " + ", ".join(
            f"{name} {cell(old)} -> {cell(new)}" for name, (old, new) in a.changes.items())
            + (" (ramped)" if "gain_db" in a.changes else ""))
    for r in plan.restarts:
        say(f"amp {r.device}: restart after {r.span} is lit, if ALS has shut its "
            f"output (ALS now: {r.als_state})")
    if plan.verify_links:
        say(f"verify: light end to end on {', '.join(plan.verify_links)} (within "
            f"{intent.verify_timeout_seconds:g} s, {intent.tolerance_db:g} dB "
            "tolerance)")
    click.echo(describe_impacts(plan.impacts))


@fabric.command("apply")
@click.argument("file", type=input_path(dir_okay=False), metavar="FILE")
@click.option("--force", is_flag=True,
              help="Apply although it takes an in-service link down (journaled).")
@click.option("--allow-delete", is_flag=True,
              help="Let switch WANT trees delete configuration they do not name (journaled).")
@output_option
@pass_context
def apply_command(ctx: Context, file: Path, force: bool, allow_delete: bool,
                  output: str) -> None:
    """Apply FILE in a safe order, verify the light end to end; a rerun after an
    interruption continues where it stopped.

    Refused before any step (exit 3) when it would take an in-service link down (drain it
    first with 'msoctl link drain', or --force) or delete switch configuration the WANT
    trees do not name (--allow-delete)."""
    intent = _intent(ctx, file)
    say_line = (lambda line: None) if output in DOCUMENTS else say
    report = apply(ctx.devices, ctx.journal, intent, say=say_line, force=force,
                   allow_delete=allow_delete)
    if output in DOCUMENTS:
        emit({**report.as_dict(), "jobs": jobs_touched(report.plan.impacts)}, output)
        return
    print_light(report)
    say(f"fabric apply {report.op}: done")


def print_light(report: ApplyReport) -> None:
    if report.light is None:
        return
    for link in report.light.links:
        for d in link.directions:
            last = d.hops[-1]
            say(f"{link.link} {d.source} -> {d.destination} on {d.span} "
                f"{d.span_name}: {cell(last.measured_dbm)} dBm at the receiver "
                f"(budget {cell(last.expected_dbm)} dBm)")
