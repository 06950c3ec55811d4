"""The files that keep emulated OCSes' non-volatile memory across lab restarts, written
in a thread of their own.

A unit's memory is what it saved last (``OcsDevice._saved``), at once, as the unit
holds it; the file follows within milliseconds. Writing it in the thread that carried
out the command (a JSON dump, a temporary file and a rename: 0.2 ms on an idle disk, a
millisecond and more beside a controller's fsyncs) held up every other unit served by
the same event loop: a cable cut's switch commands, eight to a lab process, were each
a millisecond longer. Only the last state of each file is written (a unit switched
twice before its file is written is written once), each by a rename of a whole
temporary file, so that a file is never half written.

Whoever reads a file back (a unit booting from its memory, a new unit on the same file)
:func:`flush`\\ es it first; the lab flushes every file when it stops, and so does the
interpreter at its exit.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

FLUSH_SECONDS = 10.0
"""The longest a reader waits for a file to be written (a disk that hangs)."""

_lock = threading.Condition()
_pending: dict[Path, object] = {}
_writing: Path | None = None
_thread: threading.Thread | None = None


def save(path: Path, memory: object) -> None:
    """Write ``memory`` (JSON-able, not changed after this call) to ``path`` soon."""
    global _thread
    with _lock:
        _pending[path] = memory
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="ocs-nvram", daemon=True)
            _thread.start()
        _lock.notify_all()


def flush(path: Path | None = None) -> None:
    """Wait until ``path`` (every file, when ``None``) holds what was saved last."""

    def written() -> bool:
        if path is None:
            return not _pending and _writing is None
        return path not in _pending and _writing != path

    with _lock:
        if not _lock.wait_for(written, timeout=FLUSH_SECONDS):
            log.warning("non-volatile memory not written within %g s", FLUSH_SECONDS)


def _run() -> None:
    global _writing
    while True:
        with _lock:
            _lock.wait_for(lambda: bool(_pending))
            path = next(iter(_pending))
            memory = _pending.pop(path)
            _writing = path
        try:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(memory))
            os.replace(tmp, path)
        except Exception as error:  # a lab's state directory removed under it, a full disk
            log.warning("cannot write %s: %s", path, error)
        finally:
            with _lock:
                _writing = None
                _lock.notify_all()


atexit.register(flush)
