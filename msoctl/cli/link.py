"""``msoctl link``: the inventory's fabric links, and taking them out of service.

Drain a link before work that darkens it: changes that would take an in-service
link down are refused (exit 3) unless it is drained or ``--force`` is given, and
the protection controller leaves a drained link alone. Both are journaled.
"""

from __future__ import annotations

from typing import Any

import click

from drivers.errors import ValidationError
from msoctl import impact
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option, say, table
from msoctl.cli.types import LINK


@click.group()
def link() -> None:
    """Fabric links: list them, drain them before work, undrain them after."""


def _check(ctx: Context, name: str) -> None:
    if name not in ctx.inventory.links:
        known = ", ".join(sorted(ctx.inventory.links)) or "none"
        raise ValidationError(f"no link named {name!r} in {ctx.inventory.path} "
                              f"(links: {known})")


@link.command("list")
@output_option
@pass_context
def list_links(ctx: Context, output: str) -> None:
    """Every link: its ends, its spans, the span it is carried on now, in service or drained."""
    inventory = ctx.inventory
    drained = ctx.link_states.drained()
    rows: list[dict[str, Any]] = []
    for name, entry in inventory.links.items():
        role, _ = impact.carried(entry, ctx.read_map)
        unknown = [ocs for ocs in entry.ocs_names if ctx.read_map(ocs) is None]
        drain = drained.get(name)
        rows.append({
            "link": name,
            "a": f"{entry.a.switch}:{entry.a.port}", "b": f"{entry.b.switch}:{entry.b.port}",
            "working": entry.working.name,
            "protection": None if entry.protection is None else entry.protection.name,
            "carried_on": None if unknown else role,
            "carried_by": None if unknown or role is None else entry.span(role).name,
            "unreadable": unknown,
            "service": "drained" if drain else "in service",
            "drained": None if drain is None else drain.as_dict(),
        })
    if output in DOCUMENTS:
        emit({"links": rows}, output)
        return
    if not rows:
        say(f"no links in {inventory.path}")
        return
    click.echo(table(
        ["link", "a", "b", "working", "protection", "on", "service"],
        [[r["link"], r["a"], r["b"], r["working"], r["protection"],
          ("unknown (" + ", ".join(r["unreadable"]) + " unreadable)") if r["unreadable"]
          else (r["carried_by"] or "not connected"),
          r["service"] if r["drained"] is None else
          f"drained since {r['drained']['since']} by {r['drained']['user']}"
          + (f": {r['drained']['reason']}" if r["drained"]["reason"] else "")]
         for r in rows], cut=("on", "service")))


@link.command()
@click.argument("name", metavar="LINK", type=LINK)
@click.option("--reason", default="", metavar="TEXT", help="Why (kept in the journal).")
@pass_context
def drain(ctx: Context, name: str, reason: str) -> None:
    """Take LINK out of service: changes may then darken it, and protection leaves it alone."""
    _check(ctx, name)
    entry, new = ctx.link_states.drain(name, reason=reason)
    if new:
        say(f"{name}: drained (journaled as {entry.op}); changes may now take it down "
            "and protection leaves it alone")
    else:
        say(f"{name}: already drained since {entry.since} by {entry.user}")


@link.command()
@click.argument("name", metavar="LINK", type=LINK)
@pass_context
def undrain(ctx: Context, name: str) -> None:
    """Put LINK back in service: changes that would take it down are refused again."""
    _check(ctx, name)
    ended = ctx.link_states.undrain(name)
    if ended is None:
        say(f"{name}: was not drained; it is in service")
    else:
        say(f"{name}: back in service (drained since {ended.since})")
