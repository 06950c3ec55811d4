"""A full CPO+CPC walk of one switch: msoctl's collector against net-snmp's snmpbulkwalk.

One emulated switch agent (emulators/cpo: :class:`CpoAgent` over a
:class:`SwitchTelemetry` on the real clock, SNMPv3 SHA-256/AES-128) runs in a second
process, so its CPU does not compete with the client's for one interpreter; by
default 64 ports x 8 optical and 8 electrical lanes, the model's full size. Side
by side in one run, on that one agent, the same tables (every table of MSO-CPO-MIB
and MSO-CPC-MIB, the FEC histogram included):

- ``collector_warm``: :meth:`drivers.snmp.collector.TelemetryCollector.collect` on
  an engine that has talked to the agent before (USM discovery done), as an exporter
  polls; it also reads ifName, ifHighSpeed and sysUpTime with every request;
- ``collector_cold``: the same in a new event loop and engine, discovery included,
  as one ``msoctl telemetry`` command does (without the process start);
- ``snmpbulkwalk``: Debian's net-snmp ``snmpbulkwalk -v3 -l authPriv -a SHA-256 -x AES
  -Cr50 -On`` of the MIBs' subtree (msoMibs), one process per walk, its output read.

Every variant asks for 50 repetitions per GETBULK. Reported per variant (medians
over ``--rounds``, variants in a different order each round): wall time, PDUs as the
agent counted the requests it received (retries and discovery included), variables
received, the client's CPU (this process, or the snmpbulkwalk child) and the agent's
CPU; then ratios collector / snmpbulkwalk.

Usage: python bench/cpo_walk.py [--ports 64] [--lanes 8] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drivers.errors import DeviceError
from drivers.snmp import mibs
from drivers.snmp.collector import TelemetryCollector
from drivers.snmp.session import SnmpTarget, close_engines, run

USER = "msoctl"
AUTH_KEY = "bench-auth-passphrase"
PRIV_KEY = "bench-priv-passphrase"
MAX_REPETITIONS = 50
ROOT = ("MSO-SMI", "msoMibs")
ROOT_DIRECTORY = Path(__file__).resolve().parent.parent
BUDGET_SECONDS = 600.0  # a benchmark measures; it does not give up


# ---- the agent, in its own process -------------------------------------------------------


def serve_agent(ports: int, lanes: int) -> None:
    """Run one switch's agent: print "PORT INSTANCES", then answer the lines "requests"
    and "cpu" on stdin until "stop" or end of input."""
    from emulators.clock import RealClock
    from emulators.cpo.agent import CpoAgent, UsmCredentials
    from emulators.cpo.model import SwitchTelemetry, TelemetrySpec

    async def main() -> None:
        spec = TelemetrySpec(ports=tuple(range(1, ports + 1)), optical_lanes_per_port=lanes,
                             electrical_lanes_per_port=lanes,
                             lanes_per_engine=min(64, ports * lanes),
                             lanes_per_laser=lanes, lasers_per_els_module=8)
        telemetry = SwitchTelemetry("sw-bench", RealClock(), spec, seed=3)
        agent = CpoAgent(telemetry, UsmCredentials(USER, AUTH_KEY, PRIV_KEY))
        await agent.start()
        loop = asyncio.get_running_loop()
        stopped = loop.create_future()

        def on_command() -> None:
            command = sys.stdin.readline().strip()
            if command == "requests":
                print(agent.requests_received, flush=True)
            elif command == "cpu":
                print(time.process_time(), flush=True)
            elif not stopped.done():
                stopped.set_result(None)

        loop.add_reader(sys.stdin.fileno(), on_command)
        print(agent.port, len(agent.view), flush=True)
        await stopped
        loop.remove_reader(sys.stdin.fileno())
        await agent.stop()

    asyncio.run(main())


class Agent:
    """The agent's process (this file run with ``--serve-agent``), and its counters."""

    def __init__(self, ports: int, lanes: int):
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-agent",
             "--ports", str(ports), "--lanes", str(lanes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(ROOT_DIRECTORY), os.environ.get("PYTHONPATH", "")])})
        assert self._process.stdout is not None
        line = self._process.stdout.readline().split()
        if len(line) != 2:
            self.close()
            raise RuntimeError("the emulated agent did not start")
        self.port, self.instances = int(line[0]), int(line[1])

    def ask(self, command: str) -> float:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        return float(self._process.stdout.readline())

    def close(self) -> None:
        try:
            if self._process.stdin is not None:
                self._process.stdin.write("stop\n")
                self._process.stdin.close()
            self._process.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
            self._process.wait(10)
        if self._process.stdout is not None:
            self._process.stdout.close()


# ---- the clients ----------------------------------------------------------------------------


def target(port: int) -> SnmpTarget:
    return SnmpTarget("sw-bench", "127.0.0.1", port, user=USER, auth_key=AUTH_KEY,
                      priv_key=PRIV_KEY, timeout_seconds=10.0, retries=1)


def snmpbulkwalk_command(executable: str, port: int) -> list[str]:
    return [executable, "-v3", "-l", "authPriv", "-u", USER, "-a", "SHA-256", "-A", AUTH_KEY,
            "-x", "AES", "-X", PRIV_KEY, f"-Cr{MAX_REPETITIONS}", "-On",
            f"127.0.0.1:{port}", mibs.mib_object(*ROOT).dotted]


def timed(agent: Agent, action: Callable[[], tuple[int, float]]) -> dict[str, float]:
    """Run ``action`` (returning variables and the client's CPU seconds) and measure it."""
    requests, agent_cpu = agent.ask("requests"), agent.ask("cpu")
    started = time.perf_counter()
    variables, client_cpu = action()
    wall = time.perf_counter() - started
    return {"wall_seconds": wall, "requests": agent.ask("requests") - requests,
            "variables": variables, "client_cpu_seconds": client_cpu,
            "agent_cpu_seconds": agent.ask("cpu") - agent_cpu}


def collector_walk(collector: TelemetryCollector, loop: asyncio.AbstractEventLoop
                   ) -> tuple[int, float]:
    cpu = time.process_time()
    cpo, cpc = loop.run_until_complete(collector.collect())
    if not cpo.lanes or not cpc.lanes:
        raise RuntimeError("the collector read no lanes")
    return cpo.info.variables, time.process_time() - cpu


def cold_walk(port: int) -> tuple[int, float]:
    cpu = time.process_time()
    cpo, _ = run(TelemetryCollector(target(port), budget_seconds=BUDGET_SECONDS).collect())
    return cpo.info.variables, time.process_time() - cpu


def net_snmp_walk(command: list[str]) -> tuple[int, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("MIBS", "MIBDIRS", "SNMPCONFPATH")}
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600,
                               env=environment, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"snmpbulkwalk failed: {completed.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in completed.stdout.splitlines() if " = " in line
             and "No more variables" not in line]
    return len(lines), cpu


def measure(ports: int, lanes: int, rounds: int, progress: Callable[[str], None]
            ) -> dict[str, Any]:
    executable = shutil.which("snmpbulkwalk")
    if executable is None:
        raise RuntimeError("snmpbulkwalk is not installed (Debian package snmp)")
    mibs.load()  # compiled before any timing
    agent = Agent(ports, lanes)
    loop = asyncio.new_event_loop()
    try:
        collector = TelemetryCollector(target(agent.port), budget_seconds=BUDGET_SECONDS)
        loop.run_until_complete(collector.cpc(histogram=False))  # warm: discovery done
        command = snmpbulkwalk_command(executable, agent.port)
        variants: dict[str, Callable[[], tuple[int, float]]] = {
            "collector_warm": lambda: collector_walk(collector, loop),
            "collector_cold": lambda: cold_walk(agent.port),
            "snmpbulkwalk": lambda: net_snmp_walk(command),
        }
        samples: dict[str, list[dict[str, float]]] = {key: [] for key in variants}
        order = list(variants)
        for round_index in range(rounds):
            for label in order[round_index % len(order):] + order[:round_index % len(order)]:
                progress(f"round {round_index + 1}/{rounds}: {label}")
                samples[label].append(timed(agent, variants[label]))
        instances = int(agent.instances)
    finally:
        loop.run_until_complete(close_engines())
        loop.close()
        agent.close()
    result: dict[str, Any] = {"ports": ports, "lanes_per_port": lanes, "rounds": rounds,
                              "max_repetitions": MAX_REPETITIONS,
                              "agent_instances": instances, "variants": {}}
    for label, runs in samples.items():
        result["variants"][label] = {
            "median_wall_seconds": statistics.median(r["wall_seconds"] for r in runs),
            "median_requests": statistics.median(r["requests"] for r in runs),
            "median_variables": statistics.median(r["variables"] for r in runs),
            "median_client_cpu_seconds": statistics.median(r["client_cpu_seconds"]
                                                           for r in runs),
            "median_agent_cpu_seconds": statistics.median(r["agent_cpu_seconds"]
                                                          for r in runs),
            "samples": runs,
        }
    net = result["variants"]["snmpbulkwalk"]
    result["ratios"] = {}
    for label in ("collector_warm", "collector_cold"):
        mine = result["variants"][label]
        result["ratios"][label] = {
            "wall_over_snmpbulkwalk": mine["median_wall_seconds"] / net["median_wall_seconds"],
            "requests_over_snmpbulkwalk": mine["median_requests"] / net["median_requests"],
            "variables_over_snmpbulkwalk": mine["median_variables"] / net["median_variables"],
            "client_cpu_over_snmpbulkwalk": (mine["median_client_cpu_seconds"]
                                             / max(net["median_client_cpu_seconds"], 1e-6)),
        }
    return result


def report(result: dict[str, Any]) -> str:
    lines = [f"full CPO+CPC walk of one switch: {result['ports']} ports x "
             f"{result['lanes_per_port']} lanes, {result['agent_instances']} instances served, "
             f"max-repetitions {result['max_repetitions']}, median of {result['rounds']} "
             "round(s)", "",
             f"{'variant':<16}{'wall s':>9}{'PDUs':>7}{'vars':>8}{'client cpu s':>14}"
             f"{'agent cpu s':>13}"]
    for label, figures in result["variants"].items():
        lines.append(f"{label:<16}{figures['median_wall_seconds']:>9.3f}"
                     f"{figures['median_requests']:>7.0f}{figures['median_variables']:>8.0f}"
                     f"{figures['median_client_cpu_seconds']:>14.3f}"
                     f"{figures['median_agent_cpu_seconds']:>13.3f}")
    lines.append("")
    for label, ratios in result["ratios"].items():
        lines.append(f"{label} / snmpbulkwalk: wall {ratios['wall_over_snmpbulkwalk']:.2f}, "
                     f"PDUs {ratios['requests_over_snmpbulkwalk']:.2f}, "
                     f"variables {ratios['variables_over_snmpbulkwalk']:.2f}, "
                     f"client CPU {ratios['client_cpu_over_snmpbulkwalk']:.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ports", type=int, default=64, help="ports of the switch (1..64)")
    parser.add_argument("--lanes", type=int, default=8, help="lanes per port (1..8)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--serve-agent", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.serve_agent:
        serve_agent(options.ports, options.lanes)
        return 0
    if not (1 <= options.ports <= 64 and 1 <= options.lanes <= 8 and options.rounds >= 1):
        parser.error("--ports 1..64, --lanes 1..8, --rounds >= 1")

    def progress(message: str) -> None:
        if not options.json:
            print(f"# {message}", file=sys.stderr)

    try:
        result = measure(options.ports, options.lanes, options.rounds, progress)
    except (RuntimeError, DeviceError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if options.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
