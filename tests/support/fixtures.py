"""The fixtures every folder of tests/ may use, registered by tests/conftest.py.

- ``lab``: a fresh lab for one test (its own state directory, real clock). Use it where the
  test starts, stops or restarts the lab, or reads what only a new lab has.
- ``module_lab``: one lab for a whole module. A module that shares it overrides ``lab`` to
  return ``shared_lab``, which puts every device back and checks it between tests:

      @pytest.fixture
      def lab(shared_lab: Lab) -> Lab:
          return shared_lab
- ``ocs``: a driver for ocs-a over each transport of ``OCS_TRANSPORTS``.
- ``msoctl``: ``msoctl ARGS`` in-process against the lab's inventory.
- ``postgres_cluster`` (one per session, or per xdist worker), ``postgres_url`` (a
  database per module), ``store_journal`` (an empty journal on each store).
- ``libyang_context``: the YANG module loaded in libyang (tests/support/yang.py).
- ``loop``: an event loop in a thread for the module (tests/support/netconf.py ``Loop``),
  where the module's emulated switches run.

A test that fails with a netconfd peer among its fixtures gets both daemons' logs in
its report ("netconfd and sshd logs"): the peer's directory is gone by the time the
run ends (pytest keeps the last three runs' temporary directories).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.ocs import OcsDriver
from drivers.ocs.connect import open_ocs
from emulators.lab import JOURNAL_FILE, Lab
from msoctl.journal import Journal, close_stores
from tests.support.cli import Msoctl, in_process
from tests.support.journal import empty_journal
from tests.support.lab import OCS_TRANSPORTS, REPLY_FORMS, ocs_endpoint
from tests.support.netconf import Loop
from tests.support.netconfd import NetconfdPeer
from tests.support.postgres import PostgresCluster, running_cluster
from tests.support.reset import reset_lab
from tests.support.yang import libyang_context  # noqa: F401 - a fixture of the whole tree


@pytest.fixture(scope="module")
def loop() -> Iterator[Loop]:
    """An event loop in a thread for the whole module, closed after it."""
    running = Loop()
    yield running
    running.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """A lab of this test's own, started in ``tmp_path/lab`` and stopped after it."""
    with Lab(tmp_path / "lab") as running:
        yield running


@pytest.fixture(scope="module")
def module_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One lab for a whole test module; see ``shared_lab`` for putting it back."""
    with Lab(tmp_path_factory.mktemp("lab")) as running:
        yield running


@pytest.fixture
def shared_lab(module_lab: Lab) -> Iterator[Lab]:
    """The module's lab, put back as a new lab has it after each test and checked
    (tests/support/reset.py). A reset that leaves anything behind is an error of the test
    that left it, naming what was left; the next test then tries the reset again first,
    so that it never runs on a lab it did not expect."""
    if module_lab in _NOT_RESET:
        reset_lab(module_lab)
        _NOT_RESET.discard(module_lab)
    yield module_lab
    _NOT_RESET.add(module_lab)
    reset_lab(module_lab)
    _NOT_RESET.discard(module_lab)


_NOT_RESET: weakref.WeakSet[Lab] = weakref.WeakSet()
"""Shared labs whose last reset failed (or did not run)."""


@pytest.fixture(params=REPLY_FORMS)
def reply_form(request: pytest.FixtureRequest) -> str:
    return str(request.param)


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


@pytest.fixture
def msoctl(lab: Lab, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Msoctl:
    """Run ``msoctl ARGS`` in-process against the lab's inventory."""
    monkeypatch.setenv("MSOCTL_INVENTORY", str(lab.state_dir / "inventory.yaml"))
    monkeypatch.delenv("MSOCTL_JOURNAL", raising=False)
    return in_process(capsys)


@pytest.fixture
def journal_path(lab: Lab) -> Path:
    return lab.state_dir / JOURNAL_FILE


# ---- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A private PostgreSQL cluster for the session (tests/support/postgres.py); under
    xdist, one per worker."""
    yield from running_cluster()


@pytest.fixture(scope="module")
def postgres_url(postgres_cluster: PostgresCluster, request: pytest.FixtureRequest
                 ) -> Iterator[str]:
    """A database of the module's own in the session's cluster, dropped after it."""
    name = "msoctl_" + re.sub(r"\W", "_", request.module.__name__.rpartition(".")[2])
    url = postgres_cluster.create_database(name)
    yield url
    close_stores()
    postgres_cluster.drop_database(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Journal:
    """An empty journal on each store: an SQLite file, and a PostgreSQL database."""
    if request.param == "sqlite":
        return Journal(tmp_path / "state" / "journal.sqlite")
    return empty_journal(Journal(request.getfixturevalue("postgres_url")))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A failed test's report carries the logs of the netconfd peer it used."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when != "call" or not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, NetconfdPeer):
            report.sections.append(("netconfd and sshd logs", value.logs()))
            return
