"""Where the emulators' processes of their own come from: a fork server.

A lab spread over several processes (emulators/lab/spread.py) and a benchmark's fleets
(emulators/fleetprocess.py) start their processes through :func:`process_context`:
multiprocessing's ``forkserver``, with the emulators' modules imported once in the
server (:data:`PRELOAD`). Each process is then a fork of that server: it starts
without the second or so of imports a ``spawn`` costs every process, and, unlike a
plain ``fork`` of the parent, it inherits none of the parent's threads, sockets or
event loops. The server is started by the first process asked for and serves the
parent until it exits; it runs with the parent's environment of that moment (the
emulators read none).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import ForkServerContext

PRELOAD = ("emulators.lab.worker", "emulators.ocs.fleet", "emulators.switch.fleet",
           "emulators.amp.fleet", "emulators.cpo.fleet")
"""Imported once in the fork server: everything a lab worker or a fleet runs."""


def process_context() -> ForkServerContext:
    """The multiprocessing context the emulators start their processes with."""
    context = multiprocessing.get_context("forkserver")
    assert isinstance(context, ForkServerContext)
    context.set_forkserver_preload(list(PRELOAD))  # no effect once the server runs
    return context
