"""The gNMI Commit Confirmed extension's state: one commit waiting, and its rollback timer.

As the extension's document (openconfig/reference rpc/gnmi/gnmi-commit-confirmed.md,
version 0.1.0) has it: at most one commit is waiting for confirmation; ``commit`` needs
an ``id`` and waits ``rollback_duration`` (600 s when not given) for ``confirm``, after
which the configuration from before the commit comes back; ``cancel`` brings it back at
once; ``set_rollback_duration`` restarts the wait with a new duration (> 0). While a
commit waits, another ``commit`` and a Set without the extension are FAILED_PRECONDITION;
``confirm``, ``cancel`` and ``set_rollback_duration`` are FAILED_PRECONDITION when none
waits and INVALID_ARGUMENT when their ``id`` is not the waiting one's.

The deadline is device time (the emulator's clock). The server calls :meth:`expire_due`
at the start of every RPC, so a test's ``SteppedClock.advance()`` is seen by the next
request; a watcher thread also waits it out in real time (a RealClock's deadline to the
millisecond; a stepped clock's within :data:`WATCH_PERIOD_SECONDS` of its advance). The
rollback runs with the server's lock held.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from gnmi_pb import gnmi_ext_pb2

from emulators.clock import Clock
from emulators.gnmi.errors import GnmiError
from emulators.gnmi.face import Tree

log = logging.getLogger(__name__)

DEFAULT_ROLLBACK_SECONDS = 600.0
WATCH_PERIOD_SECONDS = 0.5


@dataclass
class PendingCommit:
    commit_id: str
    before: Tree
    """The configuration a cancel or the timeout goes back to."""
    deadline: float
    """Device time (``clock.now()``) of the rollback."""


def rollback_seconds(commit: gnmi_ext_pb2.Commit) -> float:
    """The rollback duration a ``commit`` or ``set_rollback_duration`` action asks for."""
    action = commit.WhichOneof("action")
    holder = commit.commit if action == "commit" else commit.set_rollback_duration
    if not holder.HasField("rollback_duration"):
        if action == "commit":
            return DEFAULT_ROLLBACK_SECONDS
        raise GnmiError("INVALID_ARGUMENT", "set_rollback_duration needs a rollback_duration")
    duration = holder.rollback_duration
    seconds = float(duration.seconds + duration.nanos / 1e9)
    if seconds <= 0:
        raise GnmiError("INVALID_ARGUMENT", f"rollback_duration must be > 0 (got {seconds} s)")
    return seconds


class ConfirmedCommit:
    """At most one commit waiting for its confirmation (module docstring).

    ``rollback(before)`` puts a configuration back (the server's face commit); it is
    called with ``lock`` held when the deadline passes.
    """

    def __init__(self, name: str, clock: Clock, lock: threading.RLock,
                 rollback: Callable[[Tree], None]):
        self.name = name
        self._clock = clock
        self._lock = lock
        self._changed = threading.Condition(lock)
        self._rollback = rollback
        self.pending: PendingCommit | None = None
        self._watcher: threading.Thread | None = None
        self._closed = False

    # ---- checks before a Set --------------------------------------------------------------

    def refuse_plain_set(self) -> None:
        if self.pending is not None:
            raise GnmiError("FAILED_PRECONDITION", f"commit {self.pending.commit_id!r} is "
                            "waiting for confirmation; confirm or cancel it first")

    def check_begin(self, commit_id: str) -> None:
        if self.pending is not None:
            raise GnmiError("FAILED_PRECONDITION", f"commit {self.pending.commit_id!r} is "
                            f"waiting for confirmation; commit {commit_id!r} cannot begin")

    def ongoing(self, commit_id: str) -> PendingCommit:
        """The waiting commit a confirm, cancel or set_rollback_duration names."""
        if self.pending is None:
            raise GnmiError("FAILED_PRECONDITION", "no commit is waiting for confirmation")
        if commit_id != self.pending.commit_id:
            raise GnmiError("INVALID_ARGUMENT", f"commit {commit_id!r} is not the one waiting "
                                                f"({self.pending.commit_id!r})")
        return self.pending

    # ---- changes (the server holds the lock) ------------------------------------------------

    def begin(self, commit_id: str, before: Tree, seconds: float) -> None:
        with self._changed:
            self.pending = PendingCommit(commit_id, before, self._clock.now() + seconds)
            self._watch()

    def restart(self, commit_id: str, seconds: float) -> None:
        with self._changed:
            self.ongoing(commit_id).deadline = self._clock.now() + seconds
            self._changed.notify_all()

    def finish(self) -> None:
        """The waiting commit is confirmed or cancelled (or dropped by a factory reset)."""
        with self._changed:
            self.pending = None
            self._changed.notify_all()

    def expire_due(self) -> None:
        """Roll back the waiting commit if its deadline has passed."""
        with self._changed:
            pending = self.pending
            if pending is None or self._clock.now() < pending.deadline:
                return
            self.pending = None
            self._changed.notify_all()
            log.info("%s: commit %r not confirmed in time; rolling back", self.name,
                     pending.commit_id)
            self._rollback(pending.before)

    # ---- the watcher --------------------------------------------------------------------

    def open(self) -> None:
        with self._changed:
            self._closed = False
            self._watch()

    def close(self, timeout: float = 2.0) -> None:
        """Stop the watcher (the waiting commit stays; :meth:`open` watches it again)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            watcher = self._watcher
        if watcher is not None:
            watcher.join(timeout)

    def _watch(self) -> None:
        if self.pending is not None and self._watcher is None and not self._closed:
            self._watcher = threading.Thread(target=self._run, name=f"{self.name}-commit",
                                             daemon=True)
            self._watcher.start()
        self._changed.notify_all()

    def _run(self) -> None:
        with self._changed:
            try:
                while not self._closed and self.pending is not None:
                    remaining = self.pending.deadline - self._clock.now()
                    if remaining <= 0:
                        try:
                            self.expire_due()
                        except Exception:  # the face refused its own old configuration
                            log.exception("%s: rollback failed", self.name)
                        break
                    self._changed.wait(min(remaining, WATCH_PERIOD_SECONDS))
            finally:
                self._watcher = None
