"""Which links are drained: taken out of service on purpose, before work that darkens them.

A drained link may be taken down by a change without ``--force``, and the
protection controller leaves it alone (it neither moves it nor counts its
darkness as a failure). Draining and undraining are changes like any other:
journaled (device = the link, action ``link.drain`` / ``link.undrain``, with
who, why and when) under the link's lock.

The current state lives beside the journal in ``link-states.json`` — one small
document, replaced atomically (written, fsynced, renamed) — so that a check
before every change, and the controller's check every few hundred
milliseconds, read a few hundred bytes instead of the whole journal. The
journal is the history; this file is the present.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from msoctl.journal import Journal, JournalError, current_user, locked_change

STATE_FILE = "link-states.json"
DRAIN = "link.drain"
UNDRAIN = "link.undrain"


@dataclass(frozen=True)
class Drained:
    """A link out of service: since when, by whom, why, and the journal operation."""

    link: str
    since: str
    user: str
    reason: str
    op: str

    def as_dict(self) -> dict[str, Any]:
        return {"link": self.link, "since": self.since, "user": self.user,
                "reason": self.reason, "op": self.op}


class LinkStates:
    """The drained links of one journal."""

    def __init__(self, journal: Journal):
        self.journal = journal
        self.path = journal.path.parent / STATE_FILE
        self._cache: tuple[tuple[int, int], dict[str, Drained]] | None = None

    def drained(self) -> dict[str, Drained]:
        """Link name -> its drain; re-read only when the file changed."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as error:
            raise JournalError(f"cannot read {self.path}: {error.strerror}") from None
        key = (stat.st_mtime_ns, stat.st_size)
        if self._cache is not None and self._cache[0] == key:
            return dict(self._cache[1])
        try:
            document = json.loads(self.path.read_text())
            entries = {name: Drained(link=name, since=str(entry["since"]),
                                     user=str(entry["user"]), reason=str(entry["reason"]),
                                     op=str(entry["op"]))
                       for name, entry in document.get("drained", {}).items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise JournalError(f"{self.path} is unreadable ({error}); it is rebuilt by the "
                               "next drain or undrain") from None
        self._cache = (key, entries)
        return dict(entries)

    def drain(self, link: str, *, reason: str) -> tuple[Drained, bool]:
        """Mark ``link`` drained; False as second value when it already was."""
        with locked_change(self.journal, device=link, action=DRAIN, reason=reason) as change:
            current = self._read_for_update()
            already = current.get(link)
            if already is not None:
                change.outcome["already_drained_since"] = already.since
                return already, False
            entry = Drained(link, _now(), current_user(), reason,
                            change.op)
            current[link] = entry
            self._write(current)
            return entry, True

    def undrain(self, link: str) -> Drained | None:
        """Put ``link`` back in service; the drain it ends, or None when it was not drained."""
        with locked_change(self.journal, device=link, action=UNDRAIN) as change:
            current = self._read_for_update()
            entry = current.pop(link, None)
            if entry is None:
                change.outcome["was_drained"] = False
                return None
            change.outcome["drained_since"] = entry.since
            self._write(current)
            return entry

    def _read_for_update(self) -> dict[str, Drained]:
        try:
            return self.drained()
        except JournalError:
            return {}  # a damaged file is rebuilt from what is drained from now on

    def _write(self, entries: dict[str, Drained]) -> None:
        document = {"drained": {name: {k: v for k, v in entry.as_dict().items() if k != "link"}
                                for name, entry in sorted(entries.items())}}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with temporary.open("w") as handle:
                json.dump(document, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except OSError as error:
            raise JournalError(f"cannot write {self.path}: {error.strerror}") from None
        self._cache = None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
