"""Which links are drained: taken out of service on purpose, before work that darkens them.

A drained link may be taken down by a change without ``--force``, and the
protection controller leaves it alone (it neither moves it nor counts its
darkness as a failure). Draining and undraining are changes like any other:
journaled (device = the link, action ``link.drain`` / ``link.undrain``, with
who, why and when) under the link's lock.

The current state is a table of the journal's store (``link_states``): the check
before every change, and the controller's check every few hundred milliseconds,
read a handful of rows, never the history; with a PostgreSQL journal every host
sees the same drains. The journal is the history; this table is the present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from msoctl.journal import Journal, current_user, locked_change
from msoctl.journal.model import now_ts
from msoctl.journal.store import Drain

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

    def drained(self) -> dict[str, Drained]:
        """Link name -> its drain (raises JournalError when the store cannot be read)."""
        return {name: Drained(d.link, d.since, d.user, d.reason, d.op)
                for name, d in self.journal.store.drains().items()}

    def drain(self, link: str, *, reason: str) -> tuple[Drained, bool]:
        """Mark ``link`` drained; False as second value when it already was."""
        with locked_change(self.journal, device=link, action=DRAIN, reason=reason) as change:
            already = self.drained().get(link)
            if already is not None:
                change.outcome["already_drained_since"] = already.since
                return already, False
            entry = Drained(link, _now(), current_user(), reason, change.op)
            self.journal.store.set_drain(Drain(entry.link, entry.since, entry.user,
                                               entry.reason, entry.op))
            return entry, True

    def undrain(self, link: str) -> Drained | None:
        """Put ``link`` back in service; the drain it ends, or None when it was not drained."""
        with locked_change(self.journal, device=link, action=UNDRAIN) as change:
            entry = self.drained().get(link)
            if entry is None:
                change.outcome["was_drained"] = False
                return None
            change.outcome["drained_since"] = entry.since
            self.journal.store.clear_drain(link)
            return entry


def _now() -> str:
    return now_ts()[:19] + "Z"
