"""Helpers and fixtures shared by the tests, in one package; no test module imports another.

The helpers most tests use are importable from here (``from tests.support import Msoctl,
wait_until``); the rest live in modules named for what they serve:

- :mod:`tests.support.fixtures`: every shared fixture (a lab per test, a lab per module
  reset and checked between tests, OCS drivers over every transport, the CLI runner,
  PostgreSQL), registered for the whole tree by tests/conftest.py;
- :mod:`tests.support.lab`, :mod:`tests.support.reset`: the lab in tests, and putting a
  shared lab back as delivered, checked;
- :mod:`tests.support.cli`, :mod:`tests.support.journal`: ``msoctl`` in-process, journals;
- :mod:`tests.support.peers` and the peers themselves: :mod:`tests.support.netconfd`,
  :mod:`tests.support.postgres`, :mod:`tests.support.snmp_agents`;
- doubles and data of one kind of test: :mod:`tests.support.cmis_doubles`,
  :mod:`tests.support.cmis_vectors`, :mod:`tests.support.netconf`,
  :mod:`tests.support.yang`, :mod:`tests.support.exporter`, :mod:`tests.support.bench`,
  :mod:`tests.support.inventory`, :mod:`tests.support.paths`.
"""

from tests.support.cli import Msoctl, Result, in_process
from tests.support.journal import (
    JOURNAL_TABLES,
    empty_journal,
    journal_actions,
    lab_journal,
    operation_count,
    remove_journal,
)
from tests.support.lab import (
    OCS_TRANSPORTS,
    REPLY_FORMS,
    dead_pid,
    ocs_endpoint,
    reset_ocs,
    restart_amplifier,
    subprocess_env,
    wait_until,
)

__all__ = [
    "JOURNAL_TABLES", "OCS_TRANSPORTS", "REPLY_FORMS", "Msoctl", "Result", "dead_pid",
    "empty_journal", "in_process", "journal_actions", "lab_journal", "ocs_endpoint",
    "operation_count", "remove_journal", "reset_ocs", "restart_amplifier", "subprocess_env",
    "wait_until",
]
