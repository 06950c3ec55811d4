"""One worker process of a lab spread over several (emulators/lab/spread.py).

:func:`serve_part` is the target of a process of its own. It reads its part of the
topology (a :class:`~emulators.lab.topology.Topology`) from its pipe, runs it as a
:class:`~emulators.lab.lab.Lab` in worker mode (no state-directory lock, no inventory,
no control endpoint: the starting process has those), then sends on its pipe
``("ready", {...})`` with its inventory entries, its switches' known_hosts lines, its
fault targets and its pid -- or ``("failed", "one line")`` -- and answers requests, one
at a time, until ``("stop",)`` or until the pipe closes (the starting process is gone,
however it went):

| request                    | answer                                             |
|----------------------------|----------------------------------------------------|
| ``("status",)``            | its status document (emulators/lab/status.py)       |
| ``("inject", target, fault)`` | what was injected (emulators/lab/backend.py)    |
| ``("clear", target, kind, port)`` | what was cleared                           |

Answers are ``("ok", value)``, ``("fault", message)`` for a fault the part refuses
(:class:`~emulators.faults.FaultError`) or ``("error", message)`` for anything else.
"""

from __future__ import annotations

import logging
import os
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from emulators.faults import FaultError
from emulators.lab.backend import LocalBackend
from emulators.lab.lab import Lab, freeze_heap
from emulators.lab.topology import Topology

log = logging.getLogger(__name__)


def serve_part(state_dir: str, pipe: Connection) -> None:
    # Ctrl-C reaches the whole process group: the starting process stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        topology: Topology = pipe.recv()
    except (EOFError, OSError):
        return  # the starting process is gone already
    logging.basicConfig(level=logging.WARNING,
                        format=f"lab worker {os.getpid()}: %(levelname)s %(name)s: %(message)s")
    try:
        lab = Lab(Path(state_dir), topology, worker=True)
        lab.start()
        freeze_heap()
    except BaseException as error:  # the parent reports it; nothing here to clean up
        pipe.send(("failed", f"{type(error).__name__}: {error}"))
        return
    try:
        backend = LocalBackend(lab)
        pipe.send(("ready", {"inventory": lab.inventory(), "known_hosts": lab.known_hosts_lines(),
                             "targets": backend.fault_targets(), "pid": os.getpid()}))
        while True:
            request = pipe.recv()
            if request[0] == "stop":
                break
            pipe.send(_answer(backend, request))
    except (EOFError, OSError):
        pass  # the starting process is gone: stop with it
    finally:
        lab.stop()


def _answer(backend: LocalBackend, request: tuple[Any, ...]) -> tuple[str, Any]:
    operation, *arguments = request
    try:
        if operation == "status":
            return "ok", backend.status()
        if operation == "inject":
            return "ok", backend.inject(*arguments)
        if operation == "clear":
            return "ok", backend.clear(*arguments)
        return "error", f"unknown request {operation!r}"
    except FaultError as error:
        return "fault", str(error)
    except Exception as error:  # one bad request must not stop the worker
        log.exception("request %r failed", operation)
        return "error", f"{type(error).__name__}: {error}"
