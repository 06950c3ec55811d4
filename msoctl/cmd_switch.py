"""``msoctl switch``: the deep-buffer switches' long-haul congestion control."""

from __future__ import annotations

import click
import yaml

from drivers.errors import ValidationError
from msoctl.headroom import LinkParameters, compute, parse_distance, parse_speed
from msoctl.output import emit_json, output_option, table
from msoctl.switch_plan import PortLink, derive, parse_size


@click.group()
def switch() -> None:
    """Deep-buffer switches: PFC headroom, ECN, switch-generated congestion feedback."""


@switch.command()
@click.option("--distance", required=True, metavar="LENGTH", help="Cable length: 30km, 500m.")
@click.option("--speed", required=True, metavar="SPEED", help="Port speed: 100G .. 800G.")
@click.option("--mtu", type=click.IntRange(576, 16384), default=9216, show_default=True,
              help="Port and lossless MTU, bytes.")
@click.option("--cell-size", type=click.IntRange(16, 4096), default=144, show_default=True,
              help="The chip's buffer cell, bytes.")
@click.option("--small-packets", type=click.FloatRange(0, 100), default=45.0,
              show_default=True, help="Share of lossless traffic in minimum-size packets, %.")
@click.option("--pipeline-latency", type=click.IntRange(0), default=20480, show_default=True,
              help="Bytes in the pipeline after XON (the xon threshold).")
@click.option("--phy-delay", type=click.IntRange(0), default=1024, show_default=True,
              help="Bytes in the MAC/PHY after XOFF is generated.")
@click.option("--peer-response-quanta", type=click.FloatRange(min=0), default=None,
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
    if output == "json":
        emit_json(result.as_dict())
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
    click.echo(f"link: {distance} at {speed}, per lossless priority per port")
    click.echo(table(["term", "value", "how"], rows))


@switch.command()
@click.option("--port", "ports", multiple=True, required=True, metavar="NAME=LENGTH@SPEED",
              help="A port and its link, e.g. Ethernet1=30km@400G (repeat per port).")
@click.option("--lossless", default="3", show_default=True, metavar="P[,P...]",
              help="Lossless (PFC) priorities.")
@click.option("--lossless-pool", metavar="SIZE",
              help="The chip's lossless buffer pool (e.g. 64MB): a plan that needs more "
                   "headroom is refused.")
@click.option("--fast-cnp/--no-fast-cnp", default=True, show_default=True,
              help="Switch-generated CNPs on the lossless queues.")
@click.option("--cnp-priority", type=click.IntRange(0, 7), default=6, show_default=True)
@click.option("--cnp-dscp", type=click.IntRange(0, 63), default=48, show_default=True)
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml",
              show_default=True, help="The wanted configuration as YAML (a WANT file) or JSON.")
def plan(ports: tuple[str, ...], lossless: str, lossless_pool: str | None, fast_cnp: bool,
         cnp_priority: int, cnp_dscp: int, output: str) -> None:
    """Derive the wanted congestion-control configuration from the switch's links."""
    try:
        priorities = tuple(int(p) for p in lossless.split(",") if p.strip())
    except ValueError:
        raise ValidationError(f"--lossless {lossless!r}: priorities like 3 or 3,4") from None
    result = derive([PortLink.parse(p) for p in ports], lossless_priorities=priorities,
                    lossless_pool_bytes=None if lossless_pool is None
                    else parse_size(lossless_pool),
                    fast_cnp=fast_cnp, cnp_priority=cnp_priority, cnp_dscp=cnp_dscp)
    if output == "json":
        emit_json({"config": result.config,
                   "headroom_needed_bytes": result.headroom_needed_bytes,
                   "lossless_pool_bytes": result.lossless_pool_bytes,
                   "ports": {name: h.as_dict() for name, h in result.headroom.items()}})
        return
    pool = ("" if result.lossless_pool_bytes is None
            else f" of the {result.lossless_pool_bytes / 1e6:.2f} MB lossless pool")
    click.echo(f"# msoctl switch plan: {len(result.headroom)} port(s), headroom "
               f"{result.headroom_needed_bytes / 1e6:.2f} MB{pool}")
    for name, h in result.headroom.items():
        click.echo(f"# {name}: {h.distance_m / 1000:g} km, RTT {h.rtt_seconds * 1e6:.0f} us, "
                   f"BDP {h.bdp_bytes / 1e6:.2f} MB, xoff {h.xoff_bytes / 1e6:.2f} MB")
    click.echo(yaml.safe_dump(result.config, sort_keys=False), nl=False)
