"""Shared fixtures: an emulated lab per test, OCS drivers over every transport, the CLI."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from drivers.ocs import BootMode, OcsDriver, PortState
from drivers.ocs.connect import open_ocs
from emulators.lab import JOURNAL_FILE, Lab
from msoctl.cli import run
from msoctl.journal import Journal, close_stores

if TYPE_CHECKING:
    from tests.postgres_peer import PostgresCluster

# Every OCS conformance test runs over each of these: the network port through
# pyvisa (pyvisa-py), and the serial console through pyserial and through pyvisa.
OCS_TRANSPORTS = ("visa-tcp", "serial-pty", "visa-asrl")
# ... and against each reply form the emulated OCS can answer in (emulators/ocs/model.py):
# the Polatis family's (quoted PORT?, parenthesised power list) and the bare one.
REPLY_FORMS = ("polatis", "bare")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    with Lab(tmp_path / "lab") as running:
        yield running


@pytest.fixture(scope="module")
def module_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One lab for a whole test module; reset what a test changes with :func:`reset_ocs`."""
    with Lab(tmp_path_factory.mktemp("lab")) as running:
        yield running


def reset_ocs(lab: Lab, name: str, *, reply_form: str = "polatis") -> None:
    """Give the next test OCS ``name`` as delivered, answering in ``reply_form``, and check
    through SCPI (a client of its own) that it is: no connections, every port enabled,
    boot mode RESTore, no switching history, nothing failed."""
    device = lab.ocs[name]
    device.factory_reset()
    device.reply_form = reply_form
    device.power_monitors = True
    kind, address = ocs_endpoint(lab, name, "visa-tcp")
    check = open_ocs(name, kind, address, timeout_seconds=2.0)
    try:
        assert dict(check.port_map()) == {}, "reset left connections"
        assert set(check.port_states().values()) == {PortState.ENABLED}, "reset left ports"
        assert check.boot_mode() is BootMode.RESTORE
        assert check.lc_status().last_switching_seconds is None
        assert check.session.query("*TST?") == "0", "reset left a fault"
    finally:
        check.close()


@pytest.fixture(params=REPLY_FORMS)
def reply_form(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def ocs_endpoint(lab: Lab, name: str, transport: str) -> tuple[str, str]:
    if transport == "visa-tcp":
        return "visa", f"TCPIP::127.0.0.1::{lab.tcp[name].port}::SOCKET"
    if transport == "serial-pty":
        return "serial", lab.consoles[name].path
    if transport == "visa-asrl":
        return "visa", f"ASRL{lab.consoles[name].path}::INSTR"
    raise ValueError(transport)


@pytest.fixture(params=OCS_TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ocs(lab: Lab, transport: str) -> Iterator[OcsDriver]:
    """A driver for ocs-a over the parametrised transport, 2 s timeout."""
    kind, address = ocs_endpoint(lab, "ocs-a", transport)
    driver = open_ocs("ocs-a", kind, address, timeout_seconds=2.0)
    try:
        yield driver
    finally:
        driver.close()


@dataclass
class Result:
    code: int
    out: str
    err: str


Msoctl = Callable[..., Result]


def in_process(capsys: pytest.CaptureFixture[str]) -> Msoctl:
    """``msoctl ARGS`` run in this process, with its exit code and captured output."""

    def call(*args: str) -> Result:
        capsys.readouterr()
        code = run(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return call


@pytest.fixture
def msoctl(lab: Lab, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    """Run ``msoctl ARGS`` in-process against the lab's inventory."""
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


def dead_pid() -> int:
    """A pid with no process behind it (checked, not guessed)."""
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except OSError:
        pid_max = 32768
    for pid in range(pid_max - 1, 300, -1):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            continue
    raise RuntimeError("every pid is in use")


@pytest.fixture
def journal_path(lab: Lab) -> Path:
    return lab.state_dir / JOURNAL_FILE


def lab_journal(lab: Lab) -> Journal:
    """The journal the lab's inventory names (read through the store, like msoctl)."""
    return Journal(lab.state_dir / JOURNAL_FILE)


def journal_actions(path: Path) -> list[str]:
    """The action of every record in the SQLite journal at ``path`` ([] when there is none)."""
    if not path.exists():
        return []
    return [str(r.get("action", "")) for r in Journal(path).records()]


def operation_count(path: Path) -> int:
    """How many operations the SQLite journal at ``path`` holds (0 when there is none):
    read through the store, never the file's bytes (closing a descriptor of an SQLite file
    would drop the locks of this process's connection to it)."""
    return Journal(path).store.counts()["operations"]


def remove_journal(path: Path) -> None:
    """Delete an SQLite journal with its WAL files, this process's connection closed first
    (so that closing it later cannot remove a newer journal's WAL)."""
    close_stores()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def subprocess_env(lab: Lab) -> dict[str, str]:
    env = dict(os.environ)
    env["MSOCTL_INVENTORY"] = str(lab.state_dir / "inventory.yaml")
    env.pop("MSOCTL_JOURNAL", None)
    return env


def wait_until(predicate: Callable[[], bool], what: str, seconds: float = 5.0) -> None:
    """Wait (real time: the lab runs on the real clock) until ``predicate`` holds."""
    import time

    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting: {what}"
        time.sleep(0.01)


def restart_amplifier(lab: Lab, name: str) -> None:
    """Do what a host does after lighting a span: ask the amplifier for an ALS restart.

    The amplifier honours a restart only while ALS holds its output shut, as a real
    one does: a LOS soak still running (the lab has just started, or the light is on
    its way) is waited out first, and an amplifier back to normal needs no restart.
    """
    from drivers.amp import vendor_page
    from emulators.amp.als import LOS_SOAK, SHUTDOWN

    module = lab.amps[name]
    wait_until(lambda: module.als_state != LOS_SOAK, f"{name}'s LOS soak ends")
    if module.als_state != SHUTDOWN:
        return
    module.host_write(127, bytes((vendor_page.PAGE,)))
    module.host_write(vendor_page.ALS_COMMAND.offset, bytes((vendor_page.ALS_RESTART_NOW,)))


# ---- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A private PostgreSQL cluster for the session (see tests/postgres_peer.py)."""
    yield from running_cluster()


def running_cluster() -> Iterator[PostgresCluster]:
    """A cluster in a directory of its own under the system's temporary directory: not
    pytest's, whose per-user directory is made private again by every pytest that
    starts, which would shut the server's user out."""
    import shutil
    import tempfile

    from tests.peers import missing, require_module
    from tests.postgres_peer import PostgresCluster, find_bindir

    directory = Path(tempfile.mkdtemp(prefix="msoctl-postgres-")) / "cluster"

    require_module("psycopg", how_to_install="pip install 'psycopg[binary]' (a dependency)")
    if find_bindir() is None:
        missing("PostgreSQL is not installed (Debian package postgresql; `make test` run "
                "as root installs it)")
    try:
        cluster = PostgresCluster.start(directory)
    except KeyError:
        shutil.rmtree(directory.parent, ignore_errors=True)
        missing("running as root, but there is no postgres user to run PostgreSQL as "
                "(Debian package postgresql creates it)")
    try:
        yield cluster
    finally:
        close_stores()
        cluster.close()
        shutil.rmtree(directory.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres_url(postgres_cluster: PostgresCluster, request: pytest.FixtureRequest
                 ) -> Iterator[str]:
    """A database of the module's own in the session's cluster, dropped after it."""
    name = "msoctl_" + re.sub(r"\W", "_", request.module.__name__.rpartition(".")[2])
    url = postgres_cluster.create_database(name)
    yield url
    close_stores()
    postgres_cluster.drop_database(name)


JOURNAL_TABLES = ("records", "operations", "op_devices", "link_states", "device_locks")


def empty_journal(journal: Journal) -> Journal:
    """Remove every row of a PostgreSQL journal (for the next test), and check it is empty."""
    with journal.store._write() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(JOURNAL_TABLES))
    assert journal.store.counts() == {"records": 0, "operations": 0, "open_operations": 0}
    return journal


@pytest.fixture(params=["sqlite", "postgresql"])
def store_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Journal:
    """An empty journal on each store: an SQLite file, and a PostgreSQL database."""
    if request.param == "sqlite":
        return Journal(tmp_path / "state" / "journal.sqlite")
    return empty_journal(Journal(request.getfixturevalue("postgres_url")))
