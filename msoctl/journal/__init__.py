"""The change journal and the device locks, on SQLite (embedded, the default) or
PostgreSQL (shared by a team or a fleet).

- :class:`Journal`: append records, write a change (:meth:`Journal.change`), query
  operations by device, action, id, status, time or newest N — each an index lookup.
- :class:`DeviceLock` / :func:`locked_change`: one change at a time per device.
- :mod:`msoctl.journal.location`: where the journal is (``journal:`` / ``--journal``).
- :mod:`msoctl.journal.jsonl`: import and export JSON lines.
"""

from msoctl.journal.core import Change, Journal, LegacyJournal, ReadBack, close_stores
from msoctl.journal.location import JournalLocation, default_journal_path, parse_location
from msoctl.journal.locks import DeviceLock, locked_change
from msoctl.journal.model import DeviceBusy, JournalError, Operation, current_user

__all__ = [
    "Change",
    "DeviceBusy",
    "DeviceLock",
    "Journal",
    "JournalError",
    "JournalLocation",
    "LegacyJournal",
    "Operation",
    "ReadBack",
    "close_stores",
    "current_user",
    "default_journal_path",
    "locked_change",
    "parse_location",
]
