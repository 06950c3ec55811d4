"""Writing what a command was asked to write into a path (``--csv``, ``--png``, ``--file``,
``--out``, ``-o``): the one place msoctl does it, as a Unix tool would.

- A regular file, or a path where nothing is yet: written in full to a temporary file
  beside it, then renamed over it, so that a reader (Prometheus, a script) never sees
  half of it; a file that was there keeps its permission bits.
- A character device or a FIFO (``/dev/stdout``, ``/dev/null``, ``/dev/full``, a named
  pipe): written into, as ``cat > PATH`` does; never replaced by a file. Opening a FIFO
  waits for its reader, as it does for every writer.
- A symbolic link is followed: what it points to is written (by the rules above), and
  the link stays.
- A directory, a block device or a socket is refused (:class:`OutputRefused`) before
  anything is written.

Secrets (``private``) are written with mode 0600 from the first byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from drivers.errors import ValidationError


class OutputRefused(ValidationError):
    """The path is not one msoctl writes into: a directory, a block device, a socket."""


def output_target(path: Path) -> Path:
    """The path that writing to ``path`` writes: ``path`` with every symbolic link
    followed. Raises :class:`OutputRefused` for what is never written into."""
    target = Path(os.path.realpath(path.expanduser()))
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet (or no place)
        return target
    except OSError as error:
        raise OutputRefused(f"cannot write {path}: {error.strerror}") from None
    refused = ("a directory" if stat.S_ISDIR(mode) else "a block device"
               if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else None)
    if refused is not None:
        shown = f"{path} (a link to {target})" if path.is_symlink() else path
        raise OutputRefused(f"{shown} is {refused}: give a file, a character device or a "
                            "FIFO")
    return target


def is_stream(path: Path) -> bool:
    """Whether ``path`` (symbolic links followed) is written into rather than replaced: a
    character device or a FIFO."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


@contextmanager
def output(path: Path, *, binary: bool = False, private: bool = False,
           newline: str | None = None) -> Iterator[IO[Any]]:
    """A handle to write what goes to ``path`` (see the module's docstring); the file is
    in place when the block ends without an error, and untouched when it raises.
    Raises :class:`OutputRefused` before anything is written, and OSError."""
    target = output_target(path)
    try:
        with _written(target, binary=binary, private=private, newline=newline) as handle:
            yield handle
    except OSError as error:
        if error.filename is None:  # a failed write names no file: this one
            error.filename = str(path)
        raise


@contextmanager
def _written(target: Path, *, binary: bool, private: bool,
             newline: str | None) -> Iterator[IO[Any]]:
    mode = "wb" if binary else "w"
    encoding = None if binary else "utf-8"
    if is_stream(target):
        with open(target, mode, encoding=encoding, newline=newline) as handle:
            yield handle
        return
    try:
        kept: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        kept = None
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    tmp.unlink(missing_ok=True)  # one a killed run of this pid left
    # O_EXCL: made here, never an existing file or a link planted where it would be
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o600 if private else 0o666)
    try:
        with os.fdopen(descriptor, mode, encoding=encoding, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if private:
            os.chmod(tmp, 0o600)  # whatever the umask
        elif kept is not None:
            os.chmod(tmp, kept)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def write_output(path: Path, text: str, *, private: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``path`` by the rules of :func:`output`."""
    with output(path, private=private) as handle:
        handle.write(text)
