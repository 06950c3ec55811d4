"""The optical physical model (emulators/optics): dBm arithmetic, propagation, patching."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable

import pytest

from emulators.clock import SteppedClock
from emulators.ocs.model import OcsDevice
from emulators.optics.model import (
    NO_LIGHT_DBM,
    Element,
    Fiber,
    InputPower,
    OpticalModel,
    Receiver,
    Source,
    Transceivers,
    dbm_sum,
    dbm_to_mw,
    mw_to_dbm,
)
from emulators.scpi.parser import ScpiError


@pytest.fixture
def optics() -> OpticalModel:
    return OpticalModel(SteppedClock())


def _line(optics: OpticalModel, *fibers: Fiber, power_dbm: float = 0.0) -> None:
    """laser:out -> fibers in order -> pd:in."""
    optics.add(Source("laser", {"out": power_dbm}))
    optics.add(Receiver("pd", ["in"]))
    previous = "laser:out"
    for fiber in fibers:
        optics.add(fiber)
        optics.patch(previous, f"{fiber.name}:in")
        previous = f"{fiber.name}:out"
    optics.patch(previous, "pd:in")


# ---- dBm arithmetic ------------------------------------------------------------------


def test_two_equal_powers_add_up_to_3_01_db_more() -> None:
    assert dbm_sum([0.0, 0.0]) == pytest.approx(3.0103, abs=1e-4)
    assert dbm_sum([-20.0, -20.0]) == pytest.approx(-16.9897, abs=1e-4)


def test_dbm_sum_of_unequal_powers() -> None:
    # 1 mW + 0.1 mW = 1.1 mW
    assert dbm_sum([0.0, -10.0]) == pytest.approx(10 * math.log10(1.1), abs=1e-9)
    assert dbm_sum([5.0]) == pytest.approx(5.0)


def test_darkness_adds_nothing() -> None:
    assert dbm_sum([]) == NO_LIGHT_DBM
    assert dbm_sum([NO_LIGHT_DBM, NO_LIGHT_DBM]) == NO_LIGHT_DBM
    assert dbm_sum([-7.0, NO_LIGHT_DBM]) == pytest.approx(-7.0)


def test_dbm_and_milliwatts() -> None:
    assert dbm_to_mw(0.0) == pytest.approx(1.0)
    assert dbm_to_mw(10.0) == pytest.approx(10.0)
    assert dbm_to_mw(-30.0) == pytest.approx(0.001)
    assert dbm_to_mw(NO_LIGHT_DBM) == 0.0
    assert mw_to_dbm(0.0) == NO_LIGHT_DBM
    assert mw_to_dbm(100.0) == pytest.approx(20.0)


# ---- propagation -----------------------------------------------------------------------


def test_a_fiber_loses_length_times_loss_per_km_plus_connectors(optics: OpticalModel) -> None:
    fiber = Fiber("span", 30.0, loss_db_per_km=0.22, connector_loss_db=0.5)
    _line(optics, fiber, power_dbm=3.0)
    assert fiber.loss_db == pytest.approx(7.1)
    assert optics.power_dbm("span:in") == pytest.approx(3.0)
    assert optics.power_dbm("span:out") == pytest.approx(3.0 - 7.1)
    assert optics.power_dbm("pd:in") == pytest.approx(-4.1)


def test_fiber_defaults_and_a_zero_length_patch(optics: OpticalModel) -> None:
    fiber = Fiber("f", 10.0)
    assert fiber.loss_db == pytest.approx(10 * 0.22 + 0.5)
    patch = Fiber("jumper", 0.0, connector_loss_db=0.3)
    _line(optics, fiber, patch, power_dbm=0.0)
    assert optics.power_dbm("pd:in") == pytest.approx(-(2.7 + 0.3))


def test_losses_in_series_add_up(optics: OpticalModel) -> None:
    fibers = [Fiber(f"f{n}", 5.0 * n, loss_db_per_km=0.2, connector_loss_db=0.25)
              for n in range(1, 4)]
    _line(optics, *fibers, power_dbm=1.0)
    expected = 1.0 - sum(5.0 * n * 0.2 + 0.25 for n in range(1, 4))
    assert optics.power_dbm("pd:in") == pytest.approx(expected)


def test_a_fiber_cut_darkens_everything_downstream(optics: OpticalModel) -> None:
    first, second = Fiber("a", 1.0), Fiber("b", 1.0)
    _line(optics, first, second)
    lit = optics.power_dbm("pd:in")
    assert math.isfinite(lit)
    first.cut = True
    assert optics.power_dbm("a:in") == pytest.approx(0.0)  # upstream of the cut: still lit
    assert optics.power_dbm("a:out") == NO_LIGHT_DBM
    assert optics.power_dbm("b:out") == NO_LIGHT_DBM
    assert optics.power_dbm("pd:in") == NO_LIGHT_DBM
    first.cut = False
    assert optics.power_dbm("pd:in") == pytest.approx(lit)


def test_a_change_of_a_fibers_loss_is_notified_like_a_cut(optics: OpticalModel) -> None:
    """A device that reacts to light (an OCS's loss-of-light alarm) looks again only when
    told: a loss that grows (a bend, a dirty connector) must be told as a cut is; setting
    it to what it was already is no change."""
    fiber = Fiber("f", 10.0, connector_loss_db=0.5)
    _line(optics, fiber)
    told: list[str] = []
    optics.watch(lambda name, at, reached: told.append(name))
    fiber.connector_loss_db = 6.5
    assert told == ["f"]
    assert optics.power_dbm("pd:in") == pytest.approx(-(10 * 0.22 + 6.5))
    fiber.loss_db_per_km = 0.3
    fiber.length_km = 20.0
    fiber.connector_loss_db = 6.5
    assert told == ["f", "f", "f"]
    assert optics.power_dbm("pd:in") == pytest.approx(-(20 * 0.3 + 6.5))
    with pytest.raises(ValueError, match="negative"):
        fiber.connector_loss_db = -1.0


def test_a_disabled_source_is_dark_and_power_changes_are_seen(optics: OpticalModel) -> None:
    fiber = Fiber("f", 0.0, connector_loss_db=1.0)
    _line(optics, fiber)
    laser = optics.element("laser")
    assert isinstance(laser, Source)
    laser.set_power("out", -5.0)
    assert optics.power_dbm("pd:in") == pytest.approx(-6.0)
    laser.set_enabled("out", False)
    assert optics.power_dbm("pd:in") == NO_LIGHT_DBM
    laser.set_enabled("out", True)
    assert optics.power_dbm("pd:in") == pytest.approx(-6.0)


def test_an_unfed_input_is_dark(optics: OpticalModel) -> None:
    optics.add(Receiver("pd", ["in"]))
    assert optics.power_dbm("pd:in") == NO_LIGHT_DBM


def test_transceivers_emit_on_tx_and_receive_on_rx(optics: OpticalModel) -> None:
    bank = Transceivers("sw", 2, power_dbm=2.0)
    optics.add(bank)
    optics.add(Fiber("loopback", 0.0, connector_loss_db=0.5))
    optics.patch("sw:tx1", "loopback:in")
    optics.patch("loopback:out", "sw:rx2")
    assert optics.power_dbm("sw:rx2") == pytest.approx(1.5)
    assert optics.power_dbm("sw:rx1") == NO_LIGHT_DBM
    bank.set_enabled(1, False)
    assert optics.power_dbm("sw:rx2") == NO_LIGHT_DBM
    assert optics.power_dbm("sw:tx2") == pytest.approx(2.0)


# ---- loops -----------------------------------------------------------------------------


def test_a_ring_of_fibers_is_dark_not_a_recursion_error(optics: OpticalModel) -> None:
    optics.add(Fiber("a", 1.0))
    optics.add(Fiber("b", 1.0))
    optics.patch("a:out", "b:in")
    optics.patch("b:out", "a:in")
    assert optics.power_dbm("a:out") == NO_LIGHT_DBM
    assert optics.power_dbm("b:in") == NO_LIGHT_DBM


def test_light_fed_back_into_an_ocs_is_cut_at_the_loop() -> None:
    # Light enters ocs:1 -> egress 9; egress 9 is looped back into ingress 2,
    # which is steered to egress 10, whose crosstalk leaks back into egress 9:
    # a loop. The light that went round once is cut, so egress 9 carries exactly
    # what it carries when ingress 2 is shut.
    clock = SteppedClock()
    optics = OpticalModel(clock)
    device = OcsDevice("ocs", optics, size=8)
    optics.add(Source("laser", {"out": 0.0}))
    optics.add(Fiber("loop", 0.0, connector_loss_db=0.0))
    optics.patch("laser:out", "ocs:1")
    optics.patch("ocs:9", "loop:in")
    optics.patch("loop:out", "ocs:2")
    device.add((1, 2), (9, 10))
    clock.advance(1.0)
    looped = optics.power_dbm("ocs:9")
    assert looped == pytest.approx(-device.factory_loss_db(1, 9), abs=0.11)
    assert math.isfinite(optics.power_dbm("ocs:10"))  # the loop's own light arrives there
    device.set_enabled([2], False)
    assert optics.power_dbm("ocs:10") < looped - 49.0  # only 1->9's crosstalk is left
    assert optics.power_dbm("ocs:9") == pytest.approx(looped, rel=1e-12, abs=0.0)


def test_one_sweep_of_many_ports_reads_what_each_port_reads_alone() -> None:
    """powers_dbm (one instant, each port upstream computed once) agrees with power_dbm
    port by port, loops and crosstalk included, in any order of the ports asked."""
    clock = SteppedClock()
    optics = OpticalModel(clock)
    device = OcsDevice("ocs", optics, size=8)
    for n in range(1, 5):
        optics.add(Source(f"laser{n}", {"out": -float(n)}))
        optics.patch(f"laser{n}:out", f"ocs:{n}")
    optics.add(Fiber("loop", 0.0, connector_loss_db=0.0))
    optics.patch("ocs:9", "loop:in")
    optics.patch("loop:out", "ocs:5")
    device.add((1, 2, 3, 5), (9, 10, 11, 12))
    clock.advance(1.0)
    ports = [f"ocs:{p}" for p in range(1, 17)] + ["loop:in", "loop:out"]
    alone = [optics.power_dbm(port) for port in ports]
    assert any(math.isfinite(p) for p in alone) and any(p == NO_LIGHT_DBM for p in alone)
    assert optics.powers_dbm(ports) == alone
    assert optics.powers_dbm(reversed(ports)) == alone[::-1]
    assert optics.powers_dbm([]) == []


def test_a_change_tells_which_ports_its_light_reaches() -> None:
    """A reconfiguration of OCS a reaches its re-pointed egress ports and their
    neighbours, down the fiber into OCS b and on through b's connection; a fiber cut
    reaches what that fiber feeds; a change an element cannot place reaches any port."""
    clock = SteppedClock()
    optics = OpticalModel(clock)
    a, b = OcsDevice("a", optics, size=8), OcsDevice("b", optics, size=8)
    optics.add(Source("laser", {"out": 0.0}))
    optics.add(Fiber("span", 10.0))
    optics.patch("laser:out", "a:1")
    optics.patch("a:12", "span:in")
    optics.patch("span:out", "b:3")
    b.add((3,), (14,))
    told: list[tuple[str, float | None, frozenset[str] | None]] = []
    optics.watch(lambda name, at, reached: told.append((name, at, reached)))
    a.add((1,), (12,))
    (_, now_at, now), (_, done_at, done) = told
    assert now_at is None and done_at is not None and done_at > 0 and now == done
    assert now == {"a:11", "a:12", "a:13", "span:in", "span:out", "b:3",
                   "b:13", "b:14", "b:15"}
    told.clear()
    optics.element("span").cut = True  # type: ignore[attr-defined]
    assert told == [("span", None, frozenset({"span:out", "b:3", "b:13", "b:14", "b:15"}))]
    told.clear()
    optics.changed("laser")
    assert told == [("laser", None, None)]
    # through an element that cannot say which output its light leaves by (a 1x2
    # fan-out): on through all of them
    from emulators.instruments.fanout import FanOut

    optics.add(Fiber("lead", 1.0))
    optics.add(FanOut("split", 2))
    optics.patch("lead:out", "split:in")
    optics.patch("split:1", "a:5")
    optics.patch("split:2", "b:6")
    told.clear()
    optics.element("lead").cut = True  # type: ignore[attr-defined]
    assert told == [("lead", None, frozenset({"lead:out", "split:in", "split:1", "split:2",
                                              "a:5", "b:6"}))]


def test_changes_made_together_are_told_once_with_every_port_they_reach() -> None:
    """A cable cut is one change: the fibers cut in one ``together`` block are told once,
    at its end, with the ports all of them reach (the first fiber named); what is read
    inside the block already sees them; a change announced ahead or one that cannot
    name its ports is told at once as before; a nested block is part of the outer."""
    optics = OpticalModel(SteppedClock())
    for name in ("x", "y"):  # two lines that share nothing
        optics.add(Source(f"{name}-laser", {"out": 0.0}))
        optics.add(Fiber(f"{name}-span", 10.0))
        optics.add(Receiver(f"{name}-pd", ["in"]))
        optics.patch(f"{name}-laser:out", f"{name}-span:in")
        optics.patch(f"{name}-span:out", f"{name}-pd:in")
    assert optics.power_dbm("x-pd:in") > -10.0
    told: list[tuple[str, float | None, frozenset[str] | None]] = []
    optics.watch(lambda name, at, reached: told.append((name, at, reached)))
    with optics.together():
        optics.element("x-span").cut = True  # type: ignore[attr-defined]
        with optics.together():
            optics.element("y-span").cut = True  # type: ignore[attr-defined]
        assert optics.power_dbm("x-pd:in") == NO_LIGHT_DBM  # forgotten at once
        optics.changed("x-laser", at=5.0, outputs=("out",))
        optics.changed("y-laser")
        assert told == [("x-laser", 5.0, frozenset({"x-laser:out", "x-span:in", "x-span:out",
                                                     "x-pd:in"})),
                        ("y-laser", None, None)]
        told.clear()
    assert told == [("x-span", None, frozenset({"x-span:out", "x-pd:in",
                                                "y-span:out", "y-pd:in"}))]
    told.clear()
    with optics.together():
        pass  # nothing changed: nothing told
    optics.element("x-span").cut = False  # type: ignore[attr-defined]
    assert told == [("x-span", None, frozenset({"x-span:out", "x-pd:in"}))]
    assert optics.power_dbm("x-pd:in") > -10.0
    told.clear()
    with pytest.raises(KeyError), optics.together():  # what was cut before is told
        optics.element("x-span").cut = True  # type: ignore[attr-defined]
        optics.element("no-such-span")
    assert told == [("x-span", None, frozenset({"x-span:out", "x-pd:in"}))]
    assert optics.power_dbm("x-pd:in") == NO_LIGHT_DBM


def test_a_change_stops_at_a_transceivers_receivers() -> None:
    """A switch's transmitters send their own light, whatever reaches its receivers: a
    cut of the fiber into one receiver reaches that receiver and not, through the
    switch, every transmitter and all they feed (which had every OCS of a fabric
    evaluate its alarms at every change)."""
    optics = OpticalModel(SteppedClock())
    optics.add(Source("laser", {"out": 0.0}))
    optics.add(Fiber("into-switch", 1.0))
    optics.add(Transceivers("sw", 4))
    optics.add(Fiber("out-of-switch", 1.0))
    optics.add(Receiver("far", ["in"]))
    optics.patch("laser:out", "into-switch:in")
    optics.patch("into-switch:out", "sw:rx1")
    optics.patch("sw:tx1", "out-of-switch:in")
    optics.patch("out-of-switch:out", "far:in")
    told: list[frozenset[str] | None] = []
    optics.watch(lambda name, at, reached: told.append(reached))
    optics.element("into-switch").cut = True  # type: ignore[attr-defined]
    assert told == [frozenset({"into-switch:out", "sw:rx1"})]
    assert optics.power_dbm("far:in") > -10.0  # its transmitter is still lit


# ---- powers kept between questions -------------------------------------------------------


class _CountingFiber(Fiber):
    asked = 0

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        _CountingFiber.asked += 1
        return super().output_power(port, input_power, now)


class _Drifting(Element):
    """An element whose output follows time without announcing it (as an amplifier's gain
    loop does): not steady."""

    def input_ports(self) -> Iterable[str]:
        return ("in",)

    def output_ports(self) -> Iterable[str]:
        return ("out",)

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        return input_power("in") - 0.5 * now


def test_a_power_is_kept_until_a_change_reaches_it(optics: OpticalModel) -> None:
    """Asked again with nothing changed, a port's power is not computed again; a change
    that cannot reach it keeps it; one that can is seen at the next question."""
    _CountingFiber.asked = 0
    _line(optics, _CountingFiber("a", 10.0), _CountingFiber("b", 10.0))
    optics.add(Source("other", {"out": 0.0}))
    optics.add(_CountingFiber("c", 1.0))
    optics.patch("other:out", "c:in")
    first = optics.power_dbm("pd:in")
    asked = _CountingFiber.asked
    assert asked == 2
    assert optics.power_dbm("pd:in") == first and _CountingFiber.asked == asked
    optics.element("c").cut = True  # type: ignore[attr-defined]  # not upstream of pd
    assert optics.power_dbm("pd:in") == first and _CountingFiber.asked == asked
    optics.element("b").loss_db_per_km = 0.3  # type: ignore[attr-defined]
    assert optics.power_dbm("pd:in") == pytest.approx(first - 10.0 * (0.3 - 0.22))
    assert _CountingFiber.asked == asked + 1  # b again; a's output was kept
    optics.element("a").cut = True  # type: ignore[attr-defined]
    assert optics.power_dbm("pd:in") == NO_LIGHT_DBM
    optics.changed("laser")  # a change it cannot place forgets everything
    asked = _CountingFiber.asked
    optics.power_dbm("pd:in")
    assert _CountingFiber.asked == asked + 2


def test_light_through_an_element_that_is_not_steady_is_asked_every_time() -> None:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    optics.add(Source("laser", {"out": 0.0}))
    optics.add(_Drifting("amp"))
    optics.add(Fiber("f", 0.0, connector_loss_db=0.0))
    optics.add(Receiver("pd", ["in", "direct"]))
    optics.add(Fiber("g", 0.0, connector_loss_db=1.0))
    optics.patch("laser:out", "amp:in")
    optics.patch("amp:out", "f:in")
    optics.patch("f:out", "pd:in")
    assert optics.powers_dbm(["pd:in", "laser:out"]) == [0.0, 0.0]
    clock.advance(2.0)
    assert optics.powers_dbm(["pd:in", "laser:out"]) == [-1.0, 0.0]
    clock.advance(2.0)
    assert optics.power_dbm("f:out") == -2.0


def test_a_change_announced_ahead_is_seen_when_it_is_due() -> None:
    """An OCS connection lights its egress when the reconfiguration completes: the dark
    power kept meanwhile is forgotten then, though nothing is notified at that time."""
    clock = SteppedClock()
    optics = OpticalModel(clock)
    device = OcsDevice("ocs", optics, size=8)
    optics.add(Source("laser", {"out": 0.0}))
    optics.patch("laser:out", "ocs:1")
    device.add((1,), (9,))
    assert optics.power_dbm("ocs:9") == NO_LIGHT_DBM  # settling
    clock.advance(device.switching_seconds() * 1.1)
    assert optics.power_dbm("ocs:9") == pytest.approx(-device.factory_loss_db(1, 9), abs=0.11)


def test_an_ocs_lit_again_at_the_end_of_its_boot_without_being_asked_anything_else() -> None:
    clock = SteppedClock()
    optics = OpticalModel(clock)
    device = OcsDevice("ocs", optics, size=8, boot_seconds=2.0)
    optics.add(Source("laser", {"out": 0.0}))
    optics.patch("laser:out", "ocs:1")
    device.add((1,), (9,))
    clock.advance(1.0)
    lit = optics.power_dbm("ocs:9")
    assert math.isfinite(lit)
    device.reboot(power_loss=True)
    assert optics.power_dbm("ocs:9") == NO_LIGHT_DBM
    seen = []
    for _ in range(100):  # the boot, then the map restored (the cell cold: slower)
        clock.advance(0.05)
        seen.append(optics.power_dbm("ocs:9"))  # nothing else asked: no walk ends the boot
    assert seen[0] == NO_LIGHT_DBM and seen[-1] == pytest.approx(lit, abs=0.21)
    assert seen[-1] == optics.power_dbm_at("ocs:9", clock.now())


@pytest.mark.parametrize("seed", range(6))
def test_kept_powers_are_what_a_walk_from_scratch_gives_after_any_change(seed: int) -> None:
    """Random changes of every kind to two OCSes joined by spans (connections, ports
    shut, reboots, fiber cuts and losses, sources, time passing through the settling of
    beams and the end of boots), each followed by questions: every port's power is what
    an uncached walk at that instant gives (``power_dbm_at(port, now)``)."""
    import random

    rng = random.Random(seed)
    clock = SteppedClock()
    optics = OpticalModel(clock)
    a = OcsDevice("a", optics, size=8, boot_seconds=0.3)
    b = OcsDevice("b", optics, size=8, boot_seconds=0.3)
    lasers = Source("tx", {f"{n}": -float(n) for n in range(1, 5)})
    optics.add(lasers)
    optics.add(Transceivers("sw", 4))
    optics.add(_Drifting("amp"))
    fibers = [Fiber(f"span{n}", rng.uniform(1.0, 40.0)) for n in range(1, 5)]
    for n, fiber in enumerate(fibers, start=1):
        optics.add(fiber)
        optics.patch(f"tx:{n}", f"a:{n}")
        optics.patch(f"a:{8 + n}", f"{fiber.name}:in")
        optics.patch(f"{fiber.name}:out", f"b:{n}" if n < 4 else "amp:in")
        optics.patch(f"b:{8 + n}", f"sw:rx{n}")
    optics.patch("amp:out", "b:4")
    optics.patch("sw:tx1", "a:5")
    optics.patch("sw:tx2", "b:5")
    ports = [f"{ocs}:{p}" for ocs in ("a", "b") for p in range(1, 17)] + \
        [f"{f.name}:out" for f in fibers] + [f"sw:rx{n}" for n in range(1, 5)]

    def connect(device: OcsDevice) -> None:
        ingress = rng.sample(range(1, 9), rng.randint(0, 5))
        egress = rng.sample(range(9, 17), len(ingress))
        device.only(tuple(ingress), tuple(egress))

    changes = [
        lambda: connect(rng.choice((a, b))),
        lambda: rng.choice((a, b)).set_enabled([rng.randint(1, 16)], rng.random() < 0.5),
        lambda: rng.choice((a, b)).reboot(power_loss=rng.random() < 0.5),
        lambda: setattr(rng.choice(fibers), "cut", rng.random() < 0.4),
        lambda: setattr(rng.choice(fibers), "length_km", rng.uniform(1.0, 40.0)),
        lambda: lasers.set_power(str(rng.randint(1, 4)), rng.uniform(-5.0, 3.0)),
        lambda: lasers.set_enabled(str(rng.randint(1, 4)), rng.random() < 0.7),
        lambda: optics.element("sw").set_enabled(rng.randint(1, 4), rng.random() < 0.7),
        lambda: clock.advance(rng.choice((0.0, 0.001, 0.01, 0.05, 0.2, 0.5))),
        lambda: clock.advance(rng.choice((0.0, 0.001, 0.01, 0.05, 0.2, 0.5))),
    ]
    for _ in range(300):
        try:
            rng.choice(changes)()
        except ScpiError:
            pass  # refused (the unit booting, a port shut): nothing changed
        asked = rng.sample(ports, rng.randint(1, len(ports)))
        version = optics.version
        first = optics.powers_dbm(asked)
        again = optics.powers_dbm(asked)
        now = clock.now()
        scratch = [optics.power_dbm_at(port, now) for port in asked]
        assert again == scratch
        if optics.version == version:  # no boot ended while the first was answered
            assert first == scratch


# ---- building the graph ----------------------------------------------------------------


def test_patch_validation(optics: OpticalModel) -> None:
    optics.add(Source("laser", {"out": 0.0}))
    optics.add(Fiber("f", 1.0))
    optics.add(Receiver("pd", ["in"]))
    with pytest.raises(KeyError, match="no optical element 'ghost'"):
        optics.patch("ghost:out", "f:in")
    with pytest.raises(KeyError, match="no optical element 'ghost'"):
        optics.patch("laser:out", "ghost:in")
    with pytest.raises(ValueError, match="laser:nope is not an output port"):
        optics.patch("laser:nope", "f:in")
    with pytest.raises(ValueError, match="f:out is not an input port"):
        optics.patch("laser:out", "f:out")  # an output cannot be fed
    with pytest.raises(ValueError, match="pd:in is not an output port"):
        optics.patch("pd:in", "f:in")
    with pytest.raises(ValueError, match="element:port"):
        optics.patch("laser", "f:in")
    with pytest.raises(ValueError, match="element:port"):
        optics.patch("laser:out", "f:")
    optics.patch("laser:out", "f:in")
    optics.add(Source("other", {"out": 0.0}))
    with pytest.raises(ValueError, match="f:in is already fed by laser:out"):
        optics.patch("other:out", "f:in")
    assert optics.upstream_of("f:in") == "laser:out"
    assert optics.downstream_of("laser:out") == "f:in"
    assert optics.downstream_of("other:out") is None


def test_element_names_are_checked(optics: OpticalModel) -> None:
    optics.add(Fiber("f", 1.0))
    with pytest.raises(ValueError, match="already exists"):
        optics.add(Fiber("f", 2.0))
    with pytest.raises(ValueError, match="may not contain ':'"):
        Element("a:b")
    with pytest.raises(ValueError, match="must not be negative"):
        Fiber("neg", -1.0)
    with pytest.raises(ValueError, match="must not be negative"):
        Fiber("neg", 1.0, connector_loss_db=-0.1)
    assert [e.name for e in optics.elements()] == ["f"]


# ---- threads ---------------------------------------------------------------------------


def test_concurrent_readers_writers_and_builders(optics: OpticalModel) -> None:
    fiber = Fiber("span", 10.0, loss_db_per_km=0.2, connector_loss_db=0.0)
    _line(optics, fiber, power_dbm=0.0)
    lit = optics.power_dbm("pd:in")
    errors: list[BaseException] = []
    seen: set[float] = set()
    seen_lock = threading.Lock()

    def read() -> None:
        try:
            for _ in range(300):
                value = optics.power_dbm("pd:in")
                with seen_lock:
                    seen.add(value)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    def toggle() -> None:
        try:
            for n in range(300):
                fiber.cut = n % 2 == 0
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    def build(worker: int) -> None:
        try:
            for n in range(50):
                name = f"w{worker}-{n}"
                optics.add(Fiber(name, 1.0))
                optics.add(Receiver(f"{name}-pd", ["in"]))
                optics.patch(f"{name}:out", f"{name}-pd:in")
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    threads = [threading.Thread(target=read) for _ in range(6)]
    threads += [threading.Thread(target=toggle)]
    threads += [threading.Thread(target=build, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert seen <= {lit, NO_LIGHT_DBM}
    assert len(optics.elements()) == 3 + 3 * 50 * 2
    fiber.cut = False
    assert optics.power_dbm("pd:in") == pytest.approx(lit)
