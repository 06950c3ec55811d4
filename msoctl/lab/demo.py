"""``msoctl demo``: start the emulated lab in-process and walk through msoctl as an operator would.

Every step is a real ``msoctl`` command line run against real protocol servers; the
lab only steps in to do what an operator cannot from a keyboard: cut a fiber, start an
incast. The exporter and the protection controller run in this process too, as they
would beside it in a real deployment. The command lines run in this process as well,
through the ``msoctl`` group the demo is given (the demo is one of its commands, so it
is handed the group rather than importing it).
"""

from __future__ import annotations

import io
import os
import shlex
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from pathlib import Path

import click
import yaml

from emulators.faults import Fault
from emulators.lab import JOURNAL_FILE, Lab
from msoctl.cli.exits import invoke

MAP_A = """\
# ocs-a: two local loopbacks of sw-a, for a link test
connections:
  - "3:67"    # sw-a Ethernet3 tx -> sw-a Ethernet3 rx
  - "4:68"    # sw-a Ethernet4 tx -> sw-a Ethernet4 rx
"""

BAD_MAP = """\
# two ingress ports onto one egress port: the switch cannot do this
connections:
  - "5:70"
  - "6:70"
"""

INTENT = """\
# The fabric as it should be: link-1 (sw-a Ethernet1 <-> sw-b Ethernet1)
# up on its working span, and the span's amplifier at 18 dB of gain.
links:
  link-1: {span: working}
amplifiers:
  amp-1: {mode: gain, gain_db: 18}
"""

WIDTH = 80  # every line the demo prints fits a terminal of this width

SHOWN_METRICS = ("msoctl_up", "msoctl_probe_duration_seconds", "msoctl_amp_input_power_dbm",
                 "msoctl_amp_output_power_dbm", "msoctl_amp_gain_db", "msoctl_amp_als_state")


def _say(text: str) -> None:
    click.echo()
    click.secho(textwrap.fill(text, WIDTH - 2), fg="cyan", bold=True)


def _shown(line: str) -> str:
    """A command line as a shell takes it, within :data:`WIDTH` columns: continued with
    a backslash before an option (with its value) that would not fit."""
    units: list[str] = []
    for word in shlex.split(line):
        if units and units[-1].startswith("-") and " " not in units[-1] \
                and not word.startswith("-"):
            units[-1] += " " + word  # an option and its value stay together
        else:
            units.append(word)
    lines = ["$ msoctl"]
    for unit in units:
        if len(lines[-1]) + 1 + len(unit) + 2 > WIDTH and unit.startswith("-"):
            lines[-1] += " \\"
            lines.append("    " + unit)
        else:
            lines[-1] += " " + unit
    return "\n".join(lines)


def _fold(line: str, width: int = WIDTH) -> list[str]:
    """``line`` within ``width`` columns, continued indented: broken between words, and
    a word too long for a line (a YANG path) after a ``/`` or at the width."""
    room = width - 2
    words: list[str] = []
    for word in line.split(" "):
        while len(word) > room:
            cut = word.rfind("/", 1, room) if "/" in word[1:room] else room
            words.append(word[:cut])
            word = word[cut:]
        words.append(word)
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 1 + len(word) > width:
            lines.append("  " + word)
        else:
            lines[-1] += " " + word
    return lines


class _Folded(io.TextIOBase):
    """Lines written to it go to stdout folded within :data:`WIDTH` columns (the demo
    shows a step's error line in full, where a terminal would)."""

    def __init__(self) -> None:
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            sys.stdout.write("\n".join(_fold(line)) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.write("\n")
        sys.stdout.flush()


def _run(msoctl: click.Group, line: str, *, expect: int = 0) -> int:
    """``msoctl LINE``, run in this process by ``msoctl``; its exit code, which must be
    ``expect``. What the step writes on stderr (its ``error:`` line) is printed in place,
    under the command line and before what follows, as a terminal would show it."""
    click.secho(_shown(line), bold=True)
    sys.stdout.flush()
    errors = _Folded()
    with redirect_stderr(errors):
        code = invoke(msoctl, shlex.split(line))
    errors.flush()
    if code != expect:
        raise click.ClickException(f"demo step failed: 'msoctl {line}' exited {code}, "
                                   f"expected {expect}")
    if code:
        click.echo(f"(exit code {code}, as expected)")
    return code


@contextmanager
def _working_in(directory: Path) -> Iterator[None]:
    """The demo's steps run in ``directory``, so their command lines name its files
    short; the previous working directory comes back after."""
    previous = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)


@contextmanager
def _exporter(inventory: Path) -> Iterator[str]:
    """``msoctl exporter`` on a free loopback port, in a thread; its URL."""
    import threading

    from msoctl.exporter.probe import Prober
    from msoctl.exporter.server import ExporterServer

    prober = Prober(inventory)
    server = ExporterServer(("127.0.0.1", 0), prober, None)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        prober.close()


def _show_probe(url: str, target: str) -> None:
    click.secho(f"$ curl '{url}/probe?target={target}'   # a few of the series", bold=True)
    with urllib.request.urlopen(f"{url}/probe?target={target}", timeout=20) as reply:
        body = reply.read().decode()
    lines = [line for line in body.splitlines()
             if line.startswith(SHOWN_METRICS) and not line.startswith("#")]
    click.echo("\n".join(lines[:12]))
    click.echo(f"... {sum(1 for line in body.splitlines() if not line.startswith('#'))} "
               "series in all")


def _protection(msoctl: click.Group, fabric: Lab) -> None:
    from msoctl.inventory import load_inventory
    from msoctl.journal import Journal
    from msoctl.protect.config import ProtectConfig
    from msoctl.protect.controller import ProtectionController

    inventory = load_inventory(fabric.state_dir / "inventory.yaml")
    journal = Journal(inventory.journal or fabric.state_dir / JOURNAL_FILE)
    controller = ProtectionController(
        inventory, journal, config=ProtectConfig(wait_to_restore_seconds=600.0))
    _say("Protection: the controller (what 'msoctl protect run' runs) watches link-1's "
         "spans through the OCSes' loss-of-light alarms (polling their power monitors "
         "where a unit has none), and parks idle light from sw-a/sw-b port 8 on the "
         "protection span so that span is known to be good before anything is moved "
         "onto it.")
    with controller.background():
        if not controller.wait_ready(15.0):
            unsteady = controller.amplifiers_steady()
            raise click.ClickException(
                "demo step failed: the protection controller was not ready within 15 s "
                "(both spans lit, every amplifier steady"
                + (f"; not steady: {unsteady}" if unsteady else "") + ")")
        # The protection span was dark until the controller parked its probe light, so
        # ALS had shut its amplifier; ready includes the restart's pulse being over (a
        # cut during it would measure the amplifier settling, not the switch).
        restarted = sorted({e.details["amplifier"] for e in list(controller.events)
                            if e.kind == "als_restart"})
        if restarted:
            _say(f"(at start the controller restarted {', '.join(restarted)}, which ALS had "
                 "shut while its span was dark, and waited until it was steady)")
        _run(msoctl, "protect status")
        _say("Cut the span-1 cable (a lab fault). Both directions of link-1 go dark; the "
             "controller moves the cross-connects at both ends onto span-2 in one command "
             "per OCS and checks that light arrives.")
        cut = time.monotonic()
        fabric.inject("span-1", Fault("fiber_cut"))
        switched = None
        while time.monotonic() - cut < 10 and switched is None:
            switched = next((e for e in list(controller.events)
                             if e.kind == "switch" and e.at >= cut), None)
            time.sleep(0.005)
        if switched is None:
            raise click.ClickException("demo step failed: no protection switch within 10 s")
        # Light is back when the controller verified it at the far ends (its event is told
        # once the switch's result is journaled, a few ms to tens of ms later).
        detected_ms = (switched.details["detected"] - cut) * 1000
        total = switched.durations_ms.get("total")
        click.secho(textwrap.fill(f"recovered: {switched.message}", WIDTH,
                                  subsequent_indent="  "), fg="green")
        if total is not None:
            click.secho(f"light back {detected_ms + total:.1f} ms after the cut was injected "
                        f"(the loss seen {detected_ms:.1f} ms after it)", fg="green")
        _say("(measured here with the lab, the controller and these commands in one "
             "Python process, which share its interpreter: 'protect run' against 'lab up', "
             "as bench/protection.py measures it, answers a cut within the OCS's switching "
             "time and some 50 ms)")
        time.sleep(0.5)  # amp-2's gain loop settles on link-1's light in place of the probe's
        _run(msoctl, "protect status")
        _run(msoctl, "path show link-1")
    fabric.clear("span-1")


def run_demo(msoctl: click.Group, state_dir: Path | None = None) -> int:
    """Run the walkthrough; each step's command line is run by ``msoctl`` (the root group).
    Keeps the lab's files in ``state_dir`` (default: a temporary directory); 0 when every
    step ended as it should, else :class:`click.ClickException` names the step."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="msoctl-demo-") as scratch:
        root = Path(state_dir or scratch).resolve()
        root.mkdir(parents=True, exist_ok=True)
        for stale in (JOURNAL_FILE, f"{JOURNAL_FILE}-wal", f"{JOURNAL_FILE}-shm",
                      "ocs-a.nvram.json", "ocs-b.nvram.json",
                      "ocs-lab.nvram.json"):
            (root / stale).unlink(missing_ok=True)
        _say("Starting the emulated lab: two campuses 30 km apart, a 64x64 LC optical "
             "circuit switch in each, a deep-buffer switch in each (NETCONF over SSH, "
             "co-packaged optics telemetry over SNMPv3) with its transceivers patched in, "
             "two 30 km spans, each with a pluggable EDFA managed over CMIS on I2C, and "
             "four GPU servers publishing their state as fleets' exporters do.")
        with Lab(root) as fabric, _working_in(root):
            inventory = root / "inventory.yaml"
            os.environ["MSOCTL_INVENTORY"] = str(inventory)
            os.environ.pop("MSOCTL_JOURNAL", None)
            (root / "map-a.yaml").write_text(MAP_A)
            (root / "bad-map.yaml").write_text(BAD_MAP)
            (root / "intent.yaml").write_text(INTENT)

            _say("The lab wrote an inventory; msoctl reads it through MSOCTL_INVENTORY. "
                 "Besides the devices it names the spans and the fabric link link-1. (The "
                 f"steps run in {root}, where the files they name are.)")
            _run(msoctl, "inventory show")

            _say("Each OCS: identity over SCPI, the LC engine's cell temperature and last "
                 "switching time, and its (empty) map.")
            _run(msoctl, "ocs status ocs-a")
            _say("A map file for ocs-a. First the diff, with nothing sent; then for real: "
                 "one bulk command, *OPC?, the error queue, a read-back of the map, and a "
                 "check that light leaves every lit path.")
            click.echo(MAP_A)
            _run(msoctl, "ocs apply ocs-a map-a.yaml --dry-run")
            _run(msoctl, "ocs apply ocs-a map-a.yaml")
            _say("A map that feeds two ingress ports into one egress port is refused before "
                 "anything is sent (exit 2), and the refusal is journaled.")
            _run(msoctl, "ocs apply ocs-a bad-map.yaml", expect=2)

            _say("The whole fabric from one intent file: link-1 up on its working span and "
                 "amp-1's gain. The plan is one diff across devices:")
            click.echo(INTENT)
            _run(msoctl, "fabric plan intent.yaml")
            _say("Applied in a safe order: the cross-connects at both ends, the gain ramped, "
                 "amp-1's automatic laser shutdown (ALS, closed while the span was dark) "
                 "restarted once light reaches it, and light verified end to end.")
            _run(msoctl, "fabric apply intent.yaml")
            _say("Every hop of link-1, both ways: the power the link budget expects against "
                 "the power the OCS monitors, the amplifier and the switches' optics "
                 "measure.")
            _run(msoctl, "path show link-1")

            _say("The amplifier: module state, powers, gain, pumps, ALS. A gain change is "
                 "ramped in 0.5 dB steps so the receivers see no transient; a gain outside "
                 "the module's range is refused before anything is sent (exit 2), and so is "
                 "disabling ALS without the explicit override (exit 3).")
            _run(msoctl, "amp status amp-1")
            _run(msoctl, "amp set amp-1 --gain 17")
            _run(msoctl, "amp set amp-1 --gain 30", expect=2)
            _run(msoctl, "amp als amp-1 --mode disabled", expect=3)

            _say("The switches at each end carry RoCEv2 over the 30 km link. PFC must hold "
                 "what is still on the fiber when a pause goes out: the headroom, term by "
                 "term, for one 400G port:")
            _run(msoctl, "switch headroom --distance 30.01km --speed 400G")
            _say("Derive the wanted congestion control for the long-haul ports: PFC "
                 "headroom, ECN thresholds from the bandwidth-delay product, switch-generated "
                 "CNPs; the chip's lossless pool is read from sw-a over NETCONF.")
            want = Path("want-cc.yaml")
            _run(msoctl, "switch plan --port Ethernet1=30.01km@400G --port Ethernet2=30.01km@400G "
                 f"--device sw-a --file {want}")
            _say("What it would change on sw-a: validated by the switch in its candidate "
                 "datastore, diffed against running, then discarded.")
            _run(msoctl, f"switch cc plan sw-a --file {want}")
            _say("Apply it to both switches at once, all or nothing: a confirmed commit on "
                 "each, read back over a new SSH session, then confirmed; had either failed, "
                 "both would have been cancelled.")
            _run(msoctl, f"switch cc apply sw-a sw-b --file {want} --all-or-nothing")
            _say("An incast on sw-a's Ethernet1 (a lab fault: 4 senders into one queue for "
                 "50 ms). The queue marks ECN and the switch sends CNPs back to the senders "
                 "itself, half a round trip sooner than the receivers could: the senders slow "
                 "down before the queue reaches the PFC pause point. No pause, no drop.")
            fabric.inject("sw-a", Fault("congestion", target="Ethernet1"))
            time.sleep(0.1)
            _run(msoctl, "switch counters sw-a --port Ethernet1")
            _say("A headroom resume level above its pause level breaks a rule of the YANG "
                 "module; the switch refuses it with its error-app-tag and path, and "
                 "running stays as it was.")
            bad = yaml.safe_load(want.read_text())
            first = next(iter(bad["congestion_control"]["ports"].values()))
            first["xon_bytes"] = 30_000_000
            (root / "bad-cc.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
            _run(msoctl, "switch cc apply sw-a --file bad-cc.yaml", expect=1)
            _say("The same WANT on the switches people own: sw-c speaks OpenConfig QoS over "
                 "gNMI (with Arista's published PFC augments), sw-d SONiC's CONFIG_DB over "
                 "gNMI. The plan is in each switch's own paths; a SONiC switch has no table "
                 "for switch-generated CNPs, and says so before anything is sent.")
            _run(msoctl, f"switch cc apply sw-c --file {want}")
            _run(msoctl, "switch cc show sw-c --port Ethernet1")
            _run(msoctl, f"switch cc plan sw-d --file {want}", expect=2)

            _say("Co-packaged optics over SNMPv3 (SHA-256, AES-128): the optical engines, "
                 "the external laser sources and one port's lanes, whose receive power is "
                 "link-1's light from 30 km away.")
            _run(msoctl, "telemetry cpo sw-b --port Ethernet1")
            _say("Co-packaged copper: SNR, pre-FEC BER and the RS(544,514) FEC counters of "
                 "one port, read twice a second apart for rates, CER and FLR.")
            _run(msoctl, "telemetry cpc sw-b --port Ethernet1 --interval 1")

            _say("The Prometheus exporter: one /probe per device, as Prometheus scrapes it "
                 "with deploy/prometheus.yml (alert rules and a Grafana dashboard beside it).")
            with _exporter(inventory) as url:
                _show_probe(url, "amp-1")

            _protection(msoctl, fabric)

            _say("GPU servers on the fabric: four, of two vendors, two on each campus, "
                 "their state read from the exporters fleets run (NVIDIA's dcgm-exporter, "
                 "AMD's device-metrics-exporter, node_exporter for their NICs).")
            _run(msoctl, "host list")
            _say("A job of 16 GPUs: placed on healthy GPUs, its ranks ordered so that a ring "
                 "over them crosses the span and changes vendor only twice, and the files "
                 "its launcher and NCCL/FlagCX read written to job-llm-1/ (the FlagCX route "
                 "file from the fabric as it is, the NCCL environment with the lossless "
                 "priority its switch ports keep).")
            _run(msoctl, "job plan --gpus 16 --name llm-1 --out job-llm-1")
            _say("Its state: every part of the fabric its traffic crosses, its servers, the "
                 "links between them traced end to end, and its switch ports' PFC, ECN and "
                 "drop rates and optics. Degraded: link-1 has run on span-2 since the cut "
                 "(no fallback left), and amp-2, at its factory 20 dB on a span that loses "
                 "about 11, overloads sw-b's receivers.")
            _run(msoctl, "job status llm-1")
            _say("Set amp-2's gain to the span's loss: the change's impact names the job "
                 "whose link it disturbs, and the receivers come back within range.")
            _run(msoctl, "amp set amp-2 --gain 11")
            _run(msoctl, "job status llm-1 --interval 0")
            _run(msoctl, "job end llm-1")

            _say("The journal: every change, its intent before it was sent and its result, "
                 "who made it and how it ended. The table fits 80 columns; -o wide shows "
                 "each change and outcome whole, -o yaml (or json) every record, the "
                 "protection switch's timeline among them.")
            _run(msoctl, "history --kind protection -n 6")
            _run(msoctl, "history -n 12")
    click.echo()
    click.secho(f"demo finished in {time.monotonic() - started:.1f} s", fg="green", bold=True)
    return 0
