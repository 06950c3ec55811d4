"""The ``msoctl`` command's entry point (also ``python -m msoctl``).

Kept apart from :mod:`msoctl.cli` so that a Ctrl-C or SIGTERM arriving while the
command's modules are still being imported ends it like any other interruption:
one ``error:`` line and exit 130 (143), not a traceback.
"""

from __future__ import annotations

import signal
import sys


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(143)


def main() -> None:
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        from msoctl.cli import run
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit as stop:
        if stop.code == 143:
            print("error: terminated", file=sys.stderr)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    code = 130
    try:
        code = run()
    except KeyboardInterrupt:  # Ctrl-C after the command ended: its work is done and recorded
        pass
    finally:
        _signals_end_the_process()
    sys.exit(code)


def _signals_end_the_process() -> None:
    """From here on (the interpreter closing the sessions left open at exit: a VISA
    resource's finalizer talks to its device) a Ctrl-C or SIGTERM ends the process at
    once, by the signal, instead of raising inside a finalizer, whose traceback Python
    would print. What the command wrote is flushed first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe, a closed stream: nothing more to write there
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    main()
