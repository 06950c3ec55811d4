"""The change journal: append-only JSON lines, fsynced.

Every change writes an ``intent`` record before anything is sent and a
``result`` record once it is known how it ended. An ``intent`` without a
``result`` whose process is gone is an interrupted change: the next change to
that device closes it with a ``result`` of status ``interrupted`` and says what
it found. Refusals (bad input, safety interlocks) and safety overrides are
journaled too: this file is the audit trail.

A record is one line, written with one ``write`` under an exclusive lock and
fsynced. A line torn by a crash is skipped on reading, and the next writer
starts on a fresh line, so one bad line never hides the rest.
"""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from msoctl import interrupts


def default_journal_path() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "msoctl" / "journal.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_OPEN_OPS: set[str] = set()
"""Changes this process has begun and not yet ended."""


class JournalError(OSError):
    """The journal cannot be written; no change is sent without it."""


@dataclass
class Operation:
    """One change as the journal tells it: its intent and, if known, its result."""

    op: str
    device: str
    action: str
    started: str
    intent: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None

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
        if self.op in _OPEN_OPS:
            return "running"
        same_host = self.intent.get("host") == socket.gethostname()
        pid = self.intent.get("pid")
        if same_host and isinstance(pid, int) and pid != os.getpid() and _alive(pid):
            return "running"
        return "interrupted"


class Journal:
    def __init__(self, path: Path):
        self.path = path

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Write one record durably; it returns only once the record is on disk."""
        full = {"ts": _now(), **record}
        line = json.dumps(full, sort_keys=False, default=str, separators=(",", ":")) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o640)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = "\n" + line  # a torn record from a crash: start afresh
                os.write(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            raise JournalError(f"cannot write journal {self.path}: {error.strerror}") from None
        return full

    def records(self) -> Iterator[dict[str, Any]]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as error:
            raise JournalError(f"cannot read journal {self.path}: {error.strerror}") from None
        with handle:
            for raw in handle:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue  # torn by a crash mid-write
                if isinstance(record, dict) and "op" in record:
                    yield record

    def operations(self, device: str | None = None) -> list[Operation]:
        ops: dict[str, Operation] = {}
        for record in self.records():
            op_id = str(record["op"])
            operation = ops.get(op_id)
            if operation is None:
                operation = Operation(
                    op=op_id,
                    device=str(record.get("device", "")),
                    action=str(record.get("action", "")),
                    started=str(record.get("ts", "")),
                    intent=record,
                )
                ops[op_id] = operation
            operation.records.append(record)
            if record.get("event") in ("result", "refused"):
                operation.result = record if record.get("event") == "result" else {
                    **record, "status": "refused"}
        result = list(ops.values())
        if device is not None:
            result = [o for o in result if o.device == device]
        return result

    def interrupted(self, device: str) -> list[Operation]:
        """The orphaned changes of ``device``: begun, never ended, their process gone.

        A change closed since (its ``result`` says ``interrupted`` and who resolved it)
        is not among them: each is closed exactly once.
        """
        return [o for o in self.operations(device) if o.orphaned]

    # ---- writing a change --------------------------------------------------------------

    def refuse(self, *, device: str, action: str, reason: str, exit_code: int,
               **details: Any) -> None:
        self.append({"op": _op_id(), "event": "refused", "device": device, "action": action,
                     "reason": reason, "exit_code": exit_code, **_who(), **details})

    @contextmanager
    def change(self, *, device: str, action: str,
               read_back: ReadBack | None = None, **intent: Any) -> Iterator[Change]:
        """Journal a change: the intent now, the result when the block ends (either way).

        When the block ends by an exception (the device failed, or SIGINT/SIGTERM
        interrupted it), ``read_back`` (or :attr:`Change.read_back`, set inside the
        block once the wanted state is known) is asked what the device really holds,
        and its answer goes into the result as ``found``: the record then says whether
        the change was applied, partly applied or not applied, not just that the
        program stopped. The read-back and the result are written with SIGINT and
        SIGTERM held, so a second Ctrl-C cannot leave the operation open.
        """
        change = Change(self, _op_id(), device, action, read_back=read_back)
        started = time.monotonic()
        written = False
        try:
            # A signal held while the intent is written arrives just after, inside this
            # try: an intent on disk always gets its result.
            with interrupts.deferred():
                self.append({"op": change.op, "event": "intent", "device": device,
                             "action": action, **_who(), **intent})
                written = True
                _OPEN_OPS.add(change.op)
            yield change
        except BaseException as error:
            if not written:
                raise
            with interrupts.deferred():
                signal_name = interrupts.signal_name(error)
                record: dict[str, Any] = {
                    "op": change.op, "event": "result", "device": device, "action": action,
                    "status": "interrupted" if signal_name else "failed",
                    "duration_seconds": round(time.monotonic() - started, 4),
                    **change.outcome}
                if signal_name:
                    record["signal"] = signal_name
                else:
                    record["error"] = f"{type(error).__name__}: {error}"
                found = change.found()
                if found is not None:
                    record["found"] = found
                self.append(record)
            raise
        else:
            with interrupts.deferred():
                self.append({"op": change.op, "event": "result", "device": device,
                             "action": action, "status": change.status,
                             "duration_seconds": round(time.monotonic() - started, 4),
                             **change.outcome})
        finally:
            _OPEN_OPS.discard(change.op)


ReadBack = Callable[[], dict[str, Any]]
"""What a device holds after an interrupted change: ``{"state": "applied" | "partly applied"
| "not applied", ...}`` with whatever else tells it (the map read back, say)."""


@dataclass
class Change:
    journal: Journal
    op: str
    device: str
    action: str
    status: str = "ok"
    outcome: dict[str, Any] = field(default_factory=dict)
    read_back: ReadBack | None = None

    def found(self) -> dict[str, Any] | None:
        """The read-back's answer; ``state: unknown`` with the reason when it fails."""
        if self.read_back is None:
            return None
        try:
            return self.read_back()
        except Exception as error:  # the device may be what failed: say so, keep the record
            return {"state": "unknown", "error": f"{type(error).__name__}: {error}"}

    def note(self, event: str, **details: Any) -> None:
        """A record inside the change (a safety override, a recovered operation)."""
        self.journal.append({"op": self.op, "event": event, "device": self.device,
                             "action": self.action, **details})


def _op_id() -> str:
    return uuid.uuid4().hex[:12]


def _who() -> dict[str, Any]:
    return {"user": current_user(), "host": socket.gethostname(), "pid": os.getpid()}


class DeviceLock:
    """One change at a time per device, across processes (an flock beside the journal)."""

    def __init__(self, journal: Journal, device: str):
        self.path = journal.path.parent / "locks" / f"{device}.lock"
        self.device = device
        self._fd: int | None = None

    def __enter__(self) -> DeviceLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o640)
        except OSError as error:
            raise JournalError(f"cannot create lock {self.path}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise DeviceBusy(f"{self.device} is being changed by {holder}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class DeviceBusy(RuntimeError):
    """Another msoctl process is changing the device."""


@contextmanager
def locked_change(journal: Journal, *, device: str, action: str,
                  read_back: ReadBack | None = None, **intent: Any) -> Iterator[Change]:
    """A journaled change made while holding the device's lock."""
    with DeviceLock(journal, device), journal.change(device=device, action=action,
                                                     read_back=read_back,
                                                     **intent) as change:
        yield change
