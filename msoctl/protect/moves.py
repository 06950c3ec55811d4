"""The protection controller's hands on the OCSes: one persistent change session per
OCS (:class:`msoctl.protect.watch.OcsControl`) and a worker per OCS, so every OCS of a
move is changed at once, and the light check after a move.

Every call here is safe to repeat (a map read, a whole-map replace, a monitor read),
which is what lets a call that fails on a broken connection be made once more on a
fresh one. Every message a change session sends is taken from its OCS's budget
(msoctl/protect/budget.py), from the reserve a move may use.

The light check asks every OCS touched, in parallel, for the monitors of the moved
links' points only (one query per OCS, however many links), and judges link by link,
so that each link's light is verified as soon as its own two OCSes show it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
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

    def apply(self, wanted: Mapping[str, dict[int, int]], *,
              check: Callable[[], None]) -> dict[str, Applied]:
        """Make each OCS's map exactly ``wanted[name]``: one command each, all at once.
        ``check()`` runs in each worker just before its command leaves (the lease
        deadline): when it raises, that OCS is not changed and the error is raised."""
        futures = {name: self.submit(name, partial(_replace, wanted=port_map, check=check))
                   for name, port_map in wanted.items()}
        return {name: future.result() for name, future in futures.items()}

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


def verify(actions: OcsActions, points: Mapping[str, LinkPoints],
           done: Mapping[str, float], *, deadline: float, pause_seconds: float
           ) -> dict[str, tuple[float | None, dict[str, Any]]]:
    """Per link (``points[link][ocs][port]``), when its light was verified (monotonic;
    ``None`` if not by ``deadline``) and the readings it was judged on.

    Every OCS is asked, in its worker, for the monitors of every point on it, all OCSes
    at once: one power query each (per 256 ports), however many links moved. A link
    is verified as soon as both its OCSes show its light; the OCSes of the links still
    dark are asked again after ``pause_seconds``. A point with an ``upstream`` port must
    also read no less than that port minus an OCS's insertion loss and the monitors'
    tolerance (the light went through)."""
    found: dict[str, tuple[float | None, dict[str, Any]]] = {}
    pending = dict(points)
    while pending:
        wanted: dict[str, set[int]] = {}
        for per_ocs in pending.values():
            for name, ports in per_ocs.items():
                wanted.setdefault(name, set()).update(ports)
                for point in ports.values():
                    if point.upstream is not None:
                        wanted[name].add(point.upstream)
        futures = {name: actions.submit(name, partial(_powers, ports=sorted(ports)))
                   for name, ports in wanted.items()}
        readings = {name: future.result() for name, future in futures.items()}
        now = time.monotonic()
        for link, per_ocs in list(pending.items()):
            lit, light = _judge_points(per_ocs, readings)
            if lit or now >= deadline:
                found[link] = (now if lit else None, light)
                del pending[link]
        if pending:
            time.sleep(pause_seconds)
    return found


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
