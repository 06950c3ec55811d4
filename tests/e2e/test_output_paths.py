"""Every output option of every command writes as a Unix tool does (msoctl/outfile.py):
into a character device or a FIFO, through a symbolic link (which stays), and never over
something that is not a regular file; a directory is refused before the command starts.

The commands run in this process against the lab's inventory and journal. The character
device is /dev/null reached through a link in the test's directory: writing into it is
harmless, and replacing it would show.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from emulators.lab import Lab
from tests.support import Msoctl

OUTPUTS: dict[str, Callable[[str], tuple[str, ...]]] = {
    "design cost --csv": lambda p: ("design", "cost", "--gpus", "1024", "--csv", p),
    "design cost --png": lambda p: ("design", "cost", "--gpus", "1024", "--png", p),
    "journal export --file": lambda p: ("journal", "export", "--file", p),
    "inventory sd --out": lambda p: ("inventory", "sd", "--out", p),
    "exporter snmp-config --out": lambda p: ("exporter", "snmp-config", "--out", p),
    "lab topology generate -o": lambda p: ("lab", "topology", "generate", "--campuses", "2",
                                           "--ocs-per-campus", "1", "--links", "2", "-o", p),
    "switch plan --file": lambda p: ("switch", "plan", "--port", "Ethernet1=30km@400G",
                                     "--file", p),
}


@pytest.fixture
def lab(module_lab: Lab) -> Lab:
    return module_lab  # nothing here changes a device


@pytest.fixture(autouse=True)
def a_journal_record(msoctl: Msoctl) -> None:
    """One change journaled, so that an export has something to write."""
    assert msoctl("ocs", "port", "enable", "ocs-a", "1").code == 0


@pytest.mark.parametrize("option", list(OUTPUTS))
def test_a_link_to_a_character_device_is_written_into(option: str, msoctl: Msoctl,
                                                      tmp_path: Path) -> None:
    link = tmp_path / "out"
    os.symlink("/dev/null", link)
    result = msoctl(*OUTPUTS[option](str(link)))
    assert result.code == 0, result.err
    assert os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("option", list(OUTPUTS))
def test_a_fifo_is_written_into(option: str, msoctl: Msoctl, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = msoctl(*OUTPUTS[option](str(fifo)))
    reader.join(10)
    assert result.code == 0, result.err
    assert not reader.is_alive() and received and received[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("option", list(OUTPUTS))
def test_a_link_to_a_file_is_followed_and_stays(option: str, msoctl: Msoctl,
                                                tmp_path: Path) -> None:
    target, link = tmp_path / "target", tmp_path / "out"
    target.write_text("before\n")
    os.chmod(target, 0o640)
    os.symlink(target, link)
    result = msoctl(*OUTPUTS[option](str(link)))
    assert result.code == 0, result.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() != b"before\n"
    private = option == "exporter snmp-config --out"
    assert stat.S_IMODE(os.stat(target).st_mode) == (0o600 if private else 0o640)


@pytest.mark.parametrize("option", list(OUTPUTS))
def test_a_directory_is_refused_before_the_command_starts(option: str, msoctl: Msoctl,
                                                          tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    link = tmp_path / "link-to-it"
    os.symlink(directory, link)
    for path in (directory, link):
        result = msoctl(*OUTPUTS[option](str(path)))
        assert result.code == 2 and result.err.startswith("error: "), result.err
        assert result.err.count("\n") == 1
    assert list(directory.iterdir()) == []


@pytest.mark.parametrize("option", list(OUTPUTS))
def test_a_full_device_fails_the_write_alike_everywhere(option: str, msoctl: Msoctl,
                                                        tmp_path: Path) -> None:
    """A write that fails (/dev/full: no space left) is a failure, exit 1, the file named,
    whichever command wrote (three said exit 2, refused, the others 1). /dev/full is
    reached through a link, as above."""
    link = tmp_path / "full"
    os.symlink("/dev/full", link)
    result = msoctl(*OUTPUTS[option](str(link)))
    assert result.code == 1, result
    assert result.err.startswith("error: ") and result.err.count("\n") == 1, result.err
    assert "No space left on device" in result.err and "full" in result.err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
