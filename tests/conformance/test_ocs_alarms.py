"""OCS loss-of-light alarms (docs/dialects/ocs.md, "Loss-of-light alarms"): armed over
SCPI, pushed by the emulated OCS on its alarm connection, read by drivers/ocs/alarms.py
through msoctl.access, on real loopback sockets.

One lab serves the module (the default topology, on the real clock); each test starts
from :func:`_fresh`, which puts every OCS back as delivered, mends every fiber, clears
every fault and lights link-1 on span-1, and checks over SCPI that it did.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from drivers.errors import DeviceRejected, Unsupported, ValidationError
from drivers.ocs import OcsDriver
from drivers.ocs.alarms import MapLine, OcsAlarmStream, map_digest
from drivers.ocs.connect import open_ocs
from drivers.ocs.types import LosEvent
from emulators.faults import Fault
from emulators.lab import Lab, load_topology
from emulators.ocs.alarms import CLEAR_HOLD_SECONDS
from msoctl.access import open_alarm_stream
from msoctl.inventory import load_inventory
from tests.support.lab import ocs_endpoint

# ocs-a:61 is where span-1's B->A fiber (no amplifier on it) arrives at campus A.
PORT = 61
THRESHOLD_DBM = -30.0
HYSTERESIS_DB = 2.0


def asked(lab: Lab, name: str = "ocs-a") -> int:
    """SCPI messages the OCS has received so far: an event that came with none asked
    between the change and its arrival was pushed (its latency, well under a millisecond,
    is measured in bench/lab_scale.py, not asserted here against a loaded machine's clock)."""
    return lab.ocs[name].requests.received


@dataclass
class Collector:
    """What an alarm stream told us, in order, with the time each came."""

    events: list[tuple[float, LosEvent]] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)  # how many events each call brought
    snapshots: list[dict[int, bool]] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    maps: list[MapLine] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def on_events(self, events: list[LosEvent]) -> None:
        with self.changed:
            self.events.extend((time.monotonic(), event) for event in events)
            self.calls.append(len(events))
            self.changed.notify_all()

    def on_snapshot(self, device: str, states: dict[int, bool]) -> None:
        with self.changed:
            self.snapshots.append(dict(states))
            self.changed.notify_all()

    def on_lost(self, device: str, reason: str) -> None:
        with self.changed:
            self.lost.append(reason)
            self.changed.notify_all()

    def on_map(self, device: str, line: MapLine) -> None:
        with self.changed:
            self.maps.append(line)
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, seconds), f"timed out waiting: {what}"


@pytest.fixture(scope="module")
def alarm_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with Lab(tmp_path_factory.mktemp("alarms"), serial_consoles=False) as running:
        yield running


def _driver(lab: Lab, name: str) -> OcsDriver:
    kind, address = ocs_endpoint(lab, name, "visa-tcp")
    return open_ocs(name, kind, address, timeout_seconds=2.0)


@pytest.fixture
def ocs_a(alarm_lab: Lab) -> Iterator[OcsDriver]:
    _fresh(alarm_lab)
    driver = _driver(alarm_lab, "ocs-a")
    yield driver
    driver.close()


def _fresh(lab: Lab) -> None:
    for name in ("span-1", "span-2"):
        lab.clear(name)
    for name, device in lab.ocs.items():
        device.factory_reset()
        assert not device.faults.active(), name
    b = _driver(lab, "ocs-b")
    a = _driver(lab, "ocs-a")
    try:
        b.connect({1: 121})  # sw-b:tx1 -> span-1's B->A fiber -> ocs-a:61
        a.connect({PORT: 65})
        b.wait_settled()
        a.wait_settled()
        assert a.session.query(":OXC:ALAR:LOS:ENAB?") == "0"  # as delivered
        assert a.los_thresholds([PORT]) == {PORT: None}
        power = a.power([PORT])[PORT]
        assert power is not None and power > -15, power  # link-1 is lit at ocs-a:61
    finally:
        a.close()
        b.close()


def _stream(lab: Lab, collector: Collector, *, timeout_seconds: float | None = None
            ) -> OcsAlarmStream:
    inventory = load_inventory(lab.state_dir / "inventory.yaml")
    stream = open_alarm_stream(inventory.device("ocs-a"), on_events=collector.on_events,
                               on_snapshot=collector.on_snapshot, on_lost=collector.on_lost,
                               on_map=collector.on_map, timeout_seconds=timeout_seconds)
    assert stream is not None
    assert stream.wait_live(5.0), collector.lost
    return stream


def test_arming_is_read_back_and_the_state_is_queried(ocs_a: OcsDriver) -> None:
    """Dialect: ``:OXC:ALARm:LOS:THReshold``, ``:HYSTeresis``, ``:ENABle`` and their
    queries, ``:STATe?``; SCPI-99 vol. 1 §4.2 (the error queue): a port not armed is
    refused with -221, a threshold out of range with -222."""
    assert ocs_a.alarm_support()
    assert ocs_a.arm_los([PORT, 62], THRESHOLD_DBM, HYSTERESIS_DB) == {PORT: False, 62: True}
    assert ocs_a.los_thresholds([PORT, 62, 63]) == {PORT: -30.0, 62: -30.0, 63: None}
    assert ocs_a.session.query(":OXC:ALARM:LOS:HYSTERESIS?") == "2.00"
    assert ocs_a.los_states([PORT]) == {PORT: False}
    with pytest.raises(DeviceRejected, match="-221"):
        ocs_a.los_states([63])
    ocs_a.disarm_los([62])
    assert ocs_a.los_thresholds([62]) == {62: None}
    # refused before anything is sent, and by the unit itself when sent anyway
    with pytest.raises(ValidationError, match="out of range"):
        ocs_a.arm_los([PORT], -75.0, HYSTERESIS_DB)
    with pytest.raises(ValidationError, match="out of range"):
        ocs_a.arm_los([PORT], THRESHOLD_DBM, 11.0)
    with pytest.raises(ValidationError):
        ocs_a.arm_los([999], THRESHOLD_DBM, HYSTERESIS_DB)
    with pytest.raises(DeviceRejected, match="-222"):
        ocs_a.session.change(":OXC:ALAR:LOS:THR (@61),-75", "arm out of range")
    assert ocs_a.los_thresholds([PORT]) == {PORT: -30.0}


def test_a_cut_raises_the_alarm_and_mending_clears_it(alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: the alarm connection (``:SYSTem:COMMunicate:ALARm:PORT?``), its snapshot
    and its ``EVENT`` lines, numbered from 1; an event is pushed at the cut (nothing asked),
    and the light's return clears the alarm once it has held 50 ms."""
    ocs_a.arm_los([PORT, 62], THRESHOLD_DBM, HYSTERESIS_DB)  # 62 is dark: event 1
    collector = Collector()
    with _stream(alarm_lab, collector) as stream:
        assert collector.snapshots == [{PORT: False, 62: True}]
        assert stream.sequence == 1
        before = asked(alarm_lab)
        cut = time.monotonic()
        alarm_lab.inject("span-1", Fault("fiber_cut"))
        collector.wait(lambda: len(collector.events) == 1, "the LOS event")
        arrived, event = collector.events[0]
        assert asked(alarm_lab) == before  # pushed, not polled
        assert (event.device, event.port, event.lost, event.sequence) == ("ocs-a", PORT, True, 2)
        assert event.power_dbm is not None and event.power_dbm < THRESHOLD_DBM
        assert cut <= event.device_seconds <= arrived  # the lab's device time is real time
        assert ocs_a.los_states([PORT]) == {PORT: True}

        before = asked(alarm_lab)
        mended = time.monotonic()
        alarm_lab.clear("span-1")
        collector.wait(lambda: len(collector.events) == 2, "the clearing event")
        arrived, cleared = collector.events[1]
        assert (cleared.port, cleared.lost, cleared.sequence) == (PORT, False, 3)
        assert cleared.power_dbm is not None and cleared.power_dbm > -15
        assert mended + CLEAR_HOLD_SECONDS <= cleared.device_seconds <= arrived
        assert asked(alarm_lab) == before  # pushed, not polled
        time.sleep(1.2)  # two heartbeats: each names event 3, so nothing is missing
        assert collector.lost == [] and stream.live


def test_a_beam_that_settles_clears_a_loss_once_its_light_has_held(
        alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: light that comes back is reported once it has held 50 ms, reckoned from
    the moment the switch upstream settled its beam; meanwhile the port reads as lost.
    ocs-a:61 is lit through ocs-b's connection 1 -> 121."""
    ocs_a.arm_los([PORT], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    b = _driver(alarm_lab, "ocs-b")
    try:
        with _stream(alarm_lab, collector):
            b.disconnect([1])
            collector.wait(lambda: len(collector.events) == 1, "the loss, at once")
            assert collector.events[0][1].lost
            before = asked(alarm_lab)
            b.connect({1: 121})  # returns once the beam has settled (*OPC?)
            settled = alarm_lab.ocs["ocs-b"].busy_until  # device time, as the events'
            collector.wait(lambda: len(collector.events) == 2, "the clearing event")
            arrived, cleared = collector.events[1]
            assert not cleared.lost and cleared.port == PORT
            assert settled + CLEAR_HOLD_SECONDS <= cleared.device_seconds <= arrived
            assert asked(alarm_lab) == before  # pushed by ocs-a, not polled
            assert ocs_a.los_states([PORT]) == {PORT: False}
    finally:
        b.close()


def test_a_reconnecting_client_gets_a_snapshot_of_what_it_missed(
        alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: every connection begins with the state of every armed port; the
    ``alarm_drop`` fault resets the connection (RST)."""
    ocs_a.arm_los([PORT], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    with _stream(alarm_lab, collector, timeout_seconds=1.0) as stream:
        alarm_lab.inject("ocs-a", Fault("alarm_drop", count=1))
        collector.wait(lambda: len(collector.lost) == 1, "the stream is lost")
        alarm_lab.inject("span-1", Fault("fiber_cut"))  # while the client is away
        collector.wait(lambda: len(collector.snapshots) == 2, "a new snapshot")
        assert collector.snapshots == [{PORT: False}, {PORT: True}]
        assert collector.events == []  # the cut came before the new connection
        assert stream.connections == 2 and stream.live
        assert not alarm_lab.ocs["ocs-a"].faults.active()  # the one drop was used up


def test_hysteresis_keeps_a_hovering_signal_from_chattering(
        alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: loss of light below the threshold, cleared only at or above threshold plus
    hysteresis. The light at ocs-a:61 follows sw-b:tx1's launch power."""
    reading = ocs_a.power([PORT])[PORT]
    assert reading is not None
    loss_db = alarm_lab.optics.power_dbm("sw-b:tx1") - reading  # as the monitor sees it
    threshold = -20.0
    ocs_a.arm_los([PORT], threshold, 3.0)
    collector = Collector()

    def launch(arriving_dbm: float) -> None:
        alarm_lab.override_launch_power("sw-b", 1, arriving_dbm + loss_db)

    try:
        with _stream(alarm_lab, collector):
            launch(-21.0)  # below: lost
            collector.wait(lambda: len(collector.events) == 1, "LOS below the threshold")
            for level in (-19.0, -18.0, -19.5):  # above the threshold, below +3 dB
                launch(level)
                assert ocs_a.los_states([PORT]) == {PORT: True}
            launch(-16.5)  # 3.5 dB above: cleared
            collector.wait(lambda: len(collector.events) == 2, "cleared above +3 dB")
            assert [e.lost for _, e in collector.events] == [True, False]
    finally:
        alarm_lab.override_launch_power("sw-b", 1, None)


def test_delayed_alarms_arrive_late_but_in_order(alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """The ``alarm_delay`` fault holds every line back; nothing is lost."""
    ocs_a.arm_los([PORT], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    with _stream(alarm_lab, collector) as stream:
        # the map after the snapshot, on time: the promptest line the lag is taken against
        collector.wait(lambda: bool(collector.maps), "the map after the snapshot")
        assert stream.lag < 0.2
        alarm_lab.inject("ocs-a", Fault("alarm_delay", seconds=0.4))
        cut = time.monotonic()
        alarm_lab.inject("span-1", Fault("fiber_cut"))
        time.sleep(0.1)  # judged at once, held back on the wire
        assert collector.events == []
        mended = time.monotonic()
        alarm_lab.clear("span-1")
        collector.wait(lambda: len(collector.events) == 2, "both events, late")
        assert collector.events[0][0] - cut >= 0.4
        assert [(e.sequence, e.lost) for _, e in collector.events] == [(1, True), (2, False)]
        # each stamped when it was judged (the loss before the mend, the clearing after it:
        # the lab's device time is real time), then held back 0.4 s on the wire: told by
        # order and by lower bounds, which a loaded machine cannot break
        (lost_arrived, lost), (cleared_arrived, cleared) = collector.events
        assert cut <= lost.device_seconds <= mended <= cleared.device_seconds
        assert lost_arrived - lost.device_seconds >= 0.4
        assert cleared_arrived - cleared.device_seconds >= 0.4
        assert stream.lag >= 0.35  # by the unit's clock in the lines, against the first
        assert collector.lost == []
    alarm_lab.clear("ocs-a", "alarm_delay")


def test_silence_and_lost_events_are_noticed(alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: heartbeats name the last event. While ``alarm_freeze`` holds, nothing is
    sent: a freeze longer than the client's timeout is a lost stream; a shorter one that
    swallowed an event is caught by the next heartbeat's number. Either way the client
    reconnects and the snapshot tells the truth."""
    ocs_a.arm_los([PORT], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    with _stream(alarm_lab, collector, timeout_seconds=1.5) as stream:
        alarm_lab.inject("ocs-a", Fault("alarm_freeze"))
        alarm_lab.inject("span-1", Fault("fiber_cut"))  # its event is swallowed
        time.sleep(0.3)
        alarm_lab.clear("ocs-a", "alarm_freeze")
        collector.wait(lambda: len(collector.snapshots) == 2, "a new snapshot")
        assert "events were lost" in collector.lost[0]
        assert collector.snapshots[-1] == {PORT: True} and collector.events == []

        alarm_lab.inject("ocs-a", Fault("alarm_freeze"))
        collector.wait(lambda: len(collector.lost) == 2, "silence noticed", seconds=6)
        assert "within 1.5 s" in collector.lost[1]
        alarm_lab.clear("ocs-a", "alarm_freeze")
        collector.wait(lambda: len(collector.snapshots) == 3, "back after the freeze",
                       seconds=10)
        assert stream.live


def test_a_reboot_drops_the_connection_and_numbering_restarts(
        alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: the settings are kept in non-volatile memory; states and numbering start
    afresh at each power-on, and the reconnecting client learns them from the snapshot."""
    ocs_a.arm_los([PORT, 62], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    with _stream(alarm_lab, collector, timeout_seconds=1.0) as stream:
        assert stream.sequence == 1  # 62 is dark
        alarm_lab.inject("ocs-a", Fault("reboot", seconds=0.3, power_loss=False))
        collector.wait(lambda: len(collector.snapshots) == 2, "back after the reboot",
                       seconds=10)
        assert len(collector.lost) == 1
        assert collector.snapshots[-1] == {PORT: False, 62: True}
        assert stream.sequence == 1  # 62's loss, raised again after the boot
    with _driver(alarm_lab, "ocs-a") as again:
        assert again.los_thresholds([PORT, 62]) == {PORT: -30.0, 62: -30.0}


def test_the_unit_announces_its_map_after_the_snapshot_and_at_each_change(
        alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    """Dialect: a ``MAP`` line follows every snapshot, and the unit sends one whenever
    its map changes, whoever changed it; a refused change sends none. Its CRC is the
    one the driver computes of the map it reads."""
    collector = Collector()

    def announced(count: int, what: str) -> MapLine:
        collector.wait(lambda: len(collector.maps) >= count, what)
        time.sleep(0.1)  # nothing more comes for the same change
        assert len(collector.maps) == count, collector.maps
        return collector.maps[-1]

    with _stream(alarm_lab, collector, timeout_seconds=1.0):
        first = announced(1, "the map after the snapshot")
        start = ocs_a.port_map()
        assert (first.digest, first.count) == (map_digest(start), len(start)) == \
            (map_digest({PORT: 65}), 1)
        ocs_a.connect({2: 66})
        line = announced(2, "the map after a change")
        assert (line.digest, line.count) == (map_digest({PORT: 65, 2: 66}), 2)
        assert line.device_seconds >= first.device_seconds
        with pytest.raises(DeviceRejected):
            ocs_a.connect({3: 65})  # 65 is taken: refused, the map stays
        assert len(collector.maps) == 2
        with _driver(alarm_lab, "ocs-a") as other:  # another client's change
            other.disconnect([2])
        assert announced(3, "another client's change").digest == map_digest({PORT: 65})
        alarm_lab.inject("ocs-a", Fault("alarm_drop", count=1))
        collector.wait(lambda: len(collector.snapshots) == 2, "a new snapshot")
        assert announced(4, "the map after the new snapshot").digest == map_digest({PORT: 65})
        alarm_lab.ocs["ocs-a"].factory_reset()
        line = announced(5, "the map emptied")
        assert (line.digest, line.count) == (0, 0) == (map_digest({}), 0)


def test_closing_the_stream_stops_the_callbacks(alarm_lab: Lab, ocs_a: OcsDriver) -> None:
    ocs_a.arm_los([PORT], THRESHOLD_DBM, HYSTERESIS_DB)
    collector = Collector()
    stream = _stream(alarm_lab, collector)
    stream.close()
    assert not stream.live
    alarm_lab.inject("span-1", Fault("fiber_cut"))
    time.sleep(0.2)
    assert collector.events == [] and collector.lost == []


NO_ALARMS = """\
name: no-alarms
ocs:
  - {name: ocs-old, size: 8, alarms: false}
  - {name: ocs-new, size: 8}
"""


def test_the_events_that_came_together_are_taken_in_one_call() -> None:
    """A burst (a cable's fibers, written by the unit at once) reaches the consumer in one
    call, in the unit's order; an event that comes later, in a call of its own. A unit
    on a socket of this test, writing the dialect's lines."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    served = threading.Thread(target=lambda: accepted.append(listener.accept()[0]),
                              daemon=True)
    served.start()
    collector = Collector()
    stream = OcsAlarmStream("ocs-t", "127.0.0.1", listener.getsockname()[1],
                            on_events=collector.on_events, on_snapshot=collector.on_snapshot,
                            on_lost=collector.on_lost).start()
    try:
        served.join(5)
        unit = accepted[0]
        unit.sendall(b"SNAPSHOT 0,3\nPORT 61,OK,-3.00,0.0\nPORT 62,OK,-3.10,0.0\n"
                     b"PORT 63,OK,-3.20,0.0\n")
        assert stream.wait_live(5.0)
        unit.sendall(b"EVENT 1,61,SET,-45.00,1.0\nEVENT 2,62,SET,-46.00,1.0\n"
                     b"EVENT 3,63,SET,-47.00,1.0\n")
        collector.wait(lambda: len(collector.events) == 3, "the burst")
        time.sleep(0.05)
        unit.sendall(b"EVENT 4,61,CLEAR,-3.00,2.0\n")
        collector.wait(lambda: len(collector.events) == 4, "the later event")
        assert collector.calls == [3, 1]
        assert [(e.port, e.lost, e.sequence) for _, e in collector.events] == [
            (61, True, 1), (62, True, 2), (63, True, 3), (61, False, 4)]
        unit.close()
    finally:
        stream.close()
        listener.close()


def test_a_cut_of_fibers_far_apart_alarms_each_unit_it_darkens_in_one_write() -> None:
    """A cable's fibers cut at once are one change of the optical model, told once with
    every port they reach (emulators/optics/model.py, ``together``): a unit is alarmed
    for its own ports among them, even when the first fiber cut is nowhere near it, and
    the events of that one reading leave in one write (the client takes them in one
    call)."""
    from emulators.clock import RealClock
    from emulators.loopthread import LoopThread
    from emulators.ocs.alarm_server import AlarmServer
    from emulators.ocs.model import OcsDevice
    from emulators.optics.model import Fiber, OpticalModel, Receiver, Source

    optics = OpticalModel(RealClock())
    unit = OcsDevice("ocs-t", optics, size=8)
    # a line of its own elsewhere, joined to nothing of the unit's: cut first
    optics.add(Source("other", {"out": 0.0}))
    optics.add(Fiber("far", 10.0))
    optics.add(Receiver("pd", ["in"]))
    optics.patch("other:out", "far:in")
    optics.patch("far:out", "pd:in")
    optics.add(Source("laser", {"1": 0.0, "2": 0.0, "3": 0.0}))
    for port in (1, 2, 3):
        optics.add(Fiber(f"near-{port}", 10.0))
        optics.patch(f"laser:{port}", f"near-{port}:in")
        optics.patch(f"near-{port}:out", f"ocs-t:{port}")
    unit.alarms.arm([1, 2, 3], THRESHOLD_DBM)
    unit.alarms.set_enabled(True)
    server = AlarmServer(unit)
    loop = LoopThread("alarms")
    loop.start()
    collector = Collector()

    async def start() -> None:
        await server.start()

    try:
        loop.call(start())
        stream = OcsAlarmStream("ocs-t", "127.0.0.1", server.port,
                                on_events=collector.on_events,
                                on_snapshot=collector.on_snapshot,
                                on_lost=collector.on_lost).start()
        with stream:
            assert stream.wait_live(5.0), collector.lost
            assert collector.snapshots == [{1: False, 2: False, 3: False}]
            with optics.together():
                for name in ("far", "near-1", "near-2", "near-3"):
                    optics.element(name).cut = True  # type: ignore[attr-defined]
            collector.wait(lambda: len(collector.events) == 3, "the three LOS events")
            assert sorted((e.port, e.lost) for _, e in collector.events) == [
                (1, True), (2, True), (3, True)]
            assert collector.calls == [3]
    finally:
        loop.stop(server.stop)


def test_a_unit_without_alarms_reports_them_not_available(tmp_path: Path) -> None:
    """Dialect: a unit without the extension answers its headers -113 (SCPI-99 vol. 2
    §21.8, "Undefined header"); the driver reports alarms as not available and
    msoctl.access opens no stream, so the caller polls."""
    path = tmp_path / "topology.yaml"
    path.write_text(NO_ALARMS)
    with Lab(tmp_path / "lab", load_topology(path), serial_consoles=False) as lab:
        assert "ocs-old" not in lab.alarm_servers
        inventory = load_inventory(lab.state_dir / "inventory.yaml")
        assert inventory.device("ocs-old").alarm_port is None
        assert inventory.device("ocs-new").alarm_port == lab.alarm_servers["ocs-new"].port
        with _driver(lab, "ocs-old") as old:
            assert not old.alarm_support() and old.alarm_port() is None
            log = lab.ocs["ocs-old"].requests
            before = log.received
            with pytest.raises(Unsupported, match="loss-of-light alarms not supported"):
                old.arm_los([1], THRESHOLD_DBM, HYSTERESIS_DB)
            # refused before sending: no alarm command reached the unit. (Not "nothing at
            # all": a *CLS, the first message of any new session, was once counted here
            # on a loaded run, from a client this test did not open.)
            since = list(log.messages)[len(log.messages) - (log.received - before):]
            assert not [m for m in since if ":ALAR" in m.upper()], since
            reply, errors = old.session.query_checked(":OXC:ALAR:LOS:ENAB?")
            assert reply is None and [code for code, _ in errors] == [-113]
            assert old.power([1]) == {1: pytest.approx(-60, abs=2)}  # polling still works
        collector = Collector()
        assert open_alarm_stream(inventory.device("ocs-old"), on_events=collector.on_events,
                                 on_snapshot=collector.on_snapshot,
                                 on_lost=collector.on_lost) is None
        # Without alarm_port in the inventory, the port is asked of the unit.
        entry = inventory.device("ocs-new")
        asked = type(entry)(**{**entry.__dict__, "alarm_port": None})
        stream = open_alarm_stream(asked, on_events=collector.on_events,
                                   on_snapshot=collector.on_snapshot, on_lost=collector.on_lost)
        assert stream is not None
        with stream:
            assert stream.wait_live(5.0) and collector.snapshots == [{}]
