"""One change at a time per device.

On SQLite, a local lock (an ``flock`` beside the journal file): it excludes the
processes of this host. On PostgreSQL, an advisory lock in the database, held by the
process's session: it excludes every host that shares the journal, and the database
frees it when the holder's connection ends (a killed holder frees it at once). Either
way a refusal (:class:`DeviceBusy`) names the holder: user, host and pid.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from msoctl.journal.core import Change, Journal, ReadBack
from msoctl.journal.store import HeldLock


class DeviceLock:
    """The lock of ``device`` in ``journal``'s store, held for the ``with`` block."""

    def __init__(self, journal: Journal, device: str):
        self.journal = journal
        self.device = device
        self.path: Path | None = (None if journal.path is None
                                  else journal.path.parent / "locks" / f"{device}.lock")
        """The lock file (SQLite journals); None for a lock held in the database."""
        self._held: HeldLock | None = None

    def __enter__(self) -> DeviceLock:
        self._held = self.journal.store.lock(self.device)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._held is not None:
            self._held.release()
            self._held = None


@contextmanager
def locked_change(journal: Journal, *, device: str, action: str,
                  read_back: ReadBack | None = None, **intent: Any) -> Iterator[Change]:
    """A journaled change made while holding the device's lock."""
    with DeviceLock(journal, device), journal.change(device=device, action=action,
                                                     read_back=read_back,
                                                     **intent) as change:
        yield change
