"""The protection controller's hands on the OCSes: one persistent change session per
OCS (:class:`msoctl.protect.watch.OcsControl`) and a worker per OCS, so every OCS of a
move is changed at once, and the light check after a move.

The requests of a change leave from one thread, one after the other (a map query or a
whole-map command is a fraction of a millisecond to send), and each OCS's replies are
read where they are awaited: the maps in that thread, in turn (they are back by then),
each command's completion in that OCS's worker (:class:`~drivers.scpi.session.Pending`).
Sixteen workers each formatting and sending their own command would hand the
interpreter to one another at every step, and the last command of a cable cut would
leave ten milliseconds after the first.

Every call here is safe to repeat (a map read, a whole-map replace, a monitor read),
which is what lets a call that fails on a broken connection be made once more on a
fresh one. Every message a change session sends is taken from its OCS's budget
(msoctl/protect/budget.py), from the reserve a move may use.

The light check asks each OCS touched for the monitors of the moved links' points
only (one query per OCS, however many links) as soon as it and the OCSes at the other
ends of its links are done, while the others are still switching, and judges link by
link, so that each link's light is verified as soon as its own two OCSes show it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from drivers.errors import DeviceError
from drivers.ocs import OcsDriver
from drivers.ocs.commands import POWER_QUERY_MAX_PORTS
from drivers.ocs.driver import MapReplacement
from drivers.scpi.session import Pending
from msoctl.protect.budget import QueryBudget
from msoctl.protect.light import NOMINAL_INSERTION_LOSS_DB, RECEIVER_TOLERANCE_DB
from msoctl.protect.watch import OcsControl, budgeted_opener

T = TypeVar("T")


@dataclass(frozen=True)
class Applied:
    """One OCS's part of a move."""

    sent: float  # monotonic, just before the command left
    done: float  # the switch confirmed completion (``*OPC?``), no error, map read back
    final: dict[int, int]


@dataclass(frozen=True)
class LightPoint:
    """A monitor that must show light after a move."""

    what: str  # "span-2 far end", "sw-b Ethernet1 receiver"
    threshold_dbm: float
    upstream: int | None = None  # a port of the same OCS whose light this one carries


class OcsActions:
    def __init__(self, names: Iterable[str], opener: Callable[[str], OcsDriver],
                 budgets: Mapping[str, QueryBudget]):
        self.controls = {name: OcsControl(name, budgeted_opener(opener, budgets[name],
                                                                urgent=True))
                         for name in names}
        self.pool = ThreadPoolExecutor(max_workers=max(2, len(self.controls)),
                                       thread_name_prefix="protect-move")

    def warm(self) -> None:
        """Open every change session now, so the first move does not pay for a connect."""
        for control in self.controls.values():
            self.pool.submit(control.warm)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for control in self.controls.values():
            with control.lock:
                control.drop()

    def call(self, name: str, action: Callable[[OcsDriver], T]) -> T:
        """``action`` on OCS ``name``'s change session, in this thread."""
        return self.controls[name].call(action)

    def submit(self, name: str, action: Callable[[OcsDriver], T]) -> Future[T]:
        """``action`` on OCS ``name``'s change session, in its worker."""
        return self.pool.submit(self.controls[name].call, action)

    def start(self, name: str, begin: Callable[[OcsDriver], Pending[T]]) -> Pending[T]:
        """``begin`` on OCS ``name``'s change session, in this thread: its request leaves
        now, its replies are read by ``finish()`` (:meth:`OcsControl.start`)."""
        return self.controls[name].start(begin)

    def finish(self, pending: Pending[T]) -> Future[T]:
        """The replies of a request :meth:`start` sent, read in a worker."""
        return self.pool.submit(pending.finish)

    def start_map_reads(self, names: Iterable[str]
                        ) -> dict[str, Pending[tuple[dict[int, int], int]]]:
        """Each OCS's map query, sent now from this thread; the replies (each OCS's map
        and size) are read by :func:`finish_all`."""
        return start_each(self, names, _start_map)

    def switching_ms(self, names: Iterable[str]) -> dict[str, float | None]:
        """The switching time each OCS reports for its last reconfiguration, ms."""
        futures = {name: self.submit(name, _last_switching) for name in names}
        found: dict[str, float | None] = {}
        for name, future in futures.items():
            try:
                seconds = future.result()
            except DeviceError:
                seconds = None
            found[name] = None if seconds is None else round(seconds * 1000, 3)
        return found


def start_each(actions: OcsActions, names: Iterable[str],
               begin: Callable[[OcsDriver], Pending[T]]) -> dict[str, Pending[T]]:
    """``begin`` on every OCS of ``names``, from this thread; when one cannot be sent,
    those already sent are given up (their sessions resynchronise) and its error raised."""
    started: dict[str, Pending[T]] = {}
    try:
        for name in names:
            started[name] = actions.start(name, begin)
    except BaseException:
        for pending in started.values():
            pending.abandon()
        raise
    return started


def finish_all(started: Mapping[str, Pending[T]]) -> dict[str, T]:
    """The results of every request of ``started``, their replies read in this thread in
    turn; the first that failed is raised once every one has been read."""
    found: dict[str, T] = {}
    failure: Exception | None = None
    for name, pending in started.items():
        try:
            found[name] = pending.finish()
        except Exception as error:
            failure = failure or error
    if failure is not None:
        raise failure
    return found


def _sent(actions: OcsActions, begins: Mapping[str, Callable[[OcsDriver], Pending[T]]]
          ) -> dict[str, Future[T]]:
    """``begins[name]`` on each OCS, every request sent now from this thread, and only
    then each one's replies handed to its OCS's worker: a worker woken between two
    sends would take the interpreter from the next one. A request that could not be
    sent is its future's error (raised with the others' outcome, not at once)."""
    started: dict[str, Pending[T] | Exception] = {}
    for name, begin in begins.items():
        try:
            started[name] = actions.start(name, begin)
        except Exception as error:
            started[name] = error
    futures: dict[str, Future[T]] = {}
    for name, pending in started.items():
        if isinstance(pending, Exception):
            futures[name] = Future()
            futures[name].set_exception(pending)
        else:
            futures[name] = actions.finish(pending)
    return futures


LinkPoints = Mapping[str, Mapping[int, LightPoint]]
"""A link's light points, per OCS and port."""
Verified = dict[str, tuple[float | None, dict[str, Any]]]
"""Per link: when its light was verified (monotonic; ``None``: not in time) and the
readings it was judged on."""


def apply_and_verify(actions: OcsActions,
                     wanted: Mapping[str, Mapping[int, int] | MapReplacement],
                     points: Mapping[str, LinkPoints], *, check: Callable[[], None],
                     applied: Callable[[dict[str, Applied]], None], timeout_seconds: float,
                     pause_seconds: float) -> tuple[dict[str, Applied], Verified]:
    """Make each OCS's map exactly ``wanted[name]`` (one command each, prepared ahead
    where it is a ``MapReplacement``, sent from this thread one after the other, each
    awaited in its OCS's worker; ``check()`` runs just
    before each command leaves: the lease deadline, and when it raises that OCS is not
    changed) and check the light of every link
    (``points[link][ocs][port]``): each OCS is asked, in its worker, for the monitors
    of its points (one power query per 256 ports, however many links) as soon as it
    and every OCS at the other end of its links are done, while the others are still
    switching. ``applied(results)`` is called once every command is done (the OCSes'
    turns can go back then).

    A link is verified once each of its OCSes, read after they were all done, shows
    its light (a point with an ``upstream`` port must also read no less than that
    port minus an OCS's insertion loss and the monitors' tolerance: the light went
    through); the OCSes of a link still dark are read again after ``pause_seconds``,
    until ``timeout_seconds`` after its OCSes were done. A command that fails is
    raised once every command has ended (none is left running)."""
    change = _ChangeInFlight(actions, wanted, points, check=check,
                             timeout_seconds=timeout_seconds, pause_seconds=pause_seconds)
    return change.run(applied)


class _ChangeInFlight:
    """The commands and the light checks of one :func:`apply_and_verify`."""

    def __init__(self, actions: OcsActions,
                 wanted: Mapping[str, Mapping[int, int] | MapReplacement],
                 points: Mapping[str, LinkPoints], *, check: Callable[[], None],
                 timeout_seconds: float, pause_seconds: float):
        self.actions = actions
        self.wanted = wanted
        self.timeout_seconds = timeout_seconds
        self.pause_seconds = pause_seconds
        self.commands = _sent(actions, {name: partial(_start_replace, wanted=port_map,
                                                      check=check)
                                        for name, port_map in wanted.items()})
        self.results: dict[str, Applied] = {}
        self.failures: list[BaseException] = []
        self.pending = dict(points)  # the links not judged yet
        self.partners: dict[str, set[str]] = {}  # an OCS, and those its links end on
        for per_ocs in self.pending.values():
            for name in per_ocs:
                self.partners.setdefault(name, set()).update(per_ocs)
        self.done_at: dict[str, float] = {}
        self.reads: dict[Future[dict[int, float | None]], str] = {}
        self.fresh: dict[str, dict[int, float | None]] = {}  # read once all were done
        self.not_before: dict[str, float] = {}  # not read again before (a pause)
        self.found: Verified = {}

    def run(self, applied: Callable[[dict[str, Applied]], None]
            ) -> tuple[dict[str, Applied], Verified]:
        told = False
        while self.commands or self.pending:
            self._start_reads()
            if not self.commands and not told:
                told = True
                if self.failures:
                    raise self.failures[0]
                applied(dict(self.results))
            if not self.commands and not self.reads and (not self.pending or self.failures):
                break
            self._take(self._wait())
            if self.failures:
                self.pending.clear()  # nothing to verify: the change failed
                continue
            self._judge()
        if self.failures:  # a light check that failed once every command was done
            raise self.failures[0]
        return self.results, self.found

    def _start_reads(self) -> None:
        """A read of each OCS that is due: it and its partners done, not read since
        (or its pause over), none on the way."""
        now = time.monotonic()
        reading = set(self.reads.values())
        due: dict[str, Callable[[OcsDriver], Pending[dict[int, float | None]]]] = {}
        for name, others in self.partners.items():
            if (name not in self.fresh and name not in reading and not self.failures
                    and self.not_before.get(name, 0.0) <= now
                    and all(o in self.done_at or o not in self.wanted
                            for o in others | {name})):
                ports = _points_on(self.pending, name)
                if ports:
                    due[name] = partial(_start_powers, ports=sorted(ports))
        for name, read in _sent(self.actions, due).items():
            self.reads[read] = name

    def _wait(self) -> set[Future[Any]]:
        """Until a command or a read ends, or the next pause is over."""
        now = time.monotonic()
        later = [t - now for t in self.not_before.values() if t > now]
        waiting: list[Future[Any]] = [*self.commands.values(), *self.reads]
        finished, _ = wait(waiting, timeout=min(later) if later else None,
                           return_when=FIRST_COMPLETED)
        return finished

    def _take(self, finished: set[Future[Any]]) -> None:
        for name, command in list(self.commands.items()):
            if command in finished:
                del self.commands[name]
                try:
                    self.results[name] = command.result()
                    self.done_at[name] = self.results[name].done
                except BaseException as error:  # raised once every command has ended
                    self.failures.append(error)
        for read in [f for f in self.reads if f in finished]:
            name = self.reads.pop(read)
            try:
                self.fresh[name] = read.result()
            except BaseException as error:
                self.failures.append(error)

    def _judge(self) -> None:
        """Each link whose OCSes have all been read: verified, given up (its timeout
        over), or its OCSes read again after a pause."""
        now = time.monotonic()
        dark: set[str] = set()
        for link, per_ocs in list(self.pending.items()):
            if not all(name in self.fresh for name in per_ocs):
                continue
            lit, light = _judge_points(per_ocs, self.fresh)
            ends = max(self.done_at.get(name, now) for name in per_ocs)
            if lit or now >= ends + self.timeout_seconds:
                self.found[link] = (now if lit else None, light)
                del self.pending[link]
            else:
                dark.update(per_ocs)
        for name in dark:
            self.fresh.pop(name, None)
            self.not_before[name] = now + self.pause_seconds


def _points_on(pending: Mapping[str, LinkPoints], name: str) -> set[int]:
    """The ports OCS ``name`` is read on for the links still to verify."""
    ports: set[int] = set()
    for per_ocs in pending.values():
        for port, point in per_ocs.get(name, {}).items():
            ports.add(port)
            if point.upstream is not None:
                ports.add(point.upstream)
    return ports


def _judge_points(points: Mapping[str, Mapping[int, LightPoint]],
                  readings: Mapping[str, Mapping[int, float | None]]
                  ) -> tuple[bool, dict[str, Any]]:
    every = True
    light: dict[str, Any] = {}
    for name, ports in points.items():
        for port, point in ports.items():
            power = readings[name].get(port)
            needed = point.threshold_dbm
            feeding = None if point.upstream is None else readings[name].get(point.upstream)
            if feeding is not None:
                needed = max(needed, feeding - NOMINAL_INSERTION_LOSS_DB
                             - RECEIVER_TOLERANCE_DB)
            lit = power is not None and power >= needed
            every = every and lit
            light[f"{name}:{port}"] = {"what": point.what, "power_dbm": power,
                                       "needed_dbm": round(needed, 2), "lit": lit}
    return every, light


def _start_map(driver: OcsDriver) -> Pending[tuple[dict[int, int], int]]:
    size = driver.size
    sent = driver.start_port_map()
    return Pending(lambda: (dict(sent.finish()), size), sent.abandon)


def _start_replace(driver: OcsDriver, *, wanted: Mapping[int, int] | MapReplacement,
                   check: Callable[[], None]) -> Pending[Applied]:
    check()
    sent = time.monotonic()
    replacing = driver.start_replace_map(wanted)

    def finish() -> Applied:
        final = dict(replacing.finish())
        return Applied(sent, time.monotonic(), final)

    return Pending(finish, replacing.abandon)


def _last_switching(driver: OcsDriver) -> float | None:
    return driver.lc_status().last_switching_seconds


def _start_powers(driver: OcsDriver, *, ports: list[int]
                  ) -> Pending[dict[int, float | None]]:
    if len(ports) <= POWER_QUERY_MAX_PORTS:
        return driver.start_power(ports)
    return Pending(lambda: driver.power(ports), lambda: None)  # several queries, in turn


def connect(driver: OcsDriver, *, pairs: dict[int, int]) -> object:
    return driver.connect(pairs)
