"""How a command line ends: its exit code, and for a failure the one ``error:`` line.

0 success; 2 bad usage or input refused before anything was sent
(:class:`~drivers.errors.ValidationError`, a bad YAML file); 1 the device or the
operation failed (any other :class:`~drivers.errors.DeviceError`, the journal, a file);
3 refused by a safety interlock (:class:`~drivers.errors.SafetyInterlock`); 130 and 143
when SIGINT or SIGTERM ended it. ``-v`` adds the error's detail on a second line; only
``--debug`` shows a traceback.
"""

from __future__ import annotations

import logging
import traceback

import click

from msoctl import interrupts

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SAFETY = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
_NO_ARGS_IS_HELP: type[Exception] | tuple[()] = getattr(
    click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


def _fail(message: str, code: int, detail: str | None = None, *, verbose: bool) -> int:
    click.echo(f"error: {message}", err=True)
    if verbose and detail:
        click.echo(f"  detail: {detail}", err=True)
    return code


def _failed(error: BaseException, *, verbose: bool, debug: bool) -> int:
    """The exit code of a command that raised ``error``, its one line printed."""
    # Imported here, once something failed: --help and the root need none of them.
    from drivers.errors import DeviceError, SafetyInterlock, ValidationError
    from drivers.yamlfile import YamlFileError
    from msoctl.journal import DeviceBusy, JournalError, LegacyJournal

    if isinstance(error, SafetyInterlock):
        return _fail(str(error), EXIT_SAFETY, error.detail, verbose=verbose)
    if isinstance(error, ValidationError):
        return _fail(str(error), EXIT_USAGE, error.detail, verbose=verbose)
    if isinstance(error, DeviceError):
        if debug:
            traceback.print_exc()
        return _fail(str(error), EXIT_FAILED, error.detail, verbose=verbose)
    if isinstance(error, YamlFileError):
        return _fail(str(error), EXIT_USAGE, verbose=verbose)
    if isinstance(error, LegacyJournal):  # refused before anything was sent: point it elsewhere
        return _fail(str(error), EXIT_USAGE, verbose=verbose)
    if isinstance(error, JournalError | DeviceBusy):
        return _fail(str(error), EXIT_FAILED, verbose=verbose)
    if isinstance(error, BrokenPipeError):
        return EXIT_OK
    if isinstance(error, OSError):  # a file msoctl had to read or write, named by the error
        if debug:
            traceback.print_exc()
        where = f"{error.filename}: " if error.filename else ""
        return _fail(f"{where}{error.strerror or error}", EXIT_FAILED, verbose=verbose)
    if debug:
        traceback.print_exc()
    return _fail(f"internal error: {type(error).__name__}: {error} "
                 "(run with --debug for a traceback, and please report it)",
                 EXIT_FAILED, verbose=verbose)


LIBRARY_LOGGERS = ("paramiko", "ncclient", "asyncssh", "pyvisa", "pysnmp")
"""The libraries whose own log lines (a paramiko transport's traceback when a peer
never answers, a VISA library's complaint about a garbled reply) would otherwise reach
stderr before msoctl's one ``error:`` line, which says what failed; ``--debug`` shows
them."""


def quiet_libraries(*, debug: bool) -> None:
    """Keep the libraries' log lines off stderr unless ``debug`` (every level then)."""
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.CRITICAL + 1)


def invoke(group: click.Group, args: list[str]) -> int:
    """Run command line ``args`` of ``group`` (``msoctl`` and its commands) and return its
    exit code; never raises, except with ``--debug``."""
    verbose = "-v" in args or "--verbose" in args or "--debug" in args
    debug = "--debug" in args
    quiet_libraries(debug=debug)
    restore_sigterm = interrupts.raise_on_sigterm()
    try:
        code = group.main(args=args, prog_name="msoctl", standalone_mode=False)
        return code if isinstance(code, int) else EXIT_OK
    except click.exceptions.Exit as done:
        return int(done.exit_code)
    except click.Abort:
        return _fail("interrupted", EXIT_INTERRUPTED, verbose=verbose)
    except click.UsageError as error:
        hint = f" (see '{error.ctx.command_path} --help')" if error.ctx else ""
        # one line: click writes some messages over several (a missing choice lists the
        # choices a line each)
        message = " ".join(error.format_message().split())
        if isinstance(error, _NO_ARGS_IS_HELP) and isinstance(error.ctx, click.Context):
            # click >= 8.2 puts the whole help text in this error; the contract is one line
            command = error.ctx.command
            names = (command.list_commands(error.ctx) if isinstance(command, click.Group)
                     else [])
            message = "missing command" + (f"; one of: {', '.join(names)}" if names else "")
        return _fail(f"{message}{hint}", EXIT_USAGE, verbose=verbose)
    except click.ClickException as error:
        return _fail(error.format_message(), error.exit_code, verbose=verbose)
    except (KeyboardInterrupt, interrupts.Terminated, Exception) as error:
        # Ctrl-C or SIGTERM, as itself or wrapped: while a module was being imported, a
        # class body's __set_name__ raises RuntimeError from the KeyboardInterrupt
        signalled = _signal_within(error)
        if isinstance(signalled, KeyboardInterrupt):
            return _fail("interrupted", EXIT_INTERRUPTED, verbose=verbose)
        if isinstance(signalled, interrupts.Terminated):
            return _fail("terminated", EXIT_TERMINATED, verbose=verbose)
        return _failed(error, verbose=verbose, debug=debug)
    finally:
        restore_sigterm()


def _signal_within(error: BaseException) -> BaseException | None:
    """The KeyboardInterrupt or Terminated that ``error`` is or was raised from, if any."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt | interrupts.Terminated):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
