"""What the journal holds: records, folded into operations, and who wrote them.

A record is one JSON object with at least ``op`` (the operation id), ``event``
(``intent``, ``result``, ``refused`` or a note such as ``override``),
``device``, ``action`` and ``ts`` (UTC, ISO 8601 with milliseconds and ``Z``,
so that text order is time order). The records of one ``op`` make one
:class:`Operation`: its first record is its intent, its last ``result`` (or a
``refused``) its outcome.
"""

from __future__ import annotations

import functools
import getpass
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

_OPEN_OPS: set[str] = set()
"""Changes this process has begun and not yet ended."""

CLOSING_EVENTS = ("result", "refused")


class JournalError(OSError):
    """The journal cannot be read or written; no change is sent without it."""


class DeviceBusy(RuntimeError):
    """Another msoctl process (on this host or, with PostgreSQL, any) is changing the
    device; the message names the holder."""


def now_ts() -> str:
    """The current time as the journal writes it: ``2025-01-31T12:00:00.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def current_user() -> str:
    """Who runs this process: asked once per user id. Without ``LOGNAME`` or ``USER`` (a
    service) it is a passwd lookup through NSS, which a journaled change would otherwise
    make at its intent and at each of its device locks, on the path to its commands."""
    return _user_of(os.getuid())


@functools.cache
def _user_of(uid: int) -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(uid)


def who() -> dict[str, Any]:
    """The ``user``, ``host`` and ``pid`` fields of an intent or a refusal."""
    return {"user": current_user(), "host": socket.gethostname(), "pid": os.getpid()}


def new_id() -> str:
    """A fresh operation (or record) id: 12 hex digits, random."""
    return uuid.uuid4().hex[:12]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Operation:
    """One change as the journal tells it: its intent and, if known, its result.

    ``session_alive`` is what the store knows of the writer's database session
    (PostgreSQL: whether the connection that wrote the intent is still open, on
    whichever host); ``None`` where the store cannot tell (SQLite, imported records).
    """

    op: str
    device: str
    action: str
    started: str
    intent: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    session_alive: bool | None = None
    order: int = 0
    """Where it began in the journal (grows with time; 0 when not from a store)."""

    @property
    def is_open(self) -> bool:
        """No result yet: still running, or interrupted and not yet closed."""
        return self.result is None and self.intent.get("event") != "refused"

    @property
    def orphaned(self) -> bool:
        """Open, and its process is gone: an interrupted change waiting to be closed."""
        return self.is_open and self.status == "interrupted"

    @property
    def status(self) -> str:
        if self.result is not None:
            return str(self.result.get("status", "unknown"))
        if self.intent.get("event") == "refused":
            return "refused"
        if self.op in _OPEN_OPS or self.session_alive:
            return "running"
        same_host = self.intent.get("host") == socket.gethostname()
        pid = self.intent.get("pid")
        if same_host and isinstance(pid, int) and pid != os.getpid() and pid_alive(pid):
            return "running"
        return "interrupted"


def fold(records: Iterable[dict[str, Any]]) -> list[Operation]:
    """Group records (in journal order) into operations, in the order they began."""
    ops: dict[str, Operation] = {}
    for record in records:
        op_id = str(record["op"])
        operation = ops.get(op_id)
        if operation is None:
            operation = Operation(op=op_id, device=str(record.get("device", "")),
                                  action=str(record.get("action", "")),
                                  started=str(record.get("ts", "")), intent=record)
            ops[op_id] = operation
        operation.records.append(record)
        event = record.get("event")
        if event == "result":
            operation.result = record
        elif event == "refused":
            operation.result = {**record, "status": "refused"}
    return list(ops.values())


def summary_status(event: object, record: dict[str, Any]) -> str | None:
    """The status an operation takes from one of its records, or None (no change)."""
    if event == "result":
        return str(record.get("status", "unknown"))
    if event == "refused":
        return "refused"
    return None
