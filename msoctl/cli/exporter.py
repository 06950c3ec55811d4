"""``msoctl exporter``: serve the inventory's devices to Prometheus; ``msoctl exporter
snmp-config``: snmp_exporter's configuration for the CPO/CPC tables."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from drivers.errors import ValidationError
from msoctl.cli.context import Context, pass_context
from msoctl.cli.types import Number, OutputFile, input_path
from msoctl.exporter import (
    DEFAULT_LISTEN,
    DEFAULT_MAX_READINGS,
    DEFAULT_SHARE_SECONDS,
    DEFAULT_TIMEOUT_OFFSET_SECONDS,
)
from msoctl.exporter.sessions import DEFAULT_IDLE_SECONDS, DEFAULT_MAX_SESSIONS
from msoctl.exporter.streams import DEFAULT_SAMPLE_SECONDS


@click.group(invoke_without_command=True)
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, metavar="ADDR:PORT",
              help="Address to serve on: ADDR:PORT, [V6ADDR]:PORT, or :PORT for every "
                   "IPv4 address; port 0 picks a free one (printed).")
@click.option("--tls-cert", type=input_path(dir_okay=False), metavar="FILE",
              help="Serve HTTPS with this PEM certificate (chain); needs --tls-key.")
@click.option("--tls-key", type=input_path(dir_okay=False), metavar="FILE",
              help="The certificate's PEM private key.")
@click.option("--timeout-offset", type=Number(0, 10), metavar="SECONDS",
              default=DEFAULT_TIMEOUT_OFFSET_SECONDS, show_default=True,
              help="Answer a probe this long before Prometheus's scrape timeout.")
@click.option("--share-seconds", type=Number(0, 60), metavar="SECONDS",
              default=DEFAULT_SHARE_SECONDS, show_default=True,
              help="Probes of a device share the reading in flight, and one complete at "
                   "most this long ago (keep it well under the scrape interval; 0: only "
                   "the reading in flight).")
@click.option("--max-readings", type=click.IntRange(0, 10000), metavar="N",
              default=DEFAULT_MAX_READINGS, show_default=True,
              help="Device readings taken at once, at most; a probe beyond them waits "
                   "for a turn within its budget (0: no limit).")
@click.option("--max-sessions", type=click.IntRange(0, 100000), metavar="N",
              default=DEFAULT_MAX_SESSIONS, show_default=True,
              help="OCS connections kept open between probes, at most (0: a new "
                   "connection for every probe).")
@click.option("--session-idle-seconds", type=Number(1, 86400), metavar="SECONDS",
              default=DEFAULT_IDLE_SECONDS, show_default=True,
              help="A connection kept open is closed after this long without a probe "
                   "(keep it a few scrape intervals).")
@click.option("--stream-interval", type=Number(1, 3600), metavar="SECONDS",
              default=DEFAULT_SAMPLE_SECONDS, show_default=True,
              help="gNMI switches stream their telemetry sampled this often (the scrape "
                   "interval, or less); a stream silent for three intervals is up 0.")
@pass_context
def exporter(ctx: Context, listen: str, tls_cert: Path | None, tls_key: Path | None,
             timeout_offset: float, share_seconds: float, max_readings: int,
             max_sessions: int, session_idle_seconds: float, stream_interval: float) -> None:
    """Prometheus exporter: /probe?target=NAME for a device, /jobs for the kept jobs,
    /metrics for itself.

    Runs in the foreground until SIGTERM or SIGINT, then finishes the probes in
    flight and exits 0. The inventory is read again when its file changes.
    """
    if click.get_current_context().invoked_subcommand is not None:
        return
    from msoctl.exporter import cpo
    from msoctl.exporter.jobs import JobsReader
    from msoctl.exporter.probe import Prober  # prometheus_client only for this command
    from msoctl.exporter.server import ExporterServer, parse_listen, tls_context
    from msoctl.exporter.streams import OpticsStreams

    if (tls_cert is None) != (tls_key is None):
        raise ValidationError("--tls-cert and --tls-key go together")
    address = parse_listen(listen)
    tls = None if tls_cert is None or tls_key is None else tls_context(tls_cert, tls_key)
    logging.basicConfig(level=logging.DEBUG if ctx.debug else
                        logging.INFO if ctx.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The libraries' own lines (ncclient's every RPC at INFO, paramiko's traceback of a
    # peer that never answers) stay out of the log unless --debug: a failed probe is
    # logged by the exporter itself, in one line saying why (msoctl.cli.exits).
    cpo.STREAMS = OpticsStreams(sample_seconds=stream_interval)
    prober = Prober(ctx.inventory.path, timeout_offset_seconds=timeout_offset,
                    share_seconds=share_seconds, max_readings=max_readings,
                    max_sessions=max_sessions, session_idle_seconds=session_idle_seconds)
    jobs = JobsReader(ctx.anew, share_seconds=share_seconds)
    try:
        server = ExporterServer(address, prober, tls, jobs=jobs)
    except OSError as error:
        raise ValidationError(f"cannot listen on {listen}: {error.strerror or error}") from None
    prober.warm_up()
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                               name="exporter", daemon=True)
    serving.start()
    click.echo(f"msoctl exporter listening on {server.url} "
               f"(inventory {prober.inventory_path})", err=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.shutdown()
        server.server_close()  # waits for the probes in flight
        prober.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("msoctl exporter stopped", err=True)


@exporter.command("snmp-config")
@click.option("--out", type=OutputFile(), metavar="FILE",
              help="Write snmp.yml to FILE with mode 0600, the SNMP secrets in it.")
@click.option("--show-secrets", is_flag=True,
              help="Print the SNMP secrets on stdout too (they are REDACTED otherwise).")
@pass_context
def snmp_config(ctx: Context, out: Path | None, show_secrets: bool) -> None:
    """snmp_exporter (0.21) configuration for the switches' CPO/CPC tables.

    Two modules, MSO-CPO-MIB and MSO-CPC-MIB, generated from the MIBs: the columns
    msoctl's probe exports, labels named as msoctl names them, the port's ifName as
    port, SNMPv3 from each switch's snmp section. snmp_exporter 0.21 reads secrets only
    from this file: --out writes them into a file of mode 0600; on stdout they are
    REDACTED unless --show-secrets. Pair it with deploy/prometheus-snmp.yml and
    deploy/msoctl-cpo-recording.yml, targets from `msoctl inventory sd --snmp-exporter`.
    """
    from msoctl.exporter import snmpconfig

    resolve = show_secrets or out is not None
    text = snmpconfig.render(snmpconfig.snmp_config(ctx.inventory, show_secrets=resolve),
                             show_secrets=resolve)
    if out is None:
        click.echo(text, nl=False)
        return
    snmpconfig.write_private(out, text)
    click.echo(f"{out}: snmp_exporter configuration, mode 0600 (it holds SNMP secrets)")
