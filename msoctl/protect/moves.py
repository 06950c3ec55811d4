"""The protection controller's hands on the OCSes: one persistent change session per
OCS (:class:`msoctl.protect.watch.OcsControl`) and a worker per OCS, so every OCS of a
move is changed at once, and the light check after a move.

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

    def read_maps(self, names: Iterable[str]) -> dict[str, Future[tuple[dict[int, int], int]]]:
        """Each OCS's map and size, read in parallel."""
        return {name: self.submit(name, _map_and_size) for name in names}

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


LinkPoints = Mapping[str, Mapping[int, LightPoint]]
"""A link's light points, per OCS and port."""
Verified = dict[str, tuple[float | None, dict[str, Any]]]
"""Per link: when its light was verified (monotonic; ``None``: not in time) and the
readings it was judged on."""


def apply_and_verify(actions: OcsActions, wanted: Mapping[str, dict[int, int]],
                     points: Mapping[str, LinkPoints], *, check: Callable[[], None],
                     applied: Callable[[dict[str, Applied]], None], timeout_seconds: float,
                     pause_seconds: float) -> tuple[dict[str, Applied], Verified]:
    """Make each OCS's map exactly ``wanted[name]`` (one command each, all at once;
    ``check()`` runs in each worker just before its command leaves: the lease deadline,
    and when it raises that OCS is not changed) and check the light of every link
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
    commands = {name: actions.submit(name, partial(_replace, wanted=port_map, check=check))
                for name, port_map in wanted.items()}
    results: dict[str, Applied] = {}
    failures: list[BaseException] = []
    pending = {link: per_ocs for link, per_ocs in points.items()}
    partners: dict[str, set[str]] = {}
    for per_ocs in pending.values():
        for name in per_ocs:
            partners.setdefault(name, set()).update(per_ocs)
    done_at: dict[str, float] = {}
    reads: dict[Future[dict[int, float | None]], str] = {}
    fresh: dict[str, dict[int, float | None]] = {}  # read after it and its partners were done
    not_before: dict[str, float] = {}
    found: Verified = {}
    told = False
    while commands or pending:
        now = time.monotonic()
        reading = set(reads.values())
        for name, others in partners.items():
            if (name not in fresh and name not in reading and not failures
                    and not_before.get(name, 0.0) <= now
                    and all(o in done_at or o not in wanted for o in others | {name})):
                ports = _points_on(pending, name)
                if ports:
                    reads[actions.submit(name, partial(_powers, ports=sorted(ports)))] = name
        if not commands and not told:
            told = True
            if failures:
                raise failures[0]
            applied(dict(results))
        if not commands and not reads and (not pending or failures):
            break
        waiting: list[Future[Any]] = [*commands.values(), *reads]
        later = [t - now for t in not_before.values() if t > now]
        timeout = min(later) if later else None
        finished, _ = wait(waiting, timeout=timeout, return_when=FIRST_COMPLETED)
        for name, command in list(commands.items()):
            if command in finished:
                del commands[name]
                try:
                    results[name] = command.result()
                    done_at[name] = results[name].done
                except BaseException as error:  # raised once every command has ended
                    failures.append(error)
        for read in [f for f in reads if f in finished]:
            name = reads.pop(read)
            try:
                fresh[name] = read.result()
            except BaseException as error:
                failures.append(error)
        if failures:
            pending.clear()  # nothing to verify: the change failed
            continue
        now = time.monotonic()
        dark: set[str] = set()
        for link, per_ocs in list(pending.items()):
            if not all(name in fresh for name in per_ocs):
                continue
            lit, light = _judge_points(per_ocs, fresh)
            ends = max(done_at.get(name, now) for name in per_ocs)
            if lit or now >= ends + timeout_seconds:
                found[link] = (now if lit else None, light)
                del pending[link]
            else:
                dark.update(per_ocs)
        for name in dark:  # read again, after a pause
            fresh.pop(name, None)
            not_before[name] = now + pause_seconds
    if failures:  # a light check that failed once every command was done
        raise failures[0]
    return results, found


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


def _map_and_size(driver: OcsDriver) -> tuple[dict[int, int], int]:
    return dict(driver.port_map()), driver.size


def _replace(driver: OcsDriver, *, wanted: dict[int, int], check: Callable[[], None]
             ) -> Applied:
    check()
    sent = time.monotonic()
    final = driver.replace_map(wanted)
    return Applied(sent, time.monotonic(), dict(final))


def _last_switching(driver: OcsDriver) -> float | None:
    return driver.lc_status().last_switching_seconds


def _powers(driver: OcsDriver, *, ports: list[int]) -> dict[int, float | None]:
    return driver.power(ports)


def connect(driver: OcsDriver, *, pairs: dict[int, int]) -> object:
    return driver.connect(pairs)
