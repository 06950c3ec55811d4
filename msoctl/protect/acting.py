"""Carrying out the moves one evaluation allocated: every link at once.

For the links of one evaluation (msoctl/protect/allocate.py chose them), the controller
makes one journaled change (action ``protection.switch``, or ``protection.revert`` when
every move is a revert) naming every link, and:

1. asks every OCS touched for its map (the queries leave one after the other from the
   change's thread) and has the intent written by a worker of its own while the maps
   come back and are planned; the intent is on disk before the first command leaves.
   An OCS whose alarm stream last announced the very map the controller holds
   (alarms.py, ``AlarmFeeds.announced_map``) is not asked: its copy is planned on;
2. plans each OCS's whole new map with every move on it (light.py's ``plan_moves``),
   each command checked and rendered before any is sent;
3. confirms ownership (msoctl/protect/ownership.py): the database is asked whether this
   instance still owns the links' shards with its terms; the terms go into the
   journal; then, just before each command leaves, the instance's own lease deadline
   is checked;
4. sends one whole-map command per OCS, all from the change's thread within a few
   milliseconds, each awaited in its OCS's worker, holding every OCS's device lock (an
   operator's change and the controller's exclude each other) and its turn (below);
5. verifies the light link by link (moves.py's ``apply_and_verify``): each OCS is read
   as soon as it and the OCSes at its links' other ends are done, each link verified
   as soon as its own two OCSes show it; and journals each link's timeline.

Changes are pipelined: each runs in a worker of its own, so the decision loop goes on
judging while it runs, and the next change (the links whose losses arrived meanwhile)
is decided, journaled and sent while the last one's light is being verified. Each OCS
is changed by one change at a time: a change takes the turn of every OCS it touches
(in name order) before it reads their maps, and gives the turns and the device locks
back once its commands are done, so the next change plans on the map the last one
left. The map each command read back is adopted by the OCS's watch at once, so links
through that OCS are judged on it without waiting for a map read. The spans of
changes in flight are reserved (controller.py): no span goes to two links.

Each link also gets its own event (``switch``, ``revert`` or ``failed``) with its own
durations, so that one link's recovery is measured from its own loss.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from drivers.errors import DeviceError
from drivers.ocs.driver import MapReplacement, map_replacement
from msoctl import safety
from msoctl.inventory import Inventory
from msoctl.journal import Change, DeviceBusy, DeviceLock, Journal, JournalError
from msoctl.protect.alarms import AlarmFeeds
from msoctl.protect.allocate import Candidate
from msoctl.protect.config import ProtectConfig, ProtectionEvent
from msoctl.protect.light import LightJudge, Move, MoveConflict, map_changes, plan_moves
from msoctl.protect.moves import Applied, LightPoint, OcsActions, apply_and_verify, finish_all
from msoctl.protect.ownership import Fenced, Ownership
from msoctl.protect.watch import AmpWatch, OcsWatch

MOVE_RETRY_SECONDS = 0.1


@dataclass
class LinkProgress:
    """What the acting part needs to know and set of a link's state."""

    role: str | None = None
    retry_after: float = 0.0
    pending: Move | None = None
    unavailable: str | None = None


class Acting:
    """The moves of :class:`msoctl.protect.controller.ProtectionController` (a mixin: the
    attributes below are the controller's)."""

    config: ProtectConfig
    inventory: Inventory
    journal: Journal
    judge: LightJudge
    ownership: Ownership
    events: deque[ProtectionEvent]
    _lock: threading.Lock
    _ocs: OcsActions | None
    _alarms: AlarmFeeds | None
    _journaling: ThreadPoolExecutor
    """Where a change's intent is written while its commands are planned, and its turns
    and device locks let go once its commands are done (one worker a change)."""
    _watches: dict[str, OcsWatch]
    _amp_watches: dict[str, AmpWatch]
    _map_valid_after: dict[str, float]
    _turns: dict[str, threading.Lock]
    _link_tx: dict[str, dict[int, str]]
    _link_rx: dict[str, dict[int, str]]
    _switched: dict[str, list[tuple[str, tuple[int, ...], float]]]

    if TYPE_CHECKING:  # the controller's own methods, declared for the type checker only
        def wall(self, monotonic: float | None) -> str | None: ...

        def _emit(self, kind: str, link: str | None, message: str,
                  **extra: Any) -> ProtectionEvent: ...

        def _progress(self, link: str) -> LinkProgress: ...

        def _moved(self, link: str, role: str) -> None: ...

    @property
    def ocs(self) -> OcsActions:
        assert self._ocs is not None, "controller not started"
        return self._ocs

    def _make_moves(self, moves: list[Candidate], powers: dict[str, Any],
                    gathered: str | None) -> None:
        """Carry out ``moves`` together, after the lit-port rule and the ownership check;
        a move that fails is tried again later. ``gathered``: why the decision loop
        stopped waiting for more losses (journaled with the intent)."""
        decided = time.monotonic()
        names = sorted({name for m in moves for name in m.link.ocs_names})
        action = ("protection.revert" if all(m.revert for m in moves)
                  else "protection.switch")
        label = ",".join(m.link.name for m in moves)
        moves = self._safe(moves, powers)
        if not moves:
            return
        try:
            with ExitStack() as held:
                # Changes in flight take their turns OCS by OCS (sorted: no deadlock): the
                # next one reads a map only once the last one's command on it is done.
                for name in names:
                    held.enter_context(self._turns[name])
                held.enter_context(self._locked(names))
                self._move(moves, names, action, label, decided, held, gathered)
        except Fenced as fenced:
            self._fenced(moves, action, fenced)
        except DeviceBusy as error:
            self._emit("failed", label, f"{label}: not switched yet: {error}")
            self._retry_later(moves, decided)
        except (DeviceError, JournalError) as error:
            self._emit("failed", label, f"{label}: {action} failed: {error}")
            self._retry_later(moves, decided)

    def _fenced(self, moves: list[Candidate], action: str, fenced: Fenced) -> None:
        """Nothing was sent: this instance does not own the links (any more)."""
        names = [m.link.name for m in moves]
        try:
            self.journal.refuse(device=",".join(names), action=action, links=names,
                                reason=f"fenced: {fenced.message}", exit_code=1,
                                instance=self.ownership.instance)
        except JournalError as error:
            self._emit("error", None, f"journal: {error}")
        for move in moves:
            self._emit("fenced", move.link.name, f"{move.link.name}: not moved: "
                       f"{fenced.message}")
            self._progress(move.link.name).retry_after = time.monotonic() + MOVE_RETRY_SECONDS

    @contextmanager
    def _locked(self, names: list[str]) -> Iterator[None]:
        with ExitStack() as stack:
            for name in names:
                stack.enter_context(DeviceLock(self.journal, name))
            yield

    def _retry_later(self, moves: list[Candidate], now: float) -> None:
        for move in moves:
            progress = self._progress(move.link.name)
            progress.retry_after = now + MOVE_RETRY_SECONDS
            progress.pending = Move(move.link, move.from_role, move.to_role)

    def _safe(self, moves: list[Candidate], powers: dict[str, Any]) -> list[Candidate]:
        """The moves the safety rule on switching lit ports allows, from the latest
        readings; each one it refuses is journaled."""
        allowed = []
        for move in moves:
            link = move.link
            refused = False
            for name, ports, limit in self._switched[link.name]:
                violations = safety.ocs_lit_ports(powers.get(name) or {}, ports, limit)
                if violations:
                    message = violations[0].message
                    self.journal.refuse(device=link.name, action="protection.switch",
                                        reason=f"{name}: {message}", exit_code=3,
                                        rule=violations[0].rule)
                    self._emit("failed", link.name, f"{link.name}: not switched: {name}: "
                               f"{message} (safety rule)")
                    self._progress(link.name).retry_after = time.monotonic() + 1.0
                    refused = True
                    break
            if not refused:
                allowed.append(move)
        return allowed

    def _move(self, moves: list[Candidate], names: list[str], action: str, label: str,
              decided: float, held: ExitStack, gathered: str | None) -> None:
        """One change: ``held`` (the OCSes' turns and device locks) is let go once every
        command is done, so the next change goes to the devices while this one's light
        is verified."""
        # The map queries leave first (to the OCSes whose map the controller's copy may
        # not be: see _announced_maps); the intent is written in a worker while the maps
        # come back and the commands and the light checks are planned, and is on disk
        # before any command is sent.
        announced = self._announced_maps(names)
        maps_asked = self.ocs.start_map_reads([n for n in names if n not in announced])
        for pending in maps_asked.values():  # no-ops once their replies have been read
            held.callback(pending.abandon)
        detected = min(m.detected for m in moves)
        spans = {m.link.name: {"from_span": m.source.name, "to_span": m.target.name}
                 for m in moves}
        uniform = len({(s["from_span"], s["to_span"]) for s in spans.values()}) == 1
        first = moves[0]
        intent = self.journal.change(
            device=label, action=action, links=[m.link.name for m in moves],
            from_span=first.source.name if uniform else None,
            to_span=first.target.name if uniform else None,
            moves=spans, cause="; ".join(m.cause for m in moves),
            detected=self.wall(detected), gathered=gathered,
            instance=self.ownership.instance)
        writing = self._journaling.submit(_written, intent)
        try:
            current = {**finish_all(maps_asked), **announced}
            commands = self._planned(moves, names, current)
            points = self._light_points(moves)  # a cable's 64 links: about a millisecond
        except BaseException:
            _close_when_written(writing, intent)
            raise
        change, journaled = writing.result()  # not written (JournalError): nothing was sent
        with _closing(intent):
            try:
                terms = self.ownership.fence([m.link for m in moves])
            except Fenced as fenced:
                change.status = "fenced"
                change.outcome["error"] = f"fenced: {fenced.message}"
                raise
            if terms:
                change.note("fence", instance=self.ownership.instance, terms=terms)
            applied, verified = apply_and_verify(
                self.ocs, commands, points,
                check=partial(self.ownership.check, [m.link for m in moves]),
                applied=partial(self._commands_done, names, held),
                timeout_seconds=self.config.verify_timeout_seconds,
                pause_seconds=self.config.poll_seconds)
            sent = max(a.sent for a in applied.values())
            done = max(a.done for a in applied.values())
            switching = self.ocs.switching_ms(names)
            per_link: dict[str, dict[str, Any]] = {}
            for move in moves:
                name = move.link.name
                at, light = verified.get(name, (None, {}))
                ends = move.link.ocs_names
                link_sent = max(applied[n].sent for n in ends)
                link_done = max(applied[n].done for n in ends)
                per_link[name] = {
                    **spans[name], "detected": self.wall(move.detected),
                    "light_verified": self.wall(at),
                    "durations_ms": _durations(move.detected, decided, link_sent, link_done, at),
                    "light": light,
                }
            last = None if any(v[0] is None for v in verified.values()) else max(
                v[0] for v in verified.values() if v[0] is not None)
            durations = _durations(detected, decided, sent, done, last)
            change.outcome.update({
                "timeline": {"detected": self.wall(detected), "decided": self.wall(decided),
                             "journaled": self.wall(journaled), "commands_sent": self.wall(sent),
                             "devices_done": self.wall(done),
                             "light_verified": self.wall(last)},
                "durations_ms": durations,
                "ocs": {name: {"commands_sent": self.wall(a.sent), "done": self.wall(a.done),
                               "device_ms": _ms(a.sent, a.done),
                               "switching_ms": switching.get(name),
                               "planned_on": ("the map it announced" if name in announced
                                              else "the map read"),
                               "changes": map_changes(current[name][0], a.final)}
                        for name, a in applied.items()},
                "links": per_link,
            })
            if len(moves) == 1:
                change.outcome["light"] = per_link[first.link.name]["light"]
            failed = [n for n, v in per_link.items() if v["light_verified"] is None]
            summary = _summary(action, durations, len(moves), failed)
            change.outcome["summary"] = summary
            if failed:
                change.status = "failed"
                change.outcome["error"] = (f"light not verified within "
                                           f"{self.config.verify_timeout_seconds:g} s on "
                                           + ", ".join(failed))
        for move in moves:
            self._moved(move.link.name, move.to_role)
        for move in moves:
            name = move.link.name
            outcome = per_link[name]
            kind = "revert" if move.revert else "switch"
            if outcome["light_verified"] is None:
                kind = "failed"
            link_durations = outcome["durations_ms"]
            said = _summary("protection.revert" if move.revert else "protection.switch",
                            link_durations, 1, [] if kind != "failed" else [name])
            together = f" [one change for {len(moves)} links]" if len(moves) > 1 else ""
            self._emit(kind, name, f"{name}: {move.source.name} -> {move.target.name} "
                       f"({move.cause}); {said}{together}",
                       op=change.op, durations_ms=link_durations,
                       details={"from_span": move.source.name, "to_span": move.target.name,
                                "switching_ms": {n: switching.get(n) for n in
                                                 move.link.ocs_names},
                                "detected": move.detected, "light": outcome["light"],
                                "links_in_change": len(moves)})

    def _announced_maps(self, names: list[str]) -> dict[str, tuple[dict[int, int], int]]:
        """The OCSes of ``names`` whose map (and size) need not be read: the controller's
        copy is the one the unit announced last (alarms.py)."""
        if self._alarms is None:
            return {}
        found: dict[str, tuple[dict[int, int], int]] = {}
        for name in names:
            known = self._alarms.announced_map(name)
            if known is not None:
                found[name] = known
        return found

    def _planned(self, moves: list[Candidate], names: list[str],
                 current: dict[str, tuple[dict[int, int], int]]
                 ) -> dict[str, MapReplacement]:
        """Each OCS's whole new map with every move on it, its command checked and
        rendered now, so that the commands leave back to back."""
        commands: dict[str, MapReplacement] = {}
        on: dict[str, list[Move]] = {name: [] for name in names}  # the moves at each OCS
        for candidate in moves:
            planned = Move(candidate.link, candidate.from_role, candidate.to_role)
            for name in dict.fromkeys(candidate.link.ocs_names):
                on[name].append(planned)
        try:
            for name in names:
                port_map, size = current[name]
                commands[name] = map_replacement(plan_moves(
                    on[name], name, port_map, size, tx_owner=self._link_tx.get(name, {}),
                    rx_owner=self._link_rx.get(name, {})), size)
        except MoveConflict as error:
            for move in moves:
                self._progress(move.link.name).unavailable = error.message
            raise
        return commands

    def _commands_done(self, names: list[str], held: ExitStack,
                       results: dict[str, Applied]) -> None:
        """Every command of a change is done: the maps they read back are the watches'
        at once, and the OCSes' turns and device locks go to the next change while
        this one's light is still being checked. They are let go by a journaling
        worker, not by the change's thread, which goes on to its light checks: each of
        a cable cut's sixteen lock files is closed by a system call, after which a
        thread waits its turn for the interpreter (0.2 to 4.5 ms in all, measured, at
        the moment the last OCS is done)."""
        for name in names:
            self._map_valid_after[name] = results[name].done
            self._watches[name].adopt_map(results[name].final, results[name].done)
        letting_go = self._journaling.submit(held.pop_all().close)
        letting_go.add_done_callback(self._after_letting_go)

    def _after_letting_go(self, letting_go: Future[None]) -> None:
        error = letting_go.exception()
        if error is not None:
            self._emit("error", None, f"internal error: letting go of the device locks: "
                       f"{type(error).__name__}: {error}")

    def _light_points(self, moves: list[Candidate]) -> dict[str, dict[str, dict[int, LightPoint]]]:
        """Per link, where light must arrive after its move: the new span's far ends
        (behind an amplifier, the threshold raised by its gain) and the receivers'
        egress ports."""
        points: dict[str, dict[str, dict[int, LightPoint]]] = {}
        for move in moves:
            link, span = move.link, move.target
            mine = points.setdefault(link.name, {})
            for fiber, end in ((span.a_to_b, link.b), (span.b_to_a, link.a)):
                threshold = self.config.threshold_dbm
                if fiber.amplifier:
                    reading = self._amp_watches[fiber.amplifier].sample
                    threshold += self.judge.amp_gain_db(fiber.amplifier, reading) or 0.0
                ocs = mine.setdefault(fiber.end.ocs, {})
                ocs[fiber.end.port] = LightPoint(f"{span.name} far end", threshold)
                ocs[end.rx.port] = LightPoint(f"{end.switch} {end.port} receiver", threshold,
                                              upstream=fiber.end.port)
        return points


def _written(intent: AbstractContextManager[Change]) -> tuple[Change, float]:
    """Write ``intent`` (enter it), and when it was on disk."""
    return intent.__enter__(), time.monotonic()


def _close_when_written(writing: Future[tuple[Change, float]],
                        intent: AbstractContextManager[Change]) -> None:
    """The change failed before its commands (a map read, the plan): once its intent is
    on disk, its result says so. Called while the failure is handled; an intent that
    could not be written needs no result."""
    try:
        writing.result()
    except BaseException:
        return
    intent.__exit__(*sys.exc_info())


@contextmanager
def _closing(intent: AbstractContextManager[Change]) -> Iterator[None]:
    """The rest of a change whose intent was written (entered) elsewhere: its result is
    written as the block ends, either way."""
    try:
        yield
    except BaseException:
        if not intent.__exit__(*sys.exc_info()):
            raise
    else:
        intent.__exit__(None, None, None)


def _durations(detected: float, decided: float, sent: float, done: float,
               verified: float | None) -> dict[str, float | None]:
    return {"hold_off": _ms(detected, decided), "decide_to_sent": _ms(decided, sent),
            "control_plane": _ms(detected, sent), "device": _ms(sent, done),
            "verification": _ms(done, verified), "total": _ms(detected, verified)}


def _summary(action: str, durations: dict[str, float | None], links: int,
             failed: list[str]) -> str:
    verdict = ("light verified" if not failed
               else f"LIGHT NOT VERIFIED on {', '.join(failed)}")
    what = "" if links == 1 else f" on {links} links"
    if action == "protection.revert":
        total, held = durations["total"], durations["hold_off"]
        after = None if total is None or held is None else round(total - held, 3)
        head = f"{_text(after)} after the wait-to-restore ended"
    else:
        head = f"{_text(durations['total'])} after detection"
    plane = durations["decide_to_sent" if action == "protection.revert" else "control_plane"]
    return (f"{verdict}{what}: {head} (control plane {_text(plane)}, "
            f"devices {_text(durations['device'])}, verification "
            f"{_text(durations['verification'])})")


def _ms(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round((end - start) * 1000, 3)


def _text(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.1f} ms"

