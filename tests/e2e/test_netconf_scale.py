"""A 40,000-entry edit-config on a lab switch: taken whole, and the rest of the lab keeps
answering meanwhile (the OCS over SCPI, an amplifier's I2C bridge, the other switch)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lxml import etree

from drivers.switch.schema import NAMESPACE
from drivers.switch.tree import to_xml
from emulators.lab import Lab
from tests.support.netconf import lab_session as netconf

ENTRIES = 40_000  # list entries: 5,000 ports, each with 7 queues
QUEUES_PER_PORT = 7
EDIT_TIMEOUT_SECONDS = 120.0  # minutes before edits were linear; seconds now
PROBES_DURING_EDIT = 5  # rounds of every probe while the edit runs, at least
PROBE_PAUSE_SECONDS = 0.05
AMP_ADDRESS = 0x50


def edit_of(entries: int) -> str:
    """An edit-config ``<config>`` of ``entries`` list entries (ports and their queues),
    each queue with WRED/ECN thresholds, ports named apart from the lab's own."""
    ports = entries // (QUEUES_PER_PORT + 1)
    tree = {"switch": {"ports": {"port": [{
        "name": f"Ethernet9/{number}", "speed": "400G",
        "queues": {"queue": [{"queue-id": queue, "wred": {
            "min-threshold": 1_000_000, "max-threshold": 3_000_000, "enable-ecn": True}}
            for queue in range(QUEUES_PER_PORT)]},
    } for number in range(1, ports + 1)]}}}
    return etree.tostring(to_xml(tree), encoding="unicode")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("scale") / "lab", serial_consoles=False) as running:
        yield running


def line_probe(port: int, line: bytes) -> Callable[[], float]:
    """A client that sends ``line`` and reads one LF-ended answer; returns seconds."""
    connection = socket.create_connection(("127.0.0.1", port), timeout=30)

    def ask() -> float:
        started = time.perf_counter()
        connection.sendall(line)
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = connection.recv(4096)
            assert chunk, "the device closed the connection"
            answer += chunk
        assert not answer.startswith((b"ERR", b"NACK")), answer
        return time.perf_counter() - started

    return ask


def test_a_huge_edit_on_sw_a_is_taken_and_stalls_no_other_device(lab: Lab) -> None:
    """RFC 6241 7.2 (edit-config) and 8.6 (validate) with 40,000 list entries in one
    request: sw-a answers <ok/> to both, within a bound far above the seconds they take
    and far below the minutes the quadratic edit needed. While it works, ocs-a's *IDN?
    (IEEE 488.2 10.14) over TCP, an I2C read through amp-1's bridge and sw-b's
    get-config each keep answering many times, each answer well inside a fifth of the
    edit's duration: sw-a's work runs in its own worker thread, not on the lab's loop."""
    edit = edit_of(ENTRIES)
    idn = line_probe(lab.tcp["ocs-a"].port, b"*IDN?\n")
    amp = line_probe(lab.bridges["amp-1"].port, b"R %02X 00 01\n" % AMP_ADDRESS)
    with netconf(lab, "sw-a", timeout=EDIT_TIMEOUT_SECONDS) as busy, \
            netconf(lab, "sw-b", timeout=30) as other:

        def get_config() -> float:
            started = time.perf_counter()
            assert other.get_config(source="running").ok
            return time.perf_counter() - started

        probes = {"ocs-a *IDN?": idn, "amp-1 I2C read": amp, "sw-b get-config": get_config}
        for probe in probes.values():  # warm: connections and sessions are open
            probe()
        outcome: list[Any] = []
        edit_seconds: list[float] = []

        def huge_edit() -> None:
            started = time.perf_counter()
            try:
                outcome.append(busy.edit_config(target="candidate", config=edit))
                outcome.append(busy.validate(source="candidate"))
            except Exception as error:  # reported below, in the test's thread
                outcome.append(error)
            edit_seconds.append(time.perf_counter() - started)

        worker = threading.Thread(target=huge_edit)
        answers: dict[str, list[float]] = {name: [] for name in probes}
        worker.start()
        while worker.is_alive():
            for name, probe in probes.items():
                answers[name].append(probe())
            # A pause between rounds: probing flat out would take the interpreter's lock
            # from the edit's worker thread as often as it could, slowing what it measures.
            worker.join(PROBE_PAUSE_SECONDS)
        worker.join()
        try:
            assert [getattr(reply, "ok", reply) for reply in outcome] == [True, True]
            last = f"Ethernet9/{ENTRIES // (QUEUES_PER_PORT + 1)}"
            entry = busy.get_config(source="candidate", filter=("subtree", (
                f'<switch xmlns="{NAMESPACE}"><ports><port><name>{last}</name><queues>'
                "<queue><queue-id>6</queue-id></queue></queues></port></ports></switch>")))
            assert entry.data.find(f".//{{{NAMESPACE}}}enable-ecn").text == "true"
        finally:
            busy.discard_changes()
        [took] = edit_seconds
        for name, times in answers.items():
            assert len(times) >= PROBES_DURING_EDIT, (name, len(times), took)
            assert max(times) < took / 5, (name, max(times), took)
    spec = next(switch for switch in lab.topology.switches if switch.name == "sw-a")
    stored = lab.switches["sw-a"].datastores.stores["candidate"]  # discarded again
    assert len(stored.findall(f".//{{{NAMESPACE}}}port")) == \
        len(spec.port_names + spec.host_port_names)


def test_the_edit_generator_counts_entries() -> None:
    """The test's own yardstick: so many list entries, ports and queues together."""
    root = etree.fromstring(edit_of(800))
    ports = root.findall(f".//{{{NAMESPACE}}}port")
    queues = root.findall(f".//{{{NAMESPACE}}}queue")
    assert (len(ports), len(queues)) == (100, 700)
