"""The protection controller's detection from what the OCS pushes (msoctl/protect/alarms.py
with the driver's alarm stream, drivers/ocs/alarms.py, against the emulated units'
alarm servers): loss of light armed on the ports the controller judges, an event making
the controller poll that OCS at once, polling slowed to a reconciliation while the
stream is live and back to full rate when it is lost, and a unit without alarms polled.

One lab for the module (tests/support/protect_fabric.py): two OCS pairs of 4 links
each, ``ocs-a1``/``ocs-b1`` with alarms (link-1..4), ``ocs-a2``/``ocs-b2`` units without
them (``alarms: false`` in the topology; link-5..8), one controller protecting all 8
links with the default budget of 50 messages a second per OCS. What each OCS receives is
counted by the emulated OCS itself (its RequestLog: every program message of every
client). Every test starts and ends with every link on its working span, both spans
lit, and every alarm stream of the alarmed pair live.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from emulators.faults import Fault
from msoctl.access import open_ocs
from msoctl.journal import Operation
from msoctl.links import Link
from msoctl.protect.alarms import MAP_HEARD_SECONDS
from msoctl.protect.config import ProtectConfig
from msoctl.protect.light import link_ports
from msoctl.protect.watch import SLOW_MAP_EVERY_SECONDS
from tests.support.generated_fabric import last_order, protection_ops
from tests.support.protect_fabric import ProtectedFabric, cut, fabric_topology, protected

ALARMED = ("ocs-a1", "ocs-b1")
POLLED = ("ocs-a2", "ocs-b2")
LINKS_PER_PAIR = 4
THRESHOLD_DBM = -20.0
MEASURE_SECONDS = 2.0
RECEIVER_LIT_DBM = -15.0
"""A receiver of a link on a lit span reads about -9 dBm here; a dark one near -60."""
WAIT_SECONDS = 15.0
"""Generous for a loaded 2-core machine: a switch takes tens of milliseconds."""


class Fabric(ProtectedFabric):
    def streams_live(self) -> bool:
        found = self.controller.detection()
        return all(found[name]["detection"] == "alarms" for name in ALARMED)

    def until(self, predicate: Callable[[], object], what: str,
              seconds: float = WAIT_SECONDS) -> None:
        super().until(predicate, what, seconds)

    def rates(self, seconds: float = MEASURE_SECONDS) -> dict[str, float]:
        """Messages a second each OCS received over the next ``seconds`` (device time)."""
        start = {name: self.lab.ocs[name].clock.now() for name in (*ALARMED, *POLLED)}
        time.sleep(seconds)
        found = {}
        for name, since in start.items():
            device = self.lab.ocs[name]
            elapsed = device.clock.now() - since
            found[name] = device.requests.between(since, since + elapsed) / elapsed
        return found

    def switch_of(self, link: Link, after: int) -> Operation:
        """The journaled switch of ``link`` after order ``after``, once it is closed."""
        found: list[Operation] = []

        def closed() -> bool:
            found[:] = [o for o in protection_ops(self.journal, after, "protection.switch")
                        if not o.is_open and link.name in o.intent["links"]]
            return bool(found)

        self.until(closed, f"{link.name}'s switch journaled")
        return found[-1]

    def receivers_lit(self, link: Link) -> bool:
        return all(self.lab.optics.power_dbm(
            f"{end.switch}:rx{end.port.removeprefix('Ethernet')}") > RECEIVER_LIT_DBM
            for end in (link.a, link.b))


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    directory = tmp_path_factory.mktemp("alarms")
    topology = fabric_topology(directory, LINKS_PER_PAIR, pairs=2, without_alarms=[2])
    config = ProtectConfig(wait_to_restore_seconds=0.3, threshold_dbm=THRESHOLD_DBM)
    with protected(Fabric, directory, topology, config, settle_seconds=30) as found:
        found.until(found.streams_live, "the alarm streams live")
        yield found


@pytest.fixture
def settled(fabric: Fabric) -> Iterator[Fabric]:
    # checked at the end of the last test; a loaded machine may have aged a reading since
    fabric.until(lambda: fabric.settled() and fabric.streams_live(), "settled, streams live")
    yield fabric
    for name in ALARMED:
        fabric.lab.clear(name, "alarm_drop")
    fabric.until(fabric.settled, "every link back on its working span")
    fabric.until(fabric.streams_live, "the alarm streams live again")


def test_loss_of_light_is_armed_on_the_judged_ports_of_units_that_have_it(
        settled: Fabric) -> None:
    """docs/dialects/ocs.md, "Loss-of-light alarms" (the project's SCPI extension,
    after IEEE 488.2's program messages and SCPI-99's query forms): on each unit that has
    them, every ingress port the controller judges light by is armed at its threshold —
    the links' transmitters and every span's arrival port — and the unit's stream is
    followed; a unit without them (the headers undefined) is polled, nothing armed."""
    fabric = settled
    for name in ALARMED:
        device = fabric.lab.ocs[name]
        wanted = {end.tx.port for link in fabric.inventory.links.values()
                  for end in (link.a, link.b) if end.tx.ocs == name}
        wanted |= {fiber.end.port for span in fabric.inventory.spans.values()
                   for fiber in (span.a_to_b, span.b_to_a) if fiber.end.ocs == name}
        armed = device.alarms.thresholds_dbm
        assert set(armed) == wanted, name
        assert all(threshold == THRESHOLD_DBM for threshold in armed.values())
        assert device.alarms.enabled
    detection = fabric.controller.detection()
    for name in ALARMED:
        assert detection[name]["alarm_stream"] == "live"
        assert detection[name]["poll_interval_ms"] >= 1000  # a reconciliation
    for name in POLLED:
        assert not fabric.lab.ocs[name].alarms.thresholds_dbm
        assert detection[name]["detection"] == "polling"
        assert detection[name]["alarm_stream"] is None
        assert detection[name]["alarm_connections"] == 0
        assert detection[name]["poll_interval_ms"] < 1000


def test_alarms_send_fewer_messages_than_polling_and_a_cut_is_still_restored(
        settled: Fabric) -> None:
    """G.808.1 (05/2014) clause 7.1 (1+1: one protection span per link) detected from the
    unit's loss-of-light events: the alarmed pair receives several times fewer messages
    than the polled pair, which carries as many links; a cut on each pair is switched,
    the light verified at both receivers, and reverted after the wait-to-restore."""
    fabric = settled
    rates = fabric.rates()  # one window for both pairs: load slows both alike
    alarmed, polled = max(rates[n] for n in ALARMED), min(rates[n] for n in POLLED)
    assert 0 < alarmed * 2 < polled, rates
    mark = fabric.events.mark()
    followed = {name: fabric.controller.detection()[name]["alarm_events"] for name in ALARMED}
    chosen = [fabric.inventory.link("link-1"), fabric.inventory.link("link-5")]
    with cut(fabric.lab, [link.working.name for link in chosen]):
        switched = fabric.events.wait("switch", [link.name for link in chosen],
                                      WAIT_SECONDS, since=mark)
        for event in switched:
            assert event.details["to_span"] == fabric.inventory.link(event.link).protection.name
        for link in chosen:
            fabric.until(lambda lk=link: fabric.receivers_lit(lk), f"{link.name}'s light")
    for name in ALARMED:  # the events were followed
        assert fabric.controller.detection()[name]["alarm_events"] > followed[name]
    fabric.events.wait("revert", [link.name for link in chosen], WAIT_SECONDS, since=mark)


def test_a_dropped_alarm_connection_falls_back_to_polling_and_still_restores(
        settled: Fabric) -> None:
    """docs/dialects/ocs.md, "Loss-of-light alarms" (the connection and its snapshot):
    the units reset every alarm connection (the emulator's ``alarm_drop``); the
    controller says the streams are lost and polls those units at full rate again, and
    a cut made meanwhile is restored from the polls. When the connections are served
    again, each new one starts with the snapshot, the controller reconciles from a fresh
    poll and slows down again."""
    fabric = settled
    before = fabric.rates()
    mark = fabric.events.mark()
    for name in ALARMED:
        fabric.lab.inject(name, Fault("alarm_drop"))
    fabric.until(lambda: all(fabric.controller.detection()[name]["detection"] == "polling"
                             for name in ALARMED), "polling again")
    lost = [e for e in fabric.events.events[mark:] if e.kind == "alarms" and "lost" in e.message]
    assert {e.message.split(":")[0] for e in lost} == set(ALARMED)
    # side by side with the polled pair (a loaded machine slows every poller alike)
    during = fabric.rates()
    for name in ALARMED:
        assert during[name] > 1.5 * before[name], (name, before, during)
        assert during[name] > 0.5 * min(during[n] for n in POLLED), (name, during)
    link = fabric.inventory.link("link-2")
    with cut(fabric.lab, [link.working.name]):
        fabric.events.wait("switch", [link.name], WAIT_SECONDS, since=mark)
        fabric.until(lambda: fabric.receivers_lit(link), "link-2's light on its protection")
    fabric.events.wait("revert", [link.name], WAIT_SECONDS, since=mark)
    connections = {name: fabric.controller.detection()[name]["alarm_connections"]
                   for name in ALARMED}
    for name in ALARMED:
        fabric.lab.clear(name, "alarm_drop")
    fabric.until(fabric.streams_live, "the alarm streams live again")
    for name in ALARMED:
        assert fabric.controller.detection()[name]["alarm_connections"] > connections[name]
    after = fabric.rates()
    assert max(after[name] for name in ALARMED) * 2 < min(after[n] for n in POLLED), after


def _free_pair(fabric: Fabric, name: str) -> tuple[int, int]:
    """An ingress and an egress port of OCS ``name`` that no link uses and nothing holds."""
    used = set().union(*(link_ports(link).get(name, set())
                         for link in fabric.inventory.links.values()))
    device = fabric.lab.ocs[name]
    held = device.connection_map()
    used |= set(held) | set(held.values())
    ingress = max(p for p in range(1, device.size + 1) if p not in used)
    egress = max(p for p in range(device.size + 1, 2 * device.size + 1) if p not in used)
    return ingress, egress


def test_a_change_made_elsewhere_is_seen_at_once_and_kept_through_a_switch(
        settled: Fabric) -> None:
    """docs/dialects/ocs.md, "Loss-of-light alarms" (the map announced): a connection
    another client makes on an alarmed unit is announced on its stream, and the
    controller reads that map at once, not at its reconciliation every few seconds.
    A switch through that unit then plans on the announced map without reading it, and
    the other client's connection is still there after the whole-map command."""
    fabric = settled
    name = ALARMED[0]
    ingress, egress = _free_pair(fabric, name)
    with open_ocs(fabric.inventory.device(name, "ocs")) as other:
        other.connect({ingress: egress})
    try:
        # well inside the reconciliation's map read (every SLOW_MAP_EVERY_SECONDS)
        fabric.until(lambda: (fabric.controller.detection()[name]["map"] or {}).get(ingress)
                     == egress, "the other client's connection in the controller's map",
                     seconds=SLOW_MAP_EVERY_SECONDS / 2)
        fabric.until(lambda: fabric.controller.detection()[name]["map_as_announced"],
                     "the controller's map is the one announced")
        link = fabric.inventory.link("link-3")
        after = last_order(fabric.journal)
        mark = fabric.events.mark()
        with cut(fabric.lab, [link.working.name]):
            change = fabric.switch_of(link, after)
            assert change.status == "ok", change.result
            planned = {n: entry["planned_on"] for n, entry in change.result["ocs"].items()}
            assert planned == dict.fromkeys(ALARMED, "the map it announced"), planned
            assert fabric.lab.ocs[name].connection_map().get(ingress) == egress
        fabric.events.wait("revert", [link.name], WAIT_SECONDS, since=mark)
        assert fabric.lab.ocs[name].connection_map().get(ingress) == egress
    finally:
        with open_ocs(fabric.inventory.device(name, "ocs")) as other:
            other.disconnect([ingress])


@pytest.mark.parametrize("fault", [Fault("alarm_freeze"), Fault("alarm_delay", seconds=0.3)],
                         ids=["silent", "late"])
def test_a_silent_or_late_alarm_stream_has_the_map_read_before_a_change(
        settled: Fabric, fault: Fault) -> None:
    """A stream that has said nothing for longer than a heartbeat and a half (the
    emulator's ``alarm_freeze``: the connection stays open, nothing is sent), or whose
    lines all come late (``alarm_delay``: each held back 0.3 s, the lag the driver
    measures by the unit's clock in them), may be holding back a change of the map: a
    switch through that unit reads its map first, while the other unit of the link,
    whose stream is prompt, is planned on what it announced."""
    fabric = settled
    quiet, prompt = ALARMED[1], ALARMED[0]
    link = fabric.inventory.link("link-4")
    after = last_order(fabric.journal)
    mark = fabric.events.mark()
    fabric.lab.inject(quiet, fault)
    try:
        # long enough to be silent, or for a heartbeat to come late
        time.sleep(MAP_HEARD_SECONDS + 0.3)
        with cut(fabric.lab, [link.working.name]):
            change = fabric.switch_of(link, after)
            assert change.status == "ok", change.result
            planned = {n: entry["planned_on"] for n, entry in change.result["ocs"].items()}
            assert planned == {prompt: "the map it announced", quiet: "the map read"}
    finally:
        fabric.lab.clear(quiet, fault.kind)
    fabric.events.wait("revert", [link.name], WAIT_SECONDS, since=mark)
