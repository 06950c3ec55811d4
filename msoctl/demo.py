"""``msoctl demo``: start the emulated lab in-process and walk through msoctl as an operator would.

Every step is a real ``msoctl`` command line run against real protocol servers;
the lab only steps in to do what an operator cannot from a keyboard: cut a
fiber, pull the power.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import textwrap
import time
from pathlib import Path

import click
import yaml

from emulators.faults import Fault
from emulators.lab import Lab

MAP_A = """\
# ocs-a: sw-a transmitters onto the two 30 km spans and two local loopbacks
connections:
  - "1:121"   # sw-a tx1 -> span-1 (working)
  - "2:122"   # sw-a tx2 -> span-2 (protection)
  - "3:67"    # sw-a tx3 -> sw-a rx3 (loopback)
  - "4:68"    # sw-a tx4 -> sw-a rx4 (loopback)
"""

BAD_MAP = """\
# two ingress ports onto one egress port: the switch cannot do this
connections:
  - "5:70"
  - "6:70"
"""


def _say(text: str) -> None:
    click.echo()
    click.secho(textwrap.fill(text, 78), fg="cyan", bold=True)


def _run(line: str, *, expect: int = 0) -> int:
    from msoctl.cli import run

    click.secho(f"$ msoctl {line}", bold=True)
    code = run(shlex.split(line))
    if code != expect:
        raise click.ClickException(f"demo step failed: 'msoctl {line}' exited {code}, "
                                   f"expected {expect}")
    if code:
        click.echo(f"(exit code {code}, as expected)")
    return code


def run_demo(state_dir: Path | None = None) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="msoctl-demo-") as scratch:
        root = Path(state_dir or scratch)
        root.mkdir(parents=True, exist_ok=True)
        for stale in ("journal.jsonl", "ocs-a.nvram.json", "ocs-b.nvram.json"):
            (root / stale).unlink(missing_ok=True)
        _say("Starting the emulated lab: two campuses 30 km apart, a 64x64 LC optical "
             "circuit switch in each, a deep-buffer switch in each (NETCONF over SSH) with "
             "its transceivers patched in, two 30 km spans, each with a pluggable EDFA "
             "managed over CMIS on I2C.")
        with Lab(root) as fabric:
            inventory = root / "inventory.yaml"
            os.environ["MSOCTL_INVENTORY"] = str(inventory)
            os.environ.pop("MSOCTL_JOURNAL", None)
            (root / "map-a.yaml").write_text(MAP_A)
            (root / "bad-map.yaml").write_text(BAD_MAP)

            _say("The lab wrote an inventory; msoctl reads it through MSOCTL_INVENTORY.")
            _run("inventory show")

            _say("Each OCS: identity over SCPI, the LC engine's cell temperature and last "
                 "switching time, and its (empty) map.")
            _run("ocs status ocs-a")

            _say("A map file for ocs-a. First the diff, with nothing sent:")
            click.echo(MAP_A)
            _run(f"ocs apply ocs-a {root / 'map-a.yaml'} --dry-run")

            _say("Apply it: one bulk command, then *OPC?, the error queue, a read-back of "
                 "the map, and a check that light leaves every lit path.")
            _run(f"ocs apply ocs-a {root / 'map-a.yaml'}")

            _say("At campus B, connect the spans' far ends to sw-b's receivers.")
            _run("ocs connect ocs-b 61:65 62:66")

            _say("The spans were dark when the lab started, so each amplifier's automatic "
                 "laser shutdown (ALS) switched its output off. With light on the spans now, "
                 "ask both for a restart; a restart pulse finds the light and the gain "
                 "control loop brings the output back.")
            _run("amp restart amp-1")
            _run("amp restart amp-2")
            time.sleep(0.3)
            _run("amp status amp-1")

            _say("Light that left sw-a arrives at campus B after 30 km of fiber and amp-1/amp-2 "
                 "(ports 61, 62 in; 65, 66 out towards sw-b):")
            _run("ocs power ocs-b 61 62 65 66")

            _say("Lower amp-1's gain by 3 dB: msoctl ramps it in 0.5 dB steps so receivers "
                 "downstream see no transient, and reads every step back.")
            _run("amp set amp-1 --gain 17")
            _say("A gain outside the module's advertised range is refused before anything is "
                 "sent (exit 2), and so is disabling ALS without the explicit override "
                 "(exit 3). Both refusals are journaled.")
            _run("amp set amp-1 --gain 30", expect=2)
            _run("amp als amp-1 --mode disabled", expect=3)

            _say("The switches at each end carry RoCEv2 over the 30 km links. PFC must hold "
                 "what is still on the fiber when a pause goes out: the headroom, term by "
                 "term, for one 400G port:")
            _run("switch headroom --distance 30.01km --speed 400G")
            _say("Derive the wanted congestion control for sw-a's two long-haul ports: PFC "
                 "headroom, ECN thresholds from the bandwidth-delay product, switch-generated "
                 "CNPs; the chip's lossless pool is read from the switch over NETCONF.")
            want = root / "want-cc.yaml"
            _run("switch plan --port Ethernet1=30.01km@400G --port Ethernet2=30.01km@400G "
                 f"--device sw-a --file {want}")
            _say("What it would change on sw-a: validated by the switch in its candidate "
                 "datastore, diffed against running, then discarded.")
            _run(f"switch cc plan sw-a --file {want}")
            _say("Apply it to both switches at once, all or nothing: a confirmed commit on "
                 "each, read back over a new SSH session, then confirmed; had either failed, "
                 "both would have been cancelled.")
            _run(f"switch cc apply sw-a sw-b --file {want} --all-or-nothing")
            _say("An incast on sw-a's Ethernet1 (a lab fault: 4 senders into one queue for "
                 "50 ms). The queue marks ECN and the switch sends CNPs back to the senders "
                 "itself, half a round trip sooner than the receivers could: the senders slow "
                 "down before the queue reaches the PFC pause point. No pause, no drop.")
            fabric.inject("sw-a", Fault("congestion", target="Ethernet1"))
            time.sleep(0.1)
            _run("switch counters sw-a --port Ethernet1")
            _say("A headroom resume level above its pause level breaks a rule of the YANG "
                 "module; the switch refuses it with its error-app-tag and path, and "
                 "running stays as it was.")
            bad = yaml.safe_load(want.read_text())
            bad["switch"]["ports"]["port"][0]["pfc"]["xon-bytes"] = 30_000_000
            (root / "bad-cc.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
            _run(f"switch cc apply sw-a --file {root / 'bad-cc.yaml'}", expect=1)

            _say("A map that feeds two ingress ports into one egress port is refused before "
                 "anything is sent (exit 2), and the refusal is journaled.")
            _run(f"ocs apply ocs-a {root / 'bad-map.yaml'}", expect=2)

            _say("Cut the span-1 cable (a lab fault). amp-1 loses its input; after the 0.5 s "
                 "loss-of-signal soak its ALS shuts the output. The OCS monitors at campus B "
                 "go dark on the working path; the protection path still carries light.")
            fabric.inject("span-1", Fault("fiber_cut"))
            time.sleep(0.8)
            _run("ocs power ocs-b 61 62")
            _run("amp status amp-1 -o json")
            _say("The latched flags tell what happened even after it is over; reading them "
                 "clears them, and msoctl says so.")
            _run("amp flags amp-1")
            _say("Splice the cable and restart amp-1: light is back.")
            fabric.clear("span-1")
            _run("amp restart amp-1")
            time.sleep(0.3)
            _run("ocs power ocs-b 61")

            _say("Pull the power on ocs-b. Its boot mode is 'restore', so the map comes back "
                 "from non-volatile memory once it has booted.")
            fabric.inject("ocs-b", Fault("reboot", power_loss=True, seconds=1.0))
            _run("ocs status ocs-b", expect=1)
            time.sleep(1.5)
            _run("ocs status ocs-b")

            _say("The journal: every change, its intent before it was sent and its result.")
            _run("history")
    click.echo()
    click.secho(f"demo finished in {time.monotonic() - started:.1f} s", fg="green", bold=True)
    return 0
