"""SCPI message framing over a byte-stream transport.

Writes a command with the write terminator, reads one reply line, parses the
error queue, and fences changes with ``*OPC?``. After a timeout or a garbled
reply the byte stream can no longer be trusted (a late reply would be taken as
the answer to the next query), so the session reconnects and resynchronises
on random markers before it sends anything else (the last one read as the first
line after its probe, so that a stale reply that happens to be a marker's number
is not taken for it).

Whose errors: an instrument that keeps an error queue per client (per TCP
connection, and one for its console) gives each session only its own errors.
Some units keep one queue for every client: another client's error can then
land in ours. A change therefore starts with ``*CLS`` in the same program
message (``*CLS;:OXC:SWIT:CONN:ADD ...``), so whatever was queued before is
gone and the window in which a foreign error can arrive is the change's own
execution and fence. What remains on such a unit: our ``*CLS`` also empties
errors another client has not read yet, and an error another client causes
inside that window is read as ours -- the driver above decides (the OCS
driver, told the unit has one queue, checks by reading back).

What the unit has (:meth:`ScpiSession.probe`): a driver never assumes an optional
header exists. It asks each optional query once per session, all of them in one write,
each followed by ``:SYST:ERR?`` (the one error query SCPI-99 requires), so that an
undefined header is seen at once in the error it queues, where waiting for its reply
would wait out the timeout. The same write learns whether ``:SYST:ERR:ALL?`` (optional
in SCPI-99) exists; where it does not, the session reads the error queue with
``:SYST:ERR?`` and, after reading an error, clears the queue in its next write (one
entry read may leave others behind).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Generic, Protocol, TypeVar

from drivers.errors import DeviceError, DeviceRejected, DeviceTimeout, ProtocolError
from drivers.scpi.block import BlockScanner
from drivers.scpi.table import ScpiCommand
from drivers.transports.base import StreamTransport

_ERROR_ENTRY = re.compile(r'\s*([+-]?\d+)\s*,\s*"((?:[^"]|"")*)"\s*')
_CONTROL = re.compile(rb"[\x00-\x1f]")
"""A byte no reply has: a control character (line noise, a binary reply read as text)."""
_MAX_RESYNC_LINES = 64
_MARKERS = range(2, 256)
"""The values a resynchronising probe writes to the event status enable register
(``*ESE``, 0-255): never 0 or 1, the commonest replies (``*OPC?``, a boolean)."""
UNDEFINED_HEADER = -113
CLEAR_STATUS = "*CLS"
NEXT_ERROR_QUERY = ":SYST:ERR?"
"""The error query every SCPI-99 instrument has: the oldest entry."""
ALL_ERRORS_QUERY = ":SYST:ERR:ALL?"
"""Every entry at once: optional in SCPI-99 (vol. 2 §21.8), used once the unit has it."""
COMMAND_ERRORS = range(-199, -99)
"""-100..-199: the unit did not understand the command (its header, or how it is
written), as opposed to an execution error (-200s: it understood and could not do it
now, with these parameters)."""


def parse_error_queue(reply: str) -> list[tuple[int, str]]:
    """``-113,"Undefined header",0,"No error"`` -> ``[(-113, 'Undefined header')]``."""
    entries: list[tuple[int, str]] = []
    position = 0
    while position < len(reply):
        match = _ERROR_ENTRY.match(reply, position)
        if match is None:
            raise ProtocolError(f"malformed error queue reply {reply!r}")
        code, text = int(match.group(1)), match.group(2).replace('""', '"')
        if code != 0:
            entries.append((code, text))
        position = match.end()
        if position < len(reply):
            if reply[position] != ",":
                raise ProtocolError(f"malformed error queue reply {reply!r}")
            position += 1
    return entries


def _error_queue_or_none(line: str) -> list[tuple[int, str]] | None:
    """The entries if ``line`` is an error-queue reply, else ``None``."""
    if not _ERROR_ENTRY.match(line):
        return None
    try:
        return parse_error_queue(line)
    except ProtocolError:
        return None


@dataclass(frozen=True)
class Probed:
    """What a unit answered to one probe query (:meth:`ScpiSession.probe`)."""

    query: str
    reply: str | None
    """The reply; ``None`` when the query caused an error instead."""
    error: tuple[int, str] | None
    """The first error the query caused (code, message), ``None`` when none."""

    @property
    def supported(self) -> bool:
        """Whether the unit knows the header: it answered, or refused with anything but
        a command error (-100..-199: an undefined header, -113, above all). An execution
        error means the header exists and its parameters or the moment did not suit."""
        return self.error is None or self.error[0] not in COMMAND_ERRORS


R = TypeVar("R")


class Pending(Generic[R]):
    """A request already sent whose replies are still to be read.

    Whoever holds it owns the session until :meth:`finish` has read the replies (in the
    thread that sent the request or in another) or :meth:`abandon` has given the session
    up unread; nothing else may be asked of the session meanwhile. This is what lets one
    thread send the same change to many units at once and leave each one's completion
    to a worker of its own.
    """

    def __init__(self, read: Callable[[], R], abandon: Callable[[], None]):
        self._read: Callable[[], R] | None = read
        self._abandon = abandon

    def finish(self) -> R:
        """Read the replies and return the result (or raise what the request raised)."""
        read, self._read = self._read, None
        if read is None:
            raise RuntimeError("this request's replies were read or abandoned already")
        return read()

    def abandon(self) -> None:
        """Give the session back without reading (it resynchronises before its next
        request); nothing once the replies have been read."""
        if self._read is not None:
            self._read = None
            self._abandon()


class ScpiSession:
    """One conversation with an SCPI instrument. Thread-safe: one request at a time
    (the session lock is held from a request's write to its last reply, and may be let
    go by another thread: see :class:`Pending`)."""

    def __init__(
        self,
        transport: StreamTransport,
        *,
        device: str,
        write_termination: bytes = b"\n",
        read_termination: bytes = b"\n",
        fence_query: str = "*OPC?",
        error_query: str = ":SYST:ERR:ALL?",
    ):
        self.transport = transport
        self.device = device
        self.write_termination = write_termination
        self.read_termination = read_termination
        self.fence_query = fence_query
        self.error_query = error_query
        self._lock = threading.Lock()
        self._suspect = False
        self._marker = random.Random()
        self._probed: dict[str, Probed] = {}
        self._all_errors: bool | None = None if error_query == ALL_ERRORS_QUERY else False
        self._clear_first = False

    @property
    def timeout_seconds(self) -> float:
        return self.transport.timeout_seconds

    def open(self) -> None:
        with self._lock:
            self._tag(self.transport.open)

    def close(self) -> None:
        with self._lock:
            self.transport.close()

    def __enter__(self) -> ScpiSession:
        self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ---- requests -------------------------------------------------------------------

    @contextmanager
    def _exchange(self) -> Iterator[None]:
        """One request/reply exchange: one at a time, resynchronised if the last went wrong.

        A timeout or a garbled reply leaves the stream suspect: the next
        exchange reconnects and resynchronises first.
        """
        with self._lock, self._judged():
            self._ready()
            yield

    @contextmanager
    def _judged(self) -> Iterator[None]:
        """What a failure inside an exchange leaves: the device named in the error, and
        the stream suspect after a timeout, a garbled reply or an interruption."""
        try:
            yield
        except (DeviceTimeout, ProtocolError) as error:
            self._suspect = True
            raise self._named(error) from None
        except DeviceError as error:
            raise self._named(error) from None
        except BaseException:
            # Interrupted mid-exchange (Ctrl-C): a reply may still be on its way, and
            # the next exchange (reading back what the device holds) must not take it
            # for its own.
            self._suspect = True
            raise

    def _start(self, send: Callable[[], None], read: Callable[[], R]) -> Pending[R]:
        """An exchange in two steps: ``send()`` now, under the session lock; ``read()``
        when the pending request is finished, and the lock let go after it."""
        self._lock.acquire()
        try:
            with self._judged():
                self._ready()
                send()
        except BaseException:
            self._lock.release()
            raise

        def finish() -> R:
            try:
                with self._judged():
                    return read()
            finally:
                self._lock.release()

        def abandon() -> None:
            self._suspect = True  # its replies are still on their way
            self._lock.release()

        return Pending(finish, abandon)

    def _send(self, *messages: str) -> None:
        """Send program messages in one write (one segment on TCP, no Nagle stall); after
        an error read one entry at a time, ``*CLS`` goes first (see the module's
        docstring)."""
        if self._clear_first:
            if not messages[0].startswith(CLEAR_STATUS):  # a change clears first itself
                messages = (CLEAR_STATUS, *messages)
            self._clear_first = False
        self.transport.write(b"".join(m.encode("ascii") + self.write_termination
                                      for m in messages))

    def _queue_read(self, line: str) -> list[tuple[int, str]]:
        """The entries of the error query's reply ``line`` (:meth:`_took`)."""
        return self._took(parse_error_queue(line), self.error_query)

    def _took(self, entries: list[tuple[int, str]], query: str) -> list[tuple[int, str]]:
        """``entries``, read by ``query``: read by a one-entry query, an entry means more
        may be queued behind it, cleared by the next write (see the module's docstring)."""
        if entries and query != ALL_ERRORS_QUERY:
            self._clear_first = True
        return entries

    def write(self, command: str) -> None:
        with self._exchange():
            self._send(command)

    def query(self, command: str) -> str:
        """Send a query and return its reply line without the terminator."""
        with self._exchange():
            self._send(command)
            return self._read_line(command)

    def start_query(self, command: str) -> Pending[str]:
        """:meth:`query` in two steps: the query is sent now, its reply read by
        :meth:`Pending.finish`."""
        return self._start(lambda: self._send(command), lambda: self._read_line(command))

    def _read_line(self, command: str) -> str:
        try:
            raw = self.transport.read_until(self.read_termination)
        except DeviceError as error:
            error.detail = error.detail or f"waiting for the reply to {command}"
            raise
        # A serial console answering CR may be read with LF stripping or vice versa.
        body = raw[: -len(self.read_termination)].strip(b"\r\n")
        if body.isascii() and not _CONTROL.search(body):
            return body.decode("ascii")
        raise ProtocolError(f"garbled reply to {command}", detail=f"raw reply {body[:80]!r}")

    def query_blocks(self, command: str, count: int = 1) -> list[bytes]:
        """Send a query (or ``count`` queries joined by ``;``) answered by binary block data.

        Returns the payloads, in order. The reply is read until every counted
        byte is in: a payload may hold the terminator byte.
        """
        # Transports that can read a byte count (read_exactly) read each block whole;
        # others read terminator to terminator, the payload's LF bytes included.
        read_exactly = getattr(self.transport, "read_exactly", None)
        with self._exchange():
            self._send(command)
            received = bytearray()
            scanner = BlockScanner(count)
            while True:
                payloads = scanner.payloads(received, self.read_termination)
                if payloads is not None:
                    return payloads
                missing = scanner.scan(received) - len(received)
                try:
                    if read_exactly is not None and missing > 0:
                        received += read_exactly(missing)
                    else:
                        received += self.transport.read_until(self.read_termination)
                except DeviceError as error:
                    error.detail = error.detail or (f"waiting for block data from {command} "
                                                    f"({len(received)} bytes in)")
                    raise

    def query_checked(self, command: str) -> tuple[str | None, list[tuple[int, str]]]:
        """Send a query with an error-queue query behind it, in one write; return the
        reply (``None`` when there was none) and the errors queued.

        A query that errors sends no reply, so the first line
        is either the value, with the error queue after it, or the error queue
        itself. It is taken for the queue when it reads as one: no query this is
        used for answers ``<number>,"<text>"``.
        """
        with self._exchange():
            self._send(command, self.error_query)
            return self._read_checked(command)

    def start_query_checked(self, command: str
                            ) -> Pending[tuple[str | None, list[tuple[int, str]]]]:
        """:meth:`query_checked` in two steps: both queries leave now, the replies are
        read by :meth:`Pending.finish`."""
        return self._start(lambda: self._send(command, self.error_query),
                           lambda: self._read_checked(command))

    def _read_checked(self, command: str) -> tuple[str | None, list[tuple[int, str]]]:
        first = self._read_line(command)
        entries = _error_queue_or_none(first)
        if entries is not None:
            return None, self._took(entries, self.error_query)
        return first, self._queue_read(self._read_line(self.error_query))

    def query_if_supported(self, command: str) -> str | None:
        """Like :meth:`query`, but ``None`` when the device answers "Undefined header".

        Raises :class:`DeviceRejected` for any other error the query caused.
        """
        reply, entries = self.query_checked(command)
        if reply is None and [code for code, _ in entries] == [UNDEFINED_HEADER]:
            return None
        if entries:
            raise self._rejected(command, entries)
        if reply is None:
            raise self._named(ProtocolError(f"no reply to {command} and no error"))
        return reply

    def probe(self, queries: Mapping[str, str]) -> dict[str, Probed]:
        """What the unit answers to each of ``queries`` (a name -> the query), asked once
        per session: one write for every query not asked before, each followed by
        ``:SYST:ERR?``, so an undefined header costs no wait (see the module's
        docstring). The write starts with ``*CLS``, so that nothing queued before is
        taken for a probe's error, and learns whether ``:SYST:ERR:ALL?`` exists first
        (where it does not, :attr:`error_query` becomes ``:SYST:ERR?``).

        A probe's reply must not itself read as an error-queue entry (``0,"No error"``):
        it is told from the error query's reply that way. Raises what an exchange raises
        (a unit that does not answer at all is a timeout, as for any query)."""
        wanted = {name: query for name, query in queries.items() if query not in self._probed}
        asked = list(dict.fromkeys(wanted.values()))
        learn_all = self._all_errors is None
        if asked or learn_all:
            with self._exchange():
                fences = (ALL_ERRORS_QUERY, NEXT_ERROR_QUERY) if learn_all else ()
                self._send(CLEAR_STATUS, *fences,
                           *(part for query in asked for part in (query, NEXT_ERROR_QUERY)))
                if learn_all:
                    self._learn_all_errors()
                for query in asked:
                    self._probed[query] = self._read_probe(query)
        return {name: self._probed[query] for name, query in queries.items()}

    def _learn_all_errors(self) -> None:
        """Read the replies of ``:SYST:ERR:ALL?`` and ``:SYST:ERR?`` sent right after a
        ``*CLS``: an empty queue answered twice when the unit has ALL?, its undefined
        header's error alone when not."""
        first = self._queue_read_strict(self._read_line(ALL_ERRORS_QUERY), ALL_ERRORS_QUERY)
        if not first:
            self._all_errors = True
            self._queue_read_strict(self._read_line(NEXT_ERROR_QUERY), NEXT_ERROR_QUERY)
            return
        if first[0][0] not in COMMAND_ERRORS:
            raise ProtocolError(f"{ALL_ERRORS_QUERY} after *CLS answered {first}")
        self._all_errors = False
        if self.error_query == ALL_ERRORS_QUERY:
            self.error_query = NEXT_ERROR_QUERY

    def _queue_read_strict(self, line: str, query: str) -> list[tuple[int, str]]:
        entries = _error_queue_or_none(line)
        if entries is None:
            raise ProtocolError(f"expected an error queue reply to {query}, got {line!r}")
        return entries

    def _read_probe(self, query: str) -> Probed:
        first = self._read_line(query)
        entries = _error_queue_or_none(first)
        if entries is None:  # the reply, then the error query's
            after = self._took(self._queue_read_strict(self._read_line(NEXT_ERROR_QUERY),
                                                       NEXT_ERROR_QUERY), NEXT_ERROR_QUERY)
            return Probed(query, first, after[0] if after else None)
        if not entries:
            raise ProtocolError(f"no reply to {query} and no error")
        self._took(entries, NEXT_ERROR_QUERY)  # the fence's entry: more may be queued
        return Probed(query, None, entries[0])

    def probed(self, queries: Mapping[str, str]) -> bool:
        """Whether every one of ``queries`` has been probed on this session already."""
        return all(query in self._probed for query in queries.values())

    @property
    def all_errors(self) -> bool | None:
        """Whether the unit has ``:SYST:ERR:ALL?`` (``None``: not asked yet)."""
        return self._all_errors

    # ---- completion and errors ------------------------------------------------------------

    def errors(self) -> list[tuple[int, str]]:
        """Empty the error queue; every entry but "No error"."""
        with self._exchange():
            self._send(self.error_query)
            return self._queue_read(self._read_line(self.error_query))

    def fence(self) -> None:
        """Wait until every pending operation has completed."""
        with self._exchange():
            self._send(self.fence_query)
            self._expect_done(self._read_line(self.fence_query))

    def _expect_done(self, reply: str) -> None:
        if reply.strip() != "1":
            raise ProtocolError(f"unexpected reply {reply!r} to {self.fence_query}")

    def change(self, command: str, context: str, *, wait: bool = True,
               read_back: str | None = None) -> str | None:
        """Send a change, wait for it to complete, and raise if the device refused it.

        The change, the fence and the error-queue query leave in one write, as
        three program messages: one round trip instead of three. They are
        separate messages so that a refused change cannot swallow the fence
        (an error discards the rest of its own message only); the change's
        message starts with ``*CLS`` (see the module's docstring). With ``wait``
        false there is no fence: for starting an overlapped operation (a
        logging) that ``*OPC?`` would wait for.

        ``read_back``, a query that always answers (the state the change set), goes
        as a fourth message of the same write, after the error query: its reply is
        returned, and read even when the change was refused, so that the exchange
        ends in step.
        """
        send, read = self._change_steps(command, wait=wait, read_back=read_back)
        with self._exchange():
            send()
            entries, reply = read()
        if entries:
            raise self._rejected(context, entries, reply)
        return reply

    def start_change(self, command: str, context: str, *, wait: bool = True,
                     read_back: str | None = None) -> Pending[str | None]:
        """:meth:`change` in two steps: its write leaves now; :meth:`Pending.finish`
        waits for the fence, reads the error queue and the read-back, and raises
        :class:`DeviceRejected` if the device refused the change."""
        sent = self._start(*self._change_steps(command, wait=wait, read_back=read_back))

        def finish() -> str | None:
            entries, reply = sent.finish()
            if entries:
                raise self._rejected(context, entries, reply)
            return reply

        return Pending(finish, sent.abandon)

    def _change_steps(self, command: str, *, wait: bool, read_back: str | None
                      ) -> tuple[Callable[[], None],
                                 Callable[[], tuple[list[tuple[int, str]], str | None]]]:
        """A change's write, and the reading of its replies: the error queue's entries
        and the read-back's reply."""
        # *CLS in the change's own message: what was queued before (by anybody, on a
        # unit with one shared queue) is not read as this change's error.
        cleared = f"{CLEAR_STATUS};{command}"
        after = () if read_back is None else (read_back,)
        fence = (self.fence_query,) if wait else ()

        def send() -> None:
            self._send(cleared, *fence, self.error_query, *after)

        def read() -> tuple[list[tuple[int, str]], str | None]:
            if wait:
                self._expect_done(self._read_line(self.fence_query))
            entries = self._queue_read(self._read_line(self.error_query))
            return entries, None if read_back is None else self._read_line(read_back)

        return send, read

    def _rejected(self, context: str, entries: list[tuple[int, str]],
                  read_back: str | None = None) -> DeviceRejected:
        text = "; ".join(f"{code} {message}" for code, message in entries)
        return DeviceRejected(
            f"{context} refused: {text}",
            device=self.device,
            errors=tuple(f"{code},{message}" for code, message in entries),
            read_back=read_back,
        )

    # ---- recovery -----------------------------------------------------------------------

    def _ready(self) -> None:
        if self._suspect:
            self._resync()

    def resync(self) -> None:
        """Reconnect and read until a fresh marker comes back, so stale replies are gone."""
        with self._lock:
            self._resync()

    def _resync(self) -> None:
        """:meth:`resync`, the session lock held. A probe sets the event status enable
        register to a random marker and reads it back (``*ESE m;*ESE?``), and the lines
        are read until the marker comes. A stale reply may be that very number (a count,
        a port), so the stream is taken to be in step only when a second probe, with
        another marker, is answered by the first line read after it; until then, probe
        after probe. A serial console keeps what an abandoned request was answered (its
        ``*OPC?``, its error queue, its read-back); a new TCP connection starts empty,
        and takes the two probes' round trips."""
        self.transport.close()
        self._tag(self.transport.open)
        marker = 0
        probes = lines = 0
        while lines < _MAX_RESYNC_LINES:
            marker = self._marker.choice([m for m in _MARKERS if m != marker])
            probe = f"*ESE {marker};*ESE?"
            self._tag(partial(self._send, probe))
            probes += 1
            skipped = 0
            while lines < _MAX_RESYNC_LINES:
                lines += 1
                try:
                    line: str | None = self._read_line(probe)
                except ProtocolError:
                    line = None  # garbled: a stale reply all the same
                if line is not None and line.strip() == str(marker):
                    break
                skipped += 1
            else:
                break
            if probes >= 2 and not skipped:
                self._suspect = False
                self.transport.write(b"*ESE 0" + self.write_termination)
                return
        raise ProtocolError("could not resynchronise with the device", device=self.device)

    def _tag(self, action: Callable[[], None]) -> None:
        try:
            action()
        except DeviceError as error:
            raise self._named(error) from None

    def _named(self, error: DeviceError) -> DeviceError:
        if error.device is None:
            error.device = self.device
        return error


class _Opens(Protocol):
    def open(self) -> object: ...

    def close(self) -> None: ...


Opened = TypeVar("Opened", bound=_Opens)


def opened(driver: Opened) -> Opened:
    """``driver`` after its ``open()`` (connect, clear stale errors, set it up); closed
    again, and the error raised, when that fails, so no connection is left behind."""
    try:
        driver.open()
    except BaseException:
        driver.close()
        raise
    return driver


def render(command: ScpiCommand, *args: str) -> str:
    """The wire form of ``command`` with its arguments, short headers."""
    if len(args) > len(command.params):
        count = len(command.params)
        raise ValueError(f"{command.header} takes {count} parameter{'' if count == 1 else 's'}")
    return command.short() + (" " + ",".join(args) if args else "")


def channel_list(ports: list[int] | tuple[int, ...]) -> str:
    return "(@" + ",".join(map(str, ports)) + ")"


_CHANNEL = re.compile(r"\s*([0-9]+)\s*(?::\s*([0-9]+)\s*)?")
"""One item of a channel list: a port, or a range ``first:last``."""
_PORTS_ONLY = re.compile(r"\s*[0-9]+\s*(?:,\s*[0-9]+\s*)*")
"""A channel list body of single ports only: the common reply, split without a loop."""


def parse_channel_list(text: str) -> list[int]:
    """``(@1,2,5:7)`` -> ``[1, 2, 5, 6, 7]``; ``(@)`` -> ``[]``.

    A map reply of a large switch lists hundreds of ports, and the protection controller
    reads one from every OCS a cable cut touches before it can send a command: a body
    of plain ports is checked by one expression and split at once."""
    body = text.strip()
    if not (body.startswith("(@") and body.endswith(")")):
        raise ProtocolError(f"expected a channel list, got {text!r}")
    inner = body[2:-1]
    if not inner or inner.isspace():
        return []
    if _PORTS_ONLY.fullmatch(inner):
        return list(map(int, inner.split(",")))
    ports: list[int] = []
    for item in inner.split(","):
        match = _CHANNEL.fullmatch(item)
        if match is None:
            raise ProtocolError(f"bad channel {item.strip()!r} in {text!r}")
        start = int(match.group(1))
        stop = start if match.group(2) is None else int(match.group(2))
        step = 1 if stop >= start else -1
        ports.extend(range(start, stop + step, step))
    return ports
