"""NETCONF monitoring (RFC 6022, ietf-netconf-monitoring@2010-10-04): the counters the
server keeps, and the ``/netconf-state`` tree ``<get>`` returns.

What counts what (the descriptions of the module's leaves):

| counter            | moved when                                                          |
|--------------------|---------------------------------------------------------------------|
| in-sessions        | the server's hello (the one with a session-id) is sent              |
| in-bad-hellos      | a session ends on an invalid client hello (not XML, a session-id,   |
|                    | no base version in common)                                          |
| dropped-sessions   | a session ends otherwise than by close-session, kill-session or a   |
|                    | bad hello: the client went away, the drop fault, a framing error,   |
|                    | the server stopping (RFC 6022 excludes close-session and            |
|                    | kill-session by name)                                               |
| in-rpcs            | an ``<rpc>`` is read that is one: well-formed, in the base          |
|                    | namespace, with a message-id and one operation (whether that        |
|                    | operation then succeeds or not); counted before it runs, so a       |
|                    | ``<get>`` of the counters counts itself                             |
| in-bad-rpcs        | a message that should have been an ``<rpc>`` is not (an XML parse   |
|                    | error, another root, no message-id, not one operation: the errors   |
|                    | of error-type rpc)                                                  |
| out-rpc-errors     | a reply holding ``<rpc-error>`` is sent (one per reply, however     |
|                    | many errors it holds)                                               |
| out-notifications  | never: this server sends no notifications                           |

The four per-message counters exist per session and for the server (the sum over
every session since the server started). All are zero-based counter32s: they wrap at
2^32. Times are the wall clock's, in UTC, to the second.

``/netconf-state`` holds, in the module's order: ``capabilities`` (the hello's list),
``datastores`` (each the server has, with ``locks/global-lock`` while one is held:
the session and the time; partial locks do not exist here), ``schemas`` (what
``<get-schema>`` returns: emulators/netconf/library.py), ``sessions`` (each open one,
transport ``netconf-ssh``) and ``statistics``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Protocol

from lxml import etree
from lxml.etree import _Element

MONITORING_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
TRANSPORT = "netconf-ssh"  # an identity of the module: unprefixed, see _identity below
SCHEMA_FORMAT = "yang"
COUNTER32 = 2**32  # yang:zero-based-counter32 wraps here


def now() -> datetime:
    return datetime.now(UTC)


def date_and_time(moment: datetime) -> str:
    """``moment`` as a yang:date-and-time, in UTC to the second (``2026-12-07T09:55:00Z``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Counters:
    """The module's common-counters grouping: one session's, or the server's totals."""

    in_rpcs: int = 0
    in_bad_rpcs: int = 0
    out_rpc_errors: int = 0
    out_notifications: int = 0


class MonitoredSession(Protocol):
    """What the tree needs of a session (emulators/netconf/session.py gives it)."""

    session_id: int
    username: str
    source_host: str | None
    login_time: datetime
    counters: Counters


@dataclass
class Statistics:
    """The server's statistics, and the counting of each session's counters with them.

    The counters move from the server's event loop and from its worker thread: every
    change holds one lock, so a ``<get>`` never sees a session's count without the
    server's.
    """

    start_time: datetime = field(default_factory=now)
    in_bad_hellos: int = 0
    in_sessions: int = 0
    dropped_sessions: int = 0
    totals: Counters = field(default_factory=Counters)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, session: MonitoredSession, counter: str) -> None:
        """One more of ``counter`` (a field of :class:`Counters`) for ``session`` and in
        the totals."""
        with self._lock:
            setattr(session.counters, counter, getattr(session.counters, counter) + 1)
            setattr(self.totals, counter, getattr(self.totals, counter) + 1)

    def session_started(self) -> None:
        with self._lock:
            self.in_sessions += 1

    def bad_hello(self) -> None:
        with self._lock:
            self.in_bad_hellos += 1

    def session_dropped(self) -> None:
        with self._lock:
            self.dropped_sessions += 1


@dataclass(frozen=True)
class DatastoreState:
    """One datastore for ``/netconf-state/datastores``: its lock holder and since when."""

    name: str
    locked_by_session: int | None = None
    locked_time: datetime | None = None


@dataclass(frozen=True)
class Schema:
    """One entry of ``/netconf-state/schemas`` (format yang, location NETCONF)."""

    identifier: str
    version: str
    namespace: str


def netconf_state(*, capabilities: Iterable[str], datastores: Iterable[DatastoreState],
                  schemas: Iterable[Schema], sessions: Iterable[MonitoredSession],
                  statistics: Statistics) -> _Element:
    """The whole ``/netconf-state`` tree, a new element."""
    root = etree.Element(_m("netconf-state"), nsmap={None: MONITORING_NS})
    listed = _sub(root, "capabilities")
    for capability in capabilities:
        _sub(listed, "capability", capability)
    stores = _sub(root, "datastores")
    for datastore in datastores:
        entry = _sub(stores, "datastore")
        _sub(entry, "name", datastore.name)
        if datastore.locked_by_session is not None and datastore.locked_time is not None:
            lock = _sub(_sub(entry, "locks"), "global-lock")
            _sub(lock, "locked-by-session", str(datastore.locked_by_session))
            _sub(lock, "locked-time", date_and_time(datastore.locked_time))
    served = _sub(root, "schemas")
    for schema in schemas:
        entry = _sub(served, "schema")
        _sub(entry, "identifier", schema.identifier)
        _sub(entry, "version", schema.version)
        _sub(entry, "format", _identity(SCHEMA_FORMAT))
        _sub(entry, "namespace", schema.namespace)
        _sub(entry, "location", "NETCONF")
    open_sessions = _sub(root, "sessions")
    for session in sessions:
        entry = _sub(open_sessions, "session")
        _sub(entry, "session-id", str(session.session_id))
        _sub(entry, "transport", _identity(TRANSPORT))
        _sub(entry, "username", session.username)
        if session.source_host:
            _sub(entry, "source-host", session.source_host)
        _sub(entry, "login-time", date_and_time(session.login_time))
        _counters(entry, session.counters)
    _statistics(_sub(root, "statistics"), statistics)
    return root


def _statistics(parent: _Element, statistics: Statistics) -> None:
    _sub(parent, "netconf-start-time", date_and_time(statistics.start_time))
    _sub(parent, "in-bad-hellos", str(statistics.in_bad_hellos % COUNTER32))
    _sub(parent, "in-sessions", str(statistics.in_sessions % COUNTER32))
    _sub(parent, "dropped-sessions", str(statistics.dropped_sessions % COUNTER32))
    _counters(parent, statistics.totals)


def _counters(parent: _Element, counters: Counters) -> None:
    for counter in fields(Counters):
        value = getattr(counters, counter.name)
        _sub(parent, counter.name.replace("_", "-"), str(value % COUNTER32))


def _identity(name: str) -> str:
    # unprefixed: an identityref's value is read in the element's own (default)
    # namespace (RFC 7950 9.10.3); a prefix used only in text would not survive copies
    return name


def _m(local: str) -> str:
    return f"{{{MONITORING_NS}}}{local}"


def _sub(parent: _Element, local: str, text: str | None = None) -> _Element:
    element = etree.SubElement(parent, _m(local))
    if text is not None:
        element.text = text
    return element
