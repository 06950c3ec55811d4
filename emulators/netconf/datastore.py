"""NETCONF datastores and operations of the switch emulator (RFC 6241, 1.1 capabilities).

running, candidate and startup are ``<config>`` trees holding the module's
``<switch>`` (yang/msoctl-congestion.yang), or the trees of another model given as its
:class:`~emulators.netconf.yangdata.DataSchema` (OpenConfig:
emulators/netconf/openconfig.py). :meth:`Datastores.register` puts
the operations on a :class:`NetconfServer` built with :data:`CAPABILITIES` (or
another list of :func:`capabilities`):
get-config (subtree filter), get (configuration, the operational state of
a callback, ``/netconf-state`` of emulators/netconf/monitoring.py and the module
discovery data of emulators/netconf/library.py), edit-config (every operation,
default-operation, error-option, test-option), copy-config, delete-config,
lock/unlock, discard-changes, validate, commit, confirmed commit
(:confirmed-commit:1.1, on the injected clock), cancel-commit and get-schema. Each
request is first held to the parameters of the capabilities the server announces
(emulators/netconf/parameters.py). Every change of running calls ``on_commit`` with the
plain-dict tree of the schema (for the msoctl module the one emulators/switch/config.py
reads), before running changes: a ``ValueError`` from it refuses the change
(``operation-failed``), as does an :class:`RpcError` it raises, which is the reply.

A refused edit-config leaves its target exactly as it was, whatever its
error-option: the edit works on a copy, kept only when nothing failed.
RFC 6241 7.2 requires that of rollback-on-error and leaves a partial result
open to the server under stop-on-error and continue-on-error; this server (like
netconfd) keeps none, and continue-on-error only goes on to report every
error. So a failed edit never counts as a change not committed, which would
refuse the next lock of the candidate (RFC 6241 7.5).

The operations run in the server's worker thread, one at a time
(emulators/netconf/worker.py); nothing here touches the event loop but the
watch of a confirmed commit's timeout. That timeout is watched twice: every
operation first rolls an expired one back (so a test that steps the clock sees
the rollback on its next RPC), and a task on the server's loop, sleeping on the
clock, hands the rollback to the worker when nobody asks (give a
``SteppedClock(jump_on_sleep=False)``, whose sleeps wait for ``advance``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lxml import etree
from lxml.etree import _Element

from emulators.clock import Clock, RealClock
from emulators.netconf import messages, parameters
from emulators.netconf.capabilities import (
    CANDIDATE,
    CONFIRMED_COMMIT,
    ROLLBACK_ON_ERROR,
    STARTUP,
    VALIDATE,
    WRITABLE_RUNNING,
    announced,
)
from emulators.netconf.edit import (
    DEFAULT_OPERATIONS,
    ERROR_OPTIONS,
    apply_edit,
    subtree_filter,
)
from emulators.netconf.library import Library, Module, switch_library
from emulators.netconf.messages import RpcError, RpcErrors, qname
from emulators.netconf.monitoring import (
    MONITORING_NS,
    DatastoreState,
    Statistics,
    netconf_state,
    now,
)
from emulators.netconf.server import NetconfServer
from emulators.netconf.session import NetconfSession
from emulators.netconf.validation import Validator, check_structure, default_validator
from emulators.netconf.yangdata import MSOCTL, DataSchema
from emulators.text import digits as _digits

log = logging.getLogger(__name__)

DATASTORES = ("running", "candidate", "startup")
TEST_OPTIONS = ("test-then-set", "set", "test-only")  # :validate:1.1 adds test-only
DEFAULT_CONFIRM_TIMEOUT_SECONDS = 600  # RFC 6241 8.4.5.1

CommitHook = Callable[[dict[str, Any]], None]
StateSource = Callable[[], "_Element | None"]
OperationalView = Callable[[_Element], _Element]


def capabilities(*, candidate: bool = True, confirmed_commit: bool = True,
                 modules: tuple[Module, ...] | None = None) -> tuple[str, ...]:
    """The capabilities to give the server: with :candidate (and :confirmed-commit:1.1
    unless ``confirmed_commit`` is false), or :writable-running without; then the
    modules (msoctl-congestion, or the data ``modules`` given; ietf-netconf with the
    features these enable, ietf-netconf-monitoring) and the YANG library
    (emulators/netconf/library.py)."""
    own = (CANDIDATE, *((CONFIRMED_COMMIT,) if confirmed_commit else ()), VALIDATE,
           ROLLBACK_ON_ERROR, STARTUP) if candidate else \
        (WRITABLE_RUNNING, VALIDATE, ROLLBACK_ON_ERROR, STARTUP)
    return own + switch_library(own, modules).capabilities()


CAPABILITIES = capabilities()


def empty() -> _Element:
    return etree.Element(qname("config"), nsmap={None: messages.NETCONF_NS})


@dataclass
class PendingCommit:
    """A confirmed commit waiting for its confirmation."""

    rollback: _Element  # running before the first confirmed commit
    deadline: float
    session_id: int
    persist: str | None


class Datastores:
    """The three datastores, their locks and the pending confirmed commit.

    ``state()`` gives the operational state as a ``<switch>`` element (merged
    into get's reply); ``operational(running)``, when given instead, is the whole of
    what get shows of the configuration ``running`` (a ``<config>`` holder of
    configuration and state). ``on_commit(tree)`` receives running before each change
    (a ``ValueError`` from it refuses the change).
    ``candidate=False`` serves writable-running instead of :candidate. ``library``
    (emulators/netconf/library.py) is by default the one of the capabilities of the
    server the datastores are registered on. ``schema`` is what the datastores hold,
    the msoctl module by default.
    """

    def __init__(self, *, clock: Clock | None = None, on_commit: CommitHook | None = None,
                 state: StateSource | None = None, validator: Validator | None = None,
                 candidate: bool = True, library: Library | None = None,
                 schema: DataSchema = MSOCTL, operational: OperationalView | None = None):
        self.clock: Clock = clock if clock is not None else RealClock()
        self.on_commit = on_commit
        self.state = state
        self.schema = schema
        self.operational = operational
        self.validator = validator if validator is not None else default_validator()
        self.use_candidate = candidate
        self._library_given = library is not None
        self.library = library if library is not None else \
            switch_library(capabilities(candidate=candidate))
        self.stores: dict[str, _Element] = {name: empty() for name in DATASTORES}
        self.locks: dict[str, int] = {}
        self.locked_at: dict[str, datetime] = {}  # when each lock of ``locks`` was taken
        self.pending: PendingCommit | None = None
        # Whether the candidate was written since it was last made running's copy: the
        # cheap first answer to "has it changes not committed" (RFC 6241 7.5).
        self._candidate_changed = False
        self._watch: asyncio.Task[None] | None = None
        self._server: NetconfServer | None = None

    # ---- wiring ----------------------------------------------------------------------

    def register(self, server: NetconfServer) -> None:
        """Answer the operations on ``server``; they run in its worker thread, one at a
        time, and so does :meth:`session_ended` when it is the server's hook."""
        self._server = server
        if not self._library_given:
            self.library = switch_library(server.capabilities)
        unannounced = [c for c in self.library.capabilities() if c not in server.capabilities]
        if unannounced:  # the hello and the YANG library would disagree
            raise ValueError(f"{server.name} does not announce {', '.join(unannounced)}")
        for name, handler in (
            ("get-config", self.get_config), ("get", self.get),
            ("edit-config", self.edit_config), ("copy-config", self.copy_config),
            ("delete-config", self.delete_config), ("lock", self.lock),
            ("unlock", self.unlock), ("discard-changes", self.discard_changes),
            ("validate", self.validate), ("commit", self.commit),
            ("cancel-commit", self.cancel_commit),
        ):
            server.handle(name, self._guarded(handler))
        server.handle("get-schema", self._get_schema, namespace=MONITORING_NS)

    def _guarded(self, handler: Callable[[NetconfSession, _Element], _Element | None]
                 ) -> Callable[[NetconfSession, _Element], _Element | None]:
        def run(session: NetconfSession, rpc: _Element) -> _Element | None:
            parameters.check(_operation(rpc), self._announced)
            self.expire()
            return handler(session, _operation(rpc))
        return run

    def _get_schema(self, session: NetconfSession, rpc: _Element) -> _Element:
        parameters.check(_operation(rpc), self._announced)
        return self.library.get_schema(session, rpc)

    @property
    def _announced(self) -> frozenset[str]:
        return announced(() if self._server is None else self._server.capabilities)

    def session_ended(self, session: NetconfSession) -> None:
        """Release the session's locks (discarding a locked candidate's changes) and roll
        back its confirmed commit unless that one was given a persist token."""
        for name, holder in list(self.locks.items()):
            if holder == session.session_id:
                del self.locks[name]
                self.locked_at.pop(name, None)
                if name == "candidate":
                    self._reset_candidate()
        pending = self.pending
        if pending is not None and pending.persist is None and \
                pending.session_id == session.session_id:
            self._roll_back("the session of the confirmed commit ended")

    def close(self) -> None:
        """Stop watching a confirmed commit's timeout (the server is going away); call it
        on the server's loop."""
        task, self._watch = self._watch, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def factory_reset(self, tree: _Element) -> None:
        """``tree`` (a ``<data>`` holder) in every datastore, no lock, no confirmed commit
        pending: the datastores as delivered, for an emulator reused by several tests. Not
        a NETCONF operation, and no hook is called; call it while no session is open."""
        self.stores = {name: copy.deepcopy(tree) for name in DATASTORES}
        self.locks.clear()
        self.locked_at.clear()
        self.pending = None
        self._candidate_changed = False
        self._stop_watch()

    # ---- reading ---------------------------------------------------------------------

    def get_config(self, session: NetconfSession, operation: _Element) -> _Element:
        source = self._datastore_name(operation, "source", DATASTORES)
        return messages.data(*subtree_filter(self.schema.shown(self.stores[source]),
                                             _filter(operation)))

    def get(self, session: NetconfSession, operation: _Element) -> _Element:
        if self.operational is not None:
            whole = self.operational(self.stores["running"])
        else:
            whole = self._with_state(copy.deepcopy(self.stores["running"]))
        # monitoring and module discovery: state of the server, in no datastore
        whole.append(self._netconf_state())
        whole.extend(self.library.state())
        return messages.data(*subtree_filter(whole, _filter(operation)))

    def _with_state(self, whole: _Element) -> _Element:
        state = self.state() if self.state is not None else None
        if state is not None:
            state_root = empty()
            state_root.append(copy.deepcopy(state))
            whole, _ = apply_edit(whole, state_root, default_operation="merge",
                                  error_option="continue-on-error", schema=self.schema)
        return whole

    def _netconf_state(self) -> _Element:
        """``/netconf-state`` (RFC 6022) of the server these datastores are registered on."""
        server = self._server
        sessions = [] if server is None else sorted(  # a copy: the loop adds and drops them
            tuple(server.sessions.values()), key=lambda session: session.session_id)
        return netconf_state(
            capabilities=() if server is None else server.capabilities,
            datastores=[DatastoreState(name, self.locks.get(name), self.locked_at.get(name))
                        for name in self.library.datastores],
            schemas=self.library.schemas(), sessions=sessions,
            statistics=Statistics() if server is None else server.statistics)

    # ---- changing --------------------------------------------------------------------

    def edit_config(self, session: NetconfSession, operation: _Element) -> None:
        writable = ("candidate",) if self.use_candidate else ("running",)
        target = self._datastore_name(operation, "target", writable)
        self._check_lock(session, target)
        default_operation = _choice(operation, "default-operation", DEFAULT_OPERATIONS, "merge")
        error_option = _choice(operation, "error-option", ERROR_OPTIONS, "stop-on-error")
        test_option = _choice(operation, "test-option", TEST_OPTIONS, "test-then-set")
        config = operation.find(qname("config"))
        if config is None:
            raise RpcError("missing-element", "edit-config needs <config>",
                           error_type="protocol", info={"bad-element": "config"})
        structure = check_structure(config, self.schema)
        if structure:
            raise RpcErrors(structure)
        prepared = self.schema.prepare(config)
        if prepared:
            raise RpcErrors(prepared)
        changed, errors = apply_edit(self.stores[target], config,
                                     default_operation=default_operation,
                                     error_option=error_option, schema=self.schema)
        if errors:  # whatever the error-option, the target stays exactly as it was
            raise RpcErrors(errors)
        if target == "running" or test_option == "test-only":
            errors = self.validator.must_errors(changed)
            if errors:
                raise RpcErrors(errors)  # running never holds an invalid configuration
        if test_option == "test-only":
            return
        self._store(target, changed)

    def copy_config(self, session: NetconfSession, operation: _Element) -> None:
        target = self._datastore_name(operation, "target", DATASTORES)
        self._check_lock(session, target)
        source = self._source_tree(operation)
        if target == "running":
            self._require_valid(source)
        self._store(target, source)

    def delete_config(self, session: NetconfSession, operation: _Element) -> None:
        target = self._datastore_name(operation, "target", ("startup",))
        self._check_lock(session, target)
        self._store(target, empty())

    def discard_changes(self, session: NetconfSession, operation: _Element) -> None:
        self._check_lock(session, "candidate")
        self._reset_candidate()

    def validate(self, session: NetconfSession, operation: _Element) -> None:
        self._require_valid(self._source_tree(operation))

    # ---- locks -----------------------------------------------------------------------

    def lock(self, session: NetconfSession, operation: _Element) -> None:
        target = self._datastore_name(operation, "target", DATASTORES)
        holder = self.locks.get(target)
        if holder is not None:
            raise RpcError("lock-denied", f"{target} is locked by session {holder}",
                           error_type="protocol", info={"session-id": str(holder)})
        if target == "candidate" and self._candidate_changed:
            if not self._same(self.stores["candidate"], self.stores["running"]):
                raise RpcError("lock-denied", "candidate has changes not committed",
                               error_type="protocol", info={"session-id": "0"})
            self._candidate_changed = False  # edits that changed nothing in the end
        self.locks[target] = session.session_id
        self.locked_at[target] = now()

    def unlock(self, session: NetconfSession, operation: _Element) -> None:
        target = self._datastore_name(operation, "target", DATASTORES)
        if self.locks.get(target) != session.session_id:
            raise RpcError("operation-failed", f"{target} is not locked by this session",
                           error_type="protocol")
        del self.locks[target]
        self.locked_at.pop(target, None)

    def _check_lock(self, session: NetconfSession, target: str) -> None:
        holder = self.locks.get(target)
        if holder is not None and holder != session.session_id:
            raise RpcError("in-use", f"{target} is locked by session {holder}",
                           error_type="protocol", info={"session-id": str(holder)})

    # ---- commit ----------------------------------------------------------------------

    def commit(self, session: NetconfSession, operation: _Element) -> None:
        if not self.use_candidate:
            raise RpcError("operation-not-supported", "commit needs :candidate",
                           error_type="protocol")
        self._check_lock(session, "running")
        self._check_lock(session, "candidate")
        confirmed = operation.find(qname("confirmed")) is not None
        persist = _text(operation, "persist")
        persist_id = _text(operation, "persist-id")
        pending = self.pending
        if pending is not None:
            self._check_owner(session, pending, persist_id)
        elif persist_id is not None:
            raise RpcError("invalid-value", "no confirmed commit is pending",
                           error_type="protocol", info={"bad-element": "persist-id"})
        candidate = copy.deepcopy(self.stores["candidate"])
        self._require_valid(candidate)
        if not confirmed:
            self._store("running", candidate)
            self._candidate_changed = False  # the candidate is running's copy again
            self.pending = None
            self._stop_watch()
            return
        timeout = _timeout(operation)
        rollback = pending.rollback if pending is not None else self.stores["running"]
        owner_persist = persist if persist is not None else (
            pending.persist if pending is not None and persist_id is not None else None)
        rollback = copy.deepcopy(rollback)
        self._store("running", candidate)
        self._candidate_changed = False
        self.pending = PendingCommit(rollback=rollback, deadline=self.clock.now() + timeout,
                                     session_id=session.session_id, persist=owner_persist)
        self._start_watch()

    def cancel_commit(self, session: NetconfSession, operation: _Element) -> None:
        pending = self.pending
        persist_id = _text(operation, "persist-id")
        if pending is None and persist_id is not None:  # RFC 6241 8.4.4.1: no match
            raise RpcError("invalid-value", "no confirmed commit is pending",
                           error_type="protocol", info={"bad-element": "persist-id"})
        if pending is None:  # no parameter is wrong: the operation has nothing to do
            raise RpcError("operation-failed", "no confirmed commit is pending",
                           error_type="protocol")
        self._check_owner(session, pending, persist_id)
        self._roll_back("cancel-commit")

    def expire(self) -> None:
        """Roll back a confirmed commit whose timeout has passed on the clock."""
        pending = self.pending
        if pending is not None and self.clock.now() >= pending.deadline:
            self._roll_back("the confirmed commit timed out")

    def _check_owner(self, session: NetconfSession, pending: PendingCommit,
                     persist_id: str | None) -> None:
        if pending.persist is not None:
            if persist_id is None:  # RFC 6241 8.4.1: it MUST be given once persist was
                raise RpcError("missing-element",
                               "a persistent confirmed commit is pending: give its persist-id",
                               error_type="protocol", info={"bad-element": "persist-id"})
            if persist_id != pending.persist:
                raise RpcError("invalid-value",
                               "persist-id does not match the pending confirmed commit",
                               error_type="protocol", info={"bad-element": "persist-id"})
        elif session.session_id != pending.session_id:
            raise RpcError("in-use", "a confirmed commit of another session is pending",
                           error_type="protocol",
                           info={"session-id": str(pending.session_id)})

    def _roll_back(self, why: str) -> None:
        pending = self.pending
        if pending is None:
            return
        log.info("rolling back the confirmed commit: %s", why)
        self.pending = None
        self._stop_watch()
        self._store("running", copy.deepcopy(pending.rollback))
        self._reset_candidate()

    # The watch task lives on the server's loop; the operations that start and stop it
    # run in the worker thread, so they only ask the loop to look again (_rewatch).

    def _start_watch(self) -> None:
        self._post_rewatch()

    def _stop_watch(self) -> None:
        self._post_rewatch()

    def _post_rewatch(self) -> None:
        loop = self._server.loop if self._server is not None else None
        if loop is None or loop.is_closed():
            return  # no loop to watch on: the lazy check at every operation only
        with contextlib.suppress(RuntimeError):  # the loop is stopping: nothing to watch
            loop.call_soon_threadsafe(self._rewatch)

    def _rewatch(self) -> None:
        """On the loop: one task sleeping until the pending commit's deadline, or none."""
        task, self._watch = self._watch, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        if self.pending is not None:
            self._watch = asyncio.get_running_loop().create_task(self._watch_deadline())

    async def _watch_deadline(self) -> None:
        while (pending := self.pending) is not None:
            left = pending.deadline - self.clock.now()
            if left <= 0:
                server = self._server
                if server is not None and server.worker is not None:
                    await server.in_worker(self.expire)  # with the operations, in order
                else:
                    self.expire()
                return
            await self.clock.sleep(left)

    # ---- helpers ---------------------------------------------------------------------

    def _store(self, name: str, tree: _Element) -> None:
        if name == "running" and self.on_commit is not None:
            try:
                self.on_commit(self.schema.to_tree(tree))
            except ValueError as error:  # the device cannot run it: running stays as it was
                raise RpcError("operation-failed", f"the device cannot apply it: {error}",
                               error_type="application") from None
        self.stores[name] = tree
        if name == "candidate":
            self._candidate_changed = True
        elif name == "running" and not self.use_candidate:
            self._reset_candidate()

    def _reset_candidate(self) -> None:
        """The candidate back to a copy of running: no changes not committed."""
        self.stores["candidate"] = copy.deepcopy(self.stores["running"])
        self._candidate_changed = False

    def _require_valid(self, tree: _Element) -> None:
        errors = check_structure(tree, self.schema) or self.validator.must_errors(tree)
        if errors:
            raise RpcErrors(errors)

    def _datastore_name(self, operation: _Element, role: str,
                        allowed: tuple[str, ...]) -> str:
        holder = operation.find(qname(role))
        chosen = [] if holder is None else [
            str(etree.QName(child).localname) for child in holder if isinstance(child.tag, str)]
        if len(chosen) != 1:
            raise RpcError("missing-element", f"<{role}> must name one datastore",
                           error_type="protocol", info={"bad-element": role})
        if chosen[0] not in allowed:
            raise RpcError("invalid-value", f"{chosen[0]} is not a {role} here (only "
                           f"{', '.join(allowed)})", error_type="protocol",
                           info={"bad-element": role})
        return chosen[0]

    def _source_tree(self, operation: _Element) -> _Element:
        holder = operation.find(qname("source"))
        inline = None if holder is None else holder.find(qname("config"))
        if inline is not None:
            prepared = self.schema.prepare(inline)
            if prepared:
                raise RpcErrors(prepared)
            tree = empty()
            for child in inline:
                if isinstance(child.tag, str):
                    tree.append(copy.deepcopy(child))
            return tree
        name = self._datastore_name(operation, "source", DATASTORES)
        return copy.deepcopy(self.stores[name])

    def _same(self, left: _Element, right: _Element) -> bool:
        """The same configuration, whatever whitespace or prefixes the XML carries."""
        return self.schema.to_tree(left) == self.schema.to_tree(right)


def _operation(rpc: _Element) -> _Element:
    return next(child for child in rpc if isinstance(child.tag, str))


def _filter(operation: _Element) -> _Element | None:
    spec = operation.find(qname("filter"))
    if spec is not None and spec.get("type", "subtree") != "subtree":
        raise RpcError("operation-not-supported", "only subtree filters are supported",
                       error_type="protocol", info={"bad-attribute": "type"})
    return spec


def _text(operation: _Element, name: str) -> str | None:
    element = operation.find(qname(name))
    return None if element is None else (element.text or "").strip()


def _choice(operation: _Element, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = _text(operation, name)
    if value is None:
        return default
    if value not in allowed:
        raise RpcError("invalid-value", f"{name} {value!r} is not one of "
                       f"{', '.join(allowed)}", error_type="protocol",
                       info={"bad-element": name})
    return value


def _timeout(operation: _Element) -> int:
    text = _text(operation, "confirm-timeout")
    if text is None:
        return DEFAULT_CONFIRM_TIMEOUT_SECONDS
    if not _digits(text) or not 1 <= int(text) <= 2**32 - 1:
        raise RpcError("invalid-value", f"confirm-timeout {text!r} is not 1..4294967295",
                       error_type="protocol", info={"bad-element": "confirm-timeout"})
    return int(text)
