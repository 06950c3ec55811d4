"""The switch driver: congestion-control configuration over NETCONF (ncclient), safely.

One :class:`SwitchSession` is one NETCONF session. What it does is driven by
the capabilities the server advertises (:class:`Capabilities`):

- **with :candidate** — :meth:`~SwitchSession.plan`: lock candidate, discard,
  edit-config (rollback-on-error when offered), validate, read running and
  candidate and diff them, discard, unlock; nothing changes.
  :meth:`~SwitchSession.apply`: the same up to the diff, then a confirmed
  commit with a persist token (:confirmed-commit:1.1), unlock, close. The
  change is then running but pending: :meth:`~SwitchSession.confirm` (a
  confirming commit with the persist-id, from any session) makes it stay,
  :meth:`~SwitchSession.cancel` (cancel-commit) or the server's timeout puts
  the old configuration back. The caller verifies in a *new* session before
  confirming, so a change that cuts management off is rolled back by the
  server on its own. Without :confirmed-commit:1.1 the commit is confirmed in
  the same session after a read-back; without :confirmed-commit at all it
  is a plain commit.
- **without :candidate** (writable-running) — lock running, edit running
  (rollback-on-error when offered), read it back; if what was asked for is
  not there, put the previous configuration back.

A WANT tree is declarative per port: each port it names gets exactly the
configuration it gives (``operation="replace"`` on the port), as does the
global ``fast-cnp`` when given; ports it does not name are left alone.

Errors: every ``rpc-error`` raises :class:`NetconfRejected` (a
:class:`DeviceRejected`) carrying each error's tag, app-tag, path and
message; every RPC is bounded by the device timeout (:class:`DeviceTimeout`),
the SSH connection and handshake as well; a lost session is
:class:`DeviceUnreachable`; a reply ncclient cannot parse shows as a timeout
of the RPC it answered. The session is always closed, also on errors.

Host keys are verified against the inventory's known_hosts file (OpenSSH
format, ``[host]:port`` off port 22) or, without one, ``~/.ssh/known_hosts``;
only ``accept_unknown_host_keys`` turns this off.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

import ncclient.transport.session
from lxml import etree
from lxml.etree import _Element
from ncclient import manager
from ncclient.devices.default import DefaultDeviceHandler
from ncclient.operations import GetConfig, RaiseMode
from ncclient.operations.errors import MissingCapabilityError, TimeoutExpiredError
from ncclient.operations.rpc import RPCError, RPCReply
from ncclient.transport.errors import (
    AuthenticationError,
    SSHError,
    SSHUnknownHostError,
    TransportError,
)
from ncclient.transport.ssh import SSHSession

from drivers.errors import (
    DeviceError,
    DeviceRejected,
    DeviceTimeout,
    DeviceUnreachable,
    ProtocolError,
    ValidationError,
    VerificationFailed,
)
from drivers.switch.intent import Intent, from_legacy, not_held
from drivers.switch.models.msoctl import to_tree
from drivers.switch.schema import NAMESPACE
from drivers.switch.tree import Change, diff, from_xml, merge, to_xml, unmet

log = logging.getLogger(__name__)

NETCONF_PORT = 830
CANDIDATE = "urn:ietf:params:netconf:capability:candidate:1.0"
CONFIRMED_COMMIT_1_1 = "urn:ietf:params:netconf:capability:confirmed-commit:1.1"
CONFIRMED_COMMIT_1_0 = "urn:ietf:params:netconf:capability:confirmed-commit:1.0"
VALIDATE_1_1 = "urn:ietf:params:netconf:capability:validate:1.1"
VALIDATE_1_0 = "urn:ietf:params:netconf:capability:validate:1.0"
ROLLBACK_ON_ERROR = "urn:ietf:params:netconf:capability:rollback-on-error:1.0"
WRITABLE_RUNNING = "urn:ietf:params:netconf:capability:writable-running:1.0"
REPLACED = (("switch", "ports", "port"), ("switch", "fast-cnp"))
CLOSE_TIMEOUT_SECONDS = 2.0
NUDGE_SECONDS = 1.0
"""How long a session's first RPC waits for its reply before the driver sends one more
message behind it (:func:`first_reply_nudged`)."""
# ncclient's transport thread sends a queued request only when its select() wakes,
# at the latest every TICK (0.1 s): every RPC then costs up to 100 ms however fast the
# server is (measured: a get-config of the emulator 102 ms; with 2 ms, 7 ms). The
# price of a shorter tick is an open session's thread waking 500 times a second.
SEND_TICK_SECONDS = 0.002
ncclient.transport.session.TICK = min(ncclient.transport.session.TICK, SEND_TICK_SECONDS)
_BASE = "urn:ietf:params:xml:ns:netconf:base:1.0"


@dataclass(frozen=True)
class NetconfTarget:
    """Where a switch's NETCONF server is and how to log in and trust it."""

    name: str
    host: str
    username: str
    port: int = NETCONF_PORT
    password: str | None = field(default=None, repr=False)
    key_file: Path | None = None
    known_hosts: Path | None = None
    accept_unknown_host_keys: bool = False
    timeout_seconds: float = 10.0
    model: str = "auto"
    """The switch's model: ``msoctl``, ``openconfig`` or ``auto`` (its hello says)."""

    @property
    def where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class RpcErrorInfo:
    """One ``<rpc-error>``, as the server gave it."""

    tag: str
    type: str | None = None
    severity: str | None = None
    app_tag: str | None = None
    path: str | None = None
    message: str | None = None
    bad_element: str | None = None
    session_id: str | None = None  # error-info of lock-denied and in-use: the holder

    def describe(self) -> str:
        parts = [self.message or self.tag]
        if self.message and self.tag not in self.message:
            parts.append(f"[{self.tag}" + (f", {self.app_tag}]" if self.app_tag else "]"))
        if self.path:
            parts.append(f"at {self.path}")
        elif self.bad_element:
            parts.append(f"(element {self.bad_element})")
        return " ".join(parts)

    def as_dict(self) -> dict[str, str | None]:
        return {"error_tag": self.tag, "error_type": self.type, "error_severity": self.severity,
                "error_app_tag": self.app_tag, "error_path": self.path,
                "error_message": self.message, "bad_element": self.bad_element}


class NetconfRejected(DeviceRejected):
    """The server answered with rpc-errors; ``rpc_errors`` has every one."""

    def __init__(self, operation: str, errors: tuple[RpcErrorInfo, ...], *, device: str):
        self.operation = operation
        self.rpc_errors = errors
        text = "; ".join(error.describe() for error in errors) or "rpc-error"
        super().__init__(f"{operation} refused: {text}", device=device,
                         errors=tuple(error.describe() for error in errors))

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(error.tag for error in self.rpc_errors)


@dataclass(frozen=True)
class Capabilities:
    """What the server can do, from its hello."""

    candidate: bool
    confirmed_commit: bool  # 1.0 or 1.1
    persist: bool  # :confirmed-commit:1.1 (persist and persist-id, cancel-commit)
    validate: bool
    rollback_on_error: bool
    writable_running: bool
    module_revision: str | None  # of msoctl-congestion; None: not implemented

    @classmethod
    def from_hello(cls, uris: list[str]) -> Capabilities:
        bases = {uri.split("?", 1)[0] for uri in uris}
        revision = None
        for uri in uris:
            base, _, query = uri.partition("?")
            if base == NAMESPACE:
                params = dict(p.partition("=")[::2] for p in query.split("&") if p)
                revision = params.get("revision", "")
        return cls(
            candidate=CANDIDATE in bases,
            confirmed_commit=bool({CONFIRMED_COMMIT_1_0, CONFIRMED_COMMIT_1_1} & bases),
            persist=CONFIRMED_COMMIT_1_1 in bases,
            validate=bool({VALIDATE_1_0, VALIDATE_1_1} & bases),
            rollback_on_error=ROLLBACK_ON_ERROR in bases,
            writable_running=WRITABLE_RUNNING in bases,
            module_revision=revision,
        )

    def describe(self) -> list[str]:
        names = [("candidate", self.candidate), ("confirmed-commit:1.1", self.persist),
                 ("confirmed-commit", self.confirmed_commit and not self.persist),
                 ("validate", self.validate), ("rollback-on-error", self.rollback_on_error),
                 ("writable-running", self.writable_running)]
        return [name for name, present in names if present]


def check_confirm_timeout(seconds: int, device: str) -> None:
    """Refuse a confirm timeout outside 1 .. 2^32 - 1 seconds (NETCONF's confirm-timeout
    is a uint32; the gNMI sessions hold their rollback duration to the same)."""
    if not 1 <= seconds <= 2**32 - 1:
        raise ValidationError("the confirm timeout is 1 s or more", device=device)


@dataclass
class Plan:
    """What applying a WANT tree would change: running before, and after."""

    before: dict[str, Any]
    after: dict[str, Any]
    changes: list[Change]
    method: str  # "candidate" (the server's diff) or "local" (computed here)


@dataclass
class Applied:
    """The outcome of :meth:`SwitchSession.apply`."""

    changes: list[Change]
    method: str  # confirmed-commit | commit | running | none
    pending: bool  # a confirmed commit waits for confirm/cancel
    persist_id: str | None = None
    confirm_timeout_seconds: int | None = None
    undo: Any = None
    """What puts the change back, where the switch cannot hold it pending (a gNMI switch
    without the Commit extension): for :meth:`GnmiSwitchSession.undo
    <drivers.switch.gnmi.GnmiSwitchSession.undo>`, in this process."""


BASE_CAPABILITIES = ("urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1")
"""What the driver's hello announces: the two framings (RFC 6241 section 8.1: a client
lists the base protocols it speaks; the other capabilities are the server's)."""


class BaseHelloHandler(DefaultDeviceHandler):  # type: ignore[misc]
    """ncclient's default handler, its hello naming only :data:`BASE_CAPABILITIES`. Its
    own list adds eleven server capabilities (candidate, confirmed-commit, ...), which
    mean nothing in a client's hello and make it over a kilobyte. netconfd 2.13 reads
    a session a kilobyte at a time, and when a hello's tail and the first RPC come in
    one read, it leaves that RPC unanswered until more input arrives (seen as a first
    ``<lock>`` or ``<get-config>`` of a session with no reply, the server's log showing
    it handled at the client's close). A short hello is read whole before the first
    RPC is sent, unless the server falls a whole round trip behind; then
    :func:`first_reply_nudged` gets the reply out (docs/dialects/netconf.md)."""

    _BASE_CAPABILITIES: ClassVar[list[str]] = list(BASE_CAPABILITIES)


@contextmanager
def first_reply_nudged(netconf: Any, after: float = NUDGE_SECONDS) -> Iterator[None]:
    """Wrap a session's first RPC (on the ncclient manager ``netconf``): when its reply has
    not come ``after`` seconds on, send a ``<get-config>`` of running with an empty
    subtree filter, which selects nothing (RFC 6241 section 6.4.2), and wait on.

    netconfd 2.13 leaves an RPC unanswered when it comes in the same read as the tail
    of the client's hello, until more input arrives. The short hello
    (:class:`BaseHelloHandler`) makes that rare, but a server that falls a round trip
    behind its client (a loaded machine) still reads the two together. The extra
    message is that input; its reply, for an RPC nobody waits on, is dropped by
    ncclient. A server that is merely slow gets one harmless read more."""
    answered = threading.Event()

    def nudge() -> None:
        if answered.is_set():
            return
        with suppress(Exception):  # the session may be going away; the RPC's own wait tells
            GetConfig(netconf._session, netconf._device_handler, async_mode=True,
                      raise_mode=RaiseMode.NONE).request(source="running", filter=[])

    timer = threading.Timer(after, nudge)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        answered.set()
        timer.cancel()


class _KnownHostsSession(SSHSession):  # type: ignore[misc]
    """An ncclient SSH session that trusts only the given known_hosts file."""

    def __init__(self, device_handler: Any, known_hosts: Path | None):
        super().__init__(device_handler)
        self._known_hosts_file = known_hosts

    def load_known_hosts(self, filename: str | None = None) -> None:
        if self._known_hosts_file is None:
            super().load_known_hosts(filename)
        else:
            super().load_known_hosts(str(self._known_hosts_file))


def _tree(want: Intent | Mapping[str, Any]) -> Mapping[str, Any]:
    """The module's tree for a WANT given as intent or as that tree."""
    return to_tree(want) if isinstance(want, Intent) else want


class SwitchSession:
    """One NETCONF session to a switch; use it as a context manager. A WANT is an
    :class:`~drivers.switch.intent.Intent` or a ``switch:`` tree of the module."""

    def __init__(self, target: NetconfTarget):
        self.target = target
        self.name = target.name
        self._manager: Any = None
        self._failed = False
        self._answered = False  # no RPC of this session answered yet (first_reply_nudged)
        self._manager = self._connect()
        self.capabilities = Capabilities.from_hello(list(self._manager.server_capabilities))
        try:
            self._check_model()
        except BaseException:
            self.close()
            raise

    def _check_model(self) -> None:
        """Refuse a server that does not speak this session's model."""
        if self.capabilities.module_revision is None:
            raise ProtocolError(f"{self.target.where} does not implement the YANG module "
                                f"{NAMESPACE}", device=self.name)

    @property
    def announced_modules(self) -> frozenset[str]:
        """The YANG modules the server's hello names (``?module=NAME``)."""
        found = set()
        for uri in self._manager.server_capabilities if self._manager is not None else ():
            query = uri.partition("?")[2]
            for part in query.split("&"):
                key, _, value = part.partition("=")
                if key == "module" and value:
                    found.add(value)
        return frozenset(found)

    # ---- session ---------------------------------------------------------------------

    def _connect(self) -> Any:
        target = self.target
        if target.known_hosts is not None and not target.accept_unknown_host_keys \
                and not target.known_hosts.is_file():
            raise ValidationError(f"known_hosts file {target.known_hosts} does not exist "
                                  "(or set accept_unknown_host_keys: true for a lab)",
                                  device=self.name)
        try:
            sock = socket.create_connection((target.host, target.port),
                                            timeout=target.timeout_seconds)
        except TimeoutError:
            raise DeviceTimeout(f"no answer from {target.where} within "
                                f"{target.timeout_seconds:g} s", device=self.name) from None
        except OSError as error:
            raise DeviceUnreachable(f"cannot connect to {target.where}: "
                                    f"{error.strerror or error}", device=self.name) from None
        # Small SSH packets (key exchange, auth, short RPCs) must not wait for a delayed
        # ACK under Nagle's algorithm: 40 ms each on Linux, twice per connect.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # paramiko's own handshake timeouts are longer than ours: cut the socket at ours.
        watchdog = threading.Timer(target.timeout_seconds, _shut, (sock,))
        watchdog.daemon = True
        watchdog.start()
        handler = manager.make_device_handler({"handler": BaseHelloHandler})
        session = _KnownHostsSession(handler, target.known_hosts)
        try:
            session.connect(
                sock=sock, host=target.host, port=target.port, timeout=target.timeout_seconds,
                username=target.username, password=target.password,
                key_filename=None if target.key_file is None else str(target.key_file),
                hostkey_verify=not target.accept_unknown_host_keys,
                allow_agent=False, look_for_keys=False,
            )
        except BaseException as error:
            timed_out = not watchdog.is_alive()
            watchdog.cancel()
            with suppress(Exception):
                session.close()
            sock.close()
            if timed_out:
                raise DeviceTimeout(f"{target.where}: no NETCONF session within "
                                    f"{target.timeout_seconds:g} s", device=self.name) from None
            raise self._connect_error(error) from None
        watchdog.cancel()
        found = manager.Manager(session, handler, timeout=target.timeout_seconds,
                                raise_mode=RaiseMode.NONE)
        found.huge_tree = True
        return found

    def _connect_error(self, error: BaseException) -> DeviceError:
        where = self.target.where
        if isinstance(error, SSHUnknownHostError):
            source = self.target.known_hosts or "~/.ssh/known_hosts"
            return DeviceUnreachable(
                f"host key of {where} is not trusted: not in {source} (fingerprint "
                f"{error.fingerprint}); add it, or set accept_unknown_host_keys: true "
                "for a lab device", device=self.name)
        if isinstance(error, AuthenticationError):
            return DeviceRejected(f"{where}: authentication failed for user "
                                  f"{self.target.username!r}", device=self.name)
        if isinstance(error, OSError | SSHError | TransportError):
            return DeviceUnreachable(f"{where}: NETCONF session failed: {error}",
                                     device=self.name)
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise error
        return ProtocolError(f"{where}: NETCONF session failed: {error!r}", device=self.name)

    def close(self) -> None:
        """End the session: close-session (briefly bounded) unless it already failed,
        then the SSH connection, whatever happens."""
        found, self._manager = self._manager, None
        if found is None:
            return
        try:
            if not self._failed and found.connected:
                found.timeout = min(self.target.timeout_seconds, CLOSE_TIMEOUT_SECONDS)
                found.close_session()
        except Exception:  # the session is going away either way
            log.debug("%s: close-session", self.name, exc_info=True)
        finally:
            with suppress(Exception):
                found._session.close()

    def __enter__(self) -> SwitchSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- one RPC -----------------------------------------------------------------------

    def _rpc(self, operation: str, call: Any, *args: Any, **kwargs: Any) -> RPCReply:
        if self._manager is None:
            raise DeviceUnreachable("the NETCONF session is closed", device=self.name)
        try:
            with nullcontext() if self._answered else first_reply_nudged(self._manager):
                reply = call(*args, **kwargs)
            self._answered = True
        except TimeoutExpiredError:
            self._failed = True
            raise DeviceTimeout(f"{operation}: no reply within "
                                f"{self.target.timeout_seconds:g} s", device=self.name) from None
        except MissingCapabilityError as error:
            raise ValidationError(f"{operation}: the server lacks {error}",
                                  device=self.name) from None
        except (TransportError, OSError, EOFError) as error:
            self._failed = True
            raise DeviceUnreachable(f"{operation}: the NETCONF session was lost ({error})",
                                    device=self.name) from None
        except RPCError as error:  # raise_mode NONE still raises for some replies
            raise NetconfRejected(operation, (_error_info(error),), device=self.name) from None
        errors = tuple(_error_info(e) for e in reply.errors
                       if (e.severity or "error") == "error")
        if errors:
            raise NetconfRejected(operation, errors, device=self.name)
        return cast(RPCReply, reply)

    def _data(self, operation: str, call: Any, *args: Any, **kwargs: Any) -> _Element:
        reply = self._rpc(operation, call, *args, **kwargs)
        data = getattr(reply, "data_ele", None)
        if data is None:
            raise ProtocolError(f"{operation}: the reply has no <data>", device=self.name)
        return cast(_Element, data)

    # ---- reading ----------------------------------------------------------------------

    def get_config(self, source: str = "running") -> dict[str, Any]:
        """The configuration in ``source`` (running, candidate, startup), typed."""
        m = self._manager
        return from_xml(self._data(f"get-config {source}", m.get_config, source=source,
                                   filter=("subtree", _switch_filter())))

    def read_intent(self, source: str = "running") -> Intent:
        """The intent datastore ``source`` holds (every port configured)."""
        return from_legacy(self.get_config(source))

    def read_intent_and_state(self) -> tuple[Intent, dict[str, Any]]:
        """:meth:`read_intent` and :meth:`get_state` (every session offers both at once)."""
        return self.read_intent(), self.get_state()

    def describe(self) -> list[str]:
        """What the session speaks, for ``-v`` and the journal."""
        return ["netconf", "model msoctl", *self.capabilities.describe()]

    def get_state(self, port: str | None = None) -> dict[str, Any]:
        """Configuration and operational state (buffer, counters), of one port or all."""
        m = self._manager
        return from_xml(self._data("get", m.get, filter=("subtree", _switch_filter(port))))

    # ---- changing ---------------------------------------------------------------------

    def plan(self, want: Intent | Mapping[str, Any], *, merge_only: bool = False) -> Plan:
        """What applying ``want`` would change; the server's own diff when it has a
        candidate (validated there, so ``must`` violations show now). Changes nothing.

        ``merge_only``: change only the leaves ``want`` names (no node replaced whole,
        so nothing it leaves out is deleted)."""
        want = _tree(want)
        replaced = () if merge_only else REPLACED
        config = to_xml(want, replace=replaced)
        if not self.capabilities.candidate:
            before = self.get_config("running")
            after = merge(before, want, replace=replaced)
            return Plan(before, after, diff(before, after), "local")
        with self._candidate_locked():
            self._edit("candidate", config)
            try:
                self._validate()
                before = self.get_config("running")
                after = self.get_config("candidate")
            finally:
                self._rpc("discard-changes", self._manager.discard_changes)
        return Plan(before, after, diff(before, after), "candidate")

    def apply(self, want: Intent | Mapping[str, Any], *, confirm_timeout_seconds: int = 120,
              persist_id: str | None = None, merge_only: bool = False,
              check: Callable[[list[Change]], None] | None = None) -> Applied:
        """Put ``want`` into running. With :confirmed-commit:1.1 and a ``persist_id`` the
        change is left pending (confirm or cancel it, from any session); otherwise it is
        read back and confirmed (or rolled back) before this returns.

        ``merge_only`` as for :meth:`plan`. ``check`` is shown the changes before anything
        is committed (or, without a candidate, written); whatever it raises (a refusal)
        aborts the apply with the candidate discarded and running untouched."""
        check_confirm_timeout(confirm_timeout_seconds, self.name)
        want = _tree(want)
        replaced = () if merge_only else REPLACED
        config = to_xml(want, replace=replaced)
        if not self.capabilities.candidate:
            return self._apply_running(want, config, replaced, check)
        with self._candidate_locked():
            return self._commit_candidate(
                want, config, lambda: diff(self.get_config("running"),
                                           self.get_config("candidate")),
                check, confirm_timeout_seconds, persist_id)

    def _commit_candidate(self, want: Any, config: _Element,
                          changes_of: Callable[[], list[Change]],
                          check: Callable[[list[Change]], None] | None,
                          confirm_timeout_seconds: int, persist_id: str | None) -> Applied:
        """In the locked candidate: edit it with ``config``, validate, take the changes
        (``changes_of``), show them to ``check``, and commit (:meth:`_commit`); the
        candidate discarded when there is nothing to commit or anything fails first."""
        self._edit("candidate", config)
        try:
            self._validate()
            changes = changes_of()
            if check is not None:
                check(changes)
            if changes and self.capabilities.validate:
                # netconfd 2.13 (yuma123) answers <ok/> to a commit that follows a
                # <validate> and applies nothing; an edit in between avoids it. The
                # same edit again changes nothing on any server.
                self._edit("candidate", config)
        except BaseException:
            with suppress(DeviceError):
                self._rpc("discard-changes", self._manager.discard_changes)
            raise
        if not changes:
            self._rpc("discard-changes", self._manager.discard_changes)
            return Applied([], "none", pending=False)
        return self._commit(want, changes, confirm_timeout_seconds, persist_id)

    def _commit(self, want: Any, changes: list[Change], confirm_timeout_seconds: int,
                persist_id: str | None) -> Applied:
        """Commit the locked candidate holding ``changes``: left pending with a persist id
        (:confirmed-commit:1.1), or confirmed here once :meth:`verify` passes, or plain."""
        m, caps = self._manager, self.capabilities
        if caps.persist and persist_id is not None:
            self._rpc("commit (confirmed)", m.commit, confirmed=True,
                      timeout=str(confirm_timeout_seconds), persist=persist_id)
            return Applied(changes, "confirmed-commit", pending=True, persist_id=persist_id,
                           confirm_timeout_seconds=confirm_timeout_seconds)
        if caps.confirmed_commit:
            self._rpc("commit (confirmed)", m.commit, confirmed=True,
                      timeout=str(confirm_timeout_seconds))
            try:
                self.verify(want)
            except BaseException:
                with suppress(DeviceError):
                    self._rpc("cancel-commit", m.cancel_commit)
                raise
            self._rpc("commit (confirming)", m.commit)
            return Applied(changes, "confirmed-commit", pending=False)
        self._rpc("commit", m.commit)
        self.verify(want)
        return Applied(changes, "commit", pending=False)

    def _apply_running(self, want: Mapping[str, Any], config: _Element,
                       replaced: tuple[tuple[str, ...], ...],
                       check: Callable[[list[Change]], None] | None) -> Applied:
        if not self.capabilities.writable_running:
            raise ValidationError("the server has neither :candidate nor :writable-running",
                                  device=self.name)
        with self._locked("running"):
            before = self.get_config("running")
            changes = diff(before, merge(before, want, replace=replaced))
            if not changes:
                return Applied([], "none", pending=False)
            if check is not None:
                check(changes)
            self._edit("running", config)
            try:
                self.verify(want)
            except VerificationFailed:
                self._edit("running", to_xml(before), default_operation="replace")
                raise
        return Applied(changes, "running", pending=False)

    def verify(self, want: Intent | Mapping[str, Any]) -> None:
        """Running holds every leaf of ``want``, or :class:`VerificationFailed`."""
        missing = unmet(_tree(want), self.get_config("running"))
        if missing:
            raise not_held("running", [f"{c.path} is {c.before!r}, wanted {c.after!r}"
                                       for c in missing], device=self.name)

    def confirm(self, persist_id: str) -> None:
        """Confirm a pending confirmed commit (a confirming commit with its persist-id)."""
        self._require_persist("confirm")
        self._rpc("commit (confirming)", self._manager.commit, persist_id=persist_id)

    def cancel(self, persist_id: str) -> None:
        """Cancel a pending confirmed commit: running goes back to what it was."""
        self._require_persist("cancel-commit")
        self._rpc("cancel-commit", self._manager.cancel_commit, persist_id=persist_id)

    def _require_persist(self, what: str) -> None:
        if not self.capabilities.persist:
            raise ValidationError(f"{what} of a pending commit needs :confirmed-commit:1.1, "
                                  "which the server does not offer", device=self.name)

    # ---- helpers ----------------------------------------------------------------------

    def _edit(self, target: str, config: _Element, *,
              default_operation: str | None = None) -> None:
        self._rpc(f"edit-config {target}", self._manager.edit_config, target=target,
                  config=config, default_operation=default_operation,
                  error_option="rollback-on-error" if self.capabilities.rollback_on_error
                  else None)

    def _validate(self) -> None:
        if self.capabilities.validate:
            self._rpc("validate", self._manager.validate, source="candidate")

    @contextmanager
    def _candidate_locked(self) -> Iterator[None]:
        """Candidate locked and equal to running (a stale unlocked edit is discarded)."""
        m = self._manager
        try:
            self._rpc("lock candidate", m.lock, target="candidate")
        except NetconfRejected as refused:
            if not _unheld(refused):
                raise
            # Changes left in the candidate by a session that is gone: RFC 6241 lets
            # them be discarded by anyone, and the lock is then ours to take.
            self._rpc("discard-changes", m.discard_changes)
            self._rpc("lock candidate", m.lock, target="candidate")
        try:
            self._rpc("discard-changes", m.discard_changes)
            yield
        finally:
            self._unlock("candidate")

    @contextmanager
    def _locked(self, target: str) -> Iterator[None]:
        self._rpc(f"lock {target}", self._manager.lock, target=target)
        try:
            yield
        finally:
            self._unlock(target)

    def _unlock(self, target: str) -> None:
        if self._failed:
            return  # the server releases a lost session's locks itself
        try:
            self._rpc(f"unlock {target}", self._manager.unlock, target=target)
        except DeviceError:
            log.debug("%s: unlock %s", self.name, target, exc_info=True)


def _shut(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _switch_filter(port: str | None = None) -> _Element:
    top = etree.Element(f"{{{NAMESPACE}}}switch", nsmap={None: NAMESPACE})
    if port is not None:
        entry = etree.SubElement(etree.SubElement(top, f"{{{NAMESPACE}}}ports"),
                                 f"{{{NAMESPACE}}}port")
        etree.SubElement(entry, f"{{{NAMESPACE}}}name").text = port
    return top


def _unheld(refused: NetconfRejected) -> bool:
    """Whether a lock of the candidate was denied because it holds changes nobody has
    locked (RFC 6241 7.5): lock-denied naming session-id 0, or — netconfd's answer —
    resource-denied."""
    return any((error.tag == "lock-denied" and error.session_id == "0")
               or error.tag == "resource-denied" for error in refused.rpc_errors)


def _error_info(error: RPCError) -> RpcErrorInfo:
    raw = getattr(error, "_raw", None)

    def info(name: str) -> str | None:
        found = None if raw is None else raw.find(f".//{{{_BASE}}}error-info/{{{_BASE}}}{name}")
        return None if found is None else (found.text or "").strip() or None

    return RpcErrorInfo(
        tag=str(error.tag or "operation-failed"), type=error.type, severity=error.severity,
        app_tag=error.app_tag, path=(error.path or "").strip() or None,
        message=(error.message or "").strip() or None, bad_element=info("bad-element"),
        session_id=info("session-id"),
    )
