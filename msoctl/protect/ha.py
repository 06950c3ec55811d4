"""Protection instances that share the links through the journal's PostgreSQL database
(``msoctl protect run --ha``): shards, leases, terms, takeovers and fencing.

Tables (msoctl/journal/schema.py, migration 3): ``protect_instances`` (one row per
instance: host, pid, its database sessions, heartbeat, state) and ``protect_shards``
(one row per shard: owner, term, lease end). Times in those tables are the database's
clock (``clock_timestamp()``), so that instances on different hosts agree on them.

How it runs, every ``renew_seconds`` (default 0.1 s), on a connection of its own whose
statements give up after ``retry_seconds`` (default 0.2 s):

- the instance's heartbeat, and its leases renewed: each owned shard's lease ends
  ``lease_seconds`` (default 0.8 s) after the renewal, by the database's clock, if the
  row still names this instance with the term it holds. Locally, the instance may act
  for that shard until its own monotonic deadline: the moment the renewal was *sent*
  plus ``lease_seconds - margin_seconds`` (default 0.6 s) -- always before the database
  lease ends, whatever the renewal's round trip;
- a shard with no owner, or whose lease has ended, is taken: owner this instance, term
  + 1, journaled as a ``protection.takeover`` naming the previous owner and term. The
  previous owner's database sessions are ended (``pg_terminate_backend``): a frozen owner
  holds no device lock past its takeover, and its next statement fails;
- a shard whose renewal finds another owner or term is lost: journaled as
  ``protection.shard_lost``; the instance stops acting for it at once.

Fencing, before every device change (msoctl/protect/acting.py): :meth:`fence` asks the
database whether the shards are still this instance's with its terms and a lease that
still runs ``margin_seconds`` past now; then, in the thread that sends the command, just
before it leaves, :meth:`check` compares the instance's own monotonic deadline. A frozen
instance (SIGSTOP) that resumes after its deadline sends nothing: its check fails before
any byte leaves, whatever it had decided before it froze.

The bounds, with the defaults (Patroni's rule for its leader lease, ``loop_wait + 2 x
retry_timeout <= ttl``, is kept: 0.1 + 2 x 0.2 <= 0.8):

- an instance that cannot renew stops changing devices at most ``lease - margin``
  (0.6 s) after its last successful renewal was sent;
- a crashed owner's shards are taken at most ``lease + renew`` (0.9 s) after its last
  renewal, plus one round trip to the database;
- between one owner's last possible command and the next owner's first, at least
  ``margin`` (0.2 s) of the database's clock passes.

What is not covered: two hosts whose clocks run at different rates by more than the
margin over a lease (monotonic clocks drift by parts per million); a command already on
the wire when the deadline passes (the check is made microseconds before the write);
a database that loses committed rows (a failover to a replica that was behind).
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from drivers.errors import ValidationError
from msoctl.journal import Journal, JournalError
from msoctl.journal.model import now_ts
from msoctl.links import Link
from msoctl.protect.ownership import Fenced, shard_of

RENEW_SECONDS = 0.1
LEASE_SECONDS = 0.8
MARGIN_SECONDS = 0.2
RETRY_SECONDS = 0.2
CONNECT_TIMEOUT_SECONDS = 2  # libpq's connect_timeout is whole seconds, at least 2
_NOW = "extract(epoch FROM clock_timestamp())"


@dataclass(frozen=True)
class LeaseTimes:
    """The lease's timing, seconds (see the module's docstring for the bounds)."""

    renew_seconds: float = RENEW_SECONDS
    lease_seconds: float = LEASE_SECONDS
    margin_seconds: float = MARGIN_SECONDS
    retry_seconds: float = RETRY_SECONDS

    def check(self) -> None:
        """Raise :class:`ValidationError` unless the bounds hold."""
        if min(self.renew_seconds, self.lease_seconds, self.margin_seconds,
               self.retry_seconds) <= 0:
            raise ValidationError("lease times must be positive")
        if self.renew_seconds + 2 * self.retry_seconds > self.lease_seconds:
            raise ValidationError(
                f"renew {self.renew_seconds:g} s + 2 x retry {self.retry_seconds:g} s must "
                f"not exceed the lease {self.lease_seconds:g} s")
        if self.margin_seconds >= self.lease_seconds - self.renew_seconds:
            raise ValidationError(f"the margin {self.margin_seconds:g} s must be shorter "
                                  f"than lease - renew "
                                  f"({self.lease_seconds - self.renew_seconds:g} s)")

    @property
    def local_seconds(self) -> float:
        """How long after a renewal was sent this instance may act on it."""
        return self.lease_seconds - self.margin_seconds


def _session_pid(session: str) -> tuple[int, int] | None:
    pid, _, start = session.partition(":")
    return (int(pid), int(start)) if pid.isdigit() and start.lstrip("-").isdigit() else None


class LeaseOwnership:
    """This instance's share of the shards, kept in the journal's PostgreSQL database.

    ``on_event(kind, message)`` hears of takeovers, losses and database trouble.
    Raises :class:`ValidationError` when the journal is not on PostgreSQL.
    """

    def __init__(self, journal: Journal, *, times: LeaseTimes | None = None,
                 name: str | None = None,
                 on_event: Callable[[str, str], None] | None = None):
        from msoctl.journal.postgres_store import PostgresStore

        if not isinstance(journal.store, PostgresStore):
            raise ValidationError(f"--ha needs the journal on PostgreSQL (journal: "
                                  f"postgresql://...); this one is {journal.where}")
        self.times = times or LeaseTimes()
        self.times.check()
        self.journal = journal
        self.store: PostgresStore = journal.store
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.instance = name or f"{self.host}:{self.pid}:{secrets.token_hex(3)}"
        self.on_event = on_event
        self._shards: dict[str, list[Link]] = {}
        self._owned: dict[str, int] = {}  # shard -> term
        self._deadline: dict[str, float] = {}  # shard -> monotonic
        self._mutex = threading.RLock()
        self._connection: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._on_change: Callable[[], None] = lambda: None
        self.takeovers = 0
        self.db_error: str | None = None

    # ---- life ----------------------------------------------------------------------------

    def start(self, links: Iterable[Link], on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        for link in links:
            self._shards.setdefault(shard_of(link), []).append(link)
        with self._mutex:
            connection = self._connect()
            connection.execute(
                f"INSERT INTO protect_instances (instance, host, pid, started, heartbeat, "
                f"state, sessions, links) VALUES (%s, %s, %s, %s, {_NOW}, 'standby', %s, %s) "
                f"ON CONFLICT (instance) DO UPDATE SET heartbeat = excluded.heartbeat, "
                f"state = 'standby', sessions = excluded.sessions",
                (self.instance, self.host, self.pid, now_ts(), self._sessions(),
                 sum(len(v) for v in self._shards.values())))
            for shard in sorted(self._shards):
                connection.execute(
                    "INSERT INTO protect_shards (shard, owner, term, lease_until, since) "
                    "VALUES (%s, NULL, 0, 0, %s) ON CONFLICT (shard) DO NOTHING",
                    (shard, now_ts()))
        self._round()
        self._thread = threading.Thread(target=self._loop, name="protect-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and give the shards back (a standby takes them at once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._mutex:
            owned, self._owned = dict(self._owned), {}
            self._deadline.clear()
            try:
                connection = self._connect()
                for shard, term in owned.items():
                    connection.execute(
                        "UPDATE protect_shards SET owner = NULL, lease_until = 0 WHERE "
                        "shard = %s AND owner = %s AND term = %s", (shard, self.instance, term))
                connection.execute("UPDATE protect_instances SET state = 'stopped', "
                                   f"heartbeat = {_NOW} WHERE instance = %s", (self.instance,))
            except Exception as error:  # stopping: the leases run out on their own
                self._say("error", f"giving the shards back failed: {error}")
            self._close()

    # ---- what the controller asks ---------------------------------------------------------

    def acts_for(self, link: Link) -> bool:
        shard = shard_of(link)
        with self._mutex:
            return shard in self._owned and time.monotonic() < self._deadline.get(shard, 0.0)

    def terms(self) -> dict[str, int]:
        with self._mutex:
            return dict(self._owned)

    def fence(self, links: Iterable[Link]) -> dict[str, int]:
        shards = sorted({shard_of(link) for link in links})
        with self._mutex:
            self.check(links=None, shards=shards)
            terms = {s: self._owned[s] for s in shards}
            rows = None
            for attempt in range(2):  # a connection ended under us: ask once more
                try:
                    rows = self._connect().execute(
                        f"SELECT shard, term FROM protect_shards WHERE shard = ANY(%s) AND "
                        f"owner = %s AND lease_until > {_NOW} + %s",
                        (shards, self.instance, self.times.margin_seconds)).fetchall()
                    break
                except Exception as error:
                    self._broken(error)
                    if attempt:
                        raise Fenced(f"the database cannot confirm {', '.join(shards)}: "
                                     f"{self.db_error}") from None
            assert rows is not None
            self.check(shards=shards)  # the question took time: still ours here?
        confirmed = {str(shard): int(term) for shard, term in rows}
        wrong = [s for s in shards if confirmed.get(s) != terms[s]]
        if wrong:
            raise Fenced(f"{', '.join(wrong)} no longer this instance's (term "
                         f"{', '.join(str(terms[s]) for s in wrong)}; the database has "
                         f"{', '.join(str(confirmed.get(s, 'another owner')) for s in wrong)}"
                         ")")
        return terms

    def check(self, links: Iterable[Link] | None = None, *,
              shards: Iterable[str] | None = None) -> None:
        """Raise :class:`Fenced` when this instance's own lease deadline of any of the
        shards (of ``links``; default: every shard it owns) has passed."""
        now = time.monotonic()
        with self._mutex:
            chosen = (list(shards) if shards is not None
                      else sorted({shard_of(link) for link in links}) if links is not None
                      else list(self._owned))
            for shard in chosen:
                if shard not in self._owned:
                    raise Fenced(f"{shard} is not this instance's")
                late = now - self._deadline.get(shard, 0.0)
                if late >= 0:
                    raise Fenced(f"the lease of {shard} (term {self._owned[shard]}) ran out "
                                 f"{late * 1000:.0f} ms ago here: not renewed in time")

    # ---- the loop ------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.wait(self.times.renew_seconds):
            self._round()

    def _round(self) -> None:
        before = set(self._owned)
        try:
            with self._mutex:
                self._renew()
                taken = self._claim()
            self.db_error = None
        except Exception as error:
            self._broken(error)
            taken = []
        for record in taken:
            self._journal_takeover(record)
        if set(self._owned) != before:
            self._on_change()

    def _renew(self) -> None:
        connection = self._connect()
        sent = time.monotonic()
        connection.execute(
            f"UPDATE protect_instances SET heartbeat = {_NOW}, state = %s, sessions = %s "
            f"WHERE instance = %s",
            ("active" if self._owned else "standby", self._sessions(), self.instance))
        if not self._owned:
            return
        rows = connection.execute(
            f"UPDATE protect_shards SET lease_until = {_NOW} + %s WHERE shard = ANY(%s) "
            f"AND owner = %s AND term = ANY(%s) RETURNING shard, term",
            (self.times.lease_seconds, sorted(self._owned), self.instance,
             sorted(set(self._owned.values())))).fetchall()
        renewed = {str(shard): int(term) for shard, term in rows}
        for shard, term in list(self._owned.items()):
            if renewed.get(shard) == term:
                self._deadline[shard] = sent + self.times.local_seconds
            else:
                del self._owned[shard]
                self._deadline.pop(shard, None)
                self._lost(connection, shard, term)

    def _claim(self) -> list[dict[str, Any]]:
        """Take every shard of ours that has no owner or whose lease has ended."""
        connection = self._connect()
        taken: list[dict[str, Any]] = []
        with connection.transaction():
            sent = time.monotonic()
            rows = connection.execute(
                f"SELECT s.shard, s.owner, s.term, s.lease_until, {_NOW}, i.host, i.pid, "
                f"i.sessions, i.heartbeat FROM protect_shards s LEFT JOIN protect_instances i "
                f"ON i.instance = s.owner WHERE s.shard = ANY(%s) AND (s.owner IS NULL OR "
                f"s.lease_until < {_NOW}) FOR UPDATE OF s SKIP LOCKED",
                (sorted(self._shards),)).fetchall()
            for shard, owner, term, lease_until, now, host, pid, sessions, heartbeat in rows:
                new_term = int(term) + 1
                connection.execute(
                    f"UPDATE protect_shards SET owner = %s, term = %s, lease_until = {_NOW} + "
                    f"%s, since = %s WHERE shard = %s",
                    (self.instance, new_term, self.times.lease_seconds, now_ts(), shard))
                taken.append({
                    "shard": str(shard), "term": new_term, "previous_owner": owner,
                    "previous_term": int(term), "previous_host": host, "previous_pid": pid,
                    "previous_sessions": sessions,
                    "lease_ended_seconds_ago": None if owner is None
                    else round(float(now) - float(lease_until), 3),
                    "heartbeat_age_seconds": None if heartbeat is None
                    else round(float(now) - float(heartbeat), 3)})
        for record in taken:
            self._owned[record["shard"]] = record["term"]
            self._deadline[record["shard"]] = sent + self.times.local_seconds
            if record["previous_owner"] and record["previous_owner"] != self.instance:
                record["sessions_ended"] = self._end_sessions(connection,
                                                              record["previous_sessions"])
        return taken

    def _end_sessions(self, connection: Any, sessions: str | None) -> int:
        """End the previous owner's database sessions (the journal's and the lease's):
        its device locks go with them, and a frozen owner finds its connections gone."""
        ended = 0
        for session in (sessions or "").split(","):
            found = _session_pid(session)
            if found is None:
                continue
            pid, start = found
            try:
                row = connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = %s "
                    "AND (extract(epoch FROM backend_start) * 1000000)::bigint = %s",
                    (pid, start)).fetchone()
            except Exception as error:  # not allowed (another role): its leases still fence it
                self._say("error", f"could not end the session {session}: {error}")
                continue
            ended += int(bool(row and row[0]))
        return ended

    def _journal_takeover(self, record: dict[str, Any]) -> None:
        self.takeovers += record["previous_owner"] is not None
        previous = record["previous_owner"]
        reason = ("no owner" if previous is None else
                  f"the lease of {previous} ended {record['lease_ended_seconds_ago']} s ago "
                  f"(its heartbeat {record['heartbeat_age_seconds']} s old)")
        try:
            with self.journal.change(device=record["shard"], action="protection.takeover",
                                     instance=self.instance, reason=reason,
                                     **{k: v for k, v in record.items()
                                        if k != "previous_sessions"}):
                pass
        except JournalError as error:
            self._say("error", f"journal: {error}")
        self._say("ownership", f"{record['shard']}: taken, term {record['term']} ({reason})")

    def _lost(self, connection: Any, shard: str, term: int) -> None:
        row = connection.execute("SELECT owner, term FROM protect_shards WHERE shard = %s",
                                 (shard,)).fetchone()
        owner, now_term = (row[0], int(row[1])) if row else (None, None)
        message = (f"{shard}: lost (our term {term}; now {owner or 'nobody'}, term "
                   f"{now_term}): this instance no longer acts for it")
        try:
            with self.journal.change(device=shard, action="protection.shard_lost",
                                     instance=self.instance, term=term, owner=owner,
                                     owner_term=now_term):
                pass
        except JournalError as error:
            self._say("error", f"journal: {error}")
        self._say("ownership", message)

    # ---- the connection ------------------------------------------------------------------

    def _connect(self) -> Any:
        connection = self._connection
        if connection is not None and not connection.closed and not connection.broken:
            return connection
        self._close()
        self._connection = self.store.new_connection(
            purpose=f"protection lease {self.instance}",
            statement_timeout_seconds=self.times.retry_seconds,
            connect_timeout_seconds=CONNECT_TIMEOUT_SECONDS)
        return self._connection

    def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # a broken connection: nothing left to close
                pass

    def _sessions(self) -> str:
        found = []
        if self._connection is not None:
            try:
                found.append(self.store.session_of(self._connection))
            except Exception:  # it is being replaced
                pass
        if self.store.session is not None:
            found.append(self.store.session)
        return ",".join(found)

    def _broken(self, error: BaseException) -> None:
        text = " ".join(str(error).split()) or type(error).__name__
        if self.db_error is None:
            self._say("error", f"lease database: {text}; acting only until the leases "
                      "held run out")
        self.db_error = text
        self._close()

    def _say(self, kind: str, message: str) -> None:
        if self.on_event is not None:
            self.on_event(kind, message)


def instances_and_shards(journal: Journal) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``protect status`` shows of the instances and shards (empty lists when the
    journal has none: one controller alone)."""
    from msoctl.journal.postgres_store import PostgresStore

    store = journal.store
    if not isinstance(store, PostgresStore):
        return [], []
    connection = store.new_connection(purpose="protect status")
    try:
        live = {str(r[0]) for r in connection.execute(
            "SELECT pid::text || ':' || ((extract(epoch FROM backend_start) * 1000000)"
            "::bigint)::text FROM pg_stat_activity").fetchall()}
        instances = []
        for row in connection.execute(
                f"SELECT instance, host, pid, started, {_NOW} - heartbeat, state, sessions, "
                f"links FROM protect_instances ORDER BY started").fetchall():
            name, host, pid, started, age, state, sessions, links = row
            connected = any(s in live for s in str(sessions).split(",") if s)
            instances.append({"instance": name, "host": host, "pid": pid, "started": started,
                              "heartbeat_age_seconds": round(float(age), 3),
                              "state": state, "connected": connected, "links": links})
        shards = [{"shard": r[0], "owner": r[1], "term": int(r[2]),
                   "lease_left_seconds": round(float(r[3]), 3), "since": r[4]}
                  for r in connection.execute(
                      f"SELECT shard, owner, term, lease_until - {_NOW}, since FROM "
                      f"protect_shards ORDER BY shard").fetchall()]
    finally:
        connection.close()
    return instances, shards
