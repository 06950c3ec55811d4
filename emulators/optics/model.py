"""A graph of optical elements through which power propagates, in dBm.

Elements (light sources, fibers, OCS engines, amplifiers, receivers) own named ports; a
port is written ``element:port``. Patches join one element's output port to another's
input port. Power is pulled, not pushed: asking for the power at a port walks upstream
and lets each element compute its output from its inputs at the current device time, so
a change anywhere (a fiber cut, a new OCS connection, an amplifier's ALS shutting its
pump) is seen by every device that looks next, and telemetry agrees across devices. A
device reading many ports at one instant (a power query over a channel list, an alarm
evaluation) asks :meth:`OpticalModel.powers_dbm`: within that one question each port is
computed once (an egress port's light is its ingress port's, and its neighbours' for
crosstalk), which is what a real unit's single sweep of its monitors gives.

Between changes a port's power stays what it was, so the model keeps, across questions,
the power of every port that only *steady* elements feed (:attr:`Element.steady`: its
output follows only its inputs and what it announces), and forgets it when a change can
reach the port (below): at once, and again at the device time a change announced ahead
is due. An element that follows time in ways it does not announce (an amplifier) is not
steady, and no power it took part in is kept.

Darkness is ``-inf`` dBm (:data:`NO_LIGHT_DBM`); monitors add their own noise floor.
Light that loops back on itself is cut at the loop.

Change notification. The powers kept between questions are forgotten by the same notices
that tell the devices; and a device that reacts to light on its own (an OCS raising a
loss-of-light alarm) must learn *when* to look again, without polling every port. So
every element that changes what it emits or passes at once (a fiber cut or mended or its
loss changed, a transmitter switched or its power set, an OCS re-pointing or closing a
port) says so with :meth:`Element.changed`; the model bumps :attr:`OpticalModel.version`
and calls every listener given to :meth:`OpticalModel.watch` with the element's name. A
change an element will make by itself (a beam that settles when its reconfiguration
completes) is announced ahead, with the device time it is due, so a watcher can look
again then. An element whose output follows time in ways it does not announce (an
amplifier's gain loop and ALS) is notified by whoever steps it (the lab's amplifier
tick).
"""

from __future__ import annotations

import heapq
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from emulators.clock import Clock

NO_LIGHT_DBM = float("-inf")

InputPower = Callable[[str], float]
Listener = Callable[[str, "float | None", "frozenset[str] | None"], None]
"""Told the name of an element whose light changed, ``None`` (it changed now) or the
device time at which it will change by itself (a beam that settles then), and the
ports whose light the change can reach (see :meth:`OpticalModel.changed`; ``None``:
any port joined to that element). Changes made together (:meth:`OpticalModel.together`)
are told once, with the first element's name and every port they reach. Called in the
changing thread, possibly with the model's lock held: it must be quick and must not
block."""


def dbm_to_mw(dbm: float) -> float:
    return 0.0 if dbm == NO_LIGHT_DBM else 10.0 ** (dbm / 10.0)


def mw_to_dbm(mw: float) -> float:
    return NO_LIGHT_DBM if mw <= 0.0 else 10.0 * math.log10(mw)


def dbm_sum(powers_dbm: Iterable[float]) -> float:
    """Total power of incoherent contributions."""
    return mw_to_dbm(sum(dbm_to_mw(p) for p in powers_dbm))


class Element:
    """Something light passes through. Subclasses name their ports and their physics."""

    steady = False
    """Its outputs follow only its inputs and its own state, and every change of that
    state is announced with :meth:`changed` (now, or ahead with the time it is due): the
    model may keep the power of a port only such elements feed until a change reaches
    it. An element that is not steady (the default) is asked at every question."""

    def __init__(self, name: str):
        if ":" in name:
            raise ValueError(f"element name {name!r} may not contain ':'")
        self.name = name
        self.model: OpticalModel | None = None
        """The model this element was added to (set by :meth:`OpticalModel.add`)."""

    def changed(self, at: float | None = None, outputs: Iterable[str] | None = None, *,
                again_at: float | None = None) -> None:
        """Tell the model that what this element emits or passes has just changed, or
        will change by itself at device time ``at``: on ``outputs`` (its output ports'
        names), or on any of them when ``None``; and, with ``again_at``, that the same
        outputs change by themselves once more then (a beam dark now, lit once it has
        settled)."""
        if self.model is not None:
            self.model.changed(self.name, at, outputs, again_at=again_at)

    def feeds(self, input_port: str) -> Iterable[str] | None:
        """The output ports the light entering ``input_port`` can leave by now; ``None``
        when it may be any (the default, unless the element has one output)."""
        outputs = list(self.output_ports())
        return outputs if len(outputs) == 1 else None

    def input_ports(self) -> Iterable[str]:
        return ()

    def output_ports(self) -> Iterable[str]:
        return ()

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        """Power (dBm) leaving output ``port``, given the power at each input."""
        raise KeyError(port)

    def change_times(self, start: float, end: float) -> Iterable[float]:
        """Device times in ``(start, end]`` at which this element's outputs changed or will
        change by themselves (a beam settling, a laser turned on). Elements whose
        outputs follow their inputs at once have none."""
        return ()


class Source(Element):
    """Transmitters: each output port emits a set power while enabled."""

    steady = True

    def __init__(self, name: str, ports: dict[str, float]):
        super().__init__(name)
        self._power_dbm = dict(ports)
        self._enabled = dict.fromkeys(ports, True)

    def output_ports(self) -> Iterable[str]:
        return self._power_dbm.keys()

    def set_enabled(self, port: str, enabled: bool) -> None:
        self._power_dbm[port]
        if self._enabled[port] != enabled:
            self._enabled[port] = enabled
            self.changed()

    def set_power(self, port: str, power_dbm: float) -> None:
        if self._power_dbm[port] != power_dbm:
            self._power_dbm[port] = power_dbm
            self.changed()

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        return self._power_dbm[port] if self._enabled[port] else NO_LIGHT_DBM


class Fiber(Element):
    """A fiber from ``in`` to ``out``: attenuation per km plus connector losses.

    ``cut`` darkens it (the fiber-cut fault).
    """

    steady = True

    def __init__(
        self,
        name: str,
        length_km: float,
        *,
        loss_db_per_km: float = 0.22,
        connector_loss_db: float = 0.5,
    ):
        super().__init__(name)
        if length_km < 0 or loss_db_per_km < 0 or connector_loss_db < 0:
            raise ValueError(f"fiber {name}: length and losses must not be negative")
        self._length_km = length_km
        self._loss_db_per_km = loss_db_per_km
        self._connector_loss_db = connector_loss_db
        self._cut = False

    # A loss that changes (a bend, a dirty connector, a test's wandering level) changes the
    # light at the far end as surely as a cut: whoever reacts to light must hear of it.
    @property
    def length_km(self) -> float:
        return self._length_km

    @length_km.setter
    def length_km(self, value: float) -> None:
        self._set_loss("_length_km", value)

    @property
    def loss_db_per_km(self) -> float:
        return self._loss_db_per_km

    @loss_db_per_km.setter
    def loss_db_per_km(self, value: float) -> None:
        self._set_loss("_loss_db_per_km", value)

    @property
    def connector_loss_db(self) -> float:
        return self._connector_loss_db

    @connector_loss_db.setter
    def connector_loss_db(self, value: float) -> None:
        self._set_loss("_connector_loss_db", value)

    def _set_loss(self, attribute: str, value: float) -> None:
        if value < 0:
            raise ValueError(f"fiber {self.name}: length and losses must not be negative")
        if getattr(self, attribute) != value:
            setattr(self, attribute, float(value))
            self.changed(outputs=("out",))

    @property
    def cut(self) -> bool:
        return self._cut

    @cut.setter
    def cut(self, cut: bool) -> None:
        if cut != self._cut:
            self._cut = cut
            self.changed(outputs=("out",))

    @property
    def loss_db(self) -> float:
        return self.length_km * self.loss_db_per_km + self.connector_loss_db

    def input_ports(self) -> Iterable[str]:
        return ("in",)

    def output_ports(self) -> Iterable[str]:
        return ("out",)

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        if port != "out":
            raise KeyError(port)
        if self.cut:
            return NO_LIGHT_DBM
        return input_power("in") - self.loss_db


class Receiver(Element):
    """Photodiodes at the end of the line: input ports only."""

    steady = True

    def __init__(self, name: str, ports: Iterable[str]):
        super().__init__(name)
        self._ports = list(ports)

    def input_ports(self) -> Iterable[str]:
        return self._ports


class _Together:
    """The changes made in one :meth:`OpticalModel.together` block: the first element
    changed, and every port they reach."""

    def __init__(self) -> None:
        self.first = ""
        self.reached: set[str] = set()


class OpticalModel:
    """The graph. Thread-safe: servers on the lab's loop and tests read it at once."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.lock = threading.RLock()
        self._elements: dict[str, Element] = {}
        self._upstream: dict[str, str] = {}  # input port -> the output port feeding it
        self._downstream: dict[str, str] = {}  # output port -> the input port it feeds
        self._inputs: dict[str, frozenset[str]] = {}
        self._outputs: dict[str, frozenset[str]] = {}
        self._passes: dict[str, tuple[str, ...]] = {}
        """Per element that does not override :meth:`Element.feeds`: the ports (named
        ``element:port``) a change entering it reaches, whatever the input."""
        self._listeners: list[Listener] = []
        self._ports: dict[str, tuple[Element, str]] = {}
        self.version = 0
        """Bumped at every notified change (see the module docstring)."""
        self._kept: dict[str, float] = {}  # port -> its power now, fed by steady elements
        self._due: list[tuple[float, int, frozenset[str] | None]] = []  # changes ahead
        self._together: _Together | None = None  # inside together()

    def watch(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(element_name, at)`` at every notified change (``at``: ``None``
        for now, else the device time it is due); returns the function that stops it."""
        with self.lock:
            self._listeners.append(listener)

        def unwatch() -> None:
            with self.lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unwatch

    def changed(self, element: str, at: float | None = None,
                outputs: Iterable[str] | None = None, *,
                again_at: float | None = None) -> None:
        """Element ``element``'s light has just changed (or will at device time ``at``):
        bump :attr:`version`, tell the listeners which ports the change can reach; with
        ``again_at``, the same again for that later time (one walk for both).

        With ``outputs`` (the element's output ports that changed) that is those ports
        and every port downstream of them: through each patch, and through each element
        by the outputs its :meth:`Element.feeds` names (all of them where it cannot
        say). Without, ``None``: anything joined to the element."""
        times = (at,) if again_at is None else (at, again_at)
        with self.lock:
            self.version += 1
            listeners = list(self._listeners)
            reached = None if outputs is None else self._reach(element, outputs)
            self._forget(reached)
            for when in times:
                if when is not None:
                    heapq.heappush(self._due, (when, self.version, reached))
            together = self._together
            if together is not None and reached is not None and times == (None,):
                together.first = together.first or element
                together.reached.update(reached)  # told with the others at the end
                return
        for when in times:
            for listener in listeners:
                listener(element, when, reached)

    @contextmanager
    def together(self) -> Iterator[None]:
        """Changes made in the block are one change (a cable cut: every fiber at once),
        the model's lock held throughout: the listeners hear of those that change now
        once, at the end, with every port they reach, rather than once per element (a
        cut of 64 spans told sixteen OCSes 128 times each). A change whose ports cannot
        be named, or that is announced ahead, is told at once as usual."""
        self.lock.acquire()
        if self._together is not None:  # inside another: part of it
            try:
                yield
            finally:
                self.lock.release()
            return
        self._together = together = _Together()
        try:
            yield
        finally:  # what was changed before a failure is told all the same
            self._together = None
            listeners = list(self._listeners)
            self.lock.release()
            if together.reached:
                reached = frozenset(together.reached)
                for listener in listeners:
                    listener(together.first, None, reached)

    def _forget(self, ports: frozenset[str] | None) -> None:
        """Drop the kept powers of ``ports`` (``None``: of every port)."""
        if ports is None:
            self._kept.clear()
        elif len(ports) < len(self._kept):
            for port in ports:
                self._kept.pop(port, None)
        else:
            self._kept = {p: v for p, v in self._kept.items() if p not in ports}

    def _forget_due(self, now: float) -> None:
        """Forget what the changes announced for ``now`` or earlier reach."""
        while self._due and self._due[0][0] <= now:
            self._forget(heapq.heappop(self._due)[2])

    def _reach(self, element: str, outputs: Iterable[str]) -> frozenset[str]:
        found: set[str] = set()
        frontier = [f"{element}:{port}" for port in outputs]
        while frontier:
            port = frontier.pop()
            if port in found:
                continue
            found.add(port)
            entry = self._downstream.get(port)
            if entry is None or entry in found:
                continue
            found.add(entry)
            target, local = self._split(entry)
            fixed = self._passes.get(target.name)
            if fixed is not None:  # the same whatever it carries (a fiber's one output)
                frontier.extend(fixed)
                continue
            passes = target.feeds(local)
            if passes is None:  # it cannot say: any of its outputs
                passes = self._outputs[target.name]
            frontier.extend(f"{target.name}:{out}" for out in passes)
        return frozenset(found)

    def add(self, element: Element) -> Element:
        with self.lock:
            if element.name in self._elements:
                raise ValueError(f"optical element {element.name!r} already exists")
            element.model = self
            self._elements[element.name] = element
            self._inputs[element.name] = frozenset(element.input_ports())
            self._outputs[element.name] = frozenset(element.output_ports())
            if type(element).feeds is Element.feeds:
                # the default: its one output, or any of them; never what it carries
                self._passes[element.name] = tuple(
                    f"{element.name}:{out}" for out in sorted(self._outputs[element.name]))
            return element

    def element(self, name: str) -> Element:
        try:
            return self._elements[name]
        except KeyError:
            raise KeyError(f"no optical element {name!r}") from None

    def elements(self) -> list[Element]:
        with self.lock:
            return list(self._elements.values())

    def patch(self, from_port: str, to_port: str) -> None:
        """Join output ``element:port`` to input ``element:port``."""
        with self.lock:
            src_element, src_port = self._split(from_port)
            dst_element, dst_port = self._split(to_port)
            if src_port not in self._outputs[src_element.name]:
                raise ValueError(f"{from_port} is not an output port")
            if dst_port not in self._inputs[dst_element.name]:
                raise ValueError(f"{to_port} is not an input port")
            if to_port in self._upstream:
                raise ValueError(f"{to_port} is already fed by {self._upstream[to_port]}")
            self._upstream[to_port] = from_port
            self._downstream[from_port] = to_port
            self._kept.clear()

    def connected(self, name: str) -> frozenset[str]:
        """Every element joined to element ``name`` by patches, in either direction, itself
        included: all the light that can ever reach it comes from among them."""
        with self.lock:
            neighbours: dict[str, set[str]] = {}
            for dst, src in self._upstream.items():
                a, b = dst.partition(":")[0], src.partition(":")[0]
                neighbours.setdefault(a, set()).add(b)
                neighbours.setdefault(b, set()).add(a)
            found = {name}
            frontier = [name]
            while frontier:
                for other in neighbours.get(frontier.pop(), ()):
                    if other not in found:
                        found.add(other)
                        frontier.append(other)
            return frozenset(found)

    def upstream_of(self, input_port: str) -> str | None:
        with self.lock:
            return self._upstream.get(input_port)

    def downstream_of(self, output_port: str) -> str | None:
        with self.lock:
            return self._downstream.get(output_port)

    def power_dbm(self, port: str) -> float:
        """Power at ``element:port`` now (input or output port), in dBm."""
        return self.powers_dbm((port,))[0]

    def powers_dbm(self, ports: Iterable[str]) -> list[float]:
        """Power at each of ``ports``, all at one instant (now), in their order: what
        :meth:`power_dbm` gives for each, every port upstream of them computed once,
        and a port kept from an earlier question (see the module docstring) not
        computed again."""
        with self.lock:
            now = self.clock.now()
            self._forget_due(now)
            version = self.version
            sweep = _Sweep(self._kept)
            found = [self._walk(port, now, set(), sweep) for port in ports]
            # An element may notify a change while it is asked (an OCS whose boot was
            # due): then what this question computed before it is not kept.
            if self.version == version:
                self._kept.update(sweep.steady)
            return found

    def power_dbm_at(self, port: str, when: float) -> float:
        """Power at ``port`` at device time ``when``, which may lie in the recent past.

        This is what a logging instrument recorded then. Elements answer for a
        past time from what they remember of it (an OCS its recent
        reconfigurations, a laser its recent settings); a fiber cut or a port
        state is not remembered and counts as if it had always been so.
        """
        with self.lock:
            return self._walk(port, when, set(), None)

    def change_times(self, start: float, end: float) -> list[float]:
        """Sorted device times in ``(start, end]`` at which some element's output changed
        (see :meth:`Element.change_times`): between two of them every power is constant."""
        with self.lock:
            times = {t for element in self._elements.values()
                     for t in element.change_times(start, end)}
        return sorted(t for t in times if start < t <= end)

    def _split(self, port: str) -> tuple[Element, str]:
        known = self._ports.get(port)
        if known is not None:
            return known
        name, sep, local = port.partition(":")
        if not sep or not local:
            raise ValueError(f"port {port!r} must be written element:port")
        found = self._ports[port] = (self.element(name), local)  # elements are never removed
        return found

    def _walk(self, port: str, now: float, visiting: set[str], sweep: _Sweep | None) -> float:
        """The power at ``port``: ``visiting`` holds the ports on the way here (a loop is
        cut where the walk meets one of them again), and is as it was on return."""
        if sweep is not None:
            kept = sweep.kept.get(port)
            if kept is not None:
                return kept
            known = sweep.known.get(port)
            if known is not None:
                if port not in sweep.steady:
                    sweep.unsteady += 1
                return known
        if port in visiting:
            if sweep is not None:
                sweep.loops_cut += 1
            return NO_LIGHT_DBM
        cut_before, unsteady_before = (0, 0) if sweep is None else (sweep.loops_cut,
                                                                    sweep.unsteady)
        visiting.add(port)
        try:
            element, local = self._split(port)
            if local in self._inputs[element.name]:
                feeder = self._upstream.get(port)
                power = (NO_LIGHT_DBM if feeder is None
                         else self._walk(feeder, now, visiting, sweep))
            else:
                prefix = element.name + ":"
                power = element.output_power(
                    local, lambda p: self._walk(prefix + p, now, visiting, sweep), now)
                if sweep is not None and not element.steady:
                    sweep.unsteady += 1
        finally:
            visiting.discard(port)
        # Kept for the rest of the sweep unless a loop was cut below it: then the value
        # depends on where the walk entered the loop. Kept beyond it only if every element
        # below is steady.
        if sweep is not None and sweep.loops_cut == cut_before:
            sweep.known[port] = power
            if sweep.unsteady == unsteady_before:
                sweep.steady[port] = power
        return power


class _Sweep:
    """The ports computed so far in one :meth:`OpticalModel.powers_dbm` question, those
    of them only steady elements feed, and those kept from earlier questions."""

    __slots__ = ("kept", "known", "loops_cut", "steady", "unsteady")

    def __init__(self, kept: dict[str, float]) -> None:
        self.kept = kept
        self.known: dict[str, float] = {}
        self.steady: dict[str, float] = {}
        self.loops_cut = 0
        self.unsteady = 0


class Transceivers(Element):
    """A bank of optical transceivers (a switch's ports): ``txN`` outputs, ``rxN`` inputs."""

    steady = True

    def __init__(self, name: str, count: int, *, power_dbm: float = 1.0):
        super().__init__(name)
        self.count = count
        self._power_dbm = [power_dbm] * count
        self._enabled = [True] * count

    def input_ports(self) -> Iterable[str]:
        return [f"rx{n}" for n in range(1, self.count + 1)]

    def output_ports(self) -> Iterable[str]:
        return [f"tx{n}" for n in range(1, self.count + 1)]

    def feeds(self, input_port: str) -> Iterable[str]:
        """No output: what a receiver takes in never leaves by a transmitter (each
        ``txN`` sends its own light, whatever arrives at ``rxN``)."""
        return ()

    def set_enabled(self, lane: int, enabled: bool) -> None:
        if self._enabled[lane - 1] != enabled:
            self._enabled[lane - 1] = enabled
            self.changed()

    def set_power(self, lane: int, power_dbm: float) -> None:
        if self._power_dbm[lane - 1] != power_dbm:
            self._power_dbm[lane - 1] = power_dbm
            self.changed()

    def output_power(self, port: str, input_power: InputPower, now: float) -> float:
        if not port.startswith("tx"):
            raise KeyError(port)
        index = int(port[2:]) - 1
        return self._power_dbm[index] if self._enabled[index] else NO_LIGHT_DBM
