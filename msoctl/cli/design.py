"""``msoctl design``: plan a fabric before it is built.

``msoctl design cost`` compares the cost and power per GPU of fabric
architectures at several scales (see :mod:`msoctl.design`); ``msoctl design cc``
(:mod:`msoctl.cli.design_cc`) models long-haul congestion control. Neither reads the
inventory or talks to a device.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from msoctl.cli.output import DOCUMENTS, emit, output_option
from msoctl.cli.types import Count, Number, OutputFile, Text, input_path
from msoctl.design.architectures import ARCHITECTURES, NAMES
from msoctl.design.components import PROFILES, load_table
from msoctl.design.inputs import MAX_OVERSUBSCRIPTION, DesignError, FabricInputs, parse_speed
from msoctl.design.media import WHAT_IFS
from msoctl.design.report import document, table_text, write_csv
from msoctl.design.study import Study, run

MIN_GPUS, MAX_GPUS = 1024, 1_000_000
MAX_SCALES = 32
DEFAULT_BASELINE = "fat-tree-3"


class CountList(Text):
    """``N[,N...]``: whole numbers in a range, at most :data:`MAX_SCALES`, given back
    sorted without repeats. Thousands may be written 100_000 or 100k / 1M."""

    name = "list of counts"

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        items = [item.strip() for item in str(super().convert(value, param, ctx)).split(",")]
        if not any(items):
            self.fail("give at least one number", param, ctx)
        if len(items) > MAX_SCALES:
            self.fail(f"at most {MAX_SCALES} values, got {len(items)}", param, ctx)
        counts = set()
        for item in items:
            text = item.lower().replace("_", "")
            factor = {"k": 1000, "m": 1_000_000}.get(text[-1:], 1)
            digits = text[:-1] if factor > 1 else text
            if not digits.isascii() or not digits.isdigit() or len(digits) > 9:
                self.fail(f"{item!r} is not a whole number", param, ctx)
            count = int(digits) * factor
            if not self.low <= count <= self.high:
                self.fail(f"{item} is not in {self.low:,}..{self.high:,}", param, ctx)
            counts.add(count)
        return tuple(sorted(counts))


class NameList(Text):
    """``NAME[,NAME...]`` out of ``choices`` (an empty text is no name), in the order
    given, without repeats."""

    name = "list of names"

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        names = [n.strip() for n in str(super().convert(value, param, ctx)).split(",")]
        chosen: list[str] = []
        for name in filter(None, names):
            if name not in self.choices:
                self.fail(f"{name!r}: one of {', '.join(self.choices)}", param, ctx)
            if name not in chosen:
                chosen.append(name)
        return tuple(chosen)


class Speed(Text):
    """A port speed: 100G, 200G, 400G, 800G or 1.6T; given back in Gb/s."""

    name = "speed"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        try:
            return parse_speed(str(super().convert(value, param, ctx)))
        except DesignError as error:
            self.fail(str(error), param, ctx)


@click.group()
def design() -> None:
    """Plan fabrics before they are built: cost and power per architecture, long-haul
    congestion control."""


def _add_cc() -> None:
    from msoctl.cli.design_cc import cc

    design.add_command(cc)


_add_cc()


@design.command("cost")
@click.option("--gpus", required=True, type=CountList(MIN_GPUS, MAX_GPUS), metavar="N[,N...]",
              help=f"GPUs, one study per value ({MIN_GPUS:,} to {MAX_GPUS:,}; 100k, 1M allowed).")
@click.option("--gpus-per-server", type=Count(1, 1024), default=8, show_default=True,
              help="GPUs per server (the scale-up domain).")
@click.option("--nics-per-gpu", type=Count(1, 16), default=1, show_default=True,
              help="NIC ports per GPU.")
@click.option("--nic-speed", type=Speed(), default="400G", show_default=True,
              help="Speed of a NIC port; every link runs at it.")
@click.option("--radix", type=Count(4, 1024), default=64, show_default=True,
              help="Ports of a switch at --switch-speed.")
@click.option("--switch-speed", type=Speed(), default="800G", show_default=True,
              help="Speed of a switch port; a faster port than the NIC's is split "
                   "(64 x 800G: today's 51.2T switch).")
@click.option("--oversubscription", type=Number(min=1.0, max=MAX_OVERSUBSCRIPTION),
              default=1.0, show_default=True, help="Leaf downlinks to uplinks (1: non-blocking).")
@click.option("--planes", type=Count(1, 1024), default=None,
              help="Planes of multi-plane and bigswitch (default: one per NIC port of a "
                   "server, or the fewest big switches).")
@click.option("--arch", "architectures", type=NameList(NAMES), default=",".join(NAMES),
              metavar="LIST",
              show_default=True, help="Architectures to compare.")
@click.option("--baseline", type=click.Choice(NAMES), default=None,
              help=f"Normalize against this one (default: {DEFAULT_BASELINE} when compared, "
                   "else the first --arch).")
@click.option("--profile", type=click.Choice(PROFILES), default="default", show_default=True,
              help="Shipped component table to start from.")
@click.option("--components", type=input_path(dir_okay=False), default=None, metavar="FILE",
              help="Your quotes: a YAML file laid over the profile.")
@click.option("--what-if", "what_ifs", type=NameList(WHAT_IFS), default="", metavar="LIST",
              help="aec (AEC in place of optics up to its reach), lpo (LPO in place of DSP "
                   "modules), or both.")
@output_option
@click.option("--csv", "csv_path", type=OutputFile(), default=None, metavar="FILE",
              help="Also write one CSV line per architecture, scale and what-if.")
@click.option("--png", "png_path", type=OutputFile(), default=None, metavar="FILE",
              help="Also plot cost and power per GPU against scale.")
def cost(gpus: tuple[int, ...], gpus_per_server: int, nics_per_gpu: int, nic_speed: int,
         radix: int, switch_speed: int, oversubscription: float, planes: int | None,
         architectures: tuple[str, ...], baseline: str | None, profile: str,
         components: Path | None, what_ifs: tuple[str, ...], output: str,
         csv_path: Path | None, png_path: Path | None) -> None:
    """Compare the network cost and power per GPU of fabric architectures.

    For each architecture and each --gpus value: switches and ports per tier, links by
    reach class and the cable or transceivers each gets, cost and power per GPU and per
    NIC port, against --baseline, tiers, hops and latency, oversubscription. Prices,
    power and reach limits come from the component table (--profile, --components).
    """
    if not architectures:
        raise DesignError("--arch: name at least one architecture")
    if csv_path is not None and png_path is not None \
            and os.path.abspath(csv_path) == os.path.abspath(png_path):
        raise DesignError(f"--csv and --png name the same file ({csv_path}): one would "
                          "replace the other")
    if baseline is None:
        baseline = DEFAULT_BASELINE if DEFAULT_BASELINE in architectures else architectures[0]
    shape = FabricInputs(gpus=gpus[0], gpus_per_server=gpus_per_server,
                         nics_per_gpu=nics_per_gpu, nic_speed_gbps=nic_speed, radix=radix,
                         switch_speed_gbps=switch_speed, oversubscription=oversubscription,
                         planes=planes)
    shape.check()
    table = load_table(profile, components)
    for name in (baseline, *architectures):
        if name not in table.layout:
            raise DesignError(f"the component table ({table.name}) has no layout for {name} "
                              f"({ARCHITECTURES[name].summary}); add layout: {name}: ...")
    study = Study(gpus, shape, architectures, baseline, what_ifs, table)
    rows = run(study)
    files: dict[str, str] = {}
    if csv_path is not None:
        write_csv(csv_path, rows)
        files["csv"] = str(csv_path)
    if png_path is not None:
        from msoctl.design.plot import write_png

        write_png(png_path, study, rows)
        files["png"] = str(png_path)
    if output in DOCUMENTS:
        emit(document(study, rows, files), output)
        return
    click.echo(table_text(study, rows, wide=output == "wide"))
    for kind, path in files.items():
        click.echo(f"{kind}: {path}")
