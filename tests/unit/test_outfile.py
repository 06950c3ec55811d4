"""Writing an output (msoctl/outfile.py) never replaces what is not a regular file: a
character device or a FIFO is written into, a symbolic link followed (the link stays),
a directory, a block device or a socket refused before anything is written; a regular
file is replaced whole, keeping its permission bits, and a secret gets mode 0600.

A property test draws a path kind, a text and how it is written, and checks what the
path and everything it leads to are afterwards. The character device is /dev/null,
reached through a link in the test's own directory: writing into it is harmless, and
replacing it would show.
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msoctl.outfile import OutputRefused, output, write_output

KINDS = ("missing", "regular", "link-to-regular", "link-to-missing", "fifo", "link-to-fifo",
         "link-to-char-device", "directory", "link-to-directory", "socket")
REFUSED = {"directory", "link-to-directory", "socket"}


def kind_of(path: Path) -> str:
    mode = os.lstat(path).st_mode
    for name, test in (("link", stat.S_ISLNK), ("regular", stat.S_ISREG),
                       ("fifo", stat.S_ISFIFO), ("char", stat.S_ISCHR),
                       ("directory", stat.S_ISDIR), ("socket", stat.S_ISSOCK),
                       ("block", stat.S_ISBLK)):
        if test(mode):
            return name
    return "other"


@contextmanager
def fifo_reader(path: Path) -> Iterator[list[bytes]]:
    """A reader on FIFO ``path`` in a thread; what it read, once the block ends."""
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield received
    finally:
        reader.join(10)
        assert not reader.is_alive(), "the FIFO's reader never got an end of file"


def make(directory: Path, kind: str) -> tuple[Path, Path | None]:
    """A path of ``kind`` in ``directory`` and, for a link, what it points to."""
    path = directory / "out"
    target: Path | None = None
    if kind.startswith("link-to-"):
        target = directory / "target"
        os.symlink("/dev/null" if kind == "link-to-char-device" else target, path)
        kind = kind.removeprefix("link-to-")
        if kind == "char-device":
            return path, Path("/dev/null")
        made = target
    else:
        made = path
    if kind == "regular":
        made.write_text("before\n")
        os.chmod(made, 0o640)
    elif kind == "fifo":
        os.mkfifo(made)
    elif kind == "directory":
        made.mkdir()
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(made))
        server.close()
    return path, target


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(KINDS), text=st.text(max_size=200), private=st.booleans())
def test_an_output_never_replaces_what_is_not_a_regular_file(kind: str, text: str,
                                                             private: bool) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        path, target = make(directory, kind)
        before = {p: kind_of(p) for p in (path, target)
                  if p is not None and (p.exists() or p.is_symlink())}
        if kind in REFUSED:
            with pytest.raises(OutputRefused):
                write_output(path, text, private=private)
        elif kind.endswith("fifo"):
            with fifo_reader(target or path) as received:
                write_output(path, text, private=private)
            assert received == [text.encode()]
        else:
            write_output(path, text, private=private)
        after = {p: kind_of(p) for p in before}
        assert after == before, "a path changed its kind"
        if kind.startswith("link-to-"):
            assert os.readlink(path) == str(target)  # the link stays, pointing where it did
        written = target if kind.startswith("link-to-") else path
        assert written is not None
        if kind in ("missing", "regular", "link-to-regular", "link-to-missing"):
            assert written.read_bytes() == text.encode()  # bytes: read_text would turn \r into \n
            mode = stat.S_IMODE(os.stat(written).st_mode)
            if private:
                assert mode == 0o600
            elif kind in ("regular", "link-to-regular"):
                assert mode == 0o640  # kept
        assert [p.name for p in directory.iterdir() if ".partial" in p.name] == []


def test_a_write_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "report.csv"
    path.write_text("before\n")
    with pytest.raises(RuntimeError), output(path) as handle:
        handle.write("half of it")
        raise RuntimeError("the command failed half way")
    assert path.read_text() == "before\n"
    assert list(tmp_path.iterdir()) == [path]


def test_a_full_device_is_an_error_naming_the_path(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this host")
    link = tmp_path / "full"
    os.symlink("/dev/full", link)
    with pytest.raises(OSError) as caught:
        write_output(link, "x" * 100_000)
    assert caught.value.filename == str(link)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_block_device_is_refused_unopened(tmp_path: Path) -> None:
    """A block device node of a number no disk has, made here: refused from its kind,
    before any open (which would fail with ENXIO if it were tried)."""
    node = tmp_path / "disk"
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 255))
    except PermissionError:
        pytest.skip("making a device node needs root")
    with pytest.raises(OutputRefused, match="a block device"):
        write_output(node, "x")
    assert stat.S_ISBLK(os.lstat(node).st_mode)
