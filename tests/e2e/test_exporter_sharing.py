"""Concurrent probes of one device share one reading (msoctl/exporter/probe.py's rule).

Counted at the devices, not timed: the lab's OCS, amplifier and switch are reached
through TCP relays that count the connections made to them (every reading opens
the amplifier's I2C bridge ``socket://`` and the switch's NETCONF over SSH, RFC 6242,
once; the exporter keeps an OCS's SCPI connection, so its readings are counted by
their ``*IDN?`` queries), and the CPO agent counts the SNMP messages it receives
(RFC 3416 GETBULK requests). 200 probes at once of 5 targets cost each device one reading, not 40;
a probe after the share window takes a new reading; a probe that gets no turn among
the readings taken at once (``--max-readings``) within its budget reads nothing.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulators.faults import Fault
from emulators.lab import Lab
from tests.support.exporter import exporter_process, fetch, serve_exporter, value
from tests.support.lab import wait_until

TARGETS = (("ocs-a", "ocs"), ("ocs-b", "ocs"), ("amp-1", "amp"), ("sw-a", "switch"),
           ("sw-a", "cpo"))


class CountingRelay:
    """A TCP relay on loopback to ``port`` that counts the connections it accepts, and the
    identity queries (``*IDN?``, IEEE 488.2 10.14: one per OCS reading) sent through it:
    the exporter keeps an OCS's connection between probes."""

    def __init__(self, port: int):
        self.target = port
        self.connections = 0
        self.identities = 0
        self._open: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            self._open += [client, server]
            for source, sink, seen in ((client, server, self._seen), (server, client, None)):
                threading.Thread(target=_pump, args=(source, sink, seen), daemon=True).start()

    def _seen(self, data: bytes) -> None:
        self.identities += data.count(b"*IDN?")

    def drop(self) -> None:
        """Close every connection relayed so far, as a device that restarts does."""
        for end in self._open:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._open.clear()

    def close(self) -> None:
        self._listener.close()


def _pump(source: socket.socket, sink: socket.socket,
          seen: Callable[[bytes], None] | None) -> None:
    try:
        while data := source.recv(65536):
            if seen is not None:
                seen(data)
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _port(address: str) -> int:
    return int(re.findall(r"\d+", address.rsplit(":", 1)[-1] if "::" not in address
                          else address.split("::")[2])[0])


@pytest.fixture(scope="module")
def relayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The lab, and an inventory (beside the lab's, so its secrets resolve) whose ocs-a,
    ocs-b, amp-1 and sw-a go through counting relays."""
    with Lab(tmp_path_factory.mktemp("sharing") / "lab") as lab:
        state = lab.state_dir
        document = yaml.safe_load((state / "inventory.yaml").read_text())
        relays: dict[str, CountingRelay] = {}
        known_hosts = (state / "known_hosts").read_text()
        extra = []
        for device in document["devices"]:
            name, address = device["name"], device["address"]
            if name not in {"ocs-a", "ocs-b", "amp-1", "sw-a"}:
                continue
            port = _port(address)
            relay = relays[name] = CountingRelay(port)
            device["address"] = address.replace(str(port), str(relay.port))
            if device["kind"] == "switch":  # the host key, as known at the relay's port
                extra += [line.replace(f"[127.0.0.1]:{port}", f"[127.0.0.1]:{relay.port}")
                          for line in known_hosts.splitlines() if f":{port} " in line]
                device["known_hosts"] = "known_hosts.relayed"
        (state / "known_hosts.relayed").write_text(known_hosts + "\n".join(extra) + "\n")
        inventory = state / "relayed.yaml"
        inventory.write_text(yaml.safe_dump(document))
        try:
            yield {"lab": lab, "inventory": inventory, "relays": relays}
        finally:
            for relay in relays.values():
                relay.close()


def readings(relayed: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Device requests so far: identity queries for the OCSes, connections for the other
    relayed devices, SNMP messages of sw-a's agent."""
    relays = relayed["relays"]
    counts = {(name, kind): relays[name].identities if kind == "ocs" else relays[name].connections
              for name, kind in TARGETS if kind != "cpo"}
    counts[("sw-a", "cpo")] = relayed["lab"].snmp["sw-a"].requests_received
    return counts


def probe(url: str, name: str, kind: str) -> tuple[bool, float]:
    """Whether the probe found the device up (read from the text: a full parse of 40 CPO
    expositions would load this process for nothing), and how long it took."""
    reply = fetch(f"{url}/probe?target={name}&module={kind}", scrape_timeout=10)
    return f'msoctl_up{{device="{name}"}} 1.0' in reply.body, reply.seconds


@contextmanager
def exporter(relayed: dict[str, Any], log: Path, share_seconds: float) -> Iterator[str]:
    """``msoctl exporter`` in a process of its own (not beside 200 client threads under
    this process's GIL) on the relayed inventory; its URL."""
    env = {**os.environ, "MSOCTL_INVENTORY": str(relayed["inventory"])}
    with exporter_process(env, log, "--share-seconds", str(share_seconds)) as url:
        yield url


def test_200_concurrent_probes_of_5_targets_cost_one_reading_each(
        relayed: dict[str, Any], tmp_path: Path) -> None:
    with exporter(relayed, tmp_path / "exporter.log", 2.0) as url:
        for name, kind in TARGETS:  # warm: first connections, the SNMP worker's engine
            assert probe(url, name, kind)[0], (name, kind)
        time.sleep(2.1)  # past the share window
        before = readings(relayed)
        assert probe(url, "sw-a", "cpo")[0]
        one_cpo_reading = readings(relayed)[("sw-a", "cpo")] - before[("sw-a", "cpo")]
        assert one_cpo_reading > 1
        time.sleep(2.1)
        before = readings(relayed)
        start = threading.Barrier(200)

        def one(number: int) -> tuple[bool, float]:
            name, kind = TARGETS[number % len(TARGETS)]
            start.wait()
            return probe(url, name, kind)

        with ThreadPoolExecutor(200) as pool:
            results = list(pool.map(one, range(200)))
        after = readings(relayed)
        metrics = fetch(f"{url}/metrics").body
    down = {TARGETS[n % len(TARGETS)] for n, (up, _) in enumerate(results) if not up}
    assert not down, (down, [s for _, s in results][:10])
    taken = {target: after[target] - before[target] for target in TARGETS}
    # 40 probes of each target: one reading each (two, should a few probes have been
    # queued behind the burst past the share window on a loaded machine)
    for target in TARGETS:
        if target[1] == "cpo":
            assert taken[target] <= 2 * one_cpo_reading, (taken, one_cpo_reading)
        else:
            assert 1 <= taken[target] <= 2, taken
    shared = sum(value(metrics, "msoctl_exporter_probes_shared_total", kind=kind) or 0
                 for kind in ("ocs", "amp", "switch", "cpo"))
    assert shared >= 200 - 2 * len(TARGETS)
    seconds = sorted(s for _, s in results)
    print(f"200 probes of 5 targets: p50 {seconds[100]:.3f} s, p99 {seconds[197]:.3f} s")
    for target in TARGETS:
        print(target, max(s for n, (_, s) in enumerate(results) if TARGETS[n % 5] == target))


def test_a_probe_after_the_share_window_takes_a_new_reading(relayed: dict[str, Any]) -> None:
    relay = relayed["relays"]["ocs-a"]
    with serve_exporter(relayed["inventory"], share_seconds=1.0) as server:
        assert probe(server.url, "ocs-a", "ocs")[0]
        first = relay.identities
        assert probe(server.url, "ocs-a", "ocs")[0]  # within 1 s: shared
        assert relay.identities == first
        time.sleep(1.1)
        assert probe(server.url, "ocs-a", "ocs")[0]
        assert relay.identities == first + 1
    with serve_exporter(relayed["inventory"], share_seconds=0.0) as server:
        before = relay.identities
        for _ in range(2):  # one after the other: nothing in flight to share
            assert probe(server.url, "ocs-a", "ocs")[0]
        assert relay.identities == before + 2


def test_an_ocs_connection_is_kept_between_probes_and_dropped_after_an_error(
        relayed: dict[str, Any]) -> None:
    """Every probe is a new reading (its own ``*IDN?``, IEEE 488.2 10.14, counted at the
    relay) over the one connection the exporter keeps (counted at the relay too); a
    probe that fails (a frozen unit: no reply within the budget, so a late reply may
    still come on that stream) closes it, and the next probe reads on a new one. A
    unit that closes the connection while it is held (a restart) costs no failed
    probe: the probe reads again on a new connection."""
    lab, relay = relayed["lab"], relayed["relays"]["ocs-a"]
    with serve_exporter(relayed["inventory"], share_seconds=0.0) as server:
        connections, identities = relay.connections, relay.identities
        for _ in range(3):
            assert probe(server.url, "ocs-a", "ocs")[0]
        assert relay.identities == identities + 3
        assert relay.connections == connections + 1
        lab.inject("ocs-a", Fault("freeze"))
        try:
            up, _ = probe_within(server.url, "ocs-a", 1.0)
        finally:
            lab.clear("ocs-a")
        assert not up
        deadline = time.monotonic() + 10
        while not probe(server.url, "ocs-a", "ocs")[0]:  # a probe may join the failed
            assert time.monotonic() < deadline  # reading while it is still closing
        assert relay.connections == connections + 2  # the failed one was not reused
        relay.drop()
        assert probe(server.url, "ocs-a", "ocs")[0]
        assert relay.connections == connections + 3
        # the connection goes back to the pool once the probe's response has gone
        wait_until(lambda: len(server.prober.sessions) == 1, "the connection kept")
    assert len(server.prober.sessions) == 0  # closed with the exporter
    with serve_exporter(relayed["inventory"], share_seconds=0.0, max_sessions=0) as server:
        connections = relay.connections
        for _ in range(2):
            assert probe(server.url, "ocs-a", "ocs")[0]
        assert relay.connections == connections + 2  # none kept: one per probe


def test_a_probe_without_a_turn_within_its_budget_reads_nothing(
        relayed: dict[str, Any]) -> None:
    """With one turn (``max_readings=1``) held by a frozen OCS, a probe of another device
    ends shortly before its budget with ``msoctl_up 0`` (reason ``budget``) and its device is never
    connected to (counted at its relay); once the turn is free, it is read again."""
    lab, relays = relayed["lab"], relayed["relays"]
    held: list[tuple[bool, float]] = []
    with serve_exporter(relayed["inventory"], share_seconds=0.0, max_readings=1) as server:
        assert probe(server.url, "ocs-a", "ocs")[0]
        frozen_before, waiting_before = relays["ocs-b"].connections, relays["ocs-a"].identities
        lab.inject("ocs-b", Fault("freeze"))
        try:
            holder = threading.Thread(target=lambda: held.append(probe_within(
                server.url, "ocs-b", 3.0)))
            holder.start()
            deadline = time.monotonic() + 10
            while relays["ocs-b"].connections == frozen_before:  # its reading has the turn
                assert time.monotonic() < deadline, "the frozen OCS was never connected to"
                time.sleep(0.01)
            up, seconds = probe_within(server.url, "ocs-a", 1.0)
            assert holder.is_alive(), "the frozen device's reading gave its turn back early"
            holder.join(timeout=15)
        finally:
            lab.clear("ocs-b")
        # it waited for a turn until the reserve before its budget of 0.75 s (a quarter
        # of it: a reading begun later would end too late), then gave up
        assert not up and seconds >= 0.5, seconds
        assert relays["ocs-a"].identities == waiting_before  # no turn: never read
        assert held and not held[0][0]  # the frozen one: up 0 at its own budget
        assert probe(server.url, "ocs-a", "ocs")[0]  # the turn is back
        assert relays["ocs-a"].identities == waiting_before + 1
        metrics = fetch(f"{server.url}/metrics").body
    assert (value(metrics, "msoctl_exporter_probe_failures_total", kind="ocs",
                  reason="budget") or 0) >= 1


def probe_within(url: str, name: str, scrape_timeout: float) -> tuple[bool, float]:
    reply = fetch(f"{url}/probe?target={name}", scrape_timeout=scrape_timeout)
    return f'msoctl_up{{device="{name}"}} 1.0' in reply.body, reply.seconds


def test_the_share_window_is_an_exporter_option(tmp_path: Path) -> None:
    import subprocess
    import sys

    msoctl = str(Path(sys.executable).with_name("msoctl"))
    done = subprocess.run([msoctl, "exporter", "--share-seconds", "-1"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error:"), done.stderr
    assert "--share-seconds" in done.stderr and "Traceback" not in done.stderr


def test_a_kept_scpi_connection_sends_small_writes_at_once(relayed: dict[str, Any]) -> None:
    """A connection the exporter keeps sends ``*CLS`` (no reply) and then a query: with
    Nagle's algorithm (RFC 896) the query waits for ``*CLS``'s acknowledgement, which
    the peer delays (RFC 1122 4.2.3.2: up to 500 ms; 40 ms on Linux) once the connection
    is past its first exchanges. The VISA transport sets TCP_NODELAY on a raw SCPI
    socket; checked on the socket of a real connection to the lab's ocs-a."""
    import socket as sockets

    from drivers.transports.visa import VisaTransport

    document = yaml.safe_load(relayed["inventory"].read_text())
    address = next(d["address"] for d in document["devices"] if d["name"] == "ocs-a")
    transport = VisaTransport(address, timeout_seconds=5)
    transport.open()
    try:
        resource = transport._resource
        sock = resource.visalib.sessions[resource.session].interface
        assert sock.getsockopt(sockets.IPPROTO_TCP, sockets.TCP_NODELAY) == 1
        transport.write(b"*IDN?\n")
        assert transport.read_until(b"\n").count(b",") == 3  # and it is a working one
    finally:
        transport.close()
