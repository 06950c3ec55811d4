"""``--watch SECONDS``: a show command run again every SECONDS until Ctrl-C.

On a terminal each run replaces the last one on the screen: cursor home, clear, then the
whole frame at once under a line that says what runs, how often and when, cut to the
screen's height so the screen never scrolls. Otherwise the runs follow one another:
tables separated by a blank line, one JSON document per line (``-o json``), YAML
documents each opened by ``---`` (``-o yaml``).

A device that fails during a run does not end the watch: its error takes the run's place
(``error: ...`` in a table, ``{"error": "..."}`` as a document) and the next run comes on
time, so a watch shows a device going away and coming back. Input refused before
anything was sent (exit 2: an unknown device, a bad inventory) ends the watch at once, as
no later run would differ. Ctrl-C ends it with exit 0: stopping a watch is how it ends.
"""

from __future__ import annotations

import io
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout

import click

from drivers.errors import DeviceError, SafetyInterlock, ValidationError
from msoctl.journal import DeviceBusy, JournalError

HOME_AND_CLEAR = "\x1b[H\x1b[2J"  # ECMA-48 CUP (cursor to 1;1) and ED 2 (erase display)
SCREEN = (80, 24)  # what a terminal that does not say its size is taken to be

Show = Callable[[str], None]
"""Prints a failed run's error (its one line) in the run's place."""


def watch(run: Callable[[], object], *, seconds: float, count: int | None, documents: bool,
          show_error: Show, title: str, clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> None:
    """Call ``run`` (which prints one run of the command) every ``seconds`` from the start
    of the last call, ``count`` times or until Ctrl-C; see the module's docstring.
    ``documents``: each run prints a JSON or YAML document (no blank line between);
    ``show_error`` prints a failure in a run's place.

    Raises what ``run`` raises for refused input (ValidationError, SafetyInterlock) and
    anything that is not a device's or the journal's failure."""
    terminal = sys.stdout.isatty()
    frames = 0
    try:
        while count is None or frames < count:
            began = clock()
            if terminal:
                _redraw(run, show_error, f"every {seconds:g} s: {title} (Ctrl-C stops)")
            else:
                if frames and not documents:
                    click.echo()
                _attempt(run, show_error)
            frames += 1
            if count is None or frames < count:
                sleep(max(0.0, began + seconds - clock()))
    except KeyboardInterrupt:
        if terminal:
            click.echo()  # the shell's prompt under the last frame, not inside it


def _attempt(run: Callable[[], object], show_error: Show) -> None:
    """One run; a device's (or the journal's) failure is shown in its place."""
    try:
        run()
    except (ValidationError, SafetyInterlock):
        raise
    except (DeviceError, JournalError, DeviceBusy) as error:
        show_error(str(error))


def _redraw(run: Callable[[], object], show_error: Show, heading: str) -> None:
    frame = io.StringIO()
    with redirect_stdout(frame), redirect_stderr(frame):  # warnings belong to the frame
        _attempt(run, show_error)
    size = shutil.get_terminal_size(SCREEN)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    room = max(size.columns - len(stamp) - 2, 10)
    top = f"{heading[:room]:<{room}}  {stamp}"
    lines = [top, "", *frame.getvalue().rstrip("\n").split("\n")]
    sys.stdout.write(HOME_AND_CLEAR)  # written as is: click.echo strips escapes without colour
    click.echo("\n".join(lines[:max(size.lines - 1, 3)]))
