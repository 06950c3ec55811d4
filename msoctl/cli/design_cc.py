"""``msoctl design cc``: what long-haul congestion control will do, before it is configured.

Reads no inventory and talks to no device; a WANT file, when given, is read for the
switch's numbers (:mod:`msoctl.design.cc`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import yaml

from drivers.errors import ValidationError
from drivers.switch.intent import Intent, Thresholds, from_legacy, to_dict
from msoctl.cli.output import DOCUMENTS, echo_or_write, emit, output_option, say_comment, table
from msoctl.cli.types import Count, OutputFile, Text, input_path
from msoctl.design.cc.fluid import DEFAULT_STEP_SECONDS
from msoctl.design.cc.nic import nic, parse_overrides
from msoctl.design.cc.scenario import (
    BOTTLENECKS,
    DEFAULT_BUFFER_BYTES,
    DEFAULT_FLOW_SIZES,
    MAX_FLOWS,
    FlowClass,
    Scenario,
    from_want,
    planned_switch,
)
from msoctl.design.cc.texts import parse_duration, parse_sizes, parse_sweep
from msoctl.ops.headroom import SPEEDS_BPS, parse_distance, parse_speed
from msoctl.ops.switch import load_want
from msoctl.ops.switch_plan import PortLink, derive, parse_size


@click.command("cc")
@click.option("--distance", type=Text(), metavar="LENGTH",
              help="The long span, e.g. 30km (default: the WANT file's cable length).")
@click.option("--speed", type=Text(), metavar="SPEED",
              help="Line rate of the NICs and the bottleneck port (default: the WANT "
                   "file's, else 400G).")
@click.option("--flows", type=Count(1, MAX_FLOWS), default=8, show_default=True,
              help="Flows through the bottleneck, starting together at line rate.")
@click.option("--bottleneck", type=click.Choice(BOTTLENECKS), default="near",
              show_default=True,
              help="near: the port onto the span; far: a port after it.")
@click.option("--want", "want_file", type=input_path(dir_okay=False), metavar="WANT.yaml",
              help="Take the switch's thresholds from this WANT file (else as `msoctl "
                   "switch plan` works them out for the link).")
@click.option("--port", type=Text(), metavar="NAME",
              help="The WANT file's port to model (needed when it names several).")
@click.option("--nic-param", "nic_params", multiple=True, type=Text(), metavar="NAME=VALUE",
              help="Override a NIC DCQCN parameter (ConnectX names, e.g. rpg_ai_rate=10).")
@click.option("--fast-cnp-interval", type=Text(), metavar="DURATION",
              help="The switch's shortest interval between CNPs of a flow (default: the "
                   "WANT file's, else the NICs' min_time_between_cnps).")
@click.option("--buffer", "buffer_text", type=Text(), metavar="SIZE",
              default=f"{DEFAULT_BUFFER_BYTES // 1_000_000}MB", show_default=True,
              help="What one lossless queue may fill; PAUSE at this less the headroom.")
@click.option("--duration", "duration_text", type=Text(), default="200ms", show_default=True,
              metavar="DURATION",
              help="How long the flows send together after starting at line rate (us, ms "
                   "or s): the time simulated.")
@click.option("--flow-sizes", "sizes_text", type=Text(), metavar="SIZE[,SIZE...]",
              default=",".join(f"{s // 1_000_000}MB" for s in DEFAULT_FLOW_SIZES),
              show_default=True, help="Sizes whose completion-time slowdown is reported.")
@click.option("--sweep", "sweep_text", type=Text(), metavar="NAME=LOW..HIGH[/N]|NAME=V,V",
              help="Vary distance, flows, kmin, kmax or pmax; one row per value.")
@click.option("--recommend", "recommend_mode", type=click.Choice(("switch", "ecn")),
              default=None, is_flag=False, flag_value="switch",
              help="Find the ECN thresholds that give the most utilisation without PAUSE "
                   "for this feedback (switch CNP by default) and write them as a WANT file.")
@click.option("--file", "want_out", type=OutputFile(), metavar="WANT.yaml",
              help="With --recommend: write the WANT file here (else to standard output).")
@click.option("--step", "step_text", type=Text(), metavar="DURATION",
              help=f"The solver's step (default {DEFAULT_STEP_SECONDS * 1e6:g}us).")
@output_option
@click.option("--csv", "csv_path", type=OutputFile(), metavar="FILE",
              help="Also write one CSV line per scenario and feedback mode.")
@click.option("--png", "png_path", type=OutputFile(), metavar="FILE",
              help="Also plot utilisation and the gain (against the swept value).")
def cc(distance: str | None, speed: str | None, flows: int, bottleneck: str,
       want_file: Path | None, port: str | None, nic_params: tuple[str, ...],
       fast_cnp_interval: str | None, buffer_text: str, duration_text: str, sizes_text: str,
       sweep_text: str | None, recommend_mode: str | None, want_out: Path | None,
       step_text: str | None, output: str, csv_path: Path | None,
       png_path: Path | None) -> None:
    """Model DCQCN on a long link: end-to-end ECN against switch-generated CNPs.

    A fluid model (DCQCN with delayed feedback, RED/ECN marking, PFC with the pause's
    own propagation delay) of --flows flows through one bottleneck before or after a
    span of --distance. Reports utilisation, queue depth, PFC pauses, CNPs and flow
    completion slowdown for both feedback modes, and the gain of switch CNP. The model
    is a sensitivity analysis calibrated on one published result, not a prediction.
    """
    # the solver's side loads numpy: only when the command runs, not for `design cost`
    from msoctl.design.cc.report import (
        COMPARISON_HEADERS,
        SWEEP_HEADERS,
        SWEEP_WIDE_ONLY,
        comparison_document,
        comparison_rows,
        describe,
        sweep_rows,
        write_csv,
        write_png,
    )
    from msoctl.design.cc.study import compare_all, swept

    if recommend_mode is not None and sweep_text is not None:
        raise click.UsageError("--recommend and --sweep exclude each other")
    if want_out is not None and recommend_mode is None:
        raise click.UsageError("--file goes with --recommend")
    base, replan = _scenario(distance, speed, flows, bottleneck, want_file, port, nic_params,
                             fast_cnp_interval, buffer_text, duration_text)
    dt = DEFAULT_STEP_SECONDS if step_text is None else parse_duration(step_text)
    if not dt <= 1e-4:
        raise ValidationError(f"--step {step_text}: at most 100us")
    sizes = parse_sizes(sizes_text)
    if recommend_mode is not None:
        _recommend(base, recommend_mode, dt, output, want_out)
        return
    parameter = None
    scenarios = [base]
    if sweep_text is not None:
        parameter, values = parse_sweep(sweep_text)
        scenarios = swept(base, parameter, values, replan=replan)
    comparisons = compare_all(scenarios, dt=dt, flow_sizes=sizes)
    if csv_path is not None:
        write_csv(csv_path, parameter, comparisons)
    if png_path is not None:
        write_png(png_path, parameter, comparisons)
    if output in DOCUMENTS:
        emit({"swept": parameter, "step_seconds": dt,
              "comparisons": [comparison_document(c) for c in comparisons]}, output)
        return
    click.echo(describe(base))
    if parameter is None:
        click.echo(table(COMPARISON_HEADERS, comparison_rows(comparisons[0])))
    else:
        click.echo(table([parameter, *SWEEP_HEADERS[1:]], sweep_rows(parameter, comparisons),
                         wide_only=SWEEP_WIDE_ONLY))
    for kind, path in (("csv", csv_path), ("png", png_path)):
        if path is not None:
            click.echo(f"{kind}: {path}")


def _scenario(distance: str | None, speed: str | None, flows: int, bottleneck: str,
              want_file: Path | None, port: str | None, nic_params: tuple[str, ...],
              fast_cnp_interval: str | None, buffer_text: str,
              duration_text: str) -> tuple[Scenario, bool]:
    """The scenario the options describe, and whether its switch was planned here."""
    if port is not None and want_file is None:
        raise click.UsageError("--port goes with --want")
    buffer = parse_size(buffer_text)
    interval = None if fast_cnp_interval is None else parse_duration(fast_cnp_interval)
    wanted = None
    if want_file is not None:
        found = load_want(want_file)
        if not isinstance(found, Intent):
            found = from_legacy(found)
        wanted = from_want(found, want_file, port)
    distance_m = (parse_distance(distance) if distance is not None
                  else wanted.distance_m if wanted is not None else None)
    if distance_m is None:
        raise ValidationError("give --distance (like 30km), or a WANT file with a cable "
                              "length")
    speed_text = speed or (wanted.speed if wanted is not None else None) or "400G"
    speed_bps = parse_speed(speed_text)
    if wanted is None:
        switch = planned_switch(distance_m, speed_bps, buffer_bytes=buffer,
                                fast_cnp_interval_seconds=interval)
    else:
        switch = dataclasses.replace(wanted.switch, buffer_bytes=buffer)
        if interval is not None:
            switch = dataclasses.replace(switch, fast_cnp_interval_seconds=interval)
    scenario = Scenario(distance_m=distance_m, speed_bps=speed_bps,
                        classes=(FlowClass(flows),), switch=switch,
                        nic=nic(parse_overrides(nic_params)), bottleneck=bottleneck,
                        duration_seconds=parse_duration(duration_text))
    scenario.check()
    return scenario, wanted is None


def _recommend(base: Scenario, mode: str, dt: float, output: str,
               want_out: Path | None) -> None:
    from msoctl.design.cc.report import describe, scenario_document
    from msoctl.design.cc.study import recommend

    found = recommend(base, mode, dt=dt)
    switch = found.scenario.switch
    speed = next(name for name, bps in SPEEDS_BPS.items() if bps == base.speed_bps)
    plan = derive([PortLink("Ethernet1", f"{base.distance_m:g}m", speed)],
                  fast_cnp=mode == "switch")
    intent = from_legacy(plan.config)
    port = intent.ports["Ethernet1"]
    thresholds = Thresholds(min_bytes=switch.ecn_min_bytes, max_bytes=switch.ecn_max_bytes,
                            probability_percent=max(1, round(switch.ecn_max_probability * 100)))
    queues = {queue_id: dataclasses.replace(queue, ecn=thresholds, wred=None)
              for queue_id, queue in port.queues.items()}
    intent = dataclasses.replace(intent, ports={"Ethernet1": dataclasses.replace(
        port, queues=queues)})
    document = to_dict(intent)
    if output in DOCUMENTS:
        emit({"mode": mode, "scenario": scenario_document(found.scenario),
              "metrics": found.metrics.as_dict(), "candidates": found.candidates,
              "refused": found.refused, "want": document}, output)
        return
    say_comment(f"msoctl design cc --recommend ({mode}): {describe(found.scenario)}")
    say_comment(f"utilisation {found.metrics.utilisation:.1%}, queue p99 "
                f"{found.metrics.queue_p99_bytes / 1e6:.2f} MB, no PAUSE; "
                f"{found.candidates} candidates, {found.refused} paused or lost")
    echo_or_write(yaml.safe_dump(document, sort_keys=False), want_out)

