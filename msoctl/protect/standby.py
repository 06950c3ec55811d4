"""Keeping the standby spans verified: probe light parked on them, and amplifiers whose
ALS holds their output shut asked for a restart.

A span that carries nothing is dark, and behind it its amplifier's ALS shuts the output
after 0.5 s: such a span cannot be told from a cut one. So the controller parks an idle
light source (a *probe*: a free ingress port that carries light, or those named with
``--probe``) on each standby span's fiber, and every move swaps it onto the span the
link leaves. Both spans stay lit and watched, and a repaired working span shows light,
which the wait-to-restore needs. An amplifier whose ALS holds its output shut while
light is back at its input is asked for a restart pulse (journaled), as its own restart
timer would do minutes later. Both are device changes: only the owner of the links'
shard makes them, fenced like a move.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from drivers.amp.driver import AmpDriver
from drivers.errors import DeviceError
from drivers.ocs import OcsDriver
from msoctl.journal import DeviceBusy, Journal, JournalError, locked_change
from msoctl.links import Link, Span
from msoctl.protect.config import ProtectConfig, ProtectionEvent
from msoctl.protect.light import DIRECTION_NAMES, AmpReading, LightJudge
from msoctl.protect.moves import OcsActions
from msoctl.protect.ownership import Fenced, Ownership
from msoctl.protect.watch import AmpWatch, OcsWatch

ALS_RESTART_GAP_SECONDS = 3.0
"""At most one restart request per amplifier this often (a pulse lasts about 2 s)."""
PROBE_RETRY_SECONDS = 1.0
PROBE_CHECK_SECONDS = 0.2
"""How often the standby spans are looked at for a missing probe."""


class KeepingStandby:
    """Probes and amplifier restarts of
    :class:`msoctl.protect.controller.ProtectionController` (a mixin: the attributes
    below are the controller's)."""

    config: ProtectConfig
    journal: Journal
    ownership: Ownership
    judge: LightJudge
    _states: Mapping[str, Any]
    _watches: dict[str, OcsWatch]
    _amp_watches: dict[str, AmpWatch]
    _amp_links: dict[str, list[Link]]
    _link_tx: dict[str, dict[int, str]]
    _arrivals: dict[str, set[int]]
    _restart_after: dict[str, float]
    _restarted_at: dict[str, float]
    _probe_after: dict[tuple[str, str], float]
    _probes_checked: float = 0.0
    _map_valid_after: dict[str, float]
    _lock: threading.Lock

    if TYPE_CHECKING:  # the controller's own, declared for the type checker only
        @property
        def ocs(self) -> OcsActions: ...

        def _emit(self, kind: str, link: str | None, message: str,
                  **extra: Any) -> ProtectionEvent: ...

    def _restart_amplifiers(self, now: float, amps: dict[str, AmpReading | None]) -> None:
        needed = self.config.threshold_dbm + self.config.hysteresis_db
        for name, reading in amps.items():
            if not any(self.ownership.acts_for(link) for link in self._amp_links.get(name, ())):
                continue
            if (reading is None or reading.als_state != "shutdown"
                    or reading.module_state != "ModuleReady"
                    or "pump_failure" in reading.conditions
                    or reading.input_dbm is None or reading.input_dbm < needed
                    or now < self._restart_after.get(name, 0.0)):
                continue
            self._restart_after[name] = now + ALS_RESTART_GAP_SECONDS
            self._amp_watches[name].submit(partial(self._als_restart, name, reading=reading))

    def _als_restart(self, name: str, driver: AmpDriver, *, reading: AmpReading) -> None:
        """On the amplifier's own thread: one journaled restart pulse."""
        try:
            links = self._amp_links.get(name, ())
            terms = self.ownership.fence(links)
            with locked_change(self.journal, device=name, action="protection.als_restart",
                               input_power_dbm=reading.input_dbm, terms=terms or None,
                               instance=self.ownership.instance,
                               reason="light is back at the input while ALS holds the "
                                      "output shut"):
                self.ownership.check(links)
                driver.restart()
                self._restarted_at[name] = time.monotonic()
        except Fenced as fenced:
            self._emit("fenced", None, f"{name}: no ALS restart: {fenced.message}")
            return
        except (DeviceBusy, JournalError) as error:
            self._emit("error", None, f"{name}: no ALS restart: {error}")
            return
        self._emit("als_restart", None, f"{name}: ALS restart requested (input "
                   f"{reading.input_dbm:.1f} dBm is back, output shut)",
                   details={"amplifier": name})

    def _keep_probes(self, now: float, maps: dict[str, Any]) -> None:
        """Park a probe on every standby span fiber that nothing feeds: one journaled
        bulk connect per OCS for all the fibers that need one."""
        if now < self._probes_checked + PROBE_CHECK_SECONDS:
            return
        self._probes_checked = now
        needs: dict[str, dict[int, tuple[Link, Span, str]]] = {}  # OCS -> start port -> ..
        for state in self._states.values():
            link = state.link
            if state.role is None or any(maps.get(n) is None for n in link.ocs_names) \
                    or not self.ownership.acts_for(link):
                continue
            standby = link.span("protection" if state.role == "working" else "working")
            for direction in ("a_to_b", "b_to_a"):
                start = getattr(standby, direction).start
                if self.judge.feeder(start.ocs, maps[start.ocs], start.port) is not None \
                        or now < self._probe_after.get((standby.name, direction), 0.0):
                    continue
                needs.setdefault(start.ocs, {}).setdefault(start.port,
                                                          (link, standby, direction))
        for ocs, fibers in sorted(needs.items()):
            for _, span, direction in fibers.values():
                self._probe_after[(span.name, direction)] = now + PROBE_RETRY_SECONDS
            self._park(ocs, maps[ocs], fibers, now)

    def _park(self, ocs: str, port_map: Mapping[int, int],
              fibers: dict[int, tuple[Link, Span, str]], now: float) -> None:
        links = sorted({link.name for link, _, _ in fibers.values()})
        try:
            probes = self._pick_probes(ocs, port_map, len(fibers))
            if len(probes) < len(fibers):
                for port, (link, span, direction) in list(fibers.items())[len(probes):]:
                    self._probe_after[(span.name, direction)] = now + 30.0
                    self._emit("probe", link.name, f"{span.name} "
                               f"{DIRECTION_NAMES[direction]} is not lit and no probe "
                               f"light is free at {ocs}: it cannot be verified, so "
                               f"{link.name} will not be switched onto it")
                    del fibers[port]
            if not fibers:
                return
            pairs = {probe: start for probe, start in zip(probes, fibers, strict=False)}
            terms = self.ownership.fence([link for link, _, _ in fibers.values()])
            with locked_change(self.journal, device=ocs, action="protection.probe",
                               spans=sorted({span.name for _, span, _ in fibers.values()}),
                               connections=[f"{i}:{e}" for i, e in pairs.items()],
                               terms=terms or None, instance=self.ownership.instance):
                self.ocs.call(ocs, partial(_connect_checked, pairs=pairs, check=partial(
                    self.ownership.check, [link for link, _, _ in fibers.values()])))
        except Fenced as fenced:
            self._emit("fenced", None, f"{', '.join(links)}: no probe at {ocs}: "
                       f"{fenced.message}")
            return
        except (DeviceError, DeviceBusy, JournalError) as error:
            self._emit("error", None, f"{', '.join(links)}: no probe at {ocs}: {error}")
            return
        # The map is read again, whole, with the light it brings: until then the links
        # through this OCS are not judged (the map adopted alone, with the readings of
        # before the probe, would have the protection span judged dark and a cut meanwhile
        # refused for it).
        self._map_valid_after[ocs] = time.monotonic()
        self._watches[ocs].refresh_map()
        for probe, start in pairs.items():
            link, span, direction = fibers[start]
            self._emit("probe", link.name, f"{span.name} {DIRECTION_NAMES[direction]}: "
                       f"probe light {ocs}:{probe} parked on {ocs}:{start} to keep it "
                       "verified")

    def _pick_probes(self, ocs: str, port_map: Mapping[int, int], count: int) -> list[int]:
        """Up to ``count`` free ingress ports of ``ocs`` that carry light and are no link's
        transmitter: those named with ``--probe``, else the highest such ports."""
        # A span's arrival port carries light too, the far end's (its probe's, or a
        # link's): never idle light of our own.
        busy = set(port_map) | set(self._link_tx.get(ocs, {})) | self._arrivals.get(ocs, set())
        needed = self.config.threshold_dbm + self.config.hysteresis_db
        if self.config.probes:
            candidates = [p.port for p in self.config.probes if p.ocs == ocs]
        else:
            size = self.ocs.call(ocs, _size)
            candidates = list(range(size, 0, -1))
        candidates = [p for p in candidates if p not in busy]
        if not candidates:
            return []
        powers = self.ocs.call(ocs, partial(_powers, ports=candidates))
        # a reading of exactly 0.00 dBm is light (not "no reading")
        lit = [p for p in candidates if (power := powers.get(p)) is not None and power >= needed]
        return lit[:count]


def _powers(driver: OcsDriver, *, ports: list[int]) -> dict[int, float | None]:
    return driver.power(ports)


def _size(driver: OcsDriver) -> int:
    return driver.size


def _connect_checked(driver: OcsDriver, *, pairs: dict[int, int],
                     check: Callable[[], None]) -> Mapping[int, int]:
    check()
    return driver.connect(pairs)
