"""``msoctl path show``: the light along each fabric link, hop by hop, against its budget.

JSON (``-o json``): ``tolerance_db``, ``dark_below_dbm``,
``typical_ocs_insertion_loss_db``, ``errors`` (``device``, ``error``: devices that did
not answer) and ``links``: per link ``link``, ``span`` (working, protection, none,
mixed, or null when an OCS did not answer), ``span_name``, ``light`` (arrives, lost,
unknown) and ``directions``: ``direction`` (a_to_b, b_to_a), ``from``, ``to``,
``span``, ``span_name``, ``launch_power_dbm``, ``launch_source`` (cpo, inventory),
``expected_rx_power_dbm``, ``measured_rx_power_dbm``, ``light``, ``lost_at``
(``hop``, ``device``, ``point``, ``status``, or null), ``notes`` and ``hops``: ``hop``,
``device``, ``point``, ``kind``, ``port``, ``expected_power_dbm``,
``measured_power_dbm``, ``difference_db``, ``budget_step_db``, ``budget_step``,
``status`` (ok, low, high, dark, unknown) and ``error``. See :mod:`msoctl.fabric.lightpath`.
"""

from __future__ import annotations

import click

from drivers.errors import DeviceError, ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, cell, emit, output_option, say, table, watch_option
from msoctl.cli.types import LINK, Number
from msoctl.fabric.lightpath import (
    DARK_BELOW_DBM,
    DEFAULT_TOLERANCE_DB,
    Direction,
    PathReport,
    show,
)


class DevicesSilent(DeviceError):
    """Some devices on the paths did not answer; the rest was shown."""


@click.group()
def path() -> None:
    """End-to-end light on the fabric links: budget against measurement, hop by hop."""


@path.command("show")
@watch_option
@click.argument("link", required=False, type=LINK)
@click.option("--tolerance", "tolerance_db", type=Number(0.1, 30.0),
              default=DEFAULT_TOLERANCE_DB, show_default=True, metavar="DB",
              help="A hop more than this under its budget has lost the light.")
@click.option("--dark-below", "dark_below_dbm", type=Number(-100.0, 10.0),
              default=DARK_BELOW_DBM, show_default=True, metavar="DBM",
              help="A reading below this is no light at all.")
@output_option
@pass_context
def show_command(ctx: Context, link: str | None, tolerance_db: float, dark_below_dbm: float,
                 output: str) -> None:
    """Per hop: the power the link budget expects, the power measured, where light is lost.

    Every link of the inventory, or LINK only, in both directions.
    """
    inventory = ctx.inventory
    if link is not None:
        links = [inventory.link(link)]
    elif inventory.links:
        links = list(inventory.links.values())
    else:
        raise ValidationError(f"{inventory.path} declares no links (see 'links:' in the "
                              "inventory)")
    report = show(ctx.devices, links, tolerance_db=tolerance_db,
                  dark_below_dbm=dark_below_dbm)
    if output in DOCUMENTS:
        emit(report.as_dict(), output)
    else:
        print_report(report)
    if report.errors:
        raise DevicesSilent(silent_message(report.errors))


def silent_message(errors: dict[str, str]) -> str:
    if len(errors) == 1:
        ((device, why),) = errors.items()
        return f"{device} did not answer ({why}); its hops show no measurement"
    named = "; ".join(f"{device} ({why})" for device, why in errors.items())
    return f"{len(errors)} devices did not answer: {named}; their hops show no measurement"


def _signed(value: float | None) -> str:
    return "" if value is None or value == 0 else f"{value:+.2f} dB "


def _span_words(span: str | None, name: str) -> str:
    if span in ("working", "protection"):
        return f"on its {span} span {name}"
    if span == "none":
        return "connected to neither span"
    if span == "mixed":
        return "on mixed spans"
    return "on a span not known (an OCS did not answer)"


def print_direction(direction: Direction) -> None:
    where = _span_words(direction.span, direction.span_name)
    if direction.span not in ("working", "protection"):
        where += f", hops along {direction.span_name}"
    lost = direction.lost_at
    verdict = ("light arrives" if direction.light == "arrives"
               else "light not measured at the receiver" if lost is None
               else f"light lost at hop {lost + 1} ({direction.hops[lost].device} "
                    f"{direction.hops[lost].point}: {direction.hops[lost].status})")
    say(f"{direction.source} -> {direction.destination} {where}: {verdict}")
    rows = []
    for number, hop in enumerate(direction.hops, start=1):
        budget = _signed(hop.step_db) + (hop.step or "")
        rows.append([number, hop.device, hop.point, hop.expected_dbm, hop.measured_dbm,
                     hop.difference_db, hop.status,
                     "no answer" if hop.error else budget.strip()])
    click.echo(table(["hop", "device", "point", "expected dBm", "measured dBm", "diff dB",
                      "status", "budget"], rows, wide_only=("budget",)))
    for note in direction.notes:
        say(f"note: {note}")


def print_report(report: PathReport) -> None:
    for index, link in enumerate(report.links):
        if index:
            click.echo()
        span_names = sorted({d.span_name for d in link.directions})
        say(f"{link.link}: {_span_words(link.span, ', '.join(span_names))}, "
            f"light {link.light}")
        for direction in link.directions:
            click.echo()
            print_direction(direction)
    if report.errors:
        click.echo()
        for device, why in report.errors.items():
            say(f"{device}: no answer: {why}")
    click.echo()
    say(f"(a hop is low more than {cell(report.tolerance_db, 1)} dB under its budget, "
        f"dark below {cell(report.dark_below_dbm, 1)} dBm)")
