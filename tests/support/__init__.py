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
  :mod:`tests.support.inventory`, :mod:`tests.support.paths`,
  :mod:`tests.support.protecting` (a protection controller running in a thread).
"""

from drivers.lazy import names_on_first_use

# Loaded on first use (PEP 562), not here: a helper process started as
# ``python -m tests.support.journal_worker`` imports this package first, and should not
# pay for the lab, the emulators and pytest (about a second of CPU) to write a journal.
_HOMES = {
    "Msoctl": "cli", "Result": "cli", "in_process": "cli", "one_error_line": "cli",
    "JOURNAL_TABLES": "journal", "empty_journal": "journal", "journal_actions": "journal",
    "lab_journal": "journal", "operation_count": "journal", "remove_journal": "journal",
    "OCS_TRANSPORTS": "lab", "REPLY_FORMS": "lab", "dead_pid": "lab", "ocs_endpoint": "lab",
    "reset_ocs": "lab", "restart_amplifier": "lab", "subprocess_env": "lab",
    "wait_until": "lab",
}

__all__ = sorted(_HOMES)

__getattr__ = names_on_first_use(__name__, {name: f"{__name__}.{home}"
                                            for name, home in _HOMES.items()})
