"""``msoctl inventory``: what the inventory holds."""

from __future__ import annotations

import click

from drivers.errors import ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, emit, output_option, table
from msoctl.cli.types import Count, OutputDir, OutputFile
from msoctl.exporter.sd import MAX_SHARDS
from msoctl.words import counted


@click.group()
def inventory() -> None:
    """Show and check the inventory."""


@inventory.command()
@output_option
@pass_context
def show(ctx: Context, output: str) -> None:
    """List the devices."""
    inv = ctx.inventory
    rows = [{
        "name": d.name, "kind": d.kind, "transport": d.endpoint.transport,
        "address": d.endpoint.address,
        "console": None if d.console is None else d.console.address,
        "labels": d.labels,
    } for d in inv.devices.values()]
    if output in DOCUMENTS:
        emit({"inventory": str(inv.path), "devices": rows}, output)
        return
    click.echo(f"inventory: {inv.path}")
    click.echo(table(["name", "kind", "transport", "address", "console", "labels"],
                     [[r["name"], r["kind"], r["transport"], r["address"], r["console"],
                       ",".join(f"{k}={v}" for k, v in d.labels.items())]
                      for r, d in zip(rows, inv.devices.values(), strict=True)],
                     wide_only=("console", "labels"), cut=("address",)))


@inventory.command()
@click.option("--deep", is_flag=True,
              help="Also resolve every secret reference, parse every address and read every "
                   "file the inventory names (sends nothing to any device).")
@pass_context
def check(ctx: Context, deep: bool) -> None:
    """Validate the inventory file; exit 2 with the first problem if it is invalid.

    Without --deep only the file's structure is checked: secrets are not resolved and
    no device is contacted. With --deep every problem found is listed, one per line
    on stdout, and the command exits 2 if there is any.
    """
    inv = ctx.inventory
    if not deep:
        click.echo(f"{inv.path}: ok, {counted(len(inv.devices), 'device')}; structure only: "
                   "secrets not resolved, no device contacted (--deep resolves and parses them)")
        return
    from msoctl.inventory_check import deep_check

    report = deep_check(inv)
    for problem in report.problems:
        click.echo(f"{inv.path}: {problem}")
    checked = (f"{counted(report.secrets, 'secret')} resolved, "
               f"{counted(report.addresses, 'address')} parsed, "
               f"{counted(report.files, 'file')} read; nothing was sent")
    if report.problems:
        raise ValidationError(f"{inv.path}: {counted(len(report.problems), 'problem')} listed "
                              f"above ({checked})")
    click.echo(f"{inv.path}: ok, {counted(len(inv.devices), 'device')}; {checked}")


@inventory.command()
@click.option("--out", type=click.Path(), metavar="FILE|DIR",  # checked below, by the use
              help="Write the targets to FILE (atomically) instead of printing them; with "
                   "--shards, the directory to write one file per shard in.")
@click.option("--shards", type=Count(1, MAX_SHARDS), metavar="N",
              help="Split the targets into N shards as Prometheus's hashmod on the target "
                   "does: DIR/msoctl-targets-K.json for K = 0..N-1 (needs --out DIR).")
@click.option("--snmp-exporter", "snmp_exporter", is_flag=True,
              help="Targets for snmp_exporter instead (the switches' SNMP agents, modules "
                   "of `msoctl exporter snmp-config`).")
@pass_context
def sd(ctx: Context, out: str | None, shards: int | None, snmp_exporter: bool) -> None:
    """Prometheus file_sd targets (JSON) for the exporter: one group per device."""
    from msoctl.exporter import sd as file_sd

    if snmp_exporter:
        from msoctl.exporter import snmpconfig

        groups = snmpconfig.targets(ctx.inventory)
    else:
        groups = file_sd.targets(ctx.inventory)
    if shards is not None:
        if out is None:
            raise click.UsageError("--shards writes one file per shard: give --out DIR")
        directory = OutputDir().convert(out, _param("out"), click.get_current_context())
        try:
            written = file_sd.write_shards(directory, groups, shards)
        except OSError as error:
            raise ValidationError(f"cannot write in {directory}: "
                                  f"{error.strerror or error}") from None
        for path, own in zip(written, file_sd.split(groups, shards), strict=True):
            click.echo(f"{path}: {counted(len(own), 'target group')}")
        return
    text = file_sd.render(groups)
    if out is None:
        click.echo(text, nl=False)
        return
    path = OutputFile().convert(out, _param("out"), click.get_current_context())
    file_sd.write_atomically(path, text)
    click.echo(f"{path}: {counted(len(groups), 'target group')}")


def _param(name: str) -> click.Parameter:
    """This command's option ``name``, for an error that names it."""
    command = click.get_current_context().command
    return next(param for param in command.params if param.name == name)
