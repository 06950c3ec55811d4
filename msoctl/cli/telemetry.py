"""``msoctl telemetry``: a switch's port optics from any surface it serves, and the
co-packaged optics (CPO) and copper (CPC) over the project's MIBs.

``telemetry optics D`` reads port optics from the most standard surface the switch
serves (gNMI: OpenConfig or SONiC; SNMP: ENTITY-SENSOR-MIB, a vendor DOM MIB, or
MSO-CPO-MIB); its JSON is :func:`optics_document`'s. The two below read the project's
MIBs:

Both commands read the switch's agent as its inventory ``snmp:`` section says
(SNMPv3 USM, SHA-256/AES-128 by default), within one time budget per reading
(``--budget``). JSON (``-o json``):

- ``telemetry cpo D``: ``device``, ``uptime_seconds``, ``engines``, ``lasers`` and
  ``lanes`` (optical lanes), each a list of objects whose keys are the fields of
  :mod:`drivers.snmp.telemetry` (``temperature_celsius``, ``output_power_dbm``...);
- ``telemetry cpc D [--interval S]``: ``device``, ``uptime_seconds``,
  ``fec_degrade_threshold_ber``, ``interval_seconds`` and ``lanes``: objects with
  ``port``, ``port_name``, ``port_speed_mbps`` (ifHighSpeed), ``lane``, ``snr_db``,
  ``pre_fec_ber``, ``fec_corrected_total``, ``fec_uncorrectable_total``, ``insertion_loss_db``,
  ``eye_height_mv``, ``eye_width_ui``, ``fec_histogram_total`` (bins S0..S16) and,
  with ``--interval``, over the interval: ``fec_corrected_per_second``,
  ``fec_uncorrectable_per_second``, ``codewords``, ``fec_histogram`` (ΔS0..ΔS16),
  ``counted_seconds``, ``codeword_error_ratio``, ``frame_loss_ratio``, ``interleave``
  (the FEC's codewords per frame at the port's speed, which FLR follows), ``cer_basis``
  and ``no_rates_reason`` (why a lane has no rates: an agent restart, a lane reset,
  counters that did not move).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import click

from drivers.errors import ValidationError
from drivers.optics.readings import OpticsReading
from drivers.snmp.collector import DEFAULT_BUDGET_SECONDS, TelemetryCollector
from drivers.snmp.rates import LaneInterval, lane_intervals
from drivers.snmp.session import SnmpTarget, run
from drivers.snmp.telemetry import CollectionInfo, CpcTelemetry, CpoTelemetry
from msoctl.cli.context import Context, pass_context
from msoctl.cli.output import DOCUMENTS, cell, emit, output_option, say, table, watch_option, wrap
from msoctl.cli.types import SNMP_SWITCH, SWITCH, TEXT, Number
from msoctl.inventory import TELEMETRY_SURFACES
from msoctl.ops.optics import read_optics

DARK_DBM = -100.0  # MsoPowerDbm's floor: the receiver sees no light

budget_option = click.option(
    "--budget", type=Number(0.1, 300.0), default=DEFAULT_BUDGET_SECONDS,
    show_default=True, metavar="SECONDS",
    help="Time allowed for the whole reading (each request also has the inventory's "
         "timeout and retries).")


port_option = click.option(
    "--port", "ports", multiple=True, metavar="NAME", type=TEXT,
    help="Only this port's lanes (its name, like Ethernet1, or its ifIndex); repeatable.")


def _only_ports(lanes: tuple[Any, ...], ports: tuple[str, ...], device: str
                ) -> tuple[Any, ...]:
    """The lanes (or port optics: anything with ``port`` and ``port_name``) of the named
    ports (all when none is named); a name that matches none is refused, so a typo never
    prints an empty table."""
    if not ports:
        return lanes
    names = {str(lane.port) for lane in lanes} | {lane.port_name for lane in lanes
                                                 if lane.port_name}
    unknown = [port for port in ports if port not in names]
    if unknown:
        raise ValidationError(f"{device} has no port {', '.join(unknown)}")
    return tuple(lane for lane in lanes if lane.port_name in ports or str(lane.port) in ports)


@click.group()
def telemetry() -> None:
    """Switch telemetry: port optics from any surface (optics), co-packaged optics (cpo)
    and copper (cpc) over SNMP."""


@telemetry.command()
@watch_option
@click.argument("device", type=SNMP_SWITCH)
@port_option
@budget_option
@output_option
@pass_context
def cpo(ctx: Context, device: str, ports: tuple[str, ...], budget: float,
        output: str) -> None:
    """Optical engines, external lasers and optical lanes of switch DEVICE."""
    target = ctx.devices.snmp_target(device)
    reading = run(TelemetryCollector(target, budget_seconds=budget).cpo())
    reading = replace(reading, lanes=_only_ports(reading.lanes, ports, device))
    if output in DOCUMENTS:
        emit(reading.as_dict(), output)
        return
    _print_cpo(reading)


@telemetry.command()
@watch_option
@click.argument("device", type=SWITCH)
@click.option("--surface", type=click.Choice(TELEMETRY_SURFACES),
              help="Read this surface (default: the inventory's telemetry:, else the most "
                   "standard one the switch serves).")
@port_option
@budget_option
@output_option
@pass_context
def optics(ctx: Context, device: str, surface: str | None, ports: tuple[str, ...],
           budget: float, output: str) -> None:
    """Port optics of switch DEVICE: each lane's transmit and receive power and bias,
    each port's temperature, supply voltage and thresholds.

    Read from the most standard surface the switch serves: over gNMI, OpenConfig's
    platform-transceiver paths or SONiC's STATE_DB; over SNMP, ENTITY-SENSOR-MIB, a
    vendor DOM MIB (H3C, Juniper, Huawei), else MSO-CPO-MIB. The SOURCE column says
    which.
    """
    entry = ctx.devices.inventory.device(device, "switch")
    reading = read_optics(ctx.devices, entry, surface, budget)
    reading = replace(reading, ports=_only_ports(reading.ports, ports, device))
    if output in DOCUMENTS:
        emit(optics_document(reading), output)
        return
    _print_optics(reading)


def optics_document(reading: OpticsReading) -> dict[str, Any]:
    """``-o json`` of ``telemetry optics``: ``device``, ``source``, ``dropped`` (reason ->
    count), ``ports`` (``port``, ``port_name``, ``temperature_celsius``,
    ``supply_voltage_volts``, ``thresholds`` {quantity: {level: value}}, ``lanes``
    [``lane``, ``tx_power_dbm``, ``rx_power_dbm``, ``tx_bias_ma``]), ``fec`` and
    ``lasers`` where the surface has them."""
    return {"device": reading.device, "source": reading.source,
            "age_seconds": reading.age_seconds, "dropped": dict(reading.dropped),
            "ports": [{"port": port.port, "port_name": port.port_name,
                       "temperature_celsius": port.temperature_celsius,
                       "supply_voltage_volts": port.supply_voltage_volts,
                       "thresholds": {quantity: levels.levels() for quantity, levels
                                      in sorted(port.thresholds.items())},
                       "lanes": [asdict(lane) for lane in port.lanes]}
                      for port in reading.ports],
            "fec": [asdict(port) for port in reading.fec],
            "lasers": [asdict(laser) for laser in reading.lasers]}


def _print_optics(reading: OpticsReading) -> None:
    say(f"{reading.device}: port optics from {reading.source}")
    rows = []
    for port in reading.ports:
        for lane in port.lanes:
            first = lane is port.lanes[0]
            rows.append([port.port_name or port.port, lane.lane,
                         _power(lane.tx_power_dbm), _power(lane.rx_power_dbm),
                         cell(lane.tx_bias_ma), cell(port.temperature_celsius) if first else "",
                         cell(port.supply_voltage_volts, 3) if first else ""])
    click.echo(table(["PORT", "LANE", "TX DBM", "RX DBM", "BIAS MA", "TEMP C", "VOLTS"], rows))
    limits = []
    for port in reading.ports:
        for quantity, levels in sorted(port.thresholds.items()):
            found = levels.levels()
            limits.append([port.port_name or port.port, quantity,
                           *(cell(found.get(level)) for level in
                             ("low_alarm", "low_warning", "high_warning", "high_alarm"))])
    if limits:
        say("")
        click.echo(table(["PORT", "QUANTITY", "LOW ALARM", "LOW WARN", "HIGH WARN",
                          "HIGH ALARM"], limits))
    if reading.dropped:
        say("")
        say("dropped: " + ", ".join(f"{reason} {count}"
                                    for reason, count in sorted(reading.dropped.items())))


@telemetry.command()
@watch_option
@click.argument("device", type=SNMP_SWITCH)
@click.option("--interval", type=Number(0.1, 3600.0), metavar="SECONDS",
              help="Read twice, SECONDS apart, and show FEC rates, CER and FLR over the "
                   "interval.")
@port_option
@budget_option
@output_option
@pass_context
def cpc(ctx: Context, device: str, interval: float | None, ports: tuple[str, ...],
        budget: float, output: str) -> None:
    """SNR, pre-FEC BER and FEC counters of the electrical lanes of switch DEVICE.

    CER = ΔU / (ΔU + ΔC + ΔS0) from the FEC histogram (U uncorrectable, C corrected,
    S0 error-free codewords) and FLR = CER × (1 + 8X) / 8, X the FEC interleave of the
    port's speed (4 at 800G and 1.6T, 2 at 400G, else 1), as MSO-CPC-MIB defines them.
    """
    target = ctx.devices.snmp_target(device)
    first, last = run(_read_cpc(target, budget, interval))
    intervals = None if first is None else lane_intervals(first, last)
    last = replace(last, lanes=_only_ports(last.lanes, ports, device))
    if output in DOCUMENTS:
        emit(_cpc_document(last, intervals), output)
        return
    _print_cpc(last, intervals)


async def _read_cpc(target: SnmpTarget, budget: float, interval: float | None
                    ) -> tuple[CpcTelemetry | None, CpcTelemetry]:
    collector = TelemetryCollector(target, budget_seconds=budget)
    if interval is None:
        return None, await collector.cpc()
    first = await collector.cpc()
    wait = interval - (time.monotonic() - first.info.started_monotonic)
    if wait > 0:
        await asyncio.sleep(wait)
    return first, await collector.cpc()


# ---- JSON -------------------------------------------------------------------------------


def _cpc_document(reading: CpcTelemetry,
                  intervals: Sequence[LaneInterval] | None) -> dict[str, Any]:
    by_lane = {(row.port, row.lane): row for row in intervals or ()}
    lanes = []
    for lane in reading.lanes:
        entry = asdict(lane)
        entry["fec_histogram_total"] = (None if lane.fec_histogram_total is None
                                        else list(lane.fec_histogram_total))
        found = by_lane.get((lane.port, lane.lane))
        if intervals is not None:
            entry.update(_interval_fields(found))
        lanes.append(entry)
    seconds = next((row.interval_seconds for row in intervals or ()), None)
    return {"device": reading.info.device, "uptime_seconds": reading.info.uptime_seconds,
            "fec_degrade_threshold_ber": reading.fec_degrade_threshold_ber,
            "interval_seconds": seconds, "lanes": lanes}


def _interval_fields(row: LaneInterval | None) -> dict[str, Any]:
    keys = ("fec_corrected_per_second", "fec_uncorrectable_per_second", "codewords",
            "counted_seconds", "fec_histogram", "codeword_error_ratio", "frame_loss_ratio",
            "interleave", "cer_basis", "no_rates_reason")
    if row is None:
        return dict.fromkeys(keys)
    fields = {key: getattr(row, key) for key in keys}
    if row.fec_histogram is not None:
        fields["fec_histogram"] = list(row.fec_histogram)
    return fields


# ---- tables -----------------------------------------------------------------------------


def _header(info: CollectionInfo) -> str:
    uptime = "-" if info.uptime_seconds is None else _duration(info.uptime_seconds)
    return (f"{info.device}: agent up {uptime}; read in {info.duration_seconds:.2f} s, "
            f"{info.requests} requests")


def _duration(seconds: float) -> str:
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


def _power(value: float | None) -> str:
    if value is None:
        return "-"
    return "dark" if value <= DARK_DBM else f"{value:.2f}"


def _print_cpo(reading: CpoTelemetry) -> None:
    click.echo(_header(reading.info))
    say("\noptical engines")
    click.echo(table(
        ["engine", "name", "temp_c", "high_c", "supply_v", "status"],
        [[row.index, row.name, row.temperature_celsius, row.temperature_high_celsius,
          None if row.supply_voltage_volts is None else f"{row.supply_voltage_volts:.3f}",
          row.status] for row in reading.engines]))
    say("\nexternal lasers")
    click.echo(table(
        ["laser", "state", "power_dbm", "bias_ma", "voltage_v", "temp_c", "mode", "faults"],
        [[f"{row.module}/{row.lane}", row.state, _power(row.output_power_dbm),
          row.bias_current_ma,
          None if row.voltage_volts is None else f"{row.voltage_volts:.3f}",
          row.temperature_celsius, row.control_mode,
          None if row.faults is None else (",".join(row.faults) or "none")]
         for row in reading.lasers], wide_only=("mode",), cut=("faults",)))
    say("\noptical lanes")
    click.echo(table(
        ["port", "lane", "tx_dbm", "rx_dbm", "bias_ma", "engine", "laser"],
        [[row.port_name or row.port, row.lane, _power(row.tx_power_dbm),
          _power(row.rx_power_dbm), row.tx_bias_ma,
          _pair(row.engine, row.engine_lane), _pair(row.els_module, row.els_lane)]
         for row in reading.lanes]))


def _pair(first: int | None, second: int | None) -> str | None:
    return None if first is None or second is None else f"{first}/{second}"


def _ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.1e}"


def _worst_bin(histogram: Sequence[int | None] | None) -> str | None:
    """The most symbol errors any codeword had (16 stands for 16 or more: lost)."""
    if histogram is None:
        return None
    worst = max((index for index, count in enumerate(histogram) if count), default=None)
    if worst is None:
        return "-"
    return f"{worst}+" if worst == len(histogram) - 1 else str(worst)


def _print_cpc(reading: CpcTelemetry, intervals: Sequence[LaneInterval] | None) -> None:
    threshold = reading.fec_degrade_threshold_ber
    click.echo(wrap(_header(reading.info) + (
        "" if threshold is None else f"; FEC degrade at pre-FEC BER {_ratio(threshold)}")))
    headers = ["port", "lane", "snr_db", "pre_fec_ber", "corrected", "uncorrectable"]
    by_lane = {(row.port, row.lane): row for row in intervals or ()}
    if intervals is not None:
        seconds = next((row.interval_seconds for row in intervals), None)
        click.echo(wrap(f"over {cell(seconds)} s of the agent's uptime (rates over the time "
                        "the FEC counters counted)"))
        headers += ["corrected/s", "uncorr/s", "cer", "flr", "max_sym_err"]
    else:
        headers += ["max_sym_err"]
    rows = []
    gaps: dict[str, int] = {}
    for lane in reading.lanes:
        row: list[Any] = [lane.port_name or lane.port, lane.lane, lane.snr_db,
                          _ratio(lane.pre_fec_ber), lane.fec_corrected_total,
                          lane.fec_uncorrectable_total]
        if intervals is not None:
            found = by_lane.get((lane.port, lane.lane))
            row += _interval_cells(found)
            if found is not None and found.no_rates_reason:
                reason = found.no_rates_reason
                gaps[reason] = gaps.get(reason, 0) + 1
        else:
            row.append(_worst_bin(lane.fec_histogram_total))
        rows.append(row)
    # over an interval the rates tell more than the totals since the counters began
    wide_only = ("corrected", "uncorrectable", "max_sym_err") if intervals is not None else ()
    click.echo(table(headers, rows, wide_only=wide_only))
    for reason, count in gaps.items():
        say(f"no rates for {count} lane{'s' if count != 1 else ''}: {reason}")


def _interval_cells(row: LaneInterval | None) -> list[Any]:
    if row is None or row.no_rates_reason:
        return [None] * 5
    return [None if row.fec_corrected_per_second is None
            else f"{row.fec_corrected_per_second:.0f}",
            None if row.fec_uncorrectable_per_second is None
            else f"{row.fec_uncorrectable_per_second:.0f}",
            _ratio(row.codeword_error_ratio), _ratio(row.frame_loss_ratio),
            _worst_bin(row.fec_histogram)]

